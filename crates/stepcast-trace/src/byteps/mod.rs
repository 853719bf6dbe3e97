//! BytePS's communication trace (`BYTEPS_TRACE_ON=1`: `$BYTEPS_TRACE_DIR/<rank>/comm.json`),
//! the per-tensor, per-partition push/pull stages of a parameter-server job, as
//! `BytePSGlobal::OutputTraces` and `EmitTrace` (`byteps/common/global.cc`) write them.
//!
//! The file is a Chrome-trace object (`traceEvents`, `displayTimeUnit`) of `X` records of
//! category `Comm`, one "process" per tensor: `pid` and `args.name` are `Comm.<tensor>` (the
//! name the framework plugin declared: `byteps.gradient_0` in MXNet, `Gradient.<param>` in
//! PyTorch). Two kinds of record:
//!
//! - `tid: "total"`, `name: "Comm.<tensor>"`: the whole synchronization of the tensor in one
//!   step, queueing included (`BytePSContext::comm_time`);
//! - `tid: "<key>"`, `name: "Comm.<tensor>.<QueueType>"`: one stage of one partition
//!   (`part_comm_time[key][type]`): BytePS cuts a tensor into partitions of at most
//!   `BYTEPS_PARTITION_BYTES`, each with its own key, `declared_key << 16` plus the partition's
//!   index (`InitTensor` in `byteps/common/operations.cc`), and sends each through its queues
//!   (`LogStrings` in `byteps/common/common.h`): `COORDINATE_REDUCE`, `REDUCE`, `COPYD2H`,
//!   `PCIE_REDUCE`, `COORDINATE_PUSH`, `COMPRESS`, `PUSH`, `PULL`, `DECOMPRESS`, `COPYH2D`,
//!   `COORDINATE_BROADCAST`, `BROADCAST`. A stage begins when its task enters the queue
//!   (`BytePSScheduledQueue::addTask` → `recorderTs`) and ends when the queue's loop finishes
//!   it (`FinishOrProceed` in `core_loops.cc`), so it includes the wait in the queue.
//!
//! `ts` and `dur` are whole microseconds of `std::chrono::system_clock` (since the epoch), so the
//! trace lines up with a framework trace of the same process (`join.rs`). Only the local root
//! GPU of a machine pushes and pulls; the others' files hold the reduce and broadcast stages.
//!
//! What becomes of it: each stage record is an event (`CpuOp`, named by its stage) on the lane
//! of its queue's loop thread (BytePS runs one thread per queue; records of one queue that
//! overlap, because of the time queued, go to further lanes of that queue); each carries its
//! tensor and partition (`Trace::comm_tensors`). A partition's stages are linked in order
//! (`LinkKind::CommStage`); a stage that comes no later in the queue order than the one before
//! it begins the partition's next step. The per-tensor totals are counted, not kept (each is
//! the span of its stages). The file records no size: `join.rs` takes each tensor's shape
//! and type from the gradient that produced it.

pub mod join;
mod records;

use std::collections::BTreeMap;
use std::path::Path;

use crate::assemble::{Assembly, ByRecord, LaneKey, NewEvent};
use crate::detect::Source;
use crate::error::ReadError;
use crate::model::{CommTensor, EventKind, LaneKind, LinkKind, Runtime, Trace};

/// The process id of the lanes this reader makes (a file holds one GPU's view).
pub const BYTEPS_PID: i64 = 0;

/// BytePS's queue types in pipeline order (`LogStrings`, `byteps/common/common.h`, v0.2.5+;
/// `COMPRESS`/`DECOMPRESS` exist only with gradient compression).
pub const STAGES: [&str; 12] = [
    "COORDINATE_REDUCE",
    "REDUCE",
    "COPYD2H",
    "PCIE_REDUCE",
    "COORDINATE_PUSH",
    "COMPRESS",
    "PUSH",
    "PULL",
    "DECOMPRESS",
    "COPYH2D",
    "COORDINATE_BROADCAST",
    "BROADCAST",
];

