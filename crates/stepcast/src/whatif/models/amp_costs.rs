//! What automatic mixed precision costs: the casts autocast adds and the gradient scaler's
//! kernels and host synchronization (`torch.autocast` + `torch.cuda.amp.GradScaler`).

use std::collections::BTreeMap;

use stepcast_trace::NameId;

use super::super::edit::{EditGraph, Insert, InsertLaunch};
use super::super::{Context, WhatIfError};
use super::AmpDtype;
use super::activations::{ForwardUnit, forward_units, lane_prev};
use super::autocast::{List, StepCasts, list};
use super::gist::elementwise_throughput;
use super::kernels::{Bound, classify_kernel};
use crate::analyze::mapping::Phase;
use crate::graph::{TaskId, TaskKind};
use crate::whatif::ddp::gradients::find_gradients;

/// What `charge` added per steady step (means), for reports and tests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AmpCosts {
    /// Cast kernels inserted, forward and backward.
    pub casts: usize,
    /// Of them, the gradients' casts in the backward pass (`ToCopyBackward0`).
    pub backward_casts: usize,
    /// Scaler tasks inserted (eight per steady step with an optimizer kernel).
    pub scaler_tasks: usize,
    /// Steady steps left without the scaler: its blocking read back would have made the
    /// graph cyclic there (the stream's work before the optimizer waits for later host work).
    pub scaler_skipped: usize,
    /// Host time added by the inserted calls, whole window.
    pub host_ns: i64,
    /// Device time added by the inserted kernels and copies, whole window.
    pub device_ns: i64,
    /// Element-wise throughput the casts were costed at (bytes of the FP32 tensor per ns),
    /// `None` when the trace gave none (casts then cost a median element-wise kernel).
    pub elementwise_bytes_per_ns: Option<f64>,
}

/// The trace's own figures the inserted work is costed with.
struct Costs {
    throughput: Option<f64>,
    /// Median recorded element-wise kernel (its time and name), the fallback cost.
    kernel: Option<(i64, NameId)>,
    /// Median host time of a forward op of one element-wise kernel that allocates its output
    /// (out of place: no trailing `_`), as a cast does; else of a forward op made only of
    /// element-wise kernels (in place) plus the trace's median allocation op
    /// (`aten::empty_strided`, what a cast's `_to_copy` allocates its output with): an
    /// out-of-place op is an in-place one that also allocates. What one more eager op (a cast,
    /// a scaler op) costs the host. (The in-place op alone charged ResNet-18's casts 12-15 µs
    /// on the recorded H100, where its AFTER measured 29 µs an `aten::_to_copy`.)
    op_host_ns: i64,
    /// Median host time of a backward node (`evaluate_function: …Backward0`) that launches
    /// one element-wise kernel (`ReluBackward0`): what a `ToCopyBackward0` costs the autograd
    /// thread; else `op_host_ns`.
    backward_op_host_ns: i64,
    /// The smallest recorded copy: a 4-byte `found_inf` read back.
    copy: Option<(TaskKind, NameId, i64)>,
}

