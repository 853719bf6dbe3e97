//! The recorded collectives of a trace and the network fitted to them.
//!
//! A one-rank trace records each NCCL kernel from its launch on this rank to the end of the
//! collective, so its duration includes waiting for the slowest peer, and waiting only ever
//! adds time. The fit is therefore a lower envelope, not a least-squares line through waits:
//! per collective, group size and message size the fastest recorded kernel is a point; the
//! intercept (fixed cost) is the fastest collective of the trace (a tiny message is all fixed
//! cost); the slope is the smallest `(t − intercept) / bytes` among the large messages (at
//! least a quarter of the largest), i.e. the best bandwidth the link was seen to reach. The
//! slope gives the bus bandwidth (`factor(n) / slope`). The r² of that line against the points
//! is reported: a low value says the recorded instances are dominated by waits.

use std::collections::BTreeMap;

use stepcast_trace::{CommArgs, EventId, Trace};

use super::{Algorithm, Collective, Link, Topology};
use crate::Window;
use crate::analyze::mapping::Mapping;
use crate::graph::{NO_STEP, TaskId, TaskKind};

/// A recorded NCCL kernel and what the trace says about it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCollective {
    pub task: TaskId,
    /// Its graph lane (stream).
    pub lane: u32,
    pub collective: Collective,
    /// Message bytes (`In/Out msg nelems` × `dtype`), when recorded.
    pub bytes: Option<i64>,
    /// Ranks in its process group (`Group size`, else the trace's world size, else 2).
    pub group_size: u32,
    /// The kernel's recorded duration (waiting for peers included).
    pub recorded_ns: i64,
    pub step: u32,
    /// Its place among the step's collectives (the same bucket in every step of DDP).
    pub slot: u32,
    /// Where the sizes came from: the kernel's own args, or the `record_param_comms` op around
    /// its launch.
    pub from_kernel_args: bool,
}

/// What a collective kernel named `name`, with NCCL metadata `args` where the trace has it,
/// is: its collective (the args' name, else the kernel's, else an all-reduce), its message
/// bytes and its group size (the args', else the trace's world size, else 2).
pub fn describe(
    trace: &Trace,
    name: &str,
    args: Option<&CommArgs>,
) -> (Collective, Option<i64>, u32) {
    let world = trace
        .distributed
        .as_ref()
        .and_then(|d| d.world_size)
        .filter(|&w| w > 0)
        .unwrap_or(2) as u32;
    let collective = args
        .and_then(|a| a.collective.as_deref())
        .and_then(Collective::parse)
        .or_else(|| Collective::parse(name))
        .unwrap_or(Collective::AllReduce);
    let bytes = args.and_then(CommArgs::bytes).filter(|&b| b > 0);
    let group_size = args
        .and_then(|a| a.group_size)
        .filter(|&g| g > 0)
        .map_or(world, |g| g as u32);
    (collective, bytes, group_size)
}

/// The NCCL metadata recorded for `event`, if any.
pub fn comm_args(trace: &Trace, event: EventId) -> Option<&CommArgs> {
    trace
        .comm_args
        .binary_search_by_key(&event, |(e, _)| *e)
        .ok()
        .map(|i| &trace.comm_args[i].1)
}

/// Every collective task of the window with its metadata: the kernel's own args (newer
/// traces), else those of the innermost `record_param_comms` op around its launching call
/// (the op stack of `mapping`).
pub fn recorded_collectives(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
) -> Vec<RecordedCollective> {
    let graph = &window.graph;
    let mut out = Vec::new();
    let mut per_step: BTreeMap<u32, u32> = BTreeMap::new();
    for t in 0..graph.task_count() {
        if graph.kind[t] != TaskKind::Collective {
            continue;
        }
        let task = TaskId(t as u32);
        let own = comm_args(trace, graph.event[t]);
        let args = own.or_else(|| {
            mapping
                .stack(task)
                .iter()
                .rev()
                .find_map(|&e| comm_args(trace, e))
        });
        let (collective, bytes, group_size) = describe(trace, trace.name(graph.name[t]), args);
        let step = graph.step[t];
        let slot = if step == NO_STEP {
            u32::MAX
        } else {
            let next = per_step.entry(step).or_insert(0);
            *next += 1;
            *next - 1
        };
        out.push(RecordedCollective {
            task,
            lane: graph.lane[t],
            collective,
            bytes,
            group_size,
            recorded_ns: graph.rec_end_ns[t] - graph.rec_start_ns[t],
            step,
            slot,
            from_kernel_args: own.is_some(),
        });
    }
    out
}

