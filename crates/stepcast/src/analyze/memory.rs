//! Memory over time, per device, from the profiler's memory events (`profile_memory=True`),
//! and the peak attributed to what ran when it was reached.
//!
//! The allocated bytes after each event are the allocator's `Total Allocated` when recorded,
//! otherwise the previous value plus the event's signed `Bytes`. The peak is the largest
//! allocated value, the first time it is reached. It is attributed to:
//!
//! - the **op**: the innermost `cpu_op` on the allocating thread whose range `[start, end)`
//!   holds the peak's time (a zero-length op holds its own instant), with its enclosing ops;
//! - the **task**, **phase** and **layer**: the graph's host task on that thread that holds the
//!   peak's time; otherwise, within the op's outermost range, the next task (an allocation
//!   usually prepares the launch that follows it), else the one before; its phase and layer
//!   from the [`Mapping`].

use stepcast_trace::{EventId, EventKind, LaneId, NameId, Trace};

use super::mapping::{Mapping, Phase};
use crate::Window;
use crate::graph::TaskId;

/// Allocated memory after one memory event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPoint {
    pub time_ns: i64,
    pub allocated_bytes: i64,
    pub reserved_bytes: Option<i64>,
    /// The event's signed change.
    pub delta_bytes: i64,
}

/// The most memory allocated on a device, and what was running then.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPeak {
    pub time_ns: i64,
    pub allocated_bytes: i64,
    pub reserved_bytes: Option<i64>,
    /// Index of the memory event in `Trace::memory`.
    pub memory_event: usize,
    /// The allocating thread, if it has a lane.
    pub lane: Option<LaneId>,
    /// The innermost `cpu_op` holding the peak's time on that thread.
    pub op: Option<EventId>,
    /// The ops holding the peak's time, outermost first (ends with `op`).
    pub op_stack: Vec<EventId>,
    /// The host task the phase and layer come from.
    pub task: Option<TaskId>,
    pub phase: Option<Phase>,
    pub layer: Option<NameId>,
}

/// One device's memory over the window.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceMemory {
    /// The device index; `-1` for host memory.
    pub device: i64,
    /// One point per memory event, in time order.
    pub timeline: Vec<MemoryPoint>,
    pub peak: MemoryPeak,
    pub allocations: u64,
    pub frees: u64,
    /// The largest reserved (cached) bytes recorded, if any.
    pub max_reserved_bytes: Option<i64>,
}

/// Memory timelines and peaks of every device with memory events, host (`-1`) first.
pub fn memory(trace: &Trace, window: &Window, mapping: &Mapping) -> Vec<DeviceMemory> {
    let mut devices: Vec<i64> = trace.memory.iter().map(|m| m.device).collect();
    devices.sort_unstable();
    devices.dedup();
    devices
        .into_iter()
        .filter_map(|device| device_memory(trace, window, mapping, device))
        .collect()
}

fn device_memory(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
    device: i64,
) -> Option<DeviceMemory> {
    let mut timeline = Vec::new();
    let mut allocated = 0i64;
    let (mut allocations, mut frees) = (0u64, 0u64);
    let mut max_reserved: Option<i64> = None;
    // (allocated, index into trace.memory), first maximum.
    let mut peak: Option<(i64, usize)> = None;
    for (i, m) in trace.memory.iter().enumerate() {
        if m.device != device {
            continue;
        }
        allocated = m.total_allocated.unwrap_or(allocated + m.bytes);
        match m.bytes.signum() {
            1 => allocations += 1,
            -1 => frees += 1,
            _ => {}
        }
        if let Some(reserved) = m.total_reserved {
            max_reserved = Some(max_reserved.map_or(reserved, |r| r.max(reserved)));
        }
        if peak.is_none_or(|(best, _)| allocated > best) {
            peak = Some((allocated, i));
        }
        timeline.push(MemoryPoint {
            time_ns: m.time_ns,
            allocated_bytes: allocated,
            reserved_bytes: m.total_reserved,
            delta_bytes: m.bytes,
        });
    }
    let (allocated_bytes, index) = peak?;
    let event = &trace.memory[index];
    let op_stack = event
        .lane
        .map(|lane| OpLookup::new(trace, lane).stack_at(event.time_ns))
        .unwrap_or_default();
    let outermost = op_stack.first().map(|op| {
        let op = &trace.events[op.index()];
        (op.start_ns, op.end_ns())
    });
    let task = event
        .lane
        .and_then(|lane| host_task_at(window, lane, event.time_ns, outermost));
    Some(DeviceMemory {
        device,
        timeline,
        peak: MemoryPeak {
            time_ns: event.time_ns,
            allocated_bytes,
            reserved_bytes: event.total_reserved,
            memory_event: index,
            lane: event.lane,
            op: op_stack.last().copied(),
            op_stack,
            task,
            phase: task.and_then(|t| mapping.phase.get(t.index()).copied()),
            layer: task.and_then(|t| mapping.layer.get(t.index()).copied().flatten()),
        },
        allocations,
        frees,
        max_reserved_bytes: max_reserved,
    })
}