impl Costs {
    fn measure(context: &Context<'_>, units: &[ForwardUnit]) -> Costs {
        let graph = &context.window.graph;
        let names = &context.trace.names;
        let elementwise = |u: &&ForwardUnit| {
            u.tasks.iter().all(|t| {
                graph.kind[t.index()] == TaskKind::Kernel
                    && super::is_elementwise(names.get(graph.name[t.index()]))
            })
        };
        let mut kernels: Vec<(i64, NameId)> = units
            .iter()
            .filter(elementwise)
            .flat_map(|u| u.tasks.iter())
            .map(|t| (graph.dur_ns[t.index()], graph.name[t.index()]))
            .collect();
        kernels.sort_unstable();
        let median = |mut v: Vec<i64>| {
            v.sort_unstable();
            v.get(v.len().saturating_sub(1) / 2).copied()
        };
        let single = |u: &&ForwardUnit| u.tasks.len() == 1;
        let out_of_place = |u: &&ForwardUnit| {
            !context
                .trace
                .name(context.trace.events[u.op.index()].name)
                .ends_with('_')
        };
        let host_of = |u: &ForwardUnit| context.trace.events[u.op.index()].dur_ns;
        let op_host_ns = median(
            units
                .iter()
                .filter(elementwise)
                .filter(single)
                .filter(out_of_place)
                .map(host_of)
                .collect(),
        )
        .or_else(|| {
            let in_place = median(units.iter().filter(elementwise).map(host_of).collect())?;
            Some(in_place + allocation_host_ns(context).unwrap_or(0))
        })
        .unwrap_or(0);
        let backward_op_host_ns = backward_node_host_ns(context).unwrap_or(op_host_ns);
        let copy = (0..graph.task_count())
            .filter(|&t| graph.kind[t] == TaskKind::Memcpy)
            .min_by_key(|&t| graph.dur_ns[t])
            .map(|t| (TaskKind::Memcpy, graph.name[t], graph.dur_ns[t]));
        Costs {
            throughput: elementwise_throughput(context, units)
                .map(|(bytes_per_ns, _)| bytes_per_ns),
            kernel: kernels.get(kernels.len().saturating_sub(1) / 2).copied(),
            op_host_ns,
            backward_op_host_ns,
            copy,
        }
    }

    /// One element-wise pass over `bytes` of FP32 data: at the trace's throughput when both
    /// are known, else a median element-wise kernel.
    fn pass_ns(&self, bytes: Option<i64>) -> i64 {
        match (bytes, self.throughput) {
            (Some(b), Some(t)) if t > 0.0 => (b as f64 / t).round() as i64,
            _ => self.kernel.map_or(0, |k| k.0),
        }
    }
}

/// The median host time of the trace's allocation op (`aten::empty_strided`, else
/// `aten::empty`) in the window.
fn allocation_host_ns(context: &Context<'_>) -> Option<i64> {
    let trace = context.trace;
    let steps = &context.window.steps;
    let from = steps.first()?.start_ns;
    let to = steps.last()?.marker_end_ns;
    ["aten::empty_strided", "aten::empty"]
        .iter()
        .find_map(|name| {
            let mut durations: Vec<i64> = trace
                .events
                .iter()
                .filter(|e| {
                    e.kind == stepcast_trace::EventKind::CpuOp
                        && e.start_ns >= from
                        && e.start_ns < to
                        && trace.name(e.name) == *name
                })
                .map(|e| e.dur_ns)
                .collect();
            durations.sort_unstable();
            durations.get(durations.len().checked_sub(1)? / 2).copied()
        })
}

/// The median host time of a backward node of the steady steps that launched exactly one
/// device task, an element-wise kernel: the outermost op around its launching call.
fn backward_node_host_ns(context: &Context<'_>) -> Option<i64> {
    let graph = &context.window.graph;
    let names = &context.trace.names;
    let first_steady = u32::from(context.window.steps.len() >= 3);
    // Per outermost backward op: its device tasks, and whether all were element-wise.
    let mut nodes: BTreeMap<stepcast_trace::EventId, (usize, bool)> = BTreeMap::new();
    for t in 0..graph.task_count() {
        let device = matches!(graph.kind[t], TaskKind::Kernel | TaskKind::Memset);
        if !device
            || context.mapping.phase[t] != Phase::Backward
            || graph.step[t] == crate::graph::NO_STEP
            || graph.step[t] < first_steady
        {
            continue;
        }
        let stack = context.mapping.stack(TaskId(t as u32));
        let Some(op) = stack
            .iter()
            .find(|e| context.trace.events[e.index()].kind == stepcast_trace::EventKind::CpuOp)
        else {
            continue;
        };
        let entry = nodes.entry(*op).or_insert((0, true));
        entry.0 += 1;
        entry.1 &=
            graph.kind[t] == TaskKind::Kernel && super::is_elementwise(names.get(graph.name[t]));
    }
    let mut hosts: Vec<i64> = nodes
        .iter()
        .filter(|(_, (count, elementwise))| *count == 1 && *elementwise)
        .map(|(e, _)| context.trace.events[e.index()].dur_ns)
        .collect();
    hosts.sort_unstable();
    hosts.get(hosts.len().saturating_sub(1) / 2).copied()
}

