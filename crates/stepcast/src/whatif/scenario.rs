//! Scenario files: a user's what-if, written declaratively in TOML (documented in
//! `docs/whatif.md`, examples in `examples/scenarios/`).
//!
//! ```toml
//! name = "halve backward GEMMs, drop the syncs of the loss"
//!
//! [[transform]]
//! select = { phase = "backward", name = "gemm|conv" }
//! scale = 0.5
//!
//! [[transform]]
//! remove = { name = "cudaStreamSynchronize", layer = "loss" }
//!
//! [[transform]]
//! model = "fused_optimizer"
//! ```
//!
//! Raw TOML is parsed into `RawScenario` (spans kept), then checked into a [`Scenario`]
//! (regular expressions compiled, names resolved); every error names its line and column.

use std::ops::Range;

use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

use super::edit::{EditGraph, FusedCost, HostGaps, MAX_FACTOR, Select};
use super::models::Model;
use super::{Context, WhatIfError};
use crate::analyze::mapping::Phase;
use crate::graph::TaskKind;

/// A scenario file that could not be read: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ScenarioError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl ScenarioError {
    fn at(source: &str, span: Option<Range<usize>>, message: impl Into<String>) -> ScenarioError {
        let offset = span.map_or(0, |s| s.start).min(source.len());
        let before = &source[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        ScenarioError {
            line,
            column,
            message: message.into(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    transform: Vec<Spanned<RawTransform>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransform {
    select: Option<Spanned<RawSelect>>,
    remove: Option<Spanned<RawSelect>>,
    fuse: Option<Spanned<RawSelect>>,
    model: Option<Spanned<String>>,
    scale: Option<Spanned<f64>>,
    gap_scale: Option<Spanned<f64>>,
    duration_ns: Option<Spanned<i64>>,
    /// For `fuse`: the fused task's cost is the sum × this (default 1).
    factor: Option<Spanned<f64>>,
    /// For `remove` and `fuse`: also remove the untraced host time after removed calls.
    drop_host_gaps: Option<bool>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSelect {
    kind: Option<Spanned<OneOrMany>>,
    name: Option<Spanned<String>>,
    op: Option<Spanned<String>>,
    layer: Option<Spanned<String>>,
    phase: Option<Spanned<OneOrMany>>,
    lane: Option<Vec<u32>>,
    step: Option<Vec<u32>>,
    device: Option<bool>,
}

/// What one transform does to the tasks it selects.
#[derive(Clone, Debug)]
pub enum Action {
    Scale(f64),
    ScaleGaps(f64),
    SetDuration(i64),
    Remove(HostGaps),
    /// Fuse each run of selected tasks (adjacent on a lane, same step).
    Fuse(FusedCost, HostGaps),
    Model(Model),
}

/// One checked transform.
#[derive(Clone, Debug)]
pub struct Transform {
    pub select: Select,
    pub actions: Vec<Action>,
    /// Line of the transform in its file.
    pub line: usize,
}

/// A checked scenario.
#[derive(Clone, Debug, Default)]
pub struct Scenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub transforms: Vec<Transform>,
}

impl Scenario {
    /// Parses and checks a scenario file's text.
    pub fn parse(source: &str) -> Result<Scenario, ScenarioError> {
        let raw: RawScenario = toml::from_str(source)
            .map_err(|e| ScenarioError::at(source, e.span(), e.message().trim().to_string()))?;
        let mut transforms = Vec::new();
        for spanned in raw.transform {
            let span = spanned.span();
            let line = ScenarioError::at(source, Some(span.clone()), "").line;
            let t = spanned.into_inner();
            let targets = [t.select.is_some(), t.remove.is_some(), t.fuse.is_some()];
            if targets.iter().filter(|&&b| b).count() > 1 {
                return Err(ScenarioError::at(
                    source,
                    Some(span),
                    "a transform takes one of `select`, `remove` or `fuse`; split it into two [[transform]] tables",
                ));
            }
            let gaps = if t.drop_host_gaps.unwrap_or(false) {
                HostGaps::Drop
            } else {
                HostGaps::Keep
            };
            let mut actions = Vec::new();
            let raw_select = if let Some(remove) = t.remove {
                actions.push(Action::Remove(gaps));
                Some(remove)
            } else if let Some(fuse) = t.fuse {
                let cost = match (&t.duration_ns, &t.factor) {
                    (Some(d), _) => FusedCost::Fixed(check_ns(source, d)?),
                    (None, Some(f)) => FusedCost::SumTimes(check_factor(source, f)?),
                    (None, None) => FusedCost::SumTimes(1.0),
                };
                actions.push(Action::Fuse(cost, gaps));
                Some(fuse)
            } else {
                t.select
            };
            let is_fuse = matches!(actions.first(), Some(Action::Fuse(..)));
            if let Some(scale) = &t.scale {
                actions.push(Action::Scale(check_factor(source, scale)?));
            }
            if let Some(scale) = &t.gap_scale {
                actions.push(Action::ScaleGaps(check_factor(source, scale)?));
            }
            if let (Some(d), false) = (&t.duration_ns, is_fuse) {
                actions.push(Action::SetDuration(check_ns(source, d)?));
            }
            if let Some(model) = &t.model {
                let Some(m) = Model::by_name(model.get_ref()) else {
                    return Err(ScenarioError::at(
                        source,
                        Some(model.span()),
                        format!(
                            "unknown model `{}`{}; the models are: {}",
                            model.get_ref(),
                            Model::suggestion(model.get_ref())
                                .map_or_else(String::new, |m| format!(" (did you mean `{m}`?)")),
                            Model::NAMES.join(", ")
                        ),
                    ));
                };
                actions.push(Action::Model(m));
            }
            if actions.is_empty() {
                return Err(ScenarioError::at(
                    source,
                    Some(span),
                    "this transform does nothing: give `scale`, `gap_scale`, `duration_ns`, `remove`, `fuse` or `model`",
                ));
            }
            if raw_select.is_none()
                && actions
                    .iter()
                    .any(|a| !matches!(a, Action::Model(_) | Action::Remove(_)))
            {
                return Err(ScenarioError::at(
                    source,
                    Some(span),
                    "`scale`, `gap_scale` and `duration_ns` need a `select = { ... }` (use `select = {}` for every task)",
                ));
            }
            let select = match raw_select {
                Some(s) => check_select(source, s.into_inner())?,
                None => Select::default(),
            };
            transforms.push(Transform {
                select,
                actions,
                line,
            });
        }
        Ok(Scenario {
            name: raw.name,
            description: raw.description,
            transforms,
        })
    }

    /// The built-in models the scenario applies, in order.
    pub fn models(&self) -> Vec<Model> {
        self.transforms
            .iter()
            .flat_map(|t| &t.actions)
            .filter_map(|a| match a {
                Action::Model(m) => Some(m.clone()),
                _ => None,
            })
            .collect()
    }

    /// Applies the scenario's transforms, in order, to `edit`.
    pub fn apply(&self, context: &Context<'_>, edit: &mut EditGraph) -> Result<(), WhatIfError> {
        for transform in &self.transforms {
            for action in &transform.actions {
                if let Action::Model(model) = action {
                    model.apply(context, edit)?;
                    continue;
                }
                let selection = edit.select(&transform.select, context.select_context());
                match action {
                    Action::Scale(f) => edit.scale(&selection, *f)?,
                    Action::ScaleGaps(f) => edit.scale_gaps(&selection, *f)?,
                    Action::SetDuration(ns) => edit.set_duration(&selection, *ns)?,
                    Action::Remove(gaps) => edit.remove(&selection, *gaps)?,
                    Action::Fuse(cost, gaps) => {
                        for run in edit.runs(&selection) {
                            if run.len() >= 2 {
                                edit.fuse(&run, *cost, *gaps)?;
                            }
                        }
                    }
                    Action::Model(_) => {}
                }
            }
        }
        Ok(())
    }
}

fn check_factor(source: &str, value: &Spanned<f64>) -> Result<f64, ScenarioError> {
    let f = *value.get_ref();
    if f.is_finite() && (0.0..=MAX_FACTOR).contains(&f) {
        Ok(f)
    } else {
        Err(ScenarioError::at(
            source,
            Some(value.span()),
            format!(
                "invalid factor {f}: it must be finite, non-negative and at most {MAX_FACTOR:e} (0.5 halves a duration)"
            ),
        ))
    }
}

fn check_ns(source: &str, value: &Spanned<i64>) -> Result<i64, ScenarioError> {
    let ns = *value.get_ref();
    // The reader's bound on a recorded duration, for the same reason: a cost near `i64::MAX`
    // says nothing a what-if can answer.
    if (0..=stepcast_trace::kineto::MAX_DUR_NS).contains(&ns) {
        Ok(ns)
    } else {
        Err(ScenarioError::at(
            source,
            Some(value.span()),
            format!(
                "invalid duration {ns} ns: durations are non-negative and at most {} ns (13 days)",
                stepcast_trace::kineto::MAX_DUR_NS
            ),
        ))
    }
}

fn check_regex(
    source: &str,
    value: Option<Spanned<String>>,
) -> Result<Option<Regex>, ScenarioError> {
    value
        .map(|v| {
            Regex::new(v.get_ref()).map_err(|e| {
                ScenarioError::at(
                    source,
                    Some(v.span()),
                    format!("invalid regular expression `{}`: {e}", v.get_ref()),
                )
            })
        })
        .transpose()
}

fn check_select(source: &str, raw: RawSelect) -> Result<Select, ScenarioError> {
    let mut kinds = Vec::new();
    if let Some(k) = raw.kind {
        let span = k.span();
        for name in k.into_inner().into_vec() {
            let kind = [
                TaskKind::ApiCall,
                TaskKind::CpuOp,
                TaskKind::Kernel,
                TaskKind::Memcpy,
                TaskKind::Memset,
                TaskKind::Collective,
            ]
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| {
                ScenarioError::at(
                    source,
                    Some(span.clone()),
                    format!(
                        "unknown task kind `{name}`; the kinds are: api_call, cpu_op, kernel, memcpy, memset, collective"
                    ),
                )
            })?;
            kinds.push(kind);
        }
    }
    let mut phases = Vec::new();
    if let Some(p) = raw.phase {
        let span = p.span();
        for name in p.into_inner().into_vec() {
            let phase = Phase::ALL
                .into_iter()
                .find(|p| p.as_str() == name)
                .ok_or_else(|| {
                    ScenarioError::at(
                        source,
                        Some(span.clone()),
                        format!(
                            "unknown phase `{name}`; the phases are: forward, backward, optimizer, communication, data_loading, other"
                        ),
                    )
                })?;
            phases.push(phase);
        }
    }
    Ok(Select {
        kinds,
        name: check_regex(source, raw.name)?,
        op: check_regex(source, raw.op)?,
        layer: check_regex(source, raw.layer)?,
        phases,
        lanes: raw.lane.unwrap_or_default(),
        steps: raw.step.unwrap_or_default(),
        on_device: raw.device,
    })
}
