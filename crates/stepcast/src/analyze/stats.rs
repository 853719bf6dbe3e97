//! Statistics of the recorded window (Zins & Dagenais Table I, and beyond): the top kernels
//! and ops by total time, queueing latency per kernel, kernels per launch API, and the
//! step-to-step variability.
//!
//! Durations are recorded durations. Standard deviations are sample standard deviations
//! (`n - 1`, pandas' and HTA's default), 0 for a single value. Every list is in a fixed order:
//! by total time, longest first, then by name.

use rustc_hash::FxHashMap;
use stepcast_trace::{EventId, EventKind, NameId, Trace};

use crate::Window;
use crate::graph::{NO_STEP, TaskKind};
use crate::replay::{measured_span, steady_steps, tasks_by_step};

use super::launches::launch_calls;

/// The median of `values` (the lower-middle average, rounded down, for an even count: an
/// integer, deterministic), reordering them; 0 for none.
pub fn median_ns(values: &mut [i64]) -> i64 {
    values.sort_unstable();
    let n = values.len();
    match n {
        0 => 0,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]).div_euclid(2),
    }
}

/// Count, total, mean, standard deviation, minimum and maximum of a set of durations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DurationStats {
    pub count: u64,
    pub total_ns: i64,
    pub mean_ns: f64,
    /// Sample standard deviation (`n - 1`); 0 when `count < 2`.
    pub std_ns: f64,
    pub min_ns: i64,
    pub max_ns: i64,
}

impl DurationStats {
    /// Of the values in `values`.
    pub fn of(values: impl IntoIterator<Item = i64>) -> DurationStats {
        let mut acc = Accumulator::default();
        for v in values {
            acc.add(v);
        }
        acc.stats()
    }

    /// Coefficient of variation (`std / mean`); 0 when the mean is 0.
    pub fn cv(&self) -> f64 {
        if self.mean_ns == 0.0 {
            0.0
        } else {
            self.std_ns / self.mean_ns
        }
    }
}

/// Exact running sums (`i128`: a million values of a second each, squared, still fit).
#[derive(Clone, Copy, Default)]
struct Accumulator {
    count: u64,
    sum: i128,
    sum_sq: i128,
    min: i64,
    max: i64,
}

impl Accumulator {
    fn add(&mut self, v: i64) {
        if self.count == 0 {
            self.min = v;
            self.max = v;
        } else {
            self.min = self.min.min(v);
            self.max = self.max.max(v);
        }
        self.count += 1;
        self.sum += v as i128;
        self.sum_sq += (v as i128) * (v as i128);
    }

    fn stats(&self) -> DurationStats {
        if self.count == 0 {
            return DurationStats::default();
        }
        let n = self.count as i128;
        let std_ns = if self.count < 2 {
            0.0
        } else {
            let numerator = n * self.sum_sq - self.sum * self.sum;
            (numerator as f64 / (n * (n - 1)) as f64).max(0.0).sqrt()
        };
        DurationStats {
            count: self.count,
            total_ns: self.sum as i64,
            mean_ns: self.sum as f64 / self.count as f64,
            std_ns,
            min_ns: self.min,
            max_ns: self.max,
        }
    }
}

/// The time spent in one kernel or op name.
#[derive(Clone, Debug, PartialEq)]
pub struct NameStats {
    pub name: NameId,
    /// Over every instance in the window.
    pub instances: DurationStats,
    /// Over the window's steps: the total time of this name in each step (0 where it did not
    /// run), one value per step. A kernel belongs to the step that launched it; an op to the
    /// step whose range holds its start.
    pub per_step: DurationStats,
}

/// Queueing latency of one kernel name: from the start of the call that launched each
/// instance to the instance's start on the device.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueLatency {
    pub name: NameId,
    pub latency: DurationStats,
}

/// Device work launched through one API.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchApi {
    /// The launching call's name (`cudaLaunchKernel`, `cudaGraphLaunch`, `cuLaunchKernel`,
    /// `hipLaunchKernel`, `cudaMemcpyAsync`...); `None` for device work whose launch is not in
    /// the trace.
    pub api: Option<NameId>,
    pub calls: u64,
    pub device_tasks: u64,
    pub device_ns: i64,
}

impl LaunchApi {
    pub fn tasks_per_call(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.device_tasks as f64 / self.calls as f64
        }
    }
}

