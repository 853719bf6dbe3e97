//! Charts drawn as SVG in Rust: stacked bars for the partitions of a span, line charts (the
//! scaling curve, memory over time) and grouped bars (per-step and per-rank times). No
//! charting library: the shapes are few, and drawing them here keeps the bytes deterministic.

use std::fmt::Write as _;

use super::page::{escape, ms, percent};

/// The colour of each category the report's charts and its timeline name, one meaning per
/// colour on every chart of every page (Okabe–Ito and Tol's colours, readable by colour-blind
/// readers): phases, what the host and the device do, and the kinds of the timeline's tasks.
/// No category is red: red marks the critical path.
/// Labels are matched as the charts write them (`cpu only`, `data loading`).
const CATEGORY_COLORS: &[(&str, &str)] = &[
    // Phases.
    ("forward", "#0072b2"),
    ("backward", "#e69f00"),
    ("optimizer", "#009e73"),
    ("communication", "#cc79a7"),
    ("collective", "#cc79a7"),
    ("exposed", "#cc79a7"),
    ("data loading", "#56b4e9"),
    // Nothing running, or nothing known.
    ("idle", "#dddddd"),
    ("neither", "#dddddd"),
    ("other", "#999999"),
    ("other layers", "#999999"),
    ("unexplained", "#999999"),
    // The host.
    ("cpu", "#8c510a"),
    ("cpu only", "#8c510a"),
    ("cpu_op", "#8c510a"),
    ("host launch", "#dfc27d"),
    ("api_call", "#dfc27d"),
    // The device.
    ("gpu compute", "#332288"),
    ("gpu only", "#332288"),
    ("compute only", "#332288"),
    ("kernel", "#332288"),
    ("overlap", "#882255"),
    ("overlapped", "#882255"),
    ("memory copies", "#f0e442"),
    ("memcpy", "#f0e442"),
    ("memset", "#e7e1a0"),
    ("synchronization", "#000000"),
    ("other stream", "#44aa99"),
];

/// Colours for the parts of a chart whose labels name no category (layers, series), in
/// order, after those its categories took.
/// Tol's bright colours, apart from the categories' (a run, a step, a layer is no phase).
const FREE_COLORS: [&str; 8] = [
    "#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#117733", "#999933",
];

/// The colour a category always has, if `label` names one.
pub(super) fn category_color(label: &str) -> Option<&'static str> {
    CATEGORY_COLORS
        .iter()
        .find(|(name, _)| *name == label)
        .map(|(_, color)| *color)
}

/// The colours of one chart's parts: each category its own, the other labels the free
/// colours its categories left, in order (then gray).
pub(super) fn colors<'a>(labels: impl IntoIterator<Item = &'a str>) -> Vec<&'static str> {
    let labels: Vec<&str> = labels.into_iter().collect();
    let taken: Vec<&str> = labels.iter().filter_map(|l| category_color(l)).collect();
    let mut free = FREE_COLORS.iter().filter(|c| !taken.contains(c));
    labels
        .iter()
        .map(|label| {
            category_color(label)
                .or_else(|| free.next().copied())
                .unwrap_or("#bbbbbb")
        })
        .collect()
}

