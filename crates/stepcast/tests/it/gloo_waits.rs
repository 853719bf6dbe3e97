//! A thread that waits for gloo's work on another thread (`work.wait()`, which records
//! nothing) waits for it in the graph: recorded gloo jobs of `stepcast/cpu-jobs/` and
//! `stepcast/cpu-ddp-pairs/` (their scripts beside them), checked against their own events.

use stepcast::analyze::critical::{Bound, share_bound, step_critical_path};
use stepcast::graph::{BuildOptions, EdgeKind, TaskId, build};
use stepcast::ranks::{RankGraph, RankId, StragglerCause, recorded_rank, replay_rank_graphs};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::{EditGraph, HostGaps, Selection};
use stepcast_trace::{EventKind, LaneId, Trace, read_trace};

use crate::load;

/// Rank 0 of a DDP job, a tensor × data parallel job, a pipeline and an FSDP job.
const GLOO_RANKS: [&str; 4] = [
    "stepcast/cpu-ddp-pairs/ddp-gloo2/rank0.json.gz",
    "stepcast/cpu-jobs/tp2dp2/rank0.json.gz",
    "stepcast/cpu-jobs/pipelining-pp2dp2/rank0.json.gz",
    "stepcast/cpu-jobs/fsdp2x2/rank0.json.gz",
];

/// The thread's ops and annotations, at every depth, as `(start, end)`.
fn thread_ranges(trace: &Trace, lane: LaneId) -> Vec<(i64, i64)> {
    trace
        .events
        .iter()
        .filter(|e| e.lane == lane)
        .filter(|e| matches!(e.kind, EventKind::CpuOp | EventKind::UserAnnotation))
        .filter(|e| !trace.name(e.name).starts_with("gloo:"))
        .map(|e| (e.start_ns, e.end_ns()))
        .collect()
}

/// Every `collective_wait` edge leaves a gloo range of another lane, and its target's thread
/// ran nothing (as its events record) from 100 µs before that range ended until it resumed,
/// within the recorded wake-up; the lane keeps no more than that wake-up as its gap. At least
/// one wait a step: each of these programs waits for a collective every step.
#[test]
fn a_thread_that_waited_for_gloo_work_waits_for_it_in_the_graph() {
    for relative in GLOO_RANKS {
        let (trace, window) = load(relative);
        let g = &window.graph;
        let mut waits = 0;
        // Each thread's ranges, read once.
        let mut ranges: std::collections::BTreeMap<LaneId, Vec<(i64, i64)>> =
            std::collections::BTreeMap::new();
        for t in 0..g.task_count() {
            let task = TaskId(t as u32);
            for e in g.preds(task) {
                if g.pred_kind[e] != EdgeKind::CollectiveWait {
                    continue;
                }
                waits += 1;
                let source = g.pred[e].index();
                assert!(
                    trace.name(g.name[source]).starts_with("gloo:"),
                    "{relative}: a wait for {}",
                    trace.name(g.name[source])
                );
                assert_ne!(
                    g.lane[source], g.lane[t],
                    "{relative}: a wait on its own lane"
                );
                let (ended, resumed) = (g.rec_end_ns[source], g.rec_start_ns[t]);
                assert_eq!(resumed - ended, g.pred_lag_ns[e], "{relative}");
                assert!(
                    ended <= resumed,
                    "{relative}: resumed before the collective ended"
                );
                let lane = g.lanes[g.lane[t] as usize].trace_lane;
                let thread = ranges
                    .entry(lane)
                    .or_insert_with(|| thread_ranges(&trace, lane));
                let busy = thread.iter().copied().find(|&(start, end)| {
                    let around = start <= ended - 100_000 && end >= resumed;
                    !around && start < resumed && end > ended - 100_000
                });
                assert_eq!(
                    busy, None,
                    "{relative}: the thread ran this while it was taken to wait (collective \
                     ended at {ended}, thread resumed at {resumed})"
                );
                if let Some(before) = g.lane_pred(task) {
                    assert!(g.gap_ns[before.index()] <= g.pred_lag_ns[e], "{relative}");
                }
            }
        }
        assert!(
            waits >= window.steps.len() - 1,
            "{relative}: {waits} waits in {} steps",
            window.steps.len()
        );
    }
}

