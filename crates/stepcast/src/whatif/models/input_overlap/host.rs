//! The host the workers would run on (its cores, the training process's intra-op threads:
//! given, as no trace records them), how slowly a worker's one thread runs the loading there,
//! the pace the workers deliver batches at, and the reasons to decline where that host is
//! unknown or leaves the workers no core.

use crate::whatif::Context;

use super::loader_in_workers;
use super::work::{LoaderWork, loader_work};

/// How much slower the loading's parallel tensor ops run in a `DataLoader` worker than they
/// ran in the training process. PyTorch runs a worker's ops on one intra-op thread
/// (`torch.set_num_threads(1)` in `_worker_loop`) where the training process spread them over
/// its pool (16 CPUs on the machines that fitted this); a worker also pays what the training
/// process did not (the batch written to and read from shared memory). **Fitted** on one pair,
/// `testdata/kineto/stepcast/h100-pairs/loader-workers0 → loader-workers4` as traced: four
/// workers delivered a batch every 41.9 ms (167.7 ms per batch per worker, the steady AFTER
/// step being bound by them), against 13.6 ms of such ops at their typical pace, 1.4 ms of
/// their stalls (`work::stalls`) and 27.2 ms of serial and untraced work per batch in the training
/// process ([`LoaderWork`]): (167.7 − 27.2 − 1.4) / 13.6 = 10.2. Held out of sample on the
/// H200 pairs (`h200-pairs/loader-workers0 → 1, 2, 4`, another machine and host: seen before
/// the stalls were split out, which that pair's BEFORE trace showed) and the V100 pair
/// (`kineto/tb_plugin` ResNet-50, where the workers keep up at any value below ~20):
/// docs/accuracy.md.
pub const WORKER_TENSOR_SLOWDOWN: f64 = 10.2;

/// What `prefetch_inputs` knows of the host the workers would run on: neither number is in
/// any trace format stepcast reads, so both are given (`--cores`, `--threads`) or unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoaderHost {
    /// The host's CPU cores.
    pub cores: Option<u32>,
    /// The training process's intra-op threads (`torch.get_num_threads()`; PyTorch's default
    /// is one per physical core).
    pub threads: Option<u32>,
}

/// How much slower the parallel ops run in a worker on `host`: [`WORKER_TENSOR_SLOWDOWN`], but
/// never more than the intra-op threads the training process spread them over (`threads`,
/// else one per core, PyTorch's default): one thread runs them at most that many times
/// slower. A training process on one thread ran them as a worker does (×1).
pub fn worker_slowdown(host: LoaderHost) -> f64 {
    match host.threads.or(host.cores) {
        Some(threads) if threads > 0 => WORKER_TENSOR_SLOWDOWN.min(threads as f64),
        _ => WORKER_TENSOR_SLOWDOWN,
    }
}

impl LoaderWork {
    /// One batch's loading in one worker on `host`: the serial and untraced work and the
    /// stalls as recorded, the parallel ops [`worker_slowdown`] times slower.
    pub fn in_worker_ns(&self, host: LoaderHost) -> i64 {
        self.serial_ns
            + self.untraced_ns
            + self.stall_ns
            + (self.parallel_ns as f64 * worker_slowdown(host)).round() as i64
    }
}

/// The training process's intra-op threads leave no core to the workers, and they matter: a
/// reason to decline, or `None`. With `threads` (else one per core) intra-op threads on
/// `cores` cores, a worker runs on a core one of those threads uses; OpenMP's threads wait
/// for each other at the end of every parallel op, so an op waits for the thread the worker
/// displaced, a slowdown beyond the CPU work [`delivery_ns`] counts, and one this model does
/// not predict. It matters where those ops are at least a tenth of the training process's host
/// time (a GPU job's host ops are mostly too small to be spread).
pub fn oversubscribed(context: &Context<'_>, host: LoaderHost) -> Option<String> {
    let cores = host.cores.filter(|&c| c > 0)?;
    let threads = host.threads.or(host.cores)?;
    if threads < cores || loader_in_workers(context) {
        return None;
    }
    let work = loader_work(context);
    if work.batches == 0 || work.training_parallel_ns * 10 < work.training_ns {
        return None;
    }
    let fewer = match cores - 1 {
        0 => "one core leaves none to a worker".to_string(),
        n => format!("predict --threads {n} (torch.set_num_threads({n})) instead"),
    };
    Some(format!(
        "the training process spreads {:.1} ms of each step's tensor ops over {threads} \
         intra-op threads (--threads{}) on {cores} cores (--cores): any worker, however few \
         (--workers), would run on a core those threads use, and each parallel op would wait \
         for the thread it displaced, a slowdown stepcast does not model (on this project's \
         2-core CPU pairs, 1 and 2 workers beside 2 threads made the step ×0.74 and ×0.89 as \
         traced); {fewer}",
        work.training_parallel_ns as f64 / 1e6,
        if host.threads.is_none() {
            ", one per core by default"
        } else {
            ""
        },
    ))
}

