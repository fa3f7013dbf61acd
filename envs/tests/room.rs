//! The active-perception room task: determinism, the 120 layouts, collisions, depth against
//! analytic distances, bounding boxes against projected corners, the reward against
//! occlusion, typed errors, and the `Env` contract through `make` and `VecEnv`.

use std::collections::{HashMap, HashSet};
use std::f64::consts::{FRAC_PI_2, PI, TAU};

use privrl_envs::room::{
    sample_observations, Layout, Material, Object, ObjectKind, Pose, RoomAction, RoomConfig,
    RoomEnv, RoomSetting, RoomType, AGENT_RADIUS_M, LAYOUTS_PER_TYPE, MIN_FREE_AREA_M2,
};
use privrl_envs::{make, Env, EnvError, EpisodeEnd, MultimodalObs, Obs, VecEnv};

const RED: Material = Material::Target {
    color: [0.9, 0.1, 0.1],
};
const GREY: Material = Material::Paint {
    color: [0.5, 0.5, 0.5],
};

fn multimodal(obs: Obs) -> MultimodalObs {
    match obs {
        Obs::Multimodal(m) => m,
        Obs::Vector(_) => panic!("room observations are multimodal"),
    }
}

fn small(setting: RoomSetting, size: usize) -> RoomConfig {
    RoomConfig::s1().with_setting(setting).with_image_size(size)
}

/// An empty 4 m × 5 m × 2.5 m room.
fn empty_room() -> Layout {
    Layout::empty(4.0, 5.0, 2.5).unwrap()
}

// --- interface ---------------------------------------------------------------------------------

#[test]
fn registered_settings_have_the_papers_shapes() {
    let s1 = RoomEnv::s1();
    assert_eq!(s1.id(), "room-s1");
    assert_eq!(s1.rgb_shape(), Some([3, 150, 150]));
    assert_eq!(s1.depth_shape(), [1, 150, 150]);
    assert_eq!(s1.vector_len(), 4);
    assert_eq!(s1.obs_len(), 4 * 150 * 150 + 4);
    let s2 = RoomEnv::s2();
    assert_eq!(s2.id(), "room-s2");
    assert_eq!(s2.rgb_shape(), None);
    assert_eq!(s2.obs_len(), 150 * 150 + 4);

    let mut env = make("room-s2").unwrap();
    let obs = multimodal(env.reset(Some(0)));
    assert!(obs.rgb.is_none());
    let depth = obs.depth.unwrap();
    assert_eq!((depth.channels, depth.height, depth.width), (1, 150, 150));
    assert_eq!(env.action_space().discrete_n(), Some(7));

    let custom = small(RoomSetting::S1, 64).build().unwrap();
    assert_eq!(custom.id(), "room-custom");
    assert_eq!(RoomAction::from_index(6), Some(RoomAction::Stay));
    assert_eq!(RoomAction::from_index(7), None);
}

#[test]
fn step_into_agrees_with_step_and_stays_in_the_space() {
    for setting in [RoomSetting::S1, RoomSetting::S2] {
        let config = small(setting, 24).with_max_episode_steps(Some(40));
        let mut a = config.clone().build().unwrap();
        let mut b = config.build().unwrap();
        let space = a.observation_space();
        let mut flat = vec![0.0; space.flat_dim()];
        b.reset_into(Some(3), &mut flat).unwrap();
        assert_eq!(a.reset(Some(3)).to_flat(), flat);
        for t in 0..120 {
            let action = (t * 5 + t / 7) % 7;
            let step = a.step(action).unwrap();
            let info = b.step_into(action, &mut flat).unwrap();
            assert_eq!(step.info(), info);
            assert_eq!(step.obs.to_flat(), flat);
            assert!(space.contains(&flat), "step {t}");
            assert!((0.0..=1.0).contains(&info.reward));
            assert!(!info.terminated);
            if info.done() {
                assert!(info.truncated);
                a.reset(None);
                b.reset_into(None, &mut flat).unwrap();
            }
        }
        assert!(matches!(
            b.step_into(0, &mut [0.0; 3]),
            Err(EnvError::ObsBufferLength { got: 3, .. })
        ));
    }
}

