//! `whatif DIR MODEL` and `advise DIR`: a change applied to every rank of a job and predicted
//! on the job's global graph (`stepcast::whatif::job`), so ranks wait for their peers in the
//! replay rather than by their recorded lateness.

use anyhow::{Context as _, anyhow};
use stepcast::whatif::Peers;
use stepcast::whatif::job::{Job, JobRank};
use stepcast::whatif::models::LoaderHost;
use stepcast_report::json::{AdviseJobJson, WhatIfJobJson, advise_job_json, whatif_job_json};

use super::{JobRanks, Loaded, Progress, Transform};

/// The world the ranks record and the ranks of it not given.
fn world(ranks: &[Loaded]) -> (Option<i64>, Vec<i64>) {
    let world = ranks
        .iter()
        .find_map(|l| l.trace.distributed.as_ref().and_then(|d| d.world_size));
    let given: Vec<i64> = ranks
        .iter()
        .filter_map(|l| stepcast::ranks::recorded_rank(&l.trace))
        .collect();
    let missing = world.map_or_else(Vec::new, |w| {
        (0..w).filter(|r| !given.contains(r)).collect()
    });
    (world, missing)
}

/// What missing ranks do to every figure of a job-level prediction, if any are missing.
fn missing_caveat(missing: &[i64]) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let list: Vec<String> = missing.iter().map(i64::to_string).collect();
    Some(format!(
        "rank{} {} of the job not given: each collective waits only for the ranks given, so a \
         rank that waited for a missing one is predicted without that wait",
        if missing.len() == 1 { "" } else { "s" },
        list.join(", ")
    ))
}

/// The ranks (from [`super::load_ranks`]: one job, in rank order) as a job to predict on.
fn job<'a>(ranks: &'a [Loaded], peers: Peers) -> anyhow::Result<Job<'a>> {
    let job_ranks = ranks
        .iter()
        .enumerate()
        .map(|(position, loaded)| JobRank {
            rank: stepcast::ranks::recorded_rank(&loaded.trace).unwrap_or(position as i64),
            context: loaded.context(peers),
        })
        .collect();
    Job::new(job_ranks).with_context(|| {
        format!(
            "cannot replay the {} ranks of {} as one job",
            ranks.len(),
            ranks
                .first()
                .map_or_else(String::new, |l| l.path.display().to_string())
        )
    })
}

/// `whatif DIR MODEL`: the change on every rank, the job's step before and after.
pub fn whatif_job(
    job_ranks: &JobRanks,
    transform: &Transform,
    peers: Peers,
    progress: &dyn Progress,
) -> anyhow::Result<WhatIfJobJson> {
    let ranks = job_ranks.ranks.as_slice();
    progress.update("predicting the job", 0, 1);
    let job = job(ranks, peers)?;
    let cannot = || format!("cannot predict the job of {} ranks", ranks.len());
    let mut document = match transform {
        Transform::Ddp(_) => {
            return Err(crate::usage(anyhow!(
                "ddp predicts data-parallel training from one rank's trace: give one trace, \
                 not a job"
            )));
        }
        Transform::Model(model) => {
            let models = std::slice::from_ref(model);
            let assessed = job
                .assess(models, |c, e| model.apply(c, e).map(|_| ()))
                .with_context(cannot)?;
            whatif_job_json(&model.name(), models, job.measured(), &assessed)
        }
        Transform::Scenario { scenario, path } => {
            let models = scenario.models();
            let assessed = job
                .assess(&models, |c, e| scenario.apply(c, e))
                .with_context(cannot)?;
            let name = scenario.name.clone().unwrap_or_else(|| {
                path.file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
            });
            let mut document = whatif_job_json(&name, &models, job.measured(), &assessed);
            document.scenario = Some(path.display().to_string());
            document
        }
    };
    let (world_size, missing) = world(ranks);
    document.trust.caveats.extend(missing_caveat(&missing));
    document.world_size = world_size;
    document.missing_ranks = missing;
    document.earlier_windows = job_ranks.earlier_windows();
    for (rank, loaded) in document.ranks.iter_mut().zip(ranks) {
        rank.file = loaded.file();
    }
    progress.update("predicting the job", 1, 1);
    Ok(document)
}

/// `advise DIR`: every change on every rank, ranked by the job's gain, on the ranks' `host`
/// as the user described it.
pub fn advise_job(
    job_ranks: &JobRanks,
    peers: Peers,
    host: LoaderHost,
    progress: &dyn Progress,
) -> anyhow::Result<AdviseJobJson> {
    let ranks = job_ranks.ranks.as_slice();
    progress.update("advising the job", 0, 1);
    let job = job(ranks, peers)?;
    let advice = job
        .advise_on(host)
        .with_context(|| format!("cannot advise on the job of {} ranks", ranks.len()))?;
    let mut document = advise_job_json(job.measured(), job.baseline(), &advice);
    let (world_size, missing) = world(ranks);
    if let Some(caveat) = missing_caveat(&missing) {
        for candidate in &mut document.candidates {
            candidate.trust.caveats.push(caveat.clone());
        }
    }
    document.world_size = world_size;
    document.missing_ranks = missing;
    document.earlier_windows = job_ranks.earlier_windows();
    document.files = ranks.iter().map(|l| l.path.display().to_string()).collect();
    progress.update("advising the job", 1, 1);
    Ok(document)
}
