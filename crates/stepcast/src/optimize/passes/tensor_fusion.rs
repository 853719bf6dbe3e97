//! **Tensor fusion** (dPRO's tensor fusion pass; Horovod's and DDP's bucketing): which
//! gradient all-reduces to send as one, as a bucket assignment over the recorded all-reduces.
//!
//! The all-reduces of a step are numbered by their place among the step's collectives (the
//! same bucket in every step of DDP: `RecordedCollective::slot`). A move merges two all-reduces
//! adjacent on one stream, in every steady step; moves compose into groups of consecutive
//! all-reduces. DDP's greedy `bucket_cap_mb` is one more move, the default a user has today.
//!
//! Cost model: the calibrated α-β envelope of the trace's own all-reduces
//! ([`crate::comm::calibrate()`]): a merged all-reduce of `k` costs the sum of its members'
//! transfers less `(k − 1) α` (one fixed cost instead of `k`), never less than its longest
//! member. It runs where the last member ran, when all its gradients are ready (the merged
//! bucket waits for the last gradient: the cost of fusion dPRO weighs), and the launch calls
//! of the others go. With `--peers skew` it waits for the sum of its members' recorded waits
//! for peers: the stream waited that long for stragglers before the merge and still does, so
//! a merge never gains by dropping a recorded wait (the search found plans of a hundred
//! merges, each "gaining" the lateness recorded at the bucket it removed, before this rule).

use std::collections::BTreeMap;

use crate::comm::{Collective, calibrate, recorded_collectives};
use crate::graph::TaskId;
use crate::whatif::ddp::merge_collectives;
use crate::whatif::edit::EditGraph;
use crate::whatif::{Context, WhatIfError};

use super::Move;

/// DDP's default bucket size (`bucket_cap_mb=25`).
pub const DDP_DEFAULT_BUCKET_BYTES: i64 = 25 << 20;

/// One recorded all-reduce of a steady step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub slot: u32,
    pub lane: u32,
    pub task: TaskId,
    /// Message bytes, when recorded.
    pub bytes: Option<i64>,
}

/// The steady steps' all-reduces and the network's fixed cost.
#[derive(Clone, Debug, Default)]
pub struct Buckets {
    /// Per step, in lane then stream order.
    pub by_step: BTreeMap<u32, Vec<Bucket>>,
    /// The α of the calibrated all-reduce fit, ns (0 when the trace has no fit).
    pub alpha_ns: f64,
    /// Whether `alpha_ns` comes from a fit.
    pub calibrated: bool,
    /// Adjacent pairs (slots) in some steady step, with the costs their merge cuts per
    /// steady step (α and the launch call): the most it can gain.
    pub pairs: Vec<((u32, u32), i64)>,
    /// Whether every all-reduce has its recorded size (DDP's cap needs it).
    pub sized: bool,
}

impl Buckets {
    pub fn find(context: &Context<'_>, edit: &EditGraph, steady_steps: usize) -> Buckets {
        let recorded = recorded_collectives(context.trace, context.window, context.mapping);
        let calibration = calibrate(&recorded);
        let fit = calibration
            .fits
            .iter()
            .filter(|f| f.collective == Collective::AllReduce)
            .max_by_key(|f| f.points);
        let (alpha_ns, calibrated) = match fit {
            Some(f) if f.intercept_ns.is_finite() => (f.intercept_ns.max(0.0), true),
            _ => (0.0, false),
        };
        let mut by_step: BTreeMap<u32, Vec<Bucket>> = BTreeMap::new();
        for r in recorded
            .iter()
            .filter(|r| r.collective == Collective::AllReduce)
        {
            if !edit.is_alive(r.task) || edit.is_frozen(r.task) {
                continue;
            }
            by_step.entry(r.step).or_default().push(Bucket {
                slot: r.slot,
                lane: r.lane,
                task: r.task,
                bytes: r.bytes,
            });
        }
        let mut cut: BTreeMap<(u32, u32), i64> = BTreeMap::new();
        for buckets in by_step.values_mut() {
            buckets.sort_by_key(|b| (b.lane, b.task));
            for pair in buckets.windows(2) {
                if pair[0].lane != pair[1].lane {
                    continue;
                }
                // The first member goes: its fixed cost and its launch call (its wait for
                // peers moves to the merged all-reduce).
                let call = edit
                    .launcher(pair[0].task)
                    .map_or(0, |c| edit.dur_ns(c) + edit.gap_ns(c));
                *cut.entry((pair[0].slot, pair[1].slot)).or_default() +=
                    alpha_ns.round() as i64 + call;
            }
        }
        let per_step = steady_steps.max(1) as i64;
        let sized = by_step.values().flatten().all(|b| b.bytes.is_some());
        Buckets {
            pairs: cut.into_iter().map(|(k, ns)| (k, ns / per_step)).collect(),
            by_step,
            alpha_ns,
            calibrated,
            sized,
        }
    }