#[test]
fn episodes_truncate_at_the_time_limit() {
    let mut env = small(RoomSetting::S2, 16)
        .with_max_episode_steps(Some(5))
        .build()
        .unwrap();
    assert!(matches!(env.step(0), Err(EnvError::ResetRequired { .. })));
    env.reset(Some(1));
    let flags: Vec<_> = (0..5)
        .map(|_| env.step(RoomAction::Stay.index()).unwrap().truncated)
        .collect();
    assert_eq!(flags, [false, false, false, false, true]);
    assert!(matches!(
        env.step(0),
        Err(EnvError::EpisodeFinished {
            reason: EpisodeEnd::Truncated,
            steps: 5,
            ..
        })
    ));
}

#[test]
fn invalid_actions_are_typed_and_move_nothing() {
    let mut env = small(RoomSetting::S2, 16).build().unwrap();
    env.reset(Some(2));
    let pose = env.pose();
    let err = env.step(7).unwrap_err();
    assert_eq!(
        err,
        EnvError::InvalidAction {
            env: "room-custom".into(),
            action: 7,
            n: 7
        }
    );
    assert!(err.to_string().contains("0 to 6"), "{err}");
    assert_eq!(env.pose(), pose);
}

#[test]
fn vec_env_steps_rooms_with_auto_reset() {
    let envs: Vec<RoomEnv> = (0..3)
        .map(|_| {
            small(RoomSetting::S2, 16)
                .with_max_episode_steps(Some(10))
                .build()
                .unwrap()
        })
        .collect();
    let mut venv = VecEnv::new(envs).unwrap();
    assert_eq!(venv.obs_len(), 16 * 16 + 4);
    let mut buffer = venv.flat_step_buffer();
    venv.reset_flat(0, buffer.obs_mut()).unwrap();
    let mut episodes = 0;
    for t in 0..25 {
        venv.step_flat(&[t % 7, (t + 1) % 7, 6], &mut buffer)
            .unwrap();
        episodes += buffer.completed_episodes().count();
    }
    assert_eq!(episodes, 6);
}

// --- determinism and layouts ----------------------------------------------------------------

#[test]
fn seeds_reproduce_and_none_continues_the_stream() {
    let mut env = small(RoomSetting::S1, 24).build().unwrap();
    let first = env.reset(Some(42));
    let second = env.reset(None);
    assert_ne!(first, second);
    assert_eq!(env.reset(Some(42)), first);
    assert_eq!(env.reset(None), second);
    assert_ne!(env.reset(Some(43)), first);

    let rollout = |seed| {
        let mut env = small(RoomSetting::S1, 24).build().unwrap();
        let mut trace = vec![env.reset(Some(seed)).to_flat()];
        for t in 0..30 {
            let step = env.step((t * 3 + 1) % 7).unwrap();
            trace.push(step.obs.to_flat());
            trace.push(vec![step.reward as f32]);
        }
        (trace, env.pose())
    };
    assert_eq!(rollout(9), rollout(9));
    assert_ne!(rollout(9).0, rollout(10).0);
}

#[test]
fn resets_draw_every_room_type_unless_fixed() {
    let mut env = small(RoomSetting::S2, 8).build().unwrap();
    let mut seen = HashSet::new();
    env.reset(Some(0));
    for _ in 0..200 {
        env.reset(None);
        let layout = env.layout();
        seen.insert((layout.room_type().unwrap(), layout.index().unwrap()));
    }
    let types: HashSet<_> = seen.iter().map(|(t, _)| *t).collect();
    assert_eq!(types.len(), 4);
    assert!(seen.len() > 80, "{}", seen.len());

    let mut fixed = small(RoomSetting::S2, 8)
        .with_room_type(Some(RoomType::Kitchen))
        .with_layout_index(Some(12))
        .build()
        .unwrap();
    for seed in 0..20 {
        fixed.reset(Some(seed));
        assert_eq!(fixed.layout().room_type(), Some(RoomType::Kitchen));
        assert_eq!(fixed.layout().index(), Some(12));
    }
}

