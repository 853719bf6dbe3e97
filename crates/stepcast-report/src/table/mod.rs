//! The JSON documents of [`crate::json`] rendered as text for a terminal.
//!
//! Text is for people and may change at any time; scripts read the JSON. Tables are at most
//! [`MAX_WIDTH`] columns wide whatever the terminal, so output is the same on a terminal, in a
//! pipe and in a file. Names read from the trace are untrusted: control and bidi characters in
//! them are escaped before they are shown.

mod analyze;
mod compare;
mod info;
mod job;
mod op_model;
mod optimize;
pub mod ranks;
mod replay;
mod whatif;

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};

pub use analyze::{analyze_text, summary_sentences};
pub use compare::compare_text;
pub use info::info_text;
pub use job::{advise_job_text, whatif_job_text};
pub use optimize::optimize_text;
pub use replay::replay_text;
pub(crate) use whatif::record_cell;
pub use whatif::{advise_text, whatif_text};

/// Widest a table may be, in terminal columns.
pub const MAX_WIDTH: u16 = 120;

/// Paragraphs are wrapped to this width.
const PARAGRAPH_WIDTH: usize = 100;

/// A table with `header`; the first `text_columns` columns are left-aligned, the others (which
/// hold numbers) right-aligned.
fn new_table(header: &[&str], text_columns: usize) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(MAX_WIDTH)
        .set_header(header.to_vec());
    for column in table.column_iter_mut().skip(text_columns) {
        column.set_cell_alignment(CellAlignment::Right);
    }
    table
}

/// `table` with its last column, prose after the numbers, wrapped left-aligned.
fn with_prose_last(mut table: Table) -> Table {
    if let Some(column) = table.column_iter_mut().last() {
        column.set_cell_alignment(CellAlignment::Left);
    }
    table
}

/// Appends a titled section to `out`: a blank line, the title, then `body`.
fn push_section(out: &mut String, title: &str, body: &str) {
    out.push('\n');
    out.push_str(title);
    out.push('\n');
    out.push_str(body.trim_end());
    out.push('\n');
}

/// Appends `lines` as a bulleted section, each line wrapped.
fn push_notes(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let body: Vec<String> = lines
        .iter()
        .map(|line| wrap(&format!("- {}", sanitize(line)), "  "))
        .collect();
    push_section(out, title, &body.join("\n"));
}

/// `text` wrapped at spaces to [`PARAGRAPH_WIDTH`] columns, continuation lines starting with
/// `indent`.
fn wrap(text: &str, indent: &str) -> String {
    let body = text.trim_start_matches(' ');
    let mut out = text[..text.len() - body.len()].to_string();
    let mut line_len = out.len();
    let mut first = true;
    for word in body.split(' ').filter(|word| !word.is_empty()) {
        let word_len = word.chars().count();
        if !first && line_len + 1 + word_len > PARAGRAPH_WIDTH {
            out.push('\n');
            out.push_str(indent);
            line_len = indent.chars().count();
        } else if !first {
            out.push(' ');
            line_len += 1;
        }
        first = false;
        out.push_str(word);
        line_len += word_len;
    }
    out
}

/// `text` with control and bidi characters escaped as `\u{..}`: names from a trace file must not
/// move the cursor, clear the screen or reorder what is shown around them.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let is_bidi = matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        );
        if c.is_control() || is_bidi {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Step numbers as a short list with runs collapsed: `1-5, 8, 10-11`.
pub fn step_list(numbers: &[u64]) -> String {
    collapse_runs(numbers.iter().map(|&n| i128::from(n)).collect())
}

/// Device indices as a short list with runs collapsed.
fn device_id_list(ids: &[i64]) -> String {
    collapse_runs(ids.iter().map(|&id| i128::from(id)).collect())
}

fn collapse_runs(mut values: Vec<i128>) -> String {
    values.sort_unstable();
    values.dedup();
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let first = values[i];
        let mut last = first;
        while i + 1 < values.len() && values[i + 1] == last + 1 {
            i += 1;
            last = values[i];
        }
        runs.push(if first == last {
            first.to_string()
        } else if first < 0 {
            format!("{first} to {last}")
        } else {
            format!("{first}-{last}")
        });
        i += 1;
    }
    runs.join(", ")
}

/// `n` with thousands separated by commas.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `n` followed by `noun`, in the plural unless `n` is 1.
pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if let Some(stem) = noun.strip_suffix('y') {
        format!("{} {stem}ies", count(n))
    } else if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) {
        format!("{} {noun}es", count(n))
    } else {
        format!("{} {noun}s", count(n))
    }
}

/// Nanoseconds as milliseconds with three decimals (to the microsecond).
fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Nanoseconds as microseconds with one decimal.
fn us(ns: i64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

/// A relative error as a signed percentage; `n/a` where undefined.
fn signed_percent(error: Option<f64>) -> String {
    error.map_or_else(|| "n/a".to_string(), |e| format!("{:+.2}%", e * 100.0))
}

/// A share in `[0, 1]` as a percentage.
fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A byte count in binary units.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_list_collapses_runs() {
        assert_eq!(step_list(&[5, 1, 2, 3, 8, 10, 11, 3]), "1-3, 5, 8, 10-11");
        assert_eq!(step_list(&[]), "");
        assert_eq!(device_id_list(&[-1, 0, 1, 3]), "-1 to 1, 3");
    }

    #[test]
    fn sanitize_escapes_control_and_bidi_characters() {
        assert_eq!(sanitize("a\u{1b}[2Jb\u{202e}c"), "a\\u{1b}[2Jb\\u{202e}c");
        assert_eq!(sanitize("plain µs"), "plain µs");
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(999), "999");
        assert_eq!(plural(1, "step"), "1 step");
        assert_eq!(plural(2, "policy"), "2 policies");
        assert_eq!(plural(5, "launch"), "5 launches");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(ms(3_147_000), "3.147");
        assert_eq!(signed_percent(Some(-0.0016)), "-0.16%");
        assert_eq!(signed_percent(None), "n/a");
    }

    #[test]
    fn wrap_breaks_long_lines() {
        let text = "word ".repeat(40);
        let wrapped = wrap(&text, "  ");
        assert!(
            wrapped
                .lines()
                .all(|line| line.chars().count() <= PARAGRAPH_WIDTH)
        );
        assert!(wrapped.lines().skip(1).all(|line| line.starts_with("  ")));
        assert_eq!(wrap("  kept indent", ""), "  kept indent");
    }
}
