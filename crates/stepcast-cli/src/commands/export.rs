//! `stepcast export TRACE -o FILE.json`: the recorded and the replayed window (or one step) side
//! by side, as a Chrome trace for Perfetto. Unlike the other commands it answers with a file
//! only, so it writes that file itself and prints nothing.

use anyhow::Context;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::apply_models;
use stepcast_report::export::{Export, Prediction, Selection};

use crate::args::ExportArgs;
use crate::output;

/// Runs `export`: reads and replays the trace, then writes the Chrome trace to `args.output`,
/// whole or not at all.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let model = super::model_option(args.model.as_deref())?;
    let progress =
        crate::progress::Progress::spinner(format!("exporting {}", args.trace.display()));
    let mapped = super::Mapped::load(&args.trace)?;
    let (trace, window) = (&mapped.trace, &mapped.window);
    let selection = match args.step {
        None => Selection::window(),
        Some(number) => {
            super::step_index(&args.trace, window, number)?;
            Selection::step(window, number).with_context(|| {
                format!("cannot select step {number} of {}", args.trace.display())
            })?
        }
    };
    let timeline = simulate(&window.graph, &RecordedOrder, SimOptions::default())
        .with_context(|| format!("cannot replay {}", args.trace.display()))?;
    let mut export = Export::new(trace, window, &timeline, Some(&mapped.mapping), selection);
    // The prediction, when asked for: the model's graph, replayed as every what-if is.
    let predicted = match &model {
        Some(model) => {
            let context = stepcast::whatif::Context::new(trace, window, &mapped.mapping);
            let cannot = || format!("cannot predict {}", args.trace.display());
            let outcome =
                apply_models(&context, std::slice::from_ref(model)).with_context(cannot)?;
            let options = SimOptions {
                without_inferred: true,
            };
            let timeline =
                simulate(&outcome.graph, &RecordedOrder, options).with_context(cannot)?;
            Some((model.name(), outcome.graph, timeline))
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
    progress.message("writing");
    let mut bytes = Vec::new();
    export
        .write_to(&mut bytes)
        .context("cannot render the export")?;
    let text = String::from_utf8(bytes).context("the export is not UTF-8")?;
    output::to_file(&args.output, &text)
}
