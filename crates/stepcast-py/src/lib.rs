//! `stepcast._native`: the Rust half of stepcast's Python package (`python/stepcast/` is the
//! other half, the API a user sees). Every method runs the same library function as the
//! matching `stepcast` subcommand (`stepcast_cli::jobs`) with the GIL released, and answers
//! with the subcommand's `--json` document as a string, which the Python half parses: the
//! Python results are the CLI's JSON by construction, not by a second serializer.

mod errors;
mod progress;
mod traces;

use pyo3::prelude::*;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add(
        "StepcastError",
        module.py().get_type::<errors::StepcastError>(),
    )?;
    module.add_class::<traces::Trace>()?;
    module.add_class::<traces::Job>()?;
    module.add_function(wrap_pyfunction!(traces::compare, module)?)?;
    module.add_function(wrap_pyfunction!(traces::reduce_trace, module)?)?;
    module.add_function(wrap_pyfunction!(traces::rank_files, module)?)?;
    module.add_function(wrap_pyfunction!(traces::job_inputs, module)?)?;
    module.add_function(wrap_pyfunction!(traces::execution_trace_process, module)?)?;
    module.add("REDUCED_EXTENSION", stepcast_cli::jobs::REDUCED_EXTENSION)?;
    module.add_function(wrap_pyfunction!(csv_tables, module)?)?;
    Ok(())
}

/// Every table of a `--json` document as `(name, CSV text)`, the files `--format csv` writes
/// (`name.csv`): `Result.tables()` and `Result.to_pandas()` read the same tables.
#[pyfunction]
fn csv_tables(document: &str) -> PyResult<Vec<(String, String)>> {
    let value: serde_json::Value = serde_json::from_str(document).map_err(|e| {
        pyo3::exceptions::PyValueError::new_err(format!("not a JSON document: {e}"))
    })?;
    let tables = stepcast_report::csv::tables(&value)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("cannot tabulate: {e}")))?;
    Ok(tables.into_iter().map(|t| (t.name, t.text)).collect())
}
