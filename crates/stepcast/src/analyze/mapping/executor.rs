//! Executor calls that run work on behalf of another thread. MTIA's inference runtime runs a
//! model's forward pass on an executor thread inside a runtime call named
//! `predictor_executor::run gif_thread_id:N`, and the device work is launched by calls directly
//! inside it, with no op, annotation or Python frame of their own around them. Thread `N`, the
//! one named, sits meanwhile in the range that requested the run (an annotation such as
//! `Stage::FBAPredictorExecutor-run-merge.forward`). That range is the stack the launches
//! belong to: the calls at the top of the executor call take it as their parent.
//!
//! Measured on HolisticTraceAnalysis' `mtia_inference_rank_0` trace: 342 ms of device work (879
//! tasks) launched inside 140 such calls, every one of them enclosed in time by a range of the
//! thread it names.

use rustc_hash::FxHashMap;
use stepcast_trace::{Event, EventId, LaneId, LaneKind, Trace};

use super::stacks::is_container;

/// What names the requesting thread in an executor call's name.
const THREAD_MARK: &str = "gif_thread_id:";

/// The thread an executor call runs for, if its name says so.
fn requester_tid(name: &str) -> Option<i64> {
    let (_, rest) = name.split_once(THREAD_MARK)?;
    let digits = rest.trim_start();
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Events of each host lane, as a range of indices into `trace.events` (sorted by lane).
fn lane_ranges(trace: &Trace) -> FxHashMap<LaneId, std::ops::Range<usize>> {
    let mut ranges = FxHashMap::default();
    let events = &trace.events;
    let mut start = 0;
    while start < events.len() {
        let lane = events[start].lane;
        let end = start + events[start..].partition_point(|e| e.lane == lane);
        ranges.insert(lane, start..end);
        start = end;
    }
    ranges
}

fn encloses_time(container: &Event, time_ns: i64) -> bool {
    container.start_ns <= time_ns && time_ns < container.end_ns()
}

/// The innermost container on the events `lane` (a range of `trace.events`) around `time_ns`.
fn innermost_at(
    events: &[Event],
    lane: &std::ops::Range<usize>,
    parent: &[Option<EventId>],
    time_ns: i64,
) -> Option<usize> {
    let last = lane.start + events[lane.clone()].partition_point(|e| e.start_ns <= time_ns);
    let mut candidate = last.checked_sub(1).filter(|&i| i >= lane.start);
    if let Some(i) = candidate
        && !is_container(events[i].kind)
    {
        candidate = parent[i].map(EventId::index);
    }
    while let Some(i) = candidate {
        if encloses_time(&events[i], time_ns) {
            return Some(i);
        }
        candidate = parent[i].map(EventId::index);
    }
    None
}

/// Gives the events at the top of every executor call (and the call itself) the innermost
/// container of the thread it runs for, around the call's start, as their parent. A link that
/// would close a cycle of parents is not made.
pub(super) fn link_executor_calls(trace: &Trace, parent: &mut [Option<EventId>]) {
    let events = &trace.events;
    // Names are read once each: a trace makes tens of thousands of calls under a few names.
    let mut tid_of_name: Vec<Option<Option<i64>>> = vec![None; trace.names.len()];
    let calls: Vec<(usize, i64)> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| event.kind.is_api_call())
        .filter_map(|(i, event)| {
            let tid = *tid_of_name[event.name.index()]
                .get_or_insert_with(|| requester_tid(trace.name(event.name)));
            tid.map(|tid| (i, tid))
        })
        .collect();
    if calls.is_empty() {
        return;
    }
    let mut thread_lane: FxHashMap<(i64, i64), LaneId> = FxHashMap::default();
    for (i, lane) in trace.lanes.iter().enumerate() {
        if lane.kind == LaneKind::CpuThread {
            thread_lane.insert((lane.pid, lane.tid), LaneId(i as u32));
        }
    }
    let ranges = lane_ranges(trace);
    let mut links = Vec::new();
    for (i, tid) in calls {
        let event = &events[i];
        let own = trace.lane(event.lane);
        let Some(requester) = thread_lane
            .get(&(own.pid, tid))
            .filter(|&&lane| lane != event.lane)
            .and_then(|lane| ranges.get(lane))
        else {
            continue;
        };
        if let Some(container) = innermost_at(events, requester, parent, event.start_ns) {
            links.push((i, container));
        }
    }
    for (call, container) in links {
        let executor = &events[call];
        let inside = |j: usize| {
            events[j].lane == executor.lane
                && executor.start_ns <= events[j].start_ns
                && events[j].start_ns < executor.end_ns()
        };
        // The container's own chain must not lead back into the executor call.
        let mut up = Some(container);
        while let Some(j) = up {
            if j == call || inside(j) {
                break;
            }
            up = parent[j].map(EventId::index);
        }
        if up.is_some() {
            continue;
        }
        let link = Some(EventId(container as u32));
        if parent[call].is_none() {
            parent[call] = link;
        }
        for j in call + 1..events.len() {
            if !inside(j) {
                break;
            }
            if parent[j].is_none() {
                parent[j] = link;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::requester_tid;

    #[test]
    fn the_requesting_thread_is_read_from_the_name() {
        assert_eq!(
            requester_tid("predictor_executor::run gif_thread_id:1457"),
            Some(1457)
        );
        assert_eq!(requester_tid("predictor_executor::run"), None);
        assert_eq!(requester_tid("x gif_thread_id:abc"), None);
    }
}