/// Whether a forward unit is an op autocast runs in half precision: it has an FP32
/// tensor-core kernel (convolution, linear, matmul: autocast's FP16 op list).
fn is_autocast_op(context: &Context<'_>, unit: &ForwardUnit) -> bool {
    let graph = &context.window.graph;
    unit.tasks.iter().any(|t| {
        let class = classify_kernel(context.trace.names.get(graph.name[t.index()]));
        graph.kind[t.index()] == TaskKind::Kernel && class.bound == Bound::Compute && !class.half
    })
}

/// Inserts one element-wise kernel of `dur_ns` after device task `after`, launched by a call
/// costing `host_ns` after host task `host`. Returns the device task.
fn insert_op(
    edit: &mut EditGraph,
    (kind, name): (TaskKind, NameId),
    dur_ns: i64,
    after: TaskId,
    call: (NameId, TaskId, i64),
) -> Result<TaskId, WhatIfError> {
    Ok(edit.insert(&Insert {
        kind,
        name,
        dur_ns,
        after,
        launch: Some(InsertLaunch {
            name: call.0,
            after: call.1,
            dur_ns: call.2,
        }),
    })?)
}

/// Charges what AMP adds to each steady step:
/// - **casts** (one eager `aten::to` each: a kernel and an op's host time), those autocast
///   adds by its op lists ([`StepCasts`]): every FP32 input of an FP16-list op (a layer's
///   weight and bias, an FP32 activation: the batch, a layer norm's output) and the FP16
///   activation of an FP32-list op (a loss), before the op; in the backward pass, for each
///   cast tensor that requires a gradient, its gradient's cast back (`ToCopyBackward0`), before
///   the op's backward. An op on neither list that has an FP32 tensor-core kernel is taken as
///   an FP16-list op with parameters. A cast kernel is one element-wise pass over the FP32
///   tensor at the trace's own element-wise throughput ([`elementwise_throughput`]); its host
///   time is the trace's median out-of-place element-wise op (dispatch, allocation, launch),
///   a backward cast's the median backward node of one element-wise kernel;
/// - **the gradient scaler**, before the step's first optimizer kernel: its eight eager ops of
///   a step, each with the host time of one op; among them the fused unscale and inf check
///   (`_amp_foreach_non_finite_check_and_unscale_`, one pass over the step's gradient bytes)
///   and the `found_inf` read back (`optimizer.step` is skipped on overflow, so the host
///   **waits for the device** to finish the backward pass: the copy's call is blocking); the
///   others are a median element-wise kernel each.
pub fn charge(
    context: &Context<'_>,
    edit: &mut EditGraph,
    dtype: AmpDtype,
) -> Result<AmpCosts, WhatIfError> {
    let activations = forward_units(context);
    let costs = Costs::measure(context, &activations.units);
    let mut out = AmpCosts {
        elementwise_bytes_per_ns: costs.throughput,
        ..AmpCosts::default()
    };
    let trace = context.trace;
    let mut weight_bytes: BTreeMap<u32, i64> = BTreeMap::new();
    let mut step_casts = (u32::MAX, StepCasts::default());
    for unit in &activations.units {
        if step_casts.0 != unit.step {
            step_casts = (unit.step, StepCasts::default());
        }
        let op_name = trace.name(trace.events[unit.op.index()].name);
        let listed = list(op_name) != List::Unlisted;
        let as_name = if !listed && is_autocast_op(context, unit) {
            "aten::linear"
        } else {
            op_name
        };
        let casts = step_casts.1.casts(as_name, trace.inputs_of(unit.op));
        if casts.is_empty() {
            continue;
        }
        let Some(&first) = unit.tasks.first() else {
            continue;
        };
        if !edit.is_alive(first) {
            continue;
        }
        let (Some(launcher), Some(before)) = (edit.launcher(first), lane_prev(edit, first)) else {
            continue;
        };
        if edit.is_blocking(launcher) {
            continue;
        }
        let name = (
            TaskKind::Kernel,
            costs.kernel.map_or(edit.name(first), |k| k.1),
        );
        let call = (edit.name(launcher), launcher, costs.op_host_ns);
        for cast in &casts {
            let dur_ns = costs.pass_ns(cast.fp32_bytes);
            insert_op(edit, name, dur_ns, before, call)?;
            out.casts += 1;
            out.device_ns += dur_ns;
            out.host_ns += call.2;
            if cast.backward {
                *weight_bytes.entry(unit.step).or_default() += cast.fp32_bytes.unwrap_or(0);
            }
        }
        // The gradients' casts back to FP32, with the unit's backward.
        let Some(backward) = unit.backward.filter(|&b| edit.is_alive(b)) else {
            continue;
        };
        let (Some(host), Some(before)) = (edit.launcher(backward), lane_prev(edit, backward))
        else {
            continue;
        };
        if edit.is_blocking(host) {
            continue;
        }
        for cast in casts.iter().filter(|c| c.backward) {
            let dur_ns = costs.pass_ns(cast.fp32_bytes);
            insert_op(
                edit,
                name,
                dur_ns,
                before,
                (edit.name(host), host, costs.backward_op_host_ns),
            )?;
            out.casts += 1;
            out.backward_casts += 1;
            out.device_ns += dur_ns;
            out.host_ns += costs.backward_op_host_ns;
        }
    }
    // BF16 keeps FP32's exponent range: no loss scaling, no scaler.
    if dtype == AmpDtype::Fp16 {
        charge_scaler(context, edit, &costs, &weight_bytes, &mut out)?;
    }
    Ok(out)
}

