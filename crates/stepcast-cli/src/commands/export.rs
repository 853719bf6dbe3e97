//! `stepcast export TRACE -o FILE.json`: the recorded and the replayed window (or one step) side
//! by side, as a Chrome trace for Perfetto, with a critical-path track and, with `--model`, the
//! model's predicted window as a third process; or, with `--plan`, an optimization plan's
//! predicted window. Unlike the other commands it answers with a file only, so it writes that
//! file itself and prints nothing.

use anyhow::Context;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::Peers;
use stepcast_cli::jobs::{self, Loaded};
use stepcast_cli::output;
use stepcast_report::export::{Export, Prediction, Selection};

use crate::args::ExportArgs;
use crate::progress::Terminal;

/// Runs `export`: reads and replays the trace, then writes the Chrome trace to `args.output`,
/// whole or not at all.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    if let Some(plan) = &args.plan {
        return run_plan(args, plan);
    }
    let model = super::model_option(args.model.as_deref())?;
    let progress = Terminal::new();
    let loaded = Loaded::load(&args.trace, super::read_options(), &progress)?;
    let (trace, window) = (&loaded.trace, &loaded.window);
    let selection = match args.step {
        None => Selection::window(),
        Some(number) => {
            loaded.step_index(number)?;
            Selection::step(window, number).with_context(|| {
                format!("cannot select step {number} of {}", args.trace.display())
            })?
        }
    };
    jobs::Progress::update(&progress, "replaying", 0, 1);
    let timeline = simulate(&window.graph, &RecordedOrder, SimOptions::default())
        .with_context(|| format!("cannot replay {}", args.trace.display()))?;
    let mapping = loaded.mapping();
    let mut export = Export::new(trace, window, &timeline, Some(mapping), selection);
    // The prediction, when asked for: the model's graph, replayed as every what-if is.
    let predicted = match &model {
        Some(model) => {
            jobs::Progress::update(&progress, "predicting", 0, 1);
            let (graph, timeline) =
                jobs::predicted(&loaded, std::slice::from_ref(model), Peers::default())?;
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
    jobs::Progress::update(&progress, "writing", 0, 1);
    let mut bytes = Vec::new();
    export
        .write_to(&mut bytes)
        .context("cannot render the export")?;
    drop(progress);
    output::write_file(&args.output, &bytes)
}

/// `export --plan PLAN.json`: the window with the plan applied, its recorded times (those of
/// the tasks it keeps) beside its predicted timeline. The mapping is the recorded graph's, so
/// the phase tracks are left out.
fn run_plan(args: &ExportArgs, plan: &std::path::Path) -> anyhow::Result<()> {
    let (moves, peers) = super::optimize::read_plan(plan)?;
    let progress = Terminal::new();
    let mapped = Loaded::load(&args.trace, super::read_options(), &progress)?;
    let context = mapped.context(peers);
    let graph = stepcast::optimize::apply_plan(&context, &moves).with_context(|| {
        format!(
            "cannot apply the plan {} to {}",
            plan.display(),
            args.trace.display()
        )
    })?;
    let window = stepcast::Window {
        graph,
        ..mapped.window.clone()
    };
    let timeline = simulate(
        &window.graph,
        &RecordedOrder,
        SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        },
    )
    .with_context(|| format!("cannot replay the plan on {}", args.trace.display()))?;
    let mut bytes = Vec::new();
    Export::new(&mapped.trace, &window, &timeline, None, Selection::window())
        .write_to(&mut bytes)
        .context("cannot render the export")?;
    drop(progress);
    output::write_file(&args.output, &bytes)
}
