//! The typical step: one step graph aggregated over the steady-state steps, replayed in steady
//! state, predicting the median step.
//!
//! Steady-state steps with the same structure (the same tasks on the same lanes) are aligned
//! task by task; each task of the typical step takes the median duration and gap of its
//! counterparts. Because the device runs behind the host, a step replayed alone from idle
//! streams would be too short; so the typical step is replayed as a run of identical copies
//! (each copy's host thread continuing from the previous, each stream carrying its backlog,
//! edges into the previous step kept) and the last copy is measured.

use super::{measured_span, steady_steps, tasks_by_step};
use crate::graph::{Graph, GraphLane, NO_TIME, TaskId, TaskKind};
use crate::simulate::{RecordedOrder, SimError, SimOptions, simulate};
use crate::window::Window;

/// Copies of the typical step replayed back to back; the last is measured.
const COPIES: usize = 4;

/// Where a task of the window sits for the typical step: at a position of the template step,
/// of the step before it, or neither.
#[derive(Clone, Copy)]
enum Position {
    Template(u32),
    Previous(u32),
    Outside,
}

/// The typical step and what it predicts.
#[derive(Clone, Debug, PartialEq)]
pub struct TypicalStep {
    /// Step numbers aggregated (steady-state steps sharing the most common structure).
    pub steps_used: Vec<u64>,
    pub tasks: u64,
    pub predicted_ns: i64,
    /// Median measured duration over all steady-state steps.
    pub measured_median_ns: i64,
    /// Why `predicted_ns` is not offered as a prediction, if it is not: it contradicts the
    /// replay of the very steps it was built from (see [`super::self_replay`]).
    pub declined: Option<String>,
}

impl TypicalStep {
    pub fn error(&self) -> f64 {
        super::relative_error(self.predicted_ns, self.measured_median_ns)
    }
}

/// A step's structure: per task, its lane and name, in graph order.
type Signature = Vec<(u32, u32)>;

/// Mean without the smallest and the largest value (when there are at least three).
fn trimmed_mean(values: &mut [i64]) -> i64 {
    values.sort_unstable();
    let kept = if values.len() >= 3 {
        &values[1..values.len() - 1]
    } else {
        &values[..]
    };
    if kept.is_empty() {
        return 0;
    }
    let sum: i128 = kept.iter().map(|&v| v as i128).sum();
    (sum / kept.len() as i128) as i64
}

/// Builds and replays the typical step of `window`. `None` when the window has no steps with
/// tasks.
pub fn typical_step(window: &Window) -> Result<Option<TypicalStep>, SimError> {
    let by_step = tasks_by_step(&window.graph, window.steps.len());
    typical_step_of(window, &steady_steps(window), &by_step)
}

