//! The fused optimizer where the update runs on the host (a CPU-only trace): PyTorch's
//! `foreach=False` loop, or its `_foreach_` ops, become one `_fused_*` op per step.
//!
//! What the trace shows of such an update: one `Optimizer.step#<Class>.step` range per step,
//! holding per parameter a handful of element-wise ops (Adam: `lerp_`, `mul_`, `addcmul_`,
//! `sqrt`, `div`, `add_`, `addcdiv_`), each a dispatch and one pass over its tensors, with the
//! Python loop's untraced time between them. A fused kernel (`torch._fused_adam_` and kin)
//! makes one vectorized pass per parameter: it reads the parameter, its gradient and its state
//! once and writes the parameter and the state once.
//!
//! The model: each range's update ops (the direct children that compute on tensors of more
//! than one element; conversions, copies, allocations, storage swaps and scalar ops stay as
//! recorded) and the untraced time after each are replaced by one op costing
//!
//! `dispatch + traffic_ratio × Σ (paced op − dispatch)`
//!
//! where the *paced* ops are the loop's multiply-add passes ([`is_multiply_add`]: `lerp_`,
//! `mul_`, `addcmul_`, `add_`, `addcdiv_`...), `traffic_ratio` is the fused kernel's tensor
//! traffic over theirs (elements read and written, from the ops' recorded shapes:
//! [`UpdateOps::traffic`]), and `dispatch` is the recorded cost of an update op on a tensor too
//! small to take time beyond its dispatch. So the fused kernel makes its passes at the pace the
//! loop's own multiply-add passes ran, on these tensors, on this machine.
//!
//! **Why not all the loop's ops**: the others (`sqrt`, `div`) cost more per element than their
//! traffic: their arithmetic, and PyTorch's CPU `sqrt` slows on exact zeros in Adam's second
//! moment (dead ReLU units: `cpu-optimizer-pairs/zeros_in_sqrt.py`); the fused kernel does that
//! arithmetic vectorized inside its passes. On the 15 CPU pairs recorded when this was written
//! it prices the fused op at ×0.63 to ×1.22 of the one AFTER's trace measured, where pacing it
//! by all the loop's ops (the model as first written) gave ×0.82 to ×3.47; four pairs recorded
//! after it, blind, ×0.63 to ×1.10 (`docs/accuracy.md`). Where no multiply-add op is recorded,
//! every op paces.
//!
//! **Assumption**: the update's passes are bound by the traffic through memory and cache, as
//! multiply-add kernels are; where the arithmetic binds the fused kernel instead, it is slower
//! than this, up to the loop's time less its dispatches (the op never costs more than that).
//! No constant is fitted: the ratio comes from the update's shapes and the optimizer's state
//! ([`state_tensors`]), the costs from the trace.
//!
//! A trace recorded without shapes (`record_shapes=False`, the profiler's default) still names
//! each op: on the parameter whose update took longest, every op that took longer than two
//! dispatches is taken to read and write whole parameter tensors, as many as its name says
//! ([`passes_by_name`]: a binary op's other operand a scalar). A step counter's `add_` on its
//! one-element tensor, slowed by the profiler as much as the others, counts two passes too
//! many (Adam: 21 for 19; 17 for the 15 of its multiply-add ops).

use std::collections::BTreeMap;

use stepcast_trace::{EventId, EventKind, NameId, OpInput, Trace, shape_elements};

use super::super::super::Context;
use crate::graph::{Graph, TaskId, TaskKind};

/// Update ops on tensors of at most this many elements read and written are taken to cost
/// only their dispatch (a few µs: 4096 elements is 16 KiB of FP32, nanoseconds of work).
const DISPATCH_ONLY_TRAFFIC: i64 = 4096;

/// One `Optimizer.step` range of the window whose update runs on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct HostStep {
    /// The graph task that holds the range (the outermost op of a CPU-only thread).
    pub task: TaskId,
    /// Its update ops' recorded time, and the untraced time after each up to the next op.
    pub update_ns: i64,
    /// What the fused op would cost.
    pub fused_ns: i64,
}

