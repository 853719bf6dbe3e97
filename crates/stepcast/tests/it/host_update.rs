//! `fused_optimizer` where the update runs on the host: what it reads of the update, checked
//! against the program that was recorded (`cpu-optimizer-pairs/record.py`: the layers, so the
//! parameters) and PyTorch's algorithms (the ops per parameter and the tensors each reads and
//! writes), and what it changes in the graph.

use stepcast::analyze::mapping::map;
use stepcast::whatif::models::host_updates;
use stepcast::whatif::{Context, Model, apply_models};

use stepcast::Window;
use stepcast_trace::Trace;

use crate::load;

const PAIRS: &str = "stepcast/cpu-optimizer-pairs";

/// `mlp` of the recording: 16 linear layers 256 → 256 (a weight and a bias each).
const MLP_PARAMETERS: usize = 32;
const MLP_ELEMENTS: i64 = 16 * (256 * 256 + 256);

fn updates_of(config: &str) -> (Option<stepcast::whatif::models::HostUpdates>, f64) {
    let (trace, window) = load(&format!("{PAIRS}/{config}.json.gz"));
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let updates = host_updates(&context);
    let outcome = apply_models(&context, &[Model::FusedOptimizer { factor: 1.0 }])
        .unwrap_or_else(|e| panic!("{config}: {e}"));
    (updates, outcome.speedup)
}

#[test]
fn a_per_tensor_adam_update_is_read_op_by_op() {
    let (updates, _) = updates_of("mlp-adam-loop");
    let updates = updates.expect("an update on the host");
    assert_eq!(updates.optimizer, "Adam");
    assert_eq!(updates.parameters, MLP_PARAMETERS);
    assert_eq!(updates.parameter_elements, MLP_ELEMENTS);
    // `_single_tensor_adam`: lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_ per parameter
    // (the step count's `add_` is on a one-element tensor: bookkeeping).
    assert_eq!(updates.ops_per_step, 7 * MLP_PARAMETERS);
    // Elements each reads and writes per parameter element: lerp_(m, g) 3, mul_(v) 2,
    // addcmul_(v, g, g) 4, sqrt(v) 2, div 2, add_ 2, addcdiv_(p, m, d) 4; the fused kernel
    // reads p, g, m, v and writes p, m, v. (One-element tensor operands, a step's scalars,
    // add a few elements in a million.)
    assert!(
        (updates.loop_passes - 19.0).abs() < 1e-3,
        "{}",
        updates.loop_passes
    );
    assert_eq!(updates.fused_passes, Some(7));
    // The multiply-add ops pace the fused kernel: all but `sqrt` and `div` (15 passes).
    assert!(
        (updates.paced_passes - 15.0).abs() < 1e-3,
        "{}",
        updates.paced_passes
    );
    assert!((updates.traffic_ratio - 7.0 / 15.0).abs() < 1e-4);
    assert!(
        updates.paced_share > 0.0 && updates.paced_share < 1.0,
        "{}",
        updates.paced_share
    );
    for step in &updates.steps {
        assert!(
            step.fused_ns > 0 && step.fused_ns < step.update_ns,
            "{step:?}"
        );
    }
}

#[test]
fn a_foreach_update_takes_its_parameters_from_the_gradients() {
    // PyTorch records no shapes for a `_foreach_` op's lists: the gradients accumulated
    // before the update size them.
    let (updates, speedup) = updates_of("mlp-adam-foreach");
    let updates = updates.expect("an update on the host");
    assert_eq!(updates.parameters, MLP_PARAMETERS);
    assert_eq!(updates.parameter_elements, MLP_ELEMENTS);
    assert!(speedup > 1.0, "{speedup}");
}

#[test]
fn an_sgd_update_with_momentum_keeps_one_state_tensor() {
    let (updates, _) = updates_of("mlp-sgd-loop");
    let updates = updates.expect("an update on the host");
    assert_eq!(updates.optimizer, "SGD");
    // `_single_tensor_sgd` with momentum: mul_(buf) 2, add_(buf, g) 3, add_(p, buf) 3; fused:
    // reads p, g, buf and writes p, buf.
    assert_eq!(updates.ops_per_step, 3 * MLP_PARAMETERS);
    assert!(
        (updates.loop_passes - 8.0).abs() < 1e-3,
        "{}",
        updates.loop_passes
    );
    assert_eq!(updates.fused_passes, Some(5));
    // Every op of it a multiply-add: all pace the fused kernel.
    assert_eq!(updates.paced_passes, updates.loop_passes);
    assert!((updates.paced_share - 1.0).abs() < 1e-9);
}

#[test]
fn an_update_already_fused_is_left_as_recorded() {
    for config in ["mlp-adam-fused", "mlp-sgd-fused"] {
        let (updates, speedup) = updates_of(config);
        assert!(updates.is_none(), "{config}");
        assert_eq!(speedup, 1.0, "{config}");
    }
}

