//! What changed between two traces, per steady step: time by phase (host and device), by op
//! (host and device) and by kernel, before and after, each row classified new, gone, faster,
//! slower or the same.
//!
//! Every figure is a mean per steady step. Each table lists its [`TOP_ROWS`] largest changes
//! (by absolute delta, then by name), sums the rest into one row, and closes with a remainder
//! row, the step's mean span less everything listed, so that the table sums exactly to the
//! mean step before and after, and its deltas to the step's delta. For the phase tables the
//! remainder is the time the host (device) was idle; for ops and kernels it is the step's time
//! outside them, which is negative where concurrent threads or streams together ran longer
//! than the step.
//!
//! Phases come from the analysis's recorded breakdowns (`Breakdown::host_by_phase`,
//! `device_by_phase`: busy time, each moment given to one task). Device time by op and by
//! kernel is the recorded duration of the kernels, copies and memsets of the steady steps,
//! under the op the analyze mapping gives them. Host time by op is the recorded duration of
//! the outermost ops (`cpu_op` and `user_annotation` ranges inside no other op, the step
//! marker aside) that start inside a steady step's `ProfilerStep` range, on any host thread.

use std::collections::BTreeMap;

use stepcast_trace::{EventKind, LaneKind};

use super::{Side, StepTimes};
use crate::graph::{NO_STEP, TaskId};

/// Rows listed per table before the rest is summed.
pub const TOP_ROWS: usize = 15;

/// A change within this share of the before time is [`Status::Same`]: steady steps of one run
/// already differ by a few percent (the shared ResNet-50 pair's steady steps span -6 %..+7 %
/// of their median), so a smaller change is not evidence of anything.
pub const NOISE_FRACTION: f64 = 0.05;

/// A change of at most this many nanoseconds per step is [`Status::Same`] whatever its share:
/// a 10 µs kernel that takes 12 µs is not a finding.
pub const NOISE_FLOOR_NS: i64 = 10_000;

/// How a row changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Absent before (0 ns), present after.
    New,
    /// Present before, absent after.
    Gone,
    Faster,
    Slower,
    /// Within the noise threshold ([`NOISE_FRACTION`], [`NOISE_FLOOR_NS`]).
    Same,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Gone => "gone",
            Status::Faster => "faster",
            Status::Slower => "slower",
            Status::Same => "same",
        }
    }

    /// The status of a time that went from `before_ns` to `after_ns`.
    pub fn of(before_ns: i64, after_ns: i64) -> Status {
        let delta = after_ns - before_ns;
        if before_ns == 0 && after_ns != 0 {
            return Status::New;
        }
        if after_ns == 0 && before_ns != 0 {
            return Status::Gone;
        }
        let threshold = (NOISE_FRACTION * before_ns.abs() as f64).max(NOISE_FLOOR_NS as f64);
        if (delta.abs() as f64) <= threshold {
            Status::Same
        } else if delta < 0 {
            Status::Faster
        } else {
            Status::Slower
        }
    }
}

/// One row of a table: time per steady step before and after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffRow {
    pub name: String,
    /// Names summed into this row (1 for a listed name).
    pub count: usize,
    pub before_ns: i64,
    pub after_ns: i64,
    pub status: Status,
}

impl DiffRow {
    fn new(name: String, count: usize, before_ns: i64, after_ns: i64) -> DiffRow {
        DiffRow {
            name,
            count,
            before_ns,
            after_ns,
            status: Status::of(before_ns, after_ns),
        }
    }

    /// `after_ns - before_ns` (negative: less time after).
    pub fn delta_ns(&self) -> i64 {
        self.after_ns - self.before_ns
    }
}

/// A table of changes that sums to the mean step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffTable {
    /// The largest changes, by absolute delta then name; at most [`TOP_ROWS`].
    pub rows: Vec<DiffRow>,
    /// The other names, summed (`None` when every name is listed).
    pub others: Option<DiffRow>,
    /// The mean step less `rows` and `others` (idle time, or time outside every op or kernel).
    pub remainder: DiffRow,
    /// The mean steady step: the sum of the rows above.
    pub total: DiffRow,
}

