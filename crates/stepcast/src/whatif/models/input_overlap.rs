//! Input pipeline overlap: prefetching the next batch (Zins & Dagenais §IV-A).

use crate::analyze::host_time::inside_ns;
use crate::analyze::stats::median_ns;
use stepcast_trace::EventKind;

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError, first_steady};
use super::steady::SteadySpans;
use crate::analyze::mapping::Phase;
use crate::graph::{EdgeKind, NO_STEP, TaskId, TaskKind};

/// Whether an op, annotation or Python frame named `name` is data loading: PyTorch's
/// `enumerate(DataLoader)#...__next__` ranges and frames of `torch/utils/data/`.
pub(super) fn is_data_loading(name: &str) -> bool {
    name.contains("DataLoader") || name.contains("torch/utils/data/")
}

/// The recorded data-loading ranges of each host lane of the graph inside the steady steps:
/// `(graph lane, start, end)`, the outermost ranges only, sorted.
fn loading_ranges(context: &Context<'_>) -> Vec<(u32, i64, i64)> {
    let steady = SteadySpans::new(context.window);
    loading_ranges_where(context, |start| steady.contains(start))
}

/// The outermost data-loading ranges of each host lane whose start `keep` accepts:
/// `(graph lane, start, end)`, sorted.
fn loading_ranges_where(context: &Context<'_>, keep: impl Fn(i64) -> bool) -> Vec<(u32, i64, i64)> {
    let trace = context.trace;
    let window = context.window;
    let mut ranges = Vec::new();
    for (graph_lane, lane) in window.graph.lanes.iter().enumerate() {
        if lane.kind != stepcast_trace::LaneKind::CpuThread {
            continue;
        }
        let mut outer_end = i64::MIN;
        for event in trace.lane_events(lane.trace_lane) {
            let container = matches!(
                event.kind,
                EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
            );
            if !container || event.start_ns < outer_end {
                continue;
            }
            if !is_data_loading(trace.names.get(event.name)) {
                continue;
            }
            let (start, end) = (event.start_ns, event.end_ns());
            if keep(start) {
                ranges.push((graph_lane as u32, start, end));
                outer_end = end;
            }
        }
    }
    ranges.sort_unstable();
    ranges
}

/// How much slower the loading's parallel tensor ops run in a `DataLoader` worker than they
/// ran in the training process. PyTorch runs a worker's ops on one intra-op thread
/// (`torch.set_num_threads(1)` in `_worker_loop`) where the training process spread them over
/// its pool (16 CPUs on the machines that fitted this); a worker also pays what the training
/// process did not (the batch written to and read from shared memory). **Fitted** on one pair,
/// `testdata/kineto/stepcast/h100-pairs/loader-workers0 → loader-workers4` as traced: four
/// workers delivered a batch every 41.9 ms (167.7 ms per batch per worker, the steady AFTER
/// step being bound by them), against 13.6 ms of such ops at their typical pace, 1.4 ms of
/// their stalls ([`stalls`]) and 27.2 ms of serial and untraced work per batch in the training
/// process ([`LoaderWork`]): (167.7 − 27.2 − 1.4) / 13.6 = 10.2. Held out of sample on the
/// H200 pairs (`h200-pairs/loader-workers0 → 1, 2, 4`, another machine and host: seen before
/// the stalls were split out, which that pair's BEFORE trace showed) and the V100 pair
/// (`kineto/tb_plugin` ResNet-50, where the workers keep up at any value below ~20):
/// docs/accuracy.md.
pub const WORKER_TENSOR_SLOWDOWN: f64 = 10.2;

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
    /// [`PARALLEL_GRAIN`] elements, or of unrecorded size, that is not a view, an allocation
    /// or a random draw), each call at most the median of its identical calls ([`stalls`]).
    pub parallel_ns: i64,
    /// Per batch: what those calls took past the median of their identical calls (same op,
    /// same recorded input shapes): stalls ([`stalls`]).
    pub stall_ns: i64,
    /// Per batch: ops that run on one thread anyway: random draws from a generator (CPU
    /// `rand`, `normal_`, ... run serially), views and allocations (their time is dispatch),
    /// ops on fewer than [`PARALLEL_GRAIN`] elements.
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

