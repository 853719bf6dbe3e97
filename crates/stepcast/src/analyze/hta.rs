//! HolisticTraceAnalysis' temporal breakdown (idle / compute / non-compute), reproduced as HTA
//! computes it, so that stepcast's figures can be checked against HTA's own.
//!
//! # The definition reproduced
//!
//! HTA 0.5.0 (PyPI; `facebookresearch/HolisticTraceAnalysis`), `TraceAnalysis.get_temporal_breakdown`
//! → `BreakdownAnalysis.get_temporal_breakdown` in `hta/analyzers/breakdown_analysis.py`, on a
//! trace loaded by `Trace.load_traces` (`hta/common/trace.py`) with its defaults. For one rank:
//!
//! 1. **Events** (`hta/common/trace_parser.py`, `_compress_df`): every record with a `dur` and a
//!    `cat`, except category `Trace`. Its `stream` is `args.stream` converted by `int()`, `-1`
//!    when absent or not a number (`normalize_gpu_stream_numbers`, `hta/utils/utils.py`); its
//!    `correlation` is `args.correlation`, `-1` when absent.
//! 2. **Microsecond rounding** (`round_down_time_stamps`): when the file's `ts` column is
//!    floating point (nanosecond-resolution traces), every event becomes
//!    `[ceil(ts), floor(ts + dur))` in whole microseconds, so a sub-microsecond event may get a
//!    zero or negative length.
//! 3. **Last-step filter** (`Trace._filter_irrelevant_gpu_kernels`, with
//!    `include_last_profiler_step=False`), only when at least two distinct event names contain
//!    `ProfilerStep`. "GPU" events are those with `stream >= 0` and `correlation >= 0`, and
//!    `Event Sync` / `Context Sync` (`GPUKernelFilter`, `hta/common/trace_filter.py`); all others
//!    are "CPU" events. `last = max(ts)` of the CPU events named `*ProfilerStep*` (a device-side
//!    `gpu_user_annotation` `ProfilerStep#N` has no `stream` argument, so it counts as a CPU
//!    event here). HTA keeps the CPU events with `ts < last`, and the GPU events whose
//!    `correlation` is that of a kept CPU event (an inner join on `correlation`).
//! 4. **Kernels** (`get_temporal_breakdown`): the kept events with `stream != -1`. Over their
//!    intervals merged as `merge_kernel_intervals` does (sorted by start; an interval joins the
//!    current group unless it starts after every earlier end):
//!    `kernel_time = last group end - first group start`,
//!    `idle = kernel_time - Σ (group end - group start)`,
//!    `compute = Σ group lengths of the COMPUTATION kernels merged alone`,
//!    `non_compute = kernel_time - compute - idle`; percentages are of `kernel_time`.
//! 5. **Kernel types** (`get_kernel_type`, `hta/utils/utils.py`): COMMUNICATION if the name
//!    matches `^nccl.*Kernel`; else MEMORY if it starts with `Memcpy`, `Memset` or `dma`; else
//!    COMPUTATION unless it matches `(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)` (contains
//!    `Memcpy` or `Sync`), which is OTHER. So `Stream Sync` / `Event Sync` records count as
//!    non-compute and `Stream Wait Event` records as compute, as in HTA.
//!
//! # How the stepcast `Trace` stands in for the file
//!
//! Events with a numeric `stream` are, in a Kineto trace, the device kernels, copies and
//! memsets (their lane's stream) and the `cuda_sync` records that name a stream (`Trace::syncs`
//! with a `stream`); `gpu_user_annotation` ranges carry no `stream` argument and are left out.
//! CPU events with a correlation are the runtime and driver calls. A trace is taken to have
//! floating-point timestamps when some start or end is off the whole-microsecond grid (times
//! are exact nanoseconds here; `baseTimeNanoseconds` is a whole number of microseconds in every
//! trace seen). Rounding is done in exact integers, where Python adds two `f64`s.
//!
//! Known differences, none met on the shared traces: a host `cpu_op` that carries an
//! `args.stream` (Triton launch records write `stream: 0`) counts as a kernel for HTA and not
//! here; a device task whose correlation stepcast recovered from a flow event (absent from its
//! `args`) is a CPU event for HTA's filter; records with a negative `dur` are dropped by the
//! reader. Where HTA fails (no kernels: an `IndexError`; a negative non-compute time after
//! rounding: an `AssertionError`), this returns the figures, or `None` without kernels.

