//! **Op fusion** (dPRO's operator fusion pass): which chains of adjacent element-wise kernels
//! to fuse, one region (a chain's kernel names in one pass) at a time.
//!
//! Cost model: [`crate::whatif::models::fused_chain_ns`], the memory-bound roofline of
//! `kernel_fusion` on the trace's own durations; the launch calls of the fused-away kernels go
//! with the host time after them. dPRO's Theorem 1 (fusion hurts when it delays the gradients
//! a communication op waits for: the fused kernel ends when its last part would have) is not
//! a rule here but an outcome: the replay delays every successor of the fused kernel until it
//! ends, so a region whose fusion delays a collective predicts its own loss and is not taken.

use std::collections::BTreeMap;

use crate::analyze::mapping::Phase;
use crate::whatif::edit::{EditGraph, Selection};
use crate::whatif::models::{elementwise_runs, fuse_runs, fused_chain_ns, traffic_shares};
use crate::whatif::{Context, WhatIfError};

use super::Move;

/// One fusion region: every chain of the same kernels in one pass, in every steady step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub phase: Phase,
    /// The chain's kernel names, in stream order.
    pub kernels: Vec<String>,
    /// The ops (outermost `cpu_op`) that launched them, consecutive repeats merged: the region
    /// to hand `torch.compile`.
    pub ops: Vec<String>,
    /// Indices into [`Regions::runs`].
    pub runs: Vec<usize>,
    /// Costs its fusion cuts per steady step (device time and launch calls with their host
    /// time): the most it can gain.
    pub bound_ns: i64,
}

/// The window's element-wise chains, grouped into regions.
#[derive(Clone, Debug, Default)]
pub struct Regions {
    pub runs: Vec<(Phase, Selection)>,
    /// Per run, the fused kernel's share of its parts' time by the op model's bytes, where
    /// known ([`traffic_shares`]).
    pub shares: Vec<Option<f64>>,
    /// Sorted by (phase, kernels).
    pub regions: Vec<Region>,
}

impl Regions {
    pub fn find(context: &Context<'_>, edit: &EditGraph, steady_steps: usize) -> Regions {
        let runs = elementwise_runs(context, edit);
        let shares = traffic_shares(context, edit, &runs);
        let trace = context.trace;
        let mut by_key: BTreeMap<(Phase, Vec<String>), Region> = BTreeMap::new();
        for (i, (phase, run)) in runs.iter().enumerate() {
            let kernels: Vec<String> = run
                .tasks()
                .iter()
                .map(|&t| trace.name(edit.name(t)).to_string())
                .collect();
            let parts: Vec<i64> = run.tasks().iter().map(|&t| edit.dur_ns(t)).collect();
            let device_cut = parts.iter().sum::<i64>()
                - fused_chain_ns(&parts, shares.get(i).copied().flatten());
            let host_cut: i64 = run.tasks()[1..]
                .iter()
                .filter_map(|&t| edit.launcher(t))
                .map(|call| edit.dur_ns(call) + edit.gap_ns(call))
                .sum();
            let region = by_key.entry((*phase, kernels.clone())).or_insert_with(|| {
                let mut ops: Vec<String> = run
                    .tasks()
                    .iter()
                    .filter_map(|&t| context.mapping.op_name(trace, edit.origin(t)))
                    .map(|n| trace.name(n).to_string())
                    .collect();
                ops.dedup();
                Region {
                    phase: *phase,
                    kernels,
                    ops,
                    runs: Vec::new(),
                    bound_ns: 0,
                }
            });
            region.runs.push(i);
            region.bound_ns += device_cut + host_cut;
        }
        let mut regions: Vec<Region> = by_key.into_values().collect();
        for region in &mut regions {
            region.bound_ns /= steady_steps.max(1) as i64;
        }
        Regions {
            runs,
            shares,
            regions,
        }
    }

    /// The region a [`Move::FuseOps`] names, if this window has it.
    pub fn get(&self, phase: Phase, kernels: &[String]) -> Option<&Region> {
        self.regions
            .binary_search_by(|r| (r.phase, r.kernels.as_slice()).cmp(&(phase, kernels)))
            .ok()
            .map(|i| &self.regions[i])
    }
}

/// The op-fusion moves not yet in `plan`, with their bounds: each region alone, and every
/// region at once (`torch.compile` on the whole model: the coarse move).
pub fn candidates(regions: &Regions, plan: &[Move]) -> Vec<(Move, i64)> {
    if plan.contains(&Move::FuseAllElementwise) || regions.regions.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(Move, i64)> = Vec::new();
    let mut rest = 0;
    for region in &regions.regions {
        let fuse = Move::FuseOps {
            phase: region.phase,
            kernels: region.kernels.clone(),
        };
        if !plan.contains(&fuse) {
            rest += region.bound_ns;
            out.push((fuse, region.bound_ns));
        }
    }
    if out.len() > 1 {
        out.push((Move::FuseAllElementwise, rest));
    }
    out
}

/// Fuses the chains of every region `plan` names.
pub fn apply(regions: &Regions, plan: &[Move], edit: &mut EditGraph) -> Result<(), WhatIfError> {
    let all = plan.contains(&Move::FuseAllElementwise);
    let mut chosen: Vec<usize> = Vec::new();
    for region in &regions.regions {
        let named = plan.iter().any(|m| {
            matches!(m, Move::FuseOps { phase, kernels }
                if *phase == region.phase && *kernels == region.kernels)
        });
        if all || named {
            chosen.extend(&region.runs);
        }
    }
    chosen.sort_unstable();
    let runs: Vec<(Phase, Selection)> = chosen.iter().map(|&i| regions.runs[i].clone()).collect();
    let shares: Vec<Option<f64>> = chosen
        .iter()
        .map(|&i| regions.shares.get(i).copied().flatten())
        .collect();
    fuse_runs(edit, &runs, &shares)?;
    Ok(())
}
