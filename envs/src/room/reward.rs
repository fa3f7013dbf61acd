//! The reward and the vector state, both computed from what the camera saw of the target
//! ([`TargetView`]).
//!
//! The paper's reward is the confidence score of an object detector run on the frame
//! (following Active Perception work in AI2THOR). Without a detector, we use a documented
//! proxy that has the properties such a confidence has — it falls as the object is occluded,
//! as it shrinks with distance and as it drifts to the edge of the frame:
//!
//! ```text
//! r = v · s · c ∈ [0, 1]
//! v = visible_pixels / unoccluded_pixels               visible fraction (occlusion)
//! s = min(1, sqrt(A / A_ref)),  A = unoccluded_pixels / (H · W)
//!                                                      apparent size: the silhouette's
//!                                                      linear size relative to a reference
//! c = 1 − ‖m‖ / √2                                     centring: m = the silhouette's centre
//!                                                      in image coordinates [−1, 1]²
//! r = 0 when the target is outside the view (unoccluded_pixels = 0).
//! ```
//!
//! `A_ref` is [`super::RoomConfig::reference_area`] (default 0.02: a target filling 2% of the
//! image, about 21 × 21 pixels at 150 × 150, counts as full size). The size and centring terms
//! use the *unoccluded* silhouette, so that for a fixed pose the reward depends on occluders
//! only through `v`: covering more of the target never raises it.

use serde::Serialize;

use super::render::TargetView;

/// The reward's three factors and their product.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DetectionConfidence {
    /// `v`: visible pixels over unoccluded pixels.
    pub visible_fraction: f64,
    /// `s`: `min(1, sqrt(A / A_ref))`.
    pub size: f64,
    /// `c`: `1 − ‖m‖ / √2`.
    pub centring: f64,
    /// `r = v · s · c`.
    pub confidence: f64,
}

/// The reward: a detection-confidence proxy of `view`, in `[0, 1]`.
///
/// ```text
/// r = v · s · c
/// v = visible_pixels / unoccluded_pixels          visible fraction (occlusion)
/// s = min(1, sqrt(A / A_ref)),  A = unoccluded_pixels / (H · W)      apparent size
/// c = 1 − ‖m‖ / √2,  m = centre of the unoccluded silhouette in [−1, 1]²   centring
/// r = 0 when the target is outside the view (unoccluded_pixels = 0)
/// ```
///
/// `unoccluded_pixels` counts the pixels whose ray hits the target whether or not something
/// is in front of it; `visible_pixels` those whose nearest hit is the target. Size and centring
/// use the unoccluded silhouette, so for a fixed pose occluders act only through `v`.
/// `reference_area` is `A_ref`, the image fraction at which the size term saturates; it must be
/// > 0 (checked by [`super::RoomConfig::build`]).
pub fn detection_confidence(view: &TargetView, reference_area: f64) -> DetectionConfidence {
    let pixels = (view.image_width * view.image_height).max(1) as f64;
    let Some([cx, cy]) = view
        .unoccluded_center
        .filter(|_| view.unoccluded_pixels > 0)
    else {
        return DetectionConfidence {
            visible_fraction: 0.0,
            size: 0.0,
            centring: 0.0,
            confidence: 0.0,
        };
    };
    let visible_fraction = view.visible_pixels as f64 / view.unoccluded_pixels as f64;
    let area = view.unoccluded_pixels as f64 / pixels;
    let size = (area / reference_area).sqrt().min(1.0);
    let mx = 2.0 * f64::from(cx) / view.image_width as f64 - 1.0;
    let my = 2.0 * f64::from(cy) / view.image_height as f64 - 1.0;
    let centring = (1.0 - (mx * mx + my * my).sqrt() / std::f64::consts::SQRT_2).clamp(0.0, 1.0);
    DetectionConfidence {
        visible_fraction,
        size,
        centring,
        confidence: visible_fraction * size * centring,
    }
}

/// The vector state: the target's visible bounding box `(x_min, y_min, x_max, y_max)` in image
/// coordinates mapped to `[−1, 1]` (x to the right, y downwards, as detectors report boxes;
/// pixel edges, so a box one pixel wide has width `2 / W`). When no pixel of the target is
/// visible the box is all zeros — a degenerate box of zero area, never produced by a visible
/// target, which a network reads as "no detection".
pub fn bbox_vector(view: &TargetView) -> [f32; 4] {
    match view.visible_bbox {
        None => [0.0; 4],
        Some([c0, r0, c1, r1]) => {
            let (w, h) = (view.image_width as f32, view.image_height as f32);
            // (2e − n) / n rather than 2e / n − 1: one rounding, so edges land on the nearest
            // f32 (a box edge at pixel 40 of 100 is exactly -0.2f32).
            [
                (2.0 * c0 as f32 - w) / w,
                (2.0 * r0 as f32 - h) / h,
                (2.0 * (c1 + 1) as f32 - w) / w,
                (2.0 * (r1 + 1) as f32 - h) / h,
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(visible: usize, unoccluded: usize, center: [f32; 2]) -> TargetView {
        TargetView {
            image_width: 100,
            image_height: 100,
            visible_pixels: visible,
            unoccluded_pixels: unoccluded,
            visible_bbox: (visible > 0).then_some([40, 40, 59, 59]),
            unoccluded_center: (unoccluded > 0).then_some(center),
        }
    }

    #[test]
    fn worked_example() {
        // 400 of 10 000 pixels (A = 0.04), half occluded, centre at (75, 50): m = (0.5, 0).
        // v = 0.5; s = min(1, sqrt(0.04 / 0.02)) = 1; c = 1 − 0.5/√2 = 0.646447.
        let terms = detection_confidence(&view(200, 400, [75.0, 50.0]), 0.02);
        assert_eq!(terms.visible_fraction, 0.5);
        assert_eq!(terms.size, 1.0);
        assert!((terms.centring - 0.646_446_609).abs() < 1e-8, "{terms:?}");
        assert!((terms.confidence - 0.323_223_304).abs() < 1e-8, "{terms:?}");
        // 50 pixels (A = 0.005) fully visible, centred: s = sqrt(0.25) = 0.5.
        let terms = detection_confidence(&view(50, 50, [50.0, 50.0]), 0.02);
        assert_eq!(terms.confidence, 0.5);
    }

    #[test]
    fn no_target_in_view_gives_zero() {
        let terms = detection_confidence(&view(0, 0, [0.0; 2]), 0.02);
        assert_eq!(terms.confidence, 0.0);
        assert_eq!(bbox_vector(&view(0, 0, [0.0; 2])), [0.0; 4]);
    }

    #[test]
    fn bbox_maps_pixel_edges_to_unit_square() {
        // Columns and rows 40..=59 of 100: edges at 40 and 60 → −0.2 and 0.2.
        assert_eq!(
            bbox_vector(&view(400, 400, [50.0, 50.0])),
            [-0.2, -0.2, 0.2, 0.2]
        );
        let full = TargetView {
            visible_bbox: Some([0, 0, 99, 99]),
            ..view(1, 1, [50.0, 50.0])
        };
        assert_eq!(bbox_vector(&full), [-1.0, -1.0, 1.0, 1.0]);
    }
}
