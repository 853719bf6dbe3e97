//! `stepcast compare BEFORE AFTER [--model M ...]`: the measured speedup of two traces of one
//! workload, what changed, and each model's prediction from BEFORE against the measured AFTER.

use stepcast::whatif::ModelParams;
use stepcast_cli::jobs::{self, Loaded, Quiet};
use stepcast_report::table;

use crate::args::CompareArgs;

/// Runs `compare` and returns its output (text, or JSON with `--json`).
pub fn run(args: &CompareArgs) -> anyhow::Result<String> {
    let params = ModelParams {
        factor: args.factor,
        compute: args.compute,
        memory: args.memory,
        cpu: args.cpu,
        copy: args.copy,
        fraction: args.fraction,
        contention: args.contention,
    };
    let models = jobs::compare_models(&args.models, &params)?;
    let before = Loaded::load(&args.before, super::read_options(), &Quiet)?;
    let after = Loaded::load(&args.after, super::read_options(), &Quiet)?;
    let document = jobs::compare(&before, &after, &models, &Quiet)?;
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::compare_text(&document))
    }
}
