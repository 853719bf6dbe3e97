//! Every table of a JSON document as CSV (`--format csv`): for spreadsheets, pandas and
//! other tools. The tables are found in the document itself, so every command's output
//! has them and a field added to a schema appears without code here:
//!
//! - an array of objects is a table (`steps`, `statistics.top_kernels`), one row per element;
//!   nested objects become dotted columns (`host_device.cpu_only_ns`), arrays of numbers or
//!   strings one cell (values joined by `;`), and arrays of objects inside a row a table of
//!   their own (`steps.critical_path_breakdown.by_layer`) whose `parent_row` column is the
//!   row's 0-based index in the parent table;
//! - an object whose values are all numbers (the partitions: `device_time_by_phase`) is a
//!   table of `key,value` rows;
//! - an array of numbers or strings is a one-column table (`value`);
//! - every other scalar is a row of the `summary` table (`field,value`).
//!
//! Columns are in the order the document's objects list their keys; rows in the document's
//! order. Cells are the JSON values as written (numbers exactly, `null` as an empty cell).

use serde_json::{Map, Value};

/// One CSV table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvTable {
    /// Dotted path of the table in the document (`statistics.top_kernels`), or `summary`.
    pub name: String,
    /// The CSV text, header first.
    pub text: String,
}

/// A table being collected: its columns and rows of cells.
struct Collected {
    name: String,
    columns: Vec<String>,
    rows: Vec<Vec<(String, String)>>,
}

/// The tables of `document`, `summary` first, then in document order.
pub fn tables(document: &Value) -> Result<Vec<CsvTable>, csv::Error> {
    let mut summary = Collected {
        name: "summary".to_string(),
        columns: vec!["field".to_string(), "value".to_string()],
        rows: Vec::new(),
    };
    let mut found = Vec::new();
    if let Value::Object(object) = document {
        walk_object(object, "", &mut summary, &mut found);
    }
    let mut out = Vec::with_capacity(found.len() + 1);
    for table in std::iter::once(summary).chain(found) {
        out.push(CsvTable {
            text: write(&table)?,
            name: table.name,
        });
    }
    Ok(out)
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Null => Some(String::new()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn all_numbers(object: &Map<String, Value>) -> bool {
    !object.is_empty() && object.values().all(Value::is_number)
}

fn is_table(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(Value::is_object)
}

/// An object outside any table row.
fn walk_object(
    object: &Map<String, Value>,
    prefix: &str,
    summary: &mut Collected,
    found: &mut Vec<Collected>,
) {
    for (key, value) in object {
        let path = join(prefix, key);
        match value {
            Value::Object(inner) if all_numbers(inner) => {
                let rows = inner
                    .iter()
                    .map(|(k, v)| {
                        vec![
                            ("key".to_string(), k.clone()),
                            ("value".to_string(), scalar(v).unwrap_or_default()),
                        ]
                    })
                    .collect();
                found.push(Collected {
                    name: path,
                    columns: vec!["key".to_string(), "value".to_string()],
                    rows,
                });
            }
            Value::Object(inner) => walk_object(inner, &path, summary, found),
            Value::Array(items) if is_table(items) => array_table(items, path, None, found),
            Value::Array(items) => found.push(Collected {
                name: path,
                columns: vec!["value".to_string()],
                rows: items
                    .iter()
                    .map(|v| vec![("value".to_string(), cell(v))])
                    .collect(),
            }),
            scalar_value => summary.rows.push(vec![
                ("field".to_string(), path),
                (
                    "value".to_string(),
                    scalar(scalar_value).unwrap_or_default(),
                ),
            ]),
        }
    }
}

/// A cell for any value: scalars as written, arrays of scalars joined by `;`, anything else
/// as compact JSON.
fn cell(value: &Value) -> String {
    if let Some(text) = scalar(value) {
        return text;
    }
    match value {
        Value::Array(items) if items.iter().all(|v| scalar(v).is_some()) => items
            .iter()
            .map(|v| scalar(v).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(";"),
        other => other.to_string(),
    }
}

/// A table of the objects `items`; `parent` is the index of the row that holds them.
fn array_table(items: &[Value], name: String, parent: Option<usize>, found: &mut Vec<Collected>) {
    let position = found.len();
    found.push(Collected {
        name: name.clone(),
        columns: Vec::new(),
        rows: Vec::new(),
    });
    let mut columns: Vec<String> = Vec::new();
    let mut rows = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let mut row = Vec::new();
        if let Some(parent) = parent {
            row.push(("parent_row".to_string(), parent.to_string()));
        }
        if let Value::Object(object) = item {
            flatten_row(object, "", &name, index, &mut row, found);
        }
        for (column, _) in &row {
            if !columns.contains(column) {
                columns.push(column.clone());
            }
        }
        rows.push(row);
    }
    found[position].columns = columns;
    found[position].rows = rows;
}

fn flatten_row(
    object: &Map<String, Value>,
    prefix: &str,
    table: &str,
    index: usize,
    row: &mut Vec<(String, String)>,
    found: &mut Vec<Collected>,
) {
    for (key, value) in object {
        let column = join(prefix, key);
        match value {
            Value::Object(inner) => flatten_row(inner, &column, table, index, row, found),
            Value::Array(items) if is_table(items) => {
                let name = format!("{table}.{column}");
                // Rows of every parent row go into one child table.
                match found.iter().position(|t| t.name == name) {
                    Some(existing) => {
                        let mut child = Vec::new();
                        array_table(items, name, Some(index), &mut child);
                        if let Some(table) = child.into_iter().next() {
                            let target = &mut found[existing];
                            for column in table.columns {
                                if !target.columns.contains(&column) {
                                    target.columns.push(column);
                                }
                            }
                            target.rows.extend(table.rows);
                        }
                    }
                    None => array_table(items, name, Some(index), found),
                }
            }
            other => row.push((column, cell(other))),
        }
    }
}

fn write(table: &Collected) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&table.columns)?;
    for row in &table.rows {
        let record = table.columns.iter().map(|column| {
            row.iter()
                .find(|(name, _)| name == column)
                .map_or("", |(_, value)| value.as_str())
        });
        writer.write_record(record)?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|error| csv::Error::from(std::io::Error::other(error.error().to_string())))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_tables_of_a_document() {
        let document = serde_json::json!({
            "schema": "x/1",
            "split": {"a_ns": 1, "b_ns": 2},
            "steps": [
                {"number": 1, "parts": {"x": 3}, "by": [{"name": "p, q", "ns": 5}]},
                {"number": 2, "parts": {"x": 4}, "by": [{"name": "r", "ns": 6}], "tags": [1, 2]}
            ],
            "ids": [7, 8]
        });
        let tables = tables(&document).expect("csv");
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["summary", "ids", "split", "steps", "steps.by"]);
        assert_eq!(tables[0].text, "field,value\nschema,x/1\n");
        assert_eq!(tables[2].text, "key,value\na_ns,1\nb_ns,2\n");
        assert_eq!(tables[3].text, "number,parts.x,tags\n1,3,\n2,4,1;2\n");
        assert_eq!(tables[4].text, "parent_row,name,ns\n0,\"p, q\",5\n1,r,6\n");
    }
}
