//! The recorded loading work per batch, split by how a single-threaded `DataLoader` worker runs
//! it: the tensor ops PyTorch spreads over its intra-op threads (at their typical pace, and
//! their stalls), the ops that run on one thread anyway, the untraced time, and the training
//! process's own host work beside it.

use crate::analyze::stats::median_ns;
use crate::whatif::{Context, first_steady};
use stepcast_trace::EventKind;

use super::{is_data_loading, loading_ranges};

/// PyTorch's intra-op grain (`at::internal::GRAIN_SIZE`): an op on fewer elements runs on one
/// thread in the training process too.
const PARALLEL_GRAIN: i64 = 32_768;

/// The recorded loading work per batch, split by how a single-threaded worker runs it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoaderWork {
    /// Steady batches loaded in the training process (its loading ranges).
    pub batches: usize,
    /// Per batch: the recorded loading (the ranges' wall time).
    pub recorded_ns: i64,
    /// Per batch: tensor ops PyTorch spreads over its intra-op threads (an op on at least
    /// `PARALLEL_GRAIN` elements, or of unrecorded size, that is not a view, an allocation
    /// or a random draw), each call at most the median of its identical calls (`stalls`).
    pub parallel_ns: i64,
    /// Per batch: what those calls took past the median of their identical calls (same op,
    /// same recorded input shapes): stalls (`stalls`).
    pub stall_ns: i64,
    /// Per batch: ops that run on one thread anyway: random draws from a generator (CPU
    /// `rand`, `normal_`, ... run serially), views and allocations (their time is dispatch),
    /// ops on fewer than `PARALLEL_GRAIN` elements.
    pub serial_ns: i64,
    /// Per batch: the untraced time inside the ranges (Python, PIL, decoding: one thread
    /// under the GIL, in a worker as in the training process).
    pub untraced_ns: i64,
    /// Per batch: the training process's own host time outside the loading (its steady
    /// steps' host spans less the loading): the CPU it keeps needing beside the workers.
    pub training_ns: i64,
    /// Per batch: the part of `training_ns` in tensor ops PyTorch spreads over its intra-op
    /// threads (classified as `parallel_ns` is).
    pub training_parallel_ns: i64,
}

/// Whether op `name` draws random numbers from a generator (PyTorch's CPU kernels for these
/// run serially, whatever its intra-op threads).
fn is_random_draw(name: &str) -> bool {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    op.starts_with("rand")
        || [
            "uniform_",
            "normal",
            "bernoulli",
            "multinomial",
            "exponential_",
            "cauchy_",
            "geometric_",
            "log_normal_",
            "poisson",
            "random_",
        ]
        .iter()
        .any(|r| op.starts_with(r))
}

/// Whether op `name` only makes a view or allocates (its time is the dispatcher's, on the
/// calling thread).
fn is_view_or_allocation(name: &str) -> bool {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    matches!(
        op,
        "view"
            | "as_strided"
            | "slice"
            | "select"
            | "unsqueeze"
            | "squeeze"
            | "narrow"
            | "permute"
            | "transpose"
            | "t"
            | "expand"
            | "alias"
            | "detach"
            | "detach_"
            | "lift_fresh"
            | "empty"
            | "empty_like"
            | "empty_strided"
            | "set_"
            | "resize_"
            | "unfold"
            | "split"
            | "chunk"
            | "unbind"
            | "_unsafe_view"
    )
}

/// The outermost ops of a lane inside a time range, split by how a single thread runs them:
/// tensor ops PyTorch spreads over its intra-op threads, and the rest (random draws, views and
/// allocations, ops on fewer than [`PARALLEL_GRAIN`] elements). Data-loading ranges and
/// frames themselves are containers, not ops.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct OpSplit {
    serial_ns: i64,
    /// The parallel ops, each as `(event, recorded duration)`.
    parallel_calls: Vec<(stepcast_trace::EventId, i64)>,
}

impl OpSplit {
    /// The parallel ops' recorded time.
    fn parallel_ns(&self) -> i64 {
        self.parallel_calls.iter().map(|&(_, dur)| dur).sum()
    }

    fn of(
        trace: &stepcast_trace::Trace,
        trace_lane: stepcast_trace::LaneId,
        start: i64,
        end: i64,
    ) -> OpSplit {
        let mut split = OpSplit::default();
        let first = trace.events.partition_point(|e| e.lane < trace_lane);
        let events = trace.lane_events(trace_lane);
        let from = events.partition_point(|e| e.start_ns < start);
        // (end, serial, event, dur) of the outermost op open.
        let mut outer: Option<(i64, bool, stepcast_trace::EventId, i64)> = None;
        let mut flush = |outer: &mut Option<(i64, bool, stepcast_trace::EventId, i64)>| {
            if let Some((_, is_serial, id, dur)) = outer.take() {
                if is_serial {
                    split.serial_ns += dur;
                } else {
                    split.parallel_calls.push((id, dur));
                }
            }
        };
        for (i, event) in events.iter().enumerate().skip(from) {
            if event.start_ns >= end {
                break;
            }
            if event.kind != EventKind::CpuOp || event.end_ns() > end {
                continue;
            }
            let name = trace.names.get(event.name);
            if is_data_loading(name) {
                // The range itself (an op in older traces), or a loader frame inside it.
                continue;
            }
            match outer {
                Some((outer_end, ref mut is_serial, _, _)) if event.start_ns < outer_end => {
                    // Inside the outermost op: a random draw in it makes it serial.
                    *is_serial |= is_random_draw(name);
                }
                _ => {
                    flush(&mut outer);
                    let id = stepcast_trace::EventId((first + i) as u32);
                    let small = trace.inputs_of(id).is_some_and(|inputs| {
                        let most = inputs
                            .iter()
                            .map(|input| match input {
                                stepcast_trace::OpInput::TensorList(shapes) => shapes
                                    .iter()
                                    .map(|s| s.iter().product::<i64>())
                                    .sum::<i64>(),
                                other => other.elements().unwrap_or(0),
                            })
                            .max()
                            .unwrap_or(0);
                        most > 0 && most < PARALLEL_GRAIN
                    });
                    let is_serial = is_random_draw(name) || is_view_or_allocation(name) || small;
                    outer = Some((event.end_ns(), is_serial, id, event.dur_ns));
                }
            }
        }
        flush(&mut outer);
        split
    }
}

