#![allow(clippy::print_stdout)]
//! Diagnostic: along the baseline's whole critical path, what a combination of models cut up
//! to each task, against how much earlier that task ends in the prediction. Where a task ends
//! earlier than the cuts before it allow, the bound (`Outcome::path_cut_ns`) misses a saving:
//! the first such tasks are printed (found the gap carried into a bypass edge,
//! `EditGraph::carried_gap_ns`). `cargo run --release -p stepcast --example bound_leak --
//! TRACE kernel_fusion faster_cpu`
use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, TaskId, build};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::{Baseline, Context, Model};
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let names: Vec<String> = std::env::args().skip(2).collect();
    let trace = stepcast_trace::read_trace(std::path::Path::new(&path)).expect("read");
    let w = build(&trace, &BuildOptions::default());
    let mapping = map(&trace, &w);
    let context = Context::new(&trace, &w, &mapping);
    let models: Vec<Model> = names
        .iter()
        .map(|n| Model::by_name(n).expect("model"))
        .collect();
    let baseline = Baseline::of(&w).expect("baseline");
    let base = context.edit();
    let mut edit = base.clone();
    for m in &models {
        m.apply(&context, &mut edit).expect("applies");
    }
    let (g2, new_id) = edit.finish().expect("builds");
    let t2 = simulate(&g2, &RecordedOrder, SimOptions::default()).expect("replays");
    let (bg, _) = base.finish().expect("builds");
    let t1 = simulate(
        &bg,
        &RecordedOrder,
        SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        },
    )
    .expect("replays");
    let mut cum_cut = 0i64;
    let mut last_adv = 0i64;
    let mut printed = 0;
    let mut tasks = baseline.path.tasks.clone();
    tasks.sort_by_key(|t| t1.end_ns[t.index()]);
    for &t in &tasks {
        let cut = if !edit.is_alive(t) {
            base.dur_ns(t) + base.gap_ns(t) + base.in_lag_ns(t)
        } else {
            (base.dur_ns(t) - edit.dur_ns(t)).max(0)
                + (base.gap_ns(t) - edit.gap_ns(t)).max(0)
                + edit
                    .lag_saved_ns(&base, t)
                    .max(base.in_lag_ns(t) - edit.in_lag_ns(t) + edit.carried_gap_ns(t))
        };
        cum_cut += cut;
        let n = new_id[t.index()];
        if n == TaskId::NONE {
            continue;
        }
        let adv = t1.end_ns[t.index()] - t2.end_ns[n.index()];
        if adv > cum_cut + 2_000 && adv - last_adv > 1_000 && printed < 20 {
            println!(
                "{:>8} {:>40} end {} -> {} advanced {} cum_cut {} excess {} binding {:?} cut {} alive {}",
                t.0,
                &trace.name(bg.name[t.index()])[..trace.name(bg.name[t.index()]).len().min(40)],
                t1.end_ns[t.index()],
                t2.end_ns[n.index()],
                adv,
                cum_cut,
                adv - cum_cut,
                t2.binding[n.index()],
                cut,
                edit.is_alive(t)
            );
            last_adv = adv;
            printed += 1;
        }
    }
    println!("path tasks {} total cut {}", tasks.len(), cum_cut);
}
