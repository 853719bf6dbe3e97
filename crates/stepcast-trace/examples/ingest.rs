#![allow(clippy::print_stdout)]
fn main() {
    for arg in std::env::args().skip(1) {
        let t0 = std::time::Instant::now();
        match stepcast_trace::read_trace(std::path::Path::new(&arg)) {
            Ok(t) => println!(
                "{:.1}ms {} ev={} lanes={} steps={} syncs={} {:?} skipped={:?} notes={:?}",
                t0.elapsed().as_secs_f64() * 1e3,
                arg.rsplit('/').next().unwrap_or(""),
                t.events.len(),
                t.lanes.len(),
                t.steps.len(),
                t.syncs.len(),
                t.runtime,
                t.diagnostics.skipped,
                t.diagnostics.notes.len()
            ),
            Err(e) => println!("ERR {e}"),
        }
    }
}
