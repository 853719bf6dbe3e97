//! A second, weaker evidence for device work whose launching call is not in the trace: the same
//! kernel elsewhere in the trace ([`Evidence::SameKernelElsewhere`]).
//!
//! Work launched before the profiler window opened is the tail of the previous iteration, and
//! the window repeats that iteration: its kernels were launched by the same ops, in the same
//! order, as the same kernels at the end of a recorded step. So, on each device stream, a run of
//! consecutive tasks without a launching call is aligned, from its end, with the tasks that end
//! a step on that stream (the last task before the stream's work moves to another step, or the
//! stream's last task): task `i` back from the run's end and task `i` back from the boundary
//! correspond while every task between them and their end is the same work (same kind and name;
//! copies and memsets also the same size class, a power of two of their bytes) and the recorded
//! one was mapped from its launch. A task with aligned occurrences takes the mapping of the
//! latest one in the phase they agree on; a task with none takes the most frequent mapping
//! (phase, then op name and layer, by device time) of the same work anywhere in the window.
//!
//! Some devices name an execution only when its launching call is in the trace: MTIA records
//! every run of an executable as `pe_exe`, and the profiler renames it after the executable
//! (`merge`, `remote`...) from its launching call. A `pe_exe` with no launching call is taken as
//! the one executable its stream runs in the window (a name seen only on launched work: the
//! device's own names, `dma_request`, `event_record`..., also appear without a launch), when
//! the stream runs one and the durations agree (within [`GENERIC_DURATION_RATIO`] of that
//! executable's median). Measured on the HTA MTIA trace: each stream and packet runs one
//! executable, and its `pe_exe` runs before the window last as long as its named runs inside.
//!
//! Only agreement maps: at least [`AGREEMENT`] of the occurrences' device time (the aligned
//! ones, else all of the same work's launched occurrences) must be in one phase; otherwise the
//! task stays unmapped with its cause, as does work that appears nowhere else. A launch-based
//! mapping is never overridden: only tasks with no launching call take this evidence, and only
//! from tasks mapped from their own launch.
//!
//! Cost: one pass over the tasks when nothing lacks its launch; otherwise O(n) plus, per run,
//! the aligned length times at most [`MAX_BOUNDARIES`] boundaries.

use rustc_hash::{FxHashMap, FxHashSet};
use stepcast_trace::{NameId, Trace};

use crate::graph::{Graph, NO_STEP, TaskId, TaskKind};

use super::{Evidence, Mapping, Phase, device_ns, is_launched};

/// Share of the occurrences' device time that must be in one phase for the task to be mapped.
pub const AGREEMENT: f64 = 0.9;

/// A run is aligned with at most this many step boundaries of its stream, the latest ones.
const MAX_BOUNDARIES: usize = 32;

/// A generically named execution is its stream's executable only if its duration is within this
/// factor of that executable's median duration (either way).
pub const GENERIC_DURATION_RATIO: f64 = 2.0;

/// The name MTIA gives an execution whose launching call (which names the executable) is not in
/// the trace.
const GENERIC_EXECUTION: &str = "pe_exe";

/// What makes two device tasks the same work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Work {
    kind: TaskKind,
    name: NameId,
    /// Copies and memsets: bit length of their bytes (`u32::MAX` when not recorded); 0 else.
    size_class: u32,
}

/// Each task's name as same work is compared: its own, or, for a generically named execution
/// without a launching call, the executable its stream runs (see the module's notes).
struct WorkNames(Vec<NameId>);

impl WorkNames {
    fn new(trace: &Trace, graph: &Graph, unlaunched: &[bool], donor_ok: &[bool]) -> WorkNames {
        let mut names = graph.name.clone();
        let Some(generic) = trace.names.lookup(GENERIC_EXECUTION) else {
            return WorkNames(names);
        };
        let is_generic = |t: usize| {
            unlaunched[t] && graph.kind[t] == TaskKind::Kernel && graph.name[t] == generic
        };
        if !(0..graph.task_count()).any(is_generic) {
            return WorkNames(names);
        }
        // Names the device gives whether or not the launch is recorded (`dma_request`,
        // `event_record`...): the ones seen on work without a launching call. An executable's
        // name comes from its launching call, so it is never among them.
        let device_given: FxHashSet<NameId> = (0..graph.task_count())
            .filter(|&t| unlaunched[t])
            .map(|t| graph.name[t])
            .collect();
        for lane in &graph.lanes {
            let tasks = lane.first_task as usize..(lane.first_task + lane.task_count) as usize;
            if !tasks.clone().any(is_generic) {
                continue;
            }
            let mut executable = None;
            let mut one_executable = true;
            let mut durations = Vec::new();
            for t in tasks.clone() {
                if !donor_ok[t]
                    || graph.kind[t] != TaskKind::Kernel
                    || device_given.contains(&graph.name[t])
                {
                    continue;
                }
                one_executable &= executable.is_none_or(|name| name == graph.name[t]);
                executable = Some(graph.name[t]);
                durations.push(graph.dur_ns[t]);
            }
            let (Some(executable), true) = (executable, one_executable) else {
                continue;
            };
            durations.sort_unstable();
            let median = durations[durations.len() / 2].max(1) as f64;
            for t in tasks.filter(|&t| is_generic(t)) {
                let ratio = graph.dur_ns[t] as f64 / median;
                if (1.0 / GENERIC_DURATION_RATIO..=GENERIC_DURATION_RATIO).contains(&ratio) {
                    names[t] = executable;
                }
            }
        }
        WorkNames(names)
    }
}

