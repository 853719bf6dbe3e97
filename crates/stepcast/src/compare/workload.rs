//! Whether two traces are one workload: the same devices, ops and kernels that share most of
//! their time, and both training (or both not).
//!
//! A speedup between two traces means something only when one program changed in one way. A
//! ResNet training step on a V100 against a ViT inference step on an MI300X has a ratio, and it
//! says nothing: [`Workload::of`] finds such pairs, and [`super::compare`] refuses them unless
//! forced (the refusal then stands in the output as a warning).
//!
//! What refuses and what warns (the figures are those of `testdata/`):
//! - **Ops and kernels that share little** refuse: the larger of the time-weighted Jaccard
//!   similarities of host op names and of kernel names under [`REFUSE_SIMILARITY`]. The larger,
//!   because a real change can replace most kernels (AMP's half-precision GEMMs: kernels 0.07
//!   on the transformer pair) or most host ops (a CUDA graph replaces them by one launch: ops
//!   0.0, kernels 0.97; `torch.compile`: ops 0.13, kernels 0.82) but not both; every real pair
//!   keeps 0.33 or more on one side, while unrelated traces (a ResNet against a transformer, an
//!   MLP, a DDP job, a ViT) share at most 0.18.
//! - **Training against inference** refuses where the kernels do not show one program: one
//!   side has a backward pass (at least [`BACKWARD_SHARE`] of its busy time in the analysis's
//!   backward phase) and the other none, and the kernel similarity is under
//!   [`WARN_SIMILARITY`]. Where the kernels are mostly the same, the missing backward is the
//!   host not recording it (a CUDA graph replay has no autograd ops): a warning.
//! - **Similarity under [`WARN_SIMILARITY`]** (the larger of the two) warns: a change that
//!   replaces most kernels and ops alike must be checked by the reader.
//! - **Different devices** warn: running the same program on another GPU is a legitimate
//!   comparison (the H100 → H200 pairs of `testdata/`), but the speedup then includes the
//!   hardware, which the reader must know.
//!
//! The similarity is `Σ min(p, q) / Σ max(p, q)` over names, with `p` and `q` each name's share
//! of its trace's total time (so a uniformly faster AFTER is still similarity 1). Kernel names
//! lose their template and parameter lists (`kernel<float, 4>(...)` → `kernel`): a change of
//! data type is the same kernel doing other work, not another program.

use std::collections::BTreeMap;

use stepcast_trace::{EventKind, Trace};

use super::Side;
use crate::analyze::mapping::Phase;

/// A side whose backward phase holds at least this share of its busy time trains.
pub const BACKWARD_SHARE: f64 = 0.01;
/// The larger similarity under this: not one workload (refused).
pub const REFUSE_SIMILARITY: f64 = 0.25;
/// The larger similarity under this: said as a warning.
pub const WARN_SIMILARITY: f64 = 0.5;

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FindingKind {
    /// The traces ran on different devices.
    Devices,
    /// One trains (has a backward pass), the other does not.
    TrainingInference,
    /// Host ops and kernels share little time.
    Names,
    /// A side has fewer than two steady steps: the step-to-step noise is unknown.
    SpreadUnknown,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Devices => "devices",
            FindingKind::TrainingInference => "training_inference",
            FindingKind::Names => "names",
            FindingKind::SpreadUnknown => "spread_unknown",
        }
    }
}

/// One reason to doubt a comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    /// It makes the pair not one workload: `compare` refuses it unless forced.
    pub refuses: bool,
    /// One sentence.
    pub message: String,
}

/// How alike the two traces are.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Device product names of each side (`Trace::devices`), sorted, each once.
    pub devices_before: Vec<String>,
    pub devices_after: Vec<String>,
    /// Time-weighted Jaccard similarity of host op names (`None`: a side has no op).
    pub op_similarity: Option<f64>,
    /// Time-weighted Jaccard similarity of kernel, copy and memset names (`None`: a side has
    /// no device task).
    pub kernel_similarity: Option<f64>,
    /// Share of each side's busy time (host and device, steady steps) in the backward phase.
    pub backward_share_before: f64,
    pub backward_share_after: f64,
    /// What makes the pair doubtful, most serious first.
    pub findings: Vec<Finding>,
}

