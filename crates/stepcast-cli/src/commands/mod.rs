//! One module per subcommand. Each turns its arguments into a call of the library
//! (`stepcast_cli::jobs`, shared with the Python package) and returns the answer rendered in
//! the format asked for ([`render`]); `main` writes it.

pub mod advise;
pub mod analyze;
pub mod compare;
pub mod export;
pub mod info;
pub mod optimize;
pub mod reduce;
pub mod replay;
pub mod report;
pub mod whatif;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context;
use stepcast_cli::jobs::Loaded;
use stepcast_trace::ReadOptions;

/// How every command reads its traces: set once, from the command line, before any is read.
static READ_OPTIONS: OnceLock<ReadOptions> = OnceLock::new();

/// The Execution Trace to join with the one trace a command reads (`--et`).
static EXECUTION_TRACE: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Sets how traces are read (`--step-range`, `--comm-timeline`, `--et`); an invalid pattern
/// is a usage error.
pub fn set_read_options(
    step_range: Option<&str>,
    comm_timeline: Option<&Path>,
    execution_trace: Option<&Path>,
) -> anyhow::Result<()> {
    let mut options = stepcast_cli::jobs::read_options(step_range)?;
    options.comm_timeline = comm_timeline.map(Path::to_path_buf);
    // Set once per process: a second call (none today) keeps the first.
    let _ = READ_OPTIONS.set(options);
    let _ = EXECUTION_TRACE.set(execution_trace.map(Path::to_path_buf));
    Ok(())
}

/// The options every trace is read with.
fn read_options() -> &'static ReadOptions {
    READ_OPTIONS.get_or_init(ReadOptions::default)
}

/// `--et`, if given.
fn execution_trace() -> Option<&'static Path> {
    EXECUTION_TRACE.get().and_then(Option::as_deref)
}

/// Reads one trace as every command does: with the read options, joined with `--et`.
fn load(path: &Path, progress: &dyn stepcast_cli::jobs::Progress) -> anyhow::Result<Loaded> {
    Loaded::load_with_et(path, read_options(), execution_trace(), progress)
}

/// Why `--et` does not apply to a job, and what does.
const ET_OF_A_JOB: &str = "a folder or several traces are a job's ranks: give each rank's \
     Execution Trace among the job's files instead (beside its trace, or their folder as one \
     more input), paired by process id";

/// `--et` joins one trace's Execution Trace: a usage error where the command reads several
/// (`why`: [`ET_OF_A_JOB`], or why else).
fn refuse_execution_trace(why: &str) -> anyhow::Result<()> {
    match execution_trace() {
        Some(et) => Err(stepcast_cli::usage(anyhow::anyhow!(
            "--et {} joins the Execution Trace of one run with its one trace; {why}",
            et.display()
        ))),
        None => Ok(()),
    }
}

use crate::args::{Format, OutputArgs};

/// `--model NAME` with its default parameters, checked before any trace is read (so a typo
/// fails fast, as an invalid command line).
fn model_option(name: Option<&str>) -> anyhow::Result<Option<stepcast::whatif::Model>> {
    name.map(|name| {
        stepcast::whatif::Model::with_params(name, &stepcast::whatif::ModelParams::default())
    })
    .transpose()
    .map_err(stepcast_cli::usage)
}

/// A command's rendered answer: one text for stdout or a file, or files (one per table) for a
/// directory.
pub enum Answer {
    Text(String),
    Files(Vec<(String, String)>),
}

/// A renderer of a document into text.
type Render<'a, T> = Option<&'a dyn Fn(&T) -> String>;

/// `document` in the format `output` asks for: text through `text`, its JSON, its tables as
/// CSV files, or Markdown and HTML where the command has a renderer for them.
fn render<T: serde::Serialize>(
    output: &OutputArgs,
    document: &T,
    text: impl FnOnce(&T) -> String,
    markdown: Render<'_, T>,
    html: Render<'_, T>,
) -> anyhow::Result<Answer> {
    let unsupported = |format: &str, commands: &str| {
        stepcast_cli::usage(anyhow::anyhow!(
            "--format {format} is not available for this command ({commands} have it)"
        ))
    };
    match output.format() {
        Format::Text => Ok(Answer::Text(text(document))),
        Format::Json => Ok(Answer::Text(to_json(document)?)),
        Format::Csv => Ok(Answer::Files(csv_files(document)?)),
        Format::Md => match markdown {
            Some(markdown) => Ok(Answer::Text(markdown(document))),
            None => Err(unsupported("md", "analyze, advise and report")),
        },
        Format::Html => match html {
            Some(html) => Ok(Answer::Text(html(document))),
            None => Err(unsupported("html", "compare and report")),
        },
    }
}

/// Every table of `document`'s JSON as a CSV file (`name.csv`, contents).
fn csv_files(document: &impl serde::Serialize) -> anyhow::Result<Vec<(String, String)>> {
    let value = serde_json::to_value(document).context("cannot serialize the report")?;
    let tables = stepcast_report::csv::tables(&value).context("cannot write the CSV tables")?;
    Ok(tables
        .into_iter()
        .map(|table| (format!("{}.csv", table.name), table.text))
        .collect())
}

/// `value` as pretty JSON with a trailing newline.
fn to_json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialize the report")?;
    text.push('\n');
    Ok(text)
}

/// `--to GPU` as the models take it; a name no datasheet has is a usage error.
fn target(to: Option<&str>) -> anyhow::Result<Option<&'static str>> {
    to.map(stepcast::whatif::target_param)
        .transpose()
        .map_err(stepcast_cli::usage)
}

/// `--dtype fp16|bf16` as the models take it.
fn dtype(dtype: Option<&str>) -> anyhow::Result<Option<stepcast::whatif::AmpDtype>> {
    dtype
        .map(stepcast::whatif::dtype_param)
        .transpose()
        .map_err(stepcast_cli::usage)
}
