//! **Program changes** from `advise`'s models that are not hardware and keep the numerics
//! (fused optimizer, batch-norm reconstruction, CUDA graphs, removing host syncs), each one
//! move: a later pass plugged into the registry without touching the search, so a plan is
//! measured against `advise`'s best program candidate from the moves the plan can make. Their
//! cost models are the models' own ([`crate::whatif::models`]).

use crate::whatif::edit::EditGraph;
use crate::whatif::models::Model;
use crate::whatif::{Context, WhatIfError};

use super::Move;

/// The models this pass offers, in the order their effects compose in (`Model::advised`).
pub fn models() -> Vec<Model> {
    vec![
        Model::FusedOptimizer { factor: 1.0 },
        Model::ReconstructBatchnorm,
        Model::CudaGraphs,
        Model::RemoveSyncs,
    ]
}

/// Each model not yet in `plan`. Their bounds are unknown before a replay (a model that
/// removes waits has no cost-based bound), so they are never pruned.
pub fn candidates(plan: &[Move]) -> Vec<(Move, i64)> {
    models()
        .into_iter()
        .map(|m| Move::Model { name: m.name() })
        .filter(|m| !plan.contains(m))
        .map(|m| (m, i64::MAX))
        .collect()
}

/// Applies the models `plan` names, in [`models`] order.
pub fn apply(
    context: &Context<'_>,
    plan: &[Move],
    edit: &mut EditGraph,
) -> Result<(), WhatIfError> {
    for model in models() {
        let name = model.name();
        if plan
            .iter()
            .any(|m| matches!(m, Move::Model { name: n } if *n == name))
        {
            model
                .apply(context, edit)
                .map_err(|source| WhatIfError::Model {
                    name,
                    source: Box::new(source),
                })?;
        }
    }
    Ok(())
}