use rustc_hash::FxHashSet;
use stepcast_trace::{Event, SyncEvent, SyncKind, Trace};

/// HTA's kernel classes (`hta.utils.utils.KernelType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelType {
    Communication,
    Memory,
    Computation,
    Other,
}

impl KernelType {
    pub fn as_str(self) -> &'static str {
        match self {
            KernelType::Communication => "communication",
            KernelType::Memory => "memory",
            KernelType::Computation => "computation",
            KernelType::Other => "other",
        }
    }
}

/// HTA's `get_kernel_type(name)`.
pub fn kernel_type(name: &str) -> KernelType {
    let nccl_kernel = name
        .strip_prefix("nccl")
        .is_some_and(|rest| rest.contains("Kernel"));
    if nccl_kernel {
        KernelType::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        KernelType::Memory
    } else if name.contains("Memcpy") || name.contains("Sync") {
        KernelType::Other
    } else {
        KernelType::Computation
    }
}

/// The name HTA reads for a `cuda_sync` record.
fn sync_name(kind: SyncKind) -> &'static str {
    match kind {
        SyncKind::EventSync => "Event Sync",
        SyncKind::StreamSync => "Stream Sync",
        SyncKind::ContextSync => "Context Sync",
        SyncKind::StreamWaitEvent => "Stream Wait Event",
    }
}

/// HTA's temporal breakdown of one rank. Times are nanoseconds (whole microseconds when HTA
/// rounds); `idle_ns + compute_ns + non_compute_ns == kernel_time_ns`.
#[derive(Clone, Debug, PartialEq)]
pub struct TemporalBreakdown {
    /// From the first kernel's start to the last kernel's end.
    pub kernel_time_ns: i64,
    /// Time within `kernel_time_ns` when no kernel runs.
    pub idle_ns: i64,
    /// Time when a COMPUTATION kernel runs.
    pub compute_ns: i64,
    /// The rest: only communication, memory or other kernels run.
    pub non_compute_ns: i64,
    pub idle_pct: f64,
    pub compute_pct: f64,
    pub non_compute_pct: f64,
    /// Intervals counted as kernels.
    pub kernels: u64,
    /// Whether HTA's last-step filter applied (two or more `ProfilerStep` names).
    pub last_step_excluded: bool,
    /// Whether times were rounded to whole microseconds, as HTA does for traces with
    /// fractional timestamps.
    pub microsecond_rounding: bool,
}

