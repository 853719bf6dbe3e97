#![allow(clippy::print_stdout)]
//! Diagnostic: list the non-lane edges of a trace's graph with their ends' correlation ids.
use stepcast::graph::{BuildOptions, EdgeKind, TaskId, build};
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let trace = stepcast_trace::read_trace(std::path::Path::new(&path)).expect("read");
    let w = build(&trace, &BuildOptions::default());
    let g = &w.graph;
    let label = |t: TaskId| {
        let e = &trace.events[g.event[t.index()].index()];
        format!(
            "{}[corr {:?} lane {}]",
            trace.name(e.name),
            e.correlation,
            g.lane[t.index()]
        )
    };
    for t in 0..g.task_count() {
        let task = TaskId(t as u32);
        for e in g.preds(task) {
            if g.pred_kind[e] != EdgeKind::Launch {
                println!(
                    "{:?}: {} -> {}",
                    g.pred_kind[e],
                    label(g.pred[e]),
                    label(task)
                );
            }
        }
    }
    println!("{:?}", g.edges_by_kind(|_| true));
}