impl Workload {
    /// Compares the two sides' devices, names and phases; `before_steady` and `after_steady`
    /// are the window's steady step indices of each side.
    pub fn of(
        before: &Side<'_>,
        before_steady: &[usize],
        after: &Side<'_>,
        after_steady: &[usize],
    ) -> Workload {
        let devices_before = devices(before.trace);
        let devices_after = devices(after.trace);
        let (ops_before, kernels_before) = name_times(before.trace);
        let (ops_after, kernels_after) = name_times(after.trace);
        let op_similarity = similarity(&ops_before, &ops_after);
        let kernel_similarity = similarity(&kernels_before, &kernels_after);
        let backward_share_before = backward_share(before, before_steady);
        let backward_share_after = backward_share(after, after_steady);

        let mut findings = Vec::new();
        let shown = |s: Option<f64>| s.map_or_else(|| "n/a".to_string(), |s| format!("{s:.2}"));
        // The larger of the two: a side without ops (or kernels) leaves the other to judge.
        let shared = match (op_similarity, kernel_similarity) {
            (Some(o), Some(k)) => Some(o.max(k)),
            (one, other) => one.or(other),
        };
        let trains = |share: f64| share >= BACKWARD_SHARE;
        if trains(backward_share_before) != trains(backward_share_after) {
            let (training, other) = if trains(backward_share_before) {
                ("BEFORE", "AFTER")
            } else {
                ("AFTER", "BEFORE")
            };
            let same_kernels = kernel_similarity.is_some_and(|k| k >= WARN_SIMILARITY);
            findings.push(Finding {
                kind: FindingKind::TrainingInference,
                refuses: !same_kernels,
                message: if same_kernels {
                    format!(
                        "{training} has a backward pass ({:.0}% of its busy time) and {other} \
                         records none, though their kernels are mostly the same (similarity {}): \
                         check that both train",
                        backward_share_before.max(backward_share_after) * 100.0,
                        shown(kernel_similarity)
                    )
                } else {
                    format!(
                        "{training} trains ({:.0}% of its busy time in backward) and {other} has \
                         no backward pass: a training step against an inference step is not one \
                         workload",
                        backward_share_before.max(backward_share_after) * 100.0
                    )
                },
            });
        }
        if let Some(shared) = shared {
            let refuses = shared < REFUSE_SIMILARITY;
            if shared < WARN_SIMILARITY {
                findings.push(Finding {
                    kind: FindingKind::Names,
                    refuses,
                    message: format!(
                        "the traces share {} ops and kernels (time-weighted similarity: ops {}, \
                         kernels {}){}",
                        if refuses { "almost no" } else { "few" },
                        shown(op_similarity),
                        shown(kernel_similarity),
                        if refuses {
                            ": not one workload"
                        } else {
                            "; expected of a change that replaces most kernels or ops (AMP, \
                             compilation), otherwise check that they are one workload"
                        }
                    ),
                });
            }
        }
        // A trace that records no device (the 2021 Kineto schema) says nothing either way.
        let recorded = !devices_before.is_empty() && !devices_after.is_empty();
        if recorded && devices_before != devices_after {
            let list = |d: &[String]| d.join(", ");
            findings.push(Finding {
                kind: FindingKind::Devices,
                refuses: false,
                message: format!(
                    "different devices: BEFORE ran on {}, AFTER on {}; the speedup includes the \
                     hardware",
                    list(&devices_before),
                    list(&devices_after)
                ),
            });
        }
        Workload {
            devices_before,
            devices_after,
            op_similarity,
            kernel_similarity,
            backward_share_before,
            backward_share_after,
            findings,
        }
    }
}

