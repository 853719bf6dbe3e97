//! `analyze`: where the step's time goes.

use anyhow::Context as _;
use stepcast_report::json::{AnalyzeJson, analyze_json};

use super::{Loaded, Progress};

/// The analysis of the window, with `step` (a `ProfilerStep` number) in detail; by default
/// the steady step closest to the median.
pub fn analyze(
    loaded: &Loaded,
    step: Option<u64>,
    progress: &dyn Progress,
) -> anyhow::Result<AnalyzeJson> {
    let step_index = match step {
        Some(number) => Some(loaded.step_index(number)?),
        None => None,
    };
    progress.update("analyzing", 0, 1);
    let analysis = stepcast::analyze::analyze(&loaded.trace, &loaded.window, step_index)
        .with_context(|| format!("cannot analyze {}", loaded.path.display()))?;
    progress.update("analyzing", 1, 1);
    let mut document = analyze_json(&loaded.trace, &loaded.window, &analysis, step);
    document.trace.file = loaded.file();
    Ok(document)
}
