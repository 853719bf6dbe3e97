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

use std::collections::BTreeMap;

use stepcast_trace::{EventId, EventKind, Trace};

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

/// Bytes per element of a PyTorch scalar type as the profiler writes it (`float`,
/// `c10::Half`, `c10::BFloat16`, `double`...).
fn dtype_bytes(dtype: &str) -> Option<i64> {
    let d = dtype
        .trim()
        .trim_start_matches("c10::")
        .to_ascii_lowercase();
    Some(match d.as_str() {
        "double" | "long" | "int64_t" | "long int" | "c10::complex<float>" => 8,
        "float" | "int" | "unsigned int" => 4,
        "half" | "bfloat16" | "short" => 2,
        "bool" | "unsigned char" | "signed char" | "char" => 1,
        d if d.starts_with("float8") => 1,
        _ => return None,
    })
}

/// A JSON value of `Input Dims`: nested lists of integers (other scalars read as `None`).
#[derive(Clone, Debug, PartialEq)]
enum Dims {
    List(Vec<Dims>),
    Int(Option<i64>),
}

/// How deep `Input Dims` nests: the inputs, a tensor list, a tensor's sizes. Deeper text is no
/// shape a profiler records; refusing it also keeps dropping a [`Dims`] (recursive) shallow.
const MAX_DIMS_DEPTH: usize = 4;

/// Parses `Input Dims` text (nested lists of numbers; strings and other scalars become
/// `Int(None)`). `None` when it is not such a list, or nests deeper than [`MAX_DIMS_DEPTH`].
/// A loop over an explicit stack of open lists: the text comes from the trace, and recursing
/// on its brackets overflowed the thread's stack on hostile input.
fn parse_dims(text: &str) -> Option<Dims> {
    let b = text.as_bytes();
    let mut i = 0;
    let skip_whitespace = |i: &mut usize| {
        while b.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    // The lists opened and not yet closed, outermost first.
    let mut open: Vec<Vec<Dims>> = Vec::new();
    loop {
        skip_whitespace(&mut i);
        let value = match b.get(i) {
            Some(b'[') => {
                if open.len() == MAX_DIMS_DEPTH {
                    return None;
                }
                i += 1;
                open.push(Vec::new());
                continue;
            }
            Some(b']') if !open.is_empty() => {
                i += 1;
                Dims::List(open.pop()?)
            }
            Some(b',') if !open.is_empty() => {
                i += 1;
                continue;
            }
            Some(b'"') => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                Dims::Int(None)
            }
            // The end of the text inside a list: not a whole value.
            None if !open.is_empty() => return None,
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b']') {
                    i += 1;
                }
                let text = std::str::from_utf8(b.get(start..i)?).ok()?.trim();
                Dims::Int(text.parse().ok())
            }
        };
        match open.last_mut() {
            Some(list) => list.push(value),
            None => return Some(value),
        }
    }
}

/// The top-level strings of `Input type` text (`["float", "double", ""]`).
fn parse_types(text: &str) -> Vec<&str> {
    text.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|t| t.trim().trim_matches('"'))
        .collect()
}

/// The tensors of an op's inputs: `(elements, bytes per element)` of every tensor of input
/// `input` (one for a tensor, several for a tensor list), from the recorded text.
fn input_tensors(dims: &str, types: &str, input: usize) -> Option<Vec<(i64, Option<i64>)>> {
    let Dims::List(inputs) = parse_dims(dims)? else {
        return None;
    };
    let dtype = parse_types(types).get(input).and_then(|t| dtype_bytes(t));
    let elements = |shape: &Dims| -> Option<i64> {
        let Dims::List(sizes) = shape else {
            return None;
        };
        sizes.iter().try_fold(1i64, |acc, d| match d {
            Dims::Int(Some(v)) if *v >= 0 => acc.checked_mul(*v),
            _ => None,
        })
    };
    let Dims::List(entry) = inputs.get(input)? else {
        return None;
    };
    if entry.first().is_some_and(|d| matches!(d, Dims::List(_))) {
        // A tensor list (`_foreach_` ops): its type entry names the list, not the dtype.
        entry.iter().map(|s| Some((elements(s)?, dtype))).collect()
    } else {
        Some(vec![(elements(inputs.get(input)?)?, dtype)])
    }
}

/// The recorded input text of `event`.
fn op_inputs(trace: &Trace, event: EventId) -> Option<&stepcast_trace::OpInputs> {
    trace
        .op_inputs
        .binary_search_by_key(&event, |(e, _)| *e)
        .ok()
        .map(|i| &trace.op_inputs[i].1)
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
            let Some(task) = launches.last_before(lane, event.end_ns()) else {
                continue;
            };
            let step = graph.step[task.index()];
            if step == NO_STEP {
                continue;
            }
            let bytes = op_inputs(trace, EventId(i as u32))
                .and_then(|inputs| input_tensors(&inputs.dims, &inputs.types, 0))
                .and_then(|tensors| match tensors.as_slice() {
                    [(elements, Some(dtype))] => elements.checked_mul(*dtype),
                    _ => None,
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
            if step == NO_STEP || !graph.kind[t].on_device() || mapping.phase[t] != Phase::Backward
            {
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
    let optimizer_start = optimizer_starts(window, mapping, &ready);
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

/// Per step: the first device task of the optimizer phase (by recorded start) after the
/// step's last gradient is ready (`zero_grad`'s kernels, earlier in the step, are not it).
fn optimizer_starts(
    window: &Window,
    mapping: &Mapping,
    ready: &BTreeMap<u32, Vec<(TaskId, Option<i64>)>>,
) -> BTreeMap<u32, TaskId> {
    let graph = &window.graph;
    let mut out: BTreeMap<u32, TaskId> = BTreeMap::new();
    for t in 0..graph.task_count() {
        let step = graph.step[t];
        if step == NO_STEP || !graph.kind[t].on_device() || mapping.phase[t] != Phase::Optimizer {
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
        let Some(inputs) = op_inputs(trace, EventId(i as u32)) else {
            continue;
        };
        let Some(tensors) = input_tensors(&inputs.dims, &inputs.types, 0) else {
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

#[cfg(test)]
mod tests {
    use super::{Dims, parse_dims};

    #[test]
    fn dims_parse_as_recorded() {
        let int = |v| Dims::Int(Some(v));
        assert_eq!(
            parse_dims(r#"[[2, 3], [], [[4], [5, 6]], "x"]"#),
            Some(Dims::List(vec![
                Dims::List(vec![int(2), int(3)]),
                Dims::List(vec![]),
                Dims::List(vec![
                    Dims::List(vec![int(4)]),
                    Dims::List(vec![int(5), int(6)])
                ]),
                Dims::Int(None),
            ]))
        );
        assert_eq!(parse_dims("[[2, 3]"), None, "unclosed");
    }

    /// Hostile nesting (a million brackets) is refused without recursing: it once overflowed
    /// the stack (issue #11).
    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert_eq!(parse_dims(&deep), None);
        assert_eq!(parse_dims(&"[".repeat(1_000_000)), None);
    }
}