/// [`typical_step`], given the window's steady steps and each step's tasks (the self-replay
/// has them already).
pub(super) fn typical_step_of(
    window: &Window,
    steady: &[usize],
    by_step: &[Vec<TaskId>],
) -> Result<Option<TypicalStep>, SimError> {
    let g = &window.graph;
    let mut measured: Vec<i64> = steady
        .iter()
        .map(|&s| measured_span(g, &window.steps[s], &by_step[s]))
        .collect();
    if steady.is_empty() || by_step.iter().all(Vec::is_empty) {
        return Ok(None);
    }
    let measured_median_ns = crate::analyze::stats::median_ns(&mut measured);

    // Group steady steps by structure: per task, its lane and name, in graph order.
    let signature = |s: usize| -> Signature {
        by_step[s]
            .iter()
            .map(|t| (g.lane[t.index()], g.name[t.index()].0))
            .collect()
    };
    let mut groups: Vec<(Signature, Vec<usize>)> = Vec::new();
    for &s in steady {
        if by_step[s].is_empty() {
            continue;
        }
        let sig = signature(s);
        match groups.iter_mut().find(|(g_sig, _)| *g_sig == sig) {
            Some((_, members)) => members.push(s),
            None => groups.push((sig, vec![s])),
        }
    }
    // The largest group of alike steps; among equals, the one holding the step closest to
    // the median measured step.
    let distance_to_median = |members: &[usize]| {
        members
            .iter()
            .map(|&s| (measured_span(g, &window.steps[s], &by_step[s]) - measured_median_ns).abs())
            .min()
            .unwrap_or(i64::MAX)
    };
    let Some((template_signature, members)) = groups.iter().max_by_key(|(_, m)| {
        (
            m.len(),
            std::cmp::Reverse(distance_to_median(m)),
            std::cmp::Reverse(m[0]),
        )
    }) else {
        return Ok(None);
    };
    let template = members[0];
    let template_tasks = &by_step[template];
    // Each task's position in the template step, or in the step before it when that step has
    // the same structure: it locates edges that cross the step boundary (a step's first
    // kernels waiting on the previous step's work). By task id: a lookup per edge.
    let mut position = vec![Position::Outside; g.task_count()];
    if let Some(prev) = template.checked_sub(1)
        && signature(prev) == *template_signature
    {
        for (p, &t) in by_step[prev].iter().enumerate() {
            position[t.index()] = Position::Previous(p as u32);
        }
    }
    for (p, &t) in template_tasks.iter().enumerate() {
        position[t.index()] = Position::Template(p as u32);
    }

    // Median cost and gap per position.
    let m = template_tasks.len();
    let mut dur = vec![0i64; m];
    let mut gap = vec![0i64; m];
    let mut peer_wait = vec![0i64; m];
    let mut scratch = Vec::with_capacity(members.len());
    for p in 0..m {
        // A trimmed mean: robust to one outlier step (a garbage collection, a checkpoint), yet
        // unlike the median it keeps the skew of per-task noise, whose per-task medians would
        // add up short of a typical step.
        let column = |f: &dyn Fn(usize, TaskId) -> i64, scratch: &mut Vec<i64>| {
            scratch.clear();
            scratch.extend(members.iter().map(|&s| f(s, by_step[s][p])));
            trimmed_mean(scratch)
        };
        dur[p] = column(&|_, t| g.dur_ns[t.index()], &mut scratch);
        gap[p] = column(&|_, t| g.gap_ns[t.index()], &mut scratch);
        if g.kind[template_tasks[p].index()] == TaskKind::Collective {
            peer_wait[p] = column(&|_, t| g.peer_wait_ns[t.index()], &mut scratch);
        }
    }

    // The step's anchor: its first host task on the marker's thread (the step begins there).
    let step = &window.steps[template];
    let anchor = template_tasks
        .iter()
        .filter(|t| !g.kind[t.index()].on_device())
        .filter(|t| {
            step.trace_lane
                .is_none_or(|l| g.lanes[g.lane[t.index()] as usize].trace_lane == l)
        })
        .min_by_key(|t| (g.rec_start_ns[t.index()], t.0))
        .and_then(|t| match position[t.index()] {
            Position::Template(p) => Some(p as usize),
            _ => None,
        });

    // Lay out the copies lane by lane: lane order across copies is then implicit.
    let mut lanes_in_template: Vec<u32> =
        template_tasks.iter().map(|t| g.lane[t.index()]).collect();
    lanes_in_template.dedup();
    let mut out = Graph::with_task_capacity(m * COPIES);
    let mut new_id = vec![vec![TaskId::NONE; m]; COPIES];
    // Each task of `out`: its copy and its position in the template.
    let mut origin: Vec<(u32, u32)> = Vec::with_capacity(m * COPIES);
    for &lane in &lanes_in_template {
        let first_task = out.task_count() as u32;
        let positions: Vec<usize> = (0..m)
            .filter(|&p| g.lane[template_tasks[p].index()] == lane)
            .collect();
        for (copy, ids) in new_id.iter_mut().enumerate() {
            for (k, &p) in positions.iter().enumerate() {
                let t = template_tasks[p].index();
                ids[p] = TaskId(out.task_count() as u32);
                origin.push((copy as u32, p as u32));
                out.kind.push(g.kind[t]);
                out.lane.push(out.lanes.len() as u32);
                out.name.push(g.name[t]);
                out.event.push(g.event[t]);
                out.dur_ns.push(dur[p]);
                out.dur_without_inferred_ns.push(dur[p]);
                out.gap_ns.push(gap[p]);
                out.rec_start_ns.push(g.rec_start_ns[t]);
                out.rec_end_ns.push(g.rec_end_ns[t]);
                out.step.push(copy as u32);
                let boundary = copy == 0 && k == 0;
                out.not_before_ns
                    .push(if boundary { g.rec_start_ns[t] } else { NO_TIME });
                out.peer_wait_ns.push(peer_wait[p]);
                out.sm_demand.push(g.sm_demand[t]);
            }
        }
        let task_count = out.task_count() as u32 - first_task;
        let source = &g.lanes[lane as usize];
        out.lanes.push(GraphLane {
            trace_lane: source.trace_lane,
            kind: source.kind,
            first_task,
            task_count,
            device: source.device,
        });
    }

    // Edges, copied per copy; edges from the previous step connect consecutive copies. Built
    // in the graph's order (by target, then kind and source) without a sort: the copies are
    // laid out by lane, then copy, then position, as the window's tasks are by lane, then
    // time, so a target's edges keep their order when their sources are renumbered (a sort
    // of every copy's edges was a fifth of the self-replay).
    out.pred_offsets = Vec::with_capacity(out.task_count() + 1);
    out.pred_offsets.push(0);
    for &(copy, p) in &origin {
        for e in g.preds(template_tasks[p as usize]) {
            let from = match position[g.pred[e].index()] {
                Position::Template(q) => new_id[copy as usize][q as usize],
                Position::Previous(q) if copy > 0 => new_id[copy as usize - 1][q as usize],
                Position::Previous(_) | Position::Outside => continue,
            };
            out.pred.push(from);
            out.pred_kind.push(g.pred_kind[e]);
            out.pred_lag_ns.push(g.pred_lag_ns[e]);
        }
        out.pred_offsets.push(out.pred.len() as u32);
    }

    let timeline = simulate(&out, &RecordedOrder, SimOptions::default())?;
    let last_copy = &new_id[COPIES - 1];
    let start = match anchor {
        Some(a) => {
            let anchor_task = template_tasks[a].index();
            timeline.begin_ns[last_copy[a].index()] - (g.rec_start_ns[anchor_task] - step.start_ns)
        }
        None => last_copy
            .iter()
            .map(|t| timeline.begin_ns[t.index()])
            .min()
            .unwrap_or(0),
    };
    let end = last_copy
        .iter()
        .map(|t| timeline.end_ns[t.index()])
        .max()
        .unwrap_or(start);
    Ok(Some(TypicalStep {
        steps_used: members.iter().map(|&s| window.steps[s].number).collect(),
        tasks: m as u64,
        predicted_ns: end - start,
        measured_median_ns,
        declined: None,
    }))
}