#[test]
fn there_are_120_distinct_valid_layouts() {
    let mut fingerprints = HashSet::new();
    let characteristic = |t: RoomType| match t {
        RoomType::Bathroom => ObjectKind::Toilet,
        RoomType::Bedroom => ObjectKind::Bed,
        RoomType::Kitchen => ObjectKind::Counter,
        RoomType::LivingRoom => ObjectKind::Sofa,
    };
    for t in RoomType::ALL {
        let mut with_characteristic = 0;
        for i in 0..LAYOUTS_PER_TYPE {
            let layout = Layout::generated(t, i).unwrap();
            assert_eq!((layout.room_type(), layout.index()), (Some(t), Some(i)));
            fingerprints.insert(serde_json::to_string(&*layout).unwrap());
            let target = layout
                .target()
                .expect("every generated layout has a target");
            assert_eq!(target.kind, ObjectKind::Target);
            let free_area = layout.free_cells().len() as f32 * 0.01;
            assert!(free_area >= MIN_FREE_AREA_M2, "{}", layout.describe());
            assert!(layout.target_viewpoints(1.5) >= 20, "{}", layout.describe());
            assert!(layout.objects().len() >= 6, "{}", layout.describe());
            for cell in layout.free_cells() {
                assert!(layout.is_free(cell[0], cell[1]));
            }
            if layout.objects().iter().any(|o| o.kind == characteristic(t)) {
                with_characteristic += 1;
            }
        }
        assert!(with_characteristic >= 27, "{t}: {with_characteristic}");
    }
    assert_eq!(fingerprints.len(), 120);
    assert!(Layout::generated(RoomType::Bedroom, LAYOUTS_PER_TYPE).is_none());
}

#[test]
fn layout_generation_is_a_function_of_type_and_index() {
    for (t, i) in [
        (RoomType::Bathroom, 0),
        (RoomType::Kitchen, 17),
        (RoomType::LivingRoom, 29),
    ] {
        let fresh = Layout::generate(t, i).unwrap();
        assert_eq!(fresh, *Layout::generated(t, i).unwrap());
        assert_eq!(fresh, Layout::generate(t, i).unwrap());
    }
}

// --- movement and collisions ------------------------------------------------------------------

#[test]
fn walls_stop_the_agent() {
    let config = small(RoomSetting::S2, 16);
    let mut env = RoomEnv::with_layout(config, empty_room()).unwrap();
    // Facing south (−y) at y = 0.6: one step to 0.35, the next would end at 0.1 < 0.2.
    env.set_state(&[2.0, 0.6, -FRAC_PI_2]).unwrap();
    env.step(RoomAction::MoveAhead.index()).unwrap();
    assert!((env.pose().y - 0.35).abs() < 1e-9);
    assert!(!env.last_move_blocked());
    env.step(RoomAction::MoveAhead.index()).unwrap();
    assert!((env.pose().y - 0.35).abs() < 1e-9);
    assert!(env.last_move_blocked());
    // Left of south-facing is east (+x); right is west; back is north.
    env.step(RoomAction::MoveLeft.index()).unwrap();
    assert!((env.pose().x - 2.25).abs() < 1e-9);
    env.step(RoomAction::MoveRight.index()).unwrap();
    env.step(RoomAction::MoveRight.index()).unwrap();
    assert!((env.pose().x - 1.75).abs() < 1e-9);
    env.step(RoomAction::MoveBack.index()).unwrap();
    assert!((env.pose().y - 0.6).abs() < 1e-9);
    // Twelve 30° turns come back to the start heading.
    let heading = env.pose().heading;
    for _ in 0..12 {
        env.step(RoomAction::RotateLeft.index()).unwrap();
    }
    let turned = env.pose().heading;
    assert!((turned - heading).abs() < 1e-9 || (turned - heading).abs() > TAU - 1e-9);
    env.step(RoomAction::RotateRight.index()).unwrap();
    assert!(((env.pose().heading - heading).rem_euclid(TAU) - (TAU - PI / 6.0)).abs() < 1e-9);
}

