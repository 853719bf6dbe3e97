//! Collectives matched across ranks by identity. NCCL requires every member of a process group
//! to issue the group's collectives in the same order, so a collective is named by its group
//! and its place in that order. The place comes from the best record there is:
//!
//! 1. the per-group sequence number PyTorch writes (`Seq`, with `Process Group Name`): the same
//!    number on every rank, whatever the window cut;
//! 2. else the step (`ProfilerStep#N`) that launched it and its order within the step, the
//!    group being the recorded process group or, without one, the device stream (PyTorch gives
//!    every NCCL communicator its own stream);
//! 3. else (launched outside any step) its order on the stream.
//!
//! Under 2 and 3 a rank's window may start or end inside a step, so one rank's list of a step's
//! collectives can lack the first (or last) few. Each rank's list is placed within the longest
//! rank's list at the offset where the collective types agree and the kernels' recorded ends
//! differ by the most constant amount (a collective ends at nearly the same instant on every
//! rank, so its end-time difference is the clock offset; at a wrong offset it also carries the
//! gaps between collectives). A collective some rank lacks is then unmatched on its own,
//! instead of shifting every later pair.

use std::collections::BTreeMap;

use stepcast_trace::{CommArgs, LaneKind, Trace};

use super::host_groups::{HostGroupInference, HostGroups, infer_host_groups};
use super::timed_transfers::pair_by_time;
use super::transfer_clocks::pairing_clocks;
use super::transfer_peers::resolve_transfer_peers;
use super::{RankGraph, RankId, RankTrace, lane_label};
use crate::Window;
use crate::analyze::mapping::{Mapping, map};
use crate::comm::calibrate::comm_args;
use crate::graph::{NO_STEP, TaskId, TaskKind, is_host_collective};

/// How a collective's identity (its group and place) was found.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum GroupSource {
    /// The recorded process group and per-group sequence number (`Seq`).
    RecordedSeq,
    /// The recorded process group; the place is the step number and the order within the step.
    GroupStepOrder,
    /// No process-group metadata: the device stream stands for the group; the place is the
    /// step number and the order within the step.
    StepOrder,
    /// Launched outside any `ProfilerStep`: the order on its stream (or recorded group).
    StreamOrder,
    /// Run by host threads with no group recorded (gloo), the group inferred from the groups
    /// the ranks declare and the collectives each worker thread ran (see
    /// `super::host_groups`); the place is the step and the order within it.
    Inferred,
    /// A point-to-point transfer (gloo's `send`/`recv`): its group is the pair (sender,
    /// receiver) the posting op records; the place is its order between the two over the
    /// window (transfers between two ranks arrive in the order they were posted).
    PeerOrder,
    /// A point-to-point transfer whose posting op records no peer (traced without
    /// `record_shapes`), paired by the two sides' times (see `super::timed_transfers`):
    /// its group is the pair (sender, receiver) so found; the place, as under
    /// [`GroupSource::PeerOrder`].
    PeerByTime,
}

impl GroupSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupSource::RecordedSeq => "recorded_seq",
            GroupSource::GroupStepOrder => "group_step_order",
            GroupSource::StepOrder => "step_order",
            GroupSource::StreamOrder => "stream_order",
            GroupSource::Inferred => "inferred",
            GroupSource::PeerOrder => "peer_order",
            GroupSource::PeerByTime => "peer_by_time",
        }
    }

    /// Whether the collectives so found are point-to-point transfers: a pair of a sender
    /// and a receiver, not a group whose members all post the same collective.
    pub fn is_transfer(self) -> bool {
        matches!(self, GroupSource::PeerOrder | GroupSource::PeerByTime)
    }
}

/// One collective kernel of one rank.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CollectiveInstance {
    pub task: TaskId,
    /// The collective's type from the kernel name (`AllReduce`, `SendRecv`, ...).
    pub op: String,
    /// The recorded process group, else `stream N` (the recorded stream, where every rank runs
    /// its collectives on the same stream ids) or `stream#i` (streams numbered by first use).
    pub group: String,
    pub source: GroupSource,
    /// `N` of the `ProfilerStep#N` that launched it, if any.
    pub step: Option<u64>,
    /// Its place: the recorded sequence number under [`GroupSource::RecordedSeq`]; otherwise,
    /// once matched, its position in the group (over the window's steps, in step order) on the
    /// longest rank, and before matching ([`rank_collectives`]) its order on this rank.
    pub seq: u32,
    /// Elements of its message as recorded (`In msg nelems`, else the elements of the op's
    /// tensor inputs): part of what tells one group's collectives from another's.
    pub elements: Option<i64>,
    /// A point-to-point transfer's direction and the other side's rank number, as the op
    /// that posted it records them (see [`GroupSource::PeerOrder`]), or as its times pair it
    /// (see [`GroupSource::PeerByTime`]).
    pub peer: Option<Peer>,
    /// A host (gloo) transfer's side as its rank ran it, peer recorded or not.
    pub transfer: Option<HostTransfer>,
}

