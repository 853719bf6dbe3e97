//! The op model's roofline (`json::op_model`): each modeled op name as a point at its
//! arithmetic intensity (FLOPs per byte) and achieved TFLOP/s, under the device's roofs — the
//! memory bandwidth's diagonal and each compute peak's ceiling — on log-log axes.

use std::fmt::Write as _;

use super::chart::{BOTTOM, CHART_H, CHART_W, LEFT, RIGHT, TOP, colors, frame, legend};
use super::page::escape;
use crate::json::{OpModelJson, OpThroughputJson};

/// Ops labelled on the chart (the most device time); the others keep their tooltip.
const LABELLED: usize = 6;

/// Tick labels for the powers of ten from `low` to `high` (exponents).
fn decades(low: i32, high: i32) -> Vec<(f64, String)> {
    (low..=high)
        .map(|e| {
            let value = 10f64.powi(e);
            let text = if e < 0 {
                format!("{value:.*}", e.unsigned_abs() as usize)
            } else {
                format!("{value:.0}")
            };
            (f64::from(e), text)
        })
        .collect()
}

/// The roofline chart, or `None` without a datasheet or an op that computes.
pub(super) fn roofline(model: &OpModelJson) -> Option<String> {
    let peaks = model.peaks.as_ref()?;
    let points: Vec<&OpThroughputJson> = model
        .ops
        .iter()
        .filter(|op| op.flops > 0.0 && op.bytes > 0.0 && op.tflops > 0.0)
        .collect();
    if points.is_empty() || peaks.memory_tb_s <= 0.0 {
        return None;
    }
    let mut roofs = vec![("FP32", peaks.fp32_tflops)];
    if let Some(tf32) = peaks.tf32_tflops {
        roofs.push(("TF32", tf32));
    }
    roofs.push(("FP16/BF16", peaks.fp16_tflops));
    let top_peak = roofs.iter().map(|r| r.1).fold(0.0, f64::max);
    let ridge = top_peak / peaks.memory_tb_s;
    let log = |v: f64| v.log10();
    let min_x = points
        .iter()
        .map(|p| log(p.intensity))
        .fold(log(0.1), f64::min);
    let max_x = points
        .iter()
        .map(|p| log(p.intensity))
        .fold(log(ridge * 4.0), f64::max);
    let min_y = points
        .iter()
        .map(|p| log(p.tflops))
        .fold(log(0.1), f64::min);
    let (x0, x1) = (min_x.floor() as i32, max_x.ceil() as i32);
    let (y0, y1) = (min_y.floor() as i32, log(top_peak * 2.0).ceil() as i32);
    let (fx0, fx1, fy0, fy1) = (f64::from(x0), f64::from(x1), f64::from(y0), f64::from(y1));
    let sx = |v: f64| LEFT + (v - fx0) / (fx1 - fx0) * (CHART_W - LEFT - RIGHT);
    let sy = |v: f64| CHART_H - BOTTOM - (v - fy0) / (fy1 - fy0) * (CHART_H - TOP - BOTTOM);
    let mut out = format!(
        "<svg class=\"chart roofline\" viewBox=\"0 0 {CHART_W} {CHART_H}\" role=\"img\" \
         aria-label=\"Roofline of the modeled ops\">"
    );
    let x_axis = super::chart::Axis {
        title: "arithmetic intensity (FLOP per byte moved)".to_string(),
        ticks: decades(x0, x1),
    };
    let y_axis = super::chart::Axis {
        title: "achieved TFLOP/s".to_string(),
        ticks: decades(y0, y1),
    };
    frame(&mut out, &x_axis, &y_axis, &sx, &sy);
    // The memory roof up to the highest peak, then each peak from its own ridge.
    let memory_at = |x: f64| x + log(peaks.memory_tb_s);
    let _ = write!(
        out,
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" class=\"roof\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" class=\"roof-label\">{} TB/s</text>",
        sx(fx0),
        sy(memory_at(fx0).max(fy0)),
        sx(log(ridge)),
        sy(log(top_peak)),
        sx(fx0) + 4.0,
        sy(memory_at(fx0).max(fy0)) - 6.0,
        peaks.memory_tb_s
    );
    for (label, peak) in &roofs {
        let from = log(peak / peaks.memory_tb_s);
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" class=\"roof\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" class=\"roof-label\">{} {} TFLOP/s</text>",
            sx(from),
            sx(fx1),
            sx(fx1) - 4.0,
            sy(log(*peak)) - 4.0,
            label,
            peak,
            y = sy(log(*peak)),
        );
    }
    let mut categories: Vec<&str> = Vec::new();
    for point in &points {
        if !categories.contains(&point.category) {
            categories.push(point.category);
        }
    }
    let palette = colors(categories.iter().copied());
    for (rank, point) in points.iter().enumerate() {
        let color = categories
            .iter()
            .position(|c| *c == point.category)
            .map_or("#999999", |i| palette[i]);
        let (px, py) = (sx(log(point.intensity)), sy(log(point.tflops)));
        let efficiency = point
            .efficiency
            .map_or_else(String::new, |e| format!(", {:.0} % of its roof", e * 100.0));
        let _ = write!(
            out,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" fill=\"{color}\" class=\"op\">\
             <title>{} ({}, {}): {:.2} TFLOP/s at {:.1} FLOP/B{}</title></circle>",
            escape(&point.name),
            point.category,
            point.dtype.unwrap_or("?"),
            point.tflops,
            point.intensity,
            efficiency
        );
        if rank < LABELLED {
            let name = point.name.strip_prefix("aten::").unwrap_or(&point.name);
            let anchor = if px > CHART_W * 0.75 { "end" } else { "start" };
            let dx = if anchor == "end" { -7.0 } else { 7.0 };
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" class=\"point-label\">{}</text>",
                px + dx,
                py + 4.0,
                escape(name)
            );
        }
    }
    out.push_str("</svg>\n");
    out.push_str(&legend(&categories, &palette));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_label_each_power_of_ten() {
        let ticks = decades(-2, 3);
        let texts: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(texts, ["0.01", "0.1", "1", "10", "100", "1000"]);
        assert_eq!(ticks[0].0, -2.0);
    }
}
