//! Stragglers: for every matched collective, the rank that arrived last on aligned clocks, by
//! how much it alone delayed the collective, and what it was doing while the others waited
//! (mapped to its op, layer and phase by `analyze::mapping`).

use super::{CollectiveMatching, GlobalGraph, HostOp, RankGraph, WaitTransfer};
use crate::analyze::mapping::Phase;
use crate::graph::{EdgeKind, TaskId};
use stepcast_trace::LaneKind;

/// A stream predecessor ending at most this long before a collective starts held it back.
const STREAM_GATE_TOLERANCE_NS: i64 = 2_000;
/// The same for gloo's worker thread, which takes its next queued collective tens of µs after
/// the last (a thread's turnaround, not a stream's).
const WORKER_GATE_TOLERANCE_NS: i64 = 100_000;

/// What held the last rank back from a collective.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StragglerCause {
    /// Its stream was busy until just before: the previous device task.
    Stream { previous_task: String },
    /// Its host launched the collective late; the longest op the launching thread ran since
    /// its previous collective launch (or its step start).
    Host {
        longest_op: Option<String>,
        longest_op_ns: i64,
    },
    /// Posted to a worker thread (gloo) before the others arrived, on a worker that was idle:
    /// the worker took it `delay_ns` after the post (woken late on a busy CPU).
    Worker { delay_ns: i64 },
    /// Neither is in the trace (the collective was launched before the window opened).
    Unknown,
}

/// What the last rank was executing while the others waited for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Doing {
    /// The device task on the collective's stream (stream cause), or the innermost op of the
    /// launching thread covering at least half of the wait until the launch, else the op
    /// covering most of it (host cause).
    pub name: String,
    /// `thread N` or `stream N` of the last rank.
    pub lane: String,
    /// The op that launched the device task (stream cause; the op itself for host).
    pub op: Option<String>,
    pub layer: Option<String>,
    pub phase: Option<Phase>,
    /// How much of the wait (from the next-to-last rank's start to its own) it covers.
    pub overlap_ns: i64,
}

/// For a matched collective: the rank that arrived last, on aligned clocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Straggler {
    /// Index into the matching's (and the global graph's) collectives.
    pub collective: u32,
    pub group: String,
    pub seq: u32,
    pub op: String,
    pub last_rank: i64,
    /// How much later the last rank started its instance than the next-to-last rank: what it
    /// alone delayed the collective by.
    pub lead_ns: i64,
    /// From the first rank's start to the last rank's: the longest any rank waited.
    pub spread_ns: i64,
    pub cause: StragglerCause,
    pub doing: Option<Doing>,
}

/// The straggler of every matched collective, from the recorded starts on aligned clocks
/// (`split`'s last rank). Each looks only at the ops and tasks near its wait (binary searches
/// over the last rank's lanes), not at the whole lane: O(collectives × log lane).
pub fn stragglers(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    global: &GlobalGraph,
    split: &WaitTransfer,
) -> Vec<Straggler> {
    global
        .collectives
        .iter()
        .zip(&split.collectives)
        .enumerate()
        .map(|(k, (c, s))| {
            let last = s.last_rank.index();
            let second = s
                .instances
                .iter()
                .filter(|i| i.rank != s.last_rank)
                .map(|i| i.start_ns)
                .max()
                .unwrap_or(s.last_start_ns);
            let first = s
                .instances
                .iter()
                .map(|i| i.start_ns)
                .min()
                .unwrap_or(s.last_start_ns);
            let collective = &matching.matched[k];
            let local = collective
                .instance_on(s.last_rank)
                .unwrap_or(collective.instances[0]);
            // The collective of the same group before it, on the last rank.
            let previous_launch = matching.matched[..k]
                .iter()
                .rev()
                .take_while(|p| p.group == collective.group)
                .find_map(|p| p.instance_on(s.last_rank));
            let rank = &ranks[last];
            // The wait, in the last rank's own time.
            let shift = global.ranks[last].shift_ns;
            let wait = (second - shift, s.last_start_ns - shift);
            let cause = cause(rank, local, previous_launch, wait.0);
            let doing = doing(rank, local, &cause, wait);
            Straggler {
                collective: k as u32,
                group: c.group.clone(),
                seq: c.seq,
                op: c.op.clone(),
                last_rank: rank.rank,
                lead_ns: s.last_start_ns - second,
                spread_ns: s.last_start_ns - first,
                cause,
                doing,
            }
        })
        .collect()
}

/// Where a host asked for a collective: the launch call of a device collective, the task
/// holding the `c10d::` op that posted a host-run (gloo) one to its worker thread, or the
/// transfer itself where the posting thread ran it.
#[derive(Clone, Copy, Debug)]
struct Post {
    task: TaskId,
    /// The call, or the posting op, as recorded.
    start_ns: i64,
    end_ns: i64,
    /// Posted to a worker thread that runs it (gloo), not launched onto a stream.
    to_worker: bool,
}

