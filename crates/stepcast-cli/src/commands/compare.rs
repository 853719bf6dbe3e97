//! `stepcast compare BEFORE AFTER [--model M ...]`: the measured speedup of two traces of one
//! workload, what changed, and each model's prediction from BEFORE against the measured AFTER.

use anyhow::{Context as _, bail};
use stepcast::compare::{Side, check_model, compare};
use stepcast::whatif::{Model, ModelParams};
use stepcast_report::{html, json, table};

use crate::args::CompareArgs;

/// A trace with its window and analysis.
struct Loaded {
    trace: stepcast_trace::Trace,
    window: stepcast::Window,
    analysis: stepcast::analyze::Analysis,
}

impl Loaded {
    fn load(path: &std::path::Path) -> anyhow::Result<Loaded> {
        let (trace, window) = super::load(path)?;
        let analysis = stepcast::analyze::analyze(&trace, &window, None)
            .with_context(|| format!("cannot analyze {}", path.display()))?;
        Ok(Loaded {
            trace,
            window,
            analysis,
        })
    }

    fn side(&self) -> Side<'_> {
        Side {
            trace: &self.trace,
            window: &self.window,
            analysis: &self.analysis,
        }
    }
}

/// Runs `compare` and returns its output (text, or JSON with `--json`).
pub fn run(args: &CompareArgs) -> anyhow::Result<super::Answer> {
    // Models are checked before the traces are read, so a typo fails fast.
    let params = ModelParams {
        factor: args.factor,
        compute: args.compute,
        memory: args.memory,
        cpu: args.cpu,
        copy: args.copy,
        fraction: args.fraction,
        contention: args.contention,
    };
    let mut models = Vec::with_capacity(args.models.len());
    for name in &args.models {
        if name == "ddp" {
            bail!("compare --model ddp is not supported: use `stepcast whatif TRACE ddp`");
        }
        models.push(Model::with_params(name, &params)?);
    }
    let progress = crate::progress::Progress::spinner(format!("reading {}", args.before.display()));
    let before = Loaded::load(&args.before)?;
    progress.message(format!("reading {}", args.after.display()));
    let after = Loaded::load(&args.after)?;
    progress.message("comparing");
    let comparison = compare(&before.side(), &after.side()).with_context(|| {
        format!(
            "cannot compare {} with {}",
            args.before.display(),
            args.after.display()
        )
    })?;
    let mut checks = Vec::with_capacity(models.len());
    for model in &models {
        let check = check_model(
            &before.side(),
            &comparison.before,
            &after.side(),
            &comparison.after,
            model,
        )
        .with_context(|| format!("cannot predict {}", args.before.display()))?;
        checks.push(check);
    }
    let mut document = json::compare_json(&before.trace, &after.trace, &comparison, &checks);
    document.before.trace.file = Some(args.before.display().to_string());
    document.after.trace.file = Some(args.after.display().to_string());
    super::render(
        &args.output,
        &document,
        table::compare_text,
        None,
        Some(&html::compare_report),
    )
}
