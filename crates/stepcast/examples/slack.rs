#![allow(clippy::print_stdout)]
//! Diagnostic: where a replay without inferred edges loses the recording's time. For each
//! task, the slack its binding constraint did not explain: how much earlier the task ran than
//! recorded, minus how much earlier its binding predecessor released it. Summed by (binding
//! kind, task name, predecessor name): the largest sums are the missing causes.
use std::collections::HashMap;
use stepcast::simulate::Binding;

mod common;
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let (trace, w, tl) = common::replayed_without_inferred(&path);
    let g = &w.graph;
    let short = |t: usize| {
        let n = trace.name(trace.events[g.event[t].index()].name);
        n[..n.len().min(44)].to_string()
    };
    // `LATE=1`: what ran later than recorded, beyond its binding predecessor's lateness.
    let late = std::env::var("LATE").is_ok();
    let mut sums: HashMap<(String, String, String), (i64, u32, usize)> = HashMap::new();
    for t in 0..g.task_count() {
        let early = g.rec_start_ns[t] - tl.begin_ns[t];
        let (kind, pred_early, p) = match tl.binding[t] {
            Binding::Lane(p) => (
                "lane".to_string(),
                g.rec_end_ns[p.index()] + g.gap_ns[p.index()]
                    - tl.end_ns[p.index()]
                    - g.gap_ns[p.index()],
                Some(p),
            ),
            Binding::Edge(p, k) => {
                let (rec, rep) = if k.from_source_begin() {
                    (g.rec_start_ns[p.index()], tl.begin_ns[p.index()])
                } else {
                    (g.rec_end_ns[p.index()], tl.end_ns[p.index()])
                };
                (k.as_str().to_string(), rec - rep, Some(p))
            }
            _ => ("boundary".to_string(), 0, None),
        };
        // Only what this link adds beyond its predecessor's own drift.
        let loss = if late {
            -early - (-pred_early).max(0)
        } else {
            early - pred_early.max(0)
        };
        if loss <= 1000 {
            continue;
        }
        let key = (
            kind,
            short(t),
            p.map_or(String::new(), |p| short(p.index())),
        );
        let s = sums.entry(key).or_insert((0, 0, t));
        s.0 += loss;
        s.1 += 1;
    }
    let mut rows: Vec<_> = sums.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1.0));
    for ((kind, name, pred), (loss, count, t)) in rows.iter().take(30) {
        println!(
            "{loss:>10} ns {count:>5}× {kind:<18} {name:<44} <- {pred:<44} (e.g. corr {:?} lane {})",
            trace.events[g.event[*t].index()].correlation,
            g.lane[*t]
        );
    }
}