fn work(trace: &Trace, graph: &Graph, names: &WorkNames, task: usize) -> Work {
    let kind = graph.kind[task];
    let size_class = match kind {
        TaskKind::Memcpy | TaskKind::Memset => trace.events[graph.event[task].index()]
            .bytes
            .map_or(u32::MAX, |bytes| u64::BITS - bytes.leading_zeros()),
        _ => 0,
    };
    Work {
        kind,
        name: names.0[task],
        size_class,
    }
}

/// For each device task with no launching call, the launch-mapped task whose mapping it takes,
/// if its occurrences agree; `(task, donor)` sorted by task.
pub(super) fn donors(trace: &Trace, graph: &Graph, mapping: &Mapping) -> Vec<(TaskId, TaskId)> {
    let n = graph.task_count();
    let unlaunched: Vec<bool> = (0..n)
        .map(|t| graph.kind[t].on_device() && !is_launched(graph, t))
        .collect();
    if !unlaunched.contains(&true) {
        return Vec::new();
    }
    // Device work mapped from its own launch: the only donors.
    let donor_ok: Vec<bool> = (0..n)
        .map(|t| graph.kind[t].on_device() && !unlaunched[t] && mapping.unmapped[t].is_none())
        .collect();
    let names = WorkNames::new(trace, graph, &unlaunched, &donor_ok);
    let mut chosen = Vec::new();
    let mut unaligned = Vec::new();
    for lane in &graph.lanes {
        let first = lane.first_task as usize;
        let tasks = first..first + lane.task_count as usize;
        if !tasks.clone().any(|t| unlaunched[t]) {
            continue;
        }
        let boundaries = step_boundaries(graph, &donor_ok, tasks.clone());
        let mut t = tasks.start;
        while t < tasks.end {
            if !unlaunched[t] {
                t += 1;
                continue;
            }
            let run_start = t;
            while t < tasks.end && unlaunched[t] {
                t += 1;
            }
            let run = Run {
                trace,
                graph,
                names: &names,
                mapping,
                donor_ok: &donor_ok,
                range: run_start..t,
                lane_start: tasks.start,
            };
            run.align(&boundaries, &mut chosen, &mut unaligned);
        }
    }
    chosen.extend(most_frequent(
        trace, graph, &names, mapping, &donor_ok, &unaligned,
    ));
    chosen.sort_unstable();
    chosen
}

/// The latest [`MAX_BOUNDARIES`] tasks of a stream that end a step's work on it, in order.
fn step_boundaries(graph: &Graph, donor_ok: &[bool], tasks: std::ops::Range<usize>) -> Vec<usize> {
    let end = tasks.end;
    let mut boundaries: Vec<usize> = tasks
        .filter(|&t| donor_ok[t] && graph.step[t] != NO_STEP)
        .filter(|&t| t + 1 == end || graph.step[t + 1] != graph.step[t])
        .collect();
    let keep_from = boundaries.len().saturating_sub(MAX_BOUNDARIES);
    boundaries.drain(..keep_from);
    boundaries
}

/// A maximal run of consecutive tasks without a launching call on one stream.
struct Run<'a> {
    trace: &'a Trace,
    graph: &'a Graph,
    names: &'a WorkNames,
    mapping: &'a Mapping,
    donor_ok: &'a [bool],
    range: std::ops::Range<usize>,
    lane_start: usize,
}

impl Run<'_> {
    /// Maps each task of the run from its aligned occurrences at the step boundaries; tasks
    /// with none go to `unaligned`.
    fn align(
        &self,
        boundaries: &[usize],
        chosen: &mut Vec<(TaskId, TaskId)>,
        unaligned: &mut Vec<usize>,
    ) {
        let (graph, len) = (self.graph, self.range.len());
        // How many tasks back from each boundary match the run back from its end.
        let matched: Vec<usize> = boundaries
            .iter()
            .map(|&b| {
                (0..len)
                    .take_while(|&back| {
                        let Some(recorded) = b.checked_sub(back) else {
                            return false;
                        };
                        recorded >= self.lane_start
                            && self.donor_ok[recorded]
                            && work(self.trace, graph, self.names, recorded)
                                == work(self.trace, graph, self.names, self.range.end - 1 - back)
                    })
                    .count()
            })
            .collect();
        let mut occurrences = Vec::new();
        for back in 0..len {
            let task = self.range.end - 1 - back;
            occurrences.clear();
            occurrences.extend(
                boundaries
                    .iter()
                    .zip(&matched)
                    .filter(|&(_, &m)| m > back)
                    .map(|(&b, _)| b - back),
            );
            if occurrences.is_empty() {
                unaligned.push(task);
                continue;
            }
            let Some(phase) = agreed_phase(graph, self.mapping, &occurrences) else {
                continue;
            };
            // The latest aligned occurrence in the agreed phase.
            if let Some(&donor) = occurrences
                .iter()
                .rev()
                .find(|&&d| self.mapping.phase[d] == phase)
            {
                chosen.push((TaskId(task as u32), TaskId(donor as u32)));
            }
        }
    }
}

