#![allow(clippy::print_stdout)]
//! Diagnostic: along each device lane of a replay without inferred edges, where the replay's
//! drift against the recording (replayed begin − recorded start) jumps by more than
//! `JUMP_US` (default 30 µs) from the lane's previous task, with the binding constraint and the
//! recorded idle before the task: where a lane gains or loses time, and what it waited for.
mod common;

use stepcast::simulate::Binding;
fn main() {
    let path = std::env::args().nth(1).expect("trace path");
    let jump_ns: i64 = std::env::var("JUMP_US").map_or(30, |j| j.parse().expect("µs")) * 1000;
    let (trace, w, tl) = common::replayed_without_inferred(&path);
    let g = &w.graph;
    let short = |t: usize| {
        let n = trace.name(trace.events[g.event[t].index()].name);
        n[..n.len().min(40)].to_string()
    };
    for (li, lane) in g.lanes.iter().enumerate() {
        if lane.device.is_none() {
            continue;
        }
        let mut prev: Option<usize> = None;
        for t in lane.first_task as usize..(lane.first_task + lane.task_count) as usize {
            let drift = tl.begin_ns[t] - g.rec_start_ns[t];
            let prev_drift = prev.map_or(0, |p| tl.begin_ns[p] - g.rec_start_ns[p]);
            if (drift - prev_drift).abs() > jump_ns {
                let idle = prev.map_or(0, |p| g.rec_start_ns[t] - g.rec_end_ns[p]);
                let by = match tl.binding[t] {
                    Binding::Lane(p) => format!("lane {}", short(p.index())),
                    Binding::Edge(p, k) => format!(
                        "{} {} (lane {})",
                        k.as_str(),
                        short(p.index()),
                        g.lane[p.index()]
                    ),
                    b => format!("{b:?}"),
                };
                println!(
                    "lane {li} step {} rec {:>10} drift {:>+9} (was {:>+9}) idle {:>7} {:<40} {:?} <- {by}",
                    g.step[t],
                    g.rec_start_ns[t],
                    drift,
                    prev_drift,
                    idle,
                    short(t),
                    trace.events[g.event[t].index()].correlation,
                );
            }
            prev = Some(t);
        }
    }
}
