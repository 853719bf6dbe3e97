//! Which gradients a one-GPU training step produces, how large each is, and which recorded
//! task makes it ready: what data-parallel training would all-reduce (Daydream A.4).
//!
//! Ready points: the autograd engine runs one `torch::autograd::AccumulateGrad` op per
//! parameter, right after the backward function that computed its gradient, in the order
//! the gradients become ready. A gradient is ready on the device when the last device task
//! launched by the backward thread up to the end of that op has run (DDP's reducer hook runs
//! there and makes its communication stream wait on the compute stream's work so far).
//!
//! Sizes, first source that has them:
//! 1. [`SizeSource::RecordedShapes`]: the `AccumulateGrad` op's recorded input shape and type
//!    (`record_shapes=True`): elements × bytes of the dtype;
//! 2. [`SizeSource::OptimizerShapes`]: the parameter shapes of the optimizer step's ops (the
//!    first input of each per-parameter op, or each tensor of a `_foreach_` op's first list),
//!    taken in reverse (the optimizer walks parameters in order, backward readies them in
//!    reverse);
//! 3. [`SizeSource::File`]: a user file ([`parse_gradient_file`]), in parameter order.
//!
//! Without `AccumulateGrad` ops, every gradient is taken to be ready at the end of the step's
//! backward pass (no overlap: an upper bound on the exposed communication).
//!
//! A CPU-only trace (DDP over gloo on CPU tensors) has no device task: a gradient is ready at
//! the end of the host task that holds its `AccumulateGrad` op (the backward runs on the
//! calling thread, one outermost `evaluate_function` op per task), and the optimizer's first
//! host task waits for the exchanges.

use std::collections::BTreeMap;

use stepcast_trace::{Dtype, EventId, EventKind, OpInput, Trace, shape_elements};

use crate::Window;
use crate::analyze::mapping::{Mapping, Phase};
use crate::graph::{EdgeKind, NO_STEP, TaskId};

/// Where the gradient sizes came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSource {
    /// `Input Dims` / `Input type` of the `AccumulateGrad` ops.
    RecordedShapes,
    /// The parameter shapes of the optimizer step's ops.
    OptimizerShapes,
    /// A user-supplied file.
    File,
    /// The trace's own recorded all-reduces (a trace with collectives but no shapes): one
    /// gradient per all-reduce of the last step, of its recorded message size.
    RecordedBuckets,
}

impl SizeSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SizeSource::RecordedShapes => "recorded_shapes",
            SizeSource::OptimizerShapes => "optimizer_shapes",
            SizeSource::File => "file",
            SizeSource::RecordedBuckets => "recorded_buckets",
        }
    }
}

/// One parameter's gradient in one step.
#[derive(Clone, Debug, PartialEq)]
pub struct Gradient {
    /// Its index among the step's gradients, in ready order.
    pub index: u32,
    pub bytes: i64,
    /// The device task after which it is ready.
    pub ready: TaskId,
}

/// The gradients of every step of the window, in ready order.
#[derive(Clone, Debug, PartialEq)]
pub struct Gradients {
    pub source: SizeSource,
    /// `true` when ready points come from `AccumulateGrad` ops; `false` when every gradient
    /// is ready at the end of the step's backward pass.
    pub ready_from_autograd: bool,
    /// Per step of the window (index into `window.steps`): the step's gradients.
    pub steps: BTreeMap<u32, Vec<Gradient>>,
    /// Per step: the device task the optimizer step's work starts with (it waits for every
    /// all-reduce of the step), if found.
    pub optimizer_start: BTreeMap<u32, TaskId>,
    /// Gradient bytes of one step (the largest step).
    pub bytes_per_step: i64,
    /// Parameters per step (the largest step).
    pub parameters: usize,
}

/// Why no gradients could be found.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GradientError {
    #[error(
        "no gradient sizes: the trace records no shapes (profile with record_shapes=True), no \
         optimizer op shapes and no all-reduce message sizes; give them with --gradients FILE"
    )]
    NoSizes,
    #[error("no backward pass found in the steps: nothing produces gradients")]
    NoBackward,
    #[error("gradient file line {line}: {message}")]
    BadFile { line: usize, message: String },
}