fn devices(trace: &Trace) -> Vec<String> {
    let mut names: Vec<String> = trace.devices.iter().map(|d| d.name.clone()).collect();
    names.sort();
    names.dedup();
    names
}

/// A kernel's name without its template arguments and parameter list.
fn kernel_family(name: &str) -> &str {
    let cut = name.find(['<', '(']).unwrap_or(name.len());
    name[..cut].trim()
}

/// Total recorded time by host op name and by device task name (family), over the trace.
fn name_times(trace: &Trace) -> (BTreeMap<&str, i64>, BTreeMap<&str, i64>) {
    let mut ops: BTreeMap<&str, i64> = BTreeMap::new();
    let mut kernels: BTreeMap<&str, i64> = BTreeMap::new();
    for event in &trace.events {
        let name = trace.name(event.name);
        let dur_ns = event.dur_ns.max(0);
        if event.kind == EventKind::CpuOp {
            *ops.entry(name).or_insert(0) += dur_ns;
        } else if event.kind.is_device_task() {
            *kernels.entry(kernel_family(name)).or_insert(0) += dur_ns;
        }
    }
    (ops, kernels)
}

/// `Σ min(p, q) / Σ max(p, q)` over names, `p` and `q` the shares of each side's total time;
/// `None` when a side has no time at all.
fn similarity(before: &BTreeMap<&str, i64>, after: &BTreeMap<&str, i64>) -> Option<f64> {
    let total = |m: &BTreeMap<&str, i64>| m.values().map(|&v| v as f64).sum::<f64>();
    let (tb, ta) = (total(before), total(after));
    if tb <= 0.0 || ta <= 0.0 {
        return None;
    }
    let (mut low, mut high) = (0.0, 0.0);
    // BTreeMap order: the sums are deterministic.
    let mut names: Vec<&str> = before.keys().chain(after.keys()).copied().collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let p = before.get(name).map_or(0.0, |&v| v as f64 / tb);
        let q = after.get(name).map_or(0.0, |&v| v as f64 / ta);
        low += p.min(q);
        high += p.max(q);
    }
    (high > 0.0).then(|| low / high)
}

/// Share of the busy time (host and device) of the steady steps in the backward phase.
fn backward_share(side: &Side<'_>, steady: &[usize]) -> f64 {
    let (mut backward, mut busy) = (0i64, 0i64);
    for &s in steady {
        let Some(breakdown) = side.analysis.breakdowns.steps.get(s) else {
            continue;
        };
        for &(phase, ns) in breakdown
            .host_by_phase
            .busy
            .iter()
            .chain(&breakdown.device_by_phase.busy)
        {
            busy += ns;
            if phase == Phase::Backward {
                backward += ns;
            }
        }
    }
    if busy <= 0 {
        0.0
    } else {
        backward as f64 / busy as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_family_drops_templates_and_parameters() {
        assert_eq!(
            kernel_family("void at::native::kernel<float, 4>(int, float*)"),
            "void at::native::kernel"
        );
        assert_eq!(
            kernel_family("ampere_sgemm_128x64_tn"),
            "ampere_sgemm_128x64_tn"
        );
    }

    #[test]
    fn similarity_is_one_for_proportional_times_and_zero_for_disjoint_names() {
        let a = BTreeMap::from([("x", 10), ("y", 30)]);
        let b = BTreeMap::from([("x", 5), ("y", 15)]);
        let c = BTreeMap::from([("z", 5)]);
        assert_eq!(similarity(&a, &b), Some(1.0));
        assert_eq!(similarity(&a, &c), Some(0.0));
        assert_eq!(similarity(&a, &BTreeMap::new()), None);
        // Half the time on a shared name: 0.5 / 1.5.
        let d = BTreeMap::from([("x", 10), ("w", 10)]);
        let e = BTreeMap::from([("x", 10)]);
        assert!((similarity(&d, &e).unwrap_or(0.0) - 1.0 / 3.0).abs() < 1e-12);
    }
}