/// The phase holding at least [`AGREEMENT`] of the occurrences' device time (by count when
/// they have none), if one does.
fn agreed_phase(graph: &Graph, mapping: &Mapping, occurrences: &[usize]) -> Option<Phase> {
    let mut by_phase = [0i64; Phase::ALL.len()];
    let timed = occurrences.iter().any(|&t| device_ns(graph, t) > 0);
    for &t in occurrences {
        by_phase[mapping.phase[t] as usize] += if timed { device_ns(graph, t) } else { 1 };
    }
    let total: i64 = by_phase.iter().sum();
    let (best, &ns) = by_phase
        .iter()
        .enumerate()
        .max_by_key(|&(i, &ns)| (ns, std::cmp::Reverse(i)))?;
    (total > 0 && ns as f64 >= AGREEMENT * total as f64).then_some(Phase::ALL[best])
}

/// For tasks aligned with nothing: the most frequent mapping of the same work in the window, if
/// its occurrences agree on the phase. Within the agreed phase, the (op name, layer) with the
/// most device time wins, and its latest occurrence is the donor.
fn most_frequent(
    trace: &Trace,
    graph: &Graph,
    names: &WorkNames,
    mapping: &Mapping,
    donor_ok: &[bool],
    unaligned: &[usize],
) -> Vec<(TaskId, TaskId)> {
    if unaligned.is_empty() {
        return Vec::new();
    }
    let mut occurrences: FxHashMap<Work, Vec<usize>> = unaligned
        .iter()
        .map(|&t| (work(trace, graph, names, t), Vec::new()))
        .collect();
    for t in (0..graph.task_count()).filter(|&t| donor_ok[t]) {
        if let Some(list) = occurrences.get_mut(&work(trace, graph, names, t)) {
            list.push(t);
        }
    }
    let mut donor_of: FxHashMap<Work, Option<usize>> = FxHashMap::default();
    unaligned
        .iter()
        .filter_map(|&t| {
            let key = work(trace, graph, names, t);
            let donor = *donor_of.entry(key).or_insert_with(|| {
                let list = occurrences.get(&key)?;
                let phase = agreed_phase(graph, mapping, list)?;
                most_frequent_in(trace, graph, mapping, list, phase)
            });
            donor.map(|d| (TaskId(t as u32), TaskId(d as u32)))
        })
        .collect()
}

/// Among `occurrences` in `phase`, the latest of the (op name, layer) with the most device time
/// (ties: the first in name order).
fn most_frequent_in(
    trace: &Trace,
    graph: &Graph,
    mapping: &Mapping,
    occurrences: &[usize],
    phase: Phase,
) -> Option<usize> {
    let op_name = |t: usize| mapping.op_name(trace, TaskId(t as u32));
    let mut groups: Vec<(Option<NameId>, Option<NameId>, usize)> = occurrences
        .iter()
        .filter(|&&t| mapping.phase[t] == phase)
        .map(|&t| (op_name(t), mapping.layer[t], t))
        .collect();
    groups.sort_unstable();
    let mut best: Option<(i64, usize)> = None;
    for group in groups.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let ns: i64 = group.iter().map(|&(_, _, t)| device_ns(graph, t)).sum();
        let latest = group[group.len() - 1].2;
        if best.is_none_or(|(best_ns, _)| ns > best_ns) {
            best = Some((ns, latest));
        }
    }
    best.map(|(_, t)| t)
}

/// Gives each task in `donors` its donor's op, stack, layer and phase, labelled
/// [`Evidence::SameKernelElsewhere`], and marks it mapped.
pub(super) fn apply(mapping: &mut Mapping, donors: &[(TaskId, TaskId)]) {
    for &(task, donor) in donors {
        let (t, d) = (task.index(), donor.index());
        mapping.op[t] = mapping.op[d];
        mapping.frame[t] = mapping.frame[d];
        mapping.layer[t] = mapping.layer[d];
        mapping.layer_evidence[t] = if mapping.layer[d].is_some() {
            Evidence::SameKernelElsewhere
        } else {
            Evidence::Unmapped
        };
        mapping.phase[t] = mapping.phase[d];
        mapping.evidence[t] = Evidence::SameKernelElsewhere;
        mapping.unmapped[t] = None;
    }
}