/// Halving every gloo collective (its transfer and its wait for peers) releases the threads
/// that waited for them earlier, and the window ends earlier: the waits are the collectives',
/// not recorded gaps of the waiting thread.
#[test]
fn a_faster_gloo_collective_releases_the_thread_that_waited_for_it() {
    for relative in GLOO_RANKS {
        let (trace, mut window) = load(relative);
        let baseline =
            simulate(&window.graph, &RecordedOrder, SimOptions::default()).expect("replay");
        let g = &mut window.graph;
        let waiting: Vec<usize> = (0..g.task_count())
            .filter(|&t| {
                g.preds(TaskId(t as u32))
                    .any(|e| g.pred_kind[e] == EdgeKind::CollectiveWait)
            })
            .collect();
        assert!(
            !waiting.is_empty(),
            "{relative}: no thread waited for gloo work"
        );
        for t in 0..g.task_count() {
            if !g.kind[t].on_device() && trace.name(g.name[t]).starts_with("gloo:") {
                g.dur_ns[t] /= 2;
                g.peer_wait_ns[t] /= 2;
            }
        }
        let faster =
            simulate(&window.graph, &RecordedOrder, SimOptions::default()).expect("replay");
        let moved = waiting
            .iter()
            .filter(|&&t| faster.begin_ns[t] < baseline.begin_ns[t] - 50_000)
            .count();
        assert!(
            moved * 2 >= waiting.len(),
            "{relative}: {moved} of {} waiting tasks released earlier",
            waiting.len()
        );
        let end = |ends: &[i64]| ends.iter().copied().max().unwrap_or(0);
        assert!(
            end(&faster.end_ns) < end(&baseline.end_ns),
            "{relative}: the window did not end earlier"
        );
    }
}

/// On each steady step, the critical path's communication is at least half the time the step
/// thread ran no op while a gloo range of another thread was in flight (from the recorded
/// events): a wait for a collective is communication, not the CPU work of the op after it.
#[test]
fn the_critical_path_charges_a_wait_for_gloo_work_to_communication() {
    for relative in GLOO_RANKS {
        let (trace, window) = load(relative);
        let g = &window.graph;
        let timeline = simulate(g, &RecordedOrder, SimOptions::default()).expect("replay");
        let step_lane = trace.steps[0].lane;
        let mut thread = thread_ranges(&trace, step_lane);
        thread.sort_unstable();
        let gloo: Vec<(i64, i64)> = trace
            .events
            .iter()
            .filter(|e| e.lane != step_lane && trace.name(e.name).starts_with("gloo:"))
            .map(|e| (e.start_ns, e.end_ns()))
            .collect();
        for (index, step) in window.steps.iter().enumerate().skip(1) {
            let (from, to) = (step.start_ns, step.marker_end_ns);
            // The step thread's idle stretches inside the step.
            let mut idle = Vec::new();
            let mut reach = from;
            for &(start, end) in &thread {
                if start > reach && start > from && reach < to {
                    idle.push((reach, start.min(to)));
                }
                reach = reach.max(end);
            }
            let waited: i64 = idle
                .iter()
                .map(|&(a, b)| {
                    let mut covered: Vec<(i64, i64)> = gloo
                        .iter()
                        .map(|&(s, e)| (s.max(a), e.min(b)))
                        .filter(|&(s, e)| e > s)
                        .collect();
                    covered.sort_unstable();
                    let (mut total, mut at) = (0, i64::MIN);
                    for (s, e) in covered {
                        let s = s.max(at);
                        if e > s {
                            total += e - s;
                            at = e;
                        }
                    }
                    total
                })
                .sum();
            let path = step_critical_path(&trace, &window, &timeline, index);
            let communication: i64 = path
                .path
                .shares
                .iter()
                .filter(|s| share_bound(&trace, g, s) == Bound::Communication)
                .map(|s| s.ns)
                .sum();
            assert!(
                2 * communication >= waited,
                "{relative} step {index}: {communication} ns of communication on the path, \
                 {waited} ns waited for gloo"
            );
        }
    }
}

/// Removing the task a thread resumed into after a wait (a model that drops ops drops it: the
/// optimizer's first op after DDP's last bucket) leaves the thread waiting: the next task of
/// the thread begins no earlier than the collective ended, in the edited graph's replay.
#[test]
fn removing_the_task_after_a_wait_keeps_the_wait() {
    let (_, window) = load(GLOO_RANKS[0]);
    let g = &window.graph;
    let mut waits: Vec<(usize, usize)> = Vec::new();
    for t in 0..g.task_count() {
        for e in g.preds(TaskId(t as u32)) {
            if g.pred_kind[e] == EdgeKind::CollectiveWait {
                waits.push((g.pred[e].index(), t));
            }
        }
    }
    let targets: Vec<usize> = waits.iter().map(|&(_, t)| t).collect();
    // Waits whose target has a next task on its thread, itself not removed.
    waits.retain(|&(_, t)| {
        t + 1 < g.task_count() && g.lane[t + 1] == g.lane[t] && !targets.contains(&(t + 1))
    });
    assert!(!waits.is_empty());
    let mut edit = EditGraph::new(
        g,
        window.report.launch_latency_ns,
        window.report.dispatch_gap_ns,
    );
    let removed = Selection::new(waits.iter().map(|&(_, t)| TaskId(t as u32)).collect());
    edit.remove(&removed, HostGaps::Drop).expect("remove");
    let (edited, new_id) = edit.finish().expect("a valid graph");
    let timeline = simulate(&edited, &RecordedOrder, SimOptions::default()).expect("replay");
    for (source, target) in waits {
        let (source, next) = (new_id[source].index(), new_id[target + 1].index());
        assert!(
            timeline.begin_ns[next] >= timeline.end_ns[source],
            "the task after a removed wait began {} ns before the collective it waited for ended",
            timeline.end_ns[source] - timeline.begin_ns[next]
        );
    }
}

