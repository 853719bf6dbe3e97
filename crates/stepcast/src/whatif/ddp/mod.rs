//! **Data-parallel training on N GPUs** (Daydream A.4) from a trace's own collectives.
//!
//! Each gradient all-reduce of the steady steps stays where the recording put it (its stream,
//! its launching call, the event waits that make it depend on the backward work producing its
//! gradients and that make the optimizer wait for it), but what the recording said about its
//! cost is replaced by the collective cost model ([`crate::comm`]) for the target topology:
//! its wait for peers is dropped (DDP ranks run the same program, so they are assumed to
//! arrive together) and its duration becomes the modeled transfer time of its message.
//!
//! Gradient sizes come from the recorded collectives: `In/Out msg nelems` × `dtype` of the
//! kernel or of its `record_param_comms` op ([`GradientSource::Recorded`]); when the trace does
//! not record them, each collective's size is inferred from its fastest recorded instance
//! (the same bucket in every step) on the recorded link ([`GradientSource::Inferred`]). The
//! recorded bucketing is kept (DDP's buckets are fixed after the first iteration).
//!
//! The network: intra-node, the link calibrated from the trace's collectives
//! ([`crate::comm::calibrate()`]), else `intra` (default NVLink 3); inter-node, `inter` (default
//! InfiniBand 200 Gb/s per GPU). The fixed cost per collective is the calibration's intercept.

//!
//! A trace without collectives (one GPU), or any configuration with `reinsert`, DGC, P3 or
//! FSDP, takes the insertion model instead ([`gradients`], [`insert`], [`fsdp`]): gradient
//! sizes and ready points from the trace, DDP's buckets, and the exchanges inserted on a new
//! communication stream (the recorded collectives, if any, removed first).

pub mod fsdp;
pub mod gradients;
pub mod insert;

use std::collections::BTreeMap;

use self::gradients::{GradientError, Gradients, SizeSource, find_gradients};
use self::insert::{Costs, DEFAULT_BUCKET_BYTES, Dgc, InsertNames, InsertedBucket};
use super::{Context, Outcome, Prediction, Prepared, WhatIfError, what_if_prepared};
use crate::Window;
use crate::comm::{
    Algorithm, Calibration, Collective, Link, Preset, RecordedCollective, Topology, calibrate,
    recorded_collectives,
};
use crate::graph::{EdgeKind, NO_STEP, TaskId};
use crate::whatif::edit::{EditGraph, HostGaps, Selection};

/// The knobs of the DDP what-if.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DdpConfig {
    /// World size.
    pub gpus: u32,
    pub gpus_per_node: u32,
    /// Intra-node link; `None`: calibrated from the trace, else NVLink 3.
    pub intra: Option<Link>,
    /// Inter-node link (per GPU); `None`: InfiniBand 200 Gb/s.
    pub inter: Option<Link>,
    pub algorithm: Algorithm,
    /// BlueConnect's decomposition across nodes.
    pub hierarchical: bool,
    /// Re-bucketing: consecutive all-reduces of a step (on one stream) are merged while their
    /// bytes add up to at most this (DDP's `bucket_cap_mb`); `None` keeps the recorded buckets.
    /// Buckets are only ever merged, not split.
    pub bucket_bytes: Option<i64>,
    /// Strip the recorded collectives and insert DDP's from the gradients (the insertion
    /// model; a trace without collectives always takes it).
    pub reinsert: bool,
    /// Deep Gradient Compression (insertion model).
    pub compression: Option<Dgc>,
    /// P3: per-parameter slices sent in priority order (insertion model).
    pub p3: bool,
    /// FSDP / ZeRO-3 instead of DDP (insertion model).
    pub fsdp: bool,
    /// A CPU-only trace's node: its cores, which its processes share (`--cores`). With more
    /// processes per node than cores, each process's host work runs that many times slower
    /// (time-sharing); `None`: not said, nothing charged (a caveat says so).
    pub host_cores: Option<f64>,
}

impl DdpConfig {
    /// Whether this configuration takes the insertion model even when collectives are
    /// recorded.
    pub fn inserts(&self) -> bool {
        self.reinsert || self.compression.is_some() || self.p3 || self.fsdp
    }
}

impl Default for DdpConfig {
    fn default() -> Self {
        DdpConfig {
            gpus: 8,
            gpus_per_node: 8,
            intra: None,
            inter: None,
            algorithm: Algorithm::Ring,
            hierarchical: true,
            bucket_bytes: None,
            reinsert: false,
            compression: None,
            p3: false,
            fsdp: false,
            host_cores: None,
        }
    }
}

