//! **Memory** (dPRO's memory passes): when the predicted peak exceeds the memory budget, the
//! memory-for-time trade that fits with the least slowdown.
//!
//! The options are activation recomputation (`torch.utils.checkpoint`) and vDNN offloading
//! (`torch.autograd.graph.save_on_cpu`) of the front [`FRACTIONS`] of each step's activation
//! bytes, and recomputation of the forward pass's repeated blocks one by one, where it has
//! them (the usual way: each layer its own checkpoint, one layer's activations back at a
//! time). Their costs are the project's models ([`crate::whatif::models::recompute`],
//! [`crate::whatif::models::offload`]), applied on top of the speed plan and replayed; the
//! peak with each is theirs too ([`crate::whatif::models::MemoryEffect`]): read off the
//! recorded memory timeline with the trade's activations moved
//! ([`crate::whatif::models::step_peak`]), so a trade fits only where the process's peak, not
//! just the activations', comes under the budget; where the memory events record no addresses,
//! the recorded peak less the activations' saving, said so (the speed moves are taken not to
//! change the peak). Gradient accumulation (smaller micro-batches) is not an option yet: the
//! trace holds one batch size, and nothing in it says how kernels scale with a smaller one.

use crate::whatif::edit::EditGraph;
use crate::whatif::models::activations::choose_blocks;
use crate::whatif::models::{MemoryEffect, Model, forward_units};
use crate::whatif::{Context, WhatIfError};

use super::Move;

/// The shares of the activation bytes tried, in percent.
pub const FRACTIONS: [u32; 4] = [25, 50, 75, 100];

/// The recorded peak, the budget and what each option saves.
#[derive(Clone, Debug, Default)]
pub struct MemoryFacts {
    /// The recorded peak of allocated device memory, if the trace has memory events.
    pub peak_bytes: Option<i64>,
    /// Each option with what it saves.
    pub options: Vec<(Move, MemoryEffect)>,
}

impl MemoryFacts {
    pub fn find(context: &Context<'_>) -> MemoryFacts {
        let mut options = Vec::new();
        let mut peak_bytes = None;
        let activations = forward_units(context);
        let blocks = choose_blocks(context, &activations).is_some();
        let moves = FRACTIONS
            .iter()
            .flat_map(|&percent| [Move::Recompute { percent }, Move::Offload { percent }])
            .chain(blocks.then_some(Move::RecomputeBlocks));
        for m in moves {
            if let Some(effect) = model(&m).and_then(|model| model.memory_effect(context)) {
                peak_bytes = peak_bytes.or(effect.peak_bytes);
                options.push((m, effect));
            }
        }
        MemoryFacts {
            peak_bytes,
            options,
        }
    }

    /// The peak with `m`, if it is one of the options: read off the recorded timeline where
    /// it is known, else the recorded peak less the activations' saving.
    pub fn predicted_peak_bytes(&self, m: &Move) -> Option<i64> {
        let (_, effect) = self.options.iter().find(|(o, _)| o == m)?;
        effect
            .predicted_peak_bytes()
            .or_else(|| Some(effect.peak_bytes? - effect.saved_bytes))
    }

    /// Whether every option's peak is read off the recorded memory timeline.
    pub fn timeline_known(&self) -> bool {
        self.options.iter().all(|(_, e)| e.step_peak.is_some())
    }
}

/// The project's model a memory move stands for.
pub fn model(m: &Move) -> Option<Model> {
    let fraction = |percent: u32| f64::from(percent) / 100.0;
    match *m {
        Move::Recompute { percent } => Some(Model::Recompute {
            fraction: Some(fraction(percent)),
        }),
        // Only offered where the forward pass has repeated blocks ([`MemoryFacts::find`]).
        Move::RecomputeBlocks => Some(Model::Recompute { fraction: None }),
        Move::Offload { percent } => Some(Model::Offload {
            fraction: fraction(percent),
        }),
        _ => None,
    }
}

/// Applies the memory moves of `plan` (at most one is chosen).
pub fn apply(
    context: &Context<'_>,
    plan: &[Move],
    edit: &mut EditGraph,
) -> Result<(), WhatIfError> {
    for m in plan {
        if let Some(model) = model(m) {
            model.apply(context, edit)?;
        }
    }
    Ok(())
}
