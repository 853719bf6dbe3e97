//! `stepcast compare BEFORE AFTER [--model M ...]`: the measured speedup of two traces of one
//! workload, what changed, and each model's prediction from BEFORE against the measured AFTER.

use stepcast::whatif::ModelParams;
use stepcast_cli::jobs::{self, Loaded};
use stepcast_report::{html, table};

use crate::args::CompareArgs;
use crate::progress::Terminal;

/// Runs `compare` and returns its output (text, JSON, CSV tables or an HTML page).
pub fn run(args: &CompareArgs) -> anyhow::Result<super::Answer> {
    let params = ModelParams {
        factor: args.factor,
        compute: args.compute,
        memory: args.memory,
        cpu: args.cpu,
        copy: args.copy,
        fraction: args.fraction,
        contention: args.contention,
        to: super::target(args.to.as_deref())?,
        dtype: super::dtype(args.dtype.as_deref())?,
        workers: args.workers,
        cores: args.cores,
        threads: args.threads,
    };
    let models = jobs::compare_models(&args.models, &params)?;
    let progress = Terminal::new();
    super::refuse_execution_trace("compare reads two runs")?;
    let before = Loaded::load(&args.before, super::read_options(), &progress)?;
    let after = Loaded::load(&args.after, super::read_options(), &progress)?;
    let document = jobs::compare_with(&before, &after, &models, args.force, &progress)?;
    drop(progress);
    super::render(
        &args.output,
        &document,
        table::compare_text,
        None,
        Some(&html::compare_report),
    )
}
