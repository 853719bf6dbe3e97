//! **Tensor partition** (dPRO's tensor partition pass; BytePS's partitioning): split an
//! all-reduce into `k` chunks so that communication pipelines.
//!
//! Cost model: each chunk pays the calibrated fixed cost α of the trace's all-reduce fit
//! ([`crate::comm::calibrate()`]) and `1/k` of the transfer, so the `k` chunks together cost the
//! transfer plus `(k − 1) α`. In the recorded graph the chunks run back to back on the
//! collective's stream, each waiting for the bucket's gradients, and whatever waited for the
//! all-reduce waits for its last chunk: they are one task of that summed cost. The gain
//! partitioning brings elsewhere (a parameter server's push and pull of different chunks
//! overlapping, chunks of one tensor on several links) has no counterpart in a ring
//! all-reduce that NCCL already pipelines in chunks of its own, so every move's bound is
//! `−(k − 1) α` and the search prunes it: the pass states why it proposes nothing, rather than
//! being left out.

use crate::whatif::WhatIfError;
use crate::whatif::edit::{EditGraph, Selection};

use super::Move;
use super::tensor_fusion::Buckets;

/// The chunk counts tried per all-reduce.
pub const CHUNKS: [u32; 2] = [2, 4];

/// Every (all-reduce, chunk count) not yet in `plan`, with its bound (negative: a cost).
pub fn candidates(buckets: &Buckets, plan: &[Move]) -> Vec<(Move, i64)> {
    let mut slots: Vec<u32> = buckets.by_step.values().flatten().map(|b| b.slot).collect();
    slots.sort_unstable();
    slots.dedup();
    let mut out = Vec::new();
    for slot in slots {
        if plan
            .iter()
            .any(|m| matches!(m, Move::Partition { slot: s, .. } if *s == slot))
        {
            continue;
        }
        for chunks in CHUNKS {
            let cost = ((chunks - 1) as f64 * buckets.alpha_ns).round() as i64;
            out.push((Move::Partition { slot, chunks }, -cost));
        }
    }
    out
}

/// Charges each partitioned all-reduce `(k − 1) α` (see the module documentation).
pub fn apply(buckets: &Buckets, plan: &[Move], edit: &mut EditGraph) -> Result<(), WhatIfError> {
    for m in plan {
        let Move::Partition { slot, chunks } = *m else {
            continue;
        };
        let extra = ((chunks.max(1) - 1) as f64 * buckets.alpha_ns).round() as i64;
        for b in buckets
            .by_step
            .values()
            .flatten()
            .filter(|b| b.slot == slot)
        {
            if edit.is_alive(b.task) && !edit.is_frozen(b.task) {
                let ns = edit.dur_ns(b.task).saturating_add(extra);
                edit.set_duration(&Selection::new(vec![b.task]), ns)?;
            }
        }
    }
    Ok(())
}
