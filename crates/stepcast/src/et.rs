//! An Execution Trace joined with the Kineto trace of the same run (as Chakra's trace linker,
//! PARAM's `et_replay` and HTA join them): each Kineto host op paired with the ET node that
//! recorded it, so the graph can gain the data dependencies the program states (which op's
//! output feeds which op), not only those the clock shows.
//!
//! Two ways, the first that holds: by id, where the Kineto op's `Record function id` (else its
//! `External id`) is the ET node's record-function id (`rf_id`) and their names agree
//! (PyTorch records them so in one run);
//! else by order, per thread: the ET lists a thread's ops in the order they began, as the
//! Kineto trace does by start (an op before the ops nested in it), so the two sequences of
//! names are aligned, every op paired with the node of its name at its place, an op either
//! side lacks skipped (the profiler's window starts and ends inside the ET's, or an op is
//! recorded by one only). A program repeats itself, so the alignment is tried from every place
//! the ET's opening ops appear in the Kineto thread (a longest common subsequence within a
//! window as long as the ET's thread and a tenth more; a greedy walk where that table would be
//! too large) and the one pairing the most ops kept. A join is reported with its coverage and
//! what was left unjoined.
//!
//! Known limit: where the table is too large (threads of more than a few thousand ops each
//! side), each start runs the greedy walk, and a window holding thousands of repetitions of
//! the ET's opening ops tries up to 4,096 of them (`MAX_STARTS`).

use std::collections::HashMap;

use stepcast_trace::{EventId, EventKind, ExecutionTrace, LaneKind, Link, LinkKind, Trace};

/// How the ops were joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum JoinMethod {
    /// Kineto's `External id` is the ET's `rf_id`, names agreeing.
    RecordFunctionId,
    /// The sequences of op names aligned, thread by thread.
    Order,
}

impl JoinMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            JoinMethod::RecordFunctionId => "record_function_id",
            JoinMethod::Order => "order",
        }
    }
}

/// The Kineto trace's host ops paired with ET nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtJoin {
    pub method: JoinMethod,
    /// Per event of the trace: the ET node (index into `ExecutionTrace::nodes`) it is, if
    /// joined.
    pub node_of_event: Vec<Option<u32>>,
    /// Host ops (`cpu_op` and `user_annotation`, step markers left out) inside the span the
    /// ET covers (from the first op joined to the last, per thread), and how many of them were
    /// joined.
    pub ops_in_span: u64,
    pub joined: u64,
    /// Host ops outside that span (the profiler's window is longer than the ET's).
    pub ops_outside_span: u64,
    /// ET op nodes no Kineto op was joined to (the ET's window is longer, or an op the
    /// profiler did not record).
    pub nodes_unjoined: u64,
}

impl EtJoin {
    /// The share of the host ops in the ET's span that were joined.
    pub fn coverage(&self) -> f64 {
        if self.ops_in_span == 0 {
            return 0.0;
        }
        self.joined as f64 / self.ops_in_span as f64
    }
}

/// A join by id holds when at least this share of the ops it can pair pair so.
const ID_JOIN_SHARE: f64 = 0.95;

/// How far ahead either side is searched for the next op of the same name when the two
/// sequences disagree: an op recorded by one side only, or a short run of them.
const LOOKAHEAD: usize = 64;

/// The host ops the join pairs: ops and annotations, not step markers.
fn is_host_op(trace: &Trace, kind: EventKind, name: stepcast_trace::NameId) -> bool {
    matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation)
        && !trace.name(name).starts_with("ProfilerStep#")
}

/// Joins `et` with `trace` (see the module documentation).
pub fn join(trace: &Trace, et: &ExecutionTrace) -> EtJoin {
    join_with(trace, et, None)
}