/// How much the steps' recorded spans vary.
#[derive(Clone, Debug, PartialEq)]
pub struct StepVariability {
    /// `(N of ProfilerStep#N, measured span)` per step, in step order; the span is the
    /// replay's `measured_ns`.
    pub spans_ns: Vec<(u64, i64)>,
    pub all: DurationStats,
    /// Over the steady-state steps (`replay::steady_steps`).
    pub steady: DurationStats,
}

/// Every statistic of this module.
#[derive(Clone, Debug, PartialEq)]
pub struct Statistics {
    pub top_kernels: Vec<NameStats>,
    pub top_ops: Vec<NameStats>,
    pub queue_latency: Vec<QueueLatency>,
    pub launch_apis: Vec<LaunchApi>,
    pub steps: StepVariability,
}

/// All statistics; `top` bounds the kernel, op and latency lists.
pub fn statistics(trace: &Trace, window: &Window, top: usize) -> Statistics {
    let launch_calls = launch_calls(trace, &window.graph);
    statistics_with(trace, window, top, &launch_calls)
}

/// [`statistics`], given each task's launching call by correlation (`launches::launch_calls`).
pub(crate) fn statistics_with(
    trace: &Trace,
    window: &Window,
    top: usize,
    launch_calls: &[Option<EventId>],
) -> Statistics {
    let mut queue = queue_latency_with(trace, window, launch_calls);
    queue.truncate(top);
    Statistics {
        top_kernels: top_kernels(trace, window, top),
        top_ops: top_ops(trace, window, top),
        queue_latency: queue,
        launch_apis: launch_apis_with(trace, window, launch_calls),
        steps: step_variability(window),
    }
}

/// Kernels (computation and collectives) by name, at most `top` of them.
pub fn top_kernels(trace: &Trace, window: &Window, top: usize) -> Vec<NameStats> {
    let g = &window.graph;
    let mut by_name = ByName::new(window.steps.len());
    for t in 0..g.task_count() {
        if matches!(g.kind[t], TaskKind::Kernel | TaskKind::Collective) {
            let step = g.step[t];
            let step = (step != NO_STEP).then_some(step as usize);
            by_name.add(g.name[t], g.rec_end_ns[t] - g.rec_start_ns[t], step);
        }
    }
    by_name.finish(trace, top)
}

/// Ops (`cpu_op` events, inclusive of the ops they call) by name, at most `top` of them.
pub fn top_ops(trace: &Trace, window: &Window, top: usize) -> Vec<NameStats> {
    let starts: Vec<i64> = window.steps.iter().map(|s| s.start_ns).collect();
    // As the graph assigns host tasks to steps.
    let step_at = |t: i64| -> Option<usize> {
        let i = starts.partition_point(|&s| s <= t).checked_sub(1)?;
        let step = &window.steps[i];
        (t < step.marker_end_ns || step.synthetic && t <= step.marker_end_ns).then_some(i)
    };
    let mut by_name = ByName::new(window.steps.len());
    for event in trace.events.iter().filter(|e| e.kind == EventKind::CpuOp) {
        by_name.add(event.name, event.dur_ns, step_at(event.start_ns));
    }
    by_name.finish(trace, top)
}

/// Queueing latency by kernel (and copy, memset) name: instance start minus the start of its
/// launching call, for device work whose launching call is in the trace. By total latency.
pub fn queue_latency(trace: &Trace, window: &Window) -> Vec<QueueLatency> {
    queue_latency_with(trace, window, &launch_calls(trace, &window.graph))
}

/// Device work by the API that launched it: calls, tasks and device time. By device tasks,
/// most first, then by name (`None` last).
pub fn launch_apis(trace: &Trace, window: &Window) -> Vec<LaunchApi> {
    launch_apis_with(trace, window, &launch_calls(trace, &window.graph))
}

/// The steps' measured spans and their variability.
pub fn step_variability(window: &Window) -> StepVariability {
    let g = &window.graph;
    let by_step = tasks_by_step(g, window.steps.len());
    let spans_ns: Vec<(u64, i64)> = window
        .steps
        .iter()
        .zip(&by_step)
        .map(|(step, tasks)| (step.number, measured_span(g, step, tasks)))
        .collect();
    let steady = steady_steps(window);
    StepVariability {
        all: DurationStats::of(spans_ns.iter().map(|&(_, ns)| ns)),
        steady: DurationStats::of(steady.iter().map(|&i| spans_ns[i].1)),
        spans_ns,
    }
}