/// One side of a host (gloo) point-to-point transfer, as its rank ran it: what the pairing
/// by time reads where the posting op records no peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostTransfer {
    /// Whether this rank sends (`gloo:send`; else it receives, `gloo:recv`).
    pub sends: bool,
    /// The task holding the op that posted it (`c10d::send`, `c10d::recv_`), else its range's
    /// own: where a send starts.
    pub posted_by: TaskId,
    /// When the posting op started and when the range ended, on the rank's recorded clock
    /// (as the graph's times): gloo sends only once the receiver has posted its receive, so
    /// the two sides of one transfer overlap between these.
    pub posted_ns: i64,
    pub done_ns: i64,
    /// The pipeline schedule's action that posted it, where the schedule's runtime names one
    /// (`torch.distributed.pipelining`: `PP:1SEND_F0`): the stage and microbatch say which
    /// receive a send's data goes to, where the trace records no peer.
    pub pipeline: Option<stepcast_trace::PipelineTransfer>,
}

impl CollectiveInstance {
    /// Its elements where they tell which collective it is: every member of a collective
    /// passes the same elements, except an all-to-all's, whose input differs between its
    /// members where its splits are uneven (a mixture of experts' tokens, as many as its
    /// router sent each rank's experts).
    pub(crate) fn elements_alike(&self) -> Option<i64> {
        match crate::comm::Collective::parse(&self.op) {
            Some(crate::comm::Collective::AllToAll) => None,
            _ => self.elements,
        }
    }
}

/// The other side of a point-to-point transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Peer {
    /// Whether this rank sends (else it receives).
    pub sends: bool,
    /// The other side's rank number, as the posting op records it (`c10d::send`'s `dst`,
    /// `c10d::recv_`'s `src`): its rank in the process group the transfer ran on, which the
    /// op does not record (the world rank on the world group; see
    /// [`super::transfer_peers`] for how the job's groups place it).
    pub rank: i64,
}

impl Peer {
    /// The group name of a transfer from `sender` to `receiver`.
    pub fn group(sender: i64, receiver: i64) -> String {
        format!("p2p {sender}->{receiver}")
    }

    /// (sender, receiver) of a [`Peer::group`] name.
    fn pair_of(group: &str) -> Option<(i64, i64)> {
        let (sender, receiver) = group.strip_prefix("p2p ")?.split_once("->")?;
        Some((sender.parse().ok()?, receiver.parse().ok()?))
    }
}

/// A collective found on every member of its group among the ranks given, with its instance
/// on each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchedCollective {
    pub group: String,
    pub source: GroupSource,
    pub step: Option<u64>,
    pub seq: u32,
    pub op: String,
    /// The members present, in rank order: every rank given where the group's members are not
    /// recorded.
    pub ranks: Vec<RankId>,
    /// A point-to-point transfer's sender (its receiver is the other member): only its start
    /// and the receiver's end are ordered, the one order every backend keeps (NCCL may complete
    /// a small send before its receive is posted; gloo sends an unbound buffer only once it is,
    /// which the pairing by time relies on, not the clock constraints).
    pub sender: Option<RankId>,
    /// The instance's task in its rank's own graph, one per member (`ranks[i]`'s is
    /// `instances[i]`).
    pub instances: Vec<TaskId>,
}

impl MatchedCollective {
    /// Each member with its instance.
    pub fn members(&self) -> impl Iterator<Item = (RankId, TaskId)> + '_ {
        self.ranks
            .iter()
            .copied()
            .zip(self.instances.iter().copied())
    }

    /// Whether `rank`'s start bounds when the others may finish: every member's of a
    /// collective, the sender's of a transfer.
    pub fn start_binds(&self, rank: RankId) -> bool {
        self.sender.is_none_or(|s| s == rank)
    }

    /// Whether `rank`'s end waits for the others' starts: every member's of a collective, the
    /// receiver's of a transfer.
    pub fn end_binds(&self, rank: RankId) -> bool {
        self.sender.is_none_or(|s| s != rank)
    }

    /// `rank`'s instance, if it is a member.
    pub fn instance_on(&self, rank: RankId) -> Option<TaskId> {
        self.ranks
            .binary_search(&rank)
            .ok()
            .map(|i| self.instances[i])
    }
}

/// Why a rank's collective was left unmatched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnmatchedReason {
    /// Some ranks lack this collective (the profiler window cut it off).
    MissingOnSomeRanks,
    /// The ranks' instances at this place are of different types.
    TypeDiffers,
    /// The rank's only collective of its step could sit at more than one place of the longest
    /// rank's list (same type at each, and one end time cannot tell them apart).
    AmbiguousPlace,
    /// No other member of its group is among the ranks given: nothing to match it with.
    NoPeerGiven,
    /// The rank is not a member of the group its collective's record names.
    NotAMember,
    /// Run by a host thread (gloo), no group recorded, and none inferred although the ranks
    /// declare groups (see [`CollectiveMatching::host_groups`]).
    GroupNotInferred,
    /// A host thread's point-to-point transfer whose posting op does not record its peer
    /// (traced without `record_shapes`): nothing says which rank's transfer is its other side.
    PeerNotRecorded,
}

impl UnmatchedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnmatchedReason::MissingOnSomeRanks => "missing on some ranks",
            UnmatchedReason::TypeDiffers => "collective type differs across ranks",
            UnmatchedReason::AmbiguousPlace => "place within its step is ambiguous",
            UnmatchedReason::NoPeerGiven => "no other member of its group among the ranks given",
            UnmatchedReason::NotAMember => "the rank is not a member of the group recorded",
            UnmatchedReason::GroupNotInferred => "its group is neither recorded nor inferred",
            UnmatchedReason::PeerNotRecorded => {
                "a transfer whose peer is not recorded (traced without record_shapes)"
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmatchedCollective {
    pub rank: RankId,
    pub instance: CollectiveInstance,
    pub reason: UnmatchedReason,
}

/// How one group's collectives were matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMatching {
    pub group: String,
    pub source: GroupSource,
    /// The members among the ranks given, as a rank's trace declares or records them; `None`
    /// where none does (every rank given is taken to be one).
    pub ranks: Option<Vec<RankId>>,
    pub matched: u32,
    pub unmatched: u32,
}