impl DdpConfig {
    /// The processes (GPUs) on one node: at least one, at most the job's.
    pub fn processes_per_node(&self) -> u32 {
        self.gpus.min(self.gpus_per_node).max(1)
    }

    /// On a CPU-only trace: how many times slower each process's host work runs when the
    /// processes of a node share its cores (`processes per node / cores`, at least 1).
    pub fn host_share(&self) -> f64 {
        let processes = self.processes_per_node() as f64;
        match self.host_cores {
            Some(cores) if cores > 0.0 => (processes / cores).max(1.0),
            _ => 1.0,
        }
    }

    /// On a CPU-only trace: the node's cores are given and its processes take them all (a
    /// process per core or more), so no core is left for gloo's worker threads.
    pub fn no_spare_core(&self) -> bool {
        let processes = self.processes_per_node() as f64;
        self.host_cores
            .is_some_and(|cores| cores > 0.0 && processes >= cores)
    }
}

/// Where the gradient (message) sizes came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradientSource {
    /// `record_param_comms` / NCCL kernel args.
    Recorded,
    /// Inferred from each collective's fastest recorded instance on the recorded link.
    Inferred,
    /// Some of each.
    Mixed,
    /// The insertion model: per-parameter gradients (see [`SizeSource`]).
    Gradients(SizeSource),
}

impl GradientSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GradientSource::Recorded => "recorded_collectives",
            GradientSource::Inferred => "inferred_from_transfer_time",
            GradientSource::Mixed => "recorded_and_inferred",
            GradientSource::Gradients(source) => source.as_str(),
        }
    }
}

/// Where the intra-node link came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkSource {
    Calibrated,
    Given,
    Preset,
}

impl LinkSource {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkSource::Calibrated => "calibrated",
            LinkSource::Given => "given",
            LinkSource::Preset => "preset",
        }
    }
}

/// One recorded collective and its modeled replacement.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    pub recorded: RecordedCollective,
    /// Message bytes (recorded or inferred).
    pub bytes: f64,
    pub bytes_inferred: bool,
    /// The fastest recorded instance of the same bucket (slot) across steps: its transfer time
    /// at the recorded world size.
    pub transfer_ns: i64,
    /// The model's time at the recorded world size and link.
    pub model_recorded_ns: i64,
    /// The model's time on the target topology.
    pub predicted_ns: i64,
}

/// What the DDP what-if found and will apply.
#[derive(Clone, Debug)]
pub struct DdpPlan {
    pub config: DdpConfig,
    pub topology: Topology,
    pub calibration: Calibration,
    pub source: GradientSource,
    pub intra_source: LinkSource,
    /// Group size of the recorded collectives.
    pub recorded_world_size: u32,
    pub buckets: Vec<Bucket>,
    /// With [`DdpConfig::bucket_bytes`]: groups of `buckets` (indices, in lane order) merged
    /// into one all-reduce each, with its modeled time. Empty otherwise.
    pub merged: Vec<(Vec<usize>, i64)>,
    /// The insertion model's plan (then `buckets` is empty).
    pub inserted: Option<InsertedPlan>,
}

/// The insertion model's plan: what is inserted into the steady steps.
#[derive(Clone, Debug)]
pub struct InsertedPlan {
    pub gradients: std::sync::Arc<Gradients>,
    /// DDP's bucket cap (FSDP's unit size).
    pub bucket_bytes: i64,
    /// DDP buckets or P3 slices, in issue order per step (empty with FSDP).
    pub exchanges: Vec<InsertedBucket>,
    /// The communication stream's order of `exchanges` (P3's priorities; else as listed).
    pub order: Vec<usize>,
    /// P3: per exchange, the next forward pass's task it gates
    /// ([`insert::p3_forward_gates`]); empty for DDP, whose optimizer waits for every bucket.
    pub forward_gates: Vec<TaskId>,
    pub fsdp_units: Vec<fsdp::FsdpUnit>,
    /// FSDP: the steady steps' optimizer kernels with their sharded cost
    /// ([`fsdp::shard_optimizer`]).
    pub sharded_optimizer: Vec<(TaskId, i64)>,
    /// Recorded collectives removed first.
    pub stripped: usize,
    /// Gradient bytes per ns of an element-wise pass (DGC's kernels), measured or assumed.
    pub elementwise_bytes_per_ns: f64,
    pub elementwise_measured: bool,
    pub steady_steps: usize,
}