/// The host time of GradScaler's work in one step, in eager ops' worth of this trace
/// ([`Costs::op_host_ns`]): its eight ops and the Python around them (`unscale_` walks every
/// parameter into per-device lists, `step` and `update` keep per-optimizer state). Measured on
/// the recorded pairs as the host time from the end of the backward pass to the optimizer's
/// step, less the `found_inf` read back's wait, plus what `update` adds after the step: 725
/// µs = 29.6 ops on the H100 MLP, 897 µs = 41.5 ops on the H100 transformer; fitted on those
/// two (their mean, 36) and checked on the others it was not fitted on: 45 ops on the H100
/// ResNet-18, 24, 33 and 28 on the H200 MLP, ResNet-18 and transformer (`docs/accuracy.md`).
pub const SCALER_HOST_OPS: f64 = 36.0;

/// The gradient scaler's work before each steady step's first optimizer kernel.
///
/// Every step's scaler is added at once and the graph checked once: when the whole is acyclic,
/// so is the graph after each step (it is part of it), and that is what checking step by step
/// gives. Only where the whole has a cycle are the steps tried one by one, each on a copy.
/// (Trying every step on a copy of the window's graph, replayed to find a cycle, cost a copy
/// and a replay per step: quadratic in the trace.)
fn charge_scaler(
    context: &Context<'_>,
    edit: &mut EditGraph,
    costs: &Costs,
    weight_bytes: &BTreeMap<u32, i64>,
    out: &mut AmpCosts,
) -> Result<(), WhatIfError> {
    let mut all = edit.clone();
    let mut all_out = out.clone();
    add_scalers(context, &mut all, costs, weight_bytes, &mut all_out, false)?;
    if all.finish().is_ok() {
        *edit = all;
        *out = all_out;
        return Ok(());
    }
    add_scalers(context, edit, costs, weight_bytes, out, true)
}