/// Every rank's collectives, matched across ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveMatching {
    /// Per (group, source), in that order.
    pub groups: Vec<GroupMatching>,
    /// In (group, source, step, seq) order: consecutive entries of one group are consecutive
    /// collectives of it.
    pub matched: Vec<MatchedCollective>,
    /// In rank order, then (group, source, step, seq).
    pub unmatched: Vec<UnmatchedCollective>,
    /// How the groups of host-run collectives (gloo) were found.
    pub host_groups: HostGroups,
}

/// The collective's type from an NCCL/RCCL kernel name or a `nccl:` annotation, by the one
/// parser of collective names ([`crate::comm::Collective::parse`]):
/// `ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_AllReduce_Sum_f32_RING_LL` and
/// `nccl:all_reduce` all give `all_reduce`, so ranks that recorded one collective under two
/// spellings match. A name that parser does not know keeps its own token.
pub fn collective_op(kernel_name: &str) -> &str {
    if let Some(collective) = crate::comm::Collective::parse(kernel_name) {
        return collective.as_str();
    }
    let name = kernel_name.split('(').next().unwrap_or(kernel_name);
    if let Some(rest) = name.strip_prefix("nccl:") {
        return rest;
    }
    let mut parts = name.split('_');
    let first = parts.next().unwrap_or(name);
    if first.to_ascii_lowercase().contains("kernel") {
        parts.next().unwrap_or(first)
    } else {
        first
    }
}

/// The collectives of one rank in recorded order (by stream, streams in order of first use),
/// each with its group, step and order (see [`CollectiveInstance::seq`]). A group without a
/// recorded process group is named by its recorded stream (`stream N`).
pub fn rank_collectives(rank: &RankTrace<'_>) -> Vec<CollectiveInstance> {
    let mapping = map(rank.trace, rank.window);
    collectives_of(rank.trace, rank.window, &mapping, true)
}

/// The group of the collectives host threads run where no process group is recorded (gloo),
/// until one is inferred.
pub(crate) const HOST_CHANNEL: &str = "host";

/// The group of the point-to-point transfers host threads run (gloo's `gloo:send`,
/// `gloo:recv`) whose peer is not recorded: the posting op records it among its concrete
/// inputs, which the profiler keeps only under `record_shapes=True`. A transfer names no
/// group, and one rank's sends and receives are not one collective: they are reported
/// unmatched ([`UnmatchedReason::PeerNotRecorded`]) and kept out of the group inference, so
/// the job's collectives still match.
pub const UNPAIRED_TRANSFERS: &str = "host transfers, peer not recorded";

/// Device streams of `window` that run collectives, ordered by their first collective.
fn collective_streams(window: &Window) -> Vec<u32> {
    let graph = &window.graph;
    let mut streams: Vec<(i64, u32)> = Vec::new();
    for (lane_index, lane) in graph.lanes.iter().enumerate() {
        if lane.kind != LaneKind::DeviceStream {
            continue;
        }
        let first = (lane.first_task..lane.first_task + lane.task_count)
            .find(|&t| graph.kind[t as usize] == TaskKind::Collective);
        if let Some(first) = first {
            streams.push((graph.rec_start_ns[first as usize], lane_index as u32));
        }
    }
    streams.sort_unstable();
    streams.into_iter().map(|(_, lane)| lane).collect()
}

/// The labels of the streams that run collectives, sorted.
pub(crate) fn collective_stream_labels(trace: &Trace, window: &Window) -> Vec<String> {
    let mut labels: Vec<String> = collective_streams(window)
        .into_iter()
        .map(|lane| lane_label(trace, window.graph.lanes[lane as usize].trace_lane))
        .collect();
    labels.sort();
    labels
}

