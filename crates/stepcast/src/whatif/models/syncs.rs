//! Remove host synchronizations.

use super::super::edit::{EditGraph, HostGaps};
use super::super::{Context, WhatIfError};
use crate::graph::{CallClass, TaskKind, classify_call};

/// **Remove host synchronizations**: explicit synchronizing calls (`cudaDeviceSynchronize`,
/// `cudaStreamSynchronize`, `cudaEventSynchronize` and their HIP/driver twins) are removed;
/// the host time around them stays. Blocking copies (`.item()`, `.cpu()`) are kept: their data
/// is needed. Assumes the program stays correct without them (they were only for timing or
/// logging).
pub fn remove_syncs(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let names = &context.trace.names;
    let selection = edit.select_where(|t| {
        edit.kind(t) == TaskKind::ApiCall
            && matches!(
                classify_call(names.get(edit.name(t))),
                CallClass::DeviceSync | CallClass::StreamSync | CallClass::EventSync
            )
    });
    edit.remove(&selection, HostGaps::Keep)?;
    Ok(selection.len())
}