impl DiffTable {
    /// The table of `before` and `after` (mean ns per step by name), closed by `remainder`
    /// up to the mean steps `before_total_ns` and `after_total_ns`.
    fn new(
        before: &BTreeMap<String, i64>,
        after: &BTreeMap<String, i64>,
        before_total_ns: i64,
        after_total_ns: i64,
        remainder: &str,
    ) -> DiffTable {
        let mut names: Vec<&String> = before.keys().chain(after.keys()).collect();
        names.sort();
        names.dedup();
        let mut rows: Vec<DiffRow> = names
            .into_iter()
            .map(|name| {
                let b = before.get(name).copied().unwrap_or(0);
                let a = after.get(name).copied().unwrap_or(0);
                DiffRow::new(name.clone(), 1, b, a)
            })
            .filter(|row| row.before_ns != 0 || row.after_ns != 0)
            .collect();
        rows.sort_by(|x, y| {
            y.delta_ns()
                .abs()
                .cmp(&x.delta_ns().abs())
                .then_with(|| x.name.cmp(&y.name))
        });
        let rest = if rows.len() > TOP_ROWS {
            rows.split_off(TOP_ROWS)
        } else {
            Vec::new()
        };
        let others = (!rest.is_empty()).then(|| {
            DiffRow::new(
                format!("({} others)", rest.len()),
                rest.len(),
                rest.iter().map(|r| r.before_ns).sum(),
                rest.iter().map(|r| r.after_ns).sum(),
            )
        });
        let listed =
            |f: fn(&DiffRow) -> i64| -> i64 { rows.iter().chain(others.iter()).map(f).sum() };
        let remainder = DiffRow::new(
            remainder.to_string(),
            0,
            before_total_ns - listed(|r| r.before_ns),
            after_total_ns - listed(|r| r.after_ns),
        );
        DiffTable {
            rows,
            others,
            remainder,
            total: DiffRow::new("step".to_string(), 0, before_total_ns, after_total_ns),
        }
    }
}

/// What changed between two traces, per steady step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changes {
    /// Host-busy time by phase; remainder: host idle.
    pub phases_host: DiffTable,
    /// Device-busy time by phase; remainder: device idle.
    pub phases_device: DiffTable,
    /// Outermost ops' host time; remainder: host time outside them.
    pub ops_host: DiffTable,
    /// Device time by the op that launched it; remainder: the step less that time.
    pub ops_device: DiffTable,
    /// Device time by kernel (copy, memset) name; remainder: the step less that time.
    pub kernels: DiffTable,
}

/// Per-step means by name on one side.
struct Means {
    phases_host: BTreeMap<String, i64>,
    phases_device: BTreeMap<String, i64>,
    ops_host: BTreeMap<String, i64>,
    ops_device: BTreeMap<String, i64>,
    kernels: BTreeMap<String, i64>,
}

impl Changes {
    pub(super) fn new(
        before: &Side<'_>,
        before_steps: &StepTimes,
        after: &Side<'_>,
        after_steps: &StepTimes,
    ) -> Changes {
        let b = means(before, before_steps);
        let a = means(after, after_steps);
        let table = |x: &BTreeMap<String, i64>, y: &BTreeMap<String, i64>, rest: &str| {
            DiffTable::new(x, y, before_steps.mean_ns, after_steps.mean_ns, rest)
        };
        Changes {
            phases_host: table(&b.phases_host, &a.phases_host, "(host idle)"),
            phases_device: table(&b.phases_device, &a.phases_device, "(device idle)"),
            ops_host: table(&b.ops_host, &a.ops_host, "(outside ops)"),
            ops_device: table(&b.ops_device, &a.ops_device, "(not device time)"),
            kernels: table(&b.kernels, &a.kernels, "(not device time)"),
        }
    }
}