/// The host updates of a window: what the model changes and the numbers its caveat gives.
#[derive(Clone, Debug, PartialEq)]
pub struct HostUpdates {
    /// `Adam`, `SGD`... from the range's name.
    pub optimizer: String,
    pub steps: Vec<HostStep>,
    /// Update ops per step (a `_foreach_` op counts once).
    pub ops_per_step: usize,
    /// Parameters per step, and their elements.
    pub parameters: usize,
    pub parameter_elements: i64,
    /// Tensor passes per parameter element the loop's ops make (elements they read and write
    /// over the parameters' elements).
    pub loop_passes: f64,
    /// Of them, the passes of the multiply-add ops that pace the fused kernel (all of them
    /// where the loop has none).
    pub paced_passes: f64,
    /// The paced ops' share of the update ops' time beyond their dispatch.
    pub paced_share: f64,
    /// The fused kernel's elements read and written over the paced ops'.
    pub traffic_ratio: f64,
    /// Tensors per parameter element the fused kernel reads and writes; `None` for an optimizer
    /// whose state is unknown (then `traffic_ratio` is 1: only dispatches are saved).
    pub fused_passes: Option<i64>,
    /// Whether the ops' input shapes were recorded. Without them `parameter_elements` is 0
    /// (unknown), `parameters` counts the ops of the least frequent name (a `_foreach_` op's
    /// list counts once) and `loop_passes` comes from the ops' names.
    pub shapes: bool,
    pub dispatch_ns: i64,
    pub dispatch_from: Dispatch,
    /// The most elements of one tensor an out-of-place update op (`sqrt`, `div`: a name
    /// without PyTorch's trailing `_`) allocated for its result, per call; 0 without shapes.
    /// On a CPU the host allocator can hand results of a few MiB back to the kernel when they
    /// are freed and take fresh pages for the next ones, every step: page faults in the update
    /// and in the phases after it (`cpu-optimizer-pairs/faults_per_step.py`), which a fused
    /// update, allocating nothing, no longer causes. The model does not charge them.
    pub largest_temporary_elements: i64,
}

/// Where the cost of one dispatch came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// The median update op on a tensor too small to take time beyond it.
    SmallUpdateOp,
    /// The median other op under the optimizer step (`item`, `to`).
    OtherOp,
    /// The shortest update op (a step counter's `add_`): a trace without shapes, whose update
    /// ran no other op.
    ShortestUpdateOp,
    /// Nothing to read it from: 0.
    Unknown,
}

impl Dispatch {
    pub fn describe(self) -> &'static str {
        match self {
            Dispatch::SmallUpdateOp => "the median update op on a small tensor",
            Dispatch::OtherOp => "the median other op of the optimizer step",
            Dispatch::ShortestUpdateOp => "the shortest update op, no shapes being recorded",
            Dispatch::Unknown => "none recorded: taken as 0",
        }
    }
}

impl HostUpdates {
    /// Per step, on average: the update as recorded and as fused.
    pub fn mean_ns(&self) -> (i64, i64) {
        let n = self.steps.len().max(1) as i64;
        let update: i64 = self.steps.iter().map(|s| s.update_ns).sum();
        let fused: i64 = self.steps.iter().map(|s| s.fused_ns).sum();
        (update / n, fused / n)
    }
}

/// State tensors per parameter of `torch.optim.<optimizer>` as configured: what its fused
/// kernel reads besides the parameter and its gradient, and writes besides the parameter.
/// `None` for an optimizer not listed. `ops` (the names of the update's ops) and
/// `ops_per_parameter` tell the options that add state (`amsgrad`'s `maximum`, SGD's momentum).
fn state_tensors(optimizer: &str, ops: &[&str], ops_per_parameter: usize) -> Option<i64> {
    let has = |op: &str| ops.iter().any(|name| name.contains(op));
    match optimizer {
        // exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad).
        "Adam" | "AdamW" | "NAdam" | "RAdam" | "Adamax" => {
            Some(if has("maximum") || has("max_") { 3 } else { 2 })
        }
        // The momentum buffer: `mul_` and `add_` on it beside the parameter's own `add_` (a
        // weight decay adds one op, no state).
        "SGD" => Some(i64::from(ops_per_parameter >= 3)),
        "Adagrad" => Some(1),
        // square_avg (and grad_avg when centered, momentum_buffer with momentum).
        "RMSprop" => Some(1 + i64::from(has("addcmul")) + i64::from(has("lerp"))),
        "Adadelta" => Some(2),
        _ => None,
    }
}

