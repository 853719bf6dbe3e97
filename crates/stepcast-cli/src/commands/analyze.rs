//! `stepcast analyze TRACE`: where the step's time goes.

use anyhow::{Context, bail};
use stepcast_report::{json, table};

use crate::args::AnalyzeArgs;

/// Runs `analyze` and returns its output (text, or JSON with `--json`).
pub fn run(args: &AnalyzeArgs) -> anyhow::Result<String> {
    let (trace, window) = super::load(&args.trace)?;
    let step_index = match args.step {
        None => None,
        Some(number) => match window.steps.iter().position(|step| step.number == number) {
            Some(index) if !window.steps[index].synthetic => Some(index),
            _ => {
                let numbers: Vec<u64> = window.steps.iter().map(|step| step.number).collect();
                match window.steps.as_slice() {
                    [] => bail!(
                        "{} has no step {number}: it has no steps (leave out --step)",
                        args.trace.display()
                    ),
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
    let analysis = stepcast::analyze::analyze(&trace, &window, step_index)
        .with_context(|| format!("cannot analyze {}", args.trace.display()))?;
    let mut document = json::analyze_json(&trace, &window, &analysis, args.step);
    document.trace.file = Some(args.trace.display().to_string());
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::analyze_text(&document))
    }
}
