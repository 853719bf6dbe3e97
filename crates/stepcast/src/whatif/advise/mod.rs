//! `advise`: every built-in model, and useful combinations of them, predicted against one
//! baseline in parallel and ranked by predicted gain.
//!
//! Candidates are every model of [`Model::advised`] on its own; every pair of the models that
//! help (speedup of at least [`USEFUL_SPEEDUP`] on their own); and, when three or more software
//! models help, all of them together (the models compose: dPRO). A model that does not help is
//! left out of every combination: it would only repeat the combination without it. Hardware
//! models (`faster_gpu`, `faster_cpu`...) pair with the others but stay out of the
//! all-together set: buying hardware is a different decision from changing the program.
//!
//! Memory-for-time trades ([`Model::memory_trades`]: recomputation, offloading, Gist) are not
//! speedups: they are predicted on their own, each with the memory it saves, and listed apart
//! ([`Advice::memory_trades`]), never ranked among the gains nor combined.

mod workers;

use rayon::prelude::*;

pub(crate) use workers::{one_per_model, variants};

use super::models::{LoaderHost, MemoryEffect, Model};
use super::trust::{WindowTrust, assess, window_trust_of};
use super::{
    Baseline, Context, Outcome, Prediction, Prepared, StepTime, WhatIfError, what_if_prepared,
};

/// A model (or combination) helps when it speeds the step up by at least this (0.5 %: below
/// the replay's own error on steady steps, so not worth a change).
pub const USEFUL_SPEEDUP: f64 = 1.005;

/// One what-if that `advise` tried.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The models applied, in order.
    pub models: Vec<Model>,
    /// Its prediction (without the transformed graph: [`Outcome::graph`] is empty).
    pub outcome: Outcome,
    /// A memory-for-time trade: the memory it saves.
    pub memory: Option<MemoryEffect>,
}

impl Candidate {
    /// The models' names joined by ` + `.
    pub fn name(&self) -> String {
        name(&self.models)
    }

    /// Whether it helps: a speedup of at least [`USEFUL_SPEEDUP`].
    pub fn is_useful(&self) -> bool {
        self.outcome.speedup >= USEFUL_SPEEDUP
    }
}

/// The combinations worth trying, from each advised model's speedup alone (`singles`, in the
/// order of [`Model::advised`]): every pair of the models that help, and all the software ones
/// together when three or more help. Combinations keep that order (the order their effects
/// compose in).
pub(crate) fn combinations(singles: &[(Model, f64)]) -> Vec<Vec<Model>> {
    let useful: Vec<Model> = singles
        .iter()
        .filter(|(_, speedup)| *speedup >= USEFUL_SPEEDUP)
        .map(|(model, _)| model.clone())
        .collect();
    let mut combinations: Vec<Vec<Model>> = Vec::new();
    for (i, a) in useful.iter().enumerate() {
        for b in &useful[i + 1..] {
            combinations.push(vec![a.clone(), b.clone()]);
        }
    }
    let software: Vec<Model> = useful
        .iter()
        .filter(|m| !m.is_hardware())
        .cloned()
        .collect();
    if software.len() >= 3 {
        combinations.push(software);
    }
    combinations
}

/// Whether a combination of `models` reaching `speedup` adds to its best member alone (by a
/// useful step): one whose other models add nothing would sit above the model that does all
/// the work.
pub(crate) fn adds_to_best_member(
    singles: &[(Model, f64)],
    models: &[Model],
    speedup: f64,
) -> bool {
    let best = singles
        .iter()
        .filter(|(m, _)| models.contains(m))
        .map(|&(_, s)| s)
        .fold(1.0, f64::max);
    speedup >= best * USEFUL_SPEEDUP
}

/// The models' names joined by ` + `.
pub(crate) fn name(models: &[Model]) -> String {
    models
        .iter()
        .map(Model::name)
        .collect::<Vec<_>>()
        .join(" + ")
}

/// A candidate `advise` offers no prediction for.
#[derive(Clone, Debug, PartialEq)]
pub struct NotPredicted {
    /// The models' names joined by ` + `.
    pub name: String,
    /// Why: the error, or `declined: ` and the reason.
    pub error: String,
    /// Of a declined candidate, the most it could gain by what it changes in the trace
    /// (`Outcome::bound_ns`), as a speedup of the baseline: what the user would give up by
    /// leaving it; `None` for a candidate that failed or whose bound is no gain.
    pub at_most: Option<f64>,
}

/// What `advise` found.
#[derive(Clone, Debug)]
pub struct Advice {
    /// The untransformed replay every candidate is compared with.
    pub baseline: Prediction,
    /// Best first: by speedup, then by name.
    pub candidates: Vec<Candidate>,
    /// The memory-for-time trades, in [`Model::memory_trades`] order, each with its cost in
    /// time and the memory it saves.
    pub memory_trades: Vec<Candidate>,
    /// Candidates that could not be predicted on this trace (e.g. a transform that would make
    /// the graph cyclic) or were declined, with why, in the order tried: left out of the
    /// ranking, never fatal.
    pub failed: Vec<NotPredicted>,
    /// Why no candidate is offered, if none is (`trust::WindowTrust::declined`): the
    /// candidates are then not predicted at all.
    pub declined: Option<String>,
    /// Where the `DataLoader` workers pace the step, the sentence that says so
    /// (`trust::WindowTrust::paced_by`): no change that leaves the loader goes below their
    /// pace.
    pub paced_by: Option<String>,
    /// What kind of time bounds the baseline's steady step.
    pub step_time: StepTime,
}