fn posting(rank: &RankGraph, task: TaskId) -> Option<Post> {
    let graph = &rank.window.graph;
    graph
        .preds(task)
        .find_map(|e| {
            let from = graph.pred[e];
            let (start_ns, end_ns) = (
                graph.rec_start_ns[from.index()],
                graph.rec_end_ns[from.index()],
            );
            match graph.pred_kind[e] {
                EdgeKind::Launch => Some(Post {
                    task: from,
                    start_ns,
                    end_ns,
                    to_worker: false,
                }),
                // The holder may be a long op (an autograd node whose hook posts several buckets):
                // the post itself is the latest `c10d::` op inside it before the worker took it.
                EdgeKind::CollectivePost => {
                    let op = rank
                        .host_ops_starting(
                            graph.lane[from.index()],
                            start_ns,
                            graph.rec_start_ns[task.index()],
                        )
                        .filter(|o| rank.name(o.name).starts_with("c10d::"))
                        .last();
                    Some(match op {
                        Some(o) => Post {
                            task: from,
                            start_ns: o.start_ns,
                            end_ns: o.end_ns(),
                            to_worker: true,
                        },
                        None => Post {
                            task: from,
                            start_ns,
                            end_ns: start_ns,
                            to_worker: true,
                        },
                    })
                }
                _ => None,
            }
        })
        .or_else(|| {
            // A transfer the calling thread ran itself (gloo's send and receive of a CPU tensor,
            // inside its `c10d::` op): the thread arrived when it posted it.
            let start_ns = graph.rec_start_ns[task.index()];
            rank.host_ops_near(graph.lane[task.index()], start_ns, start_ns)
                .filter(|o| o.end_ns() >= start_ns && rank.name(o.name).starts_with("c10d::"))
                .last()
                .map(|o| Post {
                    task,
                    start_ns: o.start_ns,
                    end_ns: o.start_ns,
                    to_worker: false,
                })
        })
}

/// What held the last rank back from `task`, whose peers' next-to-last arrived at
/// `waited_from_ns` (its own clock).
fn cause(
    rank: &RankGraph,
    task: TaskId,
    previous: Option<TaskId>,
    waited_from_ns: i64,
) -> StragglerCause {
    let graph = &rank.window.graph;
    let start = graph.rec_start_ns[task.index()];
    let stream_pred = graph.lane_pred(task);
    let post = posting(rank, task);
    // A thread that ran its transfer itself is no queue its previous work held it in.
    let own_thread = post.is_some_and(|p| p.task == task);
    let tolerance_ns = match graph.lanes[graph.lane[task.index()] as usize].kind {
        LaneKind::CpuThread => WORKER_GATE_TOLERANCE_NS,
        LaneKind::DeviceStream => STREAM_GATE_TOLERANCE_NS,
    };
    let stream_busy =
        stream_pred.is_some_and(|p| graph.rec_end_ns[p.index()] >= start - tolerance_ns);
    let call_early =
        post.is_none_or(|c| stream_pred.is_some_and(|p| c.start_ns < graph.rec_end_ns[p.index()]));
    if let Some(p) = stream_pred.filter(|_| stream_busy && call_early && !own_thread) {
        return StragglerCause::Stream {
            previous_task: rank.name(graph.name[p.index()]).to_string(),
        };
    }
    let Some(post) = post else {
        return StragglerCause::Unknown;
    };
    // Posted to another thread before anyone waited: the host was not late, its worker was.
    if post.to_worker && post.end_ns <= waited_from_ns {
        return StragglerCause::Worker {
            delay_ns: start - post.end_ns,
        };
    }
    let thread = graph.lane[post.task.index()];
    let since = previous
        .and_then(|p| posting(rank, p))
        .filter(|p| graph.lane[p.task.index()] == thread)
        .map(|p| p.end_ns)
        .or_else(|| {
            let step = graph.step[post.task.index()];
            rank.window.steps.get(step as usize).map(|s| s.start_ns)
        })
        .unwrap_or(i64::MIN);
    let longest = rank
        .host_ops_starting(thread, since, post.start_ns)
        .filter(|e| e.end_ns() <= post.start_ns)
        .max_by_key(|e| (e.dur_ns, std::cmp::Reverse(e.start_ns)));
    StragglerCause::Host {
        longest_op: longest.map(|e| rank.name(e.name).to_string()),
        longest_op_ns: longest.map_or(0, |e| e.dur_ns),
    }
}

fn overlap(a: (i64, i64), b: (i64, i64)) -> i64 {
    (a.1.min(b.1) - a.0.max(b.0)).max(0)
}

