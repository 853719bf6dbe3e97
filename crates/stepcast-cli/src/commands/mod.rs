//! One module per subcommand. Each reads its input and returns the rendered answer; `main`
//! writes it.

pub mod advise;
pub mod analyze;
pub mod export;
pub mod info;
pub mod replay;
pub mod whatif;

use std::path::Path;

use anyhow::Context;
use stepcast::Window;
use stepcast::graph::{BuildOptions, build};
use stepcast_trace::Trace;

/// Reads the trace at `path` and builds its window. The read error already names the file.
fn load(path: &Path) -> anyhow::Result<(Trace, Window)> {
    let trace = stepcast_trace::read_trace(path)?;
    let window = build(&trace, &BuildOptions::default());
    Ok((trace, window))
}

/// `value` as pretty JSON with a trailing newline.
fn to_json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialize the report")?;
    text.push('\n');
    Ok(text)
}