fn queue_latency_with(
    trace: &Trace,
    window: &Window,
    launch_calls: &[Option<EventId>],
) -> Vec<QueueLatency> {
    let g = &window.graph;
    let mut by_name: FxHashMap<NameId, Accumulator> = FxHashMap::default();
    for t in 0..g.task_count() {
        if !g.kind[t].on_device() {
            continue;
        }
        let Some(call) = launch_calls[t] else {
            continue;
        };
        let latency = g.rec_start_ns[t] - trace.events[call.index()].start_ns;
        by_name.entry(g.name[t]).or_default().add(latency);
    }
    let mut out: Vec<QueueLatency> = by_name
        .into_iter()
        .map(|(name, acc)| QueueLatency {
            name,
            latency: acc.stats(),
        })
        .collect();
    out.sort_unstable_by(|a, b| {
        b.latency
            .total_ns
            .cmp(&a.latency.total_ns)
            .then_with(|| trace.name(a.name).cmp(trace.name(b.name)))
    });
    out
}

fn launch_apis_with(
    trace: &Trace,
    window: &Window,
    launch_calls: &[Option<EventId>],
) -> Vec<LaunchApi> {
    let g = &window.graph;
    // API name → (distinct calls, device tasks, device time).
    let mut by_api: FxHashMap<Option<NameId>, (Vec<EventId>, u64, i64)> = FxHashMap::default();
    for t in 0..g.task_count() {
        if !g.kind[t].on_device() {
            continue;
        }
        let call = launch_calls[t];
        let api = call.map(|c| trace.events[c.index()].name);
        let entry = by_api.entry(api).or_default();
        entry.0.extend(call);
        entry.1 += 1;
        entry.2 += g.rec_end_ns[t] - g.rec_start_ns[t];
    }
    let mut out: Vec<LaunchApi> = by_api
        .into_iter()
        .map(|(api, (mut calls, device_tasks, device_ns))| {
            calls.sort_unstable();
            calls.dedup();
            LaunchApi {
                api,
                calls: calls.len() as u64,
                device_tasks,
                device_ns,
            }
        })
        .collect();
    let name = |api: Option<NameId>| api.map(|n| trace.name(n));
    out.sort_unstable_by(|a, b| {
        b.device_tasks
            .cmp(&a.device_tasks)
            .then_with(|| a.api.is_none().cmp(&b.api.is_none()))
            .then_with(|| name(a.api).cmp(&name(b.api)))
    });
    out
}

/// Per-name accumulators of instance durations and per-step totals.
struct ByName {
    steps: usize,
    names: FxHashMap<NameId, (Accumulator, Vec<i64>)>,
}

impl ByName {
    fn new(steps: usize) -> Self {
        ByName {
            steps,
            names: FxHashMap::default(),
        }
    }

    fn add(&mut self, name: NameId, dur_ns: i64, step: Option<usize>) {
        let steps = self.steps;
        let (acc, per_step) = self
            .names
            .entry(name)
            .or_insert_with(|| (Accumulator::default(), vec![0; steps]));
        acc.add(dur_ns);
        if let Some(slot) = step.and_then(|s| per_step.get_mut(s)) {
            *slot += dur_ns;
        }
    }

    fn finish(self, trace: &Trace, top: usize) -> Vec<NameStats> {
        let mut out: Vec<NameStats> = self
            .names
            .into_iter()
            .map(|(name, (acc, per_step))| NameStats {
                name,
                instances: acc.stats(),
                per_step: DurationStats::of(per_step),
            })
            .collect();
        out.sort_unstable_by(|a, b| {
            b.instances
                .total_ns
                .cmp(&a.instances.total_ns)
                .then_with(|| trace.name(a.name).cmp(trace.name(b.name)))
        });
        out.truncate(top);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_stats_match_the_textbook() {
        let s = DurationStats::of([2, 4, 4, 4, 5, 5, 7, 9]);
        assert_eq!((s.count, s.total_ns, s.min_ns, s.max_ns), (8, 40, 2, 9));
        assert_eq!(s.mean_ns, 5.0);
        // Sample variance: 32 / 7.
        assert!((s.std_ns - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(DurationStats::of([3]).std_ns, 0.0);
        assert_eq!(DurationStats::of([]).count, 0);
        assert!((DurationStats::of([10, 20, 30]).cv() - 0.5).abs() < 1e-12);
    }
}
