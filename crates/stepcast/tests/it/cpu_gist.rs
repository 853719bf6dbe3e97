//! `gist` on CPU-only traces (`testdata/kineto/stepcast/cpu-gist-pairs/`): the passes it
//! inserts, their bound, and the memory it says it saves held to what the recorded program's
//! own `saved_tensors_hooks` counted (each BEFORE's `.timing.json`).

use stepcast::graph::TaskKind;
use stepcast::whatif::{Model, apply_models};

use crate::whatif::{context, load_mapped};

/// Each program's BEFORE (the `rerun/` one is the same program recorded again).
const BEFORE: [&str; 5] = [
    "stepcast/cpu-gist-pairs/bigcnn-base",
    "stepcast/cpu-gist-pairs/bigresmlp-base",
    "stepcast/cpu-gist-pairs/rerun/bigresmlp-base",
    "stepcast/cpu-gist-pairs/biggpt-base",
    "stepcast/cpu-gist-pairs/bigtransformer-base",
];

/// The bytes the recording's hooks saw in one step: (FP32 activations, of them stashed in
/// FP16): in BEFORE's timing the hooks only counted, so the second is the first; AFTER's
/// gives the stash.
fn hooks_bytes(before: &str) -> (i64, i64) {
    let read = |stem: &str| -> serde_json::Value {
        let path = crate::testdata(&format!("{stem}.timing.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
    };
    let field = |v: &serde_json::Value, key: &str| {
        v[key]
            .as_i64()
            .unwrap_or_else(|| panic!("{before}: no {key}"))
    };
    let base = read(before);
    let gist = read(&before.replace("-base", "-gist"));
    (
        field(&base, "activation_bytes_fp32"),
        field(&gist, "activation_bytes_stashed"),
    )
}

/// On each CPU-only BEFORE, `gist --fraction 1` is not declined; it inserts an encode and a
/// decode host op per encoded forward op and step, nothing on a device, removes nothing, and
/// slows the step by at most what it inserted. The activations it counts (recorded shapes,
/// views and additions keeping nothing) are within 30 % of what the hooks saw, and the memory
/// it saves within 30 % of what the stash gave back (the bar of `cpu-gist-pairs/README.md`).
#[test]
fn gist_on_a_cpu_trace_inserts_host_passes_and_saves_what_the_hooks_measured() {
    for before in BEFORE {
        let loaded = load_mapped(&format!("{before}.json.gz"));
        let context = context(&loaded);
        let model = Model::Gist { fraction: 1.0 };
        assert_eq!(model.outside_domain(&context), None, "{before}");
        let outcome =
            apply_models(&context, std::slice::from_ref(&model)).unwrap_or_else(|e| panic!("{e}"));
        let memory = model.memory_effect(&context).expect("a memory trade");
        let steps = outcome.steady_steps;
        assert!(memory.units > 0, "{before}");
        assert_eq!(outcome.changes.removed, 0, "{before}");
        assert_eq!(outcome.changes.added, 2 * memory.units * steps, "{before}");
        let g = &outcome.graph;
        let original = loaded.window.graph.task_count();
        let inserted: Vec<usize> = (original..g.task_count()).collect();
        assert!(
            inserted.iter().all(|&t| g.kind[t] == TaskKind::CpuOp),
            "{before}: a device task inserted"
        );
        let inserted_ns: i64 = inserted.iter().map(|&t| g.dur_ns[t]).sum();
        let slower = outcome.predicted.step_ns - outcome.baseline.step_ns;
        assert!(slower > 0, "{before}");
        assert!(
            slower <= inserted_ns / steps as i64 + 1,
            "{before}: {slower} > {inserted_ns} / {steps}"
        );
        let (fp32, stashed) = hooks_bytes(before);
        let within =
            |model: i64, measured: i64| (model as f64 / measured as f64 - 1.0).abs() <= 0.30;
        assert!(
            within(memory.chosen_bytes, fp32),
            "{before}: activations {} against {fp32} the hooks saw",
            memory.chosen_bytes
        );
        assert!(
            within(memory.saved_bytes, fp32 - stashed),
            "{before}: saves {} against {} stashed less",
            memory.saved_bytes,
            fp32 - stashed
        );
    }
}

/// Where no forward op of one plain element-wise pass works on a tensor of 1 MiB or more, the
/// encoding has no price on the trace and `gist` declines, saying why: the CPU MLP of
/// `cpu-recompute-pairs` (batch 64 × width 256: 64 KiB tensors).
#[test]
fn gist_declines_a_cpu_trace_it_cannot_price() {
    let loaded = load_mapped("stepcast/cpu-recompute-pairs/mlp-base.json.gz");
    let why = Model::Gist { fraction: 1.0 }
        .outside_domain(&context(&loaded))
        .expect("declined");
    assert!(why.contains("1 MiB"), "{why}");
}
