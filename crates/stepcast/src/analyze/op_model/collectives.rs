//! Collectives in the op model: their message bytes over their recorded time, as NCCL's tests
//! report them (algorithm bandwidth, and bus bandwidth: the algorithm bandwidth times the share
//! of the message each link carries for the collective over its group, so one number compares
//! across group sizes). A recorded collective's time includes its wait for the slowest peer:
//! these are lower bounds on what the links did, never the links' speed.

use std::collections::BTreeMap;

use stepcast_trace::Trace;

use crate::analyze::mapping::Mapping;
use crate::comm::Collective;
use crate::comm::calibrate::recorded_collectives;
use crate::window::Window;

/// One collective type over one group size, summed over the window.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveThroughput {
    pub collective: Collective,
    pub group_size: u32,
    pub instances: u64,
    /// Of them, instances whose message size was recorded.
    pub sized: u64,
    /// Message bytes of the sized instances.
    pub bytes: f64,
    /// Recorded time of the sized instances (waiting for peers included).
    pub sized_ns: i64,
    /// Recorded time of all the instances.
    pub device_ns: i64,
}

impl CollectiveThroughput {
    /// Algorithm bandwidth, GB/s: message bytes over the recorded time.
    pub fn algbw_gb_s(&self) -> f64 {
        if self.sized_ns > 0 {
            self.bytes / self.sized_ns as f64
        } else {
            0.0
        }
    }

    /// Bus bandwidth, GB/s (NCCL's `busbw = algbw × factor`: 2(n − 1)/n for an all-reduce,
    /// (n − 1)/n for all-gather, reduce-scatter and all-to-all, 1 for the others).
    pub fn busbw_gb_s(&self) -> f64 {
        self.algbw_gb_s() * self.collective.bus_factor(self.group_size)
    }
}

/// The window's collectives by type and group size, most time first.
pub fn collective_throughput(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
) -> Vec<CollectiveThroughput> {
    let mut by_kind: BTreeMap<(Collective, u32), CollectiveThroughput> = BTreeMap::new();
    for recorded in recorded_collectives(trace, window, mapping) {
        let entry = by_kind
            .entry((recorded.collective, recorded.group_size))
            .or_insert_with(|| CollectiveThroughput {
                collective: recorded.collective,
                group_size: recorded.group_size,
                instances: 0,
                sized: 0,
                bytes: 0.0,
                sized_ns: 0,
                device_ns: 0,
            });
        entry.instances += 1;
        entry.device_ns += recorded.recorded_ns;
        if let Some(bytes) = recorded.bytes {
            entry.sized += 1;
            entry.bytes += bytes as f64;
            entry.sized_ns += recorded.recorded_ns;
        }
    }
    let mut out: Vec<CollectiveThroughput> = by_kind.into_values().collect();
    out.sort_by(|a, b| {
        b.device_ns
            .cmp(&a.device_ns)
            .then(a.collective.cmp(&b.collective))
            .then(a.group_size.cmp(&b.group_size))
    });
    out
}