/// The bits of a key that number a partition of its tensor (`declared_key << 16`).
const PARTITION_BITS: u32 = 16;

/// Whether the start of a file is a BytePS `comm.json`: JSON holding `Comm.<tensor>` records,
/// a per-tensor total (`"total"`) or a stage named after a queue, and none of byteprofile's
/// computation records (`FW.`/`BW.`: dPRO's merged traces, which are not BytePS's output).
pub fn looks_like(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let skip = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if !matches!(text.get(skip), Some(b'{' | b'[')) {
        return false;
    }
    let has = |mark: &[u8]| memchr::memmem::find(text, mark).is_some();
    if !has(b"\"Comm.") || has(b"\"FW.") || has(b"\"BW.") {
        return false;
    }
    has(b"\"total\"")
        || STAGES.iter().any(|stage| {
            let mut mark = Vec::with_capacity(stage.len() + 2);
            mark.push(b'.');
            mark.extend_from_slice(stage.as_bytes());
            mark.push(b'"');
            has(&mark)
        })
}

/// The detection table's reader.
pub fn read_source(source: &Source<'_>, _: &crate::ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let content = source.content()?;
    Ok(vec![read(&content, source.path)?])
}

/// One stage of one partition, as recorded.
#[derive(Clone, Debug)]
struct Stage {
    tensor: String,
    key: u64,
    stage: String,
    start_us: i64,
    dur_us: i64,
    record: u32,
}

/// Where a stage comes in the pipeline (`None` for a queue type not in [`STAGES`]: P2P,
/// CPU-only all-reduce).
pub fn stage_order(stage: &str) -> Option<usize> {
    STAGES.iter().position(|s| *s == stage)
}

/// The partition index of a key.
pub fn partition_of(key: u64) -> u32 {
    (key & ((1 << PARTITION_BITS) - 1)) as u32
}

