//! `compare BEFORE AFTER`: the measured speedup of two traces of one workload, what changed,
//! and each model's prediction from BEFORE against the measured AFTER.

use anyhow::{Context as _, bail};
use stepcast::compare::{Side, check_model};
use stepcast::whatif::{Model, ModelParams};
use stepcast_report::json::{CompareJson, compare_json};

use super::{Loaded, Progress};

/// The models `compare` checks, from their names and the parameters given. Checked before the
/// traces are read, so a typo fails fast.
pub fn compare_models(names: &[String], params: &ModelParams) -> anyhow::Result<Vec<Model>> {
    let mut models = Vec::with_capacity(names.len());
    for name in names {
        if name == "ddp" {
            bail!("compare --model ddp is not supported: use `stepcast whatif TRACE ddp`");
        }
        models.push(Model::with_params(name, params)?);
    }
    Ok(models)
}

/// [`compare_with`], refusing two traces that are not one workload.
pub fn compare(
    before: &Loaded,
    after: &Loaded,
    models: &[Model],
    progress: &dyn Progress,
) -> anyhow::Result<CompareJson> {
    compare_with(before, after, models, false, progress)
}

/// The `compare` document of `before` and `after` with `models` checked; `force` compares two
/// traces that are not one workload instead of refusing them.
pub fn compare_with(
    before: &Loaded,
    after: &Loaded,
    models: &[Model],
    force: bool,
    progress: &dyn Progress,
) -> anyhow::Result<CompareJson> {
    let total = 3 + models.len();
    progress.update("comparing", 0, total);
    let before_analysis = analysis(before)?;
    progress.update("comparing", 1, total);
    let after_analysis = analysis(after)?;
    progress.update("comparing", 2, total);
    let before_side = side(before, &before_analysis);
    let after_side = side(after, &after_analysis);
    let options = stepcast::compare::CompareOptions { force };
    let comparison = stepcast::compare::compare_with(&before_side, &after_side, options)
        .with_context(|| {
            format!(
                "cannot compare {} with {}",
                before.path.display(),
                after.path.display()
            )
        })?;
    progress.update("comparing", 3, total);
    let mut checks = Vec::with_capacity(models.len());
    for (done, model) in models.iter().enumerate() {
        let check = check_model(
            &before_side,
            &comparison.before,
            &after_side,
            &comparison.after,
            model,
        )
        .with_context(|| format!("cannot predict {}", before.path.display()))?;
        checks.push(check);
        progress.update("comparing", 4 + done, total);
    }
    let mut document = compare_json(&before.trace, &after.trace, &comparison, &checks);
    document.before.trace.file = before.file();
    document.after.trace.file = after.file();
    Ok(document)
}

fn analysis(loaded: &Loaded) -> anyhow::Result<stepcast::analyze::Analysis> {
    stepcast::analyze::analyze(&loaded.trace, &loaded.window, None)
        .with_context(|| format!("cannot analyze {}", loaded.path.display()))
}

fn side<'a>(loaded: &'a Loaded, analysis: &'a stepcast::analyze::Analysis) -> Side<'a> {
    Side {
        trace: &loaded.trace,
        window: &loaded.window,
        analysis,
    }
}
