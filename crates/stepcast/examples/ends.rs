#![allow(clippy::print_stdout)]
//! Diagnostic: per step, what ends it in the recording and in a replay without inferred edges.
mod common;

use stepcast::graph::NO_STEP;
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let (trace, w, tl) = common::replayed_without_inferred(&path);
    let g = &w.graph;
    let name = |t: usize| {
        let n = trace.name(trace.events[g.event[t].index()].name);
        format!(
            "{:?} {}",
            trace.events[g.event[t].index()].correlation,
            &n[..n.len().min(50)]
        )
    };
    for (i, step) in w.steps.iter().enumerate() {
        let tasks: Vec<usize> = (0..g.task_count())
            .filter(|&t| g.step[t] != NO_STEP && g.step[t] as usize == i)
            .collect();
        let rec_last = tasks
            .iter()
            .copied()
            .filter(|&t| g.kind[t].on_device())
            .max_by_key(|&t| g.rec_end_ns[t]);
        let rep_last = tasks
            .iter()
            .copied()
            .filter(|&t| g.kind[t].on_device())
            .max_by_key(|&t| tl.end_ns[t]);
        let first_host = tasks
            .iter()
            .copied()
            .filter(|&t| !g.kind[t].on_device())
            .min_by_key(|&t| g.rec_start_ns[t])
            .expect("a step has host tasks");
        let shift = tl.begin_ns[first_host] - g.rec_start_ns[first_host];
        println!(
            "step {} start {} shift {} marker_end_rec +{}",
            step.number,
            step.start_ns,
            shift,
            step.marker_end_ns - step.start_ns
        );
        if let Some(t) = rec_last {
            println!(
                "  rec last dev  +{} lane {} {}   (replay +{})",
                g.rec_end_ns[t] - step.start_ns,
                g.lane[t],
                name(t),
                tl.end_ns[t] - step.start_ns - shift
            );
        }
        if let Some(t) = rep_last {
            println!(
                "  rep last dev  +{} lane {} {}   (rec +{})",
                tl.end_ns[t] - step.start_ns - shift,
                g.lane[t],
                name(t),
                g.rec_end_ns[t] - step.start_ns
            );
        }
    }
}
