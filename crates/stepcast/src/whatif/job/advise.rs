//! `advise` on a job: every built-in model, and the useful combinations, applied to every
//! rank and predicted on the global graph, ranked by the job's gain.
//!
//! The candidates are chosen as one rank's `advise` chooses them ([`crate::whatif::advise`]),
//! from the job's predictions rather than one rank's: every advised model alone; every pair of
//! those that help the job; all the software models that help together when three or more do,
//! kept only where a combination adds to its best member. Memory-for-time trades are left to
//! one rank's `advise` (their memory is per rank, not the job's).

use rayon::prelude::*;

use super::{Job, JobAssessed, JobError};
use crate::whatif::advise::{adds_to_best_member, combinations, name, one_per_model, variants};
use crate::whatif::models::{LoaderHost, Model};

/// One change the job's `advise` tried.
#[derive(Clone, Debug)]
pub struct JobCandidate {
    /// The models applied to every rank, in order.
    pub models: Vec<Model>,
    pub assessed: JobAssessed,
}

impl JobCandidate {
    /// The models' names joined by ` + `.
    pub fn name(&self) -> String {
        name(&self.models)
    }
}

/// What the job's `advise` found.
#[derive(Clone, Debug)]
pub struct JobAdvice {
    /// Best first: by the job's speedup, then by name. None declined.
    pub candidates: Vec<JobCandidate>,
    /// Candidates that could not be predicted or were declined, with why, in the order tried.
    pub failed: Vec<(String, String)>,
    /// Why no candidate is offered, if none is: a rank's window declines every prediction.
    pub declined: Option<String>,
}

impl Job<'_> {
    /// Tries every advised model and the useful combinations on the whole job (see the module
    /// documentation). The result does not depend on the number of threads. The ranks' host
    /// is unknown: see [`Job::advise_on`].
    pub fn advise(&self) -> Result<JobAdvice, JobError> {
        self.advise_on(LoaderHost::default())
    }

    /// [`Job::advise`] on ranks whose host the user described (`--cores`, `--threads`: each
    /// rank's process and its workers share that many cores), as [`Model::advised_on`].
    pub fn advise_on(&self, host: LoaderHost) -> Result<JobAdvice, JobError> {
        let windows = self.alone()?;
        if let Some((reason, rank)) = windows
            .iter()
            .zip(&self.ranks)
            .find_map(|((_, w), r)| w.declined.as_ref().map(|d| (d, r.rank)))
        {
            return Ok(JobAdvice {
                candidates: Vec::new(),
                failed: Vec::new(),
                declined: Some(format!("rank {rank}: {reason}")),
            });
        }
        // Each advised model, with its variants where it has several (the workers' count).
        let groups: Vec<Vec<Model>> = Model::advised_on(host).into_iter().map(variants).collect();
        let singles: Vec<Vec<Model>> = groups.iter().flatten().map(|m| vec![m.clone()]).collect();
        let tried = one_per_model(
            self.try_all(singles),
            &groups,
            |(models, _)| models.as_slice(),
            |(_, result)| {
                result
                    .as_ref()
                    .ok()
                    .filter(|a| a.declined.is_none())
                    .map(|a| a.outcome.speedup)
            },
            |(_, result), why| {
                if let Ok(assessed) = result {
                    assessed.caveats.push(why);
                }
            },
        );
        let mut failed = Vec::new();
        let mut candidates = self.keep_predicted(tried, &mut failed);
        let singles: Vec<(Model, f64)> = candidates
            .iter()
            .map(|c| (c.models[0].clone(), c.assessed.outcome.speedup))
            .collect();
        for combination in self.keep_predicted(self.try_all(combinations(&singles)), &mut failed) {
            let speedup = combination.assessed.outcome.speedup;
            if adds_to_best_member(&singles, &combination.models, speedup) {
                candidates.push(combination);
            }
        }
        candidates.sort_by(|a, b| {
            b.assessed
                .outcome
                .speedup
                .total_cmp(&a.assessed.outcome.speedup)
                .then_with(|| a.name().cmp(&b.name()))
        });
        Ok(JobAdvice {
            candidates,
            failed,
            declined: None,
        })
    }

    /// Every set of models assessed on the job, in parallel, in input order.
    fn try_all(&self, sets: Vec<Vec<Model>>) -> Vec<(Vec<Model>, Result<JobAssessed, JobError>)> {
        sets.into_par_iter()
            .map(|models| {
                let assessed = self.assess(&models, |context, edit| {
                    for model in &models {
                        model.apply(context, edit)?;
                    }
                    Ok(())
                });
                (models, assessed)
            })
            .collect()
    }

    /// The candidates predicted and not declined; the others go to `failed` as (name, why).
    fn keep_predicted(
        &self,
        tried: Vec<(Vec<Model>, Result<JobAssessed, JobError>)>,
        failed: &mut Vec<(String, String)>,
    ) -> Vec<JobCandidate> {
        let mut kept = Vec::with_capacity(tried.len());
        for (models, result) in tried {
            match result {
                Ok(assessed) => match &assessed.declined {
                    Some(reason) => failed.push((name(&models), format!("declined: {reason}"))),
                    None => kept.push(JobCandidate { models, assessed }),
                },
                Err(e) => failed.push((name(&models), e.to_string())),
            }
        }
        kept
    }
}