    /// The pairs DDP's greedy bucketing with `cap` bytes merges (per step and stream, a bucket
    /// takes the next all-reduce while the sum stays within `cap`).
    pub fn cap_pairs(&self, cap: i64) -> Vec<(u32, u32)> {
        let mut pairs = Vec::new();
        for buckets in self.by_step.values() {
            let mut bytes = 0i64;
            for (i, b) in buckets.iter().enumerate() {
                let size = b.bytes.unwrap_or(i64::MAX / 4);
                let joins = i > 0 && buckets[i - 1].lane == b.lane && bytes + size <= cap;
                if joins {
                    pairs.push((buckets[i - 1].slot, b.slot));
                    bytes += size;
                } else {
                    bytes = size;
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }

    /// Every pair `plan` merges.
    fn planned_pairs(&self, plan: &[Move]) -> Vec<(u32, u32)> {
        let mut pairs = Vec::new();
        for m in plan {
            match m {
                Move::MergeBuckets { first, second } => pairs.push((*first, *second)),
                Move::BucketCap { bytes } => pairs.extend(self.cap_pairs(*bytes)),
                _ => {}
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }

    /// Per steady step, the groups (two or more consecutive all-reduces) `plan` merges.
    pub fn groups(&self, plan: &[Move]) -> Vec<Vec<&Bucket>> {
        let pairs = self.planned_pairs(plan);
        let mut groups = Vec::new();
        for buckets in self.by_step.values() {
            let mut current: Vec<&Bucket> = Vec::new();
            for (i, b) in buckets.iter().enumerate() {
                let joins = i > 0
                    && buckets[i - 1].lane == b.lane
                    && pairs.binary_search(&(buckets[i - 1].slot, b.slot)).is_ok();
                if !joins && current.len() >= 2 {
                    groups.push(std::mem::take(&mut current));
                }
                if !joins {
                    current.clear();
                }
                current.push(b);
            }
            if current.len() >= 2 {
                groups.push(current);
            }
        }
        groups
    }
}

/// The tensor-fusion moves not yet in `plan`: each adjacent pair, and DDP's 25 MiB buckets.
pub fn candidates(buckets: &Buckets, plan: &[Move]) -> Vec<(Move, i64)> {
    let done = buckets.planned_pairs(plan);
    let mut out: Vec<(Move, i64)> = buckets
        .pairs
        .iter()
        .filter(|(pair, _)| done.binary_search(pair).is_err())
        .map(|&((first, second), ns)| (Move::MergeBuckets { first, second }, ns))
        .collect();
    let ddp = Move::BucketCap {
        bytes: DDP_DEFAULT_BUCKET_BYTES,
    };
    if buckets.sized && !plan.contains(&ddp) {
        let pairs = buckets.cap_pairs(DDP_DEFAULT_BUCKET_BYTES);
        let bound: i64 = buckets
            .pairs
            .iter()
            .filter(|(p, _)| pairs.binary_search(p).is_ok() && done.binary_search(p).is_err())
            .map(|(_, ns)| ns)
            .sum();
        if bound > 0 {
            out.push((ddp, bound));
        }
    }
    out
}

/// Merges the groups `plan` names: each costs its members' transfers less `(k − 1) α`, at
/// least its longest member, and waits for its members' waits for peers together.
pub fn apply(buckets: &Buckets, plan: &[Move], edit: &mut EditGraph) -> Result<(), WhatIfError> {
    let groups = buckets.groups(plan);
    let waits: Vec<(TaskId, i64)> = groups
        .iter()
        .filter_map(|group| {
            let last = group.iter().map(|b| b.task).max()?;
            let wait: i64 = group.iter().map(|b| edit.peer_wait_ns(b.task)).sum();
            Some((last, wait))
        })
        .collect();
    let groups: Vec<(Vec<TaskId>, i64)> = groups
        .into_iter()
        .map(|group| {
            let parts: Vec<i64> = group.iter().map(|b| edit.dur_ns(b.task)).collect();
            let k = parts.len() as f64;
            let merged =
                (parts.iter().sum::<i64>() as f64 - (k - 1.0) * buckets.alpha_ns).round() as i64;
            let longest = parts.iter().copied().max().unwrap_or(0);
            (group.iter().map(|b| b.task).collect(), merged.max(longest))
        })
        .collect();
    merge_collectives(edit, &groups)?;
    for (task, wait) in waits {
        if edit.is_alive(task) && !edit.is_frozen(task) {
            edit.set_peer_wait(task, wait)?;
        }
    }
    Ok(())
}
