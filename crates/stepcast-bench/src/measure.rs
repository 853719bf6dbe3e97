//! `stepcast-bench run`: wall time of each pipeline phase, on the calling thread only.
//!
//! Every iteration runs the whole pipeline on a fresh read of the file: ingest
//! ([`stepcast_trace::read_processes`]: every process of a file, so an nsys export's rows are
//! all read; the rest of the pipeline runs on the first), graph build, one replay ([`simulate`]), the self-replay
//! (two replays plus per-step measures and the typical step) and the analysis (what
//! `stepcast analyze` does once the trace is loaded: [`stepcast::analyze::analyze`] and the
//! rendering of its JSON document and text report). Nothing here spawns a thread and
//! stepcast's crates do not either, so the numbers are per core.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::json;
use stepcast::analyze::analyze;
use stepcast::graph::{BuildOptions, build};
use stepcast::replay::self_replay;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast_trace::{ReadOptions, read_processes};

/// Timings of one phase over the timed iterations.
#[derive(Clone, Default)]
struct Samples(Vec<Duration>);

impl Samples {
    fn min(&self) -> Duration {
        self.0.iter().copied().min().unwrap_or_default()
    }

    fn median(&self) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        match sorted.len() {
            0 => Duration::ZERO,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
        }
    }
}

/// How a throughput is counted.
#[derive(Clone, Copy)]
enum Rate {
    /// Uncompressed input bytes, in MB/s (10^6 bytes).
    Megabytes(u64),
    /// Graph tasks, in million tasks/s.
    MillionTasks(u64),
    /// Input records (Kineto events, nsys table rows), in million records/s.
    MillionRecords(u64),
}

impl Rate {
    fn per_second(self, time: Duration) -> Option<f64> {
        let secs = time.as_secs_f64();
        let amount = match self {
            Rate::Megabytes(bytes) => bytes as f64 / 1e6,
            Rate::MillionTasks(tasks) => tasks as f64 / 1e6,
            Rate::MillionRecords(records) => records as f64 / 1e6,
        };
        (secs > 0.0).then(|| amount / secs)
    }

    fn unit(self) -> &'static str {
        match self {
            Rate::Megabytes(_) => "MB/s",
            Rate::MillionTasks(_) => "M tasks/s",
            Rate::MillionRecords(_) => "M records/s",
        }
    }
}

struct Phase {
    name: &'static str,
    samples: Samples,
    rate: Rate,
}

/// Where the peak RSS figure comes from.
#[derive(Clone, Copy)]
enum RssScope {
    /// The high-water mark was reset before this trace: the peak is this trace's.
    Trace,
    /// It could not be reset: the peak is the process's so far.
    Process,
}

struct TraceResult {
    path: PathBuf,
    input_bytes: u64,
    records: u64,
    events: usize,
    tasks: usize,
    steps: usize,
    skipped_records: u64,
    /// Device tasks without a launching call, and edges inferred from timing: a synthesized
    /// input should have N times its source's.
    unlaunched_device_tasks: u64,
    inferred_edges: u64,
    iterations: u32,
    phases: Vec<Phase>,
    peak_rss_bytes: Option<u64>,
    /// Peak RSS of the warm-up's ingest alone (reset just before it).
    ingest_peak_rss_bytes: Option<u64>,
    /// Peak RSS of the warm-up up to the self-replay: the pipeline without the analysis.
    replay_peak_rss_bytes: Option<u64>,
    rss_scope: RssScope,
    replay_error_median: Option<f64>,
    /// On-CPU time of the timed ingests, summed (`None` where the kernel does not say): on a
    /// loaded machine wall time counts other jobs, and an nsys export is read in tens of ms.
    ingest_cpu_total: Option<Duration>,
}

/// This thread's time on a CPU so far (`/proc/thread-self/schedstat`, first field, ns).
fn thread_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