/// HTA's temporal breakdown of the whole trace (one rank). `None` when no kernel counts.
pub fn temporal_breakdown(trace: &Trace) -> Option<TemporalBreakdown> {
    let rounding = has_fractional_times(trace);
    let origin = trace.origin_ns;
    // [start, end) as HTA sees it, in absolute nanoseconds.
    let span = |start_ns: i64, dur_ns: i64| -> (i64, i64) {
        let (start, end) = (origin + start_ns, origin + start_ns + dur_ns);
        if rounding {
            (ceil_us(start), floor_us(end))
        } else {
            (start, end)
        }
    };
    let stream_of = |event: &Event| trace.lane(event.lane).tid;

    let step_names = profiler_step_names(trace);
    let filtered = step_names.distinct >= 2;

    let mut intervals: Vec<Interval> = Vec::new();
    let mut push = |start_ns: i64, dur_ns: i64, compute: bool| {
        let (start, end) = span(start_ns, dur_ns);
        intervals.push(Interval {
            start,
            end,
            compute,
        });
    };
    // Kernel names repeat: each is classified once.
    let mut computation: Vec<Option<bool>> = vec![None; trace.names.len()];
    let mut is_computation = |name: stepcast_trace::NameId| {
        *computation[name.index()]
            .get_or_insert_with(|| kernel_type(trace.name(name)) == KernelType::Computation)
    };
    let sync_is_computation =
        |kind: SyncKind| kernel_type(sync_name(kind)) == KernelType::Computation;
    let device_tasks = trace.events.iter().filter(|e| e.kind.is_device_task());
    let stream_syncs = trace.syncs.iter().filter(|s| s.stream.is_some());

    if filtered {
        // The start of the last step, as the latest `ProfilerStep` among "CPU" events.
        let marker_starts = trace.steps.iter().map(|s| span(s.start_ns, s.dur_ns).0);
        let named_starts = trace
            .events
            .iter()
            .filter(|e| !e.kind.is_device_task() && step_names.is_step_name(e))
            .map(|e| span(e.start_ns, e.dur_ns).0);
        let last = marker_starts.chain(named_starts).max()?;
        // Correlations of the CPU events HTA keeps (`ts < last`).
        let mut kept: FxHashSet<u64> = FxHashSet::default();
        for event in &trace.events {
            if let (true, Some(correlation)) = (event.kind.is_api_call(), event.correlation)
                && span(event.start_ns, event.dur_ns).0 < last
            {
                kept.insert(correlation.get());
            }
        }
        for sync in trace.syncs.iter().filter(|s| !is_gpu_sync(s)) {
            if span(sync.start_ns, sync.dur_ns).0 < last {
                kept.insert(sync.correlation);
            }
        }
        for event in device_tasks {
            let stream = stream_of(event);
            let keep = match event.correlation {
                // A "GPU" event: kept when its launch is.
                Some(correlation) if stream >= 0 => kept.contains(&correlation.get()),
                // A "CPU" event (no correlation, or a negative stream other than -1).
                _ => stream != -1 && span(event.start_ns, event.dur_ns).0 < last,
            };
            if keep {
                push(event.start_ns, event.dur_ns, is_computation(event.name));
            }
        }
        for sync in stream_syncs {
            if kept.contains(&sync.correlation) {
                push(sync.start_ns, sync.dur_ns, sync_is_computation(sync.kind));
            }
        }
    } else {
        for event in device_tasks.filter(|e| stream_of(e) != -1) {
            push(event.start_ns, event.dur_ns, is_computation(event.name));
        }
        for sync in stream_syncs {
            push(sync.start_ns, sync.dur_ns, sync_is_computation(sync.kind));
        }
    }

    // Pushed stream by stream, each in time order: a run-adaptive stable sort (equal keys are
    // equal intervals, so the order is the unstable sort's).
    intervals.sort_by_key(|i| (i.start, i.end, i.compute));
    let all = merge(intervals.iter())?;
    let compute = merge(intervals.iter().filter(|i| i.compute)).map_or(0, |m| m.covered);
    let kernel_time = all.last_end - all.first_start;
    if kernel_time <= 0 {
        return None;
    }
    let idle = kernel_time - all.covered;
    let non_compute = kernel_time - compute - idle;
    let pct = |ns: i64| 100.0 * ns as f64 / kernel_time as f64;
    Some(TemporalBreakdown {
        kernel_time_ns: kernel_time,
        idle_ns: idle,
        compute_ns: compute,
        non_compute_ns: non_compute,
        idle_pct: pct(idle),
        compute_pct: pct(compute),
        non_compute_pct: pct(non_compute),
        kernels: intervals.len() as u64,
        last_step_excluded: filtered,
        microsecond_rounding: rounding,
    })
}

/// `Event Sync` and `Context Sync` records are "GPU" events for HTA's filter whatever their
/// stream; other syncs are when they name a stream.
fn is_gpu_sync(sync: &SyncEvent) -> bool {
    sync.stream.is_some() || matches!(sync.kind, SyncKind::EventSync | SyncKind::ContextSync)
}

#[derive(Clone, Copy)]
struct Interval {
    start: i64,
    end: i64,
    compute: bool,
}

struct Merged {
    first_start: i64,
    last_end: i64,
    /// Σ (group end - group start).
    covered: i64,
}

/// `merge_kernel_intervals` over intervals sorted by start: a new group begins where an
/// interval starts after every earlier end; a group spans its first start to its latest end.
fn merge<'a>(intervals: impl Iterator<Item = &'a Interval>) -> Option<Merged> {
    let mut merged: Option<Merged> = None;
    let mut group = (0i64, 0i64);
    let mut latest_end = i64::MIN;
    for interval in intervals {
        match merged.as_mut() {
            None => {
                merged = Some(Merged {
                    first_start: interval.start,
                    last_end: interval.end,
                    covered: 0,
                });
                group = (interval.start, interval.end);
            }
            Some(m) => {
                if interval.start > latest_end {
                    m.covered += group.1 - group.0;
                    group = (interval.start, interval.end);
                } else {
                    group.1 = group.1.max(interval.end);
                }
            }
        }
        latest_end = latest_end.max(interval.end);
    }
    let mut m = merged?;
    m.covered += group.1 - group.0;
    m.last_end = group.1;
    Some(m)
}

