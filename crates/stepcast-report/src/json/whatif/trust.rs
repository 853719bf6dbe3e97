//! How far a prediction can be trusted, as the documents carry it: its bound, caveats,
//! anomaly and decline, the estimate without the profiler, and what `--peers` chose.

use serde::Serialize;
use stepcast::whatif::Outcome;
use stepcast::whatif::trust::Verdict;

use crate::json::finite;

/// How far a prediction can be trusted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrustJson {
    /// The most the transform can gain per steady step, computed from the trace (what it cut
    /// from costs and untraced gaps, the peers' wait it dropped, the blocking waits a model
    /// that removes waits can remove); the gain never exceeds it. `None` (`null`): not
    /// assessed.
    pub bound_ns: Option<i64>,
    /// The speedup the bound allows: `baseline_ns / (baseline_ns - bound_ns)`; `None` (`null`)
    /// when unbounded (the bound is the whole step) or not assessed.
    pub bound_speedup: Option<f64>,
    /// What limits the prediction, one sentence each: the window (not a steady state, a
    /// cold-start outlier, waits only the recorded clock explained), the model's assumptions
    /// (an upper bound, what it charges), a dependence on `--peers`. Empty when nothing does.
    pub caveats: Vec<String>,
    /// Why the prediction responds as no machine would, if it does: a slower step from a
    /// transform that only removes work, or a gain above the bound, with the constraint that
    /// made it so. `None` (`null`) when it responds as expected.
    pub anomaly: Option<String>,
    /// Where more than half of the gain is one task's cut (a cold-start call, one huge
    /// kernel): which, and how much. Such a prediction is never a headline. `None` (`null`)
    /// otherwise.
    pub rests_on: Option<String>,
    /// Why the prediction cannot be trusted at all, if it cannot: the baseline is more than
    /// 3 % off the measured steady period, a step of the window (warm-up too) replays more
    /// than 2 % off its measured time, or an unchanged graph does not replay as the
    /// baseline. The figures are then shown only beside it. `None` (`null`) otherwise.
    pub declined: Option<String>,
    /// The baseline and the prediction less the profiler's own cost on the host, where it
    /// moves the baseline by 1 % or more (a caveat says the same in words). `None` (`null`)
    /// otherwise.
    pub without_profiler: Option<WithoutProfilerJson>,
}

/// A prediction as a run without the profiler would see it, first order: the baseline and
/// predicted steps less the profiler's cost per recorded host event times the events, as a
/// share of their host time on the critical path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WithoutProfilerJson {
    /// The baseline step less the profiler's cost.
    pub baseline_ns: i64,
    /// The predicted step less the profiler's cost.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`.
    pub speedup: Option<f64>,
    /// `true` where a cost the estimate cannot see remains in both steps (`record_shapes` on
    /// a CPU-only run holds every op's input tensors): each is then an upper side.
    pub upper_side: bool,
}

impl TrustJson {
    /// The caveats, each once (models combined may share one), in order, joined by `; `:
    /// for one table cell.
    pub fn caveat_text(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        for caveat in &self.caveats {
            if !seen.contains(&caveat.as_str()) {
                seen.push(caveat);
            }
        }
        seen.join("; ")
    }

    /// The trust of `outcome`.
    pub fn new(outcome: &Outcome) -> Self {
        Self::of(&Verdict::of(outcome))
    }

    /// The trust of a prediction kept as its [`Verdict`] (`optimize`'s moves).
    pub fn of(verdict: &Verdict) -> Self {
        let baseline = verdict.baseline_ns;
        Self {
            bound_ns: verdict.bound_ns,
            bound_speedup: verdict
                .bound_ns
                .filter(|&b| b < baseline)
                .and_then(|b| finite(baseline as f64 / (baseline - b) as f64)),
            caveats: verdict.caveats.clone(),
            anomaly: verdict.anomaly.clone(),
            rests_on: verdict.rests_on.clone(),
            declined: verdict.declined.clone(),
            without_profiler: verdict.without_profiler.map(|w| WithoutProfilerJson {
                baseline_ns: w.baseline_ns,
                predicted_ns: w.predicted_ns,
                speedup: finite(w.speedup),
                upper_side: w.upper_side,
            }),
        }
    }
}

/// The declared input of a one-rank trace's collectives: their peers' recorded lateness
/// relative to this rank (`--peers skew`, the default) or none (`--peers balanced`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeersJson {
    /// `skew` or `balanced`: the choice the figures above are under.
    pub used: &'static str,
    /// Declared wait for peers per steady step in the prediction.
    pub wait_ns: i64,
    /// The other choice: `balanced` or `skew`.
    pub other: &'static str,
    /// The speedup under the other choice; `None` (`null`) when no collective waits for
    /// peers, so the choice changes nothing.
    pub other_speedup: Option<f64>,
}

impl PeersJson {
    /// The peers of `outcome`'s prediction.
    pub fn new(outcome: &Outcome) -> Self {
        Self {
            used: outcome.peers.as_str(),
            wait_ns: outcome.peer_wait_ns,
            other: outcome.peers.other().as_str(),
            other_speedup: outcome.other_peers_speedup.and_then(finite),
        }
    }
}
