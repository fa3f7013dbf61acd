//! Colour and material draws shared by the room types: wood tones, upholstery and plank
//! widths, and colour arithmetic.

use rand::Rng;

use super::Builder;
use crate::room::layout::{Material, Rgb};

pub(super) fn lerp3(a: Rgb, b: Rgb, t: f32) -> Rgb {
    [0, 1, 2].map(|c| a[c] + (b[c] - a[c]) * t)
}

pub(super) fn scale3(a: Rgb, s: f32) -> Rgb {
    a.map(|v| (v * s).clamp(0.0, 1.0))
}

impl Builder {
    fn wood_tone(&mut self) -> (Rgb, Rgb) {
        let tones = [
            ([0.78, 0.6, 0.4], [0.55, 0.38, 0.22]),  // oak
            ([0.55, 0.36, 0.22], [0.33, 0.2, 0.12]), // walnut
            ([0.85, 0.75, 0.6], [0.68, 0.56, 0.42]), // birch
            ([0.6, 0.58, 0.55], [0.42, 0.4, 0.38]),  // grey-washed
            ([0.7, 0.45, 0.3], [0.48, 0.28, 0.18]),  // cherry
        ];
        let (light, dark) = self.pick(&tones);
        (self.jitter(light, 0.04), self.jitter(dark, 0.03))
    }

    pub(super) fn wood(&mut self, plank_m: f32) -> Material {
        let (light, dark) = self.wood_tone();
        let along_y = self.rng.random_bool(0.5);
        Material::Wood {
            light,
            dark,
            plank_m,
            along_y,
        }
    }

    pub(super) fn fabric(&mut self, palette: &[Rgb]) -> Material {
        let base = self.pick(palette);
        Material::Fabric {
            color: self.jitter(base, 0.05),
        }
    }

    pub(super) fn pick_plank(&mut self) -> f32 {
        self.pick(&[0.12, 0.16, 0.2])
    }
}