impl InsertedPlan {
    /// Per steady step: (exchanges, wire bytes, communication ns, DGC kernel ns).
    pub fn per_step(&self) -> (f64, f64, i64, i64) {
        let n = self.steady_steps.max(1);
        if !self.fsdp_units.is_empty() {
            let comm: i64 = self
                .fsdp_units
                .iter()
                .map(|u| 2 * u.all_gather_ns + u.reduce_scatter_ns)
                .sum();
            let bytes: f64 = self.fsdp_units.iter().map(|u| 3.0 * u.bytes as f64).sum();
            return (
                3.0 * self.fsdp_units.len() as f64 / n as f64,
                bytes / n as f64,
                comm / n as i64,
                0,
            );
        }
        let comm: i64 = self.exchanges.iter().map(|x| x.predicted_ns).sum();
        let kernels: i64 = self
            .exchanges
            .iter()
            .map(|x| x.compress_ns + x.decompress_ns)
            .sum();
        let bytes: f64 = self.exchanges.iter().map(|x| x.wire_bytes).sum();
        (
            self.exchanges.len() as f64 / n as f64,
            bytes / n as f64,
            comm / n as i64,
            kernels / n as i64,
        )
    }
}

impl DdpPlan {
    /// Total modeled communication per steady step, ns.
    pub fn comm_per_step_ns(&self, steady_steps: usize) -> i64 {
        if let Some(inserted) = &self.inserted {
            return inserted.per_step().2;
        }
        let mut cost: Vec<i64> = self.buckets.iter().map(|b| b.predicted_ns).collect();
        for (group, ns) in &self.merged {
            for (k, &i) in group.iter().enumerate() {
                cost[i] = if k == 0 { *ns } else { 0 };
            }
        }
        let sum: i64 = self
            .buckets
            .iter()
            .zip(&cost)
            .filter(|(b, _)| b.recorded.step != NO_STEP)
            .map(|(_, &c)| c)
            .sum();
        sum / steady_steps.max(1) as i64
    }
}

/// Why the DDP what-if cannot run.
#[derive(Debug, thiserror::Error)]
pub enum DdpError {
    #[error(
        "the trace records no collectives: gradient sizes are needed (recorded collectives); \
         inserting all-reduces into a one-GPU trace is not built yet"
    )]
    NoCollectives,
    #[error("invalid topology: {0}")]
    BadTopology(String),
    #[error(transparent)]
    Gradients(#[from] GradientError),
    #[error(transparent)]
    WhatIf(#[from] WhatIfError),
    #[error(
        "{0} on a CPU-only trace is not modelled: its device kernels (compression, sharded \
         parameters' gathers, P3's per-layer gates) have no CPU counterpart here; plain DDP \
         (gloo on CPU tensors) is"
    )]
    CpuOnly(&'static str),
}

/// Plans the DDP what-if: the recorded collectives, the calibration and each collective's time
/// on `config`'s topology. `recorded` and `calibration` can be computed once for a sweep
/// ([`recorded_collectives`], [`calibrate()`]).
pub fn plan(
    recorded: &[RecordedCollective],
    calibration: &Calibration,
    config: &DdpConfig,
) -> Result<DdpPlan, DdpError> {
    if recorded.is_empty() {
        return Err(DdpError::NoCollectives);
    }
    let network = network(recorded, calibration, config)?;
    plan_recorded(recorded, calibration, config, network)
}

/// The target topology and what the recorded network says.
#[derive(Clone, Copy, Debug)]
struct Network {
    topology: Topology,
    recorded_topology: Topology,
    recorded_link: Link,
    intra_source: LinkSource,
    recorded_world_size: u32,
}

