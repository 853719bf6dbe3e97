#![allow(clippy::print_stdout)]
//! Diagnostic: the chain of binding constraints behind one task of a replay without inferred
//! edges (by correlation id), with each link's lateness against the recording.
mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("trace path");
    let corr: u64 = args.next().expect("correlation").parse().expect("number");
    let (trace, w, tl) = common::replayed_without_inferred(&path);
    let g = &w.graph;
    let mut t = (0..g.task_count())
        .find(|&t| {
            trace.events[g.event[t].index()].correlation.map(u64::from) == Some(corr)
                && g.kind[t].on_device()
        })
        .expect("task");
    let mut seen = std::collections::HashSet::new();
    for _ in 0..std::env::var("DEPTH").map_or(40, |d| d.parse().expect("depth")) {
        let e = &trace.events[g.event[t].index()];
        let n = trace.name(e.name);
        println!(
            "lane {:>2} corr {:>9?} late {:>9} ns (begin {} rec {} dur {}) {:<40} bound {:?} held {:?}",
            g.lane[t],
            e.correlation,
            tl.begin_ns[t] - g.rec_start_ns[t],
            tl.begin_ns[t],
            g.rec_start_ns[t],
            g.dur_ns[t],
            &n[..n.len().min(40)],
            tl.binding[t],
            tl.completion[t]
        );
        // A call whose end was held (a blocking copy, a sync) is late by what held it.
        let held = tl.completion[t].and_then(|c| c.pred());
        let next = match held {
            Some(h) if tl.end_ns[t] > tl.begin_ns[t] + g.dur_ns[t] && seen.insert(t) => Some(h),
            _ => tl.binding[t].pred(),
        };
        match next {
            Some(p) => t = p.index(),
            None => break,
        }
    }
}
