//! Which tables and columns an export has. The schema moves between nsys versions (columns
//! are added, `TARGET_INFO_GPU` and `ENUM_*` tables may be absent from a cut-down file), so
//! the reader asks for what it needs by name and selects `NULL` for an optional column that
//! is not there, never a fixed position.

use rusqlite::Connection;
use rustc_hash::FxHashMap;

/// The tables of an export and their columns.
pub struct Schema {
    tables: FxHashMap<String, Vec<String>>,
}

impl Schema {
    pub fn discover(connection: &Connection) -> rusqlite::Result<Schema> {
        // One statement for every table's columns: an export has up to 150 tables.
        let mut statement = connection.prepare(
            "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p \
             WHERE m.type = 'table'",
        )?;
        let mut rows = statement.query([])?;
        let mut tables: FxHashMap<String, Vec<String>> = FxHashMap::default();
        while let Some(row) = rows.next()? {
            let (table, column): (String, String) = (row.get(0)?, row.get(1)?);
            tables.entry(table).or_default().push(column);
        }
        Ok(Schema { tables })
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    pub fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables
            .get(table)
            .is_some_and(|columns| columns.iter().any(|c| c == column))
    }

    /// The tables' names, sorted (for messages).
    pub fn table_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.tables.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// `SELECT` of `columns` from `table`, in that order: a column the table lacks is selected
    /// as `NULL` when optional (`?` suffix) and makes the whole query `None` when required.
    /// Rows come in the table's own order (`rowid`), so the result is deterministic.
    pub fn select(&self, table: &str, columns: &[&str]) -> Option<String> {
        if !self.has_table(table) {
            return None;
        }
        let mut parts = Vec::with_capacity(columns.len());
        for column in columns {
            let (name, optional) = match column.strip_suffix('?') {
                Some(name) => (name, true),
                None => (*column, false),
            };
            if self.has_column(table, name) {
                parts.push(format!("\"{name}\""));
            } else if optional {
                parts.push("NULL".to_string());
            } else {
                return None;
            }
        }
        Some(format!("SELECT {} FROM \"{table}\"", parts.join(", ")))
    }
}
