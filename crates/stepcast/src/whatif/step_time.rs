//! What kind of time bounds a step: the sentence a person reads first names it, and the fix
//! differs by kind. The baseline's steady critical path is split into CPU work, blocking waits
//! inside runtime calls, data loading, device compute, copies, communication and latency,
//! each with the names that take most of it.
//!
//! A runtime call's time on the path is host time, but a call that blocks (a
//! `cudaMemsetAsync` stalled behind the device for 95 ms, a `cudaStreamSynchronize`) is the
//! host *waiting*: no faster CPU and no removed op shortens it. A call counts as blocked for
//! the time it took beyond its name's median over the window, where it took over
//! [`BLOCKED_TIMES_MEDIAN`] times that median and at least [`BLOCKED_MIN_NS`] more; a
//! synchronizing call (`…Synchronize`) for all of its time beyond [`SYNC_CALL_COST_NS`].

use rustc_hash::FxHashMap;
use stepcast_trace::{EventId, LaneId, NameId};

use super::Baseline;
use crate::analyze::host_time;
use crate::analyze::innermost::InnermostTimeline;
use crate::graph::{TaskId, TaskKind, is_host_collective};
use crate::simulate::{PathShare, ShareKind};
use crate::whatif::Context;

/// A call took this many times its name's median: it waited for something.
pub const BLOCKED_TIMES_MEDIAN: i64 = 10;
/// ...and at least this much longer than the median (short calls jitter by more than 10×).
pub const BLOCKED_MIN_NS: i64 = 50_000;
/// What a synchronizing call costs the CPU when it has nothing to wait for.
pub const SYNC_CALL_COST_NS: i64 = 5_000;

/// The kinds of time on a critical path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TimeKind {
    /// Host work: ops, runtime calls' own cost, the untraced time between them.
    CpuWork,
    /// The host blocked inside a runtime call (see the module documentation).
    BlockingWait,
    /// Host time inside the data loader's ranges.
    DataLoading,
    /// Device kernels and memsets.
    Compute,
    /// Host↔device and device↔device copies.
    Copies,
    /// Collectives and their wait for peers.
    Communication,
    /// Launch latency, a stream waiting for another.
    Latency,
}

impl TimeKind {
    pub const ALL: [TimeKind; 7] = [
        TimeKind::CpuWork,
        TimeKind::BlockingWait,
        TimeKind::DataLoading,
        TimeKind::Compute,
        TimeKind::Copies,
        TimeKind::Communication,
        TimeKind::Latency,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TimeKind::CpuWork => "cpu_work",
            TimeKind::BlockingWait => "blocking_wait",
            TimeKind::DataLoading => "data_loading",
            TimeKind::Compute => "compute",
            TimeKind::Copies => "copies",
            TimeKind::Communication => "communication",
            TimeKind::Latency => "latency",
        }
    }
}

/// One name that takes time of a kind: a task's name and the op it ran in, if any. Data
/// loading is named by what the loader spent it in and the loader range holding that
/// (`analyze::innermost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindItem {
    pub name: NameId,
    pub op: Option<NameId>,
    /// Path time per steady step.
    pub ns: i64,
}

/// A name's time of one kind: the kind, the task's name, the op it ran in.
type ItemKey = (TimeKind, NameId, Option<NameId>);

/// The baseline's steady critical path by kind of time, per steady step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepTime {
    /// Path time per steady step, in [`TimeKind::ALL`] order.
    pub by_kind: [i64; 7],
    /// Per kind, the names with the most of it (at most [`StepTime::TOP`]), most first.
    pub top: [Vec<KindItem>; 7],
}

impl StepTime {
    pub const TOP: usize = 3;

