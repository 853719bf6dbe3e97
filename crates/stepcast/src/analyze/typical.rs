//! The breakdowns of the typical step: the recorded breakdowns of the steady-state steps the
//! typical step is built from (`TypicalStep::steps_used`), averaged part by part.
//!
//! Why averaged recorded breakdowns, not breakdowns of the replayed typical step: the replay
//! keeps only each task's begin and end, while the breakdowns need what the replay drops (the
//! host's nested ops, the waits inside blocking calls, the idle causes); and the averaged
//! recording describes what the machine did, not what the model predicts. The typical step's
//! tasks are the trimmed means of the same steps' tasks, so both describe the same steps.
//!
//! Every part is the mean of that part over the steps (a layer or phase a step lacks counts
//! 0 there); its span is the mean of their spans, rounded half up. Parts are rounded to whole
//! nanoseconds by largest remainder, so each partition sums exactly to the span, and a part is
//! its mean rounded down or up, hence between the steps' smallest and largest value of it.
//! Partitions nested in another (the device's idle time by cause inside `cpu_only + idle`,
//! device- and host-busy time by phase and layer inside the busy time) are rounded to the
//! already rounded total they split, so the identities between partitions hold as they do for
//! a single step.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use stepcast_trace::{NameId, Trace};

use super::breakdown::{
    Breakdown, ByLayer, ByPhase, CommunicationOverlap, DeviceIdle, HostDevice, LaunchBound,
};
use super::mapping::Phase;

/// The breakdowns of the typical step.
#[derive(Clone, Debug, PartialEq)]
pub struct TypicalBreakdown {
    /// Step numbers averaged: the typical step's `steps_used`, in step order.
    pub steps_used: Vec<u64>,
    /// `step` is `None`; times run from 0 (`start_ns`) to the mean span (`end_ns`).
    pub breakdown: Breakdown,
}

/// The typical breakdown over the steps of `steps` numbered in `steps_used`; `None` when none
/// is. `trace` names layers (ties in time are listed by name, as for a single step).
pub fn typical_breakdown(
    trace: &Trace,
    steps: &[Breakdown],
    steps_used: &[u64],
) -> Option<TypicalBreakdown> {
    let used: Vec<&Breakdown> = steps
        .iter()
        .filter(|b| b.step.is_some_and(|n| steps_used.contains(&n)))
        .collect();
    if used.is_empty() {
        return None;
    }
    let mean = Mean {
        n: used.len() as i128,
    };
    let sum = |f: &dyn Fn(&Breakdown) -> i64| used.iter().map(|b| f(b) as i128).sum::<i128>();
    let span = mean.rounded(sum(&|b| b.span_ns()));

    let hd = mean.apportion(
        &[
            sum(&|b| b.host_device.cpu_only_ns),
            sum(&|b| b.host_device.gpu_only_ns),
            sum(&|b| b.host_device.overlap_ns),
            sum(&|b| b.host_device.idle_ns),
        ],
        span,
    );
    let host_device = HostDevice {
        cpu_only_ns: hd[0],
        gpu_only_ns: hd[1],
        overlap_ns: hd[2],
        idle_ns: hd[3],
    };
    let device_idle_ns = host_device.device_idle_ns();
    let device_busy_ns = span - device_idle_ns;

    let idle = mean.apportion(
        &[
            sum(&|b| b.device_idle.host_launch_ns),
            sum(&|b| b.device_idle.synchronization_ns),
            sum(&|b| b.device_idle.communication_ns),
            sum(&|b| b.device_idle.other_stream_ns),
            sum(&|b| b.device_idle.unexplained_ns),
        ],
        device_idle_ns,
    );
    let device_idle = DeviceIdle {
        host_launch_ns: idle[0],
        synchronization_ns: idle[1],
        communication_ns: idle[2],
        other_stream_ns: idle[3],
        unexplained_ns: idle[4],
    };

    let comm = mean.apportion(
        &[
            sum(&|b| b.communication.compute_only_ns),
            sum(&|b| b.communication.overlapped_ns),
            sum(&|b| b.communication.exposed_ns),
            sum(&|b| b.communication.neither_ns),
        ],
        span,
    );
    let communication = CommunicationOverlap {
        compute_only_ns: comm[0],
        overlapped_ns: comm[1],
        exposed_ns: comm[2],
        neither_ns: comm[3],
    };

    // The device's busy time by phase and layer splits its rounded busy time; the host's by
    // phase splits the span (its idle time is its own), and by layer the host's busy time.
    let phase_sums = |of: &dyn Fn(&Breakdown) -> &ByPhase| -> Vec<i128> {
        Phase::ALL
            .iter()
            .map(|&p| used.iter().map(|b| of(b).get(p) as i128).sum())
            .collect()
    };
    let device_phases = mean.apportion(&phase_sums(&|b| &b.device_by_phase), device_busy_ns);
    let device_by_phase = ByPhase {
        busy: Phase::ALL.iter().copied().zip(device_phases).collect(),
        idle_ns: device_idle_ns,
    };
    let mut host_sums = phase_sums(&|b| &b.host_by_phase);
    host_sums.push(sum(&|b| b.host_by_phase.idle_ns));
    let mut host_phases = mean.apportion(&host_sums, span);
    let host_idle_ns = host_phases.pop().unwrap_or(0);
    let host_by_phase = ByPhase {
        busy: Phase::ALL.iter().copied().zip(host_phases).collect(),
        idle_ns: host_idle_ns,
    };
    let device_by_layer = ByLayer {
        busy: mean.layers(trace, &used, |b| &b.device_by_layer, device_busy_ns),
        idle_ns: device_idle_ns,
    };
    let host_by_layer = ByLayer {
        busy: mean.layers(trace, &used, |b| &b.host_by_layer, span - host_idle_ns),
        idle_ns: host_idle_ns,
    };

    let count = |f: &dyn Fn(&Breakdown) -> u64| {
        mean.rounded(used.iter().map(|b| f(b) as i128).sum()).max(0) as u64
    };
    let launch_bound = LaunchBound {
        kernels: count(&|b| b.launch_bound.kernels),
        launch_bound: count(&|b| b.launch_bound.launch_bound),
        kernel_ns: mean.rounded(sum(&|b| b.launch_bound.kernel_ns)),
        launch_call_ns: mean.rounded(sum(&|b| b.launch_bound.launch_call_ns)),
    };

    Some(TypicalBreakdown {
        steps_used: used.iter().filter_map(|b| b.step).collect(),
        breakdown: Breakdown {
            step: None,
            start_ns: 0,
            end_ns: span,
            host_device,
            device_idle,
            communication,
            device_by_phase,
            device_by_layer,
            host_by_phase,
            host_by_layer,
            launch_bound,
        },
    })
}

