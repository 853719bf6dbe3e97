//! `docs/accuracy.md`: every pair of [`pairs`] predicted from its BEFORE trace and held to its
//! AFTER trace and to the steps timed without the profiler, with each model's record in and
//! out of sample (`stepcast::whatif::record`), generated here and checked current.

mod pairs;

use stepcast::compare::{
    CompareError, CompareOptions, FindingKind, Verdict, compare, compare_with,
};

use crate::compare::{H100, Loaded, check_with, forced_comparison, unprofiled_step_ns};
use pairs::*;
use stepcast::whatif::record::TraceKind;

const ACCURACY_MD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/accuracy.md");

/// The pairs of `docs/accuracy.md` a check of `model` holds: (BEFORE, AFTER) under
/// `testdata/kineto/`.
pub(crate) fn pairs_of(model: &str) -> Vec<(&'static str, String)> {
    PAIRS
        .iter()
        .filter(|pair| pair.checks.iter().any(|c| c.model == model))
        .map(|pair| (pair.before, after_path(pair)))
        .collect()
}

/// One row of the table of `fused_optimizer`'s host update priced against the fused op
/// measured, and the ratio; `None` where BEFORE runs no update on the host.
fn fused_op_row(before: &Loaded, before_path: &str, after_path: &str) -> Option<(String, f64)> {
    let (priced_ns, measured_ns) = crate::host_update::fused_op_priced_and_measured(
        &before.trace,
        &before.window,
        after_path,
    )?;
    let ratio = priced_ns as f64 / measured_ns;
    let row = format!(
        "| `{before_path}` → `{}` | {} ms | {:.3} ms | ×{ratio:.2} |\n",
        after_path.trim_start_matches("stepcast/"),
        ms(priced_ns),
        measured_ns / 1e6,
    );
    Some((row, ratio))
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The AFTER trace of `pair` (`after` names its folder for the pair of `kineto/tb_plugin`,
/// its configuration for those recorded here).
fn after_path(pair: &Pair) -> String {
    if pair.after.ends_with(".json.gz") {
        pair.after.to_string()
    } else if pair.timed {
        format!("{H100}/{}.json.gz", pair.after)
    } else {
        pair.after.to_string()
    }
}

fn accuracy_markdown() -> Accuracy {
    let mut noise = String::new();
    for config in [
        "mlp-fp32",
        "resnet-fp32",
        "transformer-fp32",
        "transformer-amp",
    ] {
        let first = unprofiled_step_ns(&format!("{H100}/{config}.json.gz"));
        let second = unprofiled_step_ns(&format!("{H100}/rerun/{config}.rerun.json.gz"));
        noise.push_str(&format!(
            "| `{config}` | {} | {} | {:+.1}% |\n",
            ms(first),
            ms(second),
            (second as f64 / first as f64 - 1.0) * 100.0
        ));
    }
    let cpu_noise = cpu_rerun_rows();
    let mut rows = String::new();
    let mut notes = String::new();
    let mut errors = Vec::new();
    // The figure without the profiler (`trust.without_profiler`) where a pair was timed.
    let mut profiler_rows = String::new();
    let mut profiler_errors: Vec<(f64, f64)> = Vec::new();
    let mut fused_rows = String::new();
    let (mut fused_low, mut fused_high) = (f64::INFINITY, 0.0f64);
    for pair in PAIRS {
        let after_path = after_path(pair);
        let before = Loaded::new(pair.before);
        let after = Loaded::new(&after_path);
        // Each pair is one workload by construction (its script changes one thing).
        let comparison = forced_comparison(&before, &after);
        let unprofiled = pair.timed.then(|| {
            unprofiled_step_ns(pair.before) as f64 / unprofiled_step_ns(&after_path) as f64
        });
        let spread = match interleaved_speedups(pair.before, &after_path) {
            Some(speedups) => format!(
                " (×{:.3}–×{:.3} in {} rounds)",
                speedups[0],
                speedups[speedups.len() - 1],
                speedups.len()
            ),
            None => String::new(),
        };
        if pair.checks.iter().any(|c| c.model == "fused_optimizer")
            && let Some((row, ratio)) = fused_op_row(&before, pair.before, &after_path)
        {
            fused_rows.push_str(&row);
            (fused_low, fused_high) = (fused_low.min(ratio), fused_high.max(ratio));
        }
        for c in pair.checks {
            let mut params = c.params.copied().unwrap_or_default();
            if let Some(from) = c.host_from {
                let config = pair
                    .before
                    .rsplit('/')
                    .next()
                    .unwrap_or(pair.before)
                    .trim_end_matches(".json.gz");
                params.cpu = Some((host_factor(from, config) * 100.0).round() / 100.0);
            }
            let check = check_with(&before, &after, &comparison, c.model, &params);
            let unprofiled_error = unprofiled.map(|u| u / check.predicted_speedup - 1.0);
            if let (Some(u), Some(without)) = (unprofiled, check.trust.without_profiler) {
                let corrected_error = u / without.speedup - 1.0;
                profiler_errors.push((unprofiled_error.unwrap_or(0.0), corrected_error));
                profiler_rows.push_str(&format!(
                    "| `{}` | `{}` | ×{:.3} | ×{:.3}{} | ×{u:.3} | {:+.1}% | {:+.1}% |\n",
                    pair.before,
                    check.model,
                    check.predicted_speedup,
                    without.speedup,
                    if without.upper_side { " †" } else { "" },
                    unprofiled_error.unwrap_or(0.0) * 100.0,
                    corrected_error * 100.0,
                ));
            }
            let bar = c.bar.text();
            match (c.bar, c.bar.met(check.error, unprofiled_error)) {
                (Bar::Missed(_), Some(met)) => assert!(
                    !met,
                    "{} on {}: error {:+.2}% now meets its bar {}: hold it (Bar::Missed → its bar)",
                    c.model,
                    pair.before,
                    check.error * 100.0,
                    c.bar.text(),
                ),
                (_, Some(met)) => assert!(
                    met,
                    "{} on {}: error {:+.2}% (without profiler {:?}) beyond its bar {}",
                    c.model,
                    pair.before,
                    check.error * 100.0,
                    unprofiled_error.map(|e| e * 100.0),
                    c.bar.text(),
                ),
                (_, None) => {}
            }
            let fitted: Vec<&str> =
                stepcast::whatif::record::fitted_on(c.model, pair.before, &after_path).collect();
            let sample = if fitted.is_empty() {
                "yes".to_string()
            } else {
                format!("no: `{}` fitted here", fitted.join("`, `"))
            };
            errors.push(RowError {
                model: c.model,
                kind: TraceKind::of(&before.window.graph),
                in_sample: !fitted.is_empty(),
                error: check.error,
                unprofiled_error,
                predicted_speedup: check.predicted_speedup,
                measured_speedup: comparison.speedup,
                declined: check.trust.declined.is_some(),
                ceiling: matches!(c.bar, Bar::Ceiling(_)),
            });
            if c.direction {
                let gain = |speedup: f64| speedup > 1.0;
                assert_eq!(
                    gain(check.predicted_speedup),
                    gain(comparison.speedup),
                    "{} on {}: predicted ×{:.3}, measured ×{:.3}",
                    c.model,
                    pair.before,
                    check.predicted_speedup,
                    comparison.speedup
                );
                if let Some(u) = unprofiled {
                    assert_eq!(
                        gain(check.predicted_speedup),
                        gain(u),
                        "{} on {} without profiler: predicted ×{:.3}, measured ×{u:.3}",
                        c.model,
                        pair.before,
                        check.predicted_speedup
                    );
                }
            }
            let note = match c.note {
                "" => String::new(),
                text => {
                    // A note said once, for every row it explains.
                    let line = format!("`{}`, {}: {}", c.model, pair.change, text);
                    let n = match notes.lines().position(|l| l.ends_with(&line)) {
                        Some(i) => i + 1,
                        None => {
                            let n = notes.lines().count() + 1;
                            notes.push_str(&format!("{n}. {line}\n"));
                            n
                        }
                    };
                    format!(" ({n})")
                }
            };
            let no_profiler = match (unprofiled, unprofiled_error) {
                (Some(u), Some(e)) => format!("×{u:.3}{spread} | {:+.1}%", e * 100.0),
                _ => "– | –".to_string(),
            };
            // A prediction the model declines is shown, and said to be declined.
            let declined = if check.trust.declined.is_some() {
                ", **declined**"
            } else {
                ""
            };
            rows.push_str(&format!(
                "| `{}` → `{}` | {} | `{}` | ×{:.3} ({} ms){declined} | ×{:.3} ({} → {} ms) | {:+.1}% | {no_profiler} | {bar}{note} | {sample} |\n",
                pair.before,
                match pair.after.strip_prefix("stepcast/") {
                    Some(after) => after.trim_end_matches(".json.gz"),
                    None => pair.after.rsplit('/').nth(1).unwrap_or(pair.after),
                },
                pair.change,
                check.model,
                check.predicted_speedup,
                ms(check.predicted_step_ns),
                comparison.speedup,
                ms(comparison.before.period_ns),
                ms(comparison.after.period_ns),
                check.error * 100.0,
            ));
        }
    }
    let ddp = ddp_rows();
    let memory = crate::memory_trades::accuracy_rows();
    let median_abs = |pick: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = profiler_errors.iter().map(|e| pick(e).abs()).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0) * 100.0
    };
    let (median_traced, median_corrected) = (median_abs(|e| e.0), median_abs(|e| e.1));
    let profiler_count = profiler_errors.len();
    let records = model_records(&errors);
    let rule = held_out_rule(&errors);
    // Fixed after the figures below were first seen (0 losses in 40 offered): a rule that
    // offers a loss more than once in twenty would not be worth its place in the answer.
    assert!(
        rule.offered_losses * 20 <= rule.offered,
        "the held-out rule offers losses: {rule:?}"
    );
    let HeldOutRule {
        offered,
        offered_losses,
        held,
        held_losses,
        held_small,
    } = rule;
    let summary = records_markdown(&records);
    let unrecorded = unrecorded_markdown(&records);
    let markdown = format!(
        "# Prediction accuracy on real before/after pairs\n\
         \n\
         <!-- Generated by `accuracy_table_is_current` in crates/stepcast/tests/it/accuracy/mod.rs: \
         do not edit. Regenerate with `STEPCAST_WRITE_ACCURACY=1 cargo test --release -p stepcast \
         --test it accuracy`. -->\n\
         \n\
         Each row is one model predicted from the BEFORE trace of a real pair and checked against the \
         AFTER trace, as `stepcast compare BEFORE AFTER --model M` does. A trace's step is its \
         steady-state period on the recorded times (the mean time between consecutive steady steps' \
         ends, every step but the first), the measure a what-if predicts (not the median step: \
         where loader workers pace the step their batches arrive in bursts, and on \
         `h200-pairs/loader-workers2` steps of 207 and 21 ms alternate); the predicted step is \
         BEFORE's period divided by the model's predicted speedup; error = predicted / measured − 1 \
         (positive: the model predicted too small a gain). The pairs recorded here on an H100 \
         (`testdata/kineto/stepcast/h100-pairs/`) also carry the same steps timed with the \
         profiler off: the outcome a user gets, and the second error; those recorded on this \
         project's shared 2-core CPU (`testdata/kineto/stepcast/cpu-pairs/`, BEFORE and AFTER \
         timed in interleaved rounds) also the spread of that speedup over the rounds. The \
         test fails when an error leaves its bar or, where marked, when a predicted gain is a \
         measured loss or the reverse (traced and without the profiler); a bar marked \
         **missed** was fixed before the pair was recorded and the model misses it today (the \
         test fails once it meets it). *Out of sample*: no constant of the model was measured \
         or fitted on this pair (`stepcast::whatif::record::FITTED`). `faster_hardware` rows give \
         the host factor as `--cpu`: the median ratio of the same ops' host times between the two \
         machines, measured on the other configurations recorded on both (never the pair's own).\n\
         \n\
         | pair (under `testdata/kineto/`) | change | model | predicted | measured (traced) | error | measured without profiler | error | bar | out of sample |\n\
         |---|---|---|---|---|---|---|---|---|---|\n\
         {rows}\n\
         ## Notes\n\
         \n\
         {notes}\n\
         ## Each model, in sample and out of sample\n\
         \n\
         Per model and kind of BEFORE trace (with device work, or CPU-only: a model acts on \
         kernels in one and on host ops in the other, so a record on one says little of the \
         other), over the rows above: the pairs, those a constant of the model was fitted \
         on (in sample) and the others (out of sample), with the median and largest \
         |error| against AFTER as traced, the out-of-sample pairs where the prediction and the \
         outcome moved the step in opposite directions (each by more than 1 %), and the same \
         errors without the profiler where the pair was timed. `advise` and `whatif` show the \
         record of the trace's kind beside a prediction (`stepcast::whatif::record::RECORDS`, \
         generated with this file and checked against it), and `advise` does not offer as \
         what to try first a gain its model's record cannot tell from its error (the gain \
         within the median out-of-sample error, or the direction wrong on half the pairs: \
         `ModelRecord::cannot_tell`). A model whose out-of-sample pairs all hold it as a \
         ceiling (`faster_cpu`: all host work ÷ 2 against a second intra-op thread) is shown \
         as one (`ModelRecord::ceiling`): its error is how far below its best case the outcome \
         came, not how far off an estimate was.\n\
         \n\
         | model | traces | pairs | in sample | in-sample \\|error\\| (median) | out of sample | out-of-sample \\|error\\| traced, median / max | the other direction | without profiler, median / max |\n\
         |---|---|---|---|---|---|---|---|---|\n\
         {summary}\n\
         Models with no pair yet, whose out-of-sample error is unknown (`advise` shows `none` \
         in their record column):\n\
         \n\
         {unrecorded}\n\
         ### The rule that holds a gain back, held out\n\
         \n\
         `advise` does not offer as what to try first a gain its model's record cannot tell \
         from its error: the predicted speedup times one less the model's median out-of-sample \
         error on that kind of trace is no gain, or the step moved the other way on half or \
         more of those pairs (`ModelRecord::cannot_tell`). Held out, leaving each pair out of \
         its own judge: every predicted gain of the rows above (not declined, not a hardware \
         model's premise) judged on its model's record over the other rows of its kind. Of \
         the {offered} gains the rule offers, {offered_losses} measured a loss (of more than 1 %); \
         of the {held} it holds back, {held_losses} measured a loss and {held_small} more less \
         than a 5 % gain. The \
         rule was written before these figures were computed; the test's limit (at most one \
         offered loss in twenty) was fixed after they were first seen.\n\
         \n\
         ## The fused optimizer's update against the fused op measured\n\
         \n\
         Where the update runs on the host (a CPU-only trace), `fused_optimizer` prices the one \
         fused op that replaces the loop's; AFTER's trace records that op (`_fused_adam_` and \
         kin), so the model is held where it acts, apart from the forward and backward passes \
         that drift between two traces of one program. Per step, priced from BEFORE against \
         measured in AFTER: ×{fused_low:.2} to ×{fused_high:.2} (the test \
         `host_update::the_fused_op_is_priced_near_the_one_measured` holds every pair within \
         ×0.6 to ×1.4, the band fixed before the `xeon/` embedding, LSTM, Adagrad and AMSGrad \
         pairs were recorded). Pricing it by all the loop's ops, as the model did until \
         2026-12-01, gave ×0.82 to ×3.47 on the pairs recorded before them.\n\
         \n\
         | pair (under `testdata/kineto/`) | priced per step | measured per step | priced / measured |\n\
         |---|---|---|---|\n\
         {fused_rows}\n\
         ## The figure without the profiler\n\
         \n\
         Where the profiler's own host cost moves a baseline by 1 % or more, every prediction \
         also gives its baseline and predicted step less that cost (`trust.without_profiler`, \
         and the caveat that begins `the profiler recorded`: `stepcast::whatif::profiler_cost`). \
         Against the pairs timed without the profiler, that figure's speedup and the traced \
         prediction's, each held to the speedup measured without the profiler ({profiler_count} \
         predictions; median |error| {median_traced:.1} % for the traced prediction, \
         {median_corrected:.1} % for the figure without the profiler). The rows' bars hold the \
         traced prediction; these figures are checked here, not fitted: no constant of the \
         estimate is. †: the trace held its CPU tensors (`record_shapes` on a CPU-only run, \
         `cpu-profiler-cost/`), a cost inside its ops the estimate cannot see: both steps \
         without the profiler are upper sides (`upper_side`), and their ratio is bounded \
         neither way.\n\
         \n\
         | BEFORE (under `testdata/kineto/`) | model | predicted (traced) | predicted without the profiler | measured without profiler | error (traced prediction) | error (without the profiler) |\n\
         |---|---|---|---|---|---|---|\n\
         {profiler_rows}\n\
         ## Pairs looked for and left out\n\
         \n\
         - HolisticTraceAnalysis `tests/data/trace_diff/control/control.json.gz` and \
         `test/test.json.gz`: HTA's TraceDiff test inputs, but not one workload with one change: \
         `control` is rank 3 of 8 on an A100, `test` rank 1 of 2 on a V100, and no document says \
         what else differs. No model stands for that honestly.\n\
         - nsys-ai `mfu_2gpu_before.sqlite` (`../shared/traces/nsys/`): no AFTER of it is in the \
         collection.\n\
         - `offload`: its pairs need a GPU and a memory budget; one GPU at a time was lent (15 \
         minutes in all). `gist`'s and `reconstruct_batchnorm`'s pairs are on the CPU \
         (`cpu-gist-pairs/`: the same 16-bit encoding by `saved_tensors_hooks`; \
         `cpu-batchnorm-pairs/`: batch norm fused with its ReLU); GPU pairs of them are still to \
         be recorded.\n\
         \n\
         ## Data-parallel training from one process (`ddp`)\n\
         \n\
         `stepcast whatif BEFORE ddp --gpus N --gpus-per-node N --intra 1.1GB/s` against rank \
         0 of the job folder AFTER (the `mlp` in one process, then under \
         `DistributedDataParallel` over gloo in N, one intra-op thread each, the same batch \
         per process; four processes share the machine's two cores, given as `--cores 2`: \
         each one's host work ×2, `DdpConfig::host_share`), and the same for the transformer, \
         the small CNN and the tiny GPT of `cpu-pairs/record.py`. The link is a declared input \
         measured on the other recorded gloo jobs (`cpu-ddp-pairs/calibrate_gloo.py`), not on \
         these pairs. The gradients are ready at the host tasks holding their \
         `AccumulateGrad` ops, DDP's buckets (1 MiB, then up to 25 MiB) are all-reduced on a \
         worker thread beside the training thread, and the optimizer waits for the last; \
         gloo's CPU time is charged to the training thread only where `--cores` says no core \
         is left for it (a caveat of every such prediction says which).\n\
         \n\
         | pair (under `testdata/kineto/`) | change | predicted | measured (traced) | error | measured without profiler | error | bar |\n\
         |---|---|---|---|---|---|---|---|\n\
         {ddp}\n\
         Where `--cores` says the node's processes take all its cores, each all-reduce's \
         CPU time (its time on the link, times the time-sharing) is taken from the thread that \
         readied its last gradient (`insert::charge_exchange_cpu`): gloo's worker thread has no \
         core of its own. Written after the first three pairs' results were seen: with it the \
         four-process pair's error went from −25.3 % (its bar, ±25 %, missed) to the row \
         above, a met bar that is not a blind one; the two-process rows are predicted as their \
         bars say, without `--cores`. The tiny GPT's pair, recorded after the mechanism was \
         written and its bar committed, is the blind test of it (`--cores 2`). \
         On the quiet machine AFTER's first all-reduce (1.05 MB) took 5.0 ms where the link \
         gives 1.0 (it absorbs the ranks' skew and shares two cores with both training threads), \
         and DDP's own host work (its forward wrapper, the reducer's bucket copies in the \
         backward pass) is not charged: the traced error is −17 %. Without the profiler the \
         step is 11 ms, not 36 (the traced BEFORE's Adam loop carries the profiler's cost per \
         op), so the same exchanges weigh three times as much and the prediction, made from \
         the traced BEFORE, misses by −42 %. With four processes on the two cores (the bar \
         fixed with `--cores` before recording) the traced error was −25.3 % before gloo's CPU \
         time was charged; the exchanges of a group of four, never calibrated here, are what \
         it still leaves out. The \
         loaded machine's pair (load average 3 to 10) ran its two processes on cores other \
         engineers' compilers held. Two more programs were recorded blind, their bars fixed \
         before (`cpu-ddp-pairs/README.md`): on the transformer the prediction misses by \
         −40.7 %, every phase of AFTER's step having run 1.6-1.75× slower, the optimizer's \
         after the last all-reduce too: DDP's gloo work (about 9 ms of CPU a step, measured \
         outside the recorder) took the cores the model leaves to it. Recorded again half an \
         hour later (the row `transformer/rerun`), the same program measured ×0.824 traced \
         and ×0.795 without the profiler, and the model, predicting from that BEFORE, is \
         −10.4 % off, within the bar: \
         the first recording's BEFORE and AFTER were both slower, and the machine's state, \
         not the change, made most of its miss. The small CNN meets its \
         bar with a prediction of ×1.000 (its all-reduces finish behind the backward pass), \
         where the −13 % measured is what the model does not insert: the batch norms' \
         buffers broadcast before every forward pass, DDP's gradient hooks, and the wait for \
         the last all-reduce.\n\
         \n\
         ## Memory: the step's peak with a memory-for-time trade\n\
         \n\
         What `recompute` and `gist` do to the step's peak of allocated memory, predicted from \
         BEFORE's trace with memory events (`profile_memory=True`, `record_shapes=False`) and \
         held to the step peak the same program reached with the change \
         (`testdata/kineto/stepcast/cpu-memory-probe/`, its probe script and bars, fixed before \
         the model was written; the four blind rows probed after it was frozen; \
         `tests/it/memory_trades.rs` holds them). *saves* is the activations' own peak, the \
         figure every memory trade prints; *step peak falls* is read off the recorded memory \
         timeline with the trade's activations moved and everything else as recorded \
         (`models::step_peak`), the figure `optimize`'s memory pass judges a budget on. Bar: \
         within 30 % of the measured fall or 0.5 MiB. Memory, unlike time, measured the same \
         to the byte in every profiled step and on a second run.\n\
         \n\
         | BEFORE (under `testdata/kineto/stepcast/cpu-memory-probe/traces/`) | AFTER (probed) | model | saves | step peak falls (predicted) | measured | bar | blind |\n\
         |---|---|---|---|---|---|---|---|\n\
         {memory}\n\
         ## How much a measured outcome moves between two machines of one kind\n\
         \n\
         The same configurations timed without the profiler on two H100 machines the same day \
         (`stepcast/h100-pairs/` and its `rerun/`): where the host bounds the step, a \
         measured outcome is only as good as this.\n\
         \n\
         | configuration | first H100 (ms) | second H100 (ms) | difference |\n\
         |---|---|---|---|\n\
         {noise}\n\
         ## How much a measured outcome moves between two recordings on this project's CPU\n\
         \n\
         One program recorded twice a minute apart on the 2-core development machine, the same \
         script and protocol, the machine otherwise idle \
         (`stepcast/cpu-loader-pairs/steady/textloader-*` and its `rerun/`): the steady-state \
         period as traced, and the median of the rounds timed \
         without the profiler. A CPU pair's measured speedup is only as good as this; the \
         machine's own pace, timed alone and with the cores shared, is in \
         `cpu-loader-pairs/cores_probe.txt`.\n\
         \n\
         | configuration | first, traced (ms) | again, traced (ms) | difference | first, without profiler (ms) | again, without profiler (ms) | difference |\n\
         |---|---|---|---|---|---|---|\n\
         {cpu_noise}"
    );
    Accuracy {
        markdown,
        records: records_rust(&records),
    }
}

