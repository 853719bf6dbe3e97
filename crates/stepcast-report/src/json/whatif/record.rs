//! How a model did on the measured pairs it was not fitted on (`docs/accuracy.md`), as the
//! documents show it beside a prediction, and when that record holds a gain back.

use serde::Serialize;
use stepcast::whatif::Model;
use stepcast::whatif::record::{ModelRecord, TraceKind};

/// A model's record on the recorded before/after pairs (`stepcast::whatif::record`) whose
/// BEFORE is a trace of the predicted trace's kind: its error on the pairs none of its
/// constants were fitted on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRecordJson {
    /// The model's name.
    pub model: String,
    /// The kind of BEFORE trace of these pairs (this trace's): `device` or `cpu_only`.
    pub traces: &'static str,
    /// Recorded pairs it was checked on.
    pub pairs: u32,
    /// Of them, pairs none of its constants were fitted on.
    pub out_of_sample: u32,
    /// Median |predicted / measured speedup − 1| on those, as traced (`null`: no
    /// out-of-sample pair, so unknown).
    pub out_of_sample_median_error: Option<f64>,
    /// Largest |predicted / measured speedup − 1| on those, as traced.
    pub out_of_sample_max_error: Option<f64>,
    /// Of those, pairs where the prediction and the outcome moved the step in opposite
    /// directions.
    pub wrong_direction: u32,
    /// Of those, pairs that hold the prediction as a ceiling (a best case the outcome is not
    /// to exceed): their error is how far below it the outcome came.
    pub ceiling_pairs: u32,
}

impl ModelRecordJson {
    /// Whether every out-of-sample pair holds the model as a ceiling
    /// (`ModelRecord::only_ceilings`, as this document carries it).
    pub fn only_ceilings(&self) -> bool {
        self.ceiling_pairs > 0 && self.ceiling_pairs == self.out_of_sample
    }

    pub(super) fn of(models: &[Model], kind: TraceKind) -> Vec<Self> {
        models
            .iter()
            .filter_map(|m| {
                let r = stepcast::whatif::record::model_record(&m.name(), kind)?;
                Some(Self {
                    model: m.name(),
                    traces: r.kind.as_str(),
                    pairs: r.pairs,
                    out_of_sample: r.out_of_sample(),
                    out_of_sample_median_error: r.out_of_sample_median_error,
                    out_of_sample_max_error: r.out_of_sample_max_error,
                    wrong_direction: r.wrong_direction,
                    ceiling_pairs: r.ceiling,
                })
            })
            .collect()
    }
}

/// `model`'s record on traces of `kind`, in a sentence: the error out of sample and how often
/// the step moved the other way, or that no such pair holds it (and what other kind does).
pub fn record_words(model: &Model, kind: TraceKind) -> String {
    let name = model.name();
    match stepcast::whatif::record::model_record(&name, kind) {
        Some(r) => match (r.out_of_sample_median_error, r.out_of_sample_max_error) {
            (Some(median), Some(max)) if r.only_ceilings() => format!(
                "{name} is held as a ceiling (a best case, not an estimate) on {} recorded {} \
                 it was not fitted on: the outcomes came a median {:.0}% (max {:.0}%) below \
                 it{}",
                r.out_of_sample(),
                pairs(r.out_of_sample(), kind),
                median * 100.0,
                max * 100.0,
                match r.wrong_direction {
                    0 => String::new(),
                    n => format!(", the step moving the other way on {n}"),
                }
            ),
            (Some(median), Some(max)) => format!(
                "{name} erred by a median {:.0}% (max {:.0}%) on {} recorded {} it was not \
                 fitted on{}",
                median * 100.0,
                max * 100.0,
                r.out_of_sample(),
                pairs(r.out_of_sample(), kind),
                match r.wrong_direction {
                    0 => String::new(),
                    n => format!(", the step moving the other way on {n}"),
                }
            ),
            _ => format!(
                "{name} has {} recorded {}, all in sample (a constant fitted on each): its \
                 error out of sample is unknown",
                r.pairs,
                pairs(r.pairs, kind)
            ),
        },
        None => {
            let other: Vec<String> = stepcast::whatif::record::model_records(&name)
                .map(|r| format!("{} {}", r.pairs, pairs(r.pairs, r.kind)))
                .collect();
            match other.as_slice() {
                [] => format!("{name} has no recorded pair: its error is unknown"),
                _ => format!(
                    "{name} has no recorded pair on a trace {} (only {}): its error on such a \
                     trace is unknown",
                    match kind {
                        TraceKind::Device => "with device work",
                        TraceKind::CpuOnly => "without device work",
                    },
                    other.join(", ")
                ),
            }
        }
    }
}

/// `n` pairs of `kind`, the noun agreeing: `1 CPU-only pair`, `3 pairs with device work`.
fn pairs(n: u32, kind: TraceKind) -> String {
    let words = kind.pairs_words();
    if n == 1 {
        words.replacen("pairs", "pair", 1)
    } else {
        words.to_string()
    }
}

/// Why `model`'s record on traces of `kind` cannot tell a predicted `speedup` from its error
/// ([`ModelRecord::cannot_tell`]), in words; `None` where it can or there is no record. Not
/// asked of a hardware model: its speed-up is the user's premise (a CPU k× faster), not a
/// change to try, and its pairs hold only how near a real change came to that premise.
pub fn held_back(model: &Model, kind: TraceKind, speedup: Option<f64>) -> Option<String> {
    if model.is_hardware() {
        return None;
    }
    let name = model.name();
    let r: &ModelRecord = stepcast::whatif::record::model_record(&name, kind)?;
    let speedup = speedup?;
    let why = r.cannot_tell(speedup)?;
    let mut reasons = Vec::new();
    if why.within_error {
        reasons.push(format!(
            "at its median error on the recorded {} ({:.0}%) the gain could be none",
            kind.pairs_words(),
            r.out_of_sample_median_error.unwrap_or(0.0) * 100.0
        ));
    }
    if why.wrong_way {
        reasons.push(match why.within_error {
            true => format!(
                "on {} of those {} pairs the step moved the other way",
                r.wrong_direction,
                r.out_of_sample()
            ),
            false => format!(
                "on {} of its {} recorded {} the step moved the other way",
                r.wrong_direction,
                r.out_of_sample(),
                kind.pairs_words()
            ),
        });
    }
    Some(format!(
        "its model's record cannot tell this gain from its error: {}",
        reasons.join(", and ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model held as a ceiling on every out-of-sample pair is named as one, with how far
    /// below it the outcomes came; no other record is.
    #[test]
    fn a_record_of_ceilings_is_worded_as_one() {
        let mut ceilings = 0;
        for r in stepcast::whatif::record::RECORDS {
            let model =
                Model::by_name(r.model).unwrap_or_else(|| panic!("{}: no such model", r.model));
            let words = record_words(&model, r.kind);
            assert_eq!(
                words.contains("held as a ceiling"),
                r.only_ceilings(),
                "{words}"
            );
            if r.only_ceilings() {
                ceilings += 1;
                let median = r.out_of_sample_median_error.expect("a median") * 100.0;
                assert!(
                    words.contains(&format!("came a median {median:.0}%")),
                    "{words}"
                );
            }
        }
        // `faster_cpu`'s thread-count pairs hold it as a ceiling (docs/accuracy.md).
        assert!(ceilings >= 1);
    }
}