/// `recorded_streams`: name a group without process-group metadata by its recorded stream
/// (when every rank runs collectives on the same stream ids), else by first use (`stream#i`),
/// which a window cut can renumber. `mapping` gives the op stack around a launch, to reach
/// the `record_param_comms` op of a trace that recorded NCCL metadata.
pub(crate) fn collectives_of(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
    recorded_streams: bool,
) -> Vec<CollectiveInstance> {
    let graph = &window.graph;
    let mapping = (!trace.comm_args.is_empty()).then_some(mapping);
    // A transfer's pair is named by rank numbers: a trace that records none names no pair.
    let rank_number = super::recorded_rank(trace);
    let mut order: BTreeMap<(String, GroupSource, Option<u64>), u32> = BTreeMap::new();
    let mut instances = Vec::new();
    // Each device stream's collectives in stream order; then the collectives host threads run
    // (gloo: a process group's work goes to whichever of its worker threads is free, so the
    // thread says nothing of the group) as one channel, `host`, in recorded start order.
    let mut channels: Vec<(String, Vec<u32>)> = collective_streams(window)
        .into_iter()
        .enumerate()
        .map(|(stream_index, lane_index)| {
            let lane = &graph.lanes[lane_index as usize];
            let stream = if recorded_streams {
                lane_label(trace, lane.trace_lane)
            } else {
                format!("stream#{stream_index}")
            };
            let tasks = (lane.first_task..lane.first_task + lane.task_count)
                .filter(|&t| graph.kind[t as usize] == TaskKind::Collective)
                .collect();
            (stream, tasks)
        })
        .collect();
    let mut host: Vec<u32> = graph
        .lanes
        .iter()
        .filter(|lane| lane.kind == LaneKind::CpuThread)
        .flat_map(|lane| lane.first_task..lane.first_task + lane.task_count)
        .filter(|&t| {
            graph.kind[t as usize] == TaskKind::CpuOp
                && is_host_collective(trace.name(graph.name[t as usize]))
        })
        .collect();
    if !host.is_empty() {
        host.sort_by_key(|&t| (graph.rec_start_ns[t as usize], t));
        channels.push((HOST_CHANNEL.to_string(), host));
    }
    for (stream, tasks) in channels {
        for t in tasks {
            let i = t as usize;
            let task = TaskId(t);
            let args: Option<&CommArgs> = comm_args(trace, graph.event[i]).or_else(|| {
                mapping.as_ref().and_then(|m| {
                    m.stack(task)
                        .iter()
                        .rev()
                        .find_map(|&e| comm_args(trace, e))
                })
            });
            let process_group = args.and_then(|a| a.process_group.clone());
            let recorded_seq = args.and_then(|a| a.seq).and_then(|s| u32::try_from(s).ok());
            let step = (graph.step[i] != NO_STEP)
                .then(|| window.steps.get(graph.step[i] as usize))
                .flatten()
                .filter(|s| !s.synthetic)
                .map(|s| s.number);
            let transfer = (stream == HOST_CHANNEL)
                .then(|| host_transfer(trace, graph, task))
                .flatten();
            let peer =
                transfer
                    .filter(|_| rank_number.is_some())
                    .and_then(|(transfer, posting)| {
                        Some(Peer {
                            sends: transfer.sends,
                            rank: recorded_peer(trace, posting?)?,
                        })
                    });
            let transfer = transfer.map(|(transfer, _)| transfer);
            // gloo sends a CPU tensor inside the posting op (`c10d::send`) and its `gloo:send`
            // range only waits for completion: the task holding the op (the op's own, or a
            // `record_function` around it, as `torch.distributed.pipelining` wraps each
            // action) is the transfer's start.
            let task = match (peer, transfer) {
                (Some(Peer { sends: true, .. }), Some(t)) => t.posted_by,
                _ => task,
            };
            let unpaired = transfer.is_some() && peer.is_none();
            let (group, source, step) = match (process_group, recorded_seq, step) {
                _ if unpaired => (UNPAIRED_TRANSFERS.to_string(), GroupSource::StepOrder, step),
                _ if peer.is_some() => {
                    let me = rank_number.unwrap_or(0);
                    let other = peer.map_or(0, |p| p.rank);
                    let sends = peer.is_some_and(|p| p.sends);
                    let (sender, receiver) = if sends { (me, other) } else { (other, me) };
                    (Peer::group(sender, receiver), GroupSource::PeerOrder, None)
                }
                (Some(group), Some(_), _) => (group, GroupSource::RecordedSeq, None),
                (Some(group), None, Some(step)) => (group, GroupSource::GroupStepOrder, Some(step)),
                (None, _, Some(step)) => (stream.clone(), GroupSource::StepOrder, Some(step)),
                (group, _, None) => (
                    group.unwrap_or_else(|| stream.clone()),
                    GroupSource::StreamOrder,
                    None,
                ),
            };
            let seq = match recorded_seq {
                Some(seq) if source == GroupSource::RecordedSeq => seq,
                _ => {
                    let next = order.entry((group.clone(), source, step)).or_insert(0);
                    *next += 1;
                    *next - 1
                }
            };
            let elements = args
                .and_then(|a| a.in_nelems.max(a.out_nelems))
                .or_else(|| {
                    trace
                        .inputs_of(graph.event[i])?
                        .iter()
                        .filter_map(stepcast_trace::OpInput::tensor_elements)
                        .try_fold(0i64, i64::checked_add)
                });
            instances.push(CollectiveInstance {
                task,
                op: collective_op(trace.name(graph.name[i])).to_string(),
                group,
                source,
                step,
                seq,
                elements,
                peer,
                transfer,
            });
        }
    }
    instances
}

/// Events before a gloo point-to-point range its posting op is looked for among.
const POSTING_LOOKBACK: usize = 16;

