//! `analyze`'s section on how close the ops run to the hardware (`json::op_model`).

use super::{ms, new_table, percent, push_section, sanitize, wrap};
use crate::json::AnalyzeJson;

/// Rows of the ops table.
const TOP_ROWS: usize = 10;

/// A category's or phase's share of the modeled time and its achieved rate: TFLOP/s where it
/// computes at least one FLOP per byte it moves, TB/s otherwise.
pub(super) fn total_words(total: &crate::json::OpTotalJson) -> String {
    let rate = if total.bytes > 0.0 && total.flops >= total.bytes {
        format!("{:.2} TFLOP/s", total.tflops)
    } else {
        format!("{:.3} TB/s", total.tb_s)
    };
    format!(
        "{} {} at {rate}",
        sanitize(&total.name),
        percent(total.share)
    )
}

/// The collectives' bandwidth, one line, if the trace has collectives.
fn collectives_line(model: &crate::json::OpModelJson) -> Option<String> {
    if model.collectives.is_empty() {
        return None;
    }
    let parts: Vec<String> = model
        .collectives
        .iter()
        .map(|c| {
            format!(
                "{} over {} ranks ×{} at {:.1} GB/s bus bandwidth ({:.1} GB/s algorithm{})",
                c.collective,
                c.group_size,
                c.instances,
                c.busbw_gb_s,
                c.algbw_gb_s,
                if c.sized_instances < c.instances {
                    format!(", of the {} with recorded sizes", c.sized_instances)
                } else {
                    String::new()
                }
            )
        })
        .collect();
    Some(wrap(
        &format!(
            "Collectives (message bytes over recorded time, their wait for peers included: \
             lower bounds on the links): {}.",
            parts.join("; ")
        ),
        "",
    ))
}

/// The ops with a FLOPs and bytes model, their achieved throughput and efficiency, and the
/// steps' MFU; a trace without recorded shapes gets the one line that says so.
pub(super) fn op_model_section(out: &mut String, analyze: &AnalyzeJson) {
    let model = &analyze.op_model;
    let coverage = &model.coverage;
    if coverage.device_ns == 0 {
        return;
    }
    let title = "How close the ops run to the hardware (FLOPs and bytes from recorded shapes)";
    if coverage.modeled_ns == 0 {
        let why = if coverage.no_shapes_ns > 0 {
            "the trace records no op shapes: profile with `record_shapes=True`"
        } else {
            "no op with device time has a formula (matrix products, convolutions, attention, \
             element-wise, reductions, normalization, softmax, pooling, embeddings, \
             multi-tensor updates)"
        };
        let mut body = wrap(&format!("Not modeled: {why}."), "");
        if let Some(line) = collectives_line(model) {
            body.push('\n');
            body.push_str(&line);
        }
        push_section(out, title, &body);
        return;
    }
    let mut body = wrap(
        &format!(
            "{} of the device's kernel time is modeled ({} ms of {} ms); {} ms of ops without \
             recorded shapes, {} ms of ops without a formula{}. {}",
            percent(coverage.modeled_fraction),
            ms(coverage.modeled_ns),
            ms(coverage.device_ns),
            ms(coverage.no_shapes_ns),
            ms(coverage.no_formula_ns),
            coverage
                .top_unmodeled
                .first()
                .map_or_else(String::new, |top| format!(
                    " (the most: `{}`, {} ms)",
                    sanitize(&top.name),
                    ms(top.ns)
                )),
            match &model.peaks {
                Some(peaks) => format!(
                    "Efficiency is against the {}: {} TFLOP/s FP32, {} FP16/BF16, {} TB/s.",
                    peaks.source, peaks.fp32_tflops, peaks.fp16_tflops, peaks.memory_tb_s
                ),
                None => "No datasheet for this device: throughputs without efficiency.".to_string(),
            }
        ),
        "",
    );
    body.push('\n');
    let mut table = new_table(
        &[
            "op",
            "kind",
            "dtype",
            "count",
            "device ms",
            "TFLOP/s",
            "TB/s",
            "FLOP/B",
            "efficiency",
        ],
        3,
    );
    for op in model.ops.iter().take(TOP_ROWS) {
        table.add_row(vec![
            sanitize(&op.name),
            match op.category {
                "elementwise" => "eltwise",
                "normalization" => "norm",
                "reduction" => "reduce",
                other => other,
            }
            .to_string(),
            op.dtype.unwrap_or("?").to_string(),
            op.instances.to_string(),
            ms(op.device_ns),
            format!("{:.2}", op.tflops),
            format!("{:.3}", op.tb_s),
            format!("{:.1}", op.intensity),
            op.efficiency.map_or("n/a".to_string(), percent),
        ]);
    }
    body.push_str(&table.to_string());
    body.push('\n');
    if model
        .ops
        .iter()
        .any(|op| op.efficiency.is_some_and(|e| e > 1.0))
    {
        body.push_str(&wrap(
            "Above 100 %: the bytes count each recorded input once from memory, so an input \
             passed twice (`addcmul_(g, g)`) or held in the L2 cache reads faster than the \
             memory bandwidth allows.",
            "",
        ));
        body.push('\n');
    }
    let top_layers = &model.layers[..model.layers.len().min(5)];
    for (label, totals) in [
        ("By kind", &model.categories[..]),
        ("By phase", &model.phases[..]),
        ("The layers with the most of it", top_layers),
    ] {
        if totals.is_empty() {
            continue;
        }
        let parts: Vec<String> = totals.iter().map(total_words).collect();
        body.push_str(&wrap(
            &format!("{label} (share of the modeled time): {}.", parts.join(", ")),
            "",
        ));
        body.push('\n');
    }
    if let Some(line) = collectives_line(model) {
        body.push_str(&line);
        body.push('\n');
    }
    let steady: Vec<String> = model
        .steps
        .iter()
        .filter_map(|step| {
            step.mfu
                .map(|mfu| format!("{} {}", step.number, percent(mfu)))
        })
        .collect();
    if !steady.is_empty() {
        body.push_str(&wrap(
            &format!(
                "Model FLOPs utilization by step (the modeled ops' FLOPs over the step, against \
                 the peak of its matrix products' type): {}.",
                steady.join(", ")
            ),
            "",
        ));
        body.push('\n');
    }
    push_section(out, title, &body);
}
