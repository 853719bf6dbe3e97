//! Faster hardware: every resource's cost divided by its speed-up.

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use super::Hardware;
use super::kernels::{Bound, classify_kernel};
use super::peaks::{Datasheet, datasheet, products};
use crate::analyze::op_model::{KernelCost, kernel_costs, peak_for};
use crate::graph::{TaskId, TaskKind};

/// How much faster the host of another machine ran the same programs, measured between the
/// lent machines (`testdata/kineto/stepcast/`): the median ratio of the same ops' host times
/// (`aten::*` cpu ops recorded in both traces) of H100 traces against H200 traces of the same
/// configuration, ×0.77–0.83 towards the second H200 machine (`h200-pairs/`, a slower host)
/// and ×1.48–1.64 towards the first (`h200/`, a faster one). A GPU's name says nothing of its
/// host: where `--cpu` is not given, a prediction for another machine reports the step at
/// these two ends as well.
pub const MEASURED_HOST_FACTORS: (f64, f64) = (0.77, 1.64);

/// The speed-ups of `--to TARGET` from the trace's GPU, per kind of work, from the two
/// datasheets.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetRatios {
    pub from: Datasheet,
    pub to: Datasheet,
    /// FP32 on CUDA cores, TF32 tensor, FP16/BF16 tensor: peak ratios.
    pub fp32: f64,
    pub tf32: f64,
    pub fp16: f64,
    /// Memory bandwidth ratio: memory-bound kernels and memsets.
    pub memory: f64,
    /// Host link (PCIe generation) ratio: copies.
    pub copy: f64,
}

/// The ratios of `--to target` from the trace's GPU (its name read from the trace).
pub fn target_ratios(context: &Context<'_>, target: &str) -> Result<TargetRatios, WhatIfError> {
    let known = || products().join(", ");
    let to = datasheet(target).ok_or_else(|| WhatIfError::UnknownGpu {
        gpu: target.to_string(),
        known: known(),
    })?;
    let from = context
        .trace
        .devices
        .iter()
        .find_map(|d| datasheet(&d.name))
        .ok_or_else(|| WhatIfError::UnknownGpu {
            gpu: context
                .trace
                .devices
                .first()
                .map_or_else(|| "none recorded".to_string(), |d| d.name.clone()),
            known: known(),
        })?;
    let fp16 = to.peaks.fp16_tflops / from.peaks.fp16_tflops;
    let tf32 = match (to.peaks.tf32_tflops, from.peaks.tf32_tflops) {
        (Some(t), Some(f)) => t / f,
        // TF32 kernels recorded on a GPU that has it run as FP32 on one that has not.
        (None, Some(f)) => to.peaks.fp32_tflops / f,
        _ => fp16,
    };
    Ok(TargetRatios {
        fp32: to.peaks.fp32_tflops / from.peaks.fp32_tflops,
        tf32,
        fp16,
        memory: to.memory_tb_s / from.memory_tb_s,
        copy: to.host_link_gb_s / from.host_link_gb_s,
        from,
        to,
    })
}