/// A span split into parts: one horizontal bar, and a legend giving each part's time and
/// share. Parts of zero time are left out of both (they change no sum).
pub(super) fn stacked_bar(parts: &[(String, i64)], total_ns: i64) -> String {
    let parts: Vec<&(String, i64)> = parts.iter().filter(|(_, ns)| *ns > 0).collect();
    let palette = colors(parts.iter().map(|(label, _)| label.as_str()));
    let width = 1000.0;
    let mut out = String::from(
        "<svg class=\"bar\" viewBox=\"0 0 1000 26\" preserveAspectRatio=\"none\" role=\"img\">",
    );
    let sum: i64 = parts.iter().map(|(_, ns)| (*ns).max(0)).sum();
    let scale = if sum > 0 { width / sum as f64 } else { 0.0 };
    let mut x = 0.0;
    for (index, (label, ns)) in parts.iter().enumerate() {
        let w = (*ns).max(0) as f64 * scale;
        if w <= 0.0 {
            continue;
        }
        let _ = write!(
            out,
            "<rect x=\"{x:.2}\" y=\"0\" width=\"{w:.2}\" height=\"26\" fill=\"{}\"><title>{}: {}</title></rect>",
            palette[index],
            escape(label),
            ms(*ns)
        );
        x += w;
    }
    out.push_str("</svg><ul class=\"legend\">");
    for (index, (label, ns)) in parts.iter().enumerate() {
        let share = if total_ns > 0 {
            percent(*ns as f64 / total_ns as f64)
        } else {
            "n/a".to_string()
        };
        let _ = write!(
            out,
            "<li><i style=\"background:{}\"></i>{} <b>{}</b> ({share})</li>",
            palette[index],
            escape(label),
            ms(*ns)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// A line of points.
pub(super) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// A reference line (drawn dashed, under the others, so a series equal to it shows).
    pub reference: bool,
}

/// An axis: its title and the ticks to label (value, text). The axis spans its ticks and
/// the data.
pub(super) struct Axis {
    pub title: String,
    pub ticks: Vec<(f64, String)>,
}

/// A point to mark and label (a peak).
pub(super) struct Marker {
    pub x: f64,
    pub y: f64,
    pub label: String,
}

pub(super) const CHART_W: f64 = 900.0;
pub(super) const CHART_H: f64 = 280.0;
pub(super) const LEFT: f64 = 80.0;
pub(super) const RIGHT: f64 = 20.0;
pub(super) const TOP: f64 = 16.0;
pub(super) const BOTTOM: f64 = 44.0;
/// The width of a tick label's character (11 px text), for telling whether labels fit.
const LABEL_CHAR_W: f64 = 6.5;
/// The height slanted tick labels add below a chart.
const SLANT_EXTRA_H: f64 = 110.0;

/// The range of `values` and `ticks` together; a zero-width range is widened by one.
fn domain(values: impl Iterator<Item = f64>, ticks: &[(f64, String)]) -> (f64, f64) {
    let mut low = f64::INFINITY;
    let mut high = f64::NEG_INFINITY;
    for v in values.chain(ticks.iter().map(|(v, _)| *v)) {
        if v.is_finite() {
            low = low.min(v);
            high = high.max(v);
        }
    }
    if !low.is_finite() {
        return (0.0, 1.0);
    }
    if high <= low {
        high = low + 1.0;
    }
    (low, high)
}

/// Axes, grid lines and tick labels of a plot with these domains.
pub(super) fn frame(
    out: &mut String,
    x: &Axis,
    y: &Axis,
    sx: &dyn Fn(f64) -> f64,
    sy: &dyn Fn(f64) -> f64,
) {
    let _ = write!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" class=\"axis\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\" class=\"axis\"/>",
        b = CHART_H - BOTTOM,
        r = CHART_W - RIGHT
    );
    for (value, text) in &x.ticks {
        let px = sx(*value);
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{b}\" class=\"grid\"/>\
             <text x=\"{px:.1}\" y=\"{ty}\" text-anchor=\"middle\">{}</text>",
            escape(text),
            b = CHART_H - BOTTOM,
            ty = CHART_H - BOTTOM + 16.0
        );
    }
    for (value, text) in &y.ticks {
        let py = sy(*value);
        let _ = write!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{py:.1}\" x2=\"{r}\" y2=\"{py:.1}\" class=\"grid\"/>\
             <text x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{}</text>",
            escape(text),
            r = CHART_W - RIGHT,
            tx = LEFT - 6.0,
            ty = py + 4.0
        );
    }
    let _ = write!(
        out,
        "<text x=\"{cx}\" y=\"{by}\" text-anchor=\"middle\" class=\"title\">{}</text>\
         <text x=\"14\" y=\"{cy}\" text-anchor=\"middle\" class=\"title\" transform=\"rotate(-90 14 {cy})\">{}</text>",
        escape(&x.title),
        escape(&y.title),
        cx = (LEFT + CHART_W - RIGHT) / 2.0,
        by = CHART_H - 6.0,
        cy = (TOP + CHART_H - BOTTOM) / 2.0
    );
}

pub(super) fn legend(names: &[&str], palette: &[&str]) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (name, color) in names.iter().zip(palette) {
        let _ = write!(
            out,
            "<li><i style=\"background:{color}\"></i>{}</li>",
            escape(name)
        );
    }
    out.push_str("</ul>\n");
    out
}

