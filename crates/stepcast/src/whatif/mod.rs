//! What-if analysis (Daydream §4.4–§5): transform the window's graph with primitives
//! ([`edit`]), replay it, and compare the predicted step time with the baseline.
//!
//! The step time compared is the **steady-state period of the whole-window replay**: the mean
//! time between the ends of consecutive steady steps (the end of a step is when its last task
//! ends), `(end of last steady step - end of the step before the first steady one) / count`.
//! It measures throughput whatever the regime (host-bound, device-bound, synchronized or not),
//! where a step's span from its host start would grow as a faster host runs ahead of the
//! device. Baseline and prediction use the same measure on the same replay engine, so the
//! replay's own error largely cancels in the speedup. With fewer than three steps there is no
//! step before the first steady one: the period is then measured from the first steady step's
//! replayed start. Transforms leave the warm-up step (and tasks outside every step) as
//! recorded: see [`Context::edit`].

pub mod edit;
pub mod models;
pub mod scenario;

use stepcast_trace::Trace;

use crate::Window;
use crate::analyze::mapping::Mapping;
use crate::graph::{Graph, NO_STEP, TaskId};
use crate::replay::replayed_span;
use crate::simulate::{RecordedOrder, SimError, SimOptions, simulate};

pub use edit::{
    EditError, EditGraph, FusedCost, HostGaps, Insert, InsertLaunch, Select, SelectContext,
    Selection, median_duration,
};
pub use models::Model;
pub use scenario::{Scenario, ScenarioError};

/// Why a what-if failed.
#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("the window has no step with tasks: nothing to predict")]
    NoSteps,
}

/// What a what-if reads: the trace (names, devices), its window and the mapping of its tasks.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub trace: &'a Trace,
    pub window: &'a Window,
    pub mapping: &'a Mapping,
}

impl<'a> Context<'a> {
    pub fn select_context(&self) -> SelectContext<'a> {
        SelectContext {
            trace: self.trace,
            mapping: Some(self.mapping),
        }
    }

    /// An editable copy of the window's graph with its calibrated constants. The tasks of
    /// the warm-up step and those outside every step are frozen (never selected): the
    /// warm-up step stays as recorded, the reference the steady steps are measured from.
    pub fn edit(&self) -> EditGraph {
        let graph = &self.window.graph;
        let mut edit = EditGraph::new(
            graph,
            self.window.report.launch_latency_ns,
            self.window.report.dispatch_gap_ns,
        );
        let first_steady = if self.window.steps.len() >= 3 { 1 } else { 0 };
        let warm_up = edit.select_where(|t| {
            let step = graph.step[t.index()];
            step == NO_STEP || step < first_steady
        });
        edit.freeze(&warm_up);
        edit
    }
}

/// Step times of one replay of a window graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// The steady-state period (see the module documentation).
    pub step_ns: i64,
    /// Per step of the window: when its last task ends in the replay (`None` if it has none).
    pub step_end_ns: Vec<Option<i64>>,
    /// When the last task of the window ends.
    pub window_end_ns: i64,
}

/// Replays `graph` (the window's graph or a transform of it, with the same steps) and
/// measures its step times.
pub fn predict(window: &Window, graph: &Graph) -> Result<Prediction, WhatIfError> {
    let timeline = simulate(graph, &RecordedOrder, SimOptions::default())?;
    let n_steps = window.steps.len();
    let mut by_step: Vec<Vec<TaskId>> = vec![Vec::new(); n_steps];
    for (t, &step) in graph.step.iter().enumerate() {
        if step != NO_STEP && (step as usize) < n_steps {
            by_step[step as usize].push(TaskId(t as u32));
        }
    }
    let step_end_ns: Vec<Option<i64>> = by_step
        .iter()
        .map(|tasks| tasks.iter().map(|t| timeline.end_ns[t.index()]).max())
        .collect();
    let window_end_ns = timeline.end_ns.iter().copied().max().unwrap_or(0);
    let first = if n_steps >= 3 { 1 } else { 0 };
    let steady: Vec<usize> = (first..n_steps)
        .filter(|&s| step_end_ns[s].is_some())
        .collect();
    let (Some(&first), Some(&last)) = (steady.first(), steady.last()) else {
        return Err(WhatIfError::NoSteps);
    };
    let last_end = step_end_ns[last].unwrap_or(0);
    let previous_end = first.checked_sub(1).and_then(|p| step_end_ns[p]);
    let step_ns = match previous_end {
        Some(previous) => (last_end - previous) / (last - first + 1) as i64,
        None => {
            let (_, _, start) =
                replayed_span(graph, &timeline, &window.steps[first], &by_step[first]);
            (last_end - start) / (last - first + 1) as i64
        }
    };
    Ok(Prediction {
        step_ns,
        step_end_ns,
        window_end_ns,
    })
}

/// A what-if's result.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub baseline: Prediction,
    pub predicted: Prediction,
    /// `baseline.step_ns / predicted.step_ns`.
    pub speedup: f64,
    /// Tasks of the input graph and of the transformed one.
    pub tasks_before: usize,
    pub tasks_after: usize,
    pub graph: Graph,
}

/// Applies `transform` to an editable copy of the window's graph, replays the result and
/// compares it with the baseline replay. The window is not changed.
pub fn what_if(
    context: &Context<'_>,
    transform: impl FnOnce(&mut EditGraph) -> Result<(), WhatIfError>,
) -> Result<Outcome, WhatIfError> {
    let baseline = predict(context.window, &context.window.graph)?;
    what_if_against(context, &baseline, transform)
}

/// [`what_if`] with a baseline already computed (to run many what-ifs on one window).
pub fn what_if_against(
    context: &Context<'_>,
    baseline: &Prediction,
    transform: impl FnOnce(&mut EditGraph) -> Result<(), WhatIfError>,
) -> Result<Outcome, WhatIfError> {
    let mut edit = context.edit();
    transform(&mut edit)?;
    let (graph, _) = edit.finish()?;
    let predicted = predict(context.window, &graph)?;
    Ok(Outcome {
        speedup: speedup(baseline.step_ns, predicted.step_ns),
        baseline: baseline.clone(),
        predicted,
        tasks_before: context.window.graph.task_count(),
        tasks_after: graph.task_count(),
        graph,
    })
}

/// Applies built-in models in order (their effects compose: dPRO) and predicts the result.
pub fn apply_models(context: &Context<'_>, models: &[Model]) -> Result<Outcome, WhatIfError> {
    what_if(context, |edit| {
        for model in models {
            model.apply(context, edit)?;
        }
        Ok(())
    })
}

/// `baseline / predicted`, 1 when both are 0.
pub fn speedup(baseline_ns: i64, predicted_ns: i64) -> f64 {
    if predicted_ns <= 0 {
        return if baseline_ns <= 0 { 1.0 } else { f64::INFINITY };
    }
    baseline_ns as f64 / predicted_ns as f64
}