/// [`join`] by `method` when given, else by the first that holds.
pub fn join_with(trace: &Trace, et: &ExecutionTrace, method: Option<JoinMethod>) -> EtJoin {
    let ops: Vec<usize> = (0..trace.events.len())
        .filter(|&i| {
            let e = &trace.events[i];
            is_host_op(trace, e.kind, e.name)
        })
        .collect();
    let (method, node_of_op) = match method {
        Some(JoinMethod::RecordFunctionId) => {
            (JoinMethod::RecordFunctionId, join_by_id(trace, et, &ops))
        }
        Some(JoinMethod::Order) => (JoinMethod::Order, join_by_order(trace, et, &ops)),
        None => {
            let by_id = join_by_id(trace, et, &ops);
            let joined = by_id.iter().filter(|n| n.is_some()).count();
            let can_pair = ops.len().min(op_nodes(et).count());
            if can_pair > 0 && joined as f64 >= ID_JOIN_SHARE * can_pair as f64 {
                (JoinMethod::RecordFunctionId, by_id)
            } else {
                (JoinMethod::Order, join_by_order(trace, et, &ops))
            }
        }
    };
    let mut node_of_event = vec![None; trace.events.len()];
    for (&event, node) in ops.iter().zip(&node_of_op) {
        node_of_event[event] = *node;
    }
    // The span the ET covers, per thread: from its first joined op to its last (by start).
    let mut span: HashMap<u32, (i64, i64)> = HashMap::new();
    for (&event, node) in ops.iter().zip(&node_of_op) {
        if node.is_some() {
            let e = &trace.events[event];
            let s = span.entry(e.lane.0).or_insert((e.start_ns, e.start_ns));
            s.0 = s.0.min(e.start_ns);
            s.1 = s.1.max(e.start_ns);
        }
    }
    let mut in_span = 0u64;
    let mut joined = 0u64;
    for (&event, node) in ops.iter().zip(&node_of_op) {
        let e = &trace.events[event];
        let inside = span
            .get(&e.lane.0)
            .is_some_and(|&(a, b)| a <= e.start_ns && e.start_ns <= b);
        if inside {
            in_span += 1;
            joined += u64::from(node.is_some());
        }
    }
    let nodes_joined = node_of_op.iter().flatten().count() as u64;
    EtJoin {
        method,
        node_of_event,
        ops_in_span: in_span,
        joined,
        ops_outside_span: ops.len() as u64 - in_span,
        nodes_unjoined: (op_nodes(et).count() as u64).saturating_sub(nodes_joined),
    }
}

/// The data dependencies an ET states between joined ops: for each input tensor of a joined
/// node, the last joined node before it (in the ET's order) that output that tensor, as a link
/// of the trace ([`LinkKind::DataFlow`]: the consumer begins after its producer ends). A
/// dependency the recorded times contradict (the consumer began before its producer ended:
/// a tensor id reused, or an op joined to the wrong node) is counted, not linked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataLinks {
    /// Between ops of different threads, sorted by target event (as `Trace::links`): what the
    /// graph gains.
    pub links: Vec<Link>,
    /// Between ops of one thread, sorted alike: its order already holds them, so the graph
    /// needs no edge, but a model asking which op feeds which reads them.
    pub same_thread_links: Vec<Link>,
    /// Dependencies whose recorded times contradict them.
    pub contradicted: u64,
    /// Every tensor behind the links of both lists (one per tensor a consumer reads from its
    /// producer), sorted by producer: what the memory model reads to know which tensors the
    /// backward pass keeps alive.
    pub reads: Vec<TensorRead>,
}

/// One tensor an op read that a joined op produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TensorRead {
    pub producer: EventId,
    pub consumer: EventId,
    /// The tensor's storage: views of one storage share it (and its memory).
    pub storage_id: u64,
    /// Elements × bytes per element of the tensor read (of the view, not the storage).
    pub bytes: i64,
}

