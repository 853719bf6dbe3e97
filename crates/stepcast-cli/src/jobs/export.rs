//! `export`: the recorded and the replayed window (or one step) side by side as a Chrome trace,
//! with, when a model is given, its predicted window as a third process.

use anyhow::Context as _;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::{Model, Peers};
use stepcast_report::export::{Export, Prediction, Selection};

use super::{Loaded, Progress, predicted};

/// The Chrome trace (JSON bytes) of `loaded`'s window, or of step `step` and the tasks on its
/// critical path; with `model`, the window that model predicts beside it.
pub fn export(
    loaded: &Loaded,
    step: Option<u64>,
    model: Option<&Model>,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<u8>> {
    let (trace, window) = (&loaded.trace, &loaded.window);
    let selection = match step {
        None => Selection::window(),
        Some(number) => {
            loaded.step_index(number)?;
            Selection::step(window, number).with_context(|| {
                format!("cannot select step {number} of {}", loaded.path.display())
            })?
        }
    };
    progress.update("replaying", 0, 1);
    let timeline = simulate(&window.graph, &RecordedOrder, SimOptions::default())
        .with_context(|| format!("cannot replay {}", loaded.path.display()))?;
    let mapping = loaded.mapping();
    let mut export = Export::new(trace, window, &timeline, Some(mapping), selection);
    // The prediction, when asked for: the model's graph, replayed as every what-if is.
    let predicted = match model {
        Some(model) => {
            progress.update("predicting", 0, 1);
            let (graph, timeline) =
                predicted(loaded, std::slice::from_ref(model), Peers::default())?;
            Some((model.name(), graph, timeline))
        }
        None => None,
    };
    if let Some((name, graph, timeline)) = &predicted {
        export = export.with_prediction(Prediction {
            name,
            graph,
            timeline,
        });
    }
    progress.update("writing", 0, 1);
    let mut bytes = Vec::new();
    export
        .write_to(&mut bytes)
        .context("cannot render the export")?;
    Ok(bytes)
}