/// Tries every advised model and the useful combinations (see the module documentation), in
/// parallel over one baseline, and ranks them: highest speedup first, ties by name. The
/// result does not depend on the number of threads. The recorded run's host is unknown: see
/// [`advise_on`].
pub fn advise(context: &Context<'_>) -> Result<Advice, WhatIfError> {
    advise_on(context, LoaderHost::default())
}

/// [`advise`] on a recorded run whose host the user described (`--cores`, `--threads`):
/// the models that price work sharing its cores take it ([`Model::advised_on`]).
pub fn advise_on(context: &Context<'_>, host: LoaderHost) -> Result<Advice, WhatIfError> {
    // The baseline, replayed once; then the editable window every candidate clones, beside
    // the window's self-checks on that replay: independent.
    let replayed = Baseline::of(context.window)?;
    let (prepared, window) = rayon::join(
        || Prepared::of(context, &replayed).figures_only(),
        || window_trust_of(context, &replayed),
    );
    let window = window?;
    let step_time = StepTime::of(context, &replayed);
    let baseline = replayed.prediction;
    if let Some(reason) = &window.declined {
        return Ok(Advice {
            baseline,
            candidates: Vec::new(),
            memory_trades: Vec::new(),
            failed: Vec::new(),
            declined: Some(reason.clone()),
            paced_by: None,
            step_time,
        });
    }
    // Each advised model, with its variants where it has several (the workers' count).
    let groups: Vec<Vec<Model>> = Model::advised_on(host).into_iter().map(variants).collect();
    let mut singles: Vec<Vec<Model>> = groups.iter().flatten().map(|m| vec![m.clone()]).collect();
    let trades = Model::memory_trades();
    singles.extend(trades.iter().map(|m| vec![m.clone()]));
    let mut failed = Vec::new();
    let mut tried: Vec<(Vec<Model>, _)> = singles
        .clone()
        .into_iter()
        .zip(try_all(context, &prepared, &window, singles))
        .collect();
    let trade_results = tried.split_off(tried.len() - trades.len());
    let tried = one_per_model(
        tried,
        &groups,
        |(models, _)| models.as_slice(),
        |(_, result)| {
            result
                .as_ref()
                .ok()
                .filter(|c| c.outcome.declined.is_none())
                .map(|c| c.outcome.speedup)
        },
        |(_, result), why| {
            if let Ok(candidate) = result {
                candidate.outcome.caveats.push(why);
            }
        },
    );
    let mut candidates = keep_predicted(tried.into_iter().map(|(_, r)| r).collect(), &mut failed);
    let trade_results = trade_results.into_iter().map(|(_, r)| r).collect();
    let memory_trades = keep_predicted(trade_results, &mut failed);
    let singles: Vec<(Model, f64)> = candidates
        .iter()
        .map(|c| (c.models[0].clone(), c.outcome.speedup))
        .collect();
    for combination in keep_predicted(
        try_all(context, &prepared, &window, combinations(&singles)),
        &mut failed,
    ) {
        if adds_to_best_member(&singles, &combination.models, combination.outcome.speedup) {
            candidates.push(combination);
        }
    }
    candidates.sort_by(|a, b| {
        b.outcome
            .speedup
            .total_cmp(&a.outcome.speedup)
            .then_with(|| a.name().cmp(&b.name()))
    });
    let paced_by = window.paced_by.clone();
    Ok(Advice {
        baseline,
        candidates,
        memory_trades,
        failed,
        declined: None,
        paced_by,
        step_time,
    })
}

/// The candidates that were predicted and not declined; the others go to `failed`.
fn keep_predicted(
    tried: Vec<Result<Candidate, WhatIfError>>,
    failed: &mut Vec<NotPredicted>,
) -> Vec<Candidate> {
    let mut kept = Vec::with_capacity(tried.len());
    for result in tried {
        match result {
            Ok(mut candidate) => match candidate.outcome.declined.take() {
                // The window's self-checks passed (else no candidate is tried): a candidate
                // declined here failed its own (a gain its bound cannot explain) or stands
                // outside its model's domain.
                Some(reason) => {
                    let outcome = &candidate.outcome;
                    let baseline = outcome.baseline.step_ns;
                    failed.push(NotPredicted {
                        name: candidate.name(),
                        error: WhatIfError::Declined(reason).to_string(),
                        at_most: outcome
                            .bound_ns
                            .filter(|&b| b > 0 && b < baseline)
                            .map(|b| baseline as f64 / (baseline - b) as f64),
                    })
                }
                None => kept.push(candidate),
            },
            Err(WhatIfError::Model { name, source }) => failed.push(NotPredicted {
                name,
                error: source.to_string(),
                at_most: None,
            }),
            Err(other) => failed.push(NotPredicted {
                name: String::new(),
                error: other.to_string(),
                at_most: None,
            }),
        }
    }
    kept
}

/// Predicts every combination of `sets` against `baseline`, in parallel, in input order.
fn try_all(
    context: &Context<'_>,
    prepared: &Prepared,
    window: &WindowTrust,
    sets: Vec<Vec<Model>>,
) -> Vec<Result<Candidate, WhatIfError>> {
    sets.into_par_iter()
        .map(|models| {
            let mut outcome = what_if_prepared(context, prepared, |edit| {
                for model in &models {
                    model.apply(context, edit)?;
                }
                Ok(())
            })
            .map_err(|source| WhatIfError::Model {
                name: name(&models),
                source: Box::new(source),
            })?;
            assess(context, window, &models, &mut outcome);
            let memory = match models.as_slice() {
                [model] => model.memory_effect(context),
                _ => None,
            };
            Ok(Candidate {
                models,
                outcome,
                memory,
            })
        })
        .collect()
}