/// The data dependencies of `et` joined with `trace` as `joined`.
pub fn data_links(trace: &Trace, et: &ExecutionTrace, joined: &EtJoin) -> DataLinks {
    let mut event_of_node: Vec<Option<usize>> = vec![None; et.nodes.len()];
    for (event, node) in joined.node_of_event.iter().enumerate() {
        if let Some(node) = node {
            event_of_node[*node as usize] = Some(event);
        }
    }
    let mut out = DataLinks::default();
    // Tensor id → the event of the last joined node that output it.
    let mut producer: HashMap<u64, usize> = HashMap::new();
    let mut seen: std::collections::HashSet<(usize, usize)> = std::collections::HashSet::new();
    for (node, et_node) in et.nodes.iter().enumerate() {
        let Some(consumer) = event_of_node[node] else {
            continue;
        };
        for input in &et_node.inputs {
            let Some(&from) = producer.get(&input.id) else {
                continue;
            };
            if from == consumer {
                continue;
            }
            let (a, b) = (&trace.events[from], &trace.events[consumer]);
            // An op nested in the op that output the tensor reads what that op was given (an
            // in-place op outputs its input, and the ET lists an op before those inside it):
            // no dependency between the two.
            if a.lane == b.lane && a.start_ns <= b.start_ns && b.end_ns() <= a.end_ns() {
                continue;
            }
            let allowed = a.end_ns() <= b.start_ns;
            if allowed {
                out.reads.push(TensorRead {
                    producer: EventId(from as u32),
                    consumer: EventId(consumer as u32),
                    storage_id: input.storage_id,
                    bytes: i64::try_from(input.elements.saturating_mul(input.element_bytes))
                        .unwrap_or(i64::MAX),
                });
            }
            if !seen.insert((from, consumer)) {
                continue;
            }
            let link = Link {
                to: EventId(consumer as u32),
                from: EventId(from as u32),
                kind: LinkKind::DataFlow,
            };
            if !allowed {
                out.contradicted += 1;
            } else if a.lane == b.lane {
                out.same_thread_links.push(link);
            } else {
                out.links.push(link);
            }
        }
        for output in &et_node.outputs {
            producer.insert(output.id, consumer);
        }
    }
    out.links.sort_by_key(|l| (l.to, l.from));
    out.same_thread_links.sort_by_key(|l| (l.to, l.from));
    out.reads.sort_unstable();
    out.reads.dedup();
    out
}

/// Which op feeds which, as an ET joined with its trace states it: what the models read
/// ([`crate::whatif::Context::data`]) to know what an op really depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataDependencies {
    /// Per event of the trace: whether it is an op joined to an ET node (only a joined op's
    /// dependencies are known; of any other, nothing is said).
    joined: Vec<bool>,
    /// Every dependency whose recorded times allow it, within and across threads, sorted by
    /// `(to, from)`.
    links: Vec<Link>,
    /// The tensors behind them, sorted by producer.
    reads: Vec<TensorRead>,
}

impl DataDependencies {
    pub fn new(joined: &EtJoin, data: &DataLinks) -> DataDependencies {
        let mut links: Vec<Link> = data
            .links
            .iter()
            .chain(&data.same_thread_links)
            .copied()
            .collect();
        links.sort_by_key(|l| (l.to, l.from));
        DataDependencies {
            joined: joined.node_of_event.iter().map(Option::is_some).collect(),
            links,
            reads: data.reads.clone(),
        }
    }

    /// The tensors ops read that `producer` produced.
    pub fn reads_from(&self, producer: EventId) -> &[TensorRead] {
        let first = self.reads.partition_point(|r| r.producer < producer);
        let end = first + self.reads[first..].partition_point(|r| r.producer == producer);
        &self.reads[first..end]
    }

    /// Whether `event` is an op whose dependencies the ET states.
    pub fn is_joined(&self, event: EventId) -> bool {
        self.joined.get(event.index()).copied().unwrap_or(false)
    }

    /// The ops whose outputs `event` reads.
    pub fn producers_of(&self, event: EventId) -> impl Iterator<Item = EventId> + '_ {
        let first = self.links.partition_point(|l| l.to < event);
        self.links[first..]
            .iter()
            .take_while(move |l| l.to == event)
            .map(|l| l.from)
    }
}

/// An ET joined with its trace and its dependencies added to it: the cross-thread ones become
/// links of the trace (so the graph built from it gains them as edges), all of them are kept
/// for the models.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    pub join: EtJoin,
    pub data: DataLinks,
    pub dependencies: DataDependencies,
}

