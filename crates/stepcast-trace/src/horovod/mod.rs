//! Horovod's timeline (`HOROVOD_TIMELINE`): the per-tensor communication stages of a data-
//! parallel job, as `horovod/common/timeline.cc` writes them.
//!
//! The file is a Chrome-trace array with one "process" per tensor (`pid`, named by a
//! `process_name` record: `allreduce.fc1.weight`). Each tensor's records are nested `B`/`E`
//! pairs: a negotiation (`NEGOTIATE_ALLREDUCE`, ...: from the tensor's request until every
//! rank is ready), then the response (`ALLREDUCE`, ...), holding the activities the background
//! thread runs for it (`QUEUE`, `WAIT_FOR_DATA`, `MEMCPY_IN_FUSION_BUFFER`, `GLOO_ALLREDUCE` /
//! `MPI_ALLREDUCE` / `NCCL_ALLREDUCE` / ..., `MEMCPY_OUT_FUSION_BUFFER`); the response's `E`
//! carries the tensor's `dtype` and `shape`. `CYCLE_START` instants mark the background
//! thread's cycles. Times are microseconds since the timeline started, which Horovod ≥ 0.21
//! gives as `start_time_since_epoch_in_micros` on process 0, so the timeline lines up with
//! the framework's trace of the same process (`join.rs`).
//!
//! Fused tensors: Horovod starts the tensors of one fused response one after another
//! (`Timeline::Start` in a loop, then `ActivityStartAll`), so their response records are
//! consecutive in the file. Such a run is one collective: one event per activity, from the
//! first tensor's begin to the last one's end, carrying every tensor (`Trace::comm_tensors`).
//!
//! Lanes: the background thread's activities on one host lane (a second one only where the
//! records overlap, as with NCCL's finalizer threads); each tensor's negotiations on a lane of
//! their own (negotiations of different tensors overlap). The stages of a tensor are linked in
//! order (`Trace::links`, `LinkKind::CommStage`).
//!
//! Older Horovod versions left the closing `]` out of the file; the shared Chrome-trace
//! document reader accepts that, and still refuses a file cut inside an event.

pub mod join;
mod records;

use std::collections::BTreeMap;
use std::path::Path;

use crate::assemble::{Assembly, ByRecord, LaneKey, NewEvent};
use crate::detect::Source;
use crate::error::ReadError;
use crate::model::{CommArgs, CommTensor, EventKind, LaneKind, LinkKind, Runtime, Trace};
use records::{Phase, Record};

/// The Horovod process id of the lanes this reader makes (a file holds one process's view).
pub const HOROVOD_PID: i64 = 0;
/// The background thread's first lane.
const BACKGROUND_TID: i64 = 0;

/// Whether the start of a file is a Horovod timeline: a bare event array whose first records
/// are Horovod's (its process-0 header, a negotiation, a fusion-buffer copy or a cycle mark).
pub fn looks_like(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let skip = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if text.get(skip) != Some(&b'[') {
        return false;
    }
    const MARKS: [&[u8]; 4] = [
        b"start_time_since_epoch_in_micros",
        b"\"NEGOTIATE_",
        b"_FUSION_BUFFER\"",
        b"\"CYCLE_START\"",
    ];
    MARKS
        .iter()
        .any(|mark| memchr::memmem::find(text, mark).is_some())
}

/// The detection table's reader.
pub fn read_source(source: &Source<'_>, _: &crate::ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let content = source.content()?;
    Ok(vec![read(&content, source.path)?])
}

/// One tensor's stage: a negotiation or an activity, begun and ended.
#[derive(Clone, Debug)]
struct Stage {
    name: String,
    start_us: i64,
    end_us: i64,
}

/// One tensor's response (its all-reduce, allgather, ...): its activities and what it moved.
#[derive(Clone, Debug)]
struct Response {
    /// The tensor's pid in the file.
    tensor: i64,
    kind: String,
    start_us: i64,
    end_us: i64,
    activities: Vec<Stage>,
    /// The file position of its `B` record: fused responses are consecutive.
    begin_record: usize,
    tensor_info: CommTensor,
}

