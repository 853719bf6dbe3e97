//! `stepcast-bench optimize`: wall time of `stepcast optimize`'s search on one core, and the
//! moves it replays per second.
//!
//! The traces are read, built and mapped once, untimed. Each iteration then runs the whole of
//! what `stepcast optimize` does with them, in a one-thread rayon pool (the search replays
//! candidates in parallel elsewhere; here it is held to one core): what the passes know and
//! the baselines ([`Optimizer::new`]), the greedy search, the references (the defaults and
//! `advise`, which runs every advise model) and the finish (restarts, each move alone, the
//! memory pass). Moves per second are the search's replays over the search's time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, build};
use stepcast::optimize::{NoHooks, Optimizer, Options};
use stepcast::whatif::Context;
use stepcast_trace::read_trace;

/// CPU time (user and system) of the process so far, from `/proc/self/stat` (Linux; `None`
/// elsewhere), in clock ticks of 10 ms: on a machine shared with other work, wall time
/// measures the neighbours too, CPU time only this search.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let total = ticks(11)? + ticks(12)?;
    Some(Duration::from_millis(total * 10))
}

/// One iteration's phase times and the search's counts.
struct Run {
    /// CPU time of the whole iteration (all phases).
    cpu: Option<Duration>,
    prepare: Duration,
    search: Duration,
    references: Duration,
    finish: Duration,
    evaluated: usize,
    rounds: usize,
    moves: usize,
    speedup: f64,
}

impl Run {
    fn total(&self) -> Duration {
        self.prepare + self.search + self.references + self.finish
    }
}

/// Benchmarks the job made of `traces` (one trace, or one per rank).
pub fn run(traces: &[PathBuf], iterations: u32, as_json: bool) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for path in traces {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot list {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let name = p.to_string_lossy();
                    name.ends_with(".json") || name.ends_with(".json.gz")
                })
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut loaded = Vec::new();
    for file in &files {
        let trace = read_trace(file)?;
        let window = build(&trace, &BuildOptions::default());
        let mapping = map(&trace, &window);
        loaded.push((trace, window, mapping));
    }
    let contexts: Vec<Context<'_>> = loaded
        .iter()
        .map(|(trace, window, mapping)| Context::new(trace, window, mapping))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .context("cannot build a one-thread pool")?;
    let mut runs = Vec::new();
    for _ in 0..iterations {
        let run = pool.install(|| -> anyhow::Result<Run> {
            let cpu_start = cpu_time();
            let start = Instant::now();
            let optimizer = Optimizer::new(&contexts, Options::default())?;
            let prepare = start.elapsed();
            let start = Instant::now();
            let search = optimizer.search(&NoHooks)?;
            let search_time = start.elapsed();
            let (evaluated, rounds) = (search.stats.evaluated, search.stats.rounds);
            let start = Instant::now();
            let references = optimizer.references()?;
            let references_time = start.elapsed();
            let start = Instant::now();
            let optimized = optimizer.finish(search, references, &NoHooks)?;
            let finish = start.elapsed();
            Ok(Run {
                cpu: cpu_time()
                    .zip(cpu_start)
                    .map(|(end, start)| end.saturating_sub(start)),
                prepare,
                search: search_time,
                references: references_time,
                finish,
                evaluated,
                rounds,
                moves: optimized.moves.len(),
                speedup: optimized.baseline_ns as f64 / optimized.planned_ns.max(1) as f64,
            })
        })?;
        runs.push(run);
    }
    runs.sort_by_key(Run::total);
    let median = &runs[runs.len() / 2];
    let moves_per_s = median.evaluated as f64 / median.search.as_secs_f64().max(1e-9);
    let name = match files.as_slice() {
        [one] => one.display().to_string(),
        many => format!("{} ranks in {}", many.len(), traces[0].display()),
    };
    if as_json {
        let value = json!({
            "job": name,
            "ranks": files.len(),
            "iterations": iterations,
            "threads": 1,
            "median": {
                "total_s": median.total().as_secs_f64(),
                "prepare_s": median.prepare.as_secs_f64(),
                "search_s": median.search.as_secs_f64(),
                "references_s": median.references.as_secs_f64(),
                "finish_s": median.finish.as_secs_f64(),
                "cpu_s": median.cpu.map(|c| c.as_secs_f64()),
            },
            "evaluated": median.evaluated,
            "rounds": median.rounds,
            "moves_per_s": moves_per_s,
            "plan_moves": median.moves,
            "speedup": median.speedup,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("{name}: optimize on one core, median of {iterations}");
        println!(
            "  total {:.2} s = prepare {:.2} s + search {:.2} s + references {:.2} s + finish {:.2} s",
            median.total().as_secs_f64(),
            median.prepare.as_secs_f64(),
            median.search.as_secs_f64(),
            median.references.as_secs_f64(),
            median.finish.as_secs_f64()
        );
        if let Some(cpu) = median.cpu {
            println!("  CPU time {:.2} s", cpu.as_secs_f64());
        }
        println!(
            "  search: {} moves replayed in {} rounds, {:.1} moves/s; plan of {} moves, {:.3}×",
            median.evaluated, median.rounds, moves_per_s, median.moves, median.speedup
        );
    }
    Ok(())
}