/// Means over `n` steps, from sums, in integer arithmetic.
struct Mean {
    n: i128,
}

impl Mean {
    /// `sum / n` rounded half up.
    fn rounded(&self, sum: i128) -> i64 {
        (2 * sum + self.n).div_euclid(2 * self.n) as i64
    }

    /// The means of `sums`, rounded so they add up to `target` (largest remainder: each mean
    /// rounded down, then the ones with the largest remainders, earlier first among equals,
    /// rounded up until the target is met).
    fn apportion(&self, sums: &[i128], target: i64) -> Vec<i64> {
        let mut parts: Vec<i64> = sums.iter().map(|&s| s.div_euclid(self.n) as i64).collect();
        let mut order: Vec<usize> = (0..sums.len()).collect();
        order.sort_by_key(|&i| (Reverse(sums[i].rem_euclid(self.n)), i));
        let mut left = target - parts.iter().sum::<i64>();
        // When the target is the mean total rounded, `left` is at most the number of parts
        // with a remainder and one pass does; a nested target rounded elsewhere may ask for
        // more (or less), which the passes below give without breaking the sum.
        while left > 0 && !order.is_empty() {
            for &i in &order {
                if left == 0 {
                    break;
                }
                parts[i] += 1;
                left -= 1;
            }
        }
        while left < 0 {
            let mut taken = false;
            for &i in order.iter().rev() {
                if left < 0 && parts[i] > 0 {
                    parts[i] -= 1;
                    left += 1;
                    taken = true;
                }
            }
            if !taken {
                break;
            }
        }
        parts
    }

    /// Busy time by layer over `used`, rounded to `target`: layers with no time left out,
    /// longest first, then by name (no layer known last among equals).
    fn layers(
        &self,
        trace: &Trace,
        used: &[&Breakdown],
        of: impl Fn(&Breakdown) -> &ByLayer,
        target: i64,
    ) -> Vec<(Option<NameId>, i64)> {
        let mut sums: BTreeMap<Option<NameId>, i128> = BTreeMap::new();
        for b in used {
            for &(layer, ns) in &of(b).busy {
                *sums.entry(layer).or_default() += ns as i128;
            }
        }
        let name = |l: Option<NameId>| l.map_or("", |n| trace.name(n));
        let order = |a: &Option<NameId>, b: &Option<NameId>| {
            a.is_none()
                .cmp(&b.is_none())
                .then_with(|| name(*a).cmp(name(*b)))
                .then_with(|| a.cmp(b))
        };
        let mut layers: Vec<(Option<NameId>, i128)> = sums.into_iter().collect();
        layers.sort_by(|a, b| order(&a.0, &b.0));
        let sums: Vec<i128> = layers.iter().map(|&(_, s)| s).collect();
        let parts = self.apportion(&sums, target);
        let mut out: Vec<(Option<NameId>, i64)> = layers
            .into_iter()
            .map(|(layer, _)| layer)
            .zip(parts)
            .filter(|&(_, ns)| ns > 0)
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| order(&a.0, &b.0)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_sums_to_the_target_with_each_part_its_mean_rounded() {
        let mean = Mean { n: 3 };
        // Means 3.33, 3.33, 3.33: the target 10 rounds the first (earliest of equals) up.
        assert_eq!(mean.apportion(&[10, 10, 10], 10), vec![4, 3, 3]);
        // Means 1.67, 0.67, 0.67: total 3; the largest remainder wins, then the earlier.
        assert_eq!(mean.apportion(&[5, 2, 2], 3), vec![2, 1, 0]);
        // A nested target asking one less than the floors: taken from the smallest remainder.
        assert_eq!(mean.apportion(&[6, 4], 2), vec![1, 1]);
        assert_eq!(mean.rounded(4), 1);
        assert_eq!(mean.rounded(5), 2);
    }
}