/// The names containing `ProfilerStep` that HTA's symbol table would hold.
struct StepNames {
    distinct: usize,
    /// Interned names containing `ProfilerStep`, by name id.
    interned: Vec<bool>,
}

impl StepNames {
    fn is_step_name(&self, event: &Event) -> bool {
        self.interned
            .get(event.name.index())
            .copied()
            .unwrap_or(false)
    }
}

fn profiler_step_names(trace: &Trace) -> StepNames {
    let mut distinct: Vec<String> = trace
        .steps
        .iter()
        .map(|s| format!("ProfilerStep#{}", s.number))
        .collect();
    let mut interned = vec![false; trace.names.len()];
    for (i, flag) in interned.iter_mut().enumerate() {
        let name = trace.names.get(stepcast_trace::NameId(i as u32));
        if name.contains("ProfilerStep") {
            *flag = true;
            distinct.push(name.to_string());
        }
    }
    distinct.sort_unstable();
    distinct.dedup();
    StepNames {
        distinct: distinct.len(),
        interned,
    }
}

/// Whether some recorded time is off the whole-microsecond grid: HTA then reads `ts` as
/// floating point and rounds every event to whole microseconds.
fn has_fractional_times(trace: &Trace) -> bool {
    let off = |t: i64| (trace.origin_ns + t).rem_euclid(1_000) != 0;
    trace
        .events
        .iter()
        .any(|e| off(e.start_ns) || off(e.end_ns()))
        || trace
            .syncs
            .iter()
            .any(|s| off(s.start_ns) || off(s.start_ns + s.dur_ns))
        || trace
            .steps
            .iter()
            .any(|s| off(s.start_ns) || off(s.end_ns()))
}

fn ceil_us(ns: i64) -> i64 {
    ns.div_euclid(1_000) * 1_000 + if ns.rem_euclid(1_000) > 0 { 1_000 } else { 0 }
}

fn floor_us(ns: i64) -> i64 {
    ns.div_euclid(1_000) * 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_types_follow_hta() {
        let cases = [
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float",
                KernelType::Communication,
            ),
            ("ncclDevKernel_AllGather_RING_LL", KernelType::Communication),
            ("nccl:all_reduce", KernelType::Computation),
            ("Memcpy HtoD (Pageable -> Device)", KernelType::Memory),
            ("Memset (Device)", KernelType::Memory),
            ("dma_copy", KernelType::Memory),
            (
                "void at::native::vectorized_elementwise_kernel<4>",
                KernelType::Computation,
            ),
            ("Stream Sync", KernelType::Other),
            ("Event Sync", KernelType::Other),
            ("Stream Wait Event", KernelType::Computation),
            ("cudaMemcpyAsync", KernelType::Other),
        ];
        for (name, expected) in cases {
            assert_eq!(kernel_type(name), expected, "{name}");
        }
    }

    #[test]
    fn merges_like_merge_kernel_intervals() {
        let interval = |start, end| Interval {
            start,
            end,
            compute: true,
        };
        // Touching intervals join a group; a gap starts a new one.
        let list = [
            interval(0, 10),
            interval(10, 12),
            interval(5, 8),
            interval(20, 25),
        ];
        let mut sorted = list.to_vec();
        sorted.sort_unstable_by_key(|i| (i.start, i.end));
        let m = merge(sorted.iter()).expect("merged");
        assert_eq!((m.first_start, m.last_end, m.covered), (0, 25, 17));
        // A negative-length interval (after rounding) subtracts, as in HTA.
        let m = merge([interval(0, 10), interval(12, 11)].iter()).expect("merged");
        assert_eq!((m.last_end, m.covered), (11, 9));
    }

    #[test]
    fn rounds_to_whole_microseconds() {
        assert_eq!(ceil_us(1_500), 2_000);
        assert_eq!(ceil_us(2_000), 2_000);
        assert_eq!(floor_us(2_999), 2_000);
        assert_eq!(ceil_us(-1_500), -1_000);
        assert_eq!(floor_us(-1_500), -2_000);
    }
}