/// What one rank's ET joined: what a job's document lists per rank, and what a reduced rank
/// keeps of it (its graph holds the data edges already), so that a job replayed from reduced
/// ranks gives the document of its traces and ETs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JoinSummary {
    /// The process both observed.
    pub pid: i64,
    /// The ET file as the user named it.
    pub file: String,
    pub method: JoinMethod,
    /// The trace's host ops inside the span the ET covers, and those joined to an ET node.
    pub ops_in_span: u64,
    pub joined: u64,
    /// The data dependencies between its threads.
    pub data_links: u64,
}

impl JoinSummary {
    pub fn new(pid: i64, file: String, attached: &Attached) -> JoinSummary {
        JoinSummary {
            pid,
            file,
            method: attached.join.method,
            ops_in_span: attached.join.ops_in_span,
            joined: attached.join.joined,
            data_links: attached.data.links.len() as u64,
        }
    }
}

/// Joins `et` with `trace` and adds the cross-thread data dependencies to `trace.links`.
pub fn attach(trace: &mut Trace, et: &ExecutionTrace) -> Attached {
    let join = join(trace, et);
    let data = data_links(trace, et, &join);
    let dependencies = DataDependencies::new(&join, &data);
    trace.links.extend_from_slice(&data.links);
    trace.links.sort_by_key(|l| (l.to, l.from));
    trace.links.dedup();
    Attached {
        join,
        data,
        dependencies,
    }
}

/// The ET's op nodes (its own bookkeeping left out), with their indices.
fn op_nodes(et: &ExecutionTrace) -> impl Iterator<Item = (usize, &stepcast_trace::EtNode)> {
    et.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.is_bookkeeping())
}

/// Per op: the node whose `rf_id` is its record-function id, where their names agree. The
/// id is the op's `Record function id` where the trace records them (PyTorch writes it while
/// the observer runs; its `External id` then numbers ops apart), else its `External id`
/// (HTA's pair: PyTorch 2.0 wrote the one as the other).
fn join_by_id(trace: &Trace, et: &ExecutionTrace, ops: &[usize]) -> Vec<Option<u32>> {
    let by_rf: HashMap<u64, usize> = op_nodes(et)
        .filter_map(|(i, n)| n.rf_id.map(|rf| (rf, i)))
        .collect();
    let recorded = !trace.record_function_ids.is_empty();
    ops.iter()
        .map(|&event| {
            let e = &trace.events[event];
            let id = if recorded {
                trace.record_function_id(EventId(event as u32))?
            } else {
                e.external_id?.get()
            };
            let node = *by_rf.get(&id)?;
            (et.nodes[node].name == trace.name(e.name)).then_some(node as u32)
        })
        .collect()
}