/// Reads a Horovod timeline held in memory.
pub fn read(content: &[u8], path: &Path) -> Result<Trace, ReadError> {
    let parsed = records::parse(content, path)?;
    let mut diagnostics = crate::model::Diagnostics::default();
    if parsed.unterminated {
        diagnostics
            .note("the event array ends without its `]`, as Horovod's timeline may leave it");
    }
    let base_us = parsed.start_since_epoch_us.unwrap_or(0);
    if parsed.start_since_epoch_us.is_none() {
        diagnostics.note(
            "no `start_time_since_epoch_in_micros` (Horovod < 0.21): times are relative to the timeline's start and cannot be joined with a framework trace",
        );
    }
    // Pair B/E per tensor (pid), innermost first.
    let mut open: BTreeMap<i64, Vec<(usize, Stage)>> = BTreeMap::new();
    let mut negotiations: Vec<(i64, Stage)> = Vec::new();
    let mut responses: Vec<Response> = Vec::new();
    let mut pending_activities: BTreeMap<i64, Vec<Stage>> = BTreeMap::new();
    for (index, record) in parsed.records.iter().enumerate() {
        let Record {
            phase, pid, ts_us, ..
        } = record;
        match phase {
            Phase::Begin => {
                let (Some(pid), Some(ts)) = (pid, ts_us) else {
                    diagnostics.skip("Horovod `B` records without a tensor (pid) or time");
                    continue;
                };
                open.entry(*pid).or_default().push((
                    index,
                    Stage {
                        name: record.name.clone().unwrap_or_default(),
                        start_us: *ts,
                        end_us: *ts,
                    },
                ));
            }
            Phase::End => {
                let (Some(pid), Some(ts)) = (pid, ts_us) else {
                    diagnostics.skip("Horovod `E` records without a tensor (pid) or time");
                    continue;
                };
                let Some((begin_index, mut stage)) = open.get_mut(pid).and_then(Vec::pop) else {
                    diagnostics.skip("Horovod `E` records with no open range");
                    continue;
                };
                stage.end_us = *ts;
                let depth = open.get(pid).map_or(0, Vec::len);
                let tensor = *pid;
                if depth > 0 {
                    pending_activities.entry(*pid).or_default().push(stage);
                } else if stage.name.starts_with("NEGOTIATE_") {
                    negotiations.push((tensor, stage));
                } else {
                    let activities = pending_activities.remove(pid).unwrap_or_default();
                    responses.push(Response {
                        tensor,
                        kind: stage.name.clone(),
                        start_us: stage.start_us,
                        end_us: stage.end_us,
                        activities,
                        begin_record: begin_index,
                        tensor_info: CommTensor {
                            name: parsed.tensor_name(*pid),
                            shape: record.shape.clone(),
                            dtype: record.dtype.as_deref().and_then(dtype_of_horovod),
                            partition: None,
                        },
                    });
                    if record.shape.is_none() || record.dtype.is_none() {
                        diagnostics
                            .arg_unread("Horovod response without a readable dtype and shape");
                    }
                }
            }
            Phase::Complete => diagnostics.skip("Horovod rank-ready ticks (`X`, no duration)"),
            Phase::Instant => diagnostics.skip("Horovod `CYCLE_START` marks (instants)"),
            Phase::Metadata => {}
            Phase::Other => diagnostics.skip("records of another phase"),
        }
    }
    let still_open: usize = open.values().map(Vec::len).sum();
    diagnostics.skip_n(
        "Horovod ranges still open at the end of the timeline",
        still_open as u64,
    );
    // Fused responses: runs of response begins that follow one another in the file.
    responses.sort_by_key(|r| r.begin_record);
    let mut groups: Vec<Vec<Response>> = Vec::new();
    for response in responses {
        let fused = groups.last().and_then(|g| g.last()).is_some_and(|last| {
            last.kind == response.kind
                && parsed.only_metadata_between(last.begin_record, response.begin_record)
        });
        if fused {
            if let Some(group) = groups.last_mut() {
                group.push(response);
            }
        } else {
            groups.push(vec![response]);
        }
    }

    let mut assembly = Assembly::default();
    assembly.records = parsed.records.len() as u64;
    // Events are numbered as made; the side tables follow them by this number.
    let mut made: u32 = 0;
    // Background lanes: a stage goes on the first lane free at its start.
    let mut lane_free_us: Vec<i64> = Vec::new();
    // Per file index: the tensors of a collective, the tensor of a negotiation.
    let mut tensors_of: Vec<(u32, Vec<CommTensor>)> = Vec::new();
    let mut args_of: Vec<(u32, CommArgs)> = Vec::new();
    let mut stage_links: Vec<(u32, u32)> = Vec::new();
    // The first stage of each tensor's response, for its negotiation's link.
    let mut first_stage_of: Vec<(i64, i64, u32)> = Vec::new();
    for group in &groups {
        let kind = &group[0].kind;
        // The activities in the order the first tensor ran them; each spans the group.
        let mut stages: Vec<Stage> = Vec::new();
        for activity in &group[0].activities {
            let mut stage = activity.clone();
            for other in &group[1..] {
                for a in other.activities.iter().filter(|a| a.name == activity.name) {
                    stage.start_us = stage.start_us.min(a.start_us);
                    stage.end_us = stage.end_us.max(a.end_us);
                }
            }
            stages.push(stage);
        }
        if stages.is_empty() {
            stages.push(Stage {
                name: kind.clone(),
                start_us: group.iter().map(|r| r.start_us).min().unwrap_or(0),
                end_us: group.iter().map(|r| r.end_us).max().unwrap_or(0),
            });
        }
        let lane = match lane_free_us
            .iter()
            .position(|&free| free <= stages[0].start_us)
        {
            Some(k) => k,
            None => {
                lane_free_us.push(i64::MIN);
                lane_free_us.len() - 1
            }
        };
        lane_free_us[lane] = stages.iter().map(|s| s.end_us).max().unwrap_or(i64::MIN);
        let key: LaneKey = (
            LaneKind::CpuThread,
            HOROVOD_PID,
            BACKGROUND_TID - lane as i64,
        );
        assembly.lane(key, Some(format!("Horovod background thread {lane}")));
        let tensors: Vec<CommTensor> = group.iter().map(|r| r.tensor_info.clone()).collect();
        let mut previous: Option<u32> = None;
        let first = made;
        for stage in &stages {
            let index = made;
            made += 1;
            let name = assembly.intern(&stage.name);
            assembly.push(NewEvent {
                lane: key,
                kind: EventKind::CpuOp,
                name,
                start_abs_ns: base_us.saturating_add(stage.start_us).saturating_mul(1000),
                dur_ns: stage
                    .end_us
                    .saturating_sub(stage.start_us)
                    .max(0)
                    .saturating_mul(1000),
                correlation: None,
                bytes: None,
                sequence_number: None,
                fill: None,
                file_index: index,
            });
            tensors_of.push((index, tensors.clone()));
            if is_collective_activity(&stage.name) {
                args_of.push((index, comm_args(kind, &tensors)));
            }
            if let Some(previous) = previous {
                stage_links.push((previous, index));
            }
            previous = Some(index);
        }
        for r in group {
            first_stage_of.push((r.tensor, r.start_us, first));
        }
    }
    let mut negotiation_links: Vec<(u32, u32)> = Vec::new();
    for (tensor, stage) in &negotiations {
        let key: LaneKey = (LaneKind::CpuThread, HOROVOD_PID, *tensor);
        assembly.lane(
            key,
            Some(format!("negotiate {}", parsed.tensor_name(*tensor))),
        );
        let index = made;
        made += 1;
        let name = assembly.intern(&stage.name);
        assembly.push(NewEvent {
            lane: key,
            kind: EventKind::CpuOp,
            name,
            start_abs_ns: base_us.saturating_add(stage.start_us).saturating_mul(1000),
            dur_ns: stage
                .end_us
                .saturating_sub(stage.start_us)
                .max(0)
                .saturating_mul(1000),
            correlation: None,
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: index,
        });
        // The tensor's next response after this negotiation.
        let next = first_stage_of
            .iter()
            .filter(|(t, start, _)| t == tensor && *start >= stage.end_us)
            .min_by_key(|(_, start, _)| *start);
        if let Some(&(_, _, first)) = next {
            negotiation_links.push((index, first));
        }
        let info = groups
            .iter()
            .flatten()
            .find(|r| r.tensor == *tensor)
            .map(|r| r.tensor_info.clone())
            .unwrap_or(CommTensor {
                name: parsed.tensor_name(*tensor),
                shape: None,
                dtype: None,
                partition: None,
            });
        tensors_of.push((index, vec![info]));
    }
    assembly.diagnostics = diagnostics;
    let mut trace = assembly.finish(
        path,
        "Horovod timeline",
        Runtime::CpuOnly,
        content.len() as u64,
    )?;
    // Side tables follow the events from their file index.
    let by_record = ByRecord::of(&trace);
    trace.comm_tensors = by_record.rows(tensors_of);
    trace.comm_args = by_record.rows(args_of);
    trace.links = by_record.links(
        stage_links.iter().chain(&negotiation_links),
        LinkKind::CommStage,
    );
    trace.diagnostics.note(format!(
        "Horovod timeline: {} tensors, {} negotiations, {} collectives ({} of several fused tensors)",
        parsed.tensor_count(),
        negotiations.len(),
        groups.len(),
        groups.iter().filter(|g| g.len() > 1).count()
    ));
    Ok(trace)
}

