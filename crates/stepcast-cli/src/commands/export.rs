//! `stepcast export TRACE -o FILE.json`: the recorded and the replayed window (or one step) side
//! by side, as a Chrome trace for Perfetto, with a critical-path track and, with `--model`, the
//! model's predicted window as a third process; or, with `--plan`, an optimization plan's
//! predicted window. Unlike the other commands it answers with a file only, so it writes that
//! file itself and prints nothing.

use anyhow::Context;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast_cli::jobs;
use stepcast_cli::output;
use stepcast_report::export::{Export, Selection};

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
    let loaded = super::load(&args.trace, &progress)?;
    let bytes = jobs::export(&loaded, args.step, model.as_ref(), &progress)?;
    drop(progress);
    output::write_file(&args.output, &bytes)
}

/// `export --plan PLAN.json`: the window with the plan applied, its recorded times (those of
/// the tasks it keeps) beside its predicted timeline. The mapping is the recorded graph's, so
/// the phase tracks are left out.
fn run_plan(args: &ExportArgs, plan: &std::path::Path) -> anyhow::Result<()> {
    let (moves, peers) = super::optimize::read_plan(plan)?;
    let progress = Terminal::new();
    let mapped = super::load(&args.trace, &progress)?;
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
