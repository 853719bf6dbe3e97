//! One module per subcommand. Each reads its input and returns the rendered answer; `main`
//! writes it.

pub mod advise;
pub mod analyze;
pub mod compare;
pub mod export;
pub mod info;
pub mod replay;
pub mod whatif;
pub mod whatif_ddp;

use std::path::Path;
use std::sync::OnceLock;

use anyhow::Context;
use stepcast::Window;
use stepcast::graph::{BuildOptions, build};
use stepcast_trace::{ReadOptions, Trace};

/// How every command reads its traces: set once, from the command line, before any is read.
static READ_OPTIONS: OnceLock<ReadOptions> = OnceLock::new();

/// Sets how traces are read (`--step-range`); an invalid pattern is a usage error.
pub fn set_read_options(step_range: Option<&str>) -> anyhow::Result<()> {
    let step_range = step_range
        .map(|pattern| {
            regex::Regex::new(pattern)
                .map_err(|e| crate::usage(anyhow::anyhow!("--step-range {pattern:?}: {e}")))
        })
        .transpose()?;
    // Set once per process: a second call (none today) keeps the first.
    let _ = READ_OPTIONS.set(ReadOptions { step_range });
    Ok(())
}

fn read_options() -> &'static ReadOptions {
    READ_OPTIONS.get_or_init(ReadOptions::default)
}

/// Reads the trace at `path` and builds its window. The read error already names the file.
fn load(path: &Path) -> anyhow::Result<(Trace, Window)> {
    let trace = stepcast_trace::read_trace_with(path, read_options())?;
    let window = build(&trace, &BuildOptions::default());
    Ok((trace, window))
}

/// Every process (rank) of the file at `path`, each with its window.
fn load_processes(path: &Path) -> anyhow::Result<Vec<(Trace, Window)>> {
    let traces = stepcast_trace::read_processes(path, read_options())?;
    Ok(traces
        .into_iter()
        .map(|trace| {
            let window = build(&trace, &BuildOptions::default());
            (trace, window)
        })
        .collect())
}

/// A trace with its window and the mapping of its tasks: what every what-if starts from.
struct Mapped {
    trace: Trace,
    window: Window,
    mapping: stepcast::analyze::mapping::Mapping,
}

impl Mapped {
    fn load(path: &Path) -> anyhow::Result<Mapped> {
        let (trace, window) = load(path)?;
        let mapping = stepcast::analyze::mapping::map(&trace, &window);
        Ok(Mapped {
            trace,
            window,
            mapping,
        })
    }

    fn context(&self, peers: stepcast::whatif::Peers) -> stepcast::whatif::Context<'_> {
        stepcast::whatif::Context {
            peers,
            ..stepcast::whatif::Context::new(&self.trace, &self.window, &self.mapping)
        }
    }
}

/// The index in `window.steps` of `ProfilerStep#number`, or an error naming the steps there are.
/// A trace without step markers has one synthetic step, which `--step` cannot name.
fn step_index(path: &Path, window: &Window, number: u64) -> anyhow::Result<usize> {
    let found = window
        .steps
        .iter()
        .position(|step| step.number == number && !step.synthetic);
    if let Some(index) = found {
        return Ok(index);
    }
    let numbers: Vec<u64> = window.steps.iter().map(|step| step.number).collect();
    match window.steps.as_slice() {
        [] => anyhow::bail!(
            "{} has no step {number}: it has no steps (leave out --step)",
            path.display()
        ),
        [step] if step.synthetic => anyhow::bail!(
            "{} has no step {number}: it has no ProfilerStep markers, so the whole window is one \
             step (leave out --step)",
            path.display()
        ),
        _ => anyhow::bail!(
            "{} has no step {number}; its steps are {} (pass one of these to --step)",
            path.display(),
            stepcast_report::table::step_list(&numbers)
        ),
    }
}

/// `value` as pretty JSON with a trailing newline.
fn to_json(value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("cannot serialize the report")?;
    text.push('\n');
    Ok(text)
}
