//! What the number of `DataLoader` workers changes, in `advise`. Where the host's cores are
//! given (`--cores`), `prefetch_inputs` is priced at several worker counts and the prediction
//! kept says what the others predict: past the count whose pace keeps up with the training, or
//! at which the cores run out, more workers predict the same step. The model's default count
//! ([`DEFAULT_WORKERS`]) is kept, or more where more gain a useful step; where fewer predict
//! the same, the fewest are named but not offered instead: a worker that barely keeps up loses
//! to its own jitter, which the model does not see (on this project's 2-core pairs,
//! where one worker was predicted to keep up, it measured 2 and 12 % less than two without
//! the profiler: `docs/accuracy.md`). Where the cores are unknown nothing bounds what more
//! workers would gain, so the default count is priced alone.

use super::USEFUL_SPEEDUP;
use crate::whatif::models::{DEFAULT_WORKERS, LoaderHost, Model};

/// The variants `advise` tries of `model` on `host`, fewer workers first: `prefetch_inputs`
/// with 1, 2, 4, ... workers up to [`DEFAULT_WORKERS`] or the cores, whichever is more (and
/// the cores themselves), where the cores are given; else `model` alone.
pub(crate) fn variants(model: Model) -> Vec<Model> {
    let Model::PrefetchInputs {
        contention,
        host: host @ LoaderHost {
            cores: Some(cores), ..
        },
        ..
    } = model
    else {
        return vec![model];
    };
    counts(cores.max(DEFAULT_WORKERS))
        .into_iter()
        .map(|workers| Model::PrefetchInputs {
            contention,
            workers,
            host,
        })
        .collect()
}

/// 1, 2, 4, ... up to `most`, and `most` itself.
fn counts(most: u32) -> Vec<u32> {
    let mut counts: Vec<u32> = std::iter::successors(Some(1u32), |&n| n.checked_mul(2))
        .take_while(|&n| n < most)
        .collect();
    counts.push(most);
    counts
}

/// The workers of a `prefetch_inputs` model (`None` for another model).
fn workers_of(models: &[Model]) -> Option<u32> {
    match models {
        [Model::PrefetchInputs { workers, .. }] => Some(*workers),
        _ => None,
    }
}

/// Of one model's variants (in [`variants`] order), the one `advise` keeps, and, where it
/// priced several worker counts, what each predicted. It keeps [`DEFAULT_WORKERS`], or more
/// where more gain a useful step ([`USEFUL_SPEEDUP`]): then the fewest within that of the
/// best. Never fewer than the default, which the model cannot tell from more (see the module
/// documentation). `speedup` gives a variant's predicted speedup, `None` where it failed or
/// was declined; `models` its models. Where the default was not predicted, it is kept (its
/// failure is what `advise` reports).
fn keep_one<T>(
    mut variants: Vec<T>,
    models: impl Fn(&T) -> &[Model],
    speedup: impl Fn(&T) -> Option<f64>,
) -> (T, Option<String>) {
    let priced: Vec<(u32, f64)> = variants
        .iter()
        .filter_map(|v| Some((workers_of(models(v))?, speedup(v)?)))
        .collect();
    let best = priced.iter().map(|&(_, s)| s).fold(f64::NAN, f64::max);
    // The fewest workers within a useful step of the best.
    let enough = priced
        .iter()
        .find(|&&(_, s)| s * USEFUL_SPEEDUP >= best)
        .map(|&(w, _)| w);
    let at = |workers: u32| {
        variants
            .iter()
            .position(|v| workers_of(models(v)) == Some(workers))
    };
    let default = at(DEFAULT_WORKERS).unwrap_or(variants.len().saturating_sub(1));
    let kept = match enough {
        Some(more) if more > DEFAULT_WORKERS && speedup(&variants[default]).is_some() => {
            at(more).unwrap_or(default)
        }
        _ => default,
    };
    let why = (priced.len() > 1 && speedup(&variants[kept]).is_some()).then(|| {
        format!(
            "{} workers (--workers) predict {}: {}",
            list(
                &priced
                    .iter()
                    .map(|&(w, _)| w.to_string())
                    .collect::<Vec<_>>()
            ),
            list(
                &priced
                    .iter()
                    .map(|&(_, s)| format!("×{s:.3}"))
                    .collect::<Vec<_>>()
            ),
            match enough {
                Some(fewer) if fewer < DEFAULT_WORKERS => format!(
                    "{fewer} already predict{} the step of the most, within {:.1} % (the \
                     model does not see a worker's jitter, which more workers absorb)",
                    if fewer == 1 { "s" } else { "" },
                    (USEFUL_SPEEDUP - 1.0) * 100.0
                ),
                Some(more) if more > DEFAULT_WORKERS => format!(
                    "{more} reach the step of the most, within {:.1} %, and are priced here \
                     (the default, {DEFAULT_WORKERS}, gains less)",
                    (USEFUL_SPEEDUP - 1.0) * 100.0
                ),
                _ => "fewer workers gain less".to_string(),
            }
        )
    });
    (variants.swap_remove(kept), why)
}