#[test]
fn furniture_stops_the_agent_even_with_long_steps() {
    // A 5 cm thick partition at x ∈ [2, 2.05], 1 m high, across the whole room.
    let layout = empty_room()
        .with_object(Object::new(
            ObjectKind::Block,
            [2.0, 0.0, 0.0],
            [2.05, 5.0, 1.0],
            GREY,
        ))
        .unwrap();
    let config = small(RoomSetting::S2, 16).with_move_step_m(1.0);
    let mut env = RoomEnv::with_layout(config, layout).unwrap();
    // From x = 1.3 facing east, a 1 m step would land at 2.3, free, beyond the partition.
    env.set_state(&[1.3, 2.5, 0.0]).unwrap();
    env.step(RoomAction::MoveAhead.index()).unwrap();
    assert!(env.last_move_blocked());
    assert_eq!(env.pose().x, 1.3);
    for action in 0..4 {
        for _ in 0..10 {
            env.step(action).unwrap();
            assert!(env.pose().x < 2.0 - f64::from(AGENT_RADIUS_M) + 1e-6);
        }
    }
}

#[test]
fn random_walks_never_enter_furniture_or_walls() {
    for t in RoomType::ALL {
        let mut env = small(RoomSetting::S2, 8)
            .with_room_type(Some(t))
            .with_max_episode_steps(None)
            .build()
            .unwrap();
        env.reset(Some(t.index() as u64));
        let mut blocked = 0;
        for step in 0..1500 {
            if step % 300 == 0 {
                env.reset(None);
            }
            let action = (step * 7 + step / 11 + step / 5) % 4;
            env.step(action).unwrap();
            let pose = env.pose();
            assert!(env.layout().is_free(pose.x as f32, pose.y as f32));
            blocked += usize::from(env.last_move_blocked());
        }
        assert!(blocked > 10, "{t}: only {blocked} blocked moves");
    }
}

#[test]
fn set_state_checks_the_pose() {
    let mut env = small(RoomSetting::S2, 16).build().unwrap();
    let invalid = |r: Result<Obs, EnvError>| matches!(r, Err(EnvError::InvalidState { .. }));
    assert!(invalid(env.set_state(&[1.0, 1.0])));
    assert!(invalid(env.set_state(&[f64::NAN, 1.0, 0.0])));
    assert!(invalid(env.set_state(&[0.1, 1.0, 0.0])));
    assert!(invalid(env.set_state(&[1.0, 1.0, 0.0, 4.0, 0.0])));
    assert!(invalid(env.set_state(&[1.0, 1.0, 0.0, 0.0, 30.0])));
    assert!(invalid(env.set_state(&[1.0, 1.0, 0.0, 0.5, 0.0])));
    let err = env.set_state(&[0.0, 0.0, 0.0]).unwrap_err();
    assert!(
        err.to_string().contains("clear of solid furniture"),
        "{err}"
    );

    // Inside a solid box of a generated layout.
    let layout = Layout::generated(RoomType::Bedroom, 3).unwrap();
    let bed = layout
        .objects()
        .iter()
        .find(|o| o.kind == ObjectKind::Bed)
        .unwrap();
    let [x, y, _] = bed.center();
    let inside = [f64::from(x), f64::from(y), 0.0, 1.0, 3.0];
    assert!(invalid(env.set_state(&inside)));

    // A valid pose in another layout switches to it and restarts the episode.
    let cell = layout.free_cells()[0];
    let state = [f64::from(cell[0]), f64::from(cell[1]), 7.0, 1.0, 3.0];
    env.set_state(&state).unwrap();
    assert_eq!(env.layout().room_type(), Some(RoomType::Bedroom));
    assert_eq!(env.layout().index(), Some(3));
    assert!((env.pose().heading - (7.0 - TAU)).abs() < 1e-12);
    assert!(env.step(0).is_ok());
    env.set_pose(Pose {
        x: state[0],
        y: state[1],
        heading: 0.0,
    })
    .unwrap();
}