/// Tensors an update op reads and writes per element of the tensor it updates, from its name
/// alone (a trace without shapes): each tensor operand read once, the result written once, a
/// binary op's other operand taken to be a scalar (`mul_(beta2)`, `add_(eps)`): the fewest
/// its name allows.
fn passes_by_name(name: &str) -> i64 {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    let op = op.strip_prefix("_foreach_").unwrap_or(op);
    match op.trim_end_matches('_') {
        // self and two tensors read, self written.
        "addcmul" | "addcdiv" => 4,
        // self and another tensor read (lerp's weight a scalar), one written.
        "lerp" | "maximum" | "minimum" => 3,
        _ => 2,
    }
}

/// Whether an update op's arithmetic per element is a multiply-add or less (`add_`, `mul_`,
/// `lerp_`, `addcmul_`, `addcdiv_`, a comparison): its time is its passes through memory, the
/// pace of a fused kernel's. `sqrt`, `div`, `pow`, `exp` and kin are not: their arithmetic, or
/// their inputs' values, can cost more than their traffic.
fn is_multiply_add(name: &str) -> bool {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    let op = op.strip_prefix("_foreach_").unwrap_or(op);
    matches!(
        op.trim_end_matches('_'),
        "add"
            | "sub"
            | "mul"
            | "lerp"
            | "addcmul"
            | "addcdiv"
            | "neg"
            | "zero"
            | "fill"
            | "maximum"
            | "minimum"
            | "clamp"
    )
}

/// Ops under an optimizer step that are no part of its arithmetic: conversions, copies,
/// allocations, views and reads of a scalar. They stay as recorded.
fn is_bookkeeping(name: &str) -> bool {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    matches!(
        op,
        "to" | "_to_copy"
            | "copy_"
            | "item"
            | "_local_scalar_dense"
            | "detach"
            | "detach_"
            | "view"
            | "view_as_real"
            | "clone"
            | "zeros_like"
            | "empty_like"
            | "empty"
            | "empty_strided"
            | "resize_"
            // Views, and a storage swap (`p.set_(synchronized)` after a gradient allreduce:
            // Horovod's `DistributedOptimizer.step` around the optimizer's): no arithmetic.
            | "as_strided"
            | "reshape"
            | "_reshape_alias"
            | "alias"
            | "set_"
    ) || op.starts_with("_foreach_copy")
}

/// The tensors an op reads, flattened: `(input index, elements)` per tensor (a list's tensors
/// share their input's index). A list whose shapes the profiler did not record (PyTorch records
/// none for `_foreach_` ops' lists) is taken to hold `parameters`, the step's parameter sizes.
fn tensors(inputs: &[OpInput], parameters: &[i64]) -> Vec<(usize, i64)> {
    let mut out = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        match input {
            OpInput::Tensor { shape, .. } => out.extend(shape_elements(shape).map(|n| (i, n))),
            OpInput::TensorList(shapes) if shapes.is_empty() => {
                out.extend(parameters.iter().map(|&n| (i, n)))
            }
            OpInput::TensorList(shapes) => out.extend(
                shapes
                    .iter()
                    .filter_map(|s| shape_elements(s))
                    .map(|n| (i, n)),
            ),
            OpInput::Scalar
            | OpInput::Int(_)
            | OpInput::Bool(_)
            | OpInput::Ints(_)
            | OpInput::Other => {}
        }
    }
    out
}

/// The gradients' sizes PyTorch accumulated, from the `torch::autograd::AccumulateGrad` ops'
/// recorded inputs: `(start, elements)`, sorted. The parameters of the update that follows them.
fn accumulated_gradients(trace: &Trace) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.kind == EventKind::CpuOp && trace.name(e.name) == "torch::autograd::AccumulateGrad"
        })
        .filter_map(|(i, e)| {
            let inputs = trace.inputs_of(EventId(i as u32))?;
            Some((e.start_ns, inputs.first()?.elements()?))
        })
        .collect();
    out.sort_unstable();
    out
}

/// One update op: its name, recorded time, the tensors of its first input (one per parameter
/// it updates) and the elements it reads and writes.
struct UpdateOp {
    name: NameId,
    event: EventId,
    /// Empty where the trace recorded no shapes.
    first_input: Vec<i64>,
    /// 0 where the trace recorded no shapes.
    traffic: i64,
    /// A multiply-add op ([`is_multiply_add`]).
    multiply_add: bool,
}

