//! `cargo xtask suite inversion`: gradient inversion on the active-perception rooms (QGI and
//! RGI, settings S1 and S2), Table I of Li, Ding, Zhao with the vector, action and
//! supervision-signal results of Section V-A.

mod attack;
mod gradients_file;
mod headline;
mod job;
mod method;
mod model_job;
mod plan;
mod report;
mod run_files;
mod samples_dir;
mod verdict;

use anyhow::Result;
use privrl_envs::room::RoomSetting;

use self::report::write_report;
use crate::backend::dispatch;
use crate::run::suite_dir;
use crate::summary::SuiteOutcome;
use crate::sweep::{run_parallel, Job};

pub use self::attack::{run_attack, AttackArgs, SettingArg};
pub use self::gradients_file::{model_metadata, CONFIG_KEY, MODEL_KEY};
pub(crate) use self::job::{room_samples, victim_config, InversionJob};
pub use self::method::Method;
pub use self::model_job::ModelArg;
#[cfg(test)]
pub(crate) use self::plan::InversionPlan;
pub(crate) use self::plan::ENTROPY_WEIGHT;
pub use self::plan::{InversionArgs, NormalisationArg, VictimWidth};
pub(crate) use self::report::{failure_rate, summary, FAILURE_NOTE};
pub(crate) use self::run_files::{reconstruction_sheet, write_rows};
pub use self::samples_dir::{
    read_plain_images, read_samples_dir, DrawnLabel, SampleFile, SamplesDirError, UserSamples,
    DRAWN_SIGNAL,
};

/// Runs the suite and writes `runs/inversion/report.md`; returns the report's path.
pub fn run(args: InversionArgs) -> Result<SuiteOutcome> {
    let plan = args.plan();
    let dir = suite_dir("inversion")?;
    let mut jobs = Vec::new();
    let mut room_types = Vec::new();
    let mut truths = Vec::new();
    let widths = args.victim_widths()?;
    for setting in [RoomSetting::S1, RoomSetting::S2] {
        let (samples, types) = room_samples(setting, plan.image_size, plan.samples, plan.seed)?;
        room_types = types;
        truths.push((setting, samples.clone()));
        for (w, &width) in widths.iter().enumerate() {
            let mut methods = vec![Method::Qgi, Method::Rgi];
            // Table II's ablation on the first (main) victim only.
            if setting == RoomSetting::S1 && !args.skip_ablations && w == 0 {
                methods.extend(Method::ABLATIONS);
            }
            for method in methods {
                let name = format!("{} {:?} {}", method.name(), setting, width.label());
                jobs.push(Job::new(
                    name,
                    InversionJob {
                        plan: plan.clone(),
                        method,
                        setting,
                        samples: samples.clone(),
                        batch_size: 1,
                        width,
                        normalisation: args.normalisation.of(setting),
                    },
                ));
            }
        }
    }
    let outcomes = run_parallel(jobs, args.threads, |job, _| {
        let (method, setting, width) = (job.method, job.setting, job.width);
        Ok((method, setting, width, dispatch(plan.backend, job)?))
    })?
    .into_ok()?;
    write_report(dir, &args, plan, outcomes, truths, room_types)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) use super::report::tests::row;

    use crate::backend::BackendChoice;

    /// `samples` samples at 8 px, 3 iterations per stage.
    pub(super) fn tiny_plan(samples: usize) -> InversionPlan {
        InversionPlan {
            samples,
            image_size: 8,
            iterations: 3,
            tv_weight: 0.1,
            seed: 0,
            backend: BackendChoice::default(),
            entropy_weight: ENTROPY_WEIGHT,
        }
    }
}