// --- rendering ---------------------------------------------------------------------------------

/// Column or row coordinate of pixel centre `k` as a slope: `(k + 0.5 − n/2) / F`.
fn slope(k: usize, n: usize, focal: f64) -> f64 {
    (k as f64 + 0.5 - 0.5 * n as f64) / focal
}

#[test]
fn depth_is_the_analytic_distance_to_walls_and_floor() {
    let size = 48;
    let focal = 0.5 * size as f64 / (45f64).to_radians().tan();
    let mut env = RoomEnv::with_layout(small(RoomSetting::S1, size), empty_room()).unwrap();
    // At (1.5, 1.5), 1.5 m high, facing north: the north wall (y = 5) is 3.5 m ahead.
    let obs = multimodal(env.set_state(&[1.5, 1.5, FRAC_PI_2]).unwrap());
    let depth = obs.depth.unwrap().data;
    let (mut wall, mut floor) = (0, 0);
    for i in 0..size {
        let up = -slope(i, size, focal);
        for j in 0..size {
            let right = slope(j, size, focal);
            // Where the ray meets the plane y = 5, and the floor.
            let (x_wall, z_wall) = (1.5 + 3.5 * right, 1.5 + 3.5 * up);
            let d = f64::from(depth[i * size + j]);
            if (0.05..3.95).contains(&x_wall) && (0.05..2.45).contains(&z_wall) {
                assert!((d - 0.35).abs() < 1e-6, "pixel ({i}, {j}): {d}");
                wall += 1;
            } else if up < 0.0 {
                let t = 1.5 / -up;
                let (x, y) = (1.5 + t * right, 1.5 + t);
                if (0.05..3.95).contains(&x) && y < 4.95 {
                    assert!((d - t / 10.0).abs() < 1e-5, "pixel ({i}, {j}): {d} vs {t}");
                    floor += 1;
                }
            }
        }
    }
    assert!(wall > 300 && floor > 300, "{wall} {floor}");

    // Facing east from x = 1: the east wall (x = 4) at 3 m, normalised by max_depth_m = 5.
    let config = small(RoomSetting::S2, size).with_max_depth_m(5.0);
    let mut env = RoomEnv::with_layout(config, empty_room()).unwrap();
    let depth = multimodal(env.set_state(&[1.0, 2.5, 0.0]).unwrap())
        .depth
        .unwrap()
        .data;
    let centre = depth[(size / 2) * size + size / 2];
    assert!((centre - 0.6).abs() < 1e-6, "{centre}");
    assert!(depth.iter().all(|d| (0.0..=1.0).contains(d)));
}

/// The target's bounding box projected from its corners with the documented camera model,
/// clipped to the image, in `[−1, 1]`.
fn projected_bbox(target: &Object, pose: Pose, camera_height: f64, size: usize) -> [f64; 4] {
    let focal = 0.5 * size as f64 / (45f64).to_radians().tan();
    let (sin, cos) = pose.heading.sin_cos();
    let mut bbox = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    ];
    for corner in target.corners() {
        let q = [
            f64::from(corner[0]) - pose.x,
            f64::from(corner[1]) - pose.y,
            f64::from(corner[2]) - camera_height,
        ];
        let forward = q[0] * cos + q[1] * sin;
        let right = q[0] * sin - q[1] * cos;
        assert!(forward > 0.0);
        let col = 0.5 * size as f64 + focal * right / forward;
        let row = 0.5 * size as f64 - focal * q[2] / forward;
        bbox = [
            bbox[0].min(col),
            bbox[1].min(row),
            bbox[2].max(col),
            bbox[3].max(row),
        ];
    }
    bbox.map(|v| (2.0 * v / size as f64 - 1.0).clamp(-1.0, 1.0))
}