/// Parses a gradient file: one parameter per line, in parameter order (as
/// `model.named_parameters()` lists them), `NAME BYTES` or `BYTES` (whitespace or a comma
/// between); blank lines and `#` comments are skipped. Returns the bytes per parameter.
pub fn parse_gradient_file(text: &str) -> Result<Vec<i64>, GradientError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let last = line
            .rsplit(|c: char| c.is_whitespace() || c == ',')
            .next()
            .unwrap_or(line);
        let bytes: i64 =
            last.parse()
                .ok()
                .filter(|&b| b >= 0)
                .ok_or_else(|| GradientError::BadFile {
                    line: i + 1,
                    message: format!("expected `NAME BYTES` or `BYTES`, got `{line}`"),
                })?;
        out.push(bytes);
    }
    if out.is_empty() {
        return Err(GradientError::BadFile {
            line: 0,
            message: "no parameters".into(),
        });
    }
    Ok(out)
}

/// The tensors of input `input` of op `event`: `(elements, bytes per element)` of each (one
/// for a tensor, several for a tensor list, whose element type is not recorded).
fn input_tensors(trace: &Trace, event: EventId, input: usize) -> Option<Vec<(i64, Option<i64>)>> {
    match trace.inputs_of(event)?.get(input)? {
        OpInput::Tensor { shape, dtype } => {
            Some(vec![(shape_elements(shape)?, dtype.map(Dtype::bytes))])
        }
        OpInput::TensorList(shapes) => shapes
            .iter()
            .map(|shape| Some((shape_elements(shape)?, None)))
            .collect(),
        OpInput::Scalar
        | OpInput::Int(_)
        | OpInput::Bool(_)
        | OpInput::Ints(_)
        | OpInput::Other => None,
    }
}

/// For each host lane of the graph: the device tasks launched from it, by call start.
struct Launches {
    /// `(graph lane of the call, call start, device task)`, sorted.
    by_lane: Vec<(u32, i64, TaskId)>,
}

impl Launches {
    fn new(window: &Window) -> Launches {
        let graph = &window.graph;
        let mut by_lane = Vec::new();
        for t in 0..graph.task_count() {
            if !graph.kind[t].on_device() {
                continue;
            }
            for e in graph.preds(TaskId(t as u32)) {
                if graph.pred_kind[e] == EdgeKind::Launch {
                    let call = graph.pred[e].index();
                    by_lane.push((graph.lane[call], graph.rec_start_ns[call], TaskId(t as u32)));
                }
            }
        }
        by_lane.sort_unstable();
        Launches { by_lane }
    }

    /// The last device task launched from graph lane `lane` by a call starting at or before
    /// `time_ns`.
    fn last_before(&self, lane: u32, time_ns: i64) -> Option<TaskId> {
        let end = self
            .by_lane
            .partition_point(|&(l, t, _)| (l, t) <= (lane, time_ns));
        let &(l, _, task) = self.by_lane[..end].last()?;
        (l == lane).then_some(task)
    }
}

