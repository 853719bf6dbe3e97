//! Errors as Python sees them: one exception type whose message is the line the CLI prints
//! after `stepcast: error: `.

use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;

// Named for where users meet it: `stepcast.StepcastError`.
create_exception!(
    stepcast,
    StepcastError,
    PyException,
    "A trace that cannot be read, replayed or predicted, or an invalid request; the message is \
     the CLI's one-line error."
);

/// The CLI's message for `error`, as a [`StepcastError`].
pub fn to_py(error: &anyhow::Error) -> PyErr {
    StepcastError::new_err(stepcast_cli::message(error))
}

/// The document as the compact JSON text Python parses.
pub fn to_json(document: &impl serde::Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string(document)?)
}