#[test]
fn bounding_box_matches_the_projected_corners() {
    let size = 96;
    let layout = empty_room()
        .with_target([1.8, 3.5, 0.6], [2.1, 3.8, 0.9], RED)
        .unwrap();
    let target = *layout.target().unwrap();
    let mut env = RoomEnv::with_layout(small(RoomSetting::S1, size), layout).unwrap();
    let tolerance = 2.0 / size as f64 + 1e-4;
    let mut clipped = 0;
    for (x, y, heading) in [
        (2.0, 1.0, FRAC_PI_2),
        (2.0, 1.0, FRAC_PI_2 - 0.4),
        (2.0, 1.0, FRAC_PI_2 - 0.76),
        (3.0, 2.0, 2.2),
        (1.0, 2.8, 0.7),
        (2.0, 2.5, FRAC_PI_2 + 0.3),
    ] {
        let pose = Pose { x, y, heading };
        let obs = multimodal(env.set_pose(pose).unwrap());
        let expected = projected_bbox(&target, pose, 1.5, size);
        let got: Vec<f64> = obs.vector.iter().map(|&v| f64::from(v)).collect();
        if expected.iter().all(|v| v.abs() < 1.0) {
            for (got, want) in got.iter().zip(expected) {
                assert!(
                    (got - want).abs() <= tolerance,
                    "pose {pose:?}: {got:?} vs {expected:?}"
                );
            }
        } else {
            // Partly out of frame: the visible part's box lies within the clipped projection
            // and reaches the image border where the projection does.
            clipped += 1;
            assert!(got[0] >= expected[0] - tolerance && got[2] <= expected[2] + tolerance);
            assert!(got[1] >= expected[1] - tolerance && got[3] <= expected[3] + tolerance);
            for a in 0..4 {
                if expected[a].abs() == 1.0 {
                    assert_eq!(
                        got[a], expected[a],
                        "pose {pose:?}: {got:?} vs {expected:?}"
                    );
                }
            }
        }
        // The whole silhouette is visible: nothing occludes it.
        assert_eq!(
            env.target_view().visible_pixels,
            env.target_view().unoccluded_pixels
        );
    }
    assert!(clipped >= 1);

    // Looking away: no box, zero reward.
    let obs = multimodal(
        env.set_pose(Pose {
            x: 2.0,
            y: 1.0,
            heading: -FRAC_PI_2,
        })
        .unwrap(),
    );
    assert_eq!(obs.vector, [0.0; 4]);
    assert_eq!(env.detection().confidence, 0.0);
}

#[test]
fn bounding_boxes_and_rewards_agree_in_generated_rooms() {
    let samples = sample_observations(&small(RoomSetting::S2, 32), 200, 5).unwrap();
    let mut visible = 0;
    for s in &samples {
        let v = &s.obs.vector;
        assert!(v.iter().all(|c| (-1.0..=1.0).contains(c)), "{v:?}");
        assert!((0.0..=1.0).contains(&s.reward));
        if s.reward > 0.0 {
            assert!(v[0] < v[2] && v[1] < v[3], "{v:?}");
            visible += 1;
        } else {
            assert_eq!(s.detection.visible_fraction, 0.0);
        }
        if *v == [0.0; 4] {
            assert_eq!(s.reward, 0.0);
        }
    }
    assert!(visible > 60, "{visible} of 200 samples see the target");
}

