//! What a `prefetch_inputs` prediction rests on, said in words.

use crate::whatif::Context;

use super::host::{
    LoaderHost, WORKER_TENSOR_SLOWDOWN, cores_outnumbered, delivery_ns, worker_slowdown,
};
use super::loader_in_workers;
use super::work::loader_work;

/// What `prefetch_inputs` with these inputs rests on, on this trace: the workers' pace with
/// the loading split it comes from, and the contention charged where the cores are unknown;
/// for a loader already in workers, why nothing changed.
pub fn caveats(
    context: &Context<'_>,
    contention: f64,
    workers: u32,
    host: LoaderHost,
) -> Vec<String> {
    if loader_in_workers(context) {
        return vec![
            "the loader already runs in worker processes (_MultiProcessingDataLoaderIter): its \
             remaining wait is for batches the workers did not have ready; it needs more \
             workers or cheaper transforms, not prefetching, so nothing changed"
                .to_string(),
        ];
    }
    let ms = |ns: i64| ns as f64 / 1e6;
    let work = loader_work(context);
    let delivery = delivery_ns(context, workers, host).unwrap_or(0);
    let in_worker = work.in_worker_ns(host);
    let slowdown = worker_slowdown(host);
    let why_slower = match (host.threads, host.cores) {
        _ if slowdown >= WORKER_TENSOR_SLOWDOWN => format!(
            "×{WORKER_TENSOR_SLOWDOWN} fitted on one recorded H100 pair with 16 CPUs, held \
             within 15 % on three H200 pairs (another host); elsewhere give --threads (the \
             training process's intra-op threads) or --cores to cap it"
        ),
        (Some(threads), _) => format!(
            "one thread is at most as many times slower as the {threads} intra-op threads the \
             training process spread them over (--threads)"
        ),
        (None, cores) => format!(
            "one thread is at most as many times slower as the {} intra-op threads the \
             training process had by default, one per core (--threads if it had fewer)",
            cores.unwrap_or(0)
        ),
    };
    // Stalls of a tenth of a millisecond or more a batch are worth a reader's attention.
    let stalled = match work.stall_ns {
        ns if ns >= 100_000 => format!(
            " at their typical pace and {:.3} ms more that they stalled (calls past the median \
             of their identical calls: a parallel op waits for its slowest thread, a worker's \
             one thread loses that time once)",
            ms(ns)
        ),
        _ => String::new(),
    };
    let cpu_bound = match host.cores {
        Some(cores) => format!(
            ", and {cores} cores (--cores) run the training process's own {:.3} ms of host work \
             per batch and the worker's {:.3} ms in no less than {:.3} ms; no contention is \
             charged beside that",
            ms(work.training_ns),
            ms(in_worker),
            ms(work.training_ns + in_worker) / cores.max(1) as f64
        ),
        None => String::new(),
    };
    let mut caveats = vec![format!(
        "the step after is at least {:.3} ms, the pace of {workers} worker processes \
         (--workers): a batch's loading takes {:.3} ms here ({:.3} ms of tensor ops PyTorch \
         spread over its intra-op threads{stalled}, {:.3} ms of ops that run on one thread \
         anyway: random draws, views, small tensors, and {:.3} ms untraced); a worker runs it \
         on one thread, about {:.3} ms per batch (the spread ops ×{slowdown:.1}: {why_slower})\
         {cpu_bound}",
        ms(delivery),
        ms(work.recorded_ns),
        ms(work.parallel_ns),
        ms(work.serial_ns),
        ms(work.untraced_ns),
        ms(in_worker),
    )];
    if work.batches > 0 && !context.window.graph.has_device_tasks() {
        // No pin-memory thread on a CPU-only run: the training thread receives each batch.
        caveats.push(
            "not charged: the training process receiving each batch from a worker \
             (`_MultiProcessingDataLoaderIter.__next__` unpickles it and maps each tensor's \
             shared memory: 1.1-1.9 ms per batch of 2 tensors on this project's 2-core pairs, \
             and 2-3 times that with the cores busy, `cpu-loader-pairs/handoff_probe.py`); \
             on a GPU run with `pin_memory=True` a thread of its own does it"
                .to_string(),
        );
    }
    // Measured on CPU-only runs, whose training process keeps its threads busy; a GPU job's
    // mostly waits for the device.
    let cpu_only = !context.window.graph.has_device_tasks();
    if let Some((threads, cores)) = cores_outnumbered(workers, host).filter(|_| cpu_only) {
        caveats.push(format!(
            "the training process's {threads} intra-op thread{} (--threads) and its {workers} \
             workers outnumber the {cores} cores (--cores): the prediction gives the training \
             process every cycle its workers do not need, the best a scheduler sharing the \
             cores can do; on this project's 2-core pairs with 2 and 4 workers (each loader \
             started afresh, `cpu-loader-pairs/README.md`) the traced steps took 1.1-1.6× the \
             predicted one, the training process's own work 1.6-1.9× slower beside the \
             workers, and the steps timed without the profiler 0.9-1.3×",
            if threads == 1 { "" } else { "s" },
        ));
    }
    if host.cores.is_none() {
        caveats.push(format!(
            "the host's cores are unknown (the trace does not record them; --cores): charges \
             {:.0} % contention on this process's host work (--contention; the default was \
             measured on one V100 pair, and was about 0 with 4 workers on a 16-CPU H100 host)",
            contention * 100.0
        ));
    }
    caveats
}
