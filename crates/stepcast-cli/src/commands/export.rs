//! `stepcast export TRACE -o FILE.json`: the recorded and the replayed window (or one step) side
//! by side, as a Chrome trace for Perfetto. Unlike the other commands it answers with a file
//! only, so it writes that file itself and prints nothing.

use anyhow::{Context, bail};
use stepcast::analyze::mapping::map;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast_report::export::{Export, Selection};
use stepcast_report::table;

use crate::args::ExportArgs;
use crate::output;

/// Runs `export`: reads and replays the trace, then writes the Chrome trace to `args.output`,
/// whole or not at all.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let (trace, window) = super::load(&args.trace)?;
    let selection = match args.step {
        None => Selection::window(),
        Some(number) => match Selection::step(&window, number) {
            Some(selection) => selection,
            None => {
                let numbers: Vec<u64> = window.steps.iter().map(|step| step.number).collect();
                match window.steps.as_slice() {
                    [step] if step.synthetic => bail!(
                        "{} has no step {number}: it has no ProfilerStep markers, so the whole \
                         window is one step (leave out --step)",
                        args.trace.display()
                    ),
                    _ => bail!(
                        "{} has no step {number}; its steps are {} (pass one of these to --step)",
                        args.trace.display(),
                        table::step_list(&numbers)
                    ),
                }
            }
        },
    };
    let timeline = simulate(&window.graph, &RecordedOrder, SimOptions::default())
        .with_context(|| format!("cannot replay {}", args.trace.display()))?;
    let mapping = map(&trace, &window);
    let mut bytes = Vec::new();
    Export::new(&trace, &window, &timeline, Some(&mapping), selection)
        .write_to(&mut bytes)
        .context("cannot render the export")?;
    let text = String::from_utf8(bytes).context("the export is not UTF-8")?;
    output::to_file(&args.output, &text)
}
