//! The page around the sections: one HTML document with its styles and script inlined, a
//! navigation bar, and the sections in order. Also the small builders every section uses:
//! escaping and sortable tables.

use std::fmt::Write as _;

/// The stylesheet, inlined into every report (no network: the report opens offline).
const STYLE: &str = include_str!("report.css");
/// The script (timeline zoom and hover, table sorting, the load check the browser test
/// reads), inlined likewise.
const SCRIPT: &str = include_str!("report.js");

/// One section of a report: an anchor, a title, and its HTML.
pub(super) struct Section {
    pub id: &'static str,
    pub title: String,
    pub body: String,
}

/// A whole report.
pub(super) struct Page {
    pub title: String,
    /// One line under the title: what the report is about.
    pub subtitle: String,
    pub sections: Vec<Section>,
}

impl Page {
    /// The document. The same page always renders to the same bytes (no clock, no random
    /// ids).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(
            64 * 1024 + self.sections.iter().map(|s| s.body.len()).sum::<usize>(),
        );
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(out, "<style>\n{STYLE}</style>\n</head>\n<body>");
        let _ = writeln!(
            out,
            "<header><h1>{}</h1><p class=\"sub\">{}</p><nav>",
            escape(&self.title),
            escape(&self.subtitle)
        );
        for section in &self.sections {
            let _ = write!(
                out,
                "<a href=\"#{}\">{}</a>",
                section.id,
                escape(&section.title)
            );
        }
        out.push_str("</nav></header>\n<main>\n");
        for section in &self.sections {
            let _ = writeln!(
                out,
                "<section id=\"{}\" class=\"card\"><h2>{}</h2>\n{}</section>",
                section.id,
                escape(&section.title),
                section.body
            );
        }
        let _ = writeln!(
            out,
            "</main>\n<footer>Written by stepcast {}. Self-contained: no network needed.</footer>",
            env!("CARGO_PKG_VERSION")
        );
        let _ = writeln!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>");
        out
    }
}

/// `text` with the characters HTML gives a meaning escaped (also safe inside attributes).
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A paragraph of escaped text.
pub(super) fn paragraph(text: &str) -> String {
    format!("<p>{}</p>\n", escape(text))
}

/// A note in small print (how far a figure can be trusted, where it comes from).
pub(super) fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", escape(text))
}

/// A table cell: the text shown and, for a number, the value the column sorts by.
pub(super) struct Cell {
    text: String,
    sort: Option<f64>,
    /// Shown on hover: the full text of a shortened one.
    title: Option<String>,
    /// Folded under `text` (a `<details>` list), shown on a click: long prose such as a
    /// prediction's caveats, which would otherwise fill the table.
    folded: Vec<String>,
}

impl Cell {
    /// A text cell, sorted as text.
    pub fn text(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            sort: None,
            title: None,
            folded: Vec::new(),
        }
    }

    /// `summary` (`3 caveats`) with `items` folded under it; `none` without items.
    pub fn folded(summary: impl Into<String>, items: Vec<String>) -> Cell {
        Cell {
            text: if items.is_empty() {
                "none".to_string()
            } else {
                summary.into()
            },
            sort: None,
            title: None,
            folded: items,
        }
    }

    /// A shortened name, its full text shown on hover (where they differ).
    pub fn named(short: impl Into<String>, full: &str) -> Cell {
        let short = short.into();
        Cell {
            title: (short != full).then(|| full.to_string()),
            text: short,
            sort: None,
            folded: Vec::new(),
        }
    }

    /// A number shown as `text`, sorted by `value`.
    pub fn number(text: impl Into<String>, value: f64) -> Cell {
        Cell {
            text: text.into(),
            sort: value.is_finite().then_some(value),
            title: None,
            folded: Vec::new(),
        }
    }

    /// Milliseconds with three decimals, sorted by nanoseconds.
    pub fn ms(ns: i64) -> Cell {
        Cell::number(ms(ns), ns as f64)
    }
}

/// A table whose columns sort on a click of their header (`report.js`).
pub(super) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let mut out = String::from("<div class=\"scroll\"><table class=\"sortable\"><thead><tr>");
        for name in &self.header {
            let _ = write!(out, "<th>{}</th>", escape(name));
        }
        out.push_str("</tr></thead><tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for cell in row {
                match cell.sort {
                    Some(value) => {
                        let _ = write!(
                            out,
                            "<td class=\"num\" data-v=\"{value}\">{}</td>",
                            escape(&cell.text)
                        );
                    }
                    None if !cell.folded.is_empty() => {
                        let _ = write!(
                            out,
                            "<td><details><summary>{}</summary><ul>",
                            escape(&cell.text)
                        );
                        for item in &cell.folded {
                            let _ = write!(out, "<li>{}</li>", escape(item));
                        }
                        out.push_str("</ul></details></td>");
                    }
                    None => match &cell.title {
                        Some(title) => {
                            let _ = write!(
                                out,
                                "<td title=\"{}\">{}</td>",
                                escape(title),
                                escape(&cell.text)
                            );
                        }
                        None => {
                            let _ = write!(out, "<td>{}</td>", escape(&cell.text));
                        }
                    },
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
        out
    }
}

/// Nanoseconds as milliseconds with three decimals.
pub(super) fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// A share in `[0, 1]` as a percentage with one decimal.
pub(super) fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// A relative error as a signed percentage; `n/a` where undefined.
pub(super) fn signed_percent(error: Option<f64>) -> String {
    error.map_or_else(|| "n/a".to_string(), |e| format!("{:+.2}%", e * 100.0))
}

/// A speedup as `1.234×`; `n/a` where undefined.
pub(super) fn speedup(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"))
}

/// Bytes in binary units (negative counts, which no peak has, as 0).
pub(super) fn bytes(n: i64) -> String {
    crate::table::bytes(n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_name_keeps_its_full_text_on_hover() {
        let mut table = Table::new(&["name"]);
        table.row(vec![Cell::named("k<float>", "void ns::k<float>(int)")]);
        table.row(vec![Cell::named("same", "same")]);
        let html = table.render();
        assert!(
            html.contains("<td title=\"void ns::k&lt;float&gt;(int)\">k&lt;float&gt;</td>"),
            "{html}"
        );
        assert!(html.contains("<td>same</td>"), "{html}");
    }

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn numbers_sort_by_value() {
        let mut table = Table::new(&["name", "time"]);
        table.row(vec![Cell::text("k"), Cell::ms(1_500_000)]);
        let html = table.render();
        assert!(html.contains("data-v=\"1500000\">1.500 ms</td>"), "{html}");
    }
}
