//! Device saturation: a kernel whose blocks fill every multiprocessor holds the device. A
//! kernel of another stream recorded to start while it ran got its multiprocessors only as the
//! full kernel's blocks retired, in its last waves.
//!
//! The pair is the recording's (which kernel the device was busy with when the other started,
//! like the recorded order of a lane); the time is the cause's: a wave of the full kernel lasts
//! its duration over its waves, from its launch configuration (CUPTI's `warps per SM` and `est.
//! achieved occupancy %`, the device's `maxThreadsPerMultiprocessor`), and the other kernel is
//! released two waves before the end (a wave's blocks do not retire at once). A faster full
//! kernel in a what-if releases the other one earlier. Pairs the recorded times contradict
//! are dropped and counted. This is an edge, not a capacity the engine tracks: a side stream
//! held by a run of full kernels, or by a large copy (no launch configuration), is not
//! modelled.

use super::device_lanes::DeviceLanes;
use super::{Builder, PendingEdge, TOLERANCE_NS};
use crate::graph::{EdgeKind, TaskId, TaskKind};

/// Warp slots per multiprocessor where the trace does not say (every NVIDIA GPU since Volta:
/// 2048 threads).
const DEFAULT_MAX_WARPS_PER_SM: f64 = 64.0;

impl Builder<'_> {
    pub(super) fn saturation_edges(
        &mut self,
        device_lanes: &DeviceLanes,
        edges: &mut Vec<PendingEdge>,
    ) {
        let trace = self.trace;
        if trace.kernel_fill.is_empty() {
            return;
        }
        let g = &self.graph;
        let max_warps = |device: i64| {
            trace
                .devices
                .iter()
                .find(|d| d.id == device)
                .and_then(|d| d.max_threads_per_sm)
                .map_or(DEFAULT_MAX_WARPS_PER_SM, |t| t as f64 / 32.0)
        };
        // Kernel lanes by device.
        let mut lanes_of: Vec<(i64, u32)> = (0..g.lanes.len() as u32)
            .filter(|&l| {
                let lane = &g.lanes[l as usize];
                lane.task_count > 0
                    && g.kind
                        [lane.first_task as usize..(lane.first_task + lane.task_count) as usize]
                        .iter()
                        .any(|k| matches!(k, TaskKind::Kernel | TaskKind::Collective))
            })
            .map(|l| (device_lanes.device_of(l), l))
            .collect();
        lanes_of.sort_unstable();
        let mut added = 0u64;
        let mut rejected = 0u64;
        for t in 0..g.task_count() {
            if g.kind[t] != TaskKind::Kernel {
                continue;
            }
            let Ok(i) = trace
                .kernel_fill
                .binary_search_by_key(&g.event[t], |(e, _)| *e)
            else {
                continue;
            };
            let lane = g.lane[t];
            let device = device_lanes.device_of(lane);
            let Some(waves) = trace.kernel_fill[i].1.waves(max_warps(device)) else {
                continue;
            };
            if waves <= 1.0 {
                continue;
            }
            let (start, end) = (g.rec_start_ns[t], g.rec_end_ns[t]);
            // Blocks of one wave do not retire at once: the last two waves overlap, and the
            // device has room from the start of the second-to-last one's end.
            let last_wave_ns = (2.0 * (end - start) as f64 / waves.ceil()).round() as i64;
            for &(_, other) in lanes_of.iter().filter(|&&(d, l)| d == device && l != lane) {
                let other = &g.lanes[other as usize];
                let first = other.first_task as usize;
                let tasks = first..first + other.task_count as usize;
                // The first task of that stream starting while the full kernel ran.
                let k = g.rec_start_ns[tasks.clone()].partition_point(|&s| s <= start);
                let Some(next) = tasks.clone().nth(k) else {
                    continue;
                };
                if g.rec_start_ns[next] >= end
                    || !matches!(g.kind[next], TaskKind::Kernel | TaskKind::Collective)
                {
                    continue;
                }
                // A wave estimate the recording contradicts (the other kernel started before
                // the last wave could have) is wrong about this instance: no edge.
                if end - last_wave_ns > g.rec_start_ns[next] + TOLERANCE_NS {
                    rejected += 1;
                    continue;
                }
                edges.push(PendingEdge {
                    from: TaskId(t as u32),
                    to: TaskId(next as u32),
                    kind: EdgeKind::DeviceFull,
                    lag_ns: -last_wave_ns,
                });
                added += 1;
            }
        }
        self.report.device_full_edges = added;
        if rejected > 0 {
            *self
                .report
                .rejected
                .entry("device-full waits contradicted by recorded times".to_string())
                .or_default() += rejected;
        }
    }
}