/// The gradients of the window's steps (see the module documentation). `file`: per-parameter
/// bytes in parameter order; when given, it is the source of the sizes.
pub fn find_gradients(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
    file: Option<&[i64]>,
) -> Result<Gradients, GradientError> {
    let graph = &window.graph;
    let names = &trace.names;
    let accumulate = names.lookup("torch::autograd::AccumulateGrad");
    let launches = Launches::new(window);
    // Where no task runs on a device, the host's tasks are where gradients become ready.
    let host_only = !graph.has_device_tasks();
    let counts = |t: usize| graph.kind[t].on_device() || host_only;
    let lane_of_trace: BTreeMap<u32, u32> = graph
        .lanes
        .iter()
        .enumerate()
        .map(|(i, l)| (l.trace_lane.0, i as u32))
        .collect();
    // Ready points and recorded sizes, per step, in ready order.
    let mut found: BTreeMap<u32, Vec<(i64, TaskId, Option<i64>)>> = BTreeMap::new();
    if let Some(accumulate) = accumulate {
        for (i, event) in trace.events.iter().enumerate() {
            if event.kind != EventKind::CpuOp || event.name != accumulate {
                continue;
            }
            let Some(&lane) = lane_of_trace.get(&event.lane.0) else {
                continue;
            };
            let task = if host_only {
                host_task_holding(window, lane, event.start_ns)
            } else {
                launches.last_before(lane, event.end_ns())
            };
            let Some(task) = task else {
                continue;
            };
            let step = graph.step[task.index()];
            if step == NO_STEP {
                continue;
            }
            let bytes =
                input_tensors(trace, EventId(i as u32), 0).and_then(|tensors| {
                    match tensors.as_slice() {
                        [(elements, Some(dtype))] => elements.checked_mul(*dtype),
                        _ => None,
                    }
                });
            found
                .entry(step)
                .or_default()
                .push((event.start_ns, task, bytes));
        }
    }
    let mut ready: BTreeMap<u32, Vec<(TaskId, Option<i64>)>> = found
        .into_iter()
        .map(|(step, mut points)| {
            points.sort_by_key(|&(start, task, _)| (start, task));
            (step, points.into_iter().map(|(_, t, b)| (t, b)).collect())
        })
        .collect();
    let ready_from_autograd = !ready.is_empty();
    if !ready_from_autograd {
        // Every gradient ready at the end of the step's backward pass.
        let mut last_backward: BTreeMap<u32, TaskId> = BTreeMap::new();
        for t in 0..graph.task_count() {
            let step = graph.step[t];
            if step == NO_STEP || !counts(t) || mapping.phase[t] != Phase::Backward {
                continue;
            }
            let entry = last_backward.entry(step).or_insert(TaskId(t as u32));
            if graph.rec_end_ns[t] > graph.rec_end_ns[entry.index()] {
                *entry = TaskId(t as u32);
            }
        }
        if last_backward.is_empty() {
            return Err(GradientError::NoBackward);
        }
        for (step, task) in last_backward {
            ready.insert(step, vec![(task, None)]);
        }
    }
    let optimizer_start = optimizer_starts(window, mapping, &ready, host_only);
    // Sizes: the file, else recorded, else the optimizer's shapes.
    let parameters = ready.values().map(Vec::len).max().unwrap_or(0);
    let recorded_complete = ready_from_autograd
        && ready
            .values()
            .filter(|r| r.len() == parameters)
            .all(|r| r.iter().all(|(_, b)| b.is_some()));
    let (source, sizes): (SizeSource, Option<Vec<i64>>) = if let Some(file) = file {
        // Parameter order: backward readies them in reverse.
        (SizeSource::File, Some(file.iter().rev().copied().collect()))
    } else if recorded_complete {
        (SizeSource::RecordedShapes, None)
    } else if let Some(sizes) = optimizer_sizes(trace, mapping) {
        (SizeSource::OptimizerShapes, Some(sizes))
    } else {
        return Err(GradientError::NoSizes);
    };
    let mut steps = BTreeMap::new();
    for (step, points) in ready {
        let gradients = match &sizes {
            None => points
                .iter()
                .enumerate()
                .map(|(i, &(task, bytes))| Gradient {
                    index: i as u32,
                    bytes: bytes.unwrap_or(0),
                    ready: task,
                })
                .collect(),
            Some(sizes) => spread(sizes, &points),
        };
        steps.insert(step, gradients);
    }
    let bytes_per_step = steps
        .values()
        .map(|g: &Vec<Gradient>| g.iter().map(|g| g.bytes).sum::<i64>())
        .max()
        .unwrap_or(0);
    let parameters = steps.values().map(Vec::len).max().unwrap_or(0);
    Ok(Gradients {
        source,
        ready_from_autograd,
        steps,
        optimizer_start,
        bytes_per_step,
        parameters,
    })
}

/// `sizes` (ready order) placed on `points` (ready order): one to one when the counts agree,
/// else gradient `j` of `n` on point `⌈(j + 1) m / n⌉ − 1` of `m` (in proportion).
fn spread(sizes: &[i64], points: &[(TaskId, Option<i64>)]) -> Vec<Gradient> {
    let (n, m) = (sizes.len(), points.len());
    sizes
        .iter()
        .enumerate()
        .filter_map(|(j, &bytes)| {
            let p = ((j + 1) * m).div_ceil(n).max(1) - 1;
            points.get(p).map(|&(task, _)| Gradient {
                index: j as u32,
                bytes,
                ready: task,
            })
        })
        .collect()
}