/// The lower-envelope fit of `t = intercept + slope × bytes` for one collective and group
/// size (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    pub collective: Collective,
    pub group_size: u32,
    /// Distinct message sizes (the fastest instance of each).
    pub points: usize,
    /// Recorded instances the points were chosen from.
    pub instances: usize,
    /// Fixed cost per collective, ns (`α` of the α-β model, all latency steps included).
    pub intercept_ns: f64,
    /// ns per byte (`β`).
    pub slope_ns_per_byte: f64,
    /// Coefficient of determination of the fit (1 with two points).
    pub r2: f64,
    /// `factor(n) / slope`: the bus bandwidth the slope stands for, bytes per second.
    pub bus_bandwidth_bps: f64,
}

/// What the trace's collectives say about its network.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calibration {
    /// One fit per collective and group size whose messages have known, non-zero sizes.
    pub fits: Vec<Fit>,
    /// Recorded collectives, and how many of them carry their message size.
    pub collectives: usize,
    pub with_sizes: usize,
    /// The fastest recorded collective (a lower bound on the fixed cost), ns.
    pub floor_ns: Option<i64>,
}

impl Calibration {
    /// The all-reduce fit (DDP's collective), else any fit, largest sample first.
    pub fn primary(&self) -> Option<&Fit> {
        self.fits
            .iter()
            .filter(|f| f.collective == Collective::AllReduce)
            .max_by_key(|f| f.points)
            .or_else(|| self.fits.iter().max_by_key(|f| f.points))
    }

    /// The link and fixed cost the primary fit stands for: bus bandwidth from the slope;
    /// the intercept split into `latency_steps × α` (α at most `alpha_ns`, the preset's
    /// per-hop latency) and a fixed `base_ns` for the rest. Returns `(link, base_ns)`.
    pub fn link(&self, alpha_ns: f64) -> Option<(Link, f64)> {
        let fit = self.primary()?;
        if !(fit.bus_bandwidth_bps.is_finite() && fit.bus_bandwidth_bps > 0.0) {
            return None;
        }
        let steps = fit
            .collective
            .latency_steps(Algorithm::Ring, fit.group_size)
            .max(1.0);
        let intercept = fit.intercept_ns.max(0.0);
        let alpha = alpha_ns.min(intercept / steps);
        Some((
            Link {
                alpha_ns: alpha,
                bandwidth_bps: fit.bus_bandwidth_bps,
            },
            intercept - steps * alpha,
        ))
    }
}

/// Fits the network to `recorded` (see the module documentation).
pub fn calibrate(recorded: &[RecordedCollective]) -> Calibration {
    let mut groups: BTreeMap<(Collective, u32), BTreeMap<i64, i64>> = BTreeMap::new();
    let mut instances: BTreeMap<(Collective, u32), usize> = BTreeMap::new();
    for r in recorded {
        let Some(bytes) = r.bytes else { continue };
        let fastest = groups
            .entry((r.collective, r.group_size))
            .or_default()
            .entry(bytes)
            .or_insert(i64::MAX);
        *fastest = (*fastest).min(r.recorded_ns);
        *instances.entry((r.collective, r.group_size)).or_default() += 1;
    }
    let floor = recorded.iter().map(|r| r.recorded_ns).min().unwrap_or(0) as f64;
    let mut fits = Vec::new();
    for ((collective, group_size), points) in groups {
        if points.keys().all(|&b| b <= 0) {
            continue;
        }
        let xs: Vec<f64> = points.keys().map(|&b| b as f64).collect();
        let ys: Vec<f64> = points.values().map(|&t| t as f64).collect();
        let (intercept, slope, r2) = envelope(&xs, &ys, floor);
        fits.push(Fit {
            collective,
            group_size,
            points: xs.len(),
            instances: instances[&(collective, group_size)],
            intercept_ns: intercept,
            slope_ns_per_byte: slope,
            r2,
            bus_bandwidth_bps: if slope > 0.0 {
                collective.bus_factor(group_size) / slope * 1e9
            } else {
                f64::INFINITY
            },
        });
    }
    Calibration {
        fits,
        collectives: recorded.len(),
        with_sizes: recorded.iter().filter(|r| r.bytes.is_some()).count(),
        floor_ns: recorded.iter().map(|r| r.recorded_ns).min(),
    }
}