/// Lines through each series' points, with dots at the points (few points) and an optional
/// marker.
pub(super) fn line_chart(series: &[Series], x: &Axis, y: &Axis, marker: Option<&Marker>) -> String {
    let (x0, x1) = domain(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        &x.ticks,
    );
    let (y0, y1) = domain(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        &y.ticks,
    );
    let sx = |v: f64| LEFT + (v - x0) / (x1 - x0) * (CHART_W - LEFT - RIGHT);
    let sy = |v: f64| CHART_H - BOTTOM - (v - y0) / (y1 - y0) * (CHART_H - TOP - BOTTOM);
    let mut out = format!("<svg class=\"chart\" viewBox=\"0 0 {CHART_W} {CHART_H}\" role=\"img\">");
    frame(&mut out, x, y, &sx, &sy);
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    let palette = colors(names.iter().copied());
    // References first: what is drawn later lies on top.
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by_key(|&i| !series[i].reference);
    for index in order {
        let line = &series[index];
        let mut points = String::new();
        for &(px, py) in &line.points {
            let _ = write!(points, "{:.1},{:.1} ", sx(px), sy(py));
        }
        let _ = write!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
            points.trim_end(),
            palette[index],
            if line.reference {
                " stroke-dasharray=\"6 4\""
            } else {
                ""
            }
        );
        if line.points.len() <= 40 {
            for &(px, py) in &line.points {
                let _ = write!(
                    out,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{}\"/>",
                    sx(px),
                    sy(py),
                    palette[index]
                );
            }
        }
    }
    if let Some(marker) = marker {
        let (px, py) = (sx(marker.x), sy(marker.y));
        let anchor = if px > CHART_W * 0.7 { "end" } else { "start" };
        let dx = if anchor == "end" { -8.0 } else { 8.0 };
        let _ = write!(
            out,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"5\" class=\"marker\"/>\
             <text x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"{anchor}\" class=\"marker-label\">{}</text>",
            escape(&marker.label),
            tx = px + dx,
            ty = (py + 4.0).max(TOP + 10.0)
        );
    }
    out.push_str("</svg>\n");
    out.push_str(&legend(&names, &palette));
    out
}

/// Vertical bars, one group per label, one bar per series in each group.
pub(super) fn grouped_bars(
    labels: &[String],
    series: &[(String, Vec<f64>)],
    y: &Axis,
    x_title: &str,
) -> String {
    let (_, y1) = domain(series.iter().flat_map(|(_, v)| v.iter().copied()), &y.ticks);
    let y0 = 0.0;
    let sy = |v: f64| CHART_H - BOTTOM - (v - y0) / (y1 - y0) * (CHART_H - TOP - BOTTOM);
    let groups = labels.len().max(1) as f64;
    let plot_w = CHART_W - LEFT - RIGHT;
    let group_w = plot_w / groups;
    let bar_w = (group_w * 0.8) / series.len().max(1) as f64;
    // Label at most ~30 groups, evenly.
    let every = labels.len().div_ceil(30).max(1);
    let x_axis = Axis {
        title: x_title.to_string(),
        ticks: labels
            .iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0)
            .map(|(i, label)| (i as f64, label.clone()))
            .collect(),
    };
    let sx = |i: f64| LEFT + (i + 0.5) * group_w;
    // Labels wider than their group would overlap: they are then drawn slanted below the
    // axis, each cut to what the extra height holds (the full label on hover).
    let slanted = x_axis
        .ticks
        .iter()
        .any(|(_, label)| label.chars().count() as f64 * LABEL_CHAR_W > group_w * every as f64);
    let extra_h = if slanted { SLANT_EXTRA_H } else { 0.0 };
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {CHART_W} {}\" role=\"img\">",
        CHART_H + extra_h
    );
    if slanted {
        let plain = Axis {
            title: String::new(),
            ticks: x_axis
                .ticks
                .iter()
                .map(|(value, _)| (*value, String::new()))
                .collect(),
        };
        frame(&mut out, &plain, y, &sx, &sy);
        let room = (SLANT_EXTRA_H / LABEL_CHAR_W * 1.2) as usize;
        for (value, label) in &x_axis.ticks {
            let (px, py) = (sx(*value), CHART_H - BOTTOM + 12.0);
            // A slanted label runs left of its bar: never past the chart's left edge, even in
            // a font a third wider than the estimate (cos 40° of each character).
            let left_room = ((px - 4.0) / (LABEL_CHAR_W * 1.35 * 0.766)).max(3.0) as usize;
            let room = room.min(left_room);
            let shown: String = if label.chars().count() > room {
                let head: String = label.chars().take(room.saturating_sub(1)).collect();
                format!("{head}…")
            } else {
                label.clone()
            };
            let _ = write!(
                out,
                "<text x=\"{px:.1}\" y=\"{py:.1}\" text-anchor=\"end\" \
                 transform=\"rotate(-40 {px:.1} {py:.1})\"><title>{}</title>{}</text>",
                escape(label),
                escape(&shown)
            );
        }
        let _ = write!(
            out,
            "<text x=\"{cx}\" y=\"{by}\" text-anchor=\"middle\" class=\"title\">{}</text>",
            escape(&x_axis.title),
            cx = (LEFT + CHART_W - RIGHT) / 2.0,
            by = CHART_H + extra_h - 6.0,
        );
    } else {
        frame(&mut out, &x_axis, y, &sx, &sy);
    }
    let names: Vec<&str> = series.iter().map(|(name, _)| name.as_str()).collect();
    let palette = colors(names.iter().copied());
    for (s, (name, values)) in series.iter().enumerate() {
        for (i, value) in values.iter().enumerate() {
            if !value.is_finite() {
                continue;
            }
            let x = LEFT + i as f64 * group_w + group_w * 0.1 + s as f64 * bar_w;
            let top = sy(value.max(0.0));
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{top:.1}\" width=\"{bar_w:.1}\" height=\"{h:.1}\" fill=\"{}\"><title>{} {}: {value}</title></rect>",
                palette[s],
                escape(name),
                escape(labels.get(i).map_or("", String::as_str)),
                h = (CHART_H - BOTTOM - top).max(0.0)
            );
        }
    }
    out.push_str("</svg>\n");
    out.push_str(&legend(&names, &palette));
    out
}