/// The reward of the camera at (2, 1) looking north at a target at the camera's height
/// (x ∈ [1.8, 2.2]), with a 1 m high blocker at y = 2.5 spanning x ∈ [blocker_from, 3.5].
fn reward_with_blocker(blocker_from: Option<f32>) -> (f64, f64, usize) {
    let mut layout = empty_room()
        .with_target([1.8, 3.5, 1.3], [2.2, 3.7, 1.7], RED)
        .unwrap();
    if let Some(x0) = blocker_from {
        layout = layout
            .with_object(Object::new(
                ObjectKind::Block,
                [x0, 2.5, 1.0],
                [3.5, 2.55, 2.0],
                GREY,
            ))
            .unwrap();
    }
    let mut env = RoomEnv::with_layout(small(RoomSetting::S1, 64), layout).unwrap();
    env.set_state(&[2.0, 1.0, FRAC_PI_2]).unwrap();
    let terms = env.detection();
    (
        terms.confidence,
        terms.visible_fraction,
        env.target_view().unoccluded_pixels,
    )
}

#[test]
fn reward_falls_as_the_target_is_occluded() {
    let (clear, fraction, pixels) = reward_with_blocker(None);
    assert_eq!(fraction, 1.0);
    assert!(clear > 0.3, "{clear}");
    let mut previous = clear;
    let mut fractions = vec![1.0];
    // Slide the blocker's edge across the target's silhouette, which spans x ∈ [1.88, 2.12]
    // in the blocker's plane (y = 2.5 is 0.6 of the way from the camera to the target).
    for x0 in [2.3, 2.1, 2.05, 2.0, 1.95, 1.9, 1.7] {
        let (reward, fraction, unoccluded) = reward_with_blocker(Some(x0));
        assert_eq!(unoccluded, pixels, "occluders do not change the silhouette");
        assert!(reward <= previous, "{x0}: {reward} > {previous}");
        // Only occlusion changes, so the reward is the clear reward times the visible fraction.
        assert!((reward - clear * fraction).abs() < 1e-12);
        previous = reward;
        fractions.push(fraction);
    }
    assert!(fractions.windows(2).all(|w| w[1] <= w[0]), "{fractions:?}");
    assert!(
        fractions.iter().any(|f| 0.2 < *f && *f < 0.8),
        "{fractions:?}"
    );
    assert_eq!(*fractions.last().unwrap(), 0.0);
    assert_eq!(previous, 0.0);
}

#[test]
fn reward_prefers_a_centred_close_target() {
    let layout = empty_room()
        .with_target([1.9, 3.5, 1.0], [2.1, 3.7, 1.2], RED)
        .unwrap();
    let mut env = RoomEnv::with_layout(small(RoomSetting::S2, 64), layout).unwrap();
    let mut reward = |x: f64, y: f64, heading: f64| {
        env.set_state(&[x, y, heading]).unwrap();
        env.detection()
    };
    let centred = reward(2.0, 1.0, FRAC_PI_2 + 0.08);
    let off_centre = reward(2.0, 1.0, FRAC_PI_2 + 0.6);
    assert!(off_centre.centring < centred.centring);
    assert!(off_centre.confidence < centred.confidence);
    let far = reward(2.0, 0.5, FRAC_PI_2);
    let near = reward(2.0, 1.5, FRAC_PI_2);
    assert!(near.size > far.size, "{near:?} {far:?}");
    assert!(near.size <= 1.0);
}

#[test]
fn images_have_structure() {
    let samples = sample_observations(&small(RoomSetting::S1, 64), 40, 11).unwrap();
    let mut textured = 0;
    for s in &samples {
        let rgb = &s.obs.rgb.as_ref().unwrap().data;
        assert!(rgb.iter().all(|v| (0.0..=1.0).contains(v)));
        let depth = &s.obs.depth.as_ref().unwrap().data;
        assert!(depth.iter().all(|v| (0.0..=1.0).contains(v)));
        // Standard deviation of luminance, and of its horizontal differences (texture).
        let n = 64 * 64;
        let luma: Vec<f32> = (0..n)
            .map(|p| 0.299 * rgb[p] + 0.587 * rgb[n + p] + 0.114 * rgb[2 * n + p])
            .collect();
        let mean = luma.iter().sum::<f32>() / n as f32;
        let std = (luma.iter().map(|l| (l - mean).powi(2)).sum::<f32>() / n as f32).sqrt();
        let gradient = luma.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f32>() / n as f32;
        if std > 0.05 && gradient > 0.01 {
            textured += 1;
        }
        let distinct: HashSet<u32> = rgb.iter().map(|v| (v * 255.0) as u32).collect();
        assert!(distinct.len() > 20, "{}", distinct.len());
    }
    assert!(textured >= 34, "{textured} of 40 images are textured");
}

