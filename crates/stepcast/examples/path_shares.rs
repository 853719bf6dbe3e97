#![allow(clippy::print_stdout)]
//! Diagnostic: the largest stretches of a prediction's critical path (whole window), with what
//! released each task. `cargo run --release -p stepcast --example path_shares -- TRACE MODEL...`
use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, TaskId, build};
use stepcast::simulate::{RecordedOrder, SimOptions, critical_path, simulate};
use stepcast::whatif::{Context, Model};
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let names: Vec<String> = std::env::args().skip(2).collect();
    let trace = stepcast_trace::read_trace(std::path::Path::new(&path)).expect("read");
    let w = build(&trace, &BuildOptions::default());
    let mapping = map(&trace, &w);
    let context = Context::new(&trace, &w, &mapping);
    let mut edit = context.edit();
    for n in &names {
        Model::by_name(n)
            .expect("model")
            .apply(&context, &mut edit)
            .expect("applies");
    }
    let (g, _) = edit.finish().expect("builds");
    let t = simulate(
        &g,
        &RecordedOrder,
        SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        },
    )
    .expect("replays");
    let top_step = (0..g.task_count())
        .map(|i| g.step[i])
        .filter(|&s| s != stepcast::graph::NO_STEP)
        .max()
        .expect("steps");
    let last = (0..g.task_count())
        .filter(|&i| g.step[i] == top_step)
        .max_by_key(|&i| t.end_ns[i])
        .expect("tasks");
    let p = critical_path(&g, &t, TaskId(last as u32), i64::MIN);
    let mut shares = p.shares.clone();
    shares.sort_by_key(|s| std::cmp::Reverse(s.ns));
    for s in shares.iter().take(15) {
        let i = s.task.index();
        let preds: Vec<String> = g
            .preds(s.task)
            .map(|e| {
                format!(
                    "{:?}<-{} lag {}",
                    g.pred_kind[e], g.pred[e].0, g.pred_lag_ns[e]
                )
            })
            .collect();
        println!(
            "{:>12} {:?} task {} {:?} {} dur {} gap {} binding {:?} completion {:?} preds {:?}",
            s.ns,
            s.kind,
            s.task.0,
            g.kind[i],
            &trace.name(g.name[i])[..trace.name(g.name[i]).len().min(50)],
            g.dur_ns[i],
            g.gap_ns[i],
            t.binding[i],
            t.completion[i],
            preds
        );
    }
}
