//! Device saturation: what each device task asks of its device's multiprocessors
//! ([`SmDemand`]), for the engine's capacity model (`simulate`).
//!
//! A kernel's resident blocks fill the device `waves` times over, from the launch
//! configuration the reader keeps (`Trace::kernel_fill`: CUPTI's `warps per SM` and `est.
//! achieved occupancy %`, the device's `maxThreadsPerMultiprocessor`). A copy within one
//! device runs on the multiprocessors like a kernel; its waves are its bytes over what one
//! wave moves (every thread slot of every multiprocessor moving one 16-byte vector), which
//! needs the device's `numSms`. Copies to or from the host use the copy engines and ask
//! nothing. Only the demand comes from the trace: when a full task holds another stream's
//! work is decided by the engine as it replays, so a what-if that moves or shortens a full
//! kernel moves what it holds.

use stepcast_trace::CopyDirection;

use super::Builder;
use crate::graph::{SmDemand, TaskKind};

/// Warp slots per multiprocessor where the trace does not say (every NVIDIA GPU since Volta:
/// 2048 threads).
const DEFAULT_MAX_WARPS_PER_SM: f64 = 64.0;

/// Bytes one thread of a device-to-device copy moves per wave (a 16-byte vector load and
/// store, as CUDA's copy kernels do).
const COPY_BYTES_PER_THREAD: f64 = 16.0;

impl Builder<'_> {
    /// Sets `Graph::sm_demand` of every task.
    pub(super) fn sm_demand(&mut self) {
        let trace = self.trace;
        let info =
            |device: Option<i64>| device.and_then(|d| trace.devices.iter().find(|i| i.id == d));
        let g = &mut self.graph;
        g.sm_demand = g.kind.iter().map(|&k| SmDemand::of_kind(k)).collect();
        let mut filling = 0u64;
        let mut fill = trace.kernel_fill.iter().peekable();
        for t in 0..g.task_count() {
            let device = info(g.lanes[g.lane[t] as usize].device);
            let waves = match g.kind[t] {
                TaskKind::Kernel => {
                    // `kernel_fill` and tasks are both in event order.
                    while fill.next_if(|(e, _)| *e < g.event[t]).is_some() {}
                    let Some((_, kernel)) = fill.next_if(|(e, _)| *e == g.event[t]) else {
                        continue;
                    };
                    let max_warps = device
                        .and_then(|d| d.max_threads_per_sm)
                        .map_or(DEFAULT_MAX_WARPS_PER_SM, |threads| threads as f64 / 32.0);
                    kernel.waves(max_warps)
                }
                TaskKind::Memcpy => {
                    let event = &trace.events[g.event[t].index()];
                    if CopyDirection::of_copy(trace.name(event.name))
                        != CopyDirection::DeviceToDevice
                    {
                        continue;
                    }
                    g.sm_demand[t] = SmDemand::Shares;
                    let per_wave = device.and_then(|d| {
                        Some((d.sm_count? * d.max_threads_per_sm?) as f64 * COPY_BYTES_PER_THREAD)
                    });
                    event
                        .bytes
                        .zip(per_wave)
                        .filter(|&(_, per_wave)| per_wave > 0.0)
                        .map(|(bytes, per_wave)| bytes.get() as f64 / per_wave)
                }
                _ => None,
            };
            if let Some(waves) = waves.filter(|&w| w > 1.0 && w.is_finite()) {
                g.sm_demand[t] = SmDemand::Fills {
                    waves: waves as f32,
                };
                filling += 1;
            }
        }
        self.report.device_filling_tasks = filling;
    }
}
