//! `stepcast.whatif-job/1` and `stepcast.advise-job/1`: a change applied to every rank of a
//! job and predicted on the global graph (`stepcast::whatif::job`).

use serde::Serialize;
use stepcast::whatif::Model;
use stepcast::whatif::job::{JobAdvice, JobAssessed, JobPeriod, JobReplay};
use stepcast::whatif::trust::Verdict;

use super::{TrustJson, finite};

/// A rank's share of the job's critical path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RankShareJson {
    /// The rank number.
    pub rank: i64,
    /// Time of the critical path across ranks spent on this rank (its work, its waits, and its
    /// late start), per steady step.
    pub critical_path_ns: i64,
}

fn shares(replay: &JobReplay) -> Vec<RankShareJson> {
    replay
        .bound_by()
        .into_iter()
        .map(|(rank, critical_path_ns)| RankShareJson {
            rank,
            critical_path_ns,
        })
        .collect()
}

/// What the rank alone (its trace's one-rank what-if, peers at their recorded lateness) says
/// of the same change.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AloneJson {
    /// Its speedup; `None` (`null`) when the prediction is 0.
    pub speedup: Option<f64>,
    /// Its bound (`whatif`'s `trust.bound_ns`).
    pub bound_ns: Option<i64>,
    /// Why it is declined, if it is.
    pub declined: Option<String>,
}

impl AloneJson {
    fn new(speedup: f64, verdict: &Verdict) -> AloneJson {
        AloneJson {
            speedup: finite(speedup),
            bound_ns: verdict.bound_ns,
            declined: verdict.declined.clone(),
        }
    }
}

/// One rank of the job in the prediction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobRankJson {
    /// The rank number.
    pub rank: i64,
    /// The trace as the user named it (filled in by the caller).
    pub file: Option<String>,
    /// Its own steady period in the global replay, before and after: from its own start of
    /// the span to its own end of the last steady step, per step.
    pub baseline_ns: i64,
    /// The same in the prediction.
    pub predicted_ns: i64,
    /// How long before the job's end its last steady step ends in the prediction (0: the
    /// rank ends the job's step).
    pub ends_before_job_ns: i64,
    /// What its trace alone predicts of the same change.
    pub alone: AloneJson,
}

/// Collectives of the global graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct JobCollectivesJson {
    /// Matched across their group's members in the recording.
    pub matched: usize,
    /// Of those, the ones the change removed on some member (replayed without their peers).
    pub dropped: usize,
}

/// `stepcast.whatif-job/1`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIfJobJson {
    /// Always `stepcast.whatif-job/1`.
    pub schema: &'static str,
    /// The model's name (with its parameters) or the scenario's name.
    pub name: String,
    /// The built-in models applied, in order.
    pub models: Vec<String>,
    /// The scenario file as the user named it; `None` (`null`) for a model.
    pub scenario: Option<String>,
    /// Ranks given, the world size they record, and the ranks of that world not given (the
    /// figures hold for the ranks given only).
    pub ranks_given: usize,
    /// The world size the traces record, if they do.
    pub world_size: Option<i64>,
    /// Ranks of the recorded world not given.
    pub missing_ranks: Vec<i64>,
    /// Traces of earlier profiling windows of the ranks' processes, left out: each rank's
    /// last window stands, as `replay DIR` takes it. Absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_windows: Vec<String>,
    /// Why the figures are no prediction, if they are not (see `trust.declined`).
    pub declined: Option<String>,
    /// The job's steady period as recorded (aligned clocks), measured as a replay's is.
    pub measured_ns: i64,
    /// The job's steady period: the untransformed global graph replayed.
    pub baseline_ns: i64,
    /// The job's steady period with every rank transformed.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`; `None` (`null`) when `predicted_ns` is 0.
    pub speedup: Option<f64>,
    /// `baseline_ns - predicted_ns` (negative: slower).
    pub gain_ns: i64,
    /// Numbers of the steady steps (steady on every rank) the figures are measured over.
    pub steady_steps: Vec<u64>,
    /// The job's bound (the cuts along its critical path across ranks, plus the largest
    /// allowance a rank's own bound gives) and caveats.
    pub trust: TrustJson,
    /// The ranks holding the job's critical path before the change, most first.
    pub bound_by_before: Vec<RankShareJson>,
    /// The same after it: the ranks that bound the predicted step.
    pub bound_by: Vec<RankShareJson>,
    /// The collectives matched and those the change dropped.
    pub collectives: JobCollectivesJson,
    /// Every rank given, in rank order.
    pub ranks: Vec<JobRankJson>,
}

fn trust(assessed: &JobAssessed) -> TrustJson {
    let baseline = assessed.outcome.baseline.period.step_ns;
    TrustJson {
        bound_ns: Some(assessed.bound_ns),
        bound_speedup: (assessed.bound_ns < baseline)
            .then(|| finite(baseline as f64 / (baseline - assessed.bound_ns) as f64))
            .flatten(),
        caveats: assessed.caveats.clone(),
        anomaly: None,
        rests_on: None,
        declined: assessed.declined.clone(),
        without_profiler: None,
    }
}

fn ranks(assessed: &JobAssessed) -> Vec<JobRankJson> {
    let before: &JobPeriod = &assessed.outcome.baseline.period;
    let after: &JobPeriod = &assessed.outcome.predicted.period;
    before
        .ranks
        .iter()
        .zip(&after.ranks)
        .zip(&assessed.alone)
        .map(|((b, a), (speedup, verdict))| JobRankJson {
            rank: b.rank,
            file: None,
            baseline_ns: b.step_ns,
            predicted_ns: a.step_ns,
            ends_before_job_ns: after.end_ns - a.end_ns,
            alone: AloneJson::new(*speedup, verdict),
        })
        .collect()
}

