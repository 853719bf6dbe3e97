//! The runtime or driver call that launched each device task, by correlation id: read once per
//! analysis by the mapping and the statistics.

use rustc_hash::FxHashMap;
use stepcast_trace::{EventId, Trace};

use crate::graph::Graph;

/// Per task of `graph`: for device work, the runtime or driver call event carrying its
/// correlation id (the first in the trace's order, the outermost, when several do); `None` for
/// host tasks and for device work whose call is not in the trace.
pub(crate) fn launch_calls(trace: &Trace, graph: &Graph) -> Vec<Option<EventId>> {
    let calls = trace
        .events
        .iter()
        .filter(|e| e.kind.is_api_call() && e.correlation.is_some())
        .count();
    let mut by_correlation: FxHashMap<u64, EventId> =
        FxHashMap::with_capacity_and_hasher(calls, Default::default());
    for (i, event) in trace.events.iter().enumerate() {
        if let (true, Some(correlation)) = (event.kind.is_api_call(), event.correlation) {
            by_correlation
                .entry(correlation.get())
                .or_insert(EventId(i as u32));
        }
    }
    (0..graph.task_count())
        .map(|t| {
            if !graph.kind[t].on_device() {
                return None;
            }
            let correlation = trace.events[graph.event[t].index()].correlation?;
            by_correlation.get(&correlation.get()).copied()
        })
        .collect()
}