/// On a CPU-only trace, the host the answer turns on is unknown: a reason to decline, or
/// `None`. The workers run on the cores the training itself computes on, and the trace records
/// neither those cores nor the training process's intra-op threads: with one thread
/// (`torch.set_num_threads(1)`) a worker runs the loading's tensor ops as fast as the training
/// process did and the workers use cores it leaves idle (this project's 2-core pairs: ×1.5 to
/// ×2.3 with 1, 2 and 4 workers, as traced); with PyTorch's default, a thread per core, they
/// displace its threads ([`oversubscribed`]: ×0.74 and ×0.89 with 1 and 2). No default
/// stands for both, and [`WORKER_TENSOR_SLOWDOWN`], fitted on a GPU machine's 16-CPU host, for
/// neither: the two predictions would differ in direction. It matters where the loading is a
/// twentieth or more of the CPU work of a step (less, and a few mostly idle workers change
/// little either way) and the tensor ops PyTorch spreads over its threads a tenth or more (a
/// loader of Python and small tensors, beside a training of them, runs alike either way).
pub fn host_unknown(context: &Context<'_>, host: LoaderHost) -> Option<String> {
    if host.threads.is_some() || host.cores.is_some() || loader_in_workers(context) {
        return None;
    }
    let work = loader_work(context);
    let cpu_ns = work.recorded_ns + work.training_ns;
    let spread = work.parallel_ns + work.stall_ns + work.training_parallel_ns;
    if work.batches == 0 || work.recorded_ns * 20 < cpu_ns || spread * 10 < cpu_ns {
        return None;
    }
    let one_thread = LoaderHost {
        cores: None,
        threads: Some(1),
    };
    Some(format!(
        "a CPU-only run's DataLoader workers share the cores its training computes on, and the \
         trace records neither those cores nor the training process's intra-op threads, which \
         spread {:.1} ms of each step's tensor ops: with one thread a worker loads a batch in \
         about {:.1} ms and takes cores the training leaves idle; with PyTorch's default, a \
         thread per core, the workers displace those threads (on this project's 2-core pairs: \
         ×1.5-2.3 with one thread, ×0.74-0.89 with the default). Give --threads N \
         (torch.get_num_threads()) and --cores C",
        spread as f64 / 1e6,
        work.in_worker_ns(one_thread) as f64 / 1e6,
    ))
}

/// `(training threads, cores)` where the training process's intra-op threads (`--threads`,
/// else one per core, PyTorch's default) and its `workers` (one thread each) outnumber the
/// host's given cores; `None` where they do not or the cores are unknown. There the cores'
/// bound of [`delivery_ns`] is a best case: it takes every core as busy with the step's work
/// and gives the training process what the workers do not need, where a fair scheduler gives
/// it only its share while they are runnable.
pub fn cores_outnumbered(workers: u32, host: LoaderHost) -> Option<(u32, u32)> {
    let cores = host.cores.filter(|&c| c > 0)?;
    let threads = host.threads.unwrap_or(cores);
    (threads.saturating_add(workers) > cores).then_some((threads, cores))
}

/// How often `workers` worker processes deliver a batch in the steady state: one batch's
/// loading in a worker ([`LoaderWork::in_worker_ns`]) divided among them, and, where the
/// host's cores are known, no faster than those cores can run the batch's loading and the
/// training process's own host work together (`(training + loading) / cores`: the kernel
/// keeps every core busy while anything waits for one, so the CPU work of a step, not a fixed
/// share per process, is what the cores bound; a worker whose batch is ready sleeps).
/// Assumption: the training process's host time is CPU time on one core (a training process
/// on several intra-op threads needs more). `None` without recorded loading.
pub fn delivery_ns(context: &Context<'_>, workers: u32, host: LoaderHost) -> Option<i64> {
    loader_work(context).delivery_ns(workers, host)
}

impl LoaderWork {
    /// [`delivery_ns`] of this loading work.
    pub fn delivery_ns(&self, workers: u32, host: LoaderHost) -> Option<i64> {
        if self.batches == 0 || workers == 0 {
            return None;
        }
        let per_batch = self.in_worker_ns(host);
        let pace = per_batch as f64 / workers as f64;
        let cpu_bound = match host.cores {
            Some(cores) if cores > 0 => (self.training_ns + per_batch) as f64 / cores as f64,
            _ => 0.0,
        };
        Some(pace.max(cpu_bound).round() as i64)
    }
}
