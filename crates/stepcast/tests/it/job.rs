//! Job-level predictions (issue #27, item 3): a change applied to every rank of a real job and
//! the job's global graph replayed, so ranks wait for their peers in the replay. Held to the
//! invariants of every prediction (a change of nothing is the baseline, the baseline is the
//! measured step, k× faster gives at most k×, the gain never exceeds the bound) on the DLRM
//! job (8 NCCL ranks, one step) and the gloo jobs recorded here (several steps, process
//! groups, send/recv, FSDP's all-gathers, experts' all-to-all exchanges, DTensor's functional
//! collectives, `torch.distributed.pipelining`'s batched transfers).

use stepcast::analyze::mapping::{Mapping, map};
use stepcast::graph::{BuildOptions, build};
use stepcast::ranks::recorded_rank;
use stepcast::whatif::job::{Job, JobRank};
use stepcast::whatif::{Context, Model, what_if};
use stepcast_trace::{Trace, read_trace};

use crate::invariants::everything;
use crate::testdata;

const DLRM: &str = "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto";
const GLOO_JOBS: &[&str] = &[
    "stepcast/cpu-jobs/tp2dp2",
    "stepcast/cpu-jobs/tp2dp2-dp-major",
    "stepcast/cpu-jobs/tp2dp3",
    "stepcast/cpu-jobs/tp4dp2",
    "stepcast/cpu-jobs/pp2dp2",
    "stepcast/cpu-jobs/pp2dp3",
    "stepcast/cpu-jobs/fsdp2x2",
    "stepcast/cpu-jobs/fsdp4x2",
    "stepcast/cpu-jobs/ep2dp2",
    "stepcast/cpu-jobs/ep4dp2",
    "stepcast/cpu-jobs/tp2pp2dp2",
    "stepcast/cpu-jobs/tp2dp2-2hosts",
    "stepcast/cpu-jobs/tp4dp2-2hosts",
    "stepcast/cpu-jobs/tp2dp4-2hosts",
    "stepcast/cpu-jobs/ep2dp2-2hosts",
    "stepcast/cpu-jobs/fsdp2x2-2hosts",
    "stepcast/cpu-jobs/pp2dp2-2hosts",
    "stepcast/cpu-jobs/tp4dp4",
    "stepcast/cpu-jobs/ep2dp2-token",
    "stepcast/cpu-jobs/dtensor-tp2dp2",
    "stepcast/cpu-jobs/dtensor-tp4dp2",
    "stepcast/cpu-jobs/pipelining-pp2dp2",
    "stepcast/cpu-jobs/pipelining-pp4dp2",
    "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp",
    "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2",
    "stepcast/cpu-jobs/dp4-bookkeeping",
    "stepcast/cpu-jobs/dp8-bookkeeping",
    "stepcast/cpu-jobs/dp4-bookkeeping-compiled",
    "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts",
    "stepcast/cpu-jobs/tp2pp2dp2-titan",
    "stepcast/cpu-jobs/pipelining-zero-bubble-pp2dp2",
    "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp",
    "stepcast/cpu-jobs/fsdp1-2x2",
    "stepcast/cpu-jobs/fsdp1-4x2",
    "stepcast/cpu-jobs/zero-dp4",
    "stepcast/cpu-jobs/zero-dp8",
    "stepcast/cpu-jobs/powersgd-tp2dp2",
    "stepcast/cpu-jobs/powersgd-tp4dp2",
    "stepcast/cpu-jobs/powersgd-tp2dp3",
    "stepcast/cpu-jobs/tp4dp2-noshapes",
    "stepcast/cpu-jobs/ep2dp2-noshapes",
    "stepcast/cpu-jobs/pp2dp2-noshapes",
    "stepcast/cpu-jobs/pp2dp3-noshapes",
    "stepcast/cpu-jobs/fsdp4x2-noshapes",
    "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp-noshapes",
];

type Rank = (i64, Trace, stepcast::Window, Mapping);

/// The ranks of the job in `dir` (every trace there), sorted by rank, with their mappings.
fn ranks(dir: &str) -> Vec<Rank> {
    let dir = testdata(dir);
    let mut ranks: Vec<Rank> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.map(|e| e.path()).unwrap_or_else(|e| panic!("{e}")))
        .filter(|p| {
            let name = p.to_string_lossy();
            name.ends_with(".json") || name.ends_with(".json.gz")
        })
        .map(|path| {
            let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
            let rank = recorded_rank(&trace).unwrap_or_else(|| panic!("{}", path.display()));
            let window = build(&trace, &BuildOptions::default());
            let mapping = map(&trace, &window);
            (rank, trace, window, mapping)
        })
        .collect();
    ranks.sort_by_key(|r| r.0);
    assert!(ranks.len() >= 4, "{}", dir.display());
    ranks
}