/// The task of graph lane `lane` whose recorded span holds `time_ns`.
fn host_task_holding(window: &Window, lane: u32, time_ns: i64) -> Option<TaskId> {
    let graph = &window.graph;
    let l = graph.lanes.get(lane as usize)?;
    let first = l.first_task as usize;
    let starts = &graph.rec_start_ns[first..first + l.task_count as usize];
    let t = first + starts.partition_point(|&s| s <= time_ns).checked_sub(1)?;
    (graph.rec_end_ns[t] >= time_ns).then_some(TaskId(t as u32))
}

/// Per step: the first device task of the optimizer phase (by recorded start) after the
/// step's last gradient is ready (`zero_grad`'s kernels, earlier in the step, are not it);
/// with `host_only` (a CPU-only trace), the first host task.
fn optimizer_starts(
    window: &Window,
    mapping: &Mapping,
    ready: &BTreeMap<u32, Vec<(TaskId, Option<i64>)>>,
    host_only: bool,
) -> BTreeMap<u32, TaskId> {
    let graph = &window.graph;
    let mut out: BTreeMap<u32, TaskId> = BTreeMap::new();
    for t in 0..graph.task_count() {
        let step = graph.step[t];
        if step == NO_STEP
            || !(graph.kind[t].on_device() || host_only)
            || mapping.phase[t] != Phase::Optimizer
        {
            continue;
        }
        let last_ready = ready.get(&step).and_then(|points| {
            points
                .iter()
                .map(|(task, _)| graph.rec_end_ns[task.index()])
                .max()
        });
        if last_ready.is_none_or(|end| graph.rec_start_ns[t] < end) {
            continue;
        }
        let entry = out.entry(step).or_insert(TaskId(t as u32));
        if graph.rec_start_ns[t] < graph.rec_start_ns[entry.index()] {
            *entry = TaskId(t as u32);
        }
    }
    out
}

/// Parameter sizes from the ops of one optimizer step (in reverse: ready order), if they
/// record shapes: the first input of each outermost per-parameter op under `Optimizer.step`,
/// or each tensor of a `_foreach_` op's first list. Only the ops of the first op name seen
/// count (`aten::mul_` then `aten::add_` per parameter would count each parameter twice).
fn optimizer_sizes(trace: &Trace, mapping: &Mapping) -> Option<Vec<i64>> {
    let step_name = |name: &str| name.starts_with("Optimizer.step#");
    let (index, marker) = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation)
        .filter(|(_, e)| step_name(trace.name(e.name)))
        .nth(1)
        .or_else(|| {
            trace
                .events
                .iter()
                .enumerate()
                .find(|(_, e)| step_name(trace.name(e.name)))
        })?;
    let marker_id = EventId(index as u32);
    let mut per_name: BTreeMap<stepcast_trace::NameId, Vec<i64>> = BTreeMap::new();
    let mut first_name = None;
    for (i, event) in trace.events.iter().enumerate() {
        if event.lane != marker.lane
            || event.kind != EventKind::CpuOp
            || event.start_ns < marker.start_ns
            || event.end_ns() > marker.end_ns()
        {
            continue;
        }
        // Direct children of the optimizer step only.
        if mapping.parent.get(i).copied().flatten() != Some(marker_id) {
            continue;
        }
        let Some(tensors) = input_tensors(trace, EventId(i as u32), 0) else {
            continue;
        };
        let bytes: Option<Vec<i64>> = tensors
            .iter()
            .map(|&(elements, dtype)| elements.checked_mul(dtype.unwrap_or(4)))
            .collect();
        let Some(bytes) = bytes.filter(|b| !b.is_empty() && b.iter().all(|&x| x > 0)) else {
            continue;
        };
        first_name.get_or_insert(event.name);
        per_name.entry(event.name).or_default().extend(bytes);
    }
    let mut sizes = per_name.remove(&first_name?)?;
    sizes.reverse();
    Some(sizes)
}
