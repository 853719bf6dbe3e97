#![allow(clippy::print_stdout)]
//! Diagnostic: where the replay drifts from the recording (largest added deviations).
use stepcast::graph::{BuildOptions, TaskId, build};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let trace = stepcast_trace::read_trace(std::path::Path::new(&args[1])).expect("read");
    let w = build(&trace, &BuildOptions::default());
    let g = &w.graph;
    let tl = simulate(g, &RecordedOrder, SimOptions::default()).expect("sim");
    let show = |&(d, t): &(i64, usize)| -> () {
        let ev = &trace.events[g.event[t].index()];
        println!(
            "{:>10} lane={} {:?} step={} rec=[{}..{}] rep={}..{} dur={} gap={} name={} binding={:?} compl={:?}",
            d,
            g.lane[t],
            g.kind[t],
            g.step[t],
            g.rec_start_ns[t],
            g.rec_end_ns[t],
            tl.begin_ns[t],
            tl.end_ns[t],
            g.dur_ns[t],
            g.gap_ns[t],
            &trace.name(ev.name)[..trace.name(ev.name).len().min(60)],
            tl.binding[t],
            tl.completion[t]
        );
    };
    let mut rows: Vec<(i64, usize)> = Vec::new();
    for t in 0..g.task_count() {
        let dev = tl.begin_ns[t] - g.rec_start_ns[t];
        let prev = g
            .lane_pred(TaskId(t as u32))
            .map_or(0, |p| tl.begin_ns[p.index()] - g.rec_start_ns[p.index()]);
        rows.push((dev - prev, t));
    }
    if args.get(2).map(|s| s.as_str()) == Some("first") {
        let mut firsts: Vec<&(i64, usize)> =
            rows.iter().filter(|(d, _)| d.abs() > 1_000_000).collect();
        firsts.sort_by_key(|(_, t)| g.rec_start_ns[*t]);
        println!("first large added deviations (by recorded time):");
        for &x in firsts.iter().take(8) {
            show(x);
            let t = x.1;
            if let Some(p) = g.lane_pred(TaskId(t as u32)) {
                print!("   lane pred: ");
                show(&(0, p.index()));
            }
            for e in g.preds(TaskId(t as u32)) {
                print!("   pred {:?}: ", g.pred_kind[e]);
                show(&(g.pred_lag_ns[e], g.pred[e].index()));
            }
        }
        return;
    }
    rows.sort();
    if let Some(step) = args.get(2).and_then(|s| s.parse::<u32>().ok()) {
        let mut late: Vec<(i64, usize)> = (0..g.task_count())
            .filter(|&t| g.step[t] == step)
            .map(|t| (tl.end_ns[t] - g.rec_end_ns[t], t))
            .collect();
        late.sort();
        println!("latest-ending relative to record in step {step}:");
        late.iter().rev().take(12).for_each(|x| show(x));
        // walk binding chain from the worst
        if let Some(&(_, mut t)) = late.last() {
            println!("binding chain:");
            for _ in 0..25 {
                show(&(tl.begin_ns[t] - g.rec_start_ns[t], t));
                match tl.completion[t]
                    .or(Some(tl.binding[t]))
                    .and_then(|b| b.pred())
                {
                    Some(p) => t = p.index(),
                    None => break,
                }
            }
        }
        return;
    }
    println!("most negative added deviation:");
    rows.iter().take(15).for_each(show);
    println!("most positive:");
    rows.iter().rev().take(15).for_each(show);
}
// (appended) see `late` below