fn network(
    recorded: &[RecordedCollective],
    calibration: &Calibration,
    config: &DdpConfig,
) -> Result<Network, DdpError> {
    if config.gpus == 0 || config.gpus_per_node == 0 {
        return Err(DdpError::BadTopology(
            "gpus and gpus per node must be at least 1".into(),
        ));
    }
    let recorded_world_size = calibration
        .primary()
        .map(|f| f.group_size)
        .or_else(|| recorded.iter().map(|r| r.group_size).max())
        .unwrap_or(2)
        .max(2);
    let preset = Preset::Nvlink3.link();
    // The recorded link and fixed cost: calibrated, else the preset with the fastest recorded
    // collective as the fixed cost.
    let (recorded_link, base_ns, calibrated) = match calibration.link(preset.alpha_ns) {
        Some((link, base)) => (link, base, true),
        // Nothing recorded: the preset as it is, no fixed cost beyond its latency steps.
        None if calibration.floor_ns.is_none() => (preset, 0.0, false),
        None => {
            let floor = calibration.floor_ns.unwrap_or(0).max(0) as f64;
            let steps = Collective::AllReduce
                .latency_steps(Algorithm::Ring, recorded_world_size)
                .max(1.0);
            let alpha = preset.alpha_ns.min(floor / steps);
            let link = Link {
                alpha_ns: alpha,
                ..preset
            };
            (link, floor - steps * alpha, false)
        }
    };
    let (intra, intra_source) = match config.intra {
        Some(link) => (link, LinkSource::Given),
        None if calibrated => (recorded_link, LinkSource::Calibrated),
        None => (recorded_link, LinkSource::Preset),
    };
    let inter = config.inter.unwrap_or_else(|| Preset::Infiniband.link());
    let topology = Topology {
        base_ns,
        algorithm: config.algorithm,
        hierarchical: config.hierarchical,
        ..Topology::new(config.gpus, config.gpus_per_node, intra, inter)
    };
    let recorded_topology = Topology {
        base_ns,
        algorithm: Algorithm::Ring,
        ..Topology::new(
            recorded_world_size,
            recorded_world_size,
            recorded_link,
            recorded_link,
        )
    };
    Ok(Network {
        topology,
        recorded_topology,
        recorded_link,
        intra_source,
        recorded_world_size,
    })
}

fn plan_recorded(
    recorded: &[RecordedCollective],
    calibration: &Calibration,
    config: &DdpConfig,
    network: Network,
) -> Result<DdpPlan, DdpError> {
    let Network {
        topology,
        recorded_topology,
        recorded_link,
        intra_source,
        recorded_world_size,
    } = network;
    // Fastest instance per (kernel slot): the bucket's transfer at the recorded world size.
    let mut fastest: BTreeMap<(Collective, u32), i64> = BTreeMap::new();
    for r in recorded {
        let entry = fastest.entry((r.collective, r.slot)).or_insert(i64::MAX);
        *entry = (*entry).min(r.recorded_ns);
    }
    let mut buckets = Vec::with_capacity(recorded.len());
    let (mut with_sizes, mut inferred) = (0usize, 0usize);
    for r in recorded {
        let transfer_ns = fastest[&(r.collective, r.slot)];
        let (bytes, bytes_inferred) = match r.bytes {
            Some(b) => (b as f64, false),
            None => {
                // Invert the recorded model: t = fixed + bytes × factor / bandwidth.
                let fixed = recorded_topology.time_ns(r.collective, 0.0);
                let factor = r.collective.bus_factor(recorded_world_size);
                let bytes = (transfer_ns as f64 - fixed).max(0.0) * recorded_link.bandwidth_bps
                    / 1e9
                    / factor.max(f64::MIN_POSITIVE);
                (bytes, true)
            }
        };
        with_sizes += usize::from(!bytes_inferred);
        inferred += usize::from(bytes_inferred);
        buckets.push(Bucket {
            recorded: r.clone(),
            bytes,
            bytes_inferred,
            transfer_ns,
            model_recorded_ns: recorded_topology.time_ns(r.collective, bytes).round() as i64,
            predicted_ns: topology.time_ns(r.collective, bytes).round() as i64,
        });
    }
    let merged = match config.bucket_bytes {
        Some(cap) => merge_buckets(&buckets, cap as f64, &topology),
        None => Vec::new(),
    };
    let source = match (with_sizes, inferred) {
        (_, 0) => GradientSource::Recorded,
        (0, _) => GradientSource::Inferred,
        _ => GradientSource::Mixed,
    };
    Ok(DdpPlan {
        config: *config,
        topology,
        calibration: calibration.clone(),
        source,
        intra_source,
        recorded_world_size,
        buckets,
        merged,
        inserted: None,
    })
}