/// Why each built-in model without a pair has none; every model of `Model::NAMES` has a row
/// of the table or a reason here (the test fails on a model with neither, or with both).
const UNRECORDED: &[(&str, &str)] = &[
    (
        "faster_gpu",
        "a GPU k× faster, k the user's: no pair changes the GPU alone. The H100 → H200 pairs \
         changed the host too, and are held to `faster_hardware`, which takes the target's \
         datasheet ratios and a host factor (the rows above)",
    ),
    (
        "faster_copies",
        "copies k× faster: its pair is a change of copy speed alone (pageable → pinned host \
         memory, `pin_memory=True`) on a GPU, not recorded in the device time lent so far",
    ),
    (
        "offload",
        "its pair needs a GPU and a memory budget (activations moved to host memory); on a \
         CPU-only trace it declines, the activations being in host memory already",
    ),
];

/// The models of `Model::NAMES` with no row, each with why ([`UNRECORDED`]), as a list.
/// The text loader's configurations against their rerun a minute later: the traced period and
/// the median step without the profiler of each, as rows of the CPU's rerun table.
fn cpu_rerun_rows() -> String {
    const STEADY: &str = "stepcast/cpu-loader-pairs/steady";
    let change = |a: i64, b: i64| (b as f64 / a as f64 - 1.0) * 100.0;
    let mut rows = String::new();
    for workers in [0, 1, 2, 4] {
        let config = format!("textloader-workers{workers}");
        let first_path = format!("{STEADY}/{config}.json.gz");
        let again_path = format!("{STEADY}/rerun/{config}.json.gz");
        let (first, again) = (Loaded::new(&first_path), Loaded::new(&again_path));
        let comparison = forced_comparison(&first, &again);
        let (traced_first, traced_again) =
            (comparison.before.period_ns, comparison.after.period_ns);
        let (timed_first, timed_again) = (
            unprofiled_step_ns(&first_path),
            unprofiled_step_ns(&again_path),
        );
        rows.push_str(&format!(
            "| `{config}` | {} | {} | {:+.1}% | {} | {} | {:+.1}% |\n",
            ms(traced_first),
            ms(traced_again),
            change(traced_first, traced_again),
            ms(timed_first),
            ms(timed_again),
            change(timed_first, timed_again),
        ));
    }
    rows
}

