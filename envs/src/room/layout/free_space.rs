//! Where the agent can stand and what it can see: the free-space grid of agent positions,
//! collision checks and line of sight, which the checks on every generated layout use.

use super::{Layout, AGENT_RADIUS_M, FREE_GRID_M};

impl Layout {
    /// Whether the agent (disc of [`AGENT_RADIUS_M`]) can stand at `(x, y)`: inside the walls
    /// and clear of every solid box.
    pub fn is_free(&self, x: f32, y: f32) -> bool {
        let r = AGENT_RADIUS_M;
        x.is_finite()
            && y.is_finite()
            && x >= r
            && y >= r
            && x <= self.width_m - r
            && y <= self.length_m - r
            && !self
                .objects
                .iter()
                .any(|o| o.solid && o.blocks_disc(x, y, r))
    }

    /// The free grid cells of the largest 4-connected region.
    pub(super) fn compute_free_cells(&self) -> Vec<[f32; 2]> {
        let nx = (self.width_m / FREE_GRID_M).floor() as usize;
        let ny = (self.length_m / FREE_GRID_M).floor() as usize;
        let center = |i: usize, j: usize| {
            [
                (i as f32 + 0.5) * FREE_GRID_M,
                (j as f32 + 0.5) * FREE_GRID_M,
            ]
        };
        let free: Vec<bool> = (0..ny)
            .flat_map(|j| (0..nx).map(move |i| (i, j)))
            .map(|(i, j)| {
                let [x, y] = center(i, j);
                self.is_free(x, y)
            })
            .collect();
        // Label connected regions with a flood fill; keep the largest.
        let mut label = vec![usize::MAX; free.len()];
        let mut best = (0, usize::MAX);
        let mut stack = Vec::new();
        for start in 0..free.len() {
            if !free[start] || label[start] != usize::MAX {
                continue;
            }
            label[start] = start;
            stack.push(start);
            let mut size = 0;
            while let Some(cell) = stack.pop() {
                size += 1;
                let (i, j) = (cell % nx, cell / nx);
                let neighbours = [
                    (i > 0).then(|| cell - 1),
                    (i + 1 < nx).then(|| cell + 1),
                    (j > 0).then(|| cell - nx),
                    (j + 1 < ny).then(|| cell + nx),
                ];
                for n in neighbours.into_iter().flatten() {
                    if free[n] && label[n] == usize::MAX {
                        label[n] = start;
                        stack.push(n);
                    }
                }
            }
            if size > best.0 {
                best = (size, start);
            }
        }
        if best.0 == 0 {
            return Vec::new();
        }
        (0..free.len())
            .filter(|&cell| label[cell] == best.1)
            .map(|cell| center(cell % nx, cell / nx))
            .collect()
    }

    /// Whether the segment from `from` to `to` passes through no box other than `skip`.
    pub(crate) fn line_of_sight(&self, from: [f32; 3], to: [f32; 3], skip: Option<usize>) -> bool {
        let d = [0, 1, 2].map(|a| to[a] - from[a]);
        self.objects.iter().enumerate().all(|(k, o)| {
            Some(k) == skip || {
                let (mut t0, mut t1) = (1e-4_f32, 1.0 - 1e-4_f32);
                for a in 0..3 {
                    if d[a].abs() < 1e-9 {
                        if from[a] < o.min[a] || from[a] > o.max[a] {
                            return true;
                        }
                    } else {
                        let inv = 1.0 / d[a];
                        let (mut ta, mut tb) =
                            ((o.min[a] - from[a]) * inv, (o.max[a] - from[a]) * inv);
                        if ta > tb {
                            std::mem::swap(&mut ta, &mut tb);
                        }
                        t0 = t0.max(ta);
                        t1 = t1.min(tb);
                    }
                }
                t0 > t1
            }
        })
    }

    /// Free cells from which the target's centre is in line of sight and within 5 m, for a
    /// camera at `camera_height_m`.
    pub fn target_viewpoints(&self, camera_height_m: f32) -> usize {
        let Some(target) = self.target() else {
            return 0;
        };
        let c = target.center();
        self.free_cells
            .iter()
            .filter(|[x, y]| {
                let (dx, dy) = (c[0] - x, c[1] - y);
                dx * dx + dy * dy < 25.0
                    && self.line_of_sight([*x, *y, camera_height_m], c, self.target)
            })
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::room::{Material, Object, ObjectKind};

    #[test]
    fn line_of_sight_is_blocked_by_a_box() {
        let room = Layout::empty(4.0, 4.0, 2.5)
            .unwrap()
            .with_object(Object::new(
                ObjectKind::Block,
                [1.5, 1.5, 0.0],
                [2.5, 2.5, 2.0],
                Material::Paint { color: [0.5; 3] },
            ))
            .unwrap();
        assert!(!room.line_of_sight([1.0, 2.0, 1.0], [3.0, 2.0, 1.0], None));
        assert!(room.line_of_sight([1.0, 2.0, 2.2], [3.0, 2.0, 2.2], None));
        assert!(room.line_of_sight([1.0, 2.0, 1.0], [3.0, 2.0, 1.0], Some(0)));
    }
}