/// Greedy DDP bucketing over the recorded all-reduces, per step and stream in order: a bucket
/// takes the next all-reduce while the sum stays within `cap` (a first one larger than `cap`
/// is a bucket of its own). Returns the groups of two or more with their modeled time.
fn merge_buckets(buckets: &[Bucket], cap: f64, topology: &Topology) -> Vec<(Vec<usize>, i64)> {
    let mut order: Vec<usize> = (0..buckets.len())
        .filter(|&i| {
            let r = &buckets[i].recorded;
            r.collective == Collective::AllReduce && r.step != NO_STEP
        })
        .collect();
    order.sort_by_key(|&i| {
        (
            buckets[i].recorded.step,
            buckets[i].recorded.lane,
            buckets[i].recorded.task,
        )
    });
    let mut groups = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut bytes = 0.0;
    let mut flush = |current: &mut Vec<usize>, bytes: f64| {
        if current.len() >= 2 {
            let ns = topology.time_ns(Collective::AllReduce, bytes).round() as i64;
            groups.push((std::mem::take(current), ns));
        }
        current.clear();
    };
    for i in order {
        let r = &buckets[i].recorded;
        let same = current.last().is_some_and(|&p| {
            let q = &buckets[p].recorded;
            (q.step, q.lane) == (r.step, r.lane)
        });
        if !same || bytes + buckets[i].bytes > cap {
            flush(&mut current, bytes);
            bytes = 0.0;
        }
        current.push(i);
        bytes += buckets[i].bytes;
    }
    flush(&mut current, bytes);
    groups
}

/// Applies `plan` to `edit`: every collective of the steady steps loses its wait for peers and
/// costs its modeled time. Returns the number of collectives changed.
pub fn apply(plan: &DdpPlan, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let fallback = stepcast_trace::NameId(0);
    let names = InsertNames {
        all_reduce: fallback,
        all_gather: fallback,
        reduce_scatter: fallback,
        compress: fallback,
        decompress: fallback,
        exchange_cpu: fallback,
    };
    apply_named(plan, edit, &names)
}

/// [`apply`] with the names inserted tasks take.
pub fn apply_named(
    plan: &DdpPlan,
    edit: &mut EditGraph,
    names: &InsertNames,
) -> Result<usize, WhatIfError> {
    if let Some(inserted) = &plan.inserted {
        if inserted.stripped > 0 {
            insert::strip_collectives(edit)?;
        }
        if !inserted.fsdp_units.is_empty() {
            let counts = fsdp::insert(edit, &inserted.fsdp_units, names)?;
            let mut by_cost: BTreeMap<i64, Vec<TaskId>> = BTreeMap::new();
            for &(task, ns) in &inserted.sharded_optimizer {
                if edit.is_alive(task) && !edit.is_frozen(task) {
                    by_cost.entry(ns).or_default().push(task);
                }
            }
            for (ns, tasks) in by_cost {
                edit.set_duration(&Selection::new(tasks), ns)?;
            }
            return Ok(counts.all_gathers + counts.reduce_scatters);
        }
        let share = plan.config.host_share();
        // Gradients readied by host tasks: a CPU-only trace (`gradients::find_gradients`).
        let host_only = inserted
            .exchanges
            .first()
            .is_some_and(|x| !edit.kind(x.ready).on_device());
        if host_only && share > 1.0 {
            // The node's processes time-share its cores: every host task of the steady steps
            // and the untraced host time after it run `share` times slower. The exchanges,
            // inserted after, keep the link's time (measured on shared cores).
            let host = edit.select_where(|t| !edit.kind(t).on_device());
            edit.scale(&host, share)?;
            edit.scale_gaps(&host, share)?;
        }
        let done = insert::insert(
            edit,
            &inserted.gradients,
            &inserted.exchanges,
            &inserted.order,
            names,
            &inserted.forward_gates,
        )?;
        if host_only && plan.config.no_spare_core() {
            insert::charge_exchange_cpu(
                edit,
                &inserted.exchanges,
                &done,
                names.exchange_cpu,
                share,
            )?;
        }
        return Ok(done.exchanges.len());
    }
    let mut by_cost: BTreeMap<i64, Vec<TaskId>> = BTreeMap::new();
    for b in &plan.buckets {
        let task = b.recorded.task;
        if edit.is_alive(task) && !edit.is_frozen(task) {
            by_cost.entry(b.predicted_ns).or_default().push(task);
        }
    }
    let mut changed = 0;
    for (cost, tasks) in by_cost {
        let selection = Selection::new(tasks);
        edit.drop_inputs(&selection, EdgeKind::PeerArrival)?;
        edit.set_duration(&selection, cost)?;
        changed += selection.len();
    }
    let groups: Vec<(Vec<TaskId>, i64)> = plan
        .merged
        .iter()
        .map(|(group, cost)| {
            let tasks = group.iter().map(|&i| plan.buckets[i].recorded.task);
            (tasks.collect(), *cost)
        })
        .collect();
    merge_collectives(edit, &groups)?;
    Ok(changed)
}