fn unrecorded_markdown(records: &[Summary]) -> String {
    use stepcast::whatif::Model;
    let recorded = |name: &str| records.iter().any(|s| s.record.model == name);
    let mut out = String::new();
    for &name in Model::NAMES {
        let why = UNRECORDED.iter().find(|(model, _)| *model == name);
        match (recorded(name), why) {
            (true, None) => {}
            (false, Some((_, why))) => out.push_str(&format!("- `{name}`: {why}.\n")),
            (true, Some(_)) => panic!("{name} has pairs now: drop its UNRECORDED reason"),
            (false, None) => panic!("{name} has no pair and no UNRECORDED reason"),
        }
    }
    out
}

/// One model's record and its median and largest |error| without the profiler out of
/// sample (the document shows them; the library keeps the traced ones).
struct Summary {
    record: stepcast::whatif::record::ModelRecord,
    unprofiled: (Option<f64>, Option<f64>),
}

/// One row's error, for the per-model summary.
#[derive(Clone)]
struct RowError {
    model: &'static str,
    /// The kind of BEFORE trace: records are kept per kind.
    kind: TraceKind,
    in_sample: bool,
    error: f64,
    unprofiled_error: Option<f64>,
    predicted_speedup: f64,
    /// As traced.
    measured_speedup: f64,
    /// The model declined the pair's BEFORE (the figures are the replay's).
    declined: bool,
    /// The prediction is held as a ceiling on this pair ([`Bar::Ceiling`]).
    ceiling: bool,
}

