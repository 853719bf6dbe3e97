//! The work behind each `stepcast` subcommand, as a library: read the input, run the engine and
//! return the JSON document (`stepcast_report::json`). The binary renders it as text or JSON;
//! the Python package (`crates/stepcast-py`) hands it to Python as a dict. Both front ends call
//! these functions, so the same input gives them the same document and the same error message.

pub mod error;
pub mod jobs;

pub use error::{Usage, is_usage, message, usage};