pub fn run(traces: &[PathBuf], iterations: u32, json: bool) -> anyhow::Result<()> {
    let mut results = Vec::with_capacity(traces.len());
    for path in traces {
        eprintln!(
            "benchmarking {} (1 warm-up + {iterations} iterations)",
            path.display()
        );
        let result = bench_trace(path, iterations)?;
        if !json {
            print_table(&result);
        }
        results.push(result);
    }
    if json {
        let unix_time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let report = json!({
            "tool": "stepcast-bench",
            "version": env!("CARGO_PKG_VERSION"),
            "unix_time": unix_time,
            "threads": 1,
            "available_parallelism": std::thread::available_parallelism().map(|n| n.get()).ok(),
            "results": results.iter().map(result_json).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}

fn bench_trace(path: &Path, iterations: u32) -> anyhow::Result<TraceResult> {
    let rss_scope = if reset_peak_rss() {
        RssScope::Trace
    } else {
        RssScope::Process
    };
    let mut ingest = Samples::default();
    let mut build_time = Samples::default();
    let mut sim = Samples::default();
    let mut replay = Samples::default();
    let mut analysis = Samples::default();
    let mut report_html = Samples::default();
    let mut advise_time = Samples::default();
    let mut self_checks = Samples::default();
    let mut total = Samples::default();
    let mut ingest_peak_rss_bytes = None;
    let mut replay_peak_rss_bytes = None;
    let mut result = None;
    let mut ingest_cpu_total = Some(Duration::ZERO);
    // Iteration 0 is the warm-up: it fills the page cache and the allocator, and is not timed.
    for iteration in 0..=iterations {
        let cpu_before = thread_cpu();
        let start = Instant::now();
        let mut traces = read_processes(path, &ReadOptions::default())
            .with_context(|| format!("reading {}", path.display()))?;
        let t_ingest = start.elapsed();
        let cpu_ingest = thread_cpu()
            .zip(cpu_before)
            .map(|(after, before)| after.saturating_sub(before));
        let records: u64 = traces.iter().map(|t| t.records).sum();
        let trace = traces.swap_remove(0);
        drop(traces);
        if iteration == 0 {
            ingest_peak_rss_bytes = peak_rss_bytes();
        }

        let start = Instant::now();
        let window = build(&trace, &BuildOptions::default());
        let t_build = start.elapsed();

        let start = Instant::now();
        let timeline = simulate(&window.graph, &RecordedOrder, SimOptions::default())
            .with_context(|| format!("replaying {}", path.display()))?;
        let t_sim = start.elapsed();
        black_box(&timeline);
        drop(timeline);

        let start = Instant::now();
        let report =
            self_replay(&window).with_context(|| format!("self-replay of {}", path.display()))?;
        let t_replay = start.elapsed();
        black_box(&report);
        if iteration == 0 {
            replay_peak_rss_bytes = peak_rss_bytes();
        }

        let start = Instant::now();
        let analyzed = analyze(&trace, &window, None)
            .with_context(|| format!("analysis of {}", path.display()))?;
        let document = stepcast_report::json::analyze_json(&trace, &window, &analyzed, None);
        let text = stepcast_report::table::analyze_text(&document);
        let t_analyze = start.elapsed();
        black_box(&text);

        // The HTML report's own work on top of the analysis: the analyzed step's timeline
        // (a replay of its own), the memory curves and the page (advise and the scaling curve
        // are what-ifs, measured as such).
        let start = Instant::now();
        let page = report_page(&trace, &window, &analyzed, &document)
            .with_context(|| format!("report of {}", path.display()))?;
        let t_report = start.elapsed();
        black_box(&page);

        // `advise`, whole (the baseline replayed once, the window's self-checks beside the
        // editable window, every candidate), then the self-checks alone on that baseline:
        // what they add to `advise` (issue #25's bar: at most 20 %).
        let context = stepcast::whatif::Context::new(&trace, &window, &analyzed.mapping);
        let start = Instant::now();
        let advice = stepcast::whatif::advise(&context)
            .with_context(|| format!("advise on {}", path.display()))?;
        let t_advise = start.elapsed();
        black_box(&advice);
        let replayed = stepcast::whatif::Baseline::of(&window)
            .with_context(|| format!("baseline of {}", path.display()))?;
        let start = Instant::now();
        let checks = stepcast::whatif::trust::window_trust_of(&context, &replayed)
            .with_context(|| format!("self-checks of {}", path.display()))?;
        let t_checks = start.elapsed();
        black_box(&checks);
        drop((advice, checks, replayed));
        drop((analyzed, document, text, page));

        if iteration == 0 {
            let mut errors: Vec<f64> = report
                .steps
                .iter()
                .filter(|s| s.steady)
                .map(|s| s.error())
                .filter(|e| e.is_finite())
                .collect();
            errors.sort_unstable_by(f64::total_cmp);
            let replay_error_median = match errors.len() {
                0 => None,
                n if n % 2 == 1 => Some(errors[n / 2]),
                n => Some((errors[n / 2 - 1] + errors[n / 2]) / 2.0),
            };
            result = Some(TraceResult {
                path: path.to_path_buf(),
                input_bytes: trace.input_bytes,
                records,
                events: trace.events.len(),
                tasks: window.graph.task_count(),
                steps: window.steps.len(),
                skipped_records: trace.diagnostics.total_skipped(),
                unlaunched_device_tasks: window.report.unlaunched_device_tasks,
                inferred_edges: window.report.inferred_edges,
                iterations,
                phases: Vec::new(),
                peak_rss_bytes: None,
                ingest_peak_rss_bytes,
                replay_peak_rss_bytes,
                rss_scope,
                replay_error_median,
                ingest_cpu_total: None,
            });
        } else {
            ingest.0.push(t_ingest);
            ingest_cpu_total = match (ingest_cpu_total, cpu_ingest) {
                (Some(total), Some(cpu)) => Some(total + cpu),
                _ => None,
            };
            build_time.0.push(t_build);
            sim.0.push(t_sim);
            replay.0.push(t_replay);
            analysis.0.push(t_analyze);
            report_html.0.push(t_report);
            advise_time.0.push(t_advise);
            self_checks.0.push(t_checks);
            total.0.push(t_ingest + t_build + t_replay);
        }
        // Freed outside the timed regions, before the next read, so that at most one trace and
        // its window are alive at a time.
        drop(report);
        drop(window);
        drop(trace);
    }
    let Some(mut result) = result else {
        anyhow::bail!("no iteration ran");
    };
    let (input_bytes, tasks) = (result.input_bytes, result.tasks as u64);
    let records = result.records;
    let phases = vec![
        Phase {
            name: "ingest",
            samples: ingest.clone(),
            rate: Rate::Megabytes(input_bytes),
        },
        // The same timings counted in records: an nsys export's rate (its bytes are SQLite
        // pages, not a measure of work).
        Phase {
            name: "ingest rows",
            samples: ingest,
            rate: Rate::MillionRecords(records),
        },
        Phase {
            name: "build",
            samples: build_time,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "simulate",
            samples: sim,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "self_replay",
            samples: replay,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "analyze",
            samples: analysis,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "report_html",
            samples: report_html,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "advise",
            samples: advise_time,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "self_checks",
            samples: self_checks,
            rate: Rate::MillionTasks(tasks),
        },
        Phase {
            name: "total",
            samples: total,
            rate: Rate::Megabytes(input_bytes),
        },
    ];
    result.phases = phases;
    result.ingest_cpu_total = ingest_cpu_total.filter(|_| iterations > 0);
    result.peak_rss_bytes = peak_rss_bytes();
    Ok(result)
}

/// The HTML page `stepcast report` writes, without its what-if sections.
fn report_page(
    trace: &stepcast_trace::Trace,
    window: &stepcast::Window,
    analyzed: &stepcast::analyze::Analysis,
    document: &stepcast_report::json::AnalyzeJson,
) -> anyhow::Result<String> {
    use stepcast_report::html::{MemoryCurve, TimelineView, TraceReport, trace_report};
    let timeline = match analyzed.analyzed_step {
        Some(index) => {
            let replayed = simulate(&window.graph, &RecordedOrder, SimOptions::default())?;
            Some(TimelineView::new(
                trace,
                window,
                &replayed,
                index,
                "the analyzed step".to_string(),
            ))
        }
        None => None,
    };
    let memory: Vec<MemoryCurve> = analyzed.memory.iter().map(MemoryCurve::new).collect();
    Ok(trace_report(&TraceReport {
        analyze: document,
        advise: Err("not measured here"),
        scaling: Err("not measured here"),
        timeline: timeline.as_ref(),
        memory: &memory,
    }))
}

/// Resets the process's peak RSS (`VmHWM`) to its current RSS (Linux 4.0+). False if the
/// kernel refused.
pub(crate) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `VmHWM` of `/proc/self/status`: the process's peak resident set, in bytes.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 {
        format!("{secs:.3} s")
    } else if secs >= 1e-3 {
        format!("{:.2} ms", secs * 1e3)
    } else {
        format!("{:.1} µs", secs * 1e6)
    }
}

fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn format_rate(rate: Rate, time: Duration) -> String {
    let unit = rate.unit();
    match rate.per_second(time) {
        Some(value) if value >= 100.0 => format!("{value:.0} {unit}"),
        Some(value) => format!("{value:.2} {unit}"),
        None => "-".to_string(),
    }
}

fn print_table(r: &TraceResult) {
    println!();
    println!("{}", r.path.display());
    println!(
        "  {:.1} MB uncompressed, {} records, {} events, {} tasks, {} steps, {} skipped records",
        r.input_bytes as f64 / 1e6,
        format_count(r.records),
        format_count(r.events as u64),
        format_count(r.tasks as u64),
        r.steps,
        format_count(r.skipped_records),
    );
    println!(
        "  {} unlaunched device tasks, {} inferred edges",
        format_count(r.unlaunched_device_tasks),
        format_count(r.inferred_edges),
    );
    println!(
        "  1 thread, {} timed iterations after 1 warm-up",
        r.iterations
    );
    println!();
    println!(
        "  {:<12} {:>12} {:>12} {:>18} {:>18}",
        "phase", "min", "median", "rate (min)", "rate (median)"
    );
    for phase in &r.phases {
        let (min, median) = (phase.samples.min(), phase.samples.median());
        println!(
            "  {:<12} {:>12} {:>12} {:>18} {:>18}",
            phase.name,
            format_duration(min),
            format_duration(median),
            format_rate(phase.rate, min),
            format_rate(phase.rate, median),
        );
    }
    println!("  (total = ingest + build + self_replay; its rate is uncompressed input MB/s)");
    if let Some(cpu) = r.ingest_cpu_total.filter(|cpu| !cpu.is_zero()) {
        let per_ingest = cpu / r.iterations.max(1);
        println!(
            "  ingest on-CPU {} per read (mean): {:.2} M records/s per core",
            format_duration(per_ingest),
            r.records as f64 / per_ingest.as_secs_f64() / 1e6
        );
    }
    if let (Some(ingest), Some(build), Some(analyze)) = (
        r.phases.iter().find(|p| p.name == "ingest"),
        r.phases.iter().find(|p| p.name == "build"),
        r.phases.iter().find(|p| p.name == "analyze"),
    ) {
        println!(
            "  (ingest + build + analyze, what `stepcast analyze` does: {} at the minima)",
            format_duration(ingest.samples.min() + build.samples.min() + analyze.samples.min())
        );
    }
    println!();
    match r.peak_rss_bytes {
        Some(peak) => println!(
            "  peak RSS     {:.1} MB = {:.2} x uncompressed input ({})",
            peak as f64 / 1e6,
            peak as f64 / r.input_bytes.max(1) as f64,
            match r.rss_scope {
                RssScope::Trace => "this trace's peak: reset before it",
                RssScope::Process => "process-wide peak so far",
            }
        ),
        None => println!("  peak RSS     unavailable (no /proc/self/status)"),
    }
    if let (Some(peak), RssScope::Trace) = (r.replay_peak_rss_bytes, r.rss_scope) {
        println!(
            "  replay peak  {:.1} MB = {:.2} x uncompressed input (warm-up, before the analysis)",
            peak as f64 / 1e6,
            peak as f64 / r.input_bytes.max(1) as f64,
        );
    }
    if let (Some(peak), RssScope::Trace) = (r.ingest_peak_rss_bytes, r.rss_scope) {
        println!(
            "  ingest peak  {:.1} MB = {:.2} x uncompressed input (first read, from a reset)",
            peak as f64 / 1e6,
            peak as f64 / r.input_bytes.max(1) as f64,
        );
    }
    if let Some(error) = r.replay_error_median {
        println!(
            "  self-replay  median steady-step error {:+.2}%",
            error * 100.0
        );
    }
}

fn result_json(r: &TraceResult) -> serde_json::Value {
    let phases: serde_json::Map<String, serde_json::Value> = r
        .phases
        .iter()
        .map(|p| {
            let (min, median) = (p.samples.min(), p.samples.median());
            (
                p.name.to_string(),
                json!({
                    "min_s": min.as_secs_f64(),
                    "median_s": median.as_secs_f64(),
                    "samples_s": p.samples.0.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
                    "rate_unit": p.rate.unit(),
                    "rate_at_min": p.rate.per_second(min),
                    "rate_at_median": p.rate.per_second(median),
                }),
            )
        })
        .collect();
    json!({
        "trace": r.path.display().to_string(),
        "input_bytes": r.input_bytes,
        "records": r.records,
        "events": r.events,
        "tasks": r.tasks,
        "steps": r.steps,
        "skipped_records": r.skipped_records,
        "unlaunched_device_tasks": r.unlaunched_device_tasks,
        "inferred_edges": r.inferred_edges,
        "iterations": r.iterations,
        "phases": phases,
        "peak_rss_bytes": r.peak_rss_bytes,
        "peak_rss_scope": match r.rss_scope {
            RssScope::Trace => "trace",
            RssScope::Process => "process",
        },
        "peak_rss_per_input_byte": r.peak_rss_bytes.map(|p| p as f64 / r.input_bytes.max(1) as f64),
        "ingest_peak_rss_bytes": r.ingest_peak_rss_bytes,
        "replay_peak_rss_bytes": r.replay_peak_rss_bytes,
        "replay_error_median": r.replay_error_median,
        "ingest_cpu_mean_s": r.ingest_cpu_total.map(|cpu| cpu.as_secs_f64() / f64::from(r.iterations.max(1))),
    })
}