#[test]
fn a_cpu_only_step_gains_what_the_fused_update_saves() {
    // One thread does all the work: the step gains what the update loses, no more, no less.
    let (trace, window) = load(&format!("{PAIRS}/transformer-adamw-loop.json.gz"));
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let updates = host_updates(&context).expect("an update on the host");
    let outcome =
        apply_models(&context, &[Model::FusedOptimizer { factor: 1.0 }]).expect("predicts");
    let steady: Vec<_> = updates
        .steps
        .iter()
        .filter(|s| {
            let step = window.graph.step[s.task.index()] as usize;
            outcome.baseline.steady.contains(&step)
        })
        .collect();
    assert_eq!(steady.len(), outcome.steady_steps);
    let saved_ns: i64 =
        steady.iter().map(|s| s.update_ns - s.fused_ns).sum::<i64>() / steady.len() as i64;
    let gained_ns = outcome.baseline.step_ns - outcome.predicted.step_ns;
    assert!(
        (gained_ns - saved_ns).abs() < saved_ns / 50,
        "gained {gained_ns} ns a step, the update saves {saved_ns}"
    );
}

/// A trace recorded without shapes (`record_shapes=False`, the profiler's default) still has
/// its update read, by the ops' names: `gelumlp` of the recording is 6 linear layers 768 → 768
/// (12 tensors); Adam's loop makes 19 passes per element (above), and the reading counts the
/// step counter's one-element `add_` as a tensor's (2 more) where it took longer than two
/// dispatches. SGD with momentum, read the same way from a job's rank recorded both with and
/// without shapes (`cpu-jobs/tp4dp2`), gets the fewest passes its op names allow (2 per `add_`,
/// against 3 with shapes): never more than with shapes.
#[test]
fn an_update_traced_without_shapes_is_read_by_its_ops_names() {
    let (updates, speedup) = updates_of("gelumlp-adam-loop-noshapes");
    let updates = updates.expect("an update on the host");
    assert!(!updates.shapes);
    assert_eq!(updates.optimizer, "Adam");
    assert_eq!(updates.parameters, 12);
    assert_eq!(updates.parameter_elements, 0);
    assert!(
        (19.0..=21.0).contains(&updates.loop_passes),
        "{}",
        updates.loop_passes
    );
    assert_eq!(updates.fused_passes, Some(7));
    // Less `sqrt`'s and `div`'s 2 each.
    assert!(
        (updates.paced_passes - (updates.loop_passes - 4.0)).abs() < 1e-3,
        "{} of {}",
        updates.paced_passes,
        updates.loop_passes
    );
    assert!(speedup > 1.0, "{speedup}");
    for step in &updates.steps {
        assert!(
            step.fused_ns > 0 && step.fused_ns < step.update_ns,
            "{step:?}"
        );
    }
    let read = |path: &str| {
        let (trace, window) = load(path);
        let mapping = map(&trace, &window);
        host_updates(&Context::new(&trace, &window, &mapping)).expect("an update on the host")
    };
    let with = read("stepcast/cpu-jobs/tp4dp2/rank0.json.gz");
    let without = read("stepcast/cpu-jobs/tp4dp2-noshapes/rank0.json.gz");
    assert!(with.shapes && !without.shapes);
    assert_eq!(
        (with.optimizer.as_str(), without.optimizer.as_str()),
        ("SGD", "SGD")
    );
    assert_eq!(with.parameters, without.parameters);
    assert_eq!(with.fused_passes, without.fused_passes);
    assert!(
        (without.loop_passes - 6.0).abs() < 1e-3 && without.loop_passes <= with.loop_passes,
        "{} without shapes, {} with",
        without.loop_passes,
        with.loop_passes
    );
}

/// The update as the model prices its fused op on BEFORE (`trace`, `window`), and the fused op
/// AFTER ran (its recorded `_fused_*` op, read again from the file with serde_json), per step
/// in ns; `None` where BEFORE runs no update on the host.
pub(crate) fn fused_op_priced_and_measured(
    trace: &Trace,
    window: &Window,
    after: &str,
) -> Option<(i64, f64)> {
    let mapping = map(trace, window);
    let updates = host_updates(&Context::new(trace, window, &mapping))?;
    let (_, priced_ns) = updates.mean_ns();
    let fused_us: Vec<f64> = crate::compare::raw_events(after)
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "cpu_op")
        .filter(|e| e["name"].as_str().is_some_and(|n| n.contains("_fused_")))
        .filter_map(|e| e["dur"].as_f64())
        .collect();
    assert!(!fused_us.is_empty(), "{after}: no fused op");
    Some((
        priced_ns,
        1e3 * fused_us.iter().sum::<f64>() / fused_us.len() as f64,
    ))
}