/// Merges each group of collectives (tasks of one lane) into one costing the group's ns:
/// one collective where the last of them was (when all its gradients are ready); the earlier
/// ones are removed, what waited for them waiting for their inputs instead (making it wait
/// for the merged one could close a cycle). Removed or frozen tasks are left out of their
/// group. Returns the number of collectives removed.
pub fn merge_collectives(
    edit: &mut EditGraph,
    groups: &[(Vec<TaskId>, i64)],
) -> Result<usize, WhatIfError> {
    let mut removed = 0;
    for (group, cost) in groups {
        let mut tasks: Vec<TaskId> = group
            .iter()
            .copied()
            .filter(|&t| edit.is_alive(t) && !edit.is_frozen(t))
            .collect();
        tasks.sort_unstable();
        let Some(last) = tasks.pop() else { continue };
        if tasks.is_empty() {
            continue;
        }
        edit.set_duration(&Selection::new(vec![last]), *cost)?;
        removed += tasks.len();
        edit.remove(&Selection::new(tasks), HostGaps::Keep)?;
    }
    Ok(removed)
}

/// Runs the DDP what-if for `config` against `baseline`.
pub fn ddp(
    context: &Context<'_>,
    baseline: &Prediction,
    config: &DdpConfig,
) -> Result<(DdpPlan, Outcome), DdpError> {
    let mut result = sweep_with(context, baseline, &[*config], &DdpInputs::default())?;
    let plan = result.plans.pop().ok_or(DdpError::NoCollectives)?;
    let outcome = result.last.ok_or(DdpError::NoCollectives)?;
    Ok((plan, outcome))
}

/// What the insertion model reads besides the trace.
#[derive(Clone, Debug, Default)]
pub struct DdpInputs {
    /// Gradient bytes per parameter, in parameter order (a `--gradients` file).
    pub gradient_file: Option<Vec<i64>>,
    /// The names of inserted tasks; `None`: [`InsertNames::resolve`] on the trace.
    pub names: Option<InsertNames>,
}

/// What the insertion model computes once for every configuration.
struct Insertion {
    gradients: std::sync::Arc<Gradients>,
    steady: Vec<u32>,
    stripped: usize,
    elementwise: Option<f64>,
    /// Replayed end of every task of the input (P3's ready times).
    ready_end_ns: Option<Vec<i64>>,
}

impl Insertion {
    fn new(
        context: &Context<'_>,
        recorded: &[RecordedCollective],
        calibration: &Calibration,
        inputs: &DdpInputs,
        p3: bool,
    ) -> Result<Insertion, DdpError> {
        let window = context.window;
        let find =
            |file: Option<&[i64]>| find_gradients(context.trace, window, context.mapping, file);
        let gradients = match find(inputs.gradient_file.as_deref()) {
            // No shapes, but the job's own all-reduces: their sizes are the gradients'.
            Err(gradients::GradientError::NoSizes) => {
                let sizes = recorded_bucket_sizes(recorded, calibration)
                    .ok_or(gradients::GradientError::NoSizes)?;
                let mut gradients = find(Some(&sizes))?;
                gradients.source = SizeSource::RecordedBuckets;
                gradients
            }
            found => found?,
        };
        let first = super::first_steady(window) as u32;
        let steady: Vec<u32> = (first..window.steps.len() as u32).collect();
        let graph = &window.graph;
        let optimizer_ns: i64 = (0..graph.task_count())
            .filter(|&t| {
                graph.kind[t].on_device()
                    && context.mapping.phase[t] == crate::analyze::mapping::Phase::Optimizer
                    && steady.contains(&graph.step[t])
            })
            .map(|t| graph.dur_ns[t])
            .sum();
        let per_step = optimizer_ns / steady.len().max(1) as i64;
        let stripped = recorded
            .iter()
            .filter(|r| r.step != NO_STEP && steady.contains(&r.step))
            .count();
        let ready_end_ns = if p3 {
            let timeline = crate::simulate::simulate(
                graph,
                &crate::simulate::RecordedOrder,
                crate::simulate::SimOptions::default(),
            )
            .map_err(WhatIfError::from)?;
            Some(timeline.end_ns)
        } else {
            None
        };
        Ok(Insertion {
            elementwise: insert::elementwise_bytes_per_ns(&gradients, per_step),
            gradients: std::sync::Arc::new(gradients),
            steady,
            stripped,
            ready_end_ns,
        })
    }
}