/// The document of one job-level prediction of `models` (named `name`), against the job's
/// recorded steps `measured`.
pub fn whatif_job_json(
    name: &str,
    models: &[Model],
    measured: &JobPeriod,
    assessed: &JobAssessed,
) -> WhatIfJobJson {
    let outcome = &assessed.outcome;
    let (baseline, predicted) = (&outcome.baseline, &outcome.predicted);
    WhatIfJobJson {
        schema: "stepcast.whatif-job/1",
        name: name.to_string(),
        models: models.iter().map(Model::name).collect(),
        scenario: None,
        ranks_given: baseline.period.ranks.len(),
        world_size: None,
        missing_ranks: Vec::new(),
        earlier_windows: Vec::new(),
        declined: assessed.declined.clone(),
        measured_ns: measured.step_ns,
        baseline_ns: baseline.period.step_ns,
        predicted_ns: predicted.period.step_ns,
        speedup: finite(outcome.speedup),
        gain_ns: baseline.period.step_ns - predicted.period.step_ns,
        steady_steps: baseline.period.steady.clone(),
        trust: trust(assessed),
        bound_by_before: shares(baseline),
        bound_by: shares(predicted),
        collectives: JobCollectivesJson {
            matched: baseline.collectives_matched,
            dropped: predicted.collectives_dropped,
        },
        ranks: ranks(assessed),
    }
}

/// One candidate of the job's `advise`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobCandidateJson {
    /// The models' names joined by ` + `.
    pub name: String,
    /// The models applied to every rank, in order.
    pub models: Vec<String>,
    /// Whether a model of it buys hardware (`faster_gpu`, `faster_cpu`...) rather than
    /// changing the program: the answer's change is the best without one.
    pub hardware: bool,
    /// The job's predicted steady period.
    pub predicted_ns: i64,
    /// The job's speedup; `None` (`null`) when the prediction is 0.
    pub speedup: Option<f64>,
    /// Baseline less prediction (negative: slower).
    pub gain_ns: i64,
    /// The job's bound and caveats.
    pub trust: TrustJson,
    /// The ranks holding the job's critical path after the change, most first.
    pub bound_by: Vec<RankShareJson>,
    /// Per rank (job order): the speedup its trace alone predicts (peers at their recorded
    /// lateness), what the job's replay replaces.
    pub alone_speedups: Vec<Option<f64>>,
}

/// `stepcast.advise-job/1`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdviseJobJson {
    /// Always `stepcast.advise-job/1`.
    pub schema: &'static str,
    /// Ranks given.
    pub ranks_given: usize,
    /// The world size the traces record, if they do.
    pub world_size: Option<i64>,
    /// Ranks of the recorded world not given.
    pub missing_ranks: Vec<i64>,
    /// Traces of earlier profiling windows of the ranks' processes, left out: each rank's
    /// last window stands, as `replay DIR` takes it. Absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_windows: Vec<String>,
    /// The trace of each rank as the user named it, in rank order (filled in by the caller).
    pub files: Vec<String>,
    /// The rank numbers, in order.
    pub ranks: Vec<i64>,
    /// Why no candidate is offered, if none is.
    pub declined: Option<String>,
    /// The job's steady period as recorded (aligned clocks).
    pub measured_ns: i64,
    /// The job's steady period in the untransformed replay.
    pub baseline_ns: i64,
    /// Numbers of the steady steps (steady on every rank).
    pub steady_steps: Vec<u64>,
    /// The ranks holding the baseline's critical path, most first.
    pub bound_by: Vec<RankShareJson>,
    /// Best first.
    pub candidates: Vec<JobCandidateJson>,
    /// Candidates not predicted or declined: `[name, why]`.
    pub failed: Vec<(String, String)>,
}

/// The document of the job's `advise`.
pub fn advise_job_json(
    measured: &JobPeriod,
    baseline: &JobReplay,
    advice: &JobAdvice,
) -> AdviseJobJson {
    AdviseJobJson {
        schema: "stepcast.advise-job/1",
        ranks_given: baseline.period.ranks.len(),
        world_size: None,
        missing_ranks: Vec::new(),
        earlier_windows: Vec::new(),
        files: Vec::new(),
        ranks: baseline.period.ranks.iter().map(|r| r.rank).collect(),
        declined: advice.declined.clone(),
        measured_ns: measured.step_ns,
        baseline_ns: baseline.period.step_ns,
        steady_steps: baseline.period.steady.clone(),
        bound_by: shares(baseline),
        candidates: advice
            .candidates
            .iter()
            .map(|c| {
                let outcome = &c.assessed.outcome;
                JobCandidateJson {
                    name: c.name(),
                    models: c.models.iter().map(Model::name).collect(),
                    hardware: c.models.iter().any(Model::is_hardware),
                    predicted_ns: outcome.predicted.period.step_ns,
                    speedup: finite(outcome.speedup),
                    gain_ns: outcome.baseline.period.step_ns - outcome.predicted.period.step_ns,
                    trust: trust(&c.assessed),
                    bound_by: shares(&outcome.predicted),
                    alone_speedups: c.assessed.alone.iter().map(|(s, _)| finite(*s)).collect(),
                }
            })
            .collect(),
        failed: advice.failed.clone(),
    }
}