/// The fused op the model prices, held to the one AFTER ran, on every CPU pair of the model in
/// `docs/accuracy.md`: where the change meets the model directly, a step's error also carrying
/// the forward and backward passes, which drift 10-20 % between two traces of the same
/// program. Pricing the fused kernel by all the loop's ops gave ×0.82 to ×3.47 of the measured
/// op on the 15 pairs recorded first (Adam's `sqrt` slows on zeros in its state: not traffic);
/// by its multiply-add ops, ×0.63 to ×1.22 (written after they were seen). The band is the bar
/// fixed for the pairs recorded after that (`cpu-optimizer-pairs/README.md`).
#[test]
fn the_fused_op_is_priced_near_the_one_measured() {
    let mut held = 0;
    for (before, after) in crate::accuracy::pairs_of("fused_optimizer") {
        let (trace, window) = load(before);
        let Some((priced_ns, measured_ns)) = fused_op_priced_and_measured(&trace, &window, &after)
        else {
            continue;
        };
        let ratio = priced_ns as f64 / measured_ns;
        assert!(
            (0.6..=1.4).contains(&ratio),
            "{before} → {after}: the fused op priced at {:.3} ms a step, measured {:.3} ms \
             (×{ratio:.2})",
            priced_ns as f64 / 1e6,
            measured_ns / 1e6
        );
        held += 1;
    }
    assert_eq!(held, 19, "the CPU pairs of fused_optimizer");
}

/// The loop's out-of-place results (`sqrt`, `div`) as large as a 25.6 MB embedding table are
/// a cost the fused update removes outside the update too: the process faulted 18 700 pages a
/// step with the loop and none fused (`cpu-optimizer-pairs/faults_per_step.py`), and a caveat
/// says the model does not charge it. The MLP's 65 k-element results get none.
#[test]
fn large_temporaries_of_the_loop_are_named_as_an_uncharged_cost() {
    let caveats_of = |config: &str| {
        let (trace, window) = load(&format!("{PAIRS}/{config}.json.gz"));
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let updates = host_updates(&context).expect("an update on the host");
        (
            updates.largest_temporary_elements,
            Model::FusedOptimizer { factor: 1.0 }.caveats(&context),
        )
    };
    let (largest, caveats) = caveats_of("xeon/embmlp-adam-loop");
    // `EmbeddingMlp`: a 50 000 × 128 table.
    assert_eq!(largest, 50_000 * 128);
    assert!(
        caveats
            .iter()
            .any(|c| c.contains("page faults") && c.contains("6400000")),
        "{caveats:?}"
    );
    let (largest, caveats) = caveats_of("mlp-adam-loop");
    assert_eq!(largest, 256 * 256);
    assert!(
        !caveats.iter().any(|c| c.contains("page faults")),
        "{caveats:?}"
    );
}

/// Horovod's `DistributedOptimizer.step` wraps the optimizer's, under the same name
/// (`Optimizer.step#SGD.step`): its range waits for each gradient's allreduce (a `set_` of the
/// parameter's gradient as each completes, tens of ms apart on rank 1) and then holds the
/// optimizer's own range with the update. The wait is no part of the update, so what the fused
/// op replaces is within the innermost ranges, checked against the trace's own ranges.
#[test]
fn a_wait_for_the_gradients_inside_a_wrapping_step_is_no_part_of_the_update() {
    for rank in ["rank0", "rank1"] {
        let (trace, window) = load(&format!(
            "../horovod/gloo_mlp_2proc/{rank}.pt.trace.json.gz"
        ));
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let updates = host_updates(&context).expect("an update on the host");
        let ranges: Vec<(i64, i64)> = trace
            .events
            .iter()
            .filter(|e| trace.name(e.name).starts_with("Optimizer.step#"))
            .map(|e| (e.start_ns, e.end_ns()))
            .collect();
        let wraps = |&(s, e): &(i64, i64)| {
            ranges
                .iter()
                .any(|&(s2, e2)| (s2, e2) != (s, e) && s <= s2 && e2 <= e)
        };
        let innermost: Vec<i64> = ranges
            .iter()
            .filter(|r| !wraps(r))
            .map(|&(s, e)| e - s)
            .collect();
        assert!(ranges.iter().any(wraps), "{rank}: no wrapping range");
        let longest_ns = innermost.iter().copied().max().unwrap_or(0);
        // SGD without momentum: one `add_` per parameter, 4 layers' weights and biases.
        assert_eq!(updates.ops_per_step, 8, "{rank}");
        for step in &updates.steps {
            assert!(
                step.update_ns <= longest_ns,
                "{rank}: an update of {} ns, the longest innermost range {longest_ns} ns",
                step.update_ns
            );
        }
        let outcome = apply_models(&context, &[Model::FusedOptimizer { factor: 1.0 }])
            .unwrap_or_else(|e| panic!("{rank}: {e}"));
        assert!(
            outcome.baseline.step_ns - outcome.predicted.step_ns <= longest_ns,
            "{rank}: saves {} ns a step, the update takes at most {longest_ns}",
            outcome.baseline.step_ns - outcome.predicted.step_ns
        );
    }
}
