//! What a thread was inside at each moment: the innermost of its recorded events (an op, a
//! runtime call, an annotation, a Python frame) at every instant, so a stretch of its time can
//! be split by what it was spent in. `step_time` names a data-loading stretch this way: the
//! loader's own work (`<built-in function zoom_shift>` inside
//! `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`), not the call after it.

use stepcast_trace::{EventId, LaneId, Trace};

/// One thread's time as disjoint stretches, each with the innermost event around it (`None`:
/// inside no event).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InnermostTimeline {
    /// `(start, end, innermost)`, in order, disjoint.
    segments: Vec<(i64, i64, Option<EventId>)>,
}

impl InnermostTimeline {
    /// The timeline of `lane`'s events. Events are nested on a thread; one that outlasts the
    /// event around it (a malformed trace) is cut at that event's end.
    pub fn of_lane(trace: &Trace, lane: LaneId) -> InnermostTimeline {
        let first = trace.events.partition_point(|e| e.lane < lane);
        let mut segments = Vec::new();
        let mut emit = |from: i64, to: i64, id: Option<EventId>| {
            if to > from {
                segments.push((from, to, id));
            }
        };
        // Open events, innermost last: (end, id).
        let mut open: Vec<(i64, EventId)> = Vec::new();
        // Where the emitted stretches end (`None` before the first event).
        let mut at: Option<i64> = None;
        for (k, event) in trace.lane_events(lane).iter().enumerate() {
            if event.dur_ns <= 0 {
                continue;
            }
            let start = event.start_ns;
            while let Some(&(end, id)) = open.last().filter(|&&(end, _)| end <= start) {
                if let Some(from) = at {
                    emit(from, end, Some(id));
                    at = Some(from.max(end));
                }
                open.pop();
            }
            if let Some(from) = at {
                emit(from, start, open.last().map(|&(_, id)| id));
            }
            at = Some(start);
            let end = open
                .last()
                .map_or(event.end_ns(), |&(outer, _)| event.end_ns().min(outer));
            open.push((end, EventId((first + k) as u32)));
        }
        while let Some((end, id)) = open.pop() {
            if let Some(from) = at {
                emit(from, end, Some(id));
                at = Some(from.max(end));
            }
        }
        InnermostTimeline { segments }
    }

    /// Calls `f(innermost, ns)` for each stretch of `[start, end)`, in order.
    pub fn split(&self, start: i64, end: i64, mut f: impl FnMut(Option<EventId>, i64)) {
        let first = self.segments.partition_point(|&(_, e, _)| e <= start);
        let mut at = start;
        for &(s, e, id) in &self.segments[first..] {
            if s >= end {
                break;
            }
            if s > at {
                f(None, s - at);
            }
            let from = s.max(at);
            let to = e.min(end);
            if to > from {
                f(id, to - from);
            }
            at = at.max(to);
        }
        if end > at {
            f(None, end - at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::one_thread::{op, trace as one_thread};

    #[test]
    fn a_thread_s_time_is_its_innermost_event_s() {
        let mut trace = one_thread();
        // outer [0, 100) holds a [10, 20) and b [30, 60), which holds c [40, 50); d is an
        // instant; e [120, 130) stands alone, and f [125, 140) outlasts it (cut at 130).
        op(&mut trace, "outer", 0, 100);
        op(&mut trace, "a", 10, 10);
        op(&mut trace, "b", 30, 30);
        op(&mut trace, "c", 40, 10);
        op(&mut trace, "d", 70, 0);
        op(&mut trace, "e", 120, 10);
        op(&mut trace, "f", 125, 15);
        let timeline = InnermostTimeline::of_lane(&trace, LaneId(0));
        let mut parts = Vec::new();
        timeline.split(-10, 150, |id, ns| {
            parts.push((id.map(|e| trace.name(trace.events[e.index()].name)), ns))
        });
        assert_eq!(
            parts,
            [
                (None, 10),
                (Some("outer"), 10),
                (Some("a"), 10),
                (Some("outer"), 10),
                (Some("b"), 10),
                (Some("c"), 10),
                (Some("b"), 10),
                (Some("outer"), 40),
                (None, 20),
                (Some("e"), 5),
                (Some("f"), 5),
                (None, 20),
            ]
        );
    }

    #[test]
    fn splits_a_stretch_by_the_innermost_event() {
        let timeline = InnermostTimeline {
            segments: vec![
                (0, 10, Some(EventId(0))),
                (10, 30, Some(EventId(1))),
                (40, 50, Some(EventId(0))),
            ],
        };
        let mut parts = Vec::new();
        timeline.split(5, 60, |id, ns| parts.push((id, ns)));
        assert_eq!(
            parts,
            [
                (Some(EventId(0)), 5),
                (Some(EventId(1)), 20),
                (None, 10),
                (Some(EventId(0)), 10),
                (None, 10)
            ]
        );
    }
}