/// The side of a gloo point-to-point transfer whose range (`gloo:send`, `gloo:recv`) is
/// `range`'s task, with the event of the op that posted it: the last `c10d::send` /
/// `c10d::recv_` on its thread starting no later, where one of the same direction is there.
/// `None` for other tasks.
fn host_transfer(
    trace: &Trace,
    graph: &crate::graph::Graph,
    range: TaskId,
) -> Option<(HostTransfer, Option<stepcast_trace::EventId>)> {
    let event = graph.event[range.index()];
    let range_event = trace.events.get(event.index())?;
    let sends = match trace.name(range_event.name) {
        "gloo:send" => true,
        "gloo:recv" => false,
        _ => return None,
    };
    let lane = trace.lane_events(range_event.lane);
    let before = lane.partition_point(|e| e.start_ns <= range_event.start_ns);
    // The posting op comes just before its range (a few events back at most): a bounded
    // look, so that ranges without one cost no scan of the whole thread.
    let from = before.saturating_sub(POSTING_LOOKBACK);
    let posting = lane[from..before]
        .iter()
        .rposition(|e| {
            let name = trace.name(e.name);
            name.starts_with("c10d::send") || name.starts_with("c10d::recv")
        })
        .map(|k| from + k)
        .filter(|&k| trace.name(lane[k].name).starts_with("c10d::send") == sends);
    let lane_start = trace.events.partition_point(|e| e.lane < range_event.lane);
    let posting_event = posting.map(|k| stepcast_trace::EventId((lane_start + k) as u32));
    let (posted_by, posted_ns) = posting
        .and_then(|k| {
            let op = &lane[k];
            Some((graph.task_holding(op.lane, op.start_ns)?, op.start_ns))
        })
        .unwrap_or((range, graph.rec_start_ns[range.index()]));
    // The schedule's action range around the posting op, of the same direction.
    let pipeline = posting.and_then(|k| {
        let op = &lane[k];
        (k.saturating_sub(POSTING_LOOKBACK)..k)
            .rev()
            .filter(|&j| lane[j].start_ns <= op.start_ns && lane[j].end_ns() >= op.end_ns())
            .find_map(|j| trace.pipeline_transfer(stepcast_trace::EventId((lane_start + j) as u32)))
            .filter(|action| action.sends == sends)
    });
    let transfer = HostTransfer {
        sends,
        posted_by,
        posted_ns,
        done_ns: range_event.end_ns(),
        pipeline,
    };
    Some((transfer, posting_event))
}

/// The peer a gloo posting op (`c10d::send`, `c10d::recv_`) records as its third input
/// (`Concrete Inputs`, kept only under `record_shapes=True`).
fn recorded_peer(trace: &Trace, posting: stepcast_trace::EventId) -> Option<i64> {
    match trace.inputs_of(posting)?.get(2)? {
        stepcast_trace::OpInput::Int(rank) if *rank >= 0 => Some(*rank),
        _ => None,
    }
}

/// Where one rank's list of a step's collectives sits in the reference (longest) list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    At(usize),
    Ambiguous,
}

/// One entry of a rank's list of a step's collectives, as [`place`] compares them: its type,
/// its elements where every member's are the same (`None`: unknown, or a collective whose
/// members' inputs may differ), and its recorded end in the rank's own time.
type Signature<'i> = (&'i str, Option<i64>, i64);

/// The offset of `list` within `reference`. Only offsets where `list` lies inside `reference`
/// with every type equal, and every size where both are known, are candidates (a profiler can
/// record a collective on one member and not on another: PowerSGD's second and third
/// all-reduces, launched from a future's callback, are traced only where that callback ran on
/// the training thread); among several, the one whose end-time differences spread least. With
/// none, the lists are taken as they come (offset 0), so that a real disagreement is reported
/// as such.
fn place(reference: &[Signature<'_>], list: &[Signature<'_>]) -> Placement {
    let room = reference.len().saturating_sub(list.len());
    let same = |a: &Signature<'_>, b: &Signature<'_>| {
        a.0 == b.0
            && match (a.1, b.1) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            }
    };
    let mut candidates: Vec<(i64, usize)> = (0..=room)
        .filter(|&d| list.iter().zip(&reference[d..]).all(|(a, b)| same(a, b)))
        .map(|d| {
            let diffs = list.iter().zip(&reference[d..]).map(|(a, b)| a.2 - b.2);
            let spread = diffs.clone().max().unwrap_or(0) - diffs.min().unwrap_or(0);
            (spread, d)
        })
        .collect();
    candidates.sort_unstable();
    match candidates.as_slice() {
        [] => Placement::At(0),
        [(_, d)] => Placement::At(*d),
        [(best, d), (second, _), ..] if best < second => Placement::At(*d),
        _ => Placement::Ambiguous,
    }
}

/// The members among the ranks given of every process group a rank's trace names.
struct GroupMembers {
    /// Group name → members present, in rank order.
    members: BTreeMap<String, Vec<RankId>>,
}

impl GroupMembers {
    /// From each rank's table of group members (global rank numbers), the first rank's entry
    /// for a group winning, and each transfer's pair (`lists`: each rank's collectives),
    /// mapped onto the ranks given by their rank numbers; members not among them are left out
    /// (missing ranks are the job's to report, not a collective's).
    fn of(ranks: &[RankGraph], lists: &[&[CollectiveInstance]]) -> GroupMembers {
        let by_number: BTreeMap<i64, RankId> = ranks
            .iter()
            .enumerate()
            .map(|(r, rank)| (rank.rank, RankId(r as u32)))
            .collect();
        let mut members: BTreeMap<String, Vec<RankId>> = BTreeMap::new();
        // A transfer's pair: its sender and receiver.
        for list in lists {
            for instance in list.iter().filter(|i| i.source.is_transfer()) {
                members.entry(instance.group.clone()).or_insert_with(|| {
                    let (sender, receiver) = Peer::pair_of(&instance.group).unwrap_or((-1, -1));
                    let mut pair: Vec<RankId> = [sender, receiver]
                        .iter()
                        .filter_map(|n| by_number.get(n).copied())
                        .collect();
                    pair.sort_unstable();
                    pair.dedup();
                    pair
                });
            }
        }
        for rank in ranks {
            for (group, numbers) in &rank.group_members {
                members.entry(group.clone()).or_insert_with(|| {
                    let mut present: Vec<RankId> = numbers
                        .iter()
                        .filter_map(|n| by_number.get(n).copied())
                        .collect();
                    present.sort_unstable();
                    present
                });
            }
        }
        GroupMembers { members }
    }

