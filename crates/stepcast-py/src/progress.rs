//! Progress reported to a Python callable, `callback(stage, done, total)`.

use std::sync::Mutex;

use pyo3::prelude::*;
use stepcast_cli::jobs::Progress;

/// Calls back into Python from the working thread (taking the GIL for the call only). An
/// exception raised by the callback cannot stop the work midway: the first one is kept and
/// raised when the work returns.
pub struct Callback {
    callback: Option<Py<PyAny>>,
    raised: Mutex<Option<PyErr>>,
}

impl Callback {
    pub fn new(callback: Option<Py<PyAny>>) -> Callback {
        Callback {
            callback,
            raised: Mutex::new(None),
        }
    }

    /// The first exception the callback raised, if any.
    pub fn finish(self) -> PyResult<()> {
        match self.raised.into_inner() {
            Ok(Some(error)) => Err(error),
            _ => Ok(()),
        }
    }
}

impl Progress for Callback {
    fn update(&self, stage: &str, done: usize, total: usize) {
        let Some(callback) = &self.callback else {
            return;
        };
        let Ok(mut raised) = self.raised.lock() else {
            return;
        };
        if raised.is_some() {
            return;
        }
        if let Err(error) = Python::attach(|py| callback.call1(py, (stage, done, total))) {
            *raised = Some(error);
        }
    }
}
