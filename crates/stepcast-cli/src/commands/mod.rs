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

use anyhow::Context;

/// `value` as pretty JSON with a trailing newline.
fn to_json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialize the report")?;
    text.push('\n');
    Ok(text)
}