/// What the last rank ran during `wait` (its own times): on the collective's stream when the
/// stream held it back, else on the thread that launched it, until the launch.
fn doing(
    rank: &RankGraph,
    task: TaskId,
    cause: &StragglerCause,
    wait: (i64, i64),
) -> Option<Doing> {
    let graph = &rank.window.graph;
    let layer = |t: TaskId| rank.layer(t).map(|n| rank.name(n).to_string());
    let op = |t: TaskId| rank.op(t).map(|n| rank.name(n).to_string());
    match cause {
        StragglerCause::Stream { .. } => {
            let graph_lane = graph.lane[task.index()];
            // Only tasks ending after the wait began can overlap it.
            let busiest = rank
                .lane_tasks_ending_after(task, wait.0)
                .map(TaskId)
                .map(|t| {
                    let span = (graph.rec_start_ns[t.index()], graph.rec_end_ns[t.index()]);
                    (overlap(span, wait), std::cmp::Reverse(t.0), t)
                })
                .max()
                .filter(|&(ns, ..)| ns > 0)
                .map(|(ns, _, t)| (t, ns))
                .or_else(|| graph.lane_pred(task).map(|t| (t, 0)))?;
            let (t, overlap_ns) = busiest;
            Some(Doing {
                name: rank.name(graph.name[t.index()]).to_string(),
                lane: rank.lane_labels[graph_lane as usize].clone(),
                op: op(t),
                layer: layer(t),
                phase: Some(rank.phase[t.index()]),
                overlap_ns,
            })
        }
        StragglerCause::Host { .. } => {
            let post = posting(rank, task)?;
            let graph_lane = graph.lane[post.task.index()];
            let call_start = post.start_ns;
            let window = if call_start > wait.0 {
                (wait.0, wait.1.min(call_start))
            } else {
                wait
            };
            let covered: Vec<(HostOp, i64)> = rank
                .host_ops_near(graph_lane, window.0, window.1)
                .map(|e| (e, overlap((e.start_ns, e.end_ns()), window)))
                .filter(|&(_, ns)| ns > 0)
                .collect();
            // The innermost op covering at least half of the wait, else the op covering most.
            let half = (window.1 - window.0 + 1) / 2;
            let op_covering = covered
                .iter()
                .filter(|&&(_, ns)| ns >= half)
                .min_by_key(|&&(e, _)| (e.dur_ns, std::cmp::Reverse(e.start_ns)))
                .or_else(|| {
                    covered
                        .iter()
                        .max_by_key(|&&(e, ns)| (ns, std::cmp::Reverse(e.start_ns)))
                })
                .copied();
            // A thread blocked in `work.wait()` runs no op: it was waiting for the collective
            // its `collective_wait` edge comes from (its previous one, on gloo's worker), and
            // then for its own wake-up, until the task that posted this one resumed it.
            let resumed_ns = graph.rec_start_ns[post.task.index()];
            let blocked_on = graph
                .preds(post.task)
                .filter(|&e| graph.pred_kind[e] == EdgeKind::CollectiveWait)
                .map(|e| graph.pred[e])
                .map(|t| {
                    let span = (
                        graph.rec_start_ns[t.index()],
                        graph.rec_end_ns[t.index()].max(resumed_ns),
                    );
                    (overlap(span, window), std::cmp::Reverse(t.0), t)
                })
                .max()
                .filter(|&(ns, ..)| ns > op_covering.map_or(0, |(_, covered_ns)| covered_ns));
            if let Some((overlap_ns, _, t)) = blocked_on {
                return Some(Doing {
                    name: rank.name(graph.name[t.index()]).to_string(),
                    lane: rank.lane_labels[graph.lane[t.index()] as usize].clone(),
                    op: op(t),
                    layer: layer(t),
                    phase: Some(rank.phase[t.index()]),
                    overlap_ns,
                });
            }
            let (event, overlap_ns) = op_covering?;
            // Its layer and phase: those of the first task its thread ran inside it, else of
            // the last one before it (the lane's tasks are in recorded order, by start).
            let lane = &graph.lanes[graph_lane as usize];
            let starts = &graph.rec_start_ns
                [lane.first_task as usize..(lane.first_task + lane.task_count) as usize];
            let from = starts.partition_point(|&s| s < event.start_ns);
            let inside = starts
                .get(from)
                .filter(|&&s| s < event.end_ns())
                .map(|_| TaskId(lane.first_task + from as u32));
            let before = || {
                from.checked_sub(1)
                    .map(|i| TaskId(lane.first_task + i as u32))
            };
            let context = inside.or_else(before);
            Some(Doing {
                name: rank.name(event.name).to_string(),
                lane: rank.lane_labels[graph_lane as usize].clone(),
                op: Some(rank.name(event.name).to_string()),
                layer: context.and_then(layer),
                phase: context.map(|t| rank.phase[t.index()]),
                overlap_ns,
            })
        }
        StragglerCause::Worker { .. } | StragglerCause::Unknown => None,
    }
}
