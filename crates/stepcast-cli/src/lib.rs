//! The work behind each `stepcast` subcommand, as a library: read the input, run the engine and
//! return the JSON document (`stepcast_report::json`). The binary renders it as text or JSON;
//! the Python package (`crates/stepcast-py`) hands it to Python as a dict. Both front ends call
//! these functions, so the same input gives them the same document and the same error message.
//! Both write files through [`output`], which never writes over an input, a device or a
//! directory of the user's.

pub mod error;
pub mod jobs;
pub mod output;

pub use error::{Usage, is_usage, message, usage};