impl RowError {
    /// The prediction and the outcome (traced) moved the step in opposite directions, each
    /// beyond the noise that counts a direction: a gain predicted and a loss measured, or the
    /// reverse.
    fn wrong_direction(&self) -> bool {
        let direction = |speedup: f64| {
            let noise = stepcast::whatif::record::DIRECTION_NOISE;
            (speedup > 1.0 + noise) as i8 - (speedup < 1.0 - noise) as i8
        };
        direction(self.predicted_speedup) * direction(self.measured_speedup) < 0
    }
}

/// The rule of `ModelRecord::cannot_tell` (a gain its model's record cannot tell from its
/// error is not offered first), held out: each predicted gain of the rows (not declined, not
/// a hardware model's premise) judged on its model's record over the other rows of its kind,
/// leaving its own pair out.
#[derive(Debug, Default, PartialEq)]
struct HeldOutRule {
    /// Gains the rule would offer (a record that tells them from its error, or none).
    offered: usize,
    /// Of them, measured a loss of more than 1 % (traced).
    offered_losses: usize,
    /// Gains it would hold back.
    held: usize,
    /// Of them, measured a loss.
    held_losses: usize,
    /// Of them, measured no loss and a gain under 5 %.
    held_small: usize,
}

fn held_out_rule(errors: &[RowError]) -> HeldOutRule {
    use stepcast::whatif::Model;
    let mut rule = HeldOutRule::default();
    for (i, row) in errors.iter().enumerate() {
        let hardware = Model::by_name(row.model).is_some_and(|m| m.is_hardware());
        if row.declined || hardware || row.predicted_speedup <= 1.0 {
            continue;
        }
        let others: Vec<RowError> = errors
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, e)| e.clone())
            .collect();
        let held = model_records(&others)
            .iter()
            .find(|s| s.record.model == row.model && s.record.kind == row.kind)
            .and_then(|s| s.record.cannot_tell(row.predicted_speedup))
            .is_some();
        // A loss beyond the noise that counts a direction (as `wrong_direction`).
        let loss = row.measured_speedup < 1.0 - stepcast::whatif::record::DIRECTION_NOISE;
        if held {
            rule.held += 1;
            rule.held_losses += loss as usize;
            rule.held_small += (!loss && row.measured_speedup < 1.05) as usize;
        } else {
            rule.offered += 1;
            rule.offered_losses += loss as usize;
        }
    }
    rule
}

