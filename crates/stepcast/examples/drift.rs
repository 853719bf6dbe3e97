#![allow(clippy::print_stdout)]
//! Diagnostic: where a replay without inferred edges drifts early (or, with `LATE=1`, late)
//! from the recording: the tasks whose drift grows most over their lane predecessor's.
use stepcast::graph::{BuildOptions, TaskId, build};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let trace = stepcast_trace::read_trace(std::path::Path::new(&path)).expect("read");
    let w = build(&trace, &BuildOptions::default());
    let g = &w.graph;
    let tl = simulate(
        g,
        &RecordedOrder,
        SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        },
    )
    .expect("sim");
    let mut rows = Vec::new();
    for t in 0..g.task_count() {
        let task = TaskId(t as u32);
        let early = if std::env::var("LATE").is_ok() {
            tl.begin_ns[t] - g.rec_start_ns[t]
        } else {
            g.rec_start_ns[t] - tl.begin_ns[t]
        };
        let prev = g
            .lane_pred(task)
            .map_or(0, |p| g.rec_start_ns[p.index()] - tl.begin_ns[p.index()]);
        let pred_end_gap = g
            .lane_pred(task)
            .map_or(0, |p| g.rec_start_ns[t] - g.rec_end_ns[p.index()]);
        rows.push((
            early - prev,
            t,
            pred_end_gap,
            format!("{:?}", tl.binding[t]),
        ));
    }
    rows.sort();
    rows.reverse();
    let total: i64 = rows.iter().filter(|r| r.0 > 0).map(|r| r.0).sum();
    println!("total positive drift {total}");
    for (d, t, gap, b) in rows.iter().take(25) {
        let e = &trace.events[g.event[*t].index()];
        let n = trace.name(e.name);
        println!(
            "{d:>9} lane {} rec_gap_after_pred {gap:>8} {} corr {:?} bind {b}",
            g.lane[*t],
            &n[..n.len().min(50)],
            e.correlation
        );
    }
}