/// **Faster hardware**: every task's cost divided by the factor of its resource (tensor-core
/// eligible kernels by `compute`, other kernels and memsets by `memory`, copies by `copy`,
/// host tasks and the untraced host time by `cpu`; where scheduler events say a thread was off
/// its CPU, only its on-CPU time). Kernels are classified as `amp` does
/// ([`super::classify_kernel`]: memory-bound names first). Collectives are unchanged (the network
/// is not the hardware changed here). The factors are the user's (a datasheet ratio), or with
/// `--to` ([`Hardware::target`]) the ratios of the two GPUs' datasheets ([`target_ratios`]):
/// compute-bound kernels by the peak of their math path (FP32 on CUDA cores, TF32, FP16), the
/// others by memory bandwidth, copies by the host link. The host stays `cpu` (1 unless given:
/// a GPU's name says nothing of the machine's host; the caveats then give the step at the
/// host factors measured between machines, [`MEASURED_HOST_FACTORS`]).
pub fn faster_hardware(
    context: &Context<'_>,
    edit: &mut EditGraph,
    hardware: &Hardware,
) -> Result<usize, WhatIfError> {
    let ratios = match hardware.target {
        Some(target) => Some(target_ratios(context, target)?),
        None => None,
    };
    let names = &context.trace.names;
    // With two datasheets, a kernel whose op has recorded shapes keeps its efficiency against
    // its roofline: its time scales by its roofline's, compute or memory as its FLOPs per byte
    // put it (a small-batch GEMM gains the memory's ratio, not the tensor cores').
    let costs = match &ratios {
        Some(_) => kernel_costs(context.trace, context.window, context.mapping),
        None => Vec::new(),
    };
    // Tasks by the factor they are divided by (bits of the f64), host tasks apart.
    let mut host: Vec<TaskId> = Vec::new();
    let mut by_speed: std::collections::BTreeMap<u64, Vec<TaskId>> = Default::default();
    let all = edit.select_where(|_| true);
    for &t in all.tasks() {
        let speed = match edit.kind(t) {
            TaskKind::ApiCall | TaskKind::CpuOp => {
                host.push(t);
                continue;
            }
            TaskKind::Kernel => {
                if let (Some(r), Some(Some(cost))) = (&ratios, costs.get(t.index()))
                    && let Some(speed) = roofline_speed(cost, &r.from, &r.to)
                {
                    by_speed.entry(speed.to_bits()).or_default().push(t);
                    continue;
                }
                let class = classify_kernel(names.get(edit.name(t)));
                match (&ratios, class.bound) {
                    (Some(r), Bound::Compute) if class.half => r.fp16,
                    (Some(r), Bound::Compute) if class.simt => r.fp32,
                    (Some(r), Bound::Compute) if class.tf32 || class.fast_f32 => r.tf32,
                    (Some(r), Bound::Compute) => r.fp16,
                    (Some(r), _) => r.memory,
                    (None, Bound::Compute) => hardware.compute,
                    (None, _) => hardware.memory,
                }
            }
            TaskKind::Memset => ratios.as_ref().map_or(hardware.memory, |r| r.memory),
            TaskKind::Memcpy => ratios.as_ref().map_or(hardware.copy, |r| r.copy),
            TaskKind::Collective => continue,
        };
        by_speed.entry(speed.to_bits()).or_default().push(t);
    }
    for speed in [
        hardware.cpu,
        hardware.compute,
        hardware.memory,
        hardware.copy,
    ]
    .into_iter()
    .chain(by_speed.keys().map(|&b| f64::from_bits(b)))
    {
        if speed <= 0.0 || !speed.is_finite() {
            return Err(super::super::edit::EditError::BadFactor { factor: speed }.into());
        }
    }
    let mut changed = 0;
    for (bits, group) in by_speed {
        let speed = f64::from_bits(bits);
        if speed == 1.0 {
            continue;
        }
        changed += group.len();
        edit.scale(&Selection::new(group), 1.0 / speed)?;
    }
    let speed = hardware.cpu;
    if speed != 1.0 {
        changed += host.len();
        if !context.trace.off_cpu.is_empty() {
            scale_on_cpu_time(context, edit, host, speed)?;
        } else {
            let selection = Selection::new(host);
            edit.scale(&selection, 1.0 / speed)?;
            // Host tasks: the untraced host time after them runs on the same CPU.
            edit.scale_gaps(&selection, 1.0 / speed)?;
        }
    }
    Ok(changed)
}

/// How much faster a kernel of this cost runs on `to` than on `from` at the same share of its
/// roofline: the ratio of its roofline times (its FLOPs at its type's peak or its bytes at the
/// memory's bandwidth, whichever is longer); `None` where either is 0.
pub fn roofline_speed(cost: &KernelCost, from: &Datasheet, to: &Datasheet) -> Option<f64> {
    let time = |sheet: &Datasheet| {
        cost.roofline_ns(
            peak_for(cost.dtype, cost.category, sheet),
            sheet.memory_tb_s,
        )
    };
    let (before, after) = (time(from), time(to));
    (before > 0.0 && after > 0.0 && before.is_finite() && after.is_finite()).then(|| before / after)
}

/// The share of the kernels' recorded time whose op has a FLOPs and bytes model (scaled by
/// its roofline with `--to`), and the rest (scaled by name).
fn modeled_kernel_share(context: &Context<'_>) -> f64 {
    let g = &context.window.graph;
    let costs = kernel_costs(context.trace, context.window, context.mapping);
    let (mut modeled, mut all) = (0i64, 0i64);
    for t in 0..g.task_count() {
        if g.kind[t] != TaskKind::Kernel {
            continue;
        }
        let ns = g.rec_end_ns[t] - g.rec_start_ns[t];
        all += ns;
        if costs[t].is_some() {
            modeled += ns;
        }
    }
    if all > 0 {
        modeled as f64 / all as f64
    } else {
        0.0
    }
}