/// An activity that is the collective itself: a library's operation (`GLOO_ALLREDUCE`,
/// `MPI_ALLGATHER`, `NCCL_ALLREDUCE`, `CCL_BCAST`, `MPI_ADASUM_ALLREDUCE`, ...), not a copy,
/// a wait or the queue.
pub fn is_collective_activity(name: &str) -> bool {
    const OPERATIONS: [&str; 7] = [
        "ALLREDUCE",
        "ALLGATHER",
        "BCAST",
        "BROADCAST",
        "ALLTOALL",
        "REDUCESCATTER",
        "REDUCE_SCATTER",
    ];
    !name.starts_with("MEMCPY_")
        && !name.starts_with("WAIT_FOR")
        && name != "QUEUE"
        && OPERATIONS.iter().any(|op| name.ends_with(op))
}

/// A collective's metadata as the cost models read it: the elements of all its tensors.
fn comm_args(kind: &str, tensors: &[CommTensor]) -> CommArgs {
    let elements: Option<i64> = tensors.iter().try_fold(0i64, |sum, t| {
        sum.checked_add(crate::model::shape_elements(t.shape.as_deref()?)?)
    });
    let dtype = tensors.first().and_then(|t| t.dtype);
    let same_dtype = tensors.iter().all(|t| t.dtype == dtype);
    CommArgs {
        collective: Some(kind.to_ascii_lowercase()),
        in_nelems: elements,
        out_nelems: elements,
        group_size: None,
        dtype: if same_dtype { dtype } else { None },
        process_group: Some("horovod".to_string()),
        seq: None,
        group_ranks: None,
    }
}

/// Horovod's `DataType_Name` (`float32`; older versions `HOROVOD_FLOAT32`).
fn dtype_of_horovod(name: &str) -> Option<crate::model::Dtype> {
    let name = name.strip_prefix("HOROVOD_").unwrap_or(name);
    crate::kineto::inputs::dtype_of_name(&name.to_ascii_lowercase())
}