/// Per op: the node at its place when each thread's sequence of names is aligned with the
/// ET thread's whose sequence it matches best.
fn join_by_order(trace: &Trace, et: &ExecutionTrace, ops: &[usize]) -> Vec<Option<u32>> {
    // Kineto's host ops per thread, by start (a longer op first: it holds the other).
    let mut lanes: Vec<(u32, Vec<usize>)> = Vec::new();
    for (position, &event) in ops.iter().enumerate() {
        let lane = trace.events[event].lane;
        if trace.lanes[lane.index()].kind != LaneKind::CpuThread {
            continue;
        }
        match lanes.iter_mut().find(|(l, _)| *l == lane.0) {
            Some((_, list)) => list.push(position),
            None => lanes.push((lane.0, vec![position])),
        }
    }
    for (_, list) in &mut lanes {
        list.sort_by_key(|&p| {
            let e = &trace.events[ops[p]];
            (e.start_ns, std::cmp::Reverse(e.dur_ns), e.file_index)
        });
    }
    // The ET's op nodes per thread, in id order.
    let mut threads: Vec<(u64, Vec<usize>)> = Vec::new();
    for (i, node) in op_nodes(et) {
        match threads.iter_mut().find(|(t, _)| *t == node.tid) {
            Some((_, list)) => list.push(i),
            None => threads.push((node.tid, vec![i])),
        }
    }
    let mut out = vec![None; ops.len()];
    let mut used = vec![false; threads.len()];
    // The span of the first thread's joined ops: the ET records one window of the program,
    // so every other thread's ops are joined within it (a backward thread aligned alone
    // could pair with another iteration's backward, and the data dependencies between the
    // threads would then join ops of different iterations).
    let mut anchor: Option<(i64, i64)> = None;
    // Each Kineto thread, largest first, takes the ET thread it aligns best with.
    lanes.sort_by_key(|(lane, list)| (std::cmp::Reverse(list.len()), *lane));
    for (_, list) in &lanes {
        let names: Vec<&str> = list
            .iter()
            .map(|&p| trace.name(trace.events[ops[p]].name))
            .collect();
        let start_of = |a: usize| trace.events[ops[list[a]]].start_ns;
        let within_anchor = |pairs: &[(usize, usize)]| match (anchor, pairs.first(), pairs.last()) {
            (Some((from, to)), Some(&(first, _)), Some(&(last, _))) => {
                start_of(first) <= to && start_of(last) >= from
            }
            _ => true,
        };
        let best = threads
            .iter()
            .enumerate()
            .filter(|(t, _)| !used[*t])
            .map(|(t, (_, nodes))| {
                let et_names: Vec<&str> =
                    nodes.iter().map(|&n| et.nodes[n].name.as_str()).collect();
                (t, align(&names, &et_names, &within_anchor))
            })
            .max_by_key(|(t, pairs)| (pairs.len(), std::cmp::Reverse(*t)));
        let Some((t, pairs)) = best.filter(|(_, pairs)| !pairs.is_empty()) else {
            continue;
        };
        used[t] = true;
        if anchor.is_none()
            && let (Some(&(first, _)), Some(&(last, _))) = (pairs.first(), pairs.last())
        {
            let last_end = trace.events[ops[list[last]]].end_ns();
            anchor = Some((start_of(first), last_end));
        }
        for (a, b) in pairs {
            out[list[a]] = Some(threads[t].1[b] as u32);
        }
    }
    out
}

/// Whether an alignment's pairs (positions in the two sequences) are acceptable.
type Fits<'a> = dyn Fn(&[(usize, usize)]) -> bool + 'a;

/// Pairs of positions `(in a, in b)` where two sequences of names agree, in order. One
/// side's window may start inside the other's, and a program repeats itself (every step opens
/// with the same ops): the alignment is tried from every place where `b`'s first ops appear
/// in `a` (and `a`'s in `b`), and the one pairing the most ops is kept (the earliest on a tie),
/// among those `fits` accepts where any does.
fn align(a: &[&str], b: &[&str], fits: &Fits<'_>) -> Vec<(usize, usize)> {
    let mut best: Vec<(usize, usize)> = Vec::new();
    let mut best_fits = false;
    for (i, j) in starts(a, b) {
        // Each side's window from here, as long as the other's rest and a tenth more (ops one
        // side recorded and the other did not): a longest common subsequence where it is
        // small enough, else the greedy walk. A window no longer keeps the pairs within one
        // repetition of the program, where a longer one would collect scattered pairs over
        // several.
        let (a_rest, b_rest) = (&a[i..], &b[j..]);
        let slack = |len: usize| len + len / 10 + 16;
        let a_window = &a_rest[..a_rest.len().min(slack(b_rest.len()))];
        let b_window = &b_rest[..b_rest.len().min(slack(a_rest.len()))];
        let pairs: Vec<(usize, usize)> = match lcs(a_window, b_window) {
            Some(pairs) => pairs.into_iter().map(|(x, y)| (x + i, y + j)).collect(),
            None => align_from(a, b, i, j),
        };
        let pairs_fit = fits(&pairs);
        if (pairs_fit, pairs.len()) > (best_fits, best.len()) {
            best = pairs;
            best_fits = pairs_fit;
        }
    }
    best
}

