//! How far a job-level prediction can be trusted: every rank's one-rank prediction of the
//! same change and its verdict, the job's bound along its critical path across ranks, and a
//! decline where the figures respond as no machine would.

use rayon::prelude::*;

use super::{Job, JobError, JobOutcome};
use crate::whatif::models::Model;
use crate::whatif::trust::{TransformKind, Verdict, assess};
use crate::whatif::{Context, EditGraph, WhatIfError, what_if_prepared};

/// How far a job-level prediction can be trusted.
#[derive(Clone, Debug)]
pub struct JobAssessed {
    pub outcome: JobOutcome,
    /// Per rank (job order): the one-rank prediction of the same change (its peers at their
    /// recorded lateness), its speedup and verdict: what the rank alone would say.
    pub alone: Vec<(f64, Verdict)>,
    /// The most the change can gain per steady step of the job: what it cut along the
    /// baseline's critical path across ranks ([`JobOutcome::path_cut_ns`]), plus the largest
    /// allowance any rank's own bound gives beyond its cuts (device contention, removed
    /// waits); never more than the step.
    pub bound_ns: i64,
    pub caveats: Vec<String>,
    /// Why the figures are no prediction, if they are not: a rank's window or one-rank
    /// prediction declined, or the job gains more than its bound, or a change that only
    /// removes work made the job slower.
    pub declined: Option<String>,
}

impl Job<'_> {
    /// What limits every prediction on this job, whatever the change: where the window holds
    /// no step before the first steady one, each rank begins it at its recorded start, and no
    /// change moves a rank that started late.
    pub fn caveats(&self) -> Vec<String> {
        let period = &self.baseline.period;
        let baseline_ns = period.step_ns;
        let starts = period.ranks.iter().map(|r| r.span_start_ns);
        let (Some(first), Some(last)) = (starts.clone().min(), starts.max()) else {
            return Vec::new();
        };
        if last - first <= baseline_ns / 100 || period.span_start_ns != first {
            return Vec::new();
        }
        let late = period
            .ranks
            .iter()
            .max_by_key(|r| (r.span_start_ns, std::cmp::Reverse(r.rank)))
            .map_or(0, |r| r.rank);
        vec![format!(
            "the window holds no step before the first steady one on every rank: each rank \
             begins at its recorded start (rank {late} {:.3} ms after the first), which no \
             change moves",
            (last - first) as f64 / 1e6
        )]
    }

    /// [`Job::predict`] of `models` (applied by `apply` on every rank), assessed: every rank's
    /// one-rank prediction of the same change and its verdict, the job's bound, caveats, and
    /// a decline where the figures cannot be trusted.
    pub fn assess(
        &self,
        models: &[Model],
        apply: impl Fn(&Context<'_>, &mut EditGraph) -> Result<(), WhatIfError> + Sync,
    ) -> Result<JobAssessed, JobError> {
        let outcome = self.predict(|_, context, edit| apply(context, edit))?;
        let windows = self.alone()?;
        let alone: Vec<(f64, Verdict, i64)> = (0..self.ranks.len())
            .into_par_iter()
            .map(|r| {
                let context = &self.ranks[r].context;
                let (prepared, window) = &windows[r];
                let mut one = what_if_prepared(context, prepared, |edit| apply(context, edit))
                    .map_err(|source| JobError::Rank {
                        rank: self.ranks[r].rank,
                        source: Box::new(source),
                    })?;
                assess(context, window, models, &mut one);
                Ok((one.speedup, Verdict::of(&one), one.path_cut_ns))
            })
            .collect::<Result<_, JobError>>()?;
        let mut outcome = outcome;
        let baseline_ns = outcome.baseline.period.step_ns;
        let mut caveats = Vec::new();
        // A machine whose every cost is at most k× shorter runs the job at most k× faster;
        // the excess is the transient a one-rank prediction holds back too (its warm-up step
        // kept as recorded while the first steady step's work runs ahead of it).
        let speeds: Option<Vec<f64>> = self
            .ranks
            .iter()
            .map(|r| TransformKind::of_models(&r.context, models).machine_speed)
            .collect();
        let speed = speeds.and_then(|s| s.into_iter().reduce(f64::max));
        if let Some(speed) = speed.filter(|&k| k >= 1.0 && outcome.speedup > k) {
            let replayed = outcome.speedup;
            outcome.predicted.period.step_ns = (baseline_ns as f64 / speed).ceil() as i64;
            outcome.speedup = crate::whatif::speedup(baseline_ns, outcome.predicted.period.step_ns);
            caveats.push(format!(
                "held at {speed:.3}×, the most a machine whose costs are at most {speed:.3}× \
                 shorter gives: the job's replay read {replayed:.3}×, the excess a head start \
                 over the recorded warm-up step, paid once"
            ));
        }
        let allowance = alone
            .iter()
            .map(|(_, v, cut)| v.bound_ns.unwrap_or(0).saturating_sub(*cut).max(0))
            .max()
            .unwrap_or(0);
        let bound_ns = outcome
            .path_cut_ns
            .saturating_add(allowance)
            .clamp(0, baseline_ns.max(0));
        let gain_ns = baseline_ns - outcome.predicted.period.step_ns;
        let ms = |ns: i64| ns as f64 / 1e6;
        let mut declined = windows
            .iter()
            .zip(&self.ranks)
            .find_map(|((_, w), r)| w.declined.as_ref().map(|d| format!("rank {}: {d}", r.rank)))
            .or_else(|| {
                alone.iter().zip(&self.ranks).find_map(|((_, v, _), r)| {
                    v.declined.as_ref().map(|d| format!("rank {}: {d}", r.rank))
                })
            });
        // The tolerance of the one-rank bound check: half a percent of the step.
        let tolerance_ns = baseline_ns / 200;
        if declined.is_none() && gain_ns > bound_ns + tolerance_ns {
            declined = Some(format!(
                "the job gains {:.3} ms per step, more than the change cuts along the job's \
                 critical path across ranks and any rank's own bound allows ({:.3} ms)",
                ms(gain_ns),
                ms(bound_ns)
            ));
        }
        if declined.is_none()
            && models.iter().all(Model::only_removes_work)
            && -gain_ns > tolerance_ns
        {
            declined = Some(format!(
                "the job is {:.3} ms per step slower after a change that only removes or \
                 shortens work on every rank",
                ms(-gain_ns)
            ));
        }
        caveats.extend(self.caveats());
        if outcome.predicted.collectives_dropped > 0 {
            caveats.push(format!(
                "{} matched collectives lost an instance to the change on some rank: their \
                 other instances run without their peers",
                outcome.predicted.collectives_dropped
            ));
        }
        // The one-rank caveats of the rank that bounds the job most.
        if let Some(&(rank, _)) = outcome.predicted.bound_by().first()
            && let Some(i) = self.ranks.iter().position(|r| r.rank == rank)
        {
            // Whether the peers keep their lateness is no question here: they are replayed.
            let own = alone[i].1.caveats.iter();
            let own = own.filter(|c| !c.starts_with("depends on --peers"));
            caveats.extend(own.map(|c| format!("rank {rank}: {c}")));
        }
        Ok(JobAssessed {
            outcome,
            alone: alone.into_iter().map(|(s, v, _)| (s, v)).collect(),
            bound_ns,
            caveats,
            declined,
        })
    }
}
