//! `stepcast whatif TRACE MODEL [params]`, `stepcast whatif TRACE --scenario FILE` and
//! `stepcast whatif TRACE ddp [options]`: predict the step time after an optimization;
//! `stepcast whatif DIR MODEL`: the same change on every rank of a job, on its global graph.

use stepcast::whatif::ModelParams;
use stepcast_cli::jobs::{self, DdpOptions, Transform};
use stepcast_report::table;

use crate::args::WhatIfArgs;
use crate::progress::Terminal;

/// Runs `whatif` and returns its output (text, JSON, or its tables as CSV).
pub fn run(args: &WhatIfArgs) -> anyhow::Result<super::Answer> {
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
    let ddp = DdpOptions {
        gpus: args.gpus.clone(),
        gpus_per_node: args.gpus_per_node,
        net: args.net.clone(),
        latency: args.latency.clone(),
        intra: args.intra.clone(),
        algorithm: args.algorithm.clone(),
        flat: args.flat,
        bucket_mb: args.bucket_mb,
        gradients: args.gradients.clone(),
        reinsert: args.reinsert,
        compress: args.compress.clone(),
        p3: args.p3,
        fsdp: args.fsdp,
        cores: args.cores,
    };
    // The transform is checked before the trace is read, so a typo fails fast.
    let transform = Transform::new(
        args.model.as_deref(),
        args.scenario.as_deref(),
        &params,
        &ddp,
    )?;
    let progress = Terminal::new();
    if args.trace.is_dir() {
        // A job's folder: the change on every rank, predicted on the job's global graph.
        super::refuse_execution_trace(super::ET_OF_A_JOB)?;
        let job = jobs::load_ranks(
            std::slice::from_ref(&args.trace),
            super::read_options(),
            &progress,
        )?;
        let document = jobs::whatif_job(&job, &transform, args.peers.peers(), &progress)?;
        drop(progress);
        return super::render(&args.output, &document, table::whatif_job_text, None, None);
    }
    let loaded = super::load(&args.trace, &progress)?;
    let document = jobs::whatif(&loaded, &transform, args.peers.peers(), &progress)?;
    drop(progress);
    super::render(&args.output, &document, table::whatif_text, None, None)
}
