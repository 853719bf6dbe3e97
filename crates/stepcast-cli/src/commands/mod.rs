//! One module per subcommand. Each turns its arguments into a call of the library
//! (`stepcast_cli::jobs`, shared with the Python package) and returns the rendered answer;
//! `main` writes it.

pub mod advise;
pub mod analyze;
pub mod compare;
pub mod export;
pub mod info;
pub mod optimize;
pub mod replay;
pub mod whatif;

use std::sync::OnceLock;

use anyhow::Context;
use stepcast_trace::ReadOptions;

/// How every command reads its traces: set once, from the command line, before any is read.
static READ_OPTIONS: OnceLock<ReadOptions> = OnceLock::new();

/// Sets how traces are read (`--step-range`); an invalid pattern is a usage error.
pub fn set_read_options(step_range: Option<&str>) -> anyhow::Result<()> {
    let options = stepcast_cli::jobs::read_options(step_range)?;
    // Set once per process: a second call (none today) keeps the first.
    let _ = READ_OPTIONS.set(options);
    Ok(())
}

/// The options every trace is read with.
fn read_options() -> &'static ReadOptions {
    READ_OPTIONS.get_or_init(ReadOptions::default)
}

/// `value` as pretty JSON with a trailing newline.
fn to_json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialize the report")?;
    text.push('\n');
    Ok(text)
}
