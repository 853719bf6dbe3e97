//! NCCL/RCCL kernels and gloo's host-side collectives: their own cost (the transfer) and their
//! peers' lateness.
//!
//! A one-rank trace records each collective kernel from when its stream reached it to the end
//! of the collective, so the recorded time is the transfer plus the wait for the slowest peer.
//! The transfer is costed from what is sent: an α-β line per collective and group size,
//! fitted as the lower envelope of the trace's own collectives (`comm::calibrate`): the
//! fastest instance of each message size, the fixed cost of the fastest collective, the best
//! bandwidth seen on large messages. The rest of the recorded kernel is the peers' lateness
//! relative to this rank (`Graph::peer_wait_ns`), a declared input. A collective whose size the
//! trace does not record costs the fastest instance of the same kernel name (counted).

use rustc_hash::FxHashMap;
use stepcast_trace::{CommArgs, EventId, NameId};

use super::Builder;
use crate::comm::calibrate::{RecordedCollective, calibrate, comm_args, describe};
use crate::graph::{NO_STEP, TaskId, TaskKind};

impl Builder<'_> {
    pub(super) fn collectives(&mut self, call_of: &[TaskId]) {
        let n = self.graph.task_count();
        let mut fastest: FxHashMap<NameId, i64> = FxHashMap::default();
        let mut recorded = Vec::new();
        for t in 0..n {
            let g = &mut self.graph;
            match g.kind[t] {
                TaskKind::Kernel if self.names.is_collective(g.name[t]) => {
                    g.kind[t] = TaskKind::Collective;
                }
                // A host thread's collective stays a host op (its time is the thread's, not a
                // device's); only its cost is split the same way.
                TaskKind::CpuOp if self.names.is_host_collective(g.name[t]) => {}
                _ => continue,
            }
            let entry = fastest.entry(g.name[t]).or_insert(i64::MAX);
            *entry = (*entry).min(g.dur_ns[t]);
            let args = self.comm_args_of(TaskId(t as u32), call_of);
            let (collective, bytes, group_size) =
                describe(self.trace, self.trace.name(self.graph.name[t]), args);
            recorded.push(RecordedCollective {
                task: TaskId(t as u32),
                lane: self.graph.lane[t],
                collective,
                bytes,
                group_size,
                recorded_ns: self.graph.dur_ns[t],
                step: NO_STEP,
                slot: 0,
                from_kernel_args: false,
            });
        }
        let calibration = calibrate(&recorded);
        let g = &mut self.graph;
        for r in &recorded {
            let t = r.task.index();
            let fit = calibration
                .fits
                .iter()
                .find(|f| f.collective == r.collective && f.group_size == r.group_size);
            let by_size = r.bytes.zip(fit).map(|(bytes, fit)| {
                (fit.intercept_ns + fit.slope_ns_per_byte * bytes as f64).round() as i64
            });
            let transfer = match by_size {
                Some(ns) => {
                    self.report.collective_cost_from_size += 1;
                    ns
                }
                None => {
                    self.report.collective_cost_from_name += 1;
                    fastest[&g.name[t]]
                }
            };
            // Never more than was recorded: the rest is waiting, never negative.
            let transfer = transfer.clamp(0, g.dur_ns[t]);
            g.peer_wait_ns[t] = g.dur_ns[t] - transfer;
            g.dur_ns[t] = transfer;
            self.report.collectives += 1;
        }
    }

    /// The NCCL metadata of a collective task: the kernel's own args (newer traces), else
    /// those of the innermost op with NCCL args (`record_param_comms`) around its launching
    /// call on the calling thread.
    fn comm_args_of(&self, task: TaskId, call_of: &[TaskId]) -> Option<&CommArgs> {
        let trace = self.trace;
        if let Some(args) = comm_args(trace, self.graph.event[task.index()]) {
            return Some(args);
        }
        let call = *call_of.get(task.index())?;
        if call == TaskId::NONE {
            return None;
        }
        let call_event = self.graph.event[call.index()];
        let call_start = self.graph.rec_start_ns[call.index()];
        let lane = trace.events[call_event.index()].lane;
        // Events are numbered lane by lane in start order: the ops around the call on its
        // thread are the last ones before it with args, among those still open at its start.
        let before = trace
            .comm_args
            .partition_point(|(e, _)| *e <= EventId(call_event.0));
        trace.comm_args[..before]
            .iter()
            .rev()
            .take_while(|(e, _)| trace.events[e.index()].lane == lane)
            .take(16)
            .find(|(e, _)| trace.events[e.index()].end_ns() >= call_start)
            .map(|(_, args)| args)
    }
}