/// The `cpu_op` events of one thread with their nesting: answers "which ops hold time `t`"
/// with a binary search and a walk up the (shallow) nesting.
pub struct OpLookup {
    /// Trace event ids of the lane's ops, in the trace's order (start, longest first).
    ops: Vec<EventId>,
    starts: Vec<i64>,
    ends: Vec<i64>,
    /// The enclosing op of each op (an index into `ops`).
    parent: Vec<Option<u32>>,
}

impl OpLookup {
    pub fn new(trace: &Trace, lane: LaneId) -> OpLookup {
        let lo = trace.events.partition_point(|e| e.lane < lane);
        let mut lookup = OpLookup {
            ops: Vec::new(),
            starts: Vec::new(),
            ends: Vec::new(),
            parent: Vec::new(),
        };
        let mut stack: Vec<u32> = Vec::new();
        for (offset, event) in trace.lane_events(lane).iter().enumerate() {
            if event.kind != EventKind::CpuOp {
                continue;
            }
            let (start, end) = (event.start_ns, event.end_ns());
            while let Some(&top) = stack.last() {
                if lookup.holds(top as usize, start) && end <= lookup.ends[top as usize].max(start)
                {
                    break;
                }
                stack.pop();
            }
            let index = lookup.ops.len() as u32;
            lookup.parent.push(stack.last().copied());
            lookup.ops.push(EventId((lo + offset) as u32));
            lookup.starts.push(start);
            lookup.ends.push(end);
            stack.push(index);
        }
        lookup
    }

    fn holds(&self, i: usize, t: i64) -> bool {
        self.starts[i] <= t
            && (t < self.ends[i] || self.starts[i] == self.ends[i] && t == self.starts[i])
    }

    /// The ops holding time `t`, outermost first.
    pub fn stack_at(&self, t: i64) -> Vec<EventId> {
        // The latest op to start at or before `t`; the innermost holder is it or an ancestor.
        let k = self.starts.partition_point(|&s| s <= t);
        let mut at = k.checked_sub(1);
        let mut stack = Vec::new();
        while let Some(i) = at {
            if self.holds(i, t) {
                stack.push(self.ops[i]);
            }
            at = self.parent[i].map(|p| p as usize);
        }
        // Every op holding `t` encloses the latest op to start by `t`, so the walk meets them
        // all (ops nest properly on a thread).
        stack.reverse();
        stack
    }
}

/// The graph's host task on `lane` that holds `t`; else, within `range`, the next task, else
/// the previous one.
fn host_task_at(
    window: &Window,
    lane: LaneId,
    t: i64,
    range: Option<(i64, i64)>,
) -> Option<TaskId> {
    let g = &window.graph;
    let graph_lane = g.lanes.iter().find(|l| l.trace_lane == lane)?;
    let first = graph_lane.first_task as usize;
    let end = first + graph_lane.task_count as usize;
    let starts = &g.rec_start_ns[first..end];
    let k = starts.partition_point(|&s| s <= t);
    let previous = k.checked_sub(1).map(|i| first + i);
    let next = (first + k < end).then_some(first + k);
    if let Some(p) = previous.filter(|&p| t < g.rec_end_ns[p]) {
        return Some(TaskId(p as u32));
    }
    let within = |task: usize| range.is_some_and(|(s, e)| (s..=e).contains(&g.rec_start_ns[task]));
    next.filter(|&n| within(n))
        .or(previous)
        .or(next)
        .map(|i| TaskId(i as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::one_thread::{op, trace as one_thread};

    #[test]
    fn finds_the_innermost_op_holding_a_time() {
        let mut trace = one_thread();
        // outer [0, 100) holds a [10, 20) and b [30, 60), which holds c [40, 50).
        op(&mut trace, "outer", 0, 100);
        op(&mut trace, "a", 10, 10);
        op(&mut trace, "b", 30, 30);
        op(&mut trace, "c", 40, 10);
        op(&mut trace, "d", 70, 0);
        let lookup = OpLookup::new(&trace, LaneId(0));
        let names = |t: i64| -> Vec<&str> {
            lookup
                .stack_at(t)
                .iter()
                .map(|e| trace.name(trace.events[e.index()].name))
                .collect()
        };
        assert_eq!(names(45), ["outer", "b", "c"]);
        assert_eq!(names(50), ["outer", "b"]);
        assert_eq!(names(25), ["outer"]);
        assert_eq!(names(10), ["outer", "a"]);
        assert_eq!(names(70), ["outer", "d"]);
        assert_eq!(names(100), Vec::<&str>::new());
        assert_eq!(names(-1), Vec::<&str>::new());
    }
}
