//! The job's step in one replay of its global graph: the steady-state period of one rank
//! ([`crate::whatif`]) taken over every rank (see [`super`]).

use crate::ranks::GlobalGraph;
use crate::replay::{replayed_span, tasks_by_step};
use crate::simulate::Timeline;

/// One rank's steps in one replay of the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPeriod {
    pub rank: i64,
    /// Its own steady-state period: from its own span start to its own end of the last steady
    /// step, per step.
    pub step_ns: i64,
    pub span_start_ns: i64,
    /// When its last steady step ends (global time).
    pub end_ns: i64,
}

/// The job's steps in one replay (or in the recording) of the global graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobPeriod {
    /// The job's steady-state period (see the module documentation).
    pub step_ns: i64,
    /// The step numbers it spans (steady on every rank), in order.
    pub steady: Vec<u64>,
    pub span_start_ns: i64,
    /// When the job's last steady step ends: its last rank's end.
    pub end_ns: i64,
    /// Per rank, in the job's rank order.
    pub ranks: Vec<RankPeriod>,
}

pub(super) fn empty_period() -> JobPeriod {
    JobPeriod {
        step_ns: 0,
        steady: Vec::new(),
        span_start_ns: 0,
        end_ns: 0,
        ranks: Vec::new(),
    }
}

/// One step of one rank in a timeline of the global graph.
struct StepSpan {
    number: u64,
    /// Replayed start and end; `None` without tasks.
    span: Option<(i64, i64)>,
    /// Neither the warm-up step nor the profiler's teardown.
    may_be_steady: bool,
}

impl StepSpan {
    fn is_steady(&self) -> bool {
        self.may_be_steady && self.span.is_some()
    }
}

/// One rank's steps, per step of its window.
struct RankSteps {
    steps: Vec<StepSpan>,
}

impl RankSteps {
    fn position(&self, number: u64) -> Option<usize> {
        self.steps.iter().position(|s| s.number == number)
    }
}

/// The job's steady-state period in `timeline` (see the module documentation); `None` when the
/// ranks share no steady step with tasks.
pub(super) fn job_period(
    global: &GlobalGraph,
    timeline: &Timeline,
    baseline: Option<&JobPeriod>,
) -> Option<JobPeriod> {
    let graph = &global.graph;
    let by_step = tasks_by_step(graph, global.steps.len());
    let ranks: Vec<RankSteps> = global
        .ranks
        .iter()
        .map(|part| {
            let first = part.first_step as usize;
            let count = part.step_count as usize;
            // As one rank's period: the first step is the warm-up when there are three or more.
            let first_steady = if count >= 3 { 1 } else { 0 };
            let steps = (0..count)
                .map(|i| {
                    let step = &global.steps[first + i];
                    let tasks = &by_step[first + i];
                    let span = (!tasks.is_empty()).then(|| {
                        let (span, _, start) = replayed_span(graph, timeline, step, tasks);
                        (start, start.saturating_add(span))
                    });
                    StepSpan {
                        number: step.number,
                        span,
                        may_be_steady: i >= first_steady && !step.teardown,
                    }
                })
                .collect();
            RankSteps { steps }
        })
        .collect();
    let first_rank = ranks.first()?;
    let steady: Vec<u64> = first_rank
        .steps
        .iter()
        .filter(|s| s.is_steady())
        .map(|s| s.number)
        .filter(|&number| {
            ranks
                .iter()
                .all(|r| r.position(number).is_some_and(|i| r.steps[i].is_steady()))
        })
        .collect();
    let (&first, &last) = (steady.first()?, steady.last()?);
    let count = steady.len() as i64;
    let mut periods = Vec::with_capacity(ranks.len());
    for (r, steps) in ranks.iter().enumerate() {
        let at_first = steps.position(first)?;
        let (first_start, _) = steps.steps[at_first].span?;
        let previous_end = at_first
            .checked_sub(1)
            .and_then(|p| steps.steps[p].span)
            .map(|(_, end)| end);
        let mut start = previous_end.unwrap_or(first_start);
        if let Some(b) = baseline.and_then(|b| b.ranks.get(r)) {
            start = start.min(b.span_start_ns);
        }
        let (_, end) = steps.steps[steps.position(last)?].span?;
        periods.push((start, previous_end, first_start, end));
    }
    // The job's step before the first steady one ends with its last rank's; without one on
    // every rank, the job starts with its earliest rank.
    let all_previous: Option<Vec<i64>> = periods.iter().map(|p| p.1).collect();
    let mut span_start_ns = match all_previous {
        Some(ends) => ends.into_iter().max()?,
        None => periods.iter().map(|p| p.2).min()?,
    };
    if let Some(b) = baseline {
        span_start_ns = span_start_ns.min(b.span_start_ns);
    }
    let end_ns = periods.iter().map(|p| p.3).max()?;
    Some(JobPeriod {
        step_ns: (end_ns - span_start_ns) / count,
        steady,
        span_start_ns,
        end_ns,
        ranks: global
            .ranks
            .iter()
            .zip(&periods)
            .map(|(part, &(start, _, _, end))| RankPeriod {
                rank: part.rank,
                step_ns: (end - start) / count,
                span_start_ns: start,
                end_ns: end,
            })
            .collect(),
    })
}
