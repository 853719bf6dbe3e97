#![allow(clippy::print_stdout)]
use stepcast::graph::{BuildOptions, build};
fn main() {
    for arg in std::env::args().skip(1) {
        let t0 = std::time::Instant::now();
        let trace = match stepcast_trace::read_trace(std::path::Path::new(&arg)) {
            Ok(t) => t,
            Err(e) => {
                println!("ERR {e}");
                continue;
            }
        };
        let t1 = t0.elapsed();
        let window = build(&trace, &BuildOptions::default());
        let t2 = t0.elapsed();
        let report = stepcast::replay::self_replay(&window).expect("replay");
        let t3 = t0.elapsed();
        println!(
            "== {} tasks={} lat={}ns unl={} inferred={} rejected={:?} ({:.0}/{:.0}/{:.0} ms)",
            arg.rsplit('/').next().unwrap_or(""),
            window.graph.task_count(),
            window.report.launch_latency_ns,
            window.report.unlaunched_device_tasks,
            window.report.inferred_edges,
            window.report.rejected,
            t1.as_secs_f64() * 1e3,
            (t2 - t1).as_secs_f64() * 1e3,
            (t3 - t2).as_secs_f64() * 1e3
        );
        let ek = window.graph.edges_by_kind(|_| true);
        println!(
            "  edges: {:?}",
            ek.iter()
                .filter(|(_, c)| *c > 0)
                .map(|(k, c)| format!("{}={}", k.as_str(), c))
                .collect::<Vec<_>>()
        );
        for s in &report.steps {
            println!(
                "  step {:>3} meas={:>10} rep={:>10} err={:+.3}% w/o={:+.3}% fid={:.3} tasks={} cp={}/{}",
                s.number,
                s.measured_ns,
                s.replayed_ns,
                s.error() * 100.0,
                s.error_without_inferred() * 100.0,
                s.event_fidelity,
                s.tasks,
                s.critical_path_tasks,
                s.critical_path_ns
            );
        }
        if let Some(t) = &report.typical {
            println!(
                "  typical pred={} med={} err={:+.3}% used={:?}",
                t.predicted_ns,
                t.measured_median_ns,
                t.error() * 100.0,
                t.steps_used
            );
        }
    }
}
