//! `stepcast whatif TRACE MODEL [params]` and `stepcast whatif TRACE --scenario FILE`: predict
//! the step time after an optimization.

use anyhow::{Context as _, anyhow};
use stepcast::whatif::{Model, ModelParams, Scenario, what_if};
use stepcast_report::{json, table};

use crate::args::WhatIfArgs;

/// What to apply, checked before the trace is read (a typo fails fast).
enum Transform {
    Model(Model),
    Scenario(Scenario),
}

/// Runs `whatif` and returns its output (text, or JSON with `--json`).
pub fn run(args: &WhatIfArgs) -> anyhow::Result<super::Answer> {
    if args.scenario.is_none() && args.model.as_deref() == Some("ddp") {
        return super::whatif_ddp::run(args);
    }
    let transform = match (&args.scenario, &args.model) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read scenario {}", path.display()))?;
            let scenario = Scenario::parse(&text)
                .map_err(|e| anyhow!("bad scenario {}: {e}", path.display()))?;
            Transform::Scenario(scenario)
        }
        (None, Some(name)) => {
            let params = ModelParams {
                factor: args.factor,
                compute: args.compute,
                memory: args.memory,
                cpu: args.cpu,
                copy: args.copy,
                fraction: args.fraction,
                contention: args.contention,
            };
            Transform::Model(Model::with_params(name, &params).map_err(crate::usage)?)
        }
        (None, None) => unreachable!("clap requires MODEL or --scenario"),
    };
    let mapped = super::Mapped::load(&args.trace)?;
    let (trace, window, context) = (
        &mapped.trace,
        &mapped.window,
        mapped.context(args.peers.peers()),
    );
    let cannot = || format!("cannot predict {}", args.trace.display());
    let (name, models, mut outcome) = match &transform {
        Transform::Model(model) => {
            let outcome = what_if(&context, |edit| model.apply(&context, edit).map(|_| ()))
                .with_context(cannot)?;
            (model.name(), vec![model.clone()], outcome)
        }
        Transform::Scenario(scenario) => {
            let outcome =
                what_if(&context, |edit| scenario.apply(&context, edit)).with_context(cannot)?;
            let name = scenario.name.clone().unwrap_or_else(|| {
                args.scenario
                    .as_ref()
                    .and_then(|p| p.file_stem())
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
            });
            (name, scenario.models(), outcome)
        }
    };
    stepcast::whatif::trust::assess_one(&context, &models, &mut outcome).with_context(cannot)?;
    let mut document = json::whatif_json(trace, window, &name, &models, &outcome);
    // A memory-for-time trade reports the memory it saves (a model alone, or the first such
    // model of a scenario).
    if let Some(effect) = models.iter().find_map(|m| m.memory_effect(&context)) {
        document.set_memory(&effect);
    }
    document.trace.file = Some(args.trace.display().to_string());
    document.scenario = args.scenario.as_ref().map(|p| p.display().to_string());
    super::render(&args.output, &document, table::whatif_text, None, None)
}