/// About six round ticks from `low` to `high` (1, 2 or 5 times a power of ten apart),
/// labelled with as many decimals as the step needs.
pub(super) fn nice_ticks(low: f64, high: f64) -> Vec<(f64, String)> {
    if !(low.is_finite() && high.is_finite()) || high <= low {
        return vec![(low, format!("{low}"))];
    }
    let raw = (high - low) / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let mut ticks = Vec::new();
    let first = (low / step).floor();
    for i in 0..12 {
        let value = (first + f64::from(i)) * step;
        ticks.push((value, format!("{value:.decimals$}")));
        if value >= high - step * 1e-9 {
            break;
        }
    }
    ticks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let ticks = nice_ticks(0.0, 9.3);
        let values: Vec<f64> = ticks.iter().map(|t| t.0).collect();
        assert_eq!(values, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let ticks = nice_ticks(0.0, 0.7);
        let labels: Vec<&str> = ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0.0", "0.2", "0.4", "0.6", "0.8"]);
    }

    #[test]
    fn stacked_bar_leaves_out_zero_parts() {
        let parts = vec![
            ("a".to_string(), 3),
            ("b".to_string(), 0),
            ("c".to_string(), 1),
        ];
        let svg = stacked_bar(&parts, 4);
        assert_eq!(svg.matches("<rect").count(), 2);
        assert_eq!(svg.matches("<li>").count(), 2);
        assert!(!svg.contains(">b <b>"));
        assert!(svg.contains("(75.0%)"));
    }

    #[test]
    fn crowded_labels_are_slanted_and_sparse_ones_are_not() {
        let y = Axis {
            title: "ms".to_string(),
            ticks: nice_ticks(0.0, 10.0),
        };
        let series = |n: usize| vec![("before".to_string(), vec![1.0; n])];
        let long: Vec<String> = (0..16)
            .map(|i| format!("aten::cudnn_convolution_backward_weight_{i}"))
            .collect();
        let svg = grouped_bars(&long, &series(16), &y, "op");
        assert_eq!(svg.matches("rotate(-40").count(), 16);
        assert!(svg.contains("<title>aten::cudnn_convolution_backward_weight_3</title>"));
        let short: Vec<String> = ["before", "after"].map(String::from).to_vec();
        let svg = grouped_bars(&short, &series(2), &y, "run");
        assert!(!svg.contains("rotate(-40"));
    }

    #[test]
    fn a_category_has_one_colour_on_every_chart() {
        let one = colors(["forward", "backward", "idle"]);
        let other = colors(["layer1", "idle", "backward", "layer2"]);
        assert_eq!(one[1], other[2]);
        assert_eq!(one[2], other[1]);
        // Labels naming no category take colours no category of their chart took.
        assert_ne!(other[0], other[3]);
        assert!(![other[1], other[2]].contains(&other[0]));
        assert!(![other[1], other[2]].contains(&other[3]));
    }
}
