//! `stepcast-bench job` and `ranks`: the multi-rank pipeline on job folders of N ranks.
//!
//! `job` writes a folder of N rank files made from real rank traces: rank k is source
//! `k mod sources`, its steps repeated to `--target-bytes` (as `synthesize` does), its
//! `distributedInfo` rewritten to rank k of N and its clock moved by a deterministic offset of
//! up to `--max-clock-offset-us` (whole microseconds; rank 0 keeps its clock). `ranks` times
//! each stage of `stepcast replay DIR` on such a folder: wall time, CPU time (user + system,
//! all threads) and peak RSS of the stage.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use rayon::prelude::*;
use serde_json::json;
use stepcast::graph::{BuildOptions, build};
use stepcast::ranks::{
    RankGraph, ReducedRank, TransferModel, align_clocks, global_graph, match_collectives,
    recorded_rank, replay_global, split_wait_transfer, stragglers,
};
use stepcast_report::json::ranks::{RankDetail, ranks_json};

use crate::measure::{peak_rss_bytes, reset_peak_rss};
use crate::synthesize::{AsRank, synthesize_as};

/// The trace files of `paths`: files as given, directories expanded to their `.json` and
/// `.json.gz` files, sorted by name.
fn trace_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let mut found = stepcast_trace::trace_files_in(path)
            .with_context(|| format!("cannot list {}", path.display()))?;
        if found.is_empty() {
            // A folder of reduced ranks (`stepcast reduce`).
            found = std::fs::read_dir(path)?
                .map(|entry| entry.map(|e| e.path()))
                .collect::<Result<Vec<_>, _>>()?;
            found.retain(|p| p.extension().is_some_and(|e| e == "stepcast-rank"));
            found.sort();
        }
        files.extend(found);
    }
    if files.is_empty() {
        bail!("no trace files (.json or .json.gz) or reduced ranks in the paths given");
    }
    Ok(files)
}

/// A deterministic clock offset for rank `k` in `-max..=max` µs (0 for rank 0), in ns.
fn clock_offset_ns(k: u64, max_us: u64) -> i64 {
    if k == 0 || max_us == 0 {
        return 0;
    }
    // A multiplicative hash: offsets spread over the range without a random generator.
    let spread = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
    let us = (spread % (2 * max_us + 1)) as i64 - max_us as i64;
    us * 1_000
}

/// Writes the job folder.
pub fn job(
    sources: &[PathBuf],
    ranks: u64,
    target_bytes: u64,
    max_clock_offset_us: u64,
    output: &Path,
) -> anyhow::Result<()> {
    let sources = trace_files(sources)?;
    std::fs::create_dir_all(output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let width = ranks.saturating_sub(1).to_string().len().max(4);
    (0..ranks).into_par_iter().try_for_each(|k| {
        let source = &sources[(k % sources.len() as u64) as usize];
        let file = output.join(format!("rank{k:0width$}.json"));
        let as_rank = AsRank {
            rank: k as i64,
            world_size: ranks as i64,
            clock_offset_ns: clock_offset_ns(k, max_clock_offset_us),
        };
        synthesize_as(source, target_bytes, &file, Some(as_rank))
    })
}

/// User + system CPU time of the process so far (all threads), in seconds.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (in parentheses, which may hold spaces).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Linux reports clock ticks of USER_HZ, 100 per second on every architecture it runs on.
    Some((utime + stime) / 100.0)
}

struct Stage {
    name: &'static str,
    wall_s: f64,
    cpu_s: Option<f64>,
    peak_rss_bytes: Option<u64>,
}

/// Runs `work` as one stage: its wall and CPU time, and the peak RSS while it ran.
fn stage<T>(stages: &mut Vec<Stage>, name: &'static str, work: impl FnOnce() -> T) -> T {
    let peak_from_here = reset_peak_rss();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let out = work();
    let wall_s = started.elapsed().as_secs_f64();
    let cpu_s = cpu_before.zip(cpu_seconds()).map(|(a, b)| b - a);
    stages.push(Stage {
        name,
        wall_s,
        cpu_s,
        peak_rss_bytes: if peak_from_here {
            peak_rss_bytes()
        } else {
            None
        },
    });
    out
}

