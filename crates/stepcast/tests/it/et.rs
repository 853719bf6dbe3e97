//! Execution Traces joined with the Kineto traces of the same runs (issue #31): the four ET +
//! Kineto pairs in testdata (HTA's `benchmark_simple_add`, PARAM's `linear`, `resnet` and DLRM
//! rank 0), each ET read into typed nodes and its ops paired with the Kineto ops.

use stepcast::analyze::mapping::map;
use stepcast::et::{JoinMethod, join, join_with};
use stepcast::graph::{BuildOptions, EdgeKind, TaskId, build};
use stepcast::replay::self_replay;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::Context;
use stepcast::whatif::models::kernel_fusion;
use stepcast_trace::{EventKind, OpInput, read_execution_trace, read_trace};

use crate::testdata;

const SIMPLE_ADD: (&str, &str) = (
    "HolisticTraceAnalysis/tests/data/execution_trace/benchmark_simple_add_et.json.gz",
    "HolisticTraceAnalysis/tests/data/execution_trace/benchmark_simple_add_trace.json.gz",
);
const DLRM_RANK0: (&str, &str) = (
    "param/et_replay/tests/inputs/dlrm_pytorch_et__extracted/dlrm_pytorch_et/dlrm_eg_0.json",
    "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json",
);
const LINEAR: (&str, &str) = (
    "param/et_replay/tests/inputs/linear_et.json.gz",
    "param/et_replay/tests/inputs/linear_kineto.json.gz",
);
/// Recorded here (`stepcast/cpu-et/record.py`): schema 1.1, PyTorch 2.15, CPU only.
const CNN: (&str, &str) = (
    "stepcast/cpu-et/cnn_et.json.gz",
    "stepcast/cpu-et/cnn_kineto.json.gz",
);
const RESNET: (&str, &str) = (
    "param/et_replay/tests/data/resnet_et.json.gz",
    "param/et_replay/tests/inputs/resnet_kineto.json.gz",
);
const PAIRS: [(&str, &str); 5] = [SIMPLE_ADD, RESNET, LINEAR, DLRM_RANK0, CNN];

fn read(pair: (&str, &str)) -> (stepcast_trace::ExecutionTrace, stepcast_trace::Trace) {
    let et = read_execution_trace(&testdata(pair.0)).unwrap_or_else(|e| panic!("{e}"));
    let trace = read_trace(&testdata(pair.1)).unwrap_or_else(|e| panic!("{e}"));
    (et, trace)
}

/// The bar: at least 95 % of the Kineto host ops inside the span the ET covers are joined,
/// each to a node of its own name, and (almost) every ET op node is joined to one.
#[test]
fn every_pair_joins_at_least_95_percent_of_the_host_ops_the_et_covers() {
    for pair in PAIRS {
        let (et, trace) = read(pair);
        assert_eq!(et.nodes_unread, 0, "{}", pair.0);
        let joined = join(&trace, &et);
        assert!(
            joined.coverage() >= 0.95,
            "{}: {} of {} ({:?})",
            pair.1,
            joined.joined,
            joined.ops_in_span,
            joined.method
        );
        let op_nodes = et.nodes.iter().filter(|n| !n.is_bookkeeping()).count() as u64;
        assert!(joined.nodes_unjoined * 100 <= op_nodes, "{}", pair.0);
        let mut nodes_used = std::collections::HashSet::new();
        for (event, node) in joined.node_of_event.iter().enumerate() {
            if let Some(node) = node {
                let e = &trace.events[event];
                assert_eq!(
                    trace.name(e.name),
                    et.nodes[*node as usize].name,
                    "{}",
                    pair.1
                );
                assert!(
                    nodes_used.insert(*node),
                    "{}: node {node} joined twice",
                    pair.1
                );
            }
        }
    }
}