/// The two documents generated from the pairs: `docs/accuracy.md` and the library's table of
/// each model's record (`crates/stepcast/src/whatif/record_table.rs`).
struct Accuracy {
    markdown: String,
    records: String,
}

const RECORD_TABLE_RS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/whatif/record_table.rs");

/// The median and the largest of the absolute values (`None`: none).
fn median_max(values: impl Iterator<Item = f64>) -> (Option<f64>, Option<f64>) {
    let mut abs: Vec<f64> = values.map(f64::abs).collect();
    abs.sort_by(f64::total_cmp);
    if abs.is_empty() {
        return (None, None);
    }
    let n = abs.len();
    let median = if n % 2 == 1 {
        abs[n / 2]
    } else {
        (abs[n / 2 - 1] + abs[n / 2]) / 2.0
    };
    (Some(median), abs.last().copied())
}

/// Each model's record over `errors`, by name and kind of trace; the errors rounded to 0.1 %
/// as the table shows them, so the library's table and the document say the same.
fn model_records(errors: &[RowError]) -> Vec<Summary> {
    let round = |x: Option<f64>| x.map(|x| (x * 1000.0).round() / 1000.0);
    let mut keys: Vec<(&str, TraceKind)> = errors.iter().map(|e| (e.model, e.kind)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(model, kind)| {
            let rows = || {
                errors
                    .iter()
                    .filter(move |e| e.model == model && e.kind == kind)
            };
            let (in_median, _) = median_max(rows().filter(|e| e.in_sample).map(|e| e.error));
            let (out_median, out_max) =
                median_max(rows().filter(|e| !e.in_sample).map(|e| e.error));
            let unprofiled = median_max(
                rows()
                    .filter(|e| !e.in_sample)
                    .filter_map(|e| e.unprofiled_error),
            );
            Summary {
                record: stepcast::whatif::record::ModelRecord {
                    model,
                    kind,
                    pairs: rows().count() as u32,
                    in_sample: rows().filter(|e| e.in_sample).count() as u32,
                    in_sample_median_error: round(in_median),
                    out_of_sample_median_error: round(out_median),
                    out_of_sample_max_error: round(out_max),
                    wrong_direction: rows()
                        .filter(|e| !e.in_sample && e.wrong_direction())
                        .count() as u32,
                    ceiling: rows().filter(|e| !e.in_sample && e.ceiling).count() as u32,
                },
                unprofiled: (round(unprofiled.0), round(unprofiled.1)),
            }
        })
        .collect()
}