    /// The split of `baseline`'s steady critical path (its tasks are the window graph's).
    pub fn of(context: &Context<'_>, baseline: &Baseline) -> StepTime {
        let graph = &context.window.graph;
        let shares = &baseline.steady_path.shares;
        let steps = (baseline.prediction.steady.clone().count() as i64).max(1);
        let blocked = blocked_budgets(context, shares);
        let mut left: FxHashMap<TaskId, i64> = blocked;
        let marker = host_time::marker_lane(context.trace);
        let mut by_kind = [0i64; 7];
        let mut by_name: FxHashMap<(TimeKind, NameId, Option<NameId>), i64> = FxHashMap::default();
        let mut loading_names = LoadingNames::new(context);
        let mut add = |kind: TimeKind, share: &PathShare, ns: i64| {
            if ns <= 0 {
                return;
            }
            by_kind[kind as usize] += ns;
            let t = share.task;
            if kind == TimeKind::DataLoading {
                // Named by what the loader spent it in, not by the call after it.
                for (name, op, ns) in loading_names.of(share) {
                    *by_name.entry((kind, name, op)).or_default() += ns;
                }
                return;
            }
            // CPU work is named by its call or op alone (a launch call's time, summed over
            // the ops that launch); a wait by the call and the op it stalled.
            let op = match kind {
                TimeKind::CpuWork => None,
                _ => context.mapping.op_name(context.trace, t),
            };
            *by_name
                .entry((kind, graph.name[t.index()], op))
                .or_default() += ns;
        };
        for share in shares {
            let kind = graph.kind[share.task.index()];
            // A collective a host thread runs (gloo's): communication, as a kernel's is.
            if !kind.on_device()
                && is_host_collective(context.trace.name(graph.name[share.task.index()]))
            {
                add(TimeKind::Communication, share, share.ns);
                continue;
            }
            match (share.kind, kind) {
                (ShareKind::Host, _) => {
                    let loading = host_time::share_loading_ns(
                        graph,
                        context.mapping,
                        marker,
                        share.task,
                        share.ns,
                    );
                    let budget = left.get_mut(&share.task);
                    let waited = match budget {
                        Some(b) => {
                            let w = (*b).min(share.ns - loading).max(0);
                            *b -= w;
                            w
                        }
                        None => 0,
                    };
                    add(TimeKind::DataLoading, share, loading);
                    add(TimeKind::BlockingWait, share, waited);
                    add(TimeKind::CpuWork, share, share.ns - loading - waited);
                }
                (ShareKind::Device | ShareKind::Wait, TaskKind::Collective) => {
                    add(TimeKind::Communication, share, share.ns)
                }
                (ShareKind::Device, TaskKind::Memcpy) => add(TimeKind::Copies, share, share.ns),
                (ShareKind::Device, _) => add(TimeKind::Compute, share, share.ns),
                (ShareKind::Wait, _) => add(TimeKind::Latency, share, share.ns),
            }
        }
        let mut top: [Vec<KindItem>; 7] = Default::default();
        let mut items: Vec<(ItemKey, i64)> = by_name.into_iter().collect();
        // Most time first; ties by kind and names, so the order never depends on hashing.
        items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for ((kind, name, op), ns) in items {
            let list = &mut top[kind as usize];
            if list.len() < StepTime::TOP {
                list.push(KindItem {
                    name,
                    op,
                    ns: ns / steps,
                });
            }
        }
        StepTime {
            by_kind: by_kind.map(|ns| ns / steps),
            top,
        }
    }

    /// Path time per steady step.
    pub fn length_ns(&self) -> i64 {
        self.by_kind.iter().sum()
    }

    pub fn ns(&self, kind: TimeKind) -> i64 {
        self.by_kind[kind as usize]
    }

    /// The kind with the most path time (the first in [`TimeKind::ALL`] order on a tie);
    /// `None` for an empty path.
    pub fn bound(&self) -> Option<TimeKind> {
        let mut best: Option<TimeKind> = None;
        for kind in TimeKind::ALL {
            if self.ns(kind) > best.map_or(0, |b| self.ns(b)) {
                best = Some(kind);
            }
        }
        best
    }
}

