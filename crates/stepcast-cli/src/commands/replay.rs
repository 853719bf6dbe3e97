//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.

use anyhow::{Context, bail};
use stepcast_report::{json, table};

use crate::args::ReplayArgs;

/// Runs `replay` and returns its output (text, or JSON with `--json`).
pub fn run(args: &ReplayArgs) -> anyhow::Result<String> {
    let (trace, window) = super::load(&args.trace)?;
    if let Some(number) = args.step
        && !window.steps.iter().any(|step| step.number == number)
    {
        let numbers: Vec<u64> = window.steps.iter().map(|step| step.number).collect();
        match window.steps.as_slice() {
            [step] if step.synthetic => bail!(
                "{} has no step {number}: it has no ProfilerStep markers, so the whole window \
                 is one step (leave out --step)",
                args.trace.display()
            ),
            _ => bail!(
                "{} has no step {number}; its steps are {} (pass one of these to --step)",
                args.trace.display(),
                table::step_list(&numbers)
            ),
        }
    }
    let replay = stepcast::replay::self_replay(&window)
        .with_context(|| format!("cannot replay {}", args.trace.display()))?;
    let mut document = json::replay_json(&trace, &window, &replay, args.step);
    document.trace.file = Some(args.trace.display().to_string());
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::replay_text(&document))
    }
}