/// The parallel calls' time split into their typical part and their stalls: `(typical,
/// stall)`, summed. A call's typical time is at most the median of its identical calls (the
/// same op on the same recorded input shapes, over every loading range); what it took past
/// that is a stall. A parallel op ends when its slowest intra-op thread does, so one thread
/// the kernel took off its core for a while holds the whole op (on the H200 loader's BEFORE
/// trace an `avg_pool2d` of 335 µs by its median took up to 3.8 ms, 10 ms of stalls per
/// batch against 1.4 on the H100's); a worker's one thread loses such time once, not
/// [`worker_slowdown`](super::worker_slowdown) times. Calls whose shapes were not recorded
/// are all typical: without shapes, calls of one name are not known to be alike.
fn stalls(trace: &stepcast_trace::Trace, calls: &[(stepcast_trace::EventId, i64)]) -> (i64, i64) {
    use stepcast_trace::{NameId, OpInput};
    let mut alike: rustc_hash::FxHashMap<(NameId, &[OpInput]), Vec<i64>> = Default::default();
    let mut typical = 0i64;
    for &(id, dur) in calls {
        match trace.inputs_of(id) {
            Some(inputs) if !inputs.is_empty() => alike
                .entry((trace.events[id.index()].name, inputs))
                .or_default()
                .push(dur),
            _ => typical += dur,
        }
    }
    // Sums: the same whatever order the map gives.
    let mut stall = 0i64;
    for durations in alike.values_mut() {
        let median = median_ns(durations);
        for &dur in durations.iter() {
            typical += dur.min(median);
            stall += (dur - median).max(0);
        }
    }
    (typical, stall)
}

/// The training process's own tensor ops that PyTorch spreads over its intra-op threads, per
/// steady step: those of the loading lanes' steady steps outside the loading.
fn training_parallel_ns(context: &Context<'_>, loading_parallel_ns: i64, batches: usize) -> i64 {
    let graph = &context.window.graph;
    let lanes: std::collections::BTreeSet<u32> =
        loading_ranges(context).iter().map(|r| r.0).collect();
    let steps = &context.window.steps;
    let steady = &steps[first_steady(context.window).min(steps.len())..];
    let mut parallel = 0i64;
    for &lane in &lanes {
        let trace_lane = graph.lanes[lane as usize].trace_lane;
        for step in steady {
            parallel += OpSplit::of(context.trace, trace_lane, step.start_ns, step.marker_end_ns)
                .parallel_ns();
        }
    }
    let batches = batches.max(1) as i64;
    ((parallel - loading_parallel_ns * batches) / batches).max(0)
}

/// The recorded loading of the steady steps, per batch, split into what a single-threaded
/// worker runs as fast as the training process did and what it runs slower: the outermost
/// ops inside each loading range, classified by name and recorded input sizes, and the
/// untraced time between them.
pub fn loader_work(context: &Context<'_>) -> LoaderWork {
    let graph = &context.window.graph;
    let ranges = loading_ranges(context);
    let (mut parallel, mut serial, mut recorded, mut traced) = (0i64, 0i64, 0i64, 0i64);
    let mut parallel_calls = Vec::new();
    for &(lane, start, end) in &ranges {
        recorded += end - start;
        let split = OpSplit::of(
            context.trace,
            graph.lanes[lane as usize].trace_lane,
            start,
            end,
        );
        parallel += split.parallel_ns();
        serial += split.serial_ns;
        traced += split.parallel_ns() + split.serial_ns;
        parallel_calls.extend(split.parallel_calls);
    }
    let (typical, stall) = stalls(context.trace, &parallel_calls);
    let batches = ranges.len().max(1) as i64;
    let steps = &context.window.steps;
    let steady_ns: i64 = steps[first_steady(context.window).min(steps.len())..]
        .iter()
        .map(|step| (step.marker_end_ns - step.start_ns).max(0))
        .sum();
    LoaderWork {
        batches: ranges.len(),
        recorded_ns: recorded / batches,
        parallel_ns: typical / batches,
        stall_ns: stall / batches,
        serial_ns: serial / batches,
        untraced_ns: (recorded - traced).max(0) / batches,
        training_ns: ((steady_ns - recorded) / batches).max(0),
        training_parallel_ns: training_parallel_ns(context, parallel / batches, ranges.len()),
    }
}