/// The bytes of the last step's recorded all-reduces, in parameter order (the reverse of issue
/// order, as a `--gradients` file): what DDP sent is what backward produced. `None` without
/// recorded all-reduces, or when any lacks its recorded size: sizes inferred from transfer
/// times include the wait for peers (13.2 GB per step on `df_index_resolver`, whose model
/// holds far less), too loose to plan new exchanges on.
fn recorded_bucket_sizes(
    recorded: &[RecordedCollective],
    calibration: &Calibration,
) -> Option<Vec<i64>> {
    let plan = plan(recorded, calibration, &DdpConfig::default()).ok()?;
    let last = recorded
        .iter()
        .filter(|r| r.collective == Collective::AllReduce && r.step != NO_STEP)
        .map(|r| r.step)
        .max()?;
    let buckets: Vec<&Bucket> = plan
        .buckets
        .iter()
        .filter(|b| b.recorded.step == last && b.recorded.collective == Collective::AllReduce)
        .collect();
    if buckets.iter().any(|b| b.bytes_inferred) {
        return None;
    }
    Some(
        buckets
            .iter()
            .rev()
            .map(|b| b.bytes.round() as i64)
            .collect(),
    )
}

/// An element-wise pass's throughput when the trace has no optimizer kernels to measure it
/// on: 500 GB/s (a third of an A100's HBM bandwidth, as element-wise kernels reach).
const ASSUMED_ELEMENTWISE_BYTES_PER_NS: f64 = 500.0;

fn plan_inserted(
    context: &Context<'_>,
    calibration: &Calibration,
    config: &DdpConfig,
    network: Network,
    insertion: &Insertion,
) -> DdpPlan {
    let cap = config.bucket_bytes.unwrap_or(DEFAULT_BUCKET_BYTES).max(1);
    let costs = Costs {
        topology: &network.topology,
        dgc: config.compression,
        elementwise_bytes_per_ns: insertion
            .elementwise
            .unwrap_or(ASSUMED_ELEMENTWISE_BYTES_PER_NS),
    };
    let mut sharded_optimizer = Vec::new();
    let (exchanges, order, forward_gates, fsdp_units) = if config.fsdp {
        let units = fsdp::plan_units(
            context.window,
            context.mapping,
            &insertion.gradients,
            &insertion.steady,
            cap,
            &network.topology,
        );
        sharded_optimizer = fsdp::shard_optimizer(
            context.window,
            context.mapping,
            &insertion.steady,
            network.topology.world_size(),
        );
        (Vec::new(), Vec::new(), Vec::new(), units)
    } else {
        let exchanges = insert::plan_exchanges(
            &insertion.gradients,
            &insertion.steady,
            cap,
            config.p3,
            &costs,
        );
        let order = match (&insertion.ready_end_ns, config.p3) {
            (Some(end), true) => {
                // Per step, the priority list schedule; steps one after the other.
                let mut order = Vec::with_capacity(exchanges.len());
                let mut start = 0;
                while start < exchanges.len() {
                    let step = exchanges[start].step;
                    let len = exchanges[start..]
                        .iter()
                        .take_while(|x| x.step == step)
                        .count();
                    let slice = &exchanges[start..start + len];
                    let ready: Vec<i64> = slice.iter().map(|x| end[x.ready.index()]).collect();
                    order.extend(
                        insert::priority_order(slice, &ready)
                            .into_iter()
                            .map(|i| start + i),
                    );
                    start += len;
                }
                order
            }
            _ => (0..exchanges.len()).collect(),
        };
        let gates = if config.p3 {
            insert::p3_forward_gates(
                context.window,
                context.mapping,
                &insertion.gradients,
                &exchanges,
            )
        } else {
            Vec::new()
        };
        (exchanges, order, gates, Vec::new())
    };
    DdpPlan {
        config: *config,
        topology: network.topology,
        calibration: calibration.clone(),
        source: GradientSource::Gradients(insertion.gradients.source),
        intra_source: network.intra_source,
        recorded_world_size: network.recorded_world_size,
        buckets: Vec::new(),
        merged: Vec::new(),
        inserted: Some(InsertedPlan {
            gradients: insertion.gradients.clone(),
            bucket_bytes: cap,
            exchanges,
            order,
            forward_gates,
            fsdp_units,
            sharded_optimizer,
            stripped: insertion.stripped,
            elementwise_bytes_per_ns: costs.elementwise_bytes_per_ns,
            elementwise_measured: insertion.elementwise.is_some(),
            steady_steps: insertion.steady.len(),
        }),
    }
}

/// One row of a scaling sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub config: DdpConfig,
    pub predicted_ns: i64,
    /// Modeled communication per steady step (not all of it on the critical path).
    pub comm_ns: i64,
    /// `baseline / predicted`.
    pub speedup: f64,
}