/// What `prefetch_inputs` knows of the host the workers would run on: neither number is in
/// any trace format stepcast reads, so both are given (`--cores`, `--threads`) or unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoaderHost {
    /// The host's CPU cores.
    pub cores: Option<u32>,
    /// The training process's intra-op threads (`torch.get_num_threads()`; PyTorch's default
    /// is one per physical core).
    pub threads: Option<u32>,
}

/// How much slower the parallel ops run in a worker on `host`: [`WORKER_TENSOR_SLOWDOWN`], but
/// never more than the intra-op threads the training process spread them over (`threads`,
/// else one per core, PyTorch's default): one thread runs them at most that many times
/// slower. A training process on one thread ran them as a worker does (×1).
pub fn worker_slowdown(host: LoaderHost) -> f64 {
    match host.threads.or(host.cores) {
        Some(threads) if threads > 0 => WORKER_TENSOR_SLOWDOWN.min(threads as f64),
        _ => WORKER_TENSOR_SLOWDOWN,
    }
}

impl LoaderWork {
    /// One batch's loading in one worker on `host`: the serial and untraced work and the
    /// stalls as recorded, the parallel ops [`worker_slowdown`] times slower.
    pub fn in_worker_ns(&self, host: LoaderHost) -> i64 {
        self.serial_ns
            + self.untraced_ns
            + self.stall_ns
            + (self.parallel_ns as f64 * worker_slowdown(host)).round() as i64
    }
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
/// [`worker_slowdown`] times. Calls whose shapes were not recorded are all typical: without
/// shapes, calls of one name are not known to be alike.
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

/// The training process's intra-op threads leave no core to the workers, and they matter: a
/// reason to decline, or `None`. With `threads` (else one per core) intra-op threads on
/// `cores` cores, a worker runs on a core one of those threads uses; OpenMP's threads wait
/// for each other at the end of every parallel op, so an op waits for the thread the worker
/// displaced, a slowdown beyond the CPU work [`delivery_ns`] counts, and one this model does
/// not predict. It matters where those ops are at least a tenth of the training process's host
/// time (a GPU job's host ops are mostly too small to be spread).
pub fn oversubscribed(context: &Context<'_>, workers: u32, host: LoaderHost) -> Option<String> {
    let cores = host.cores.filter(|&c| c > 0)?;
    let threads = host.threads.or(host.cores)?;
    if threads < cores || loader_in_workers(context) {
        return None;
    }
    let work = loader_work(context);
    if work.batches == 0 || work.training_parallel_ns * 10 < work.training_ns {
        return None;
    }
    let fewer = match cores - 1 {
        0 => "one core leaves none to a worker".to_string(),
        n => format!("predict --threads {n} (torch.set_num_threads({n})) instead"),
    };
    Some(format!(
        "the training process spreads {:.1} ms of each step's tensor ops over {threads} \
         intra-op threads (--threads{}) on {cores} cores (--cores): its {workers} workers \
         would run on cores those threads use, and each parallel op would wait for the thread \
         a worker displaced, a slowdown stepcast does not model (on this project's 2-core CPU \
         pairs, 1 and 2 workers beside 2 threads made the step ×0.74 and ×0.89 as traced); \
         {fewer}",
        work.training_parallel_ns as f64 / 1e6,
        if host.threads.is_none() {
            ", one per core by default"
        } else {
            ""
        },
    ))
}

/// On a CPU-only trace, the host the answer turns on is unknown: a reason to decline, or
/// `None`. The workers run on the cores the training itself computes on, and the trace records
/// neither those cores nor the training process's intra-op threads: with one thread
/// (`torch.set_num_threads(1)`) a worker runs the loading's tensor ops as fast as the training
/// process did and the workers use cores it leaves idle (this project's 2-core pairs: ×1.5 to
/// ×2.3 with 1, 2 and 4 workers, as traced); with PyTorch's default, a thread per core, they
/// displace its threads ([`oversubscribed`]: ×0.74 and ×0.89 with 1 and 2). No default
/// stands for both, and [`WORKER_TENSOR_SLOWDOWN`], fitted on a GPU machine's 16-CPU host, for
/// neither: the two predictions would differ in direction. It matters where the loading is a
/// twentieth or more of the CPU work of a step (less, and a few mostly idle workers change
/// little either way) and the tensor ops PyTorch spreads over its threads a tenth or more (a
/// loader of Python and small tensors, beside a training of them, runs alike either way).
pub fn host_unknown(context: &Context<'_>, host: LoaderHost) -> Option<String> {
    if host.threads.is_some() || host.cores.is_some() || loader_in_workers(context) {
        return None;
    }
    let work = loader_work(context);
    let cpu_ns = work.recorded_ns + work.training_ns;
    let spread = work.parallel_ns + work.stall_ns + work.training_parallel_ns;
    if work.batches == 0 || work.recorded_ns * 20 < cpu_ns || spread * 10 < cpu_ns {
        return None;
    }
    let one_thread = LoaderHost {
        cores: None,
        threads: Some(1),
    };
    Some(format!(
        "a CPU-only run's DataLoader workers share the cores its training computes on, and the \
         trace records neither those cores nor the training process's intra-op threads, which \
         spread {:.1} ms of each step's tensor ops: with one thread a worker loads a batch in \
         about {:.1} ms and takes cores the training leaves idle; with PyTorch's default, a \
         thread per core, the workers displace those threads (on this project's 2-core pairs: \
         ×1.5-2.3 with one thread, ×0.74-0.89 with the default). Give --threads N \
         (torch.get_num_threads()) and --cores C",
        spread as f64 / 1e6,
        work.in_worker_ns(one_thread) as f64 / 1e6,
    ))
}

/// What `prefetch_inputs` with these inputs rests on, on this trace: the workers' pace with
/// the loading split it comes from, and the contention charged where the cores are unknown;
/// for a loader already in workers, why nothing changed.
pub fn caveats(
    context: &Context<'_>,
    contention: f64,
    workers: u32,
    host: LoaderHost,
) -> Vec<String> {
    if loader_in_workers(context) {
        return vec![
            "the loader already runs in worker processes (_MultiProcessingDataLoaderIter): its \
             remaining wait is for batches the workers did not have ready; it needs more \
             workers or cheaper transforms, not prefetching, so nothing changed"
                .to_string(),
        ];
    }
    let ms = |ns: i64| ns as f64 / 1e6;
    let work = loader_work(context);
    let delivery = delivery_ns(context, workers, host).unwrap_or(0);
    let in_worker = work.in_worker_ns(host);
    let slowdown = worker_slowdown(host);
    let why_slower = match (host.threads, host.cores) {
        _ if slowdown >= WORKER_TENSOR_SLOWDOWN => format!(
            "×{WORKER_TENSOR_SLOWDOWN} fitted on one recorded H100 pair with 16 CPUs, held \
             within 15 % on three H200 pairs (another host); elsewhere give --threads (the \
             training process's intra-op threads) or --cores to cap it"
        ),
        (Some(threads), _) => format!(
            "one thread is at most as many times slower as the {threads} intra-op threads the \
             training process spread them over (--threads)"
        ),
        (None, cores) => format!(
            "one thread is at most as many times slower as the {} intra-op threads the \
             training process had by default, one per core (--threads if it had fewer)",
            cores.unwrap_or(0)
        ),
    };
    // Stalls of a tenth of a millisecond or more a batch are worth a reader's attention.
    let stalled = match work.stall_ns {
        ns if ns >= 100_000 => format!(
            " at their typical pace and {:.3} ms more that they stalled (calls past the median \
             of their identical calls: a parallel op waits for its slowest thread, a worker's \
             one thread loses that time once)",
            ms(ns)
        ),
        _ => String::new(),
    };
    let cpu_bound = match host.cores {
        Some(cores) => format!(
            ", and {cores} cores (--cores) run the training process's own {:.3} ms of host work \
             per batch and the worker's {:.3} ms in no less than {:.3} ms; no contention is \
             charged beside that",
            ms(work.training_ns),
            ms(in_worker),
            ms(work.training_ns + in_worker) / cores.max(1) as f64
        ),
        None => String::new(),
    };
    let mut caveats = vec![format!(
        "the step after is at least {:.3} ms, the pace of {workers} worker processes \
         (--workers): a batch's loading takes {:.3} ms here ({:.3} ms of tensor ops PyTorch \
         spread over its intra-op threads{stalled}, {:.3} ms of ops that run on one thread \
         anyway: random draws, views, small tensors, and {:.3} ms untraced); a worker runs it \
         on one thread, about {:.3} ms per batch (the spread ops ×{slowdown:.1}: {why_slower})\
         {cpu_bound}",
        ms(delivery),
        ms(work.recorded_ns),
        ms(work.parallel_ns),
        ms(work.serial_ns),
        ms(work.untraced_ns),
        ms(in_worker),
    )];
    if work.batches > 0 && !context.window.graph.has_device_tasks() {
        // No pin-memory thread on a CPU-only run: the training thread receives each batch.
        caveats.push(
            "not charged: the training process receiving each batch from a worker \
             (`_MultiProcessingDataLoaderIter.__next__` unpickles it and maps each tensor's \
             shared memory: 1.1-1.9 ms per batch of 2 tensors on this project's 2-core pairs, \
             and 2-3 times that with the cores busy, `cpu-loader-pairs/handoff_probe.py`); \
             on a GPU run with `pin_memory=True` a thread of its own does it"
                .to_string(),
        );
    }
    if let Some((threads, cores)) = cores_outnumbered(workers, host) {
        caveats.push(format!(
            "the training process's {threads} intra-op thread(s) (--threads) and its {workers} \
             workers outnumber the {cores} cores (--cores): the prediction gives the training \
             process every cycle its workers do not need, the best a scheduler sharing the \
             cores can do; on this project's 2-core pairs with 2 and 4 workers (each loader \
             started afresh, `cpu-loader-pairs/README.md`) the traced steps took 1.1-1.6× the \
             predicted one, the training process's own work 1.6-1.9× slower beside the \
             workers, and the steps timed without the profiler 0.9-1.3×"
        ));
    }
    if host.cores.is_none() {
        caveats.push(format!(
            "the host's cores are unknown (the trace does not record them; --cores): charges \
             {:.0} % contention on this process's host work (--contention; the default was \
             measured on one V100 pair, and was about 0 with 4 workers on a 16-CPU H100 host)",
            contention * 100.0
        ));
    }
    caveats
}

/// `(training threads, cores)` where the training process's intra-op threads (`--threads`,
/// else one per core, PyTorch's default) and its `workers` (one thread each) outnumber the
/// host's given cores; `None` where they do not or the cores are unknown. There the cores'
/// bound of [`delivery_ns`] is a best case: it takes every core as busy with the step's work
/// and gives the training process what the workers do not need, where a fair scheduler gives
/// it only its share while they are runnable.
pub fn cores_outnumbered(workers: u32, host: LoaderHost) -> Option<(u32, u32)> {
    let cores = host.cores.filter(|&c| c > 0)?;
    let threads = host.threads.unwrap_or(cores);
    (threads.saturating_add(workers) > cores).then_some((threads, cores))
}

/// How often `workers` worker processes deliver a batch in the steady state: one batch's
/// loading in a worker ([`LoaderWork::in_worker_ns`]) divided among them, and, where the
/// host's cores are known, no faster than those cores can run the batch's loading and the
/// training process's own host work together (`(training + loading) / cores`: the kernel
/// keeps every core busy while anything waits for one, so the CPU work of a step, not a fixed
/// share per process, is what the cores bound; a worker whose batch is ready sleeps).
/// Assumption: the training process's host time is CPU time on one core (a training process
/// on several intra-op threads needs more). `None` without recorded loading.
pub fn delivery_ns(context: &Context<'_>, workers: u32, host: LoaderHost) -> Option<i64> {
    loader_work(context).delivery_ns(workers, host)
}

impl LoaderWork {
    /// [`delivery_ns`] of this loading work.
    pub fn delivery_ns(&self, workers: u32, host: LoaderHost) -> Option<i64> {
        if self.batches == 0 || workers == 0 {
            return None;
        }
        let per_batch = self.in_worker_ns(host);
        let pace = per_batch as f64 / workers as f64;
        let cpu_bound = match host.cores {
            Some(cores) if cores > 0 => (self.training_ns + per_batch) as f64 / cores as f64,
            _ => 0.0,
        };
        Some(pace.max(cpu_bound).round() as i64)
    }
}

/// Whether the trace's loader already runs in worker processes: PyTorch names the iterator
/// of a `DataLoader(num_workers>0)` `_MultiProcessingDataLoaderIter` (its `__next__` range,
/// `enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`, is then the training
/// process waiting for a worker's batch).
pub fn loader_in_workers(context: &Context<'_>) -> bool {
    let trace = context.trace;
    trace.events.iter().any(|event| {
        matches!(
            event.kind,
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
        ) && trace
            .names
            .get(event.name)
            .contains("_MultiProcessingDataLoaderIter")
    })
}

/// The training process's mean wait per batch for its `DataLoader` workers (the untraced
/// time inside the `_MultiProcessingDataLoaderIter.__next__` ranges of the steady steps: ops
/// recorded there are work, the rest is the wait on the workers' queue), where the loader
/// already runs in worker processes; `None` otherwise.
pub fn workers_wait_ns(context: &Context<'_>) -> Option<i64> {
    if !loader_in_workers(context) {
        return None;
    }
    let work = loader_work(context);
    (work.batches > 0).then_some(work.untraced_ns)
}

/// **Input pipeline overlap** (prefetching: `DataLoader(num_workers>0, pin_memory=True,
/// prefetch_factor)`, `tf.data.prefetch`; Zins & Dagenais §IV-A): the next batch is loaded
/// while the current step computes, so the step no longer waits for it.
///
/// - Host: the recorded data-loading time of the steady steps (`DataLoader` op ranges and
///   `torch/utils/data/` frames on each thread) leaves the thread: host tasks inside it cost
///   nothing (blocking calls keep their cost) and the untraced host time inside it goes, on
///   that thread and on any thread idle across it (an untraced gap spanning it: an autograd
///   engine thread waits that way for the next backward pass where no `thread_handoff` edge
///   ties it to the step thread).
/// - Device: the input copies (device copies of the data-loading phase, per the mapping) stay
///   on their stream with their recorded duration; only the host's wait for them goes (a
///   pinned, non-blocking copy issued ahead of time).
///
/// Assumptions: the background loader keeps up (it produces a batch in no more than a
/// predicted step; otherwise the step is bound by loading, which this does not model), and the
/// copies stay where they were on the stream (a copy on a side stream issued during the
/// previous step would also hide its device time: this is the conservative end).
///
/// - **Contention**: the workers run beside the training process, so its own host work of
///   the steady steps (host tasks, except blocking calls, which mostly wait for the device,
///   and the untraced host time) outside data loading is charged `1 + contention` times its
///   cost ([`super::DEFAULT_CONTENTION`]: measured on a recorded pair), every thread alike, but
///   never more in all than the loading its threads no longer do (a thread's own loading
///   ranges and the untraced time in them; not a thread's idle time while another loaded):
///   the workers contend for the CPU only while they load, and they load what those threads
///   did. Where there is little loading to take off (a step that loads nothing), there is
///   little contention to charge. Where the host's cores are given, none is charged: the
///   cores bound the workers' pace instead ([`delivery_ns`]).
/// - A loader **already in worker processes** ([`loader_in_workers`]): its recorded range is
///   the wait for a batch the workers did not have ready; prefetching does not shorten it
///   (more workers or cheaper transforms would), so nothing changes.
pub fn prefetch_inputs(
    context: &Context<'_>,
    edit: &mut EditGraph,
    contention: f64,
    workers: u32,
    host: LoaderHost,
) -> Result<usize, WhatIfError> {
    if !(contention >= 0.0 && contention.is_finite()) {
        return Err(super::super::edit::EditError::BadFactor { factor: contention }.into());
    }
    if loader_in_workers(context) {
        return Ok(0);
    }
    let graph = &context.window.graph;
    let ranges = loading_ranges(context);
    // Every range, merged: a thread idle across a loading range (the autograd thread waiting
    // for the next backward pass) is timed by the untraced gap that spans it.
    let mut all: Vec<(i64, i64)> = ranges.iter().map(|r| (r.1, r.2)).collect();
    all.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(all.len());
    for (start, end) in all {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut changed = 0;
    let mut own: Vec<(i64, i64)> = Vec::new();
    // Per thread: its steady work the workers slow down (computing tasks, and every task's
    // untraced gap), charged once every thread's loading is known.
    let mut slowed_lanes: Vec<(Vec<TaskId>, Vec<TaskId>)> = Vec::new();
    let (mut taken_off, mut charged) = (0i64, 0i64);
    for (lane, graph_lane) in graph.lanes.iter().enumerate() {
        if graph_lane.kind != stepcast_trace::LaneKind::CpuThread || merged.is_empty() {
            continue;
        }
        let lane = lane as u32;
        own.clear();
        own.extend(ranges.iter().filter(|r| r.0 == lane).map(|r| (r.1, r.2)));
        let (mut free, mut gaps) = (Vec::new(), Vec::new());
        for t in edit.lane_tasks(lane) {
            let task = TaskId(t);
            if !edit.is_original(task) {
                continue;
            }
            let (start, end) = (
                graph.rec_start_ns[task.index()],
                graph.rec_end_ns[task.index()],
            );
            // A warm-up task keeps its cost (the step stays as recorded); the untraced time
            // after it that a steady step's loading fills is that step's.
            if !edit.is_frozen(task)
                && !edit.is_blocking(task)
                && inside_ns(&own, start, end) >= end - start
                && end > start
            {
                free.push(task);
            }
            let gap_end = end + graph.gap_ns[task.index()];
            let hidden = inside_ns(&merged, end, gap_end);
            if hidden > 0 {
                // Only the thread's own loading is work taken off it: the rest of the gap
                // cut was a thread idle while another one loaded (the autograd thread
                // between backward passes), no CPU the workers now use.
                let loaded = inside_ns(&own, end, gap_end).min(hidden);
                gaps.push((task, (edit.gap_ns(task) - hidden).max(0), loaded));
            }
        }
        changed += free.len() + gaps.len();
        // The rest of the thread's steady work shares the CPU with the workers.
        let slowed: Vec<TaskId> = if contention > 0.0 {
            edit.lane_tasks(lane)
                .into_iter()
                .map(TaskId)
                .filter(|&t| {
                    edit.is_original(t)
                        && !edit.is_frozen(t)
                        && edit.step(t) != NO_STEP
                        && free.binary_search(&t).is_err()
                })
                .collect()
        } else {
            Vec::new()
        };
        // The loading this thread no longer does, which bounds the contention charged.
        taken_off += free.iter().map(|&t| edit.dur_ns(t)).sum::<i64>();
        taken_off += gaps.iter().map(|&(_, _, loaded)| loaded).sum::<i64>();
        edit.set_duration(&Selection::new(free), 0)?;
        for (task, gap, _) in gaps {
            edit.set_gap(&Selection::new(vec![task]), gap)?;
        }
        let computing: Vec<TaskId> = slowed
            .iter()
            .copied()
            .filter(|&t| !edit.is_blocking(t))
            .collect();
        charged += computing.iter().map(|&t| edit.dur_ns(t)).sum::<i64>()
            + slowed.iter().map(|&t| edit.gap_ns(t)).sum::<i64>();
        slowed_lanes.push((computing, slowed));
    }
    // The workers contend for the CPU only while they load, and they load what the training
    // process's threads did: all its threads together are charged no more than that loading.
    // A thread idle while another loaded took no loading off: counting the autograd thread's
    // idle gaps as loading charged the contention twice, and tb_plugin's
    // `resnet50_autograd_api` was predicted 0.6 % slower for the loading taken off.
    let contention = if charged > 0 {
        contention.min(taken_off as f64 / charged as f64)
    } else {
        contention
    };
    for (computing, slowed) in slowed_lanes {
        edit.scale(&Selection::new(computing), 1.0 + contention)?;
        edit.scale_gaps(&Selection::new(slowed), 1.0 + contention)?;
    }
    // The input copies: the calls that launched them, and the synchronizing calls of the
    // data-loading phase (`.to(device)` then a stream synchronize), no longer wait for them.
    let in_loading = |t: TaskId| {
        edit.is_original(t)
            && edit.step(t) != NO_STEP
            && context.mapping.phase[t.index()] == Phase::DataLoading
    };
    let copies = edit.select_where(|t| edit.kind(t) == TaskKind::Memcpy && in_loading(t));
    let mut waiting: Vec<TaskId> = copies
        .tasks()
        .iter()
        .filter_map(|&t| edit.launcher(t))
        .collect();
    waiting.extend(
        edit.select_where(|t| !edit.kind(t).on_device() && in_loading(t))
            .tasks(),
    );
    let launchers = Selection::new(
        waiting
            .into_iter()
            .filter(|&call| edit.is_blocking(call))
            .collect(),
    );
    edit.drop_inputs(&launchers, EdgeKind::HostSync)?;
    edit.drop_inputs(&launchers, EdgeKind::InferredHostSync)?;
    let paced = pace_deliveries(context, edit, workers, host)?;
    Ok(changed + launchers.len() + paced)
}

/// The workers' pace: each batch the training thread takes is ready no sooner than
/// [`delivery_ns`] after the one before. Per loading thread, the first task after each
/// loading range (the first use of the batch `__next__` returned) cannot complete before the
/// first task after the previous range ended plus that delivery time, once per batch between
/// them (a `TensorWait`: the thread goes on once the batch is there). The warm-up step's
/// batch, loaded as recorded, is where the pace starts. Returns the waits added.
fn pace_deliveries(
    context: &Context<'_>,
    edit: &mut EditGraph,
    workers: u32,
    host: LoaderHost,
) -> Result<usize, WhatIfError> {
    let Some(delivery) = delivery_ns(context, workers, host) else {
        return Ok(0);
    };
    let ranges = loading_ranges_where(context, |_| true);
    let mut added = 0;
    let lanes: std::collections::BTreeSet<u32> = ranges.iter().map(|r| r.0).collect();
    for lane in lanes {
        let tasks: Vec<TaskId> = edit
            .lane_tasks(lane)
            .into_iter()
            .map(TaskId)
            .filter(|&t| edit.is_original(t) && edit.step(t) != NO_STEP)
            .collect();
        let mut previous: Option<TaskId> = None;
        let mut batches = 0i64;
        for &(_, start, end) in ranges.iter().filter(|r| r.0 == lane) {
            batches += 1;
            // The first task after the range: the loading is untraced time or ops before it,
            // so holding its completion holds everything the step does with the batch.
            let after = tasks.partition_point(|&t| edit.rec_start_ns(t) < end.max(start + 1));
            let Some(&handed) = tasks.get(after) else {
                continue;
            };
            if let Some(before) = previous
                && !edit.is_frozen(handed)
            {
                edit.add_dependency(
                    before,
                    handed,
                    EdgeKind::TensorWait,
                    delivery.saturating_mul(batches),
                )?;
                added += 1;
            }
            previous = Some(handed);
            batches = 0;
        }
    }
    Ok(added)
}