fn percent(x: Option<f64>) -> String {
    x.map_or("–".to_string(), |x| format!("{:.1}%", x * 100.0))
}

fn records_markdown(records: &[Summary]) -> String {
    records
        .iter()
        .map(|summary| {
            let (r, (u_median, u_max)) = (&summary.record, &summary.unprofiled);
            let unprofiled = match (u_median, u_max) {
                (Some(_), Some(_)) => format!("{} / {}", percent(*u_median), percent(*u_max)),
                _ => "–".to_string(),
            };
            format!(
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {unprofiled} |\n",
                r.model,
                r.kind.words(),
                r.pairs,
                r.in_sample,
                percent(r.in_sample_median_error),
                r.out_of_sample(),
                match (r.out_of_sample_median_error, r.out_of_sample_max_error) {
                    (Some(_), Some(_)) => format!(
                        "{} / {}",
                        percent(r.out_of_sample_median_error),
                        percent(r.out_of_sample_max_error)
                    ),
                    _ => "unknown".to_string(),
                },
                r.wrong_direction,
            )
        })
        .collect()
}

fn records_rust(records: &[Summary]) -> String {
    let option = |x: Option<f64>| x.map_or("None".to_string(), |x| format!("Some({x:?})"));
    let mut out = String::from(
        "// Generated by `accuracy_table_is_current` in crates/stepcast/tests/it/accuracy/mod.rs from the rows of\n\
         // docs/accuracy.md: do not edit. Regenerate with\n\
         // `STEPCAST_WRITE_ACCURACY=1 cargo test --release -p stepcast --test it accuracy`.\n\
         \n\
         pub const RECORDS: &[ModelRecord] = &[\n",
    );
    for r in records.iter().map(|s| &s.record) {
        out.push_str(&format!(
            "    ModelRecord {{\n        model: {:?},\n        kind: TraceKind::{:?},\n        pairs: {},\n        \
             in_sample: {},\n        in_sample_median_error: {},\n        \
             out_of_sample_median_error: {},\n        out_of_sample_max_error: {},\n        \
             wrong_direction: {},\n        ceiling: {},\n    }},\n",
            r.model,
            r.kind,
            r.pairs,
            r.in_sample,
            option(r.in_sample_median_error),
            option(r.out_of_sample_median_error),
            option(r.out_of_sample_max_error),
            r.wrong_direction,
            r.ceiling,
        ));
    }
    out.push_str("];\n");
    out
}