/// What [`sweep`] returns.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub calibration: Calibration,
    /// Per configuration, in the order given.
    pub plans: Vec<DdpPlan>,
    pub points: Vec<SweepPoint>,
    /// The full outcome of the last configuration.
    pub last: Option<Outcome>,
}

/// The DDP what-if for each of `configs`, recorded collectives and calibration computed once.
pub fn sweep(
    context: &Context<'_>,
    baseline: &Prediction,
    configs: &[DdpConfig],
) -> Result<Sweep, DdpError> {
    sweep_with(context, baseline, configs, &DdpInputs::default())
}

/// [`sweep`] with the insertion model's inputs.
pub fn sweep_with(
    context: &Context<'_>,
    baseline: &Prediction,
    configs: &[DdpConfig],
    inputs: &DdpInputs,
) -> Result<Sweep, DdpError> {
    let recorded = recorded_collectives(context.trace, context.window, context.mapping);
    let calibration = calibrate(&recorded);
    let steady = steady_steps(context.window);
    let needs_insertion = recorded.is_empty() || configs.iter().any(DdpConfig::inserts);
    if !context.window.graph.has_device_tasks() {
        for config in configs {
            match (config.compression, config.fsdp, config.p3) {
                (Some(_), _, _) => return Err(DdpError::CpuOnly("gradient compression")),
                (_, true, _) => return Err(DdpError::CpuOnly("FSDP")),
                (_, _, true) => return Err(DdpError::CpuOnly("P3")),
                _ => {}
            }
        }
    }
    let insertion = if needs_insertion {
        let p3 = configs.iter().any(|c| c.p3);
        Some(Insertion::new(
            context,
            &recorded,
            &calibration,
            inputs,
            p3,
        )?)
    } else {
        None
    };
    let names = inputs.names.unwrap_or_else(|| {
        let fallback = context
            .window
            .graph
            .name
            .first()
            .copied()
            .unwrap_or(stepcast_trace::NameId(0));
        InsertNames::resolve(context.trace, fallback)
    });
    let mut plans = Vec::with_capacity(configs.len());
    let mut points = Vec::with_capacity(configs.len());
    let mut last = None;
    // One editable window for every configuration of the sweep.
    let prepared = Prepared::new(context, baseline);
    for config in configs {
        let network = network(&recorded, &calibration, config)?;
        let plan = match &insertion {
            Some(insertion) if recorded.is_empty() || config.inserts() => {
                plan_inserted(context, &calibration, config, network, insertion)
            }
            _ => plan_recorded(&recorded, &calibration, config, network)?,
        };
        let outcome = what_if_prepared(context, &prepared, |edit| {
            apply_named(&plan, edit, &names).map(|_| ())
        })?;
        points.push(SweepPoint {
            config: *config,
            predicted_ns: outcome.predicted.step_ns,
            comm_ns: plan.comm_per_step_ns(steady),
            speedup: outcome.speedup,
        });
        plans.push(plan);
        last = Some(outcome);
    }
    Ok(Sweep {
        calibration,
        plans,
        points,
        last,
    })
}

fn steady_steps(window: &Window) -> usize {
    let n = window.steps.len();
    if n >= 3 { n - 1 } else { n }
}

/// The recorded steady-state period, measured as [`super::predict`] measures a replay: from
/// the end of the step before the first steady one to the end of the last, per step; the end
/// of a step is when its last task ended in the recording.
pub fn measured_step_ns(window: &Window) -> Option<i64> {
    let graph = &window.graph;
    let n = window.steps.len();
    let mut end: Vec<Option<i64>> = vec![None; n];
    let mut start: Vec<Option<i64>> = vec![None; n];
    for t in 0..graph.task_count() {
        let s = graph.step[t];
        if s == NO_STEP || s as usize >= n {
            continue;
        }
        let e = &mut end[s as usize];
        *e = Some(e.map_or(graph.rec_end_ns[t], |v| v.max(graph.rec_end_ns[t])));
        let b = &mut start[s as usize];
        *b = Some(b.map_or(graph.rec_start_ns[t], |v| v.min(graph.rec_start_ns[t])));
    }
    let first = if n >= 3 { 1 } else { 0 };
    let last = (first..n).rev().find(|&s| end[s].is_some())?;
    let from = match first.checked_sub(1).and_then(|p| end[p]) {
        Some(previous) => previous,
        None => window.steps[first].start_ns.min(start[first]?),
    };
    Some((end[last]? - from) / (last - first + 1) as i64)
}