fn job(ranks: &[Rank]) -> Job<'_> {
    let ranks = ranks
        .iter()
        .map(|(rank, trace, window, mapping)| JobRank {
            rank: *rank,
            context: Context::new(trace, window, mapping),
        })
        .collect();
    Job::new(ranks).unwrap_or_else(|e| panic!("{e}"))
}

fn all_jobs() -> impl Iterator<Item = &'static str> {
    std::iter::once(DLRM).chain(GLOO_JOBS.iter().copied())
}

#[test]
fn the_job_baseline_is_its_measured_step_and_a_change_of_nothing_changes_nothing() {
    for dir in all_jobs() {
        let ranks = ranks(dir);
        let job = job(&ranks);
        let (measured, baseline) = (job.measured(), &job.baseline().period);
        // The job's step as recorded on the aligned clocks, read independently of the replay.
        let error = baseline.step_ns as f64 / measured.step_ns as f64 - 1.0;
        assert!(
            error.abs() <= 0.02,
            "{dir}: baseline {} ns vs measured {} ns",
            baseline.step_ns,
            measured.step_ns
        );
        assert_eq!(baseline.ranks.len(), ranks.len(), "{dir}");
        let none = job
            .predict(|_, _, _| Ok(()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(none.predicted.period, none.baseline.period, "{dir}");
        assert_eq!(none.speedup, 1.0, "{dir}");
        assert_eq!(none.path_cut_ns, 0, "{dir}");
    }
}

#[test]
fn every_rank_k_times_faster_makes_the_job_at_most_k_times_faster_within_its_bound() {
    for dir in all_jobs() {
        let ranks = ranks(dir);
        let job = job(&ranks);
        let mut previous = 1.0;
        for k in [1.5, 2.0, 4.0] {
            let model = everything(k);
            let assessed = job
                .assess(std::slice::from_ref(&model), |c, e| {
                    model.apply(c, e).map(|_| ())
                })
                .unwrap_or_else(|e| panic!("{dir}: {e}"));
            let speedup = assessed.outcome.speedup;
            assert!(
                assessed.declined.is_none(),
                "{dir} {k}: {:?}",
                assessed.declined
            );
            assert!(
                speedup >= previous && speedup <= k * 1.005,
                "{dir}: {k}× faster gives {speedup:.4}× (after {previous:.4}×)"
            );
            let baseline = assessed.outcome.baseline.period.step_ns;
            let gain = baseline - assessed.outcome.predicted.period.step_ns;
            assert!(
                gain <= assessed.bound_ns + baseline / 200,
                "{dir} {k}: gain {gain} above bound {}",
                assessed.bound_ns
            );
            previous = speedup;
        }
    }
}

/// The ranks that bound the job's step hold the critical path over the steady steps the step
/// is measured on: per step, together at most the step, and on a job whose path crosses
/// ranks, no rank more than the step (the path of the whole replay, warm-up step included,
/// divided by the steady steps gave ep2dp2's rank 2 94.1 ms of a 78.2 ms step).
#[test]
fn the_ranks_that_bound_the_job_hold_at_most_its_step() {
    for dir in all_jobs() {
        let ranks = ranks(dir);
        let job = job(&ranks);
        let baseline = job.baseline();
        let step_ns = baseline.period.step_ns;
        let bound_by = baseline.bound_by();
        assert!(!bound_by.is_empty(), "{dir}");
        let held: i64 = bound_by.iter().map(|&(_, ns)| ns).sum();
        // Integer division per rank: at most a nanosecond a rank below.
        assert!(
            held <= step_ns && held + step_ns / 20 >= step_ns,
            "{dir}: the bounding ranks hold {held} ns of a {step_ns} ns step ({bound_by:?})"
        );
    }
}

/// dPRO's point: a rank made faster alone waits for its peers. On DLRM, rank 2 (one of the
/// ranks that wait longest for the others) twice as fast predicts ×2 on its own trace, whose
/// peers keep their recorded lateness; in the job's replay it reaches the same collectives and
/// waits there, and the job is no faster.
#[test]
fn a_rank_made_faster_alone_waits_for_its_peers() {
    let ranks = ranks(DLRM);
    let job = job(&ranks);
    let model = everything(2.0);
    let index = ranks.iter().position(|r| r.0 == 2).expect("rank 2");
    assert!(
        job.baseline().bound_by().iter().all(|&(rank, _)| rank != 2),
        "rank 2 holds none of the job's critical path"
    );
    let (_, trace, window, mapping) = &ranks[index];
    let alone = what_if(&Context::new(trace, window, mapping), |e| {
        model
            .apply(&Context::new(trace, window, mapping), e)
            .map(|_| ())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(alone.speedup > 1.3, "alone: {:.3}×", alone.speedup);
    let together = job
        .predict(|r, c, e| {
            if r == index {
                model.apply(c, e).map(|_| ())
            } else {
                Ok(())
            }
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(together.speedup < 1.01, "job: {:.3}×", together.speedup);
    // It ends its step with its peers, not a step ahead of them: within a tenth of a step of
    // the job's end, as it did before.
    let period = &together.predicted.period;
    let end = period.ranks[index].end_ns;
    assert!(
        period.end_ns - end <= period.step_ns / 10,
        "rank 2 ends {} ns before the job",
        period.end_ns - end
    );
}

/// `advise` on a job ranks changes by the job's gain, each within its bound, and only what the
/// job's replay does not decline.
#[test]
fn the_jobs_advice_is_ranked_by_the_jobs_gain_within_each_bound() {
    for dir in [DLRM, "stepcast/cpu-jobs/pp2dp2"] {
        let ranks = ranks(dir);
        let job = job(&ranks);
        let advice = job.advise().unwrap_or_else(|e| panic!("{dir}: {e}"));
        assert!(advice.declined.is_none(), "{dir}");
        assert!(!advice.candidates.is_empty(), "{dir}");
        for pair in advice.candidates.windows(2) {
            assert!(pair[0].assessed.outcome.speedup >= pair[1].assessed.outcome.speedup);
        }
        for c in &advice.candidates {
            let outcome = &c.assessed.outcome;
            let baseline = outcome.baseline.period.step_ns;
            let gain = baseline - outcome.predicted.period.step_ns;
            assert!(c.assessed.declined.is_none(), "{dir} {}", c.name());
            assert!(
                gain <= c.assessed.bound_ns + baseline / 200,
                "{dir} {}: gain {gain} above bound {}",
                c.name(),
                c.assessed.bound_ns
            );
            assert_eq!(c.assessed.alone.len(), ranks.len());
            if c.models.iter().all(Model::only_removes_work) {
                assert!(outcome.speedup >= 0.995, "{dir} {}", c.name());
            }
        }
    }
}

/// Each job-level pair: BEFORE and AFTER folders, the model, and the bar on its traced error
/// (fixed before the pair was recorded: the folder's README).
const JOB_PAIRS: &[(&str, &str, &str, f64)] = &[
    (
        "tp2dp2-adam-loop",
        "tp2dp2-adam-fused",
        "fused_optimizer",
        0.20,
    ),
    (
        "tp2dp3-adam-loop",
        "tp2dp3-adam-fused",
        "fused_optimizer",
        0.20,
    ),
];

/// The job-level pairs recorded here (`stepcast/cpu-job-pairs/`): one change on every rank,
/// BEFORE and AFTER. The README's table row is this prediction against the measured outcome
/// (traced: the AFTER job's period as recorded; untraced: rank 0's steps timed without the
/// profiler), with the bar fixed before the pair was recorded and its verdict, whatever it is.
#[test]
fn the_job_pairs_are_documented_as_predicted_and_measured() {
    const PAIRS: &str = "stepcast/cpu-job-pairs";
    let readme = std::fs::read_to_string(testdata(PAIRS).join("README.md")).expect("README");
    let untraced = |name: &str| -> f64 {
        let path = testdata(PAIRS).join(format!("{name}.timing.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let json: serde_json::Value = serde_json::from_str(&text).expect("timing JSON");
        json["median_ms"].as_f64().expect("median_ms")
    };
    for &(before, after, model, bar) in JOB_PAIRS {
        let model = Model::by_name(model).expect("a built-in model");
        let before_ranks = ranks(&format!("{PAIRS}/{before}"));
        let after_ranks = ranks(&format!("{PAIRS}/{after}"));
        let job_before = job(&before_ranks);
        let assessed = job_before
            .assess(std::slice::from_ref(&model), |c, e| {
                model.apply(c, e).map(|_| ())
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(assessed.declined.is_none(), "{:?}", assessed.declined);
        let predicted = assessed.outcome.speedup;
        let (b, a) = (
            job_before.measured().step_ns,
            job(&after_ranks).measured().step_ns,
        );
        let traced = b as f64 / a as f64;
        let timed = untraced(before) / untraced(after);
        let error = |measured: f64| format!("{:+.1}%", (predicted / measured - 1.0) * 100.0);
        let verdict = if (predicted / traced - 1.0).abs() <= bar {
            "met"
        } else {
            "missed"
        };
        let row = format!(
            "| `{before}` → `{after}` | `{}` | ×{predicted:.3} | ×{traced:.3} ({:.3} → {:.3} ms) \
             | {} | ×{timed:.3} | {} | ±{:.0}% traced | {verdict} |",
            model.name(),
            b as f64 / 1e6,
            a as f64 / 1e6,
            error(traced),
            error(timed),
            bar * 100.0,
        );
        assert!(
            readme.contains(&row),
            "the README's row is out of date:\n{row}"
        );
    }
}
