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
        let mut names: Vec<String> = Vec::new();
        let mut statement =
            connection.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            names.push(row.get(0)?);
        }
        let mut tables = FxHashMap::default();
        for name in names {
            let mut columns = Vec::new();
            let mut statement = connection.prepare("SELECT name FROM pragma_table_info(?1)")?;
            let mut rows = statement.query([&name])?;
            while let Some(row) = rows.next()? {
                columns.push(row.get::<_, String>(0)?);
            }
            tables.insert(name, columns);
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
