//! Observations: a flat vector for the classic-control tasks, or images plus a vector for
//! rendered environments.

use serde::{Deserialize, Serialize};

use crate::EnvError;

/// One image, stored channel-major (`data[c * height * width + y * width + x]`), which is the
/// layout a convolution over `[channels, height, width]` reads without a transpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// Number of channels (3 for RGB, 1 for depth).
    pub channels: usize,
    /// Height in pixels.
    pub height: usize,
    /// Width in pixels.
    pub width: usize,
    /// `channels * height * width` values, channel-major.
    pub data: Vec<f32>,
}

/// An observation made of an optional RGB image, an optional depth image and a vector
/// (for example proprioception or a goal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultimodalObs {
    /// Colour image, if the environment renders one.
    pub rgb: Option<Image>,
    /// Depth image, if the environment renders one.
    pub depth: Option<Image>,
    /// Non-image features.
    pub vector: Vec<f32>,
}

/// What an environment returns from `reset` and `step`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Obs {
    /// A flat `f32` vector (Gymnasium's `Box` observation, cast to float32 as Gymnasium does).
    Vector(Vec<f32>),
    /// Images plus a vector.
    Multimodal(MultimodalObs),
}

impl Obs {
    /// The flat vector, if this is a [`Obs::Vector`].
    pub fn as_vector(&self) -> Option<&[f32]> {
        match self {
            Obs::Vector(values) => Some(values),
            Obs::Multimodal(_) => None,
        }
    }

    /// Takes the flat vector out, if this is a [`Obs::Vector`].
    pub fn into_vector(self) -> Option<Vec<f32>> {
        match self {
            Obs::Vector(values) => Some(values),
            Obs::Multimodal(_) => None,
        }
    }

    /// Number of `f32` values once flattened by [`Obs::write_flat`].
    pub fn flat_len(&self) -> usize {
        match self {
            Obs::Vector(values) => values.len(),
            Obs::Multimodal(m) => {
                m.rgb.as_ref().map_or(0, |i| i.data.len())
                    + m.depth.as_ref().map_or(0, |i| i.data.len())
                    + m.vector.len()
            }
        }
    }

    /// Writes the observation into `out` as one flat vector: RGB data, then depth data, then
    /// the vector. `out` must have exactly [`Obs::flat_len`] values.
    pub fn write_flat(&self, out: &mut [f32]) -> Result<(), EnvError> {
        let expected = self.flat_len();
        if out.len() != expected {
            return Err(EnvError::ObsBufferLength {
                expected,
                got: out.len(),
            });
        }
        match self {
            Obs::Vector(values) => out.copy_from_slice(values),
            Obs::Multimodal(m) => {
                let parts = [
                    m.rgb.as_ref().map_or(&[][..], |i| &i.data[..]),
                    m.depth.as_ref().map_or(&[][..], |i| &i.data[..]),
                    &m.vector[..],
                ];
                let mut offset = 0;
                for part in parts {
                    out[offset..offset + part.len()].copy_from_slice(part);
                    offset += part.len();
                }
            }
        }
        Ok(())
    }

    /// The observation as one flat vector (see [`Obs::write_flat`] for the order).
    pub fn to_flat(&self) -> Vec<f32> {
        match self {
            Obs::Vector(values) => values.clone(),
            Obs::Multimodal(m) => {
                let mut flat = Vec::with_capacity(self.flat_len());
                for image in [&m.rgb, &m.depth].into_iter().flatten() {
                    flat.extend_from_slice(&image.data);
                }
                flat.extend_from_slice(&m.vector);
                flat
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_helpers() {
        let obs = Obs::Vector(vec![1.0, 2.0]);
        assert_eq!(obs.as_vector(), Some(&[1.0, 2.0][..]));
        assert_eq!(obs.flat_len(), 2);
        assert_eq!(obs.to_flat(), vec![1.0, 2.0]);
        assert_eq!(obs.into_vector(), Some(vec![1.0, 2.0]));
    }

    #[test]
    fn multimodal_flattens_rgb_then_depth_then_vector() {
        let obs = Obs::Multimodal(MultimodalObs {
            rgb: Some(Image {
                channels: 3,
                height: 1,
                width: 1,
                data: vec![1.0, 2.0, 3.0],
            }),
            depth: Some(Image {
                channels: 1,
                height: 1,
                width: 1,
                data: vec![4.0],
            }),
            vector: vec![5.0],
        });
        assert_eq!(obs.as_vector(), None);
        assert_eq!(obs.flat_len(), 5);
        let mut out = [0.0; 5];
        obs.write_flat(&mut out).unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(obs.to_flat(), out.to_vec());
        assert_eq!(
            obs.write_flat(&mut [0.0; 4]),
            Err(EnvError::ObsBufferLength {
                expected: 5,
                got: 4
            })
        );
    }
}