/// The reader keeps every op's non-zero `Record function id` (what the join by id reads on a
/// current PyTorch's pair), counted in the file's JSON apart from the reader.
#[test]
fn record_function_ids_are_read_for_every_op_that_records_one() {
    let (_, trace) = read(CNN);
    let recorded = crate::compare::raw_events(CNN.1)
        .iter()
        .filter(|e| e["ph"] == "X" && (e["cat"] == "cpu_op" || e["cat"] == "user_annotation"))
        .filter(|e| {
            !e["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("ProfilerStep#")
        })
        .filter(|e| {
            e["args"]["Record function id"]
                .as_u64()
                .is_some_and(|id| id > 0)
        })
        .count();
    assert!(recorded > 1000, "{recorded}");
    assert_eq!(trace.record_function_ids.len(), recorded);
    assert!(
        trace
            .record_function_ids
            .windows(2)
            .all(|w| w[0].0 < w[1].0)
    );
}

/// The two ways agree: on the pair whose Kineto ops carry the ET's record-function ids
/// (HTA's), joining by order alone pairs every op with the node the ids name.
#[test]
fn the_order_join_pairs_what_the_record_function_ids_pair() {
    let (et, trace) = read(SIMPLE_ADD);
    let by_id = join_with(&trace, &et, Some(JoinMethod::RecordFunctionId));
    assert_eq!(join(&trace, &et).method, JoinMethod::RecordFunctionId);
    assert_eq!(by_id.joined, by_id.ops_in_span);
    let by_order = join_with(&trace, &et, Some(JoinMethod::Order));
    assert_eq!(by_order.node_of_event, by_id.node_of_event);
}

/// On DLRM (no shared ids: joined by order), both files recorded each op's input shapes, each
/// on its own: the Kineto op's `Input Dims` and the ET node's tensors. A joined pair is the
/// same op when they agree.
#[test]
fn ops_joined_by_order_have_the_input_shapes_the_et_recorded() {
    let (et, trace) = read(DLRM_RANK0);
    let joined = join(&trace, &et);
    assert_eq!(joined.method, JoinMethod::Order);
    let (mut compared, mut agree) = (0, 0);
    for (event, inputs) in &trace.op_inputs {
        let Some(node) = joined.node_of_event[event.index()] else {
            continue;
        };
        if trace.events[event.index()].kind != EventKind::CpuOp {
            continue;
        }
        let kineto: Vec<&Vec<i64>> = inputs
            .iter()
            .filter_map(|i| match i {
                OpInput::Tensor { shape, .. } => Some(shape),
                _ => None,
            })
            .collect();
        let recorded: Vec<&Vec<i64>> = et.nodes[node as usize]
            .inputs
            .iter()
            .map(|t| &t.shape)
            .collect();
        if kineto.is_empty() || recorded.len() != kineto.len() {
            continue;
        }
        compared += 1;
        agree += usize::from(kineto == recorded);
    }
    assert!(
        compared >= 500,
        "{compared} ops with tensor inputs on both sides"
    );
    assert!(agree * 100 >= compared * 99, "{agree} of {compared} agree");
}

/// The data dependencies an ET states across threads (the forward's tensors the autograd
/// thread reads): each one links ops whose recorded times allow it (the producer ended before
/// the consumer began), and a dependency within one thread is left to its order.
#[test]
fn data_links_join_ops_of_different_threads_in_recorded_order() {
    let mut found = 0;
    for pair in PAIRS {
        let (et, trace) = read(pair);
        let joined = join(&trace, &et);
        let links = stepcast::et::data_links(&trace, &et, &joined);
        for link in &links.links {
            let (from, to) = (
                &trace.events[link.from.index()],
                &trace.events[link.to.index()],
            );
            assert_ne!(from.lane, to.lane, "{}", pair.1);
            assert!(from.end_ns() <= to.start_ns, "{}", pair.1);
            // Both ends are joined ops: the link is the ET's, not a guess.
            assert!(joined.node_of_event[link.from.index()].is_some());
            assert!(joined.node_of_event[link.to.index()].is_some());
        }
        assert!(
            links
                .links
                .windows(2)
                .all(|w| (w[0].to, w[0].from) < (w[1].to, w[1].from))
        );
        found += links.links.len();
        // With the threads aligned within one span and nested ops left to their enclosing
        // op, no dependency the ET states is against the recorded times.
        assert_eq!(links.contradicted, 0, "{}", pair.1);
    }
    // The three training pairs (resnet, linear, DLRM) have backward threads.
    assert!(found >= 300, "{found} cross-thread data dependencies");
}

/// Every pair, its trace read alone and then with its ET attached ([`stepcast::et::attach`]).
fn built_with_and_without(
    pair: (&str, &str),
) -> (
    stepcast_trace::Trace,
    stepcast::Window,
    stepcast::Window,
    stepcast::et::Attached,
) {
    let (et, trace) = read(pair);
    let alone = build(&trace, &BuildOptions::default());
    let mut joined = trace;
    let attached = stepcast::et::attach(&mut joined, &et);
    let with = build(&joined, &BuildOptions::default());
    (joined, alone, with, attached)
}

fn data_edges(window: &stepcast::Window) -> Vec<(TaskId, TaskId)> {
    let g = &window.graph;
    (0..g.task_count())
        .flat_map(|t| {
            g.preds(TaskId(t as u32))
                .filter(|&e| g.pred_kind[e] == EdgeKind::Data)
                .map(move |e| (g.pred[e], TaskId(t as u32)))
        })
        .collect()
}

/// The bar: with the ET's data dependencies as edges, self-replay still reproduces every
/// step (the edges are the program's, so the recording honours each: a task the producer
/// ends with ends before the one the consumer begins with), and adding edges never makes a
/// replayed step shorter. The three training pairs gain edges between their threads.
#[test]
fn data_edges_join_threads_and_self_replay_stays_within_its_bars() {
    let mut with_edges = 0;
    for pair in PAIRS {
        let (_, alone, with, attached) = built_with_and_without(pair);
        let edges = data_edges(&with);
        assert!(edges.len() <= attached.data.links.len(), "{}", pair.1);
        let g = &with.graph;
        for &(from, to) in &edges {
            assert_ne!(g.lane[from.index()], g.lane[to.index()], "{}", pair.1);
            assert!(
                g.rec_end_ns[from.index()] <= g.rec_start_ns[to.index()],
                "{}: data edge against the recording",
                pair.1
            );
        }
        with_edges += usize::from(!edges.is_empty());
        let before = self_replay(&alone).unwrap_or_else(|e| panic!("{e}"));
        let after = self_replay(&with).unwrap_or_else(|e| panic!("{e}"));
        for (a, b) in before.steps.iter().zip(&after.steps) {
            assert!(
                b.replayed_ns >= a.replayed_ns,
                "{} step {}",
                pair.1,
                a.number
            );
            assert!(
                b.error().abs() <= a.error().abs() + 0.005,
                "{} step {}: {:.4} with data edges, {:.4} without",
                pair.1,
                a.number,
                b.error(),
                a.error()
            );
        }
    }
    assert!(with_edges >= 3, "{with_edges} pairs gained data edges");
}

/// The edges bind: on PARAM's `linear` pair (whose backward thread has no handoff the graph
/// finds from call structure alone), slowing every thread that produces a tensor another
/// thread reads delays the consumers' tasks only where the data edges say they wait.
#[test]
fn data_edges_make_a_consumer_wait_for_a_slower_producer() {
    let (_, alone, with, _) = built_with_and_without(LINEAR);
    let edges = data_edges(&with);
    assert!(!edges.is_empty());
    let producer_lanes: std::collections::BTreeSet<u32> = edges
        .iter()
        .map(|(f, _)| with.graph.lane[f.index()])
        .collect();
    let slowed = |window: &stepcast::Window| {
        let mut g = window.graph.clone();
        for t in 0..g.task_count() {
            if producer_lanes.contains(&g.lane[t]) {
                g.dur_ns[t] *= 3;
                g.gap_ns[t] *= 3;
            }
        }
        simulate(&g, &RecordedOrder, SimOptions::default()).unwrap_or_else(|e| panic!("{e}"))
    };
    let (without, with_data) = (slowed(&alone), slowed(&with));
    let moved = edges
        .iter()
        .filter(|(_, to)| with_data.begin_ns[to.index()] > without.begin_ns[to.index()])
        .count();
    assert!(moved > 0, "no consumer waited for its slower producer");
}

/// `kernel_fusion` asks the ET which op feeds which before any guess from shapes: HTA's
/// `benchmark_simple_add` runs `mul` and `add`s of the same shapes whose ET nodes (read here
/// on their own, without the join) never read one another's outputs, so with the ET fewer
/// chains are fused than the shape rule fused (what is left are one op's own kernels, or a
/// `zeros` the `mul` reads).
#[test]
fn kernel_fusion_fuses_only_kernels_the_et_says_feed_one_another() {
    let (et, _) = read(SIMPLE_ADD);
    let compute: Vec<&stepcast_trace::EtNode> = et
        .nodes
        .iter()
        .filter(|n| n.name == "aten::add" || n.name == "aten::mul")
        .collect();
    assert!(compute.len() >= 2);
    for a in &compute {
        for b in &compute {
            assert!(
                !b.inputs
                    .iter()
                    .any(|i| a.outputs.iter().any(|o| o.id == i.id)),
                "node {} reads node {}'s output",
                b.id,
                a.id
            );
        }
    }
    let (trace, alone, with, attached) = built_with_and_without(SIMPLE_ADD);
    let chains = |window: &stepcast::Window, data: Option<&stepcast::et::DataDependencies>| {
        let mapping = map(&trace, window);
        let mut context = Context::new(&trace, window, &mapping);
        context.data = data;
        let mut edit = context.edit();
        kernel_fusion(&context, &mut edit, None).unwrap_or_else(|e| panic!("{e}"))
    };
    let by_shapes = chains(&alone, None);
    let stated = chains(&with, Some(&attached.dependencies));
    assert!(
        stated < by_shapes,
        "{stated} chains with the ET, {by_shapes} by shapes"
    );
}

/// The memory trades read the activations the ET says the backward pass keeps: on PARAM's
/// `linear` and `resnet` pairs, every byte the forward units are given is a tensor the ET (read
/// here on its own: a node under an `autograd::engine::evaluate_function` reading a storage a
/// node outside any wrote) shows the backward reading, and they hold most of those bytes.
#[test]
fn activations_from_the_et_are_the_tensors_the_backward_pass_reads() {
    for pair in [LINEAR, RESNET] {
        let (et, _) = read(pair);
        // The reference, from the ET alone.
        let by_id: std::collections::HashMap<u64, &stepcast_trace::EtNode> =
            et.nodes.iter().map(|n| (n.id, n)).collect();
        let in_backward = |node: &stepcast_trace::EtNode| {
            // The root is its own parent.
            let mut at = Some(node);
            while let Some(n) = at {
                if n.name.starts_with("autograd::engine::evaluate_function") {
                    return true;
                }
                at = n
                    .parent
                    .filter(|&p| p != n.id)
                    .and_then(|p| by_id.get(&p).copied());
            }
            false
        };
        let mut written: std::collections::HashMap<u64, i64> = Default::default();
        for node in et.nodes.iter().filter(|n| !in_backward(n)) {
            for t in &node.outputs {
                let bytes = (t.elements * t.element_bytes) as i64;
                let e = written.entry(t.storage_id).or_insert(0);
                *e = (*e).max(bytes);
            }
        }
        let mut kept: std::collections::HashMap<u64, i64> = Default::default();
        for node in et.nodes.iter().filter(|n| in_backward(n)) {
            for t in &node.inputs {
                if let Some(&bytes) = written.get(&t.storage_id) {
                    kept.insert(t.storage_id, bytes);
                }
            }
        }
        let reference: i64 = kept.values().sum();
        let (trace, _, with, attached) = built_with_and_without(pair);
        let mapping = map(&trace, &with);
        let mut context = Context::new(&trace, &with, &mapping);
        context.data = Some(&attached.dependencies);
        let activations = stepcast::whatif::models::forward_units(&context);
        assert_eq!(
            activations.source,
            stepcast::whatif::models::ActivationSource::ExecutionTrace
        );
        let total: i64 = activations.units.iter().map(|u| u.bytes).sum();
        assert!(
            total > 0 && total <= reference && total * 2 >= reference,
            "{}: {total} bytes in the forward units, {reference} the ET shows kept",
            pair.1
        );
    }
}
