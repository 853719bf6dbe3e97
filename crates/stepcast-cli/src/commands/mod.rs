//! One module per subcommand. Each reads its input and returns the rendered answer; `main`
//! writes it.

pub mod advise;
pub mod analyze;
pub mod compare;
pub mod export;
pub mod info;
mod progress;
pub mod replay;
pub mod whatif;
pub mod whatif_ddp;

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
