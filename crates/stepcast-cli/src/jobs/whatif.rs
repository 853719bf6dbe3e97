//! `whatif`: the step time after an optimization (a built-in model, a scenario file, or
//! data-parallel training on N GPUs).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow};
use stepcast::whatif::{Model, ModelParams, Peers, Scenario, what_if_assessed};
use stepcast_report::json::{WhatIfJson, whatif_json};

use super::ddp::{Ddp, DdpOptions};
use super::{Loaded, Progress};

/// What to apply, checked before the trace is read (a typo fails fast).
pub enum Transform {
    Model(Model),
    Scenario { scenario: Scenario, path: PathBuf },
    Ddp(Box<Ddp>),
}

impl Transform {
    /// The transform a request names: a scenario file, else `ddp` with its options, else a
    /// built-in model with its parameters. An unknown model or a bad value is a
    /// [`Usage`](crate::Usage) error.
    pub fn new(
        model: Option<&str>,
        scenario: Option<&Path>,
        params: &ModelParams,
        ddp: &DdpOptions,
    ) -> anyhow::Result<Transform> {
        match (scenario, model) {
            (Some(path), _) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read scenario {}", path.display()))?;
                let scenario = Scenario::parse(&text)
                    .map_err(|e| anyhow!("bad scenario {}: {e}", path.display()))?;
                Ok(Transform::Scenario {
                    scenario,
                    path: path.to_path_buf(),
                })
            }
            (None, Some("ddp")) => Ok(Transform::Ddp(Box::new(Ddp::new(ddp)?))),
            (None, Some(name)) => Ok(Transform::Model(
                Model::with_params(name, params).map_err(crate::usage)?,
            )),
            (None, None) => Err(crate::usage(anyhow!(
                "no model to predict: name a model or a scenario file"
            ))),
        }
    }
}

pub fn whatif(
    loaded: &Loaded,
    transform: &Transform,
    peers: Peers,
    progress: &dyn Progress,
) -> anyhow::Result<WhatIfJson> {
    progress.update("predicting", 0, 1);
    let document = match transform {
        Transform::Ddp(ddp) => ddp.predict(loaded, peers)?,
        Transform::Model(model) => one(
            loaded,
            peers,
            model.name(),
            std::slice::from_ref(model),
            |c, e| model.apply(c, e).map(|_| ()),
        )?,
        Transform::Scenario { scenario, path } => {
            let name = scenario.name.clone().unwrap_or_else(|| {
                path.file_stem()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
            });
            let mut document = one(loaded, peers, name, &scenario.models(), |c, e| {
                scenario.apply(c, e)
            })?;
            document.scenario = Some(path.display().to_string());
            document
        }
    };
    progress.update("predicting", 1, 1);
    Ok(document)
}

/// A prediction of `models` applied by `apply`, with its bound and caveats.
fn one(
    loaded: &Loaded,
    peers: Peers,
    name: String,
    models: &[Model],
    apply: impl Fn(
        &stepcast::whatif::Context<'_>,
        &mut stepcast::whatif::EditGraph,
    ) -> Result<(), stepcast::whatif::WhatIfError>,
) -> anyhow::Result<WhatIfJson> {
    let context = loaded.context(peers);
    let cannot = || format!("cannot predict {}", loaded.path.display());
    let outcome =
        what_if_assessed(&context, models, |edit| apply(&context, edit)).with_context(cannot)?;
    let mut document = whatif_json(&loaded.trace, &loaded.window, &name, models, &outcome);
    // A memory-for-time trade reports the memory it saves (a model alone, or the first such
    // model of a scenario).
    if let Some(effect) = models.iter().find_map(|m| m.memory_effect(&context)) {
        document.set_memory(&effect);
    }
    document.trace.file = loaded.file();
    Ok(document)
}