/// Times every stage of the multi-rank replay of the ranks in `paths`.
pub fn ranks(paths: &[PathBuf], json_out: bool) -> anyhow::Result<()> {
    let files = trace_files(paths)?;
    let input_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum();
    let mut stages = Vec::new();
    let started = Instant::now();
    let cpu_start = cpu_seconds();
    let read: Vec<anyhow::Result<RankGraph>> = stage(&mut stages, "read + reduce", || {
        files
            .par_iter()
            .enumerate()
            .map(|(position, file)| {
                let bytes = std::fs::read(file)?;
                if stepcast::ranks::is_reduced(&bytes) {
                    // A rank reduced by `stepcast reduce`: what the reduce node reads.
                    let reduced = ReducedRank::from_bytes(&bytes)
                        .with_context(|| format!("{}", file.display()))?;
                    let mut graph = reduced.graph;
                    graph.rank = reduced.recorded_rank.unwrap_or(position as i64);
                    return Ok(graph);
                }
                drop(bytes);
                let trace = stepcast_trace::read_trace(file)?;
                let window = build(&trace, &BuildOptions::default());
                let rank = recorded_rank(&trace).unwrap_or(position as i64);
                Ok(RankGraph::new(rank, &trace, window))
            })
            .collect()
    });
    let mut ranks = read.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    ranks.sort_by_key(|r| r.rank);
    let matching = stage(&mut stages, "match", || match_collectives(&ranks));
    let alignment = stage(&mut stages, "align clocks", || {
        align_clocks(&ranks, &matching)
    })?;
    let global = stage(&mut stages, "global graph", || {
        global_graph(&ranks, &matching, &alignment, TransferModel::default())
    });
    let replay = stage(&mut stages, "global replay", || replay_global(&global))?;
    let (wait_transfer, late) = stage(&mut stages, "split + stragglers", || {
        let split = split_wait_transfer(&ranks, &matching, &global);
        let late = stragglers(&ranks, &matching, &global, &split);
        (split, late)
    });
    let report = stepcast::ranks::RanksReport {
        matching,
        alignment,
        replay,
        wait_transfer,
        stragglers: late,
        lane_names: global.lane_names.clone(),
    };
    let json_bytes = stage(&mut stages, "JSON", || {
        serde_json::to_vec(&ranks_json(&report, &RankDetail::None)).map(|v| v.len())
    })?;
    let total_wall_s = started.elapsed().as_secs_f64();
    let total_cpu_s = cpu_start.zip(cpu_seconds()).map(|(a, b)| b - a);
    let tasks = global.graph.task_count();
    if json_out {
        let document = json!({
            "ranks": ranks.len(),
            "input_bytes": input_bytes,
            "global_tasks": tasks,
            "json_bytes": json_bytes,
            "threads": rayon::current_num_threads(),
            "total": {"wall_s": total_wall_s, "cpu_s": total_cpu_s},
            "stages": stages.iter().map(|s| json!({
                "stage": s.name,
                "wall_s": s.wall_s,
                "cpu_s": s.cpu_s,
                "peak_rss_bytes": s.peak_rss_bytes,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&document)?);
        return Ok(());
    }
    println!(
        "{} ranks, {:.1} MB of traces, {} global tasks, {:.2} MB of JSON, {} threads",
        ranks.len(),
        input_bytes as f64 / 1e6,
        tasks,
        json_bytes as f64 / 1e6,
        rayon::current_num_threads()
    );
    println!(
        "{:<20} {:>9} {:>9} {:>6} {:>12}",
        "stage", "wall s", "cpu s", "cpu/wall", "peak RSS MB"
    );
    for s in &stages {
        println!(
            "{:<20} {:>9.3} {:>9} {:>6} {:>12}",
            s.name,
            s.wall_s,
            s.cpu_s.map_or_else(|| "n/a".into(), |c| format!("{c:.2}")),
            s.cpu_s
                .filter(|_| s.wall_s > 0.0)
                .map_or_else(|| "n/a".into(), |c| format!("{:.2}", c / s.wall_s)),
            s.peak_rss_bytes
                .map_or_else(|| "n/a".into(), |b| format!("{:.0}", b as f64 / 1e6)),
        );
    }
    println!(
        "{:<20} {:>9.3} {:>9}",
        "total",
        total_wall_s,
        total_cpu_s.map_or_else(|| "n/a".into(), |c| format!("{c:.2}"))
    );
    Ok(())
}