/// The speedup of each interleaved round, BEFORE's round over AFTER's (sorted), where both
/// were timed in the same rounds (`interleaved_with` in their `.timing.json`).
fn interleaved_speedups(before: &str, after: &str) -> Option<Vec<f64>> {
    let timing = |relative: &str| -> Option<serde_json::Value> {
        let path = super::testdata(relative)
            .with_extension("")
            .with_extension("timing.json");
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    };
    let (b, a) = (timing(before)?, timing(after)?);
    let partners = a["interleaved_with"].as_array()?;
    if !partners.iter().any(|p| p == &b["config"]) {
        return None;
    }
    let rounds = |t: &serde_json::Value| -> Option<Vec<f64>> {
        t["rounds_ms"]
            .as_array()?
            .iter()
            .map(|r| r.as_f64())
            .collect()
    };
    let (b, a) = (rounds(&b)?, rounds(&a)?);
    if b.len() != a.len() || b.is_empty() {
        return None;
    }
    let mut speedups: Vec<f64> = b.iter().zip(&a).map(|(b, a)| b / a).collect();
    speedups.sort_by(f64::total_cmp);
    Some(speedups)
}

/// One `ddp` pair: BEFORE (one process) and its job folder AFTER, and how it is predicted.
struct DdpPair {
    dir: &'static str,
    world: u32,
    /// `--cores`: the node's cores its processes share.
    cores: Option<f64>,
    /// The bar against AFTER as traced (±), and whether it is missed today (fixed before
    /// recording: the test fails once it is met).
    bar: Option<(f64, bool)>,
    /// Why a pair has no bar (with `bar: None`).
    unbarred: &'static str,
}

