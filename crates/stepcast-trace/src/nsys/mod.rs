//! NVIDIA Nsight Systems SQLite exports (`nsys export --type sqlite`), read-only.
//!
//! What is read (`docs/formats.md` gives every column and the semantics assumed): CUPTI
//! kernels, copies and memsets (device, stream, correlation id), CUDA runtime and driver calls
//! (`CUPTI_ACTIVITY_KIND_RUNTIME`, thread, correlation id), `..._SYNCHRONIZATION` records (with
//! `..._CUDA_EVENT` for the stream an event was recorded on), NVTX push/pop and start/end
//! ranges (PyTorch's `emit_nvtx` `aten::` ranges as ops, other ranges as annotations, steps from
//! `ProfilerStep#N` ranges or [`ReadOptions::step_range`]), thread names, and the GPUs of
//! `TARGET_INFO_GPU` where the export has it. A file holds every process of the capture: each
//! process with device work becomes its own [`Trace`] (one rank each).
//!
//! The schema is discovered (`schema.rs`), never assumed: an optional table or column may be
//! absent. Strings are `StringIds` ids (older exports wrote some inline: both are read).

mod build;
mod occupancy;
mod schema;

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::ReadOptions;
use crate::detect::Source;
use crate::error::ReadError;
use crate::model::Trace;
use schema::Schema;

/// The tables whose rows are device work: a file with none of them recorded no CUDA trace.
const DEVICE_TABLES: [&str; 3] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
];

/// The detection table's entry point.
pub fn read_source(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    if source.bytes.is_some() {
        return Err(ReadError::NotRead {
            path: source.path.to_path_buf(),
            format: "Nsight Systems SQLite export",
            hint: "read it from a file instead of from memory",
        });
    }
    if source.gzip {
        return Err(ReadError::NotRead {
            path: source.path.to_path_buf(),
            format: "gzip-compressed SQLite database",
            hint: "decompress it first (gunzip): SQLite is read in place",
        });
    }
    read(source.path, options)
}

/// Reads every process with device work in the export at `path`, in process-id order.
pub fn read(path: &Path, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let sqlite = |cause: rusqlite::Error| ReadError::Sqlite {
        path: path.to_path_buf(),
        cause: cause.to_string(),
    };
    // Read-only, and without touching the file's journal: an export is never written.
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    // A corrupt or truncated file fails here, on its first page, or in a query below.
    let schema = Schema::discover(&connection).map_err(sqlite)?;
    let is_nsys = ["StringIds", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"]
        .iter()
        .chain(DEVICE_TABLES.iter())
        .any(|table| schema.has_table(table));
    if !is_nsys {
        let names = schema.table_names();
        return Err(ReadError::NotNsys {
            path: path.to_path_buf(),
            detail: if names.is_empty() {
                "it has no tables".to_string()
            } else {
                format!(
                    "none of its tables ({}{}) is one nsys writes (StringIds, \
                     CUPTI_ACTIVITY_KIND_KERNEL, NVTX_EVENTS, ...)",
                    names.iter().take(6).copied().collect::<Vec<_>>().join(", "),
                    if names.len() > 6 { ", ..." } else { "" }
                )
            },
        });
    }
    if let Some(missing) = missing_device_table(&connection, &schema, path) {
        return Err(missing);
    }
    let input_bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let traces = build::read_processes(&connection, &schema, options, path, input_bytes)?;
    if traces.is_empty() {
        let present: Vec<&str> = DEVICE_TABLES
            .iter()
            .copied()
            .filter(|t| schema.has_table(t))
            .collect();
        return Err(ReadError::NoCudaTrace {
            path: path.to_path_buf(),
            detail: if present.is_empty() {
                "it has no CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY or _MEMSET table".to_string()
            } else {
                format!("its {} tables hold no readable row", present.join(", "))
            },
        });
    }
    Ok(traces)
}

/// Each device table and the runtime calls whose records it holds (SQL `LIKE` patterns over
/// the calls' names), in words.
const DEVICE_RECORDS: &[(&str, &[&str], &str)] = &[
    (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        &[
            "cudaLaunchKernel%",
            "cudaLaunchCooperativeKernel%",
            "cuLaunchKernel%",
            "cuLaunchCooperativeKernel%",
            "cudaGraphLaunch%",
            "cuGraphLaunch%",
        ],
        "kernel launches",
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        &["cudaMemcpy%", "cuMemcpy%"],
        "copies",
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMSET",
        &["cudaMemset%", "cuMemset%"],
        "memsets",
    ),
];

/// An export whose runtime table records calls whose device records have no table (an export
/// made with some tables left out): read as it is, it would replay as if that work never ran.
/// `None` where every such table is present, or the runtime calls cannot be counted.
fn missing_device_table(
    connection: &Connection,
    schema: &Schema,
    path: &Path,
) -> Option<ReadError> {
    if !schema.has_table("CUPTI_ACTIVITY_KIND_RUNTIME") || !schema.has_table("StringIds") {
        return None;
    }
    for &(table, patterns, what) in DEVICE_RECORDS {
        if schema.has_table(table) {
            continue;
        }
        let like = vec!["s.value LIKE ?"; patterns.len()].join(" OR ");
        let sql = format!(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s \
             ON r.nameId = s.id WHERE {like}"
        );
        let calls: i64 = connection
            .query_row(&sql, rusqlite::params_from_iter(patterns.iter()), |row| {
                row.get(0)
            })
            .ok()?;
        if calls > 0 {
            return Some(ReadError::NsysTableMissing {
                path: path.to_path_buf(),
                table,
                calls: u64::try_from(calls).unwrap_or_default(),
                what,
            });
        }
    }
    None
}