    /// The members present of `group`; `None` where no rank records its members (every rank
    /// given is then taken to be one).
    fn of_group(&self, group: &str) -> Option<&[RankId]> {
        self.members.get(group).map(Vec::as_slice)
    }
}

/// Matches every rank's collectives by identity (see the module documentation). A collective
/// is matched when every member of its group among the ranks given (every rank, where its
/// members are not recorded) has an instance at its place, no other rank has one, and all
/// are of the same type.
pub fn match_collectives(ranks: &[RankGraph]) -> CollectiveMatching {
    let recorded_streams = ranks
        .windows(2)
        .all(|w| w[0].collective_streams == w[1].collective_streams);
    let as_recorded: Vec<&[CollectiveInstance]> = ranks
        .iter()
        .map(|rank| {
            if recorded_streams {
                rank.collectives_by_stream.as_slice()
            } else {
                rank.collectives_by_first_use.as_slice()
            }
        })
        .collect();
    let resolved = resolve_transfer_peers(ranks, &as_recorded);
    let recorded: Vec<&[CollectiveInstance]> = resolved.iter().map(AsRef::as_ref).collect();
    // Transfers that record no peer are paired by their times, on one clock: across hosts,
    // each host's clock placed against the others by the transfers themselves (nothing else
    // ties a host whose only link to the others is transfers that name no peer).
    let clock = super::clocks::shared_clocks(ranks);
    let Some(pairing_clocks) = pairing_clocks(ranks, &recorded, &clock) else {
        return match_job(ranks, &recorded, &clock);
    };
    let timed = pair_by_time(ranks, &recorded, &pairing_clocks);
    let lists: Vec<&[CollectiveInstance]> = timed.iter().map(AsRef::as_ref).collect();
    match_job(ranks, &lists, &clock)
}

/// [`match_collectives`] on each rank's list of collectives, transfers paired where they can
/// be, the groups of gloo's collectives inferred where none is recorded; `clock`: each rank's
/// shared clock ([`super::clocks::shared_clocks`]).
fn match_job(
    ranks: &[RankGraph],
    recorded: &[&[CollectiveInstance]],
    clock: &[usize],
) -> CollectiveMatching {
    let members = GroupMembers::of(ranks, recorded);
    // Several assignments may give every group's members the same collectives (a world group
    // running one program on every rank agrees with any grouping; so does a thread that always
    // runs the same bucket). The clocks decide, each grouping's clocks aligned by its own
    // matching where the ranks record several hosts: a grouping whose matched collectives end
    // on one member before another member started is out, as is one the clocks cannot be
    // aligned under; of the rest, the one whose members' ends lie closest together (the clock
    // QP's objective, per instance) is kept when it is clearly closest: true peers finish a
    // collective together, ranks paired by mistake only by chance. The inference offers its
    // groupings most likely first (`host_groups::Tier`); a tier all of whose groupings the
    // clocks put out gives way to the next.
    let mut judge = |candidates: Vec<Vec<Vec<CollectiveInstance>>>| {
        let mut ordered: Vec<(f64, CollectiveMatching)> = candidates
            .iter()
            .map(|candidate| {
                let lists: Vec<&[CollectiveInstance]> =
                    candidate.iter().map(Vec::as_slice).collect();
                match_lists(ranks, &lists, &members, HostGroups::Inferred)
            })
            .filter_map(|matching| {
                Some((fit_on_aligned_clocks(ranks, clock, &matching)?, matching))
            })
            .collect();
        ordered.sort_by(|a, b| a.0.total_cmp(&b.0));
        let clearly_closest = match ordered.as_slice() {
            [_] => true,
            [(best, _), (second, _), ..] => *best * CLEARLY_CLOSER < *second,
            [] => return None,
        };
        Some(if clearly_closest {
            ordered.swap_remove(0).1
        } else {
            match_lists(ranks, recorded, &members, HostGroups::Ambiguous)
        })
    };
    let present_members = |group: &str| members.of_group(group).map(<[RankId]>::len);
    match infer_host_groups(ranks, recorded, &present_members, &mut judge) {
        HostGroupInference::Judged(matching) => matching,
        HostGroupInference::Outcome(host_groups) => {
            match_lists(ranks, recorded, &members, host_groups)
        }
    }
}

/// How much closer together the members' ends of the grouping kept must lie than those of the
/// next: a clear margin, not noise.
const CLEARLY_CLOSER: f64 = 2.0;

/// How a grouping's inferred collectives sit on the ranks' clocks: whether any is out of order
/// (one member's end before another member's start, by more than the tolerance), and their
/// members' squared distance from the members' mean end (ms²), averaged over the members (the
/// clock QP's objective; 0 with none). Ranks of one host share a clock and need no offset;
/// with several hosts the grouping's own matching is aligned first (the QP), and a grouping
/// the clocks cannot be aligned under (its constraints contradict each other, or it leaves a
/// host's clock untied to the others) is out with the ones out of order: across hosts, a
/// grouping that pairs one host's collectives with another's only fits if one offset puts
/// every such pair together. `None` when the grouping is out.
fn fit_on_aligned_clocks(
    ranks: &[RankGraph],
    clock: &[usize],
    matching: &CollectiveMatching,
) -> Option<f64> {
    let one_clock = clock.iter().all(|&c| c == clock[0]);
    let same_host = vec![0; ranks.len()];
    if one_clock {
        return members_fit(ranks, matching, &same_host, None);
    }
    // Within each host first (no solve: its ranks share one offset), so that only the
    // groupings in order there are aligned.
    members_fit(ranks, matching, &same_host, Some(clock))?;
    let alignment = super::clocks::align_clocks(ranks, matching).ok()?;
    if alignment.status != super::clocks::AlignmentStatus::Solved || !alignment.unaligned.is_empty()
    {
        return None;
    }
    members_fit(ranks, matching, &alignment.offsets_ns, None)
}

