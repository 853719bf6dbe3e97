#![allow(clippy::print_stdout)]
//! Diagnostic: the inferred edges of a trace's graph, with their lag and the target's context.
use stepcast::graph::{BuildOptions, TaskId, build};
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let trace = stepcast_trace::read_trace(std::path::Path::new(&path)).expect("read");
    let w = build(&trace, &BuildOptions::default());
    let g = &w.graph;
    let label = |t: TaskId| {
        let e = &trace.events[g.event[t.index()].index()];
        let n = trace.name(e.name);
        format!(
            "{}[corr {:?} lane {} {:?} rec {}..{}]",
            &n[..n.len().min(50)],
            e.correlation,
            g.lane[t.index()],
            g.kind[t.index()],
            g.rec_start_ns[t.index()],
            g.rec_end_ns[t.index()]
        )
    };
    for t in 0..g.task_count() {
        let task = TaskId(t as u32);
        for e in g.preds(task) {
            if g.pred_kind[e].is_inferred() {
                let pred = g.lane_pred(task);
                println!(
                    "{:?} lag {} : {} -> {} | lane pred ends {:?}",
                    g.pred_kind[e],
                    g.pred_lag_ns[e],
                    label(g.pred[e]),
                    label(task),
                    pred.map(|p| g.rec_start_ns[t] - g.rec_end_ns[p.index()])
                );
            }
        }
    }
}