/// Adds each steady step's scaler ops; `check_each_step`: on a copy, kept only if the graph
/// stays acyclic (else the step is counted in `scaler_skipped`).
fn add_scalers(
    context: &Context<'_>,
    edit: &mut EditGraph,
    costs: &Costs,
    weight_bytes: &BTreeMap<u32, i64>,
    out: &mut AmpCosts,
    check_each_step: bool,
) -> Result<(), WhatIfError> {
    let graph = &context.window.graph;
    let mut optimizer_start: BTreeMap<u32, TaskId> = BTreeMap::new();
    for t in edit
        .select_where(|t| {
            edit.is_original(t)
                && edit.kind(t) == TaskKind::Kernel
                && context.mapping.phase[t.index()] == Phase::Optimizer
        })
        .tasks()
    {
        let step = edit.step(*t);
        let earlier = optimizer_start
            .get(&step)
            .is_some_and(|&o| graph.rec_start_ns[o.index()] <= graph.rec_start_ns[t.index()]);
        if !earlier {
            optimizer_start.insert(step, *t);
        }
    }
    // The step's gradient bytes: the recorded gradients, else the autocast ops' weights.
    let gradient_bytes = find_gradients(context.trace, context.window, context.mapping, None)
        .ok()
        .map(|g| g.bytes_per_step);
    for (step, start) in optimizer_start {
        let (Some(launcher), Some(before)) = (edit.launcher(start), lane_prev(edit, start)) else {
            continue;
        };
        let Some(host) = lane_prev(edit, launcher) else {
            continue;
        };
        let Some(kernel) = costs.kernel.map(|k| (TaskKind::Kernel, k.1)) else {
            continue;
        };
        let call_name = edit.name(launcher);
        let bytes = gradient_bytes.or_else(|| weight_bytes.get(&step).copied());
        let small_ns = costs.pass_ns(None);
        let (copy_kind, copy_name, copy_ns) = costs.copy.unwrap_or((kernel.0, kernel.1, 0));
        // GradScaler's ops of one step, each one eager op with its kernel (torch 1.x
        // `torch/cuda/amp/grad_scaler.py`): `scale()`'s multiplication of the loss;
        // `unscale_()`'s `inv_scale` (`double`, `reciprocal`, `float`), its `found_inf`
        // (`full`) and the fused unscale and inf check over every gradient; `step()`'s
        // `found_inf.item()` (a blocking read back); `update()`'s `_amp_update_scale_`. All sit
        // before the first optimizer kernel (the loss scaling ran earlier, at the same cost).
        let ops = [
            (kernel, small_ns, false),
            (kernel, small_ns, false),
            (kernel, small_ns, false),
            (kernel, small_ns, false),
            (kernel, small_ns, false),
            (kernel, costs.pass_ns(bytes), false),
            ((copy_kind, copy_name), copy_ns, true),
            (kernel, small_ns, false),
        ];
        // Where a recorded dependency ties the stream's work before the optimizer to later
        // host work, the blocking read back would close a cycle: such a step is tried on a
        // copy and left without the scaler (counted in `scaler_skipped`).
        let mut copy = check_each_step.then(|| edit.clone());
        let trial: &mut EditGraph = match copy.as_mut() {
            Some(copy) => copy,
            None => &mut *edit,
        };
        let mut added = AmpCosts::default();
        let mut after = (before, host);
        // The scaler's host time (SCALER_HOST_OPS eager ops' worth) spread over its ops.
        let scaler_op_host_ns =
            (costs.op_host_ns as f64 * SCALER_HOST_OPS / ops.len() as f64).round() as i64;
        for (name, dur_ns, blocking) in ops {
            let task = insert_op(
                trial,
                name,
                dur_ns,
                after.0,
                (call_name, after.1, scaler_op_host_ns),
            )?;
            let call = trial.launcher(task).unwrap_or(after.1);
            if blocking {
                // The host waits until the copy, behind the whole backward pass on the
                // stream, has run.
                trial.add_dependency(task, call, crate::graph::EdgeKind::HostSync, 0)?;
            }
            after = (task, call);
            added.scaler_tasks += 1;
            added.device_ns += dur_ns;
            added.host_ns += scaler_op_host_ns;
        }
        if let Some(copy) = copy {
            if copy.finish().is_err() {
                out.scaler_skipped += 1;
                continue;
            }
            *edit = copy;
        }
        out.scaler_tasks += added.scaler_tasks;
        out.device_ns += added.device_ns;
        out.host_ns += added.host_ns;
    }
    Ok(())
}