/// [`fit_on_aligned_clocks`] with the ranks' clocks read through `offsets_ns`: `None` when an
/// inferred collective is out of order; `within` (each rank's clock) compares only the members
/// that share one.
fn members_fit(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    offsets_ns: &[i64],
    within: Option<&[usize]>,
) -> Option<f64> {
    let tolerance = super::CONSTRAINT_TOLERANCE_NS;
    let mut total = 0.0;
    let mut instances = 0usize;
    // A rooted collective's members need not overlap, nor end together (`is_rooted`).
    let inferred = matching
        .matched
        .iter()
        .filter(|c| c.source == GroupSource::Inferred && !super::clocks::is_rooted(&c.op));
    for c in inferred {
        // Per clock compared: its members' aligned (start, end).
        let mut on_clock: BTreeMap<usize, Vec<(i64, i64)>> = BTreeMap::new();
        for (r, task) in c.members() {
            let rank = &ranks[r.index()];
            let g = &rank.window.graph;
            let base = rank.origin_ns - offsets_ns[r.index()];
            on_clock
                .entry(within.map_or(0, |clock| clock[r.index()]))
                .or_default()
                .push((
                    base + g.rec_start_ns[task.index()],
                    base + g.rec_end_ns[task.index()],
                ));
        }
        for times in on_clock.values().filter(|t| t.len() >= 2) {
            let latest_start = times.iter().map(|t| t.0).max().unwrap_or(i64::MIN);
            let earliest_end = times.iter().map(|t| t.1).min().unwrap_or(i64::MAX);
            if earliest_end < latest_start - tolerance {
                return None;
            }
            let ends = times.iter().map(|t| t.1 as f64 / 1e6);
            let mean = ends.clone().sum::<f64>() / times.len() as f64;
            total += ends.map(|e| (e - mean) * (e - mean)).sum::<f64>();
            instances += times.len();
        }
    }
    Some(total / instances.max(1) as f64)
}