/// Sums over the steady steps, divided by their count at the end (rounding once).
#[derive(Default)]
struct Sums(BTreeMap<String, i128>);

impl Sums {
    fn add(&mut self, name: &str, ns: i64) {
        if let Some(sum) = self.0.get_mut(name) {
            *sum += i128::from(ns);
        } else {
            self.0.insert(name.to_string(), i128::from(ns));
        }
    }

    fn means(self, steps: usize) -> BTreeMap<String, i64> {
        let n = steps.max(1) as i128;
        self.0
            .into_iter()
            .map(|(name, sum)| (name, (sum / n) as i64))
            .collect()
    }
}

fn means(side: &Side<'_>, steps: &StepTimes) -> Means {
    let (trace, window, analysis) = (side.trace, side.window, side.analysis);
    let mut phases_host = Sums::default();
    let mut phases_device = Sums::default();
    for &s in &steps.indices {
        // `breakdowns.steps` has one breakdown per window step, in order.
        let Some(breakdown) = analysis.breakdowns.steps.get(s) else {
            continue;
        };
        for &(phase, ns) in &breakdown.host_by_phase.busy {
            phases_host.add(phase.as_str(), ns);
        }
        for &(phase, ns) in &breakdown.device_by_phase.busy {
            phases_device.add(phase.as_str(), ns);
        }
    }

    let graph = &window.graph;
    let mut is_steady = vec![false; window.steps.len()];
    for &s in &steps.indices {
        is_steady[s] = true;
    }
    let mut ops_device = Sums::default();
    let mut kernels = Sums::default();
    for (t, &step) in graph.step.iter().enumerate() {
        if step == NO_STEP || !is_steady.get(step as usize).copied().unwrap_or(false) {
            continue;
        }
        if !graph.kind[t].on_device() {
            continue;
        }
        let task = TaskId(t as u32);
        let dur_ns = graph.dur_ns[t];
        kernels.add(trace.name(graph.name[t]), dur_ns);
        match analysis.mapping.op_name(trace, task) {
            Some(op) => ops_device.add(trace.name(op), dur_ns),
            None => ops_device.add("(no op)", dur_ns),
        }
    }

    let mut ops_host = Sums::default();
    let ranges: Vec<(i64, i64)> = steps
        .indices
        .iter()
        .map(|&s| (window.steps[s].start_ns, window.steps[s].marker_end_ns))
        .collect();
    for (e, event) in trace.events.iter().enumerate() {
        if !is_op(event.kind, trace.name(event.name)) {
            continue;
        }
        if trace.lanes[event.lane.index()].kind != LaneKind::CpuThread {
            continue;
        }
        if !ranges
            .iter()
            .any(|&(start, end)| event.start_ns >= start && event.start_ns < end)
        {
            continue;
        }
        if is_outermost(side, e) {
            ops_host.add(trace.name(event.name), event.dur_ns);
        }
    }

    let n = steps.indices.len();
    Means {
        phases_host: phases_host.means(n),
        phases_device: phases_device.means(n),
        ops_host: ops_host.means(n),
        ops_device: ops_device.means(n),
        kernels: kernels.means(n),
    }
}

/// An op for the host table: a `cpu_op` or a `user_annotation` other than a step marker.
fn is_op(kind: EventKind, name: &str) -> bool {
    matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation)
        && !name.starts_with("ProfilerStep#")
}

/// No op encloses trace event `e` (Python frames and the step marker do not count).
fn is_outermost(side: &Side<'_>, e: usize) -> bool {
    let (trace, parents) = (side.trace, &side.analysis.mapping.parent);
    let mut parent = parents.get(e).copied().flatten();
    // A parent chain is finite (each parent encloses its child), but bound the walk anyway.
    for _ in 0..trace.events.len() {
        let Some(p) = parent else {
            return true;
        };
        let event = &trace.events[p.index()];
        if is_op(event.kind, trace.name(event.name)) {
            return false;
        }
        parent = parents.get(p.index()).copied().flatten();
    }
    true
}