/// Every rank of the job folder `dir`, with its graph, sorted by rank.
fn job_ranks(dir: &str) -> Vec<(i64, Trace, stepcast::Window)> {
    let dir = crate::testdata(dir);
    let mut ranks: Vec<(i64, Trace, stepcast::Window)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.map(|e| e.path()).unwrap_or_else(|e| panic!("{e}")))
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .map(|path| {
            let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
            let rank = recorded_rank(&trace).unwrap_or_else(|| panic!("{}", path.display()));
            let window = build(&trace, &BuildOptions::default());
            (rank, trace, window)
        })
        .collect();
    ranks.sort_by_key(|r| r.0);
    ranks
}

/// A gloo collective's straggler is charged to what the thread that posted it was running
/// (the `c10d::` op's thread, found through its `collective_post` edge, or the thread itself
/// for a transfer it ran inside its `c10d::` op), as a device collective's is to its launching
/// thread: no straggler whose instance was posted is left
/// without a cause, and each activity named is an op that thread recorded during the wait,
/// read from the trace's own events (a TP × DP, a pipeline, an FSDP and an expert-parallel job).
#[test]
fn a_gloo_straggler_is_charged_to_the_thread_that_posted_its_collective() {
    for dir in [
        "stepcast/cpu-jobs/tp2dp2",
        "stepcast/cpu-jobs/pp2dp2",
        "stepcast/cpu-jobs/fsdp2x2",
        "stepcast/cpu-jobs/ep2dp2",
    ] {
        let ranks = job_ranks(dir);
        let views: Vec<RankGraph> = ranks
            .iter()
            .map(|(rank, trace, window)| RankGraph::new(*rank, trace, window.clone()))
            .collect();
        let report = replay_rank_graphs(&views).unwrap_or_else(|e| panic!("{dir}: {e}"));
        let (mut charged, mut long_waits, mut named) = (0, 0, 0);
        for s in &report.stragglers {
            let q = ranks
                .iter()
                .position(|r| r.0 == s.last_rank)
                .unwrap_or_else(|| panic!("{s:?}"));
            let (_, trace, window) = &ranks[q];
            let g = &window.graph;
            let c = &report.matching.matched[s.collective as usize];
            let task = c
                .instance_on(RankId(q as u32))
                .unwrap_or_else(|| panic!("{dir}: {s:?}"));
            // Posted to a worker, or run by the posting thread inside its `c10d::` op.
            let start = g.rec_start_ns[task.index()];
            let trace_lane = g.lanes[g.lane[task.index()] as usize].trace_lane;
            let posted = g
                .preds(task)
                .any(|e| g.pred_kind[e] == EdgeKind::CollectivePost)
                || trace.events.iter().any(|e| {
                    e.lane == trace_lane
                        && trace.name(e.name).starts_with("c10d::")
                        && (e.start_ns..=e.end_ns()).contains(&start)
                });
            if !posted {
                continue;
            }
            assert!(!matches!(s.cause, StragglerCause::Unknown), "{dir}: {s:?}");
            charged += 1;
            // A wait of 100 µs or more: the thread ran something traced in it, and it is named.
            // (A shorter one may fall in a gap between ops; a transfer's sender that began
            // before its receiver delayed no one.)
            let long = s.lead_ns >= 100_000;
            long_waits += usize::from(long);
            let (StragglerCause::Host { .. }, Some(doing)) = (&s.cause, &s.doing) else {
                continue;
            };
            assert!((0..=s.lead_ns).contains(&doing.overlap_ns), "{dir}: {s:?}");
            // The wait on the rank's own clock: the lead before its instance began.
            let wait = (start - s.lead_ns, start);
            let on_lane = |e: &stepcast_trace::Event| {
                format!("thread {}", trace.lanes[e.lane.index()].tid) == doing.lane
                    && trace.name(e.name) == doing.name
            };
            let recorded = if doing.name.starts_with("gloo:") {
                // Blocked in `work.wait()` on that collective: it began before the wait ended,
                // and ended at most the longest wake-up (5 ms) before the wait began.
                trace
                    .events
                    .iter()
                    .any(|e| on_lane(e) && e.start_ns < wait.1 && e.end_ns() + 5_000_000 > wait.0)
            } else {
                trace.events.iter().any(|e| {
                    on_lane(e)
                        && e.end_ns().min(wait.1) - e.start_ns.max(wait.0)
                            >= doing.overlap_ns - 1_000
                })
            };
            assert!(
                recorded,
                "{dir}: no {doing:?} in the trace's events during {wait:?}"
            );
            named += usize::from(long);
        }
        assert!(
            charged * 2 >= report.stragglers.len(),
            "{dir}: {charged} of {} stragglers charged to a posting thread",
            report.stragglers.len()
        );
        assert!(
            named * 10 >= long_waits * 9,
            "{dir}: {named} of {long_waits} stragglers that held the others 100 µs name an op"
        );
    }
}