/// Of `tried`, the results of each advised model's variants in `groups` (in order), the one
/// kept per model ([`keep_one`]), `note`d with what the others predicted where there were
/// several.
pub(crate) fn one_per_model<T>(
    tried: Vec<T>,
    groups: &[Vec<Model>],
    models: impl Fn(&T) -> &[Model] + Copy,
    speedup: impl Fn(&T) -> Option<f64> + Copy,
    mut note: impl FnMut(&mut T, String),
) -> Vec<T> {
    let mut tried = tried.into_iter();
    let mut kept = Vec::with_capacity(groups.len());
    for group in groups {
        let variants: Vec<T> = tried.by_ref().take(group.len()).collect();
        if variants.len() < 2 {
            kept.extend(variants);
            continue;
        }
        let (mut one, why) = keep_one(variants, models, speedup);
        if let Some(why) = why {
            note(&mut one, why);
        }
        kept.push(one);
    }
    kept
}

/// `1, 2 and 4`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefetch(workers: u32, cores: Option<u32>) -> Model {
        Model::PrefetchInputs {
            contention: 0.0,
            workers,
            host: LoaderHost {
                cores,
                threads: Some(1),
            },
        }
    }

    #[test]
    fn the_cores_given_price_powers_of_two_up_to_them_or_the_default() {
        let workers = |cores| -> Vec<u32> {
            variants(prefetch(DEFAULT_WORKERS, cores))
                .iter()
                .filter_map(|m| workers_of(std::slice::from_ref(m)))
                .collect()
        };
        assert_eq!(workers(None), vec![DEFAULT_WORKERS]);
        assert_eq!(workers(Some(2)), vec![1, 2, 4]);
        assert_eq!(workers(Some(6)), vec![1, 2, 4, 6]);
        assert_eq!(workers(Some(16)), vec![1, 2, 4, 8, 16]);
        assert_eq!(variants(Model::Amp), vec![Model::Amp]);
    }

    #[test]
    fn the_default_count_is_kept_and_says_what_the_others_predict() {
        let tried = |speedups: &[Option<f64>]| {
            let variants: Vec<(Vec<Model>, Option<f64>)> = [1, 2, 4]
                .iter()
                .zip(speedups)
                .map(|(&w, &s)| (vec![prefetch(w, Some(2))], s))
                .collect();
            let (kept, why) = keep_one(variants, |v| &v.0, |v| v.1);
            (workers_of(&kept.0), why)
        };
        let (kept, why) = tried(&[Some(1.6), Some(1.98), Some(1.98)]);
        assert_eq!(kept, Some(DEFAULT_WORKERS));
        let why = why.expect("three counts priced");
        assert!(
            why.starts_with("1, 2 and 4 workers (--workers) predict ×1.600, ×1.980 and ×1.980: 2 already predict the step"),
            "{why}"
        );
        // Each count gains a useful step more.
        let (_, why) = tried(&[Some(1.6), Some(1.9), Some(1.98)]);
        assert!(why.expect("priced").ends_with("fewer workers gain less"));
        // Within half a percent of the best is enough.
        let (_, why) = tried(&[Some(1.6), Some(1.975), Some(1.98)]);
        assert!(
            why.expect("priced")
                .contains(": 2 already predict the step")
        );
        // The default not predicted (declined): kept for its reason, no curve.
        assert_eq!(
            tried(&[Some(1.2), Some(1.3), None]),
            (Some(DEFAULT_WORKERS), None)
        );
        // More than the default gain a useful step more: the fewest of them are kept.
        let variants: Vec<(Vec<Model>, Option<f64>)> = [1, 2, 4, 8, 16]
            .iter()
            .zip([1.2, 1.5, 1.8, 2.4, 2.41])
            .map(|(&w, s)| (vec![prefetch(w, Some(16))], Some(s)))
            .collect();
        let (kept, why) = keep_one(variants, |v| &v.0, |v| v.1);
        assert_eq!(workers_of(&kept.0), Some(8));
        assert!(
            why.expect("priced")
                .contains(": 8 reach the step of the most")
        );
        // One count predicted: no curve.
        assert_eq!(
            tried(&[None, None, Some(1.3)]),
            (Some(DEFAULT_WORKERS), None)
        );
    }
}