/// [`match_collectives`] on each rank's list of collectives (`per_rank`, by [`RankId`]).
fn match_lists(
    ranks: &[RankGraph],
    per_rank: &[&[CollectiveInstance]],
    members: &GroupMembers,
    host_groups: HostGroups,
) -> CollectiveMatching {
    // (group, source, step) → per rank, its instances in order.
    type Bucket = (String, GroupSource, Option<u64>);
    let mut buckets: BTreeMap<Bucket, Vec<Vec<&CollectiveInstance>>> = BTreeMap::new();
    // Host collectives whose group is neither recorded nor inferred while the ranks declare
    // groups (all of them, or those of a thread that ran nothing in the common steps):
    // matching them as the world's would pair a subgroup's collectives with strangers.
    let host_unmatchable = !matches!(
        host_groups,
        HostGroups::NoHostCollectives | HostGroups::Undeclared
    );
    let mut not_inferred: Vec<(usize, &CollectiveInstance)> = Vec::new();
    let mut unpaired: Vec<(usize, &CollectiveInstance)> = Vec::new();
    for (r, instances) in per_rank.iter().enumerate() {
        for instance in instances.iter() {
            if instance.group == UNPAIRED_TRANSFERS {
                unpaired.push((r, instance));
                continue;
            }
            if host_unmatchable && instance.group == HOST_CHANNEL {
                not_inferred.push((r, instance));
                continue;
            }
            let key = (instance.group.clone(), instance.source, instance.step);
            buckets
                .entry(key)
                .or_insert_with(|| vec![Vec::new(); ranks.len()])[r]
                .push(instance);
        }
    }

    // (group, source, step, place) → per rank, its instance there.
    type Row<'i> = Vec<Option<&'i CollectiveInstance>>;
    let mut rows: BTreeMap<(Bucket, u32), Row<'_>> = BTreeMap::new();
    let mut ambiguous: Vec<(usize, &CollectiveInstance)> = Vec::new();
    for (key, lists) in &buckets {
        if key.1 == GroupSource::RecordedSeq {
            for (r, list) in lists.iter().enumerate() {
                for &instance in list {
                    let row = rows
                        .entry((key.clone(), instance.seq))
                        .or_insert_with(|| vec![None; ranks.len()]);
                    // Two instances with one sequence number on a rank: the second has no
                    // counterpart of its own.
                    if row[r].is_some() {
                        ambiguous.push((r, instance));
                    } else {
                        row[r] = Some(instance);
                    }
                }
            }
            continue;
        }
        let signature = |r: usize| -> Vec<Signature<'_>> {
            let graph = &ranks[r].window.graph;
            lists[r]
                .iter()
                .map(|i| {
                    let end = ranks[r].origin_ns + graph.rec_end_ns[i.task.index()];
                    (i.op.as_str(), i.elements_alike(), end)
                })
                .collect()
        };
        // The longest list (the first such rank) is the reference every other is placed in.
        let reference = (0..ranks.len())
            .rev()
            .max_by_key(|&r| lists[r].len())
            .unwrap_or(0);
        let reference_signature = signature(reference);
        for (r, list) in lists.iter().enumerate() {
            let placement = if r == reference {
                Placement::At(0)
            } else {
                place(&reference_signature, &signature(r))
            };
            for (k, &instance) in list.iter().enumerate() {
                match placement {
                    Placement::At(d) => {
                        rows.entry((key.clone(), (d + k) as u32))
                            .or_insert_with(|| vec![None; ranks.len()])[r] = Some(instance);
                    }
                    Placement::Ambiguous => ambiguous.push((r, instance)),
                }
            }
        }
    }

    let mut groups: BTreeMap<(String, GroupSource), GroupMatching> = BTreeMap::new();
    let mut position: BTreeMap<(String, GroupSource), u32> = BTreeMap::new();
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for (((group, source, step), place), row) in rows {
        let counts = groups
            .entry((group.clone(), source))
            .or_insert_with(|| GroupMatching {
                group: group.clone(),
                source,
                ranks: members.of_group(&group).map(<[RankId]>::to_vec),
                matched: 0,
                unmatched: 0,
            });
        // Under a recorded sequence number the place is that number; otherwise the group's
        // running position, over its steps in order.
        let next = position.entry((group.clone(), source)).or_insert(0);
        let seq = if source == GroupSource::RecordedSeq {
            place
        } else {
            *next
        };
        *next += 1;
        let expected = members.of_group(&group);
        let is_member =
            |r: usize| expected.is_none_or(|m| m.binary_search(&RankId(r as u32)).is_ok());
        let n_expected = expected.map_or(ranks.len(), <[RankId]>::len);
        let complete = row
            .iter()
            .enumerate()
            .all(|(r, i)| i.is_some() == is_member(r));
        let first_op = row.iter().flatten().next().map(|i| i.op.clone());
        // A transfer is one send and one receive; a collective, one type on every member.
        let sender = row
            .iter()
            .enumerate()
            .find(|(_, i)| i.is_some_and(|i| i.peer.is_some_and(|p| p.sends)))
            .map(|(r, _)| RankId(r as u32));
        let same_type = if source.is_transfer() {
            let sends = row
                .iter()
                .flatten()
                .filter(|i| i.peer.is_some_and(|p| p.sends));
            sends.count() == 1 && row.iter().flatten().count() == 2
        } else {
            row.iter()
                .flatten()
                .all(|i| Some(&i.op) == first_op.as_ref())
        };
        if complete && same_type && n_expected >= 2 {
            counts.matched += 1;
            let (ranks, instances) = row
                .iter()
                .enumerate()
                .filter_map(|(r, i)| i.map(|i| (RankId(r as u32), i.task)))
                .unzip();
            matched.push(MatchedCollective {
                sender: sender.filter(|_| source.is_transfer()),
                group,
                source,
                step,
                seq,
                op: first_op.unwrap_or_default(),
                ranks,
                instances,
            });
            continue;
        }
        let members_present = row
            .iter()
            .enumerate()
            .filter(|&(r, i)| i.is_some() && is_member(r))
            .count();
        for (r, instance) in row.into_iter().enumerate() {
            if let Some(instance) = instance {
                let reason = if !is_member(r) {
                    UnmatchedReason::NotAMember
                } else if n_expected < 2 {
                    UnmatchedReason::NoPeerGiven
                } else if members_present == n_expected {
                    UnmatchedReason::TypeDiffers
                } else {
                    UnmatchedReason::MissingOnSomeRanks
                };
                counts.unmatched += 1;
                unmatched.push(UnmatchedCollective {
                    rank: RankId(r as u32),
                    instance: CollectiveInstance {
                        seq,
                        ..instance.clone()
                    },
                    reason,
                });
            }
        }
    }
    let left_out = ambiguous
        .into_iter()
        .map(|(r, i)| (r, i, UnmatchedReason::AmbiguousPlace))
        .chain(
            not_inferred
                .into_iter()
                .map(|(r, i)| (r, i, UnmatchedReason::GroupNotInferred)),
        )
        .chain(
            unpaired
                .into_iter()
                .map(|(r, i)| (r, i, UnmatchedReason::PeerNotRecorded)),
        );
    for (r, instance, reason) in left_out {
        let key = (instance.group.clone(), instance.source);
        groups
            .entry(key)
            .or_insert_with(|| GroupMatching {
                group: instance.group.clone(),
                source: instance.source,
                ranks: members.of_group(&instance.group).map(<[RankId]>::to_vec),
                matched: 0,
                unmatched: 0,
            })
            .unmatched += 1;
        unmatched.push(UnmatchedCollective {
            rank: RankId(r as u32),
            instance: instance.clone(),
            reason,
        });
    }
    unmatched.sort_by(|a, b| {
        (
            a.rank,
            &a.instance.group,
            a.instance.source,
            a.instance.step,
            a.instance.seq,
        )
            .cmp(&(
                b.rank,
                &b.instance.group,
                b.instance.source,
                b.instance.step,
                b.instance.seq,
            ))
    });
    CollectiveMatching {
        groups: groups.into_values().collect(),
        matched,
        unmatched,
        host_groups,
    }
}

#[cfg(test)]
mod tests {
    use super::collective_op;

    #[test]
    fn collective_type_from_kernel_names() {
        for (name, op) in [
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                "all_reduce",
            ),
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)",
                "all_gather",
            ),
            (
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)",
                "send_recv",
            ),
            ("nccl:all_reduce", "all_reduce"),
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "all_reduce"),
            ("nccl:_allgather_base", "all_gather"),
        ] {
            assert_eq!(collective_op(name), op, "{name}");
        }
    }
}