impl UpdateOp {
    /// `None` for an op that is bookkeeping or computes on no tensor of more than one element
    /// (where `shapes` were recorded: without them, every op but bookkeeping).
    fn read(trace: &Trace, event: EventId, parameters: &[i64], shapes: bool) -> Option<UpdateOp> {
        let name = trace.events[event.index()].name;
        if is_bookkeeping(trace.name(name)) {
            return None;
        }
        let multiply_add = is_multiply_add(trace.name(name));
        if !shapes {
            return Some(UpdateOp {
                name,
                event,
                first_input: Vec::new(),
                traffic: 0,
                multiply_add,
            });
        }
        let tensors = tensors(trace.inputs_of(event)?, parameters);
        let first = tensors.first()?.0;
        let first_input: Vec<i64> = tensors
            .iter()
            .filter(|(i, _)| *i == first)
            .map(|&(_, n)| n)
            .collect();
        if first_input.iter().all(|&n| n <= 1) {
            return None;
        }
        // Every input read once; the result (in place: the first input) written once.
        // Saturating: shapes come from the file, and a hostile one must not wrap.
        let read = tensors
            .iter()
            .fold(0i64, |sum, &(_, n)| sum.saturating_add(n));
        let written = first_input
            .iter()
            .fold(0i64, |sum, &n| sum.saturating_add(n));
        Some(UpdateOp {
            name,
            event,
            first_input,
            traffic: read.saturating_add(written),
            multiply_add,
        })
    }
}

/// The update ops of one `Optimizer.step` range, and the untraced time after each.
struct UpdateOps {
    ops: Vec<UpdateOp>,
    /// Per op: its recorded time plus the untraced time up to the next event of the range
    /// (or its end).
    with_gap_ns: Vec<i64>,
    /// The recorded time of the range's other direct children (bookkeeping, scalar ops).
    other_ns: Vec<i64>,
    /// Already one fused op per step: nothing to fuse.
    fused: bool,
    /// Whether the range's ops recorded their input shapes.
    shapes: bool,
}

impl UpdateOps {
    fn read(
        trace: &Trace,
        parents: &[Option<EventId>],
        range: EventId,
        parameters: &[i64],
    ) -> UpdateOps {
        let marker = &trace.events[range.index()];
        let lane_from = trace.events.partition_point(|e| e.lane < marker.lane);
        let lane = trace.lane_events(marker.lane);
        let from = lane_from + lane.partition_point(|e| e.start_ns < marker.start_ns);
        let to = lane_from + lane.partition_point(|e| e.start_ns < marker.end_ns());
        let children: Vec<EventId> = (from..to)
            .map(|i| EventId(i as u32))
            .filter(|&id| {
                trace.events[id.index()].kind == EventKind::CpuOp
                    && enclosing_op(trace, parents, id) == Some(range)
            })
            .collect();
        let fused = children.iter().any(|&id| {
            trace
                .name(trace.events[id.index()].name)
                .contains("_fused_")
        });
        let shapes = children
            .iter()
            .any(|&id| trace.inputs_of(id).is_some_and(|inputs| !inputs.is_empty()));
        let mut ops = Vec::new();
        let mut with_gap_ns = Vec::new();
        let mut other_ns = Vec::new();
        for (k, &id) in children.iter().enumerate() {
            let Some(op) = UpdateOp::read(trace, id, parameters, shapes) else {
                other_ns.push(trace.events[id.index()].dur_ns);
                continue;
            };
            let event = &trace.events[id.index()];
            let next_ns = children
                .get(k + 1)
                .map_or(marker.end_ns(), |&n| trace.events[n.index()].start_ns);
            with_gap_ns.push(event.dur_ns + (next_ns - event.end_ns()).max(0));
            ops.push(op);
        }
        UpdateOps {
            ops,
            with_gap_ns,
            other_ns,
            fused,
            shapes,
        }
    }

    /// Elements read and written by the loop's ops (`paced_only`: by its multiply-add ops).
    fn traffic(&self, paced_only: bool) -> i64 {
        self.ops
            .iter()
            .filter(|op| !paced_only || op.multiply_add)
            .fold(0i64, |sum, op| sum.saturating_add(op.traffic))
    }

    /// Parameters and their elements: the op name that appears least often (once per
    /// parameter; a `_foreach_` op once per tensor of its first list) counts them.
    fn parameters(&self) -> (usize, i64) {
        let mut by_name: BTreeMap<NameId, (usize, i64)> = BTreeMap::new();
        for op in &self.ops {
            let entry = by_name.entry(op.name).or_default();
            // Without shapes an op updates one tensor, or one list.
            entry.0 += op.first_input.len().max(1);
            entry.1 = op
                .first_input
                .iter()
                .fold(entry.1, |sum, &n| sum.saturating_add(n));
        }
        by_name
            .into_values()
            .min_by_key(|&(count, elements)| (count, elements))
            .unwrap_or((0, 0))
    }
}