/// The lower envelope `y = a + b x` with `a = floor` (see the module documentation): returns
/// `(a, b, r²)`, r² of the line against the points (1 − residual / total sum of squares; 1 with
/// one point).
fn envelope(xs: &[f64], ys: &[f64], floor: f64) -> (f64, f64, f64) {
    let a = floor.min(ys.iter().copied().fold(f64::INFINITY, f64::min));
    let largest = xs.iter().copied().fold(0.0, f64::max);
    let b = xs
        .iter()
        .zip(ys)
        .filter(|&(&x, _)| x > 0.0 && x >= largest / 4.0)
        .map(|(&x, &y)| ((y - a) / x).max(0.0))
        .fold(f64::INFINITY, f64::min);
    let b = if b.is_finite() { b } else { 0.0 };
    let mean_y = ys.iter().sum::<f64>() / ys.len() as f64;
    let total: f64 = ys.iter().map(|y| (y - mean_y).powi(2)).sum();
    let residual: f64 = xs
        .iter()
        .zip(ys)
        .map(|(x, y)| (y - a - b * x).powi(2))
        .sum();
    let r2 = if total == 0.0 || xs.len() < 2 {
        1.0
    } else {
        1.0 - residual / total
    };
    (a, b, r2)
}

/// The model's time for a recorded collective on `topology` (its own group size replaced by
/// the topology's world size).
pub fn predict_ns(topology: &Topology, collective: Collective, bytes: f64) -> i64 {
    topology.time_ns(collective, bytes).round() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(bytes: i64, ns: i64) -> RecordedCollective {
        RecordedCollective {
            task: TaskId(0),
            lane: 0,
            collective: Collective::AllReduce,
            bytes: Some(bytes),
            group_size: 2,
            recorded_ns: ns,
            step: 0,
            slot: 0,
            from_kernel_args: true,
        }
    }

    #[test]
    fn fits_the_fastest_instance_per_size() {
        // 10 µs + 1 ns per 10 bytes; slower instances (waiting for a peer) are ignored, and
        // so is a small message waiting in every instance.
        let data = [
            recorded(8, 10_000),
            recorded(100_000, 900_000),
            recorded(1_000_000, 110_000),
            recorded(1_000_000, 300_000),
            recorded(2_000_000, 210_000),
            recorded(4_000_000, 410_000),
            recorded(4_000_000, 900_000),
        ];
        let calibration = calibrate(&data);
        let fit = calibration.primary().expect("a fit");
        assert_eq!((fit.points, fit.instances), (5, 7));
        assert!((fit.intercept_ns - 10_000.0).abs() < 1e-6);
        assert!((fit.slope_ns_per_byte - 0.1).abs() < 1e-9);
        assert!(fit.r2 < 0.5, "the waiting point is far off the envelope");
        // factor(2) = 1: 10 GB/s.
        assert!((fit.bus_bandwidth_bps - 1e10).abs() < 1.0);
        let (link, base) = calibration.link(1_000.0).expect("a link");
        assert_eq!(link.alpha_ns, 1_000.0);
        assert!((base - 8_000.0).abs() < 1e-6);
        // The calibrated model reproduces the fastest instances at their world size.
        let topology = Topology {
            base_ns: base,
            ..Topology::new(2, 8, link, link)
        };
        assert_eq!(predict_ns(&topology, Collective::AllReduce, 2e6), 210_000);
    }
}