/// Reads a BytePS `comm.json` held in memory.
pub fn read(content: &[u8], path: &Path) -> Result<Trace, ReadError> {
    let parsed = records::parse(content, path)?;
    let mut diagnostics = crate::model::Diagnostics::default();
    if parsed.unterminated {
        diagnostics.note("the event array ends without its `]`");
    }
    let mut stages: Vec<Stage> = Vec::new();
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for (index, record) in parsed.records.iter().enumerate() {
        if record.ph == "M" {
            diagnostics.skip("metadata records");
            continue;
        }
        let Some(tensor) = record
            .pid
            .as_deref()
            .and_then(|pid| pid.strip_prefix("Comm."))
        else {
            diagnostics.skip("records of no BytePS tensor (`pid` not `Comm.<tensor>`)");
            continue;
        };
        if record.ph != "X" {
            diagnostics.skip("BytePS records of another phase than `X`");
            continue;
        }
        let (Some(ts), Some(dur)) = (record.ts_us, record.dur_us) else {
            diagnostics.skip("BytePS records without `ts` or `dur`");
            continue;
        };
        if dur < 0 {
            diagnostics.skip("BytePS records with a negative duration");
            continue;
        }
        match record.tid.as_deref() {
            Some("total") => {
                *totals.entry(tensor.to_string()).or_default() += 1;
            }
            Some(tid) => {
                let Ok(key) = tid.parse::<u64>() else {
                    diagnostics.skip("BytePS stage records whose `tid` is not a partition key");
                    continue;
                };
                let stage = record
                    .name
                    .as_deref()
                    .and_then(|n| n.strip_prefix("Comm."))
                    .and_then(|n| n.strip_prefix(tensor))
                    .and_then(|n| n.strip_prefix('.'))
                    .filter(|s| !s.is_empty());
                let Some(stage) = stage else {
                    diagnostics
                        .skip("BytePS stage records whose name is not `Comm.<tensor>.<stage>`");
                    continue;
                };
                stages.push(Stage {
                    tensor: tensor.to_string(),
                    key,
                    stage: stage.to_string(),
                    start_us: ts,
                    dur_us: dur,
                    record: index as u32,
                });
            }
            None => diagnostics.skip("BytePS records without a `tid`"),
        }
    }
    diagnostics.skip_n(
        "BytePS per-tensor totals (`tid: \"total\"`: the span of the tensor's stages, counted)",
        totals.values().sum(),
    );
    stages.sort_by_key(|s| (s.start_us, s.record));

    // Lanes: one per queue (its loop thread), more where that queue's records overlap.
    let mut queue_slot: BTreeMap<String, i64> = BTreeMap::new();
    let mut unknown_queues = 0i64;
    let mut lanes_free: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    let mut assembly = Assembly::default();
    assembly.records = parsed.records.len() as u64;
    let mut tensors_of: Vec<(u32, Vec<CommTensor>)> = Vec::new();
    for stage in &stages {
        let slot = match queue_slot.get(&stage.stage) {
            Some(&slot) => slot,
            None => {
                let slot = match stage_order(&stage.stage) {
                    Some(order) => order as i64,
                    None => {
                        unknown_queues += 1;
                        STAGES.len() as i64 - 1 + unknown_queues
                    }
                };
                queue_slot.insert(stage.stage.clone(), slot);
                slot
            }
        };
        let free = lanes_free.entry(slot).or_default();
        let k = match free.iter().position(|&f| f <= stage.start_us) {
            Some(k) => k,
            None => {
                free.push(i64::MIN);
                free.len() - 1
            }
        };
        free[k] = stage.start_us.saturating_add(stage.dur_us);
        // 256 lanes per queue before two queues' tids meet; more overlap than that shares.
        let key: LaneKey = (
            LaneKind::CpuThread,
            BYTEPS_PID,
            slot * 256 + (k as i64).min(255),
        );
        assembly.lane(
            key,
            Some(if k == 0 {
                format!("BytePS {} queue", stage.stage)
            } else {
                format!("BytePS {} queue ({})", stage.stage, k + 1)
            }),
        );
        let name = assembly.intern(&stage.stage);
        assembly.push(NewEvent {
            lane: key,
            kind: EventKind::CpuOp,
            name,
            start_abs_ns: stage.start_us.saturating_mul(1000),
            dur_ns: stage.dur_us.saturating_mul(1000),
            correlation: None,
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: stage.record,
        });
        tensors_of.push((
            stage.record,
            vec![CommTensor {
                name: stage.tensor.clone(),
                shape: None,
                dtype: None,
                partition: Some(partition_of(stage.key)),
            }],
        ));
    }

    // Each partition's stages in order; a stage no later in the pipeline than the one before
    // it begins the partition's next step.
    let mut by_partition: BTreeMap<(&str, u64), Vec<&Stage>> = BTreeMap::new();
    for stage in &stages {
        by_partition
            .entry((stage.tensor.as_str(), stage.key))
            .or_default()
            .push(stage);
    }
    let mut stage_links: Vec<(u32, u32)> = Vec::new();
    for list in by_partition.values() {
        for pair in list.windows(2) {
            let restart = match (stage_order(&pair[0].stage), stage_order(&pair[1].stage)) {
                (Some(a), Some(b)) => b <= a,
                _ => false,
            };
            if !restart {
                stage_links.push((pair[0].record, pair[1].record));
            }
        }
    }
    assembly.diagnostics = diagnostics;
    let mut trace = assembly.finish(
        path,
        "BytePS communication trace",
        Runtime::CpuOnly,
        content.len() as u64,
    )?;
    let by_record = ByRecord::of(&trace);
    trace.comm_tensors = by_record.rows(tensors_of);
    trace.links = by_record.links(&stage_links, LinkKind::CommStage);
    trace.diagnostics.note(format!(
        "BytePS communication trace: {} tensors, {} partitions, {} stage records, {} per-tensor totals; no sizes recorded (joined with a framework trace, a tensor takes its gradient's shape)",
        by_partition
            .keys()
            .map(|(t, _)| *t)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        by_partition.len(),
        stages.len(),
        totals.values().sum::<u64>()
    ));
    Ok(trace)
}