/// Per runtime call on the path that blocked, how much of its time was waiting.
fn blocked_budgets(context: &Context<'_>, shares: &[PathShare]) -> FxHashMap<TaskId, i64> {
    let graph = &context.window.graph;
    let on_path: FxHashMap<NameId, ()> = shares
        .iter()
        .filter(|s| s.kind == ShareKind::Host && graph.kind[s.task.index()] == TaskKind::ApiCall)
        .map(|s| (graph.name[s.task.index()], ()))
        .collect();
    let mut durations: FxHashMap<NameId, Vec<i64>> = FxHashMap::default();
    for t in 0..graph.task_count() {
        if graph.kind[t] == TaskKind::ApiCall && on_path.contains_key(&graph.name[t]) {
            durations
                .entry(graph.name[t])
                .or_default()
                .push(graph.dur_ns[t]);
        }
    }
    let medians: FxHashMap<NameId, i64> = durations
        .into_iter()
        .map(|(name, mut d)| {
            d.sort_unstable();
            (name, d[d.len() / 2])
        })
        .collect();
    let mut budgets = FxHashMap::default();
    for share in shares {
        let t = share.task.index();
        if graph.kind[t] != TaskKind::ApiCall || budgets.contains_key(&share.task) {
            continue;
        }
        let name = graph.name[t];
        let Some(&median) = medians.get(&name) else {
            continue;
        };
        let dur = graph.dur_ns[t];
        let waited = if context.trace.name(name).ends_with("Synchronize") {
            dur - median.min(SYNC_CALL_COST_NS)
        } else if dur > median.saturating_mul(BLOCKED_TIMES_MEDIAN)
            && dur - median >= BLOCKED_MIN_NS
        {
            dur - median
        } else {
            0
        };
        if waited > 0 {
            budgets.insert(share.task, waited);
        }
    }
    budgets
}

/// Names a critical-path share's data loading by what the loader spent it in: the innermost
/// recorded event at each moment of its pieces (`analyze::innermost`), in the loader range
/// that holds them (`enumerate(DataLoader)#...__next__`): `<built-in function zoom_shift>` in
/// it, or the range itself for its untraced time. The call after the loading (the input's
/// `cudaMemcpyAsync`), which the share belongs to, says nothing of where it went.
struct LoadingNames<'a> {
    context: &'a Context<'a>,
    marker: Option<LaneId>,
    timelines: FxHashMap<LaneId, InnermostTimeline>,
}

impl<'a> LoadingNames<'a> {
    fn new(context: &'a Context<'a>) -> Self {
        LoadingNames {
            context,
            marker: host_time::marker_lane(context.trace),
            timelines: FxHashMap::default(),
        }
    }

    /// `(name, the loader range's name where not the same, ns)` of `share`'s loading, in
    /// order (for a moment inside no event of the thread, the share's task's name).
    fn of(&mut self, share: &PathShare) -> Vec<(NameId, Option<NameId>, i64)> {
        let (trace, mapping) = (self.context.trace, self.context.mapping);
        let graph = &self.context.window.graph;
        let Some(loading) =
            host_time::share_loading_pieces(graph, mapping, self.marker, share.task, share.ns)
        else {
            return Vec::new();
        };
        let timeline = self
            .timelines
            .entry(loading.lane)
            .or_insert_with(|| InnermostTimeline::of_lane(trace, loading.lane));
        let mut named = Vec::new();
        for (&(start, end), &range) in loading.pieces.iter().zip(&loading.ranges) {
            timeline.split(start, end, |innermost, ns| {
                let within = |e: EventId| {
                    let event = &trace.events[e.index()];
                    event.start_ns >= range.0 && event.end_ns() <= range.1
                };
                // The loader range: the outermost event around the moment within the range.
                let holder = innermost.map(|mut e| {
                    while let Some(p) = mapping.parent.get(e.index()).copied().flatten() {
                        if !within(p) {
                            break;
                        }
                        e = p;
                    }
                    e
                });
                let name = |e: Option<EventId>| e.map(|e| trace.events[e.index()].name);
                match (name(innermost), name(holder)) {
                    (Some(inner), Some(holder)) if inner != holder => {
                        named.push((inner, Some(holder), ns))
                    }
                    (Some(inner), _) => named.push((inner, None, ns)),
                    // Inside no event of the thread: the call the share belongs to.
                    (None, _) => named.push((graph.name[share.task.index()], None, ns)),
                }
            });
        }
        named
    }
}