#[test]
fn sample_observations_cover_every_layout_deterministically() {
    let config = small(RoomSetting::S2, 8);
    let samples = sample_observations(&config, 240, 1).unwrap();
    let mut counts = HashMap::new();
    for s in &samples {
        *counts.entry((s.room_type, s.layout_index)).or_insert(0) += 1;
        assert!(s.obs.rgb.is_none());
        assert_eq!(s.obs.depth.as_ref().unwrap().data.len(), 64);
    }
    assert_eq!(counts.len(), 120);
    assert!(counts.values().all(|&c| c == 2));
    assert_eq!(samples, sample_observations(&config, 240, 1).unwrap());
    assert_ne!(samples, sample_observations(&config, 240, 2).unwrap());

    let kitchen = config.with_room_type(Some(RoomType::Kitchen));
    let samples = sample_observations(&kitchen, 30, 0).unwrap();
    assert!(samples.iter().all(|s| s.room_type == RoomType::Kitchen));
    let indices: HashSet<_> = samples.iter().map(|s| s.layout_index).collect();
    assert_eq!(indices.len(), 30);
}

// --- configuration -----------------------------------------------------------------------------

#[test]
fn bad_configs_name_the_parameter_and_range() {
    let cases: Vec<(RoomConfig, &str)> = vec![
        (RoomConfig::s1().with_image_size(4), "image_size"),
        (RoomConfig::s1().with_image_size(2000), "image_size"),
        (RoomConfig::s1().with_layout_index(Some(30)), "layout_index"),
        (
            RoomConfig::s1().with_max_episode_steps(Some(0)),
            "max_episode_steps",
        ),
        (RoomConfig::s1().with_move_step_m(0.0), "move_step_m"),
        (RoomConfig::s1().with_move_step_m(f64::NAN), "move_step_m"),
        (
            RoomConfig::s1().with_rotate_step_degrees(-30.0),
            "rotate_step_degrees",
        ),
        (
            RoomConfig::s1().with_field_of_view_degrees(5.0),
            "field_of_view_degrees",
        ),
        (
            RoomConfig::s1().with_camera_height_m(2.5),
            "camera_height_m",
        ),
        (RoomConfig::s1().with_max_depth_m(0.0), "max_depth_m"),
        (
            RoomConfig::s1().with_reference_area(f64::INFINITY),
            "reference_area",
        ),
    ];
    for (config, name) in cases {
        let err = config.build().unwrap_err();
        match &err {
            EnvError::InvalidParameter { name: got, .. } => assert_eq!(got, name),
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains(name), "{err}");
    }
    assert!(matches!(
        sample_observations(&RoomConfig::s1().with_image_size(0), 1, 0),
        Err(EnvError::InvalidParameter { .. })
    ));
    // A custom room lower than the camera, or with nowhere to stand.
    let low = Layout::empty(3.0, 3.0, 1.2).unwrap();
    assert!(RoomEnv::with_layout(RoomConfig::s2(), low).is_err());
    let full = Layout::empty(2.0, 2.0, 2.5)
        .unwrap()
        .with_object(Object::new(
            ObjectKind::Block,
            [0.0; 3],
            [2.0, 2.0, 1.0],
            GREY,
        ))
        .unwrap();
    assert!(RoomEnv::with_layout(RoomConfig::s2(), full).is_err());
}