const DDP_PAIRS: [DdpPair; 7] = [
    DdpPair {
        dir: "stepcast/cpu-pairs",
        world: 2,
        cores: None,
        bar: None,
        unbarred: "none: recorded under a load average of 3 to 10, reported",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs",
        world: 2,
        cores: None,
        bar: Some((0.20, false)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/world4",
        world: 4,
        cores: Some(2.0),
        bar: Some((0.25, false)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/transformer",
        world: 2,
        cores: None,
        bar: Some((0.20, true)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/transformer/rerun",
        world: 2,
        cores: None,
        bar: None,
        unbarred: "none: the row above recorded again, reported",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/cnn",
        world: 2,
        cores: None,
        bar: Some((0.20, false)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/gpt",
        world: 2,
        cores: Some(2.0),
        bar: Some((0.20, false)),
        unbarred: "",
    },
];

/// The `ddp` rows of `docs/accuracy.md`: each pair's prediction (one process → N over gloo,
/// the declared link) against rank 0 of its job folder, traced and without the profiler,
/// each held to its bar.
fn ddp_rows() -> String {
    use stepcast::comm::{Link, Preset, parse_bandwidth};
    use stepcast::whatif::ddp::{DdpConfig, DdpInputs, sweep_with};
    let mut rows = String::new();
    for pair in DDP_PAIRS {
        let dir = pair.dir;
        let job = format!("{dir}/ddp-gloo{}", pair.world);
        let (single, rank0) = (
            format!("{dir}/ddp-single.json.gz"),
            format!("{job}/rank0.json.gz"),
        );
        let (before, after) = (Loaded::new(&single), Loaded::new(&rank0));
        let comparison = forced_comparison(&before, &after);
        let mapping = stepcast::analyze::mapping::map(&before.trace, &before.window);
        let context = stepcast::whatif::Context::new(&before.trace, &before.window, &mapping);
        let baseline = stepcast::whatif::predict(&before.window, &before.window.graph)
            .unwrap_or_else(|e| panic!("{e}"));
        let config = DdpConfig {
            gpus: pair.world,
            gpus_per_node: pair.world,
            intra: Some(Link {
                alpha_ns: Preset::Nvlink3.link().alpha_ns,
                bandwidth_bps: parse_bandwidth("1.1GB/s").expect("a bandwidth"),
            }),
            host_cores: pair.cores,
            ..DdpConfig::default()
        };
        let sweep = sweep_with(&context, &baseline, &[config], &DdpInputs::default())
            .unwrap_or_else(|e| panic!("{single}: {e}"));
        let predicted = sweep.points[0].speedup;
        let error = comparison.speedup / predicted - 1.0;
        let timing = format!("{job}-rank0.json.gz");
        let unprofiled = unprofiled_step_ns(&single) as f64 / unprofiled_step_ns(&timing) as f64;
        let unprofiled_error = unprofiled / predicted - 1.0;
        let spread = interleaved_speedups(&single, &timing)
            .map(|s| {
                format!(
                    " (×{:.3}–×{:.3} in {} rounds)",
                    s[0],
                    s[s.len() - 1],
                    s.len()
                )
            })
            .unwrap_or_default();
        let bar_text = match pair.bar {
            Some((bar, missed)) => {
                let met = error.abs() <= bar;
                assert!(
                    met != missed,
                    "ddp on {single}: error {:+.1}% against its bar ±{:.0}% (missed: {missed}); \
                     update DDP_PAIRS",
                    error * 100.0,
                    bar * 100.0
                );
                let missed = if missed { ": **missed**" } else { "" };
                format!("±{:.0}% traced{missed}", bar * 100.0)
            }
            None => pair.unbarred.to_string(),
        };
        let cores = pair
            .cores
            .map(|c| format!(", `--cores {c}`"))
            .unwrap_or_default();
        rows.push_str(&format!(
            "| `{single}` → `{job}/` | 1 → {} processes{cores} | ×{predicted:.3} | ×{:.3} ({} → {} ms) | {:+.1}% | ×{unprofiled:.3}{spread} | {:+.1}% | {bar_text} |\n",
            pair.world,
            comparison.speedup,
            ms(comparison.before.period_ns),
            ms(comparison.after.period_ns),
            error * 100.0,
            unprofiled_error * 100.0,
        ));
    }
    rows
}

#[test]
fn accuracy_table_is_current() {
    let generated = accuracy_markdown();
    if std::env::var_os("STEPCAST_WRITE_ACCURACY").is_some() {
        std::fs::write(ACCURACY_MD, &generated.markdown)
            .unwrap_or_else(|e| panic!("{ACCURACY_MD}: {e}"));
        std::fs::write(RECORD_TABLE_RS, &generated.records)
            .unwrap_or_else(|e| panic!("{RECORD_TABLE_RS}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(ACCURACY_MD).unwrap_or_default();
    assert!(
        committed == generated.markdown,
        "docs/accuracy.md is out of date: regenerate it with STEPCAST_WRITE_ACCURACY=1 \
         cargo test --release -p stepcast --test it accuracy"
    );
    // The library's record of each model is the same rows' (what `advise` shows).
    let committed = std::fs::read_to_string(RECORD_TABLE_RS).unwrap_or_default();
    assert!(
        committed == generated.records,
        "crates/stepcast/src/whatif/record_table.rs is out of date: regenerate it with \
         STEPCAST_WRITE_ACCURACY=1 cargo test --release -p stepcast --test it accuracy"
    );
}

/// The library's records, as compiled, are those of the committed table: a model's record
/// has its out-of-sample error wherever it has an out-of-sample pair.
#[test]
fn every_model_with_a_pair_has_its_record() {
    use stepcast::whatif::record::{RECORDS, model_record};
    assert!(!RECORDS.is_empty());
    for r in RECORDS {
        assert!(r.pairs >= 1 && r.in_sample <= r.pairs, "{r:?}");
        assert_eq!(
            r.out_of_sample_median_error.is_some(),
            r.out_of_sample() > 0,
            "{r:?}"
        );
        assert_eq!(model_record(r.model, r.kind), Some(r));
    }
    // Each row of docs/accuracy.md names a model the records know, on its kind of trace.
    let committed = std::fs::read_to_string(ACCURACY_MD).unwrap_or_default();
    for pair in PAIRS {
        let kind = TraceKind::of(&Loaded::new(pair.before).window.graph);
        for c in pair.checks {
            assert!(
                model_record(c.model, kind).is_some(),
                "{} has no record on {} traces",
                c.model,
                kind.words()
            );
            assert!(
                committed.contains(&format!("| `{}` |", c.model)),
                "{}",
                c.model
            );
        }
    }
}

/// Every pair of `testdata/` is one workload (compared without force), and each measured
/// speedup comes with an interval that holds its mean and median ratios. Only the pairs on
/// another GPU warn about devices; a change of data type or compilation may warn that little
/// is shared, never refuse.
#[test]
fn every_pair_is_one_workload_and_its_speedup_has_its_spread() {
    for pair in PAIRS {
        let after_path = after_path(pair);
        let before = Loaded::new(pair.before);
        let after = Loaded::new(&after_path);
        // On a CPU, Inductor's C++ replaces the aten ops of a compiled model and no kernel
        // is left to match: `compare` may refuse such a pair (a known limit, said in
        // docs/accuracy.md); forced, it is compared.
        let cpu_compiled = pair.before.starts_with(CPU) && after_path.contains("compiled");
        let comparison = match compare(&before.side(), &after.side()) {
            Err(CompareError::NotOneWorkload { .. }) if cpu_compiled => compare_with(
                &before.side(),
                &after.side(),
                CompareOptions { force: true },
            )
            .unwrap_or_else(|e| panic!("{e}")),
            other => other.unwrap_or_else(|e| panic!("{} → {after_path}: {e}", pair.before)),
        };
        let m = comparison.measured;
        assert!(m.low <= m.high, "{m:?}");
        assert!(m.contains(comparison.speedup), "{}: {m:?}", pair.before);
        assert!(m.contains(m.median_speedup), "{}: {m:?}", pair.before);
        assert_ne!(m.verdict, Verdict::SpreadUnknown);
        let devices = comparison
            .workload
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::Devices);
        // The GPU differs where an H100 trace is compared with an H200 one.
        let other_gpu = pair.before.contains("h100") && after_path.contains("h200");
        assert_eq!(devices, other_gpu, "{after_path}");
        assert!(
            comparison
                .workload
                .findings
                .iter()
                .all(|f| !f.refuses || (cpu_compiled && f.kind == FindingKind::Names)),
            "{after_path}"
        );
    }
}