/// What `faster_hardware` assumes on this trace, and with `--to` and no `--cpu`, the step at
/// the host factors measured between machines ([`MEASURED_HOST_FACTORS`]).
pub fn caveats(context: &Context<'_>, hardware: &Hardware) -> Vec<String> {
    let mut out = Vec::new();
    let ratios = hardware
        .target
        .and_then(|target| target_ratios(context, target).ok());
    match &ratios {
        Some(_) => out.push(format!(
            "{:.0} % of the kernel time is of ops with recorded shapes: each such kernel keeps \
             its share of its roofline, its time scaled by its roofline's on the two datasheets \
             (by FLOPs at its type's peak or by bytes at the memory's bandwidth, as its FLOPs per \
             byte put it); the rest is split into compute- and memory-bound by name \
             (memory-bound names first)",
            modeled_kernel_share(context) * 100.0
        )),
        // The split matters only where kernels take different factors.
        None if hardware.compute != hardware.memory && context.window.graph.has_device_tasks() => {
            out.push(
                "kernels are split into compute- and memory-bound by name (memory-bound names \
                 first): the factors are the user's"
                    .to_string(),
            )
        }
        None => {}
    }
    if let Some(r) = ratios {
        out.push(format!(
            "{} → {} from the datasheets: FP16 tensor ×{:.2}, TF32 ×{:.2}, FP32 ×{:.2} (by each \
             compute-bound kernel's math path), memory bandwidth ×{:.2} (the other kernels and \
             memsets), host link ×{:.2} (copies): peak ratios, which kernels reach only in part",
            r.from.peaks.source.trim_end_matches(" datasheet"),
            r.to.peaks.source.trim_end_matches(" datasheet"),
            r.fp16,
            r.tf32,
            r.fp32,
            r.memory,
            r.copy
        ));
        if !hardware.cpu_given {
            out.push(host_range(context, hardware));
        }
    }
    if hardware.cpu != 1.0 && !context.trace.off_cpu.is_empty() {
        let off_ns: i64 = context.trace.off_cpu.iter().map(|o| o.dur_ns).sum();
        out.push(format!(
            "the scheduler's events put traced host threads off their CPU for {:.3} ms in all \
             (blocked or waiting for a CPU): that time is kept as recorded; where it is a wait for \
             another thread that also runs faster, the gain is larger",
            off_ns as f64 / 1e6
        ));
    }
    out
}

/// The host of the target machine is unknown: the step with the host as recorded and at the
/// two ends of the host factors measured between the lent machines.
fn host_range(context: &Context<'_>, hardware: &Hardware) -> String {
    let (slow, fast) = MEASURED_HOST_FACTORS;
    let step_at = |cpu: f64| -> Option<f64> {
        let with_host = Hardware { cpu, ..*hardware };
        let outcome = super::super::what_if(context, |edit| {
            faster_hardware(context, edit, &with_host).map(|_| ())
        })
        .ok()?;
        Some(outcome.predicted.step_ns as f64 / 1e6)
    };
    match (step_at(slow), step_at(fast)) {
        (Some(at_slow), Some(at_fast)) => format!(
            "the host is unknown (give --cpu): the prediction keeps it as recorded (×1); \
             between the lent machines the same ops' host times moved by ×{slow} to ×{fast} \
             (docs/accuracy.md), which gives {at_slow:.3} to {at_fast:.3} ms per step: the step \
             is only known within that range where the host bounds it"
        ),
        _ => format!(
            "the host is unknown (give --cpu): the prediction keeps it as recorded (×1); \
             between the lent machines the same ops' host times moved by ×{slow} to ×{fast}"
        ),
    }
}

/// A faster CPU where the trace says when host threads were off their CPU (scheduler events):
/// only the time a task, or the untraced gap after it, spent on its CPU runs faster; the time
/// its thread was blocked or waiting for a CPU stays as recorded.
fn scale_on_cpu_time(
    context: &Context<'_>,
    edit: &mut EditGraph,
    tasks: Vec<TaskId>,
    speed: f64,
) -> Result<(), WhatIfError> {
    let graph = &context.window.graph;
    let off_cpu = &context.trace.off_cpu;
    // Off-CPU time inside [from, to) on trace lane `lane` (a thread's intervals are disjoint
    // and sorted by lane, then start).
    let off_ns = |lane, from: i64, to: i64| -> i64 {
        let first = off_cpu.partition_point(|o| (o.lane, o.end_ns()) <= (lane, from));
        off_cpu[first..]
            .iter()
            .take_while(|o| o.lane == lane && o.start_ns < to)
            .map(|o| (o.end_ns().min(to) - o.start_ns.max(from)).max(0))
            .sum()
    };
    // The share of `span_ns` that runs faster: the on-CPU part.
    let factor = |off: i64, span_ns: i64| -> f64 {
        let off_share = if span_ns > 0 {
            (off as f64 / span_ns as f64).clamp(0.0, 1.0)
        } else {
            0.0
        };
        off_share + (1.0 - off_share) / speed
    };
    for task in tasks {
        let origin = edit.origin(task).index();
        let lane = graph.lanes[graph.lane[origin] as usize].trace_lane;
        let (start, end) = (graph.rec_start_ns[origin], graph.rec_end_ns[origin]);
        let one = Selection::new(vec![task]);
        edit.scale(&one, factor(off_ns(lane, start, end), end - start))?;
        let gap = graph.gap_ns[origin];
        edit.scale_gaps(
            &one,
            factor(off_ns(lane, end, end.saturating_add(gap)), gap),
        )?;
    }
    Ok(())
}