/// Above this many cells (2 bytes each), [`lcs`] leaves the alignment to the greedy walk.
const MAX_LCS_CELLS: usize = 16 << 20;

/// A longest common subsequence of `a` and `b` as pairs of positions, in order; `None` when
/// its table would exceed [`MAX_LCS_CELLS`] (or a length 65,535).
fn lcs(a: &[&str], b: &[&str]) -> Option<Vec<(usize, usize)>> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > MAX_LCS_CELLS || n >= u16::MAX as usize || m >= u16::MAX as usize {
        return None;
    }
    // table[x][y]: the LCS length of a[x..] and b[y..], row-major with m + 1 columns.
    let width = m + 1;
    let mut table = vec![0u16; (n + 1) * width];
    for x in (0..n).rev() {
        for y in (0..m).rev() {
            table[x * width + y] = if a[x] == b[y] {
                table[(x + 1) * width + y + 1] + 1
            } else {
                table[(x + 1) * width + y].max(table[x * width + y + 1])
            };
        }
    }
    let (mut x, mut y) = (0, 0);
    let mut pairs = Vec::with_capacity(table[0] as usize);
    while x < n && y < m {
        if a[x] == b[y] {
            pairs.push((x, y));
            x += 1;
            y += 1;
        } else if table[(x + 1) * width + y] >= table[x * width + y + 1] {
            x += 1;
        } else {
            y += 1;
        }
    }
    Some(pairs)
}

/// At most this many starting places are tried (a window of many steps holds each step's
/// opening ops once).
const MAX_STARTS: usize = 4096;

/// Where an alignment may start: each place in `a` where `b`'s first ops (up to 8) appear in
/// order, each place in `b` where `a`'s do; both starts when neither appears.
fn starts(a: &[&str], b: &[&str]) -> Vec<(usize, usize)> {
    let run = 8.min(a.len()).min(b.len());
    if run == 0 {
        return vec![(0, 0)];
    }
    let mut out: Vec<(usize, usize)> = (0..=a.len() - run)
        .filter(|&i| a[i..i + run] == b[..run])
        .map(|i| (i, 0))
        .take(MAX_STARTS)
        .collect();
    out.extend(
        (1..=b.len() - run)
            .filter(|&j| b[j..j + run] == a[..run])
            .map(|j| (0, j))
            .take(MAX_STARTS),
    );
    if out.is_empty() {
        out.push((0, 0));
    }
    out
}

/// [`align`] from `(i, j)`: each disagreement skipped to the nearest next agreement within
/// [`LOOKAHEAD`] either side (the least skipped in all first), or both stepped past it.
fn align_from(a: &[&str], b: &[&str], mut i: usize, mut j: usize) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            pairs.push((i, j));
            i += 1;
            j += 1;
            continue;
        }
        let mut next = None;
        'search: for total in 1..=2 * LOOKAHEAD {
            for da in 0..=total.min(LOOKAHEAD) {
                let db = total - da;
                if db > LOOKAHEAD {
                    continue;
                }
                if i + da < a.len() && j + db < b.len() && a[i + da] == b[j + db] {
                    next = Some((i + da, j + db));
                    break 'search;
                }
            }
        }
        match next {
            Some((ni, nj)) => (i, j) = (ni, nj),
            None => (i, j) = (i + 1, j + 1),
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_one_side_lacks_is_skipped_and_the_rest_pair_in_order() {
        let a = ["x", "mm", "add", "relu", "mm", "add"];
        let b = ["mm", "add", "mm", "add"];
        assert_eq!(
            align(&a, &b, &|_| true),
            vec![(1, 0), (2, 1), (4, 2), (5, 3)]
        );
    }

    #[test]
    fn a_window_that_starts_inside_the_other_is_found() {
        let a = ["p", "q", "r", "s", "t", "u", "v", "w", "x", "y"];
        let b = ["r", "s", "t", "u", "v", "w", "x", "y"];
        assert_eq!(align(&a, &b, &|_| true).first(), Some(&(2, 0)));
        assert_eq!(align(&a, &b, &|_| true).len(), 8);
    }
}