/// The innermost op or annotation around `event`, past the Python frames between them
/// (a trace recorded `with_stack` puts `adam.py(...): _single_tensor_adam` there).
fn enclosing_op(trace: &Trace, parents: &[Option<EventId>], event: EventId) -> Option<EventId> {
    let mut parent = parents.get(event.index()).copied().flatten()?;
    while trace.events[parent.index()].kind == EventKind::PythonFunction {
        parent = parents.get(parent.index()).copied().flatten()?;
    }
    Some(parent)
}

/// The graph task on `graph`'s lane for trace lane of `event` that encloses it, if that task
/// is a CPU op (the thread makes no runtime calls).
fn enclosing_cpu_task(graph: &Graph, trace: &Trace, event: EventId) -> Option<TaskId> {
    let e = &trace.events[event.index()];
    let t = graph.task_holding(e.lane, e.start_ns)?;
    (graph.kind[t.index()] == TaskKind::CpuOp && graph.rec_end_ns[t.index()] >= e.end_ns())
        .then_some(t)
}

/// The window's host updates (see the module documentation); `None` when no step of it runs
/// an unfused update on a CPU-only thread.
pub fn host_updates(context: &Context<'_>) -> Option<HostUpdates> {
    let trace = context.trace;
    let graph = &context.window.graph;
    let parents = &context.mapping.parent;
    // Only a thread that makes no runtime calls has CPU-op tasks to shorten (a GPU trace's
    // host tasks are its calls): nothing to read elsewhere.
    if !graph.kind.contains(&TaskKind::CpuOp) {
        return None;
    }
    let gradients = accumulated_gradients(trace);
    let mut previous_end_ns = i64::MIN;
    let mut ranges = Vec::new();
    let mut optimizer = None;
    for (i, event) in trace.events.iter().enumerate() {
        if !matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation) {
            continue;
        }
        let Some(class) = trace
            .name(event.name)
            .strip_prefix("Optimizer.step#")
            .map(|rest| rest.split('.').next().unwrap_or(rest))
        else {
            continue;
        };
        let id = EventId(i as u32);
        let Some(task) = enclosing_cpu_task(graph, trace, id) else {
            continue;
        };
        // The gradients accumulated since the previous update (a step's backward pass).
        let from = gradients.partition_point(|&(t, _)| t < previous_end_ns);
        let to = gradients.partition_point(|&(t, _)| t < event.start_ns);
        previous_end_ns = event.end_ns();
        let parameters: Vec<i64> = gradients[from..to.max(from)]
            .iter()
            .map(|&(_, n)| n)
            .collect();
        let ops = UpdateOps::read(trace, parents, id, &parameters);
        if ops.fused || ops.ops.is_empty() {
            continue;
        }
        optimizer.get_or_insert_with(|| class.to_string());
        ranges.push((task, ops));
    }
    let optimizer = optimizer?;
    // Dispatch: the median update op on a tensor too small to cost more; where every update
    // op is large (a `_foreach_` op per step), the median other op of the step (an `item`, a
    // conversion: a dispatch and little else).
    let mut small: Vec<i64> = Vec::new();
    let mut other: Vec<i64> = Vec::new();
    let mut shortest: Option<i64> = None;
    for (_, ops) in &ranges {
        for op in &ops.ops {
            let dur_ns = trace.events[op.event.index()].dur_ns;
            shortest = Some(shortest.map_or(dur_ns, |s| s.min(dur_ns)));
            // Without shapes no op is known to be small.
            if ops.shapes && op.traffic <= DISPATCH_ONLY_TRAFFIC {
                small.push(dur_ns);
            }
        }
        other.extend_from_slice(&ops.other_ns);
    }
    let median = |mut v: Vec<i64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    };
    let shapes = ranges.iter().any(|(_, ops)| ops.shapes);
    let (dispatch_ns, dispatch_from) = match (median(small), median(other), shortest) {
        (Some(ns), ..) => (ns, Dispatch::SmallUpdateOp),
        (None, Some(ns), _) => (ns, Dispatch::OtherOp),
        (None, None, Some(ns)) if !shapes => (ns, Dispatch::ShortestUpdateOp),
        _ => (0, Dispatch::Unknown),
    };
    let dispatch_ns = dispatch_ns.max(0);
    // Shapes and ratio from the range with the most update ops (a full step).
    let (_, widest) = ranges.iter().max_by_key(|(_, ops)| ops.ops.len())?;
    let (parameters, parameter_elements) = widest.parameters();
    let largest_temporary_elements = widest
        .ops
        .iter()
        .filter(|op| !trace.name(op.name).ends_with('_'))
        .flat_map(|op| op.first_input.iter().copied())
        .max()
        .unwrap_or(0);
    let mut op_names: Vec<&str> = widest.ops.iter().map(|op| trace.name(op.name)).collect();
    op_names.sort_unstable();
    op_names.dedup();
    let tensors_updated: usize = widest
        .ops
        .iter()
        .map(|op| op.first_input.len().max(1))
        .sum();
    let ops_per_parameter = tensors_updated / parameters.max(1);
    let fused_passes =
        state_tensors(&optimizer, &op_names, ops_per_parameter).map(|states| 3 + 2 * states);
    // The multiply-add ops pace the fused kernel; a loop with none of them is paced by all.
    let paced_only = widest.ops.iter().any(|op| op.multiply_add);
    let paces = |op: &UpdateOp| !paced_only || op.multiply_add;
    let (loop_passes, paced_passes) = if widest.shapes {
        let per_element = |traffic: i64| traffic as f64 / parameter_elements.max(1) as f64;
        (
            per_element(widest.traffic(false)),
            per_element(widest.traffic(paced_only)),
        )
    } else {
        // A per-tensor loop repeats one sequence of ops per parameter (a `_foreach_` update is
        // one sequence): the passes of the parameter whose ops took longest, counting the ops
        // that took longer than two dispatches, each over the whole parameter.
        let names: Vec<NameId> = widest.ops.iter().map(|op| op.name).collect();
        let period = (1..=names.len() / 2)
            .find(|&p| {
                names.len().is_multiple_of(p)
                    && names.iter().enumerate().all(|(i, n)| *n == names[i % p])
            })
            .unwrap_or(names.len())
            .max(1);
        let dur_ns = |op: &UpdateOp| trace.events[op.event.index()].dur_ns;
        let heaviest = widest
            .ops
            .chunks(period)
            .max_by_key(|ops| ops.iter().map(dur_ns).sum::<i64>())
            .unwrap_or(&[]);
        let passes = |paced: bool| -> f64 {
            heaviest
                .iter()
                .filter(|op| dur_ns(op) > 2 * dispatch_ns && (!paced || paces(op)))
                .map(|op| passes_by_name(trace.name(op.name)))
                .sum::<i64>() as f64
        };
        (passes(false), passes(true))
    };
    // `None`: an optimizer whose state is unknown, charged the loop's time (×1 of all ops).
    let traffic_ratio = match fused_passes {
        Some(passes) if paced_passes > 0.0 => Some(passes as f64 / paced_passes),
        _ => None,
    };
    let mut work_total_ns = 0i64;
    let mut paced_total_ns = 0i64;
    let steps = ranges
        .iter()
        .map(|(task, ops)| {
            let update_ns: i64 = ops.with_gap_ns.iter().sum();
            let work = |op: &UpdateOp| (trace.events[op.event.index()].dur_ns - dispatch_ns).max(0);
            let work_ns: i64 = ops.ops.iter().map(work).sum();
            let paced_ns: i64 = ops.ops.iter().filter(|op| paces(op)).map(work).sum();
            work_total_ns += work_ns;
            paced_total_ns += paced_ns;
            // Never more than the loop's ops beyond their dispatch: a fused kernel bound by
            // its arithmetic does that arithmetic once, as the loop did.
            let fused_work_ns = traffic_ratio.map_or(work_ns, |ratio| {
                ((ratio * paced_ns as f64).round() as i64).min(work_ns)
            });
            HostStep {
                task: *task,
                update_ns,
                fused_ns: (dispatch_ns + fused_work_ns).min(update_ns),
            }
        })
        .collect();
    Some(HostUpdates {
        optimizer,
        steps,
        ops_per_step: widest.ops.len(),
        parameters,
        parameter_elements,
        loop_passes,
        paced_passes,
        paced_share: paced_total_ns as f64 / work_total_ns.max(1) as f64,
        traffic_ratio: traffic_ratio.unwrap_or(1.0),
        fused_passes,
        shapes: widest.shapes,
        dispatch_ns,
        dispatch_from,
        largest_temporary_elements,
    })
}
