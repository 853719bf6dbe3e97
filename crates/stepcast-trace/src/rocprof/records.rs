//! The serde mirror of rocprofv3's JSON output (`rocprofv3 --output-format json`): only the
//! members stepcast reads. Every member is optional, so a record that lacks one is counted and
//! skipped by the reader instead of failing the file; unknown members are ignored.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};

/// The document: one entry per profiled process.
#[derive(Deserialize)]
pub struct Document {
    #[serde(rename = "rocprofiler-sdk-tool")]
    pub processes: Vec<Process>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Process {
    pub metadata: Metadata,
    pub agents: Vec<Agent>,
    pub strings: Strings,
    pub kernel_symbols: Vec<KernelSymbol>,
    pub buffer_records: BufferRecords,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Metadata {
    pub pid: Option<i64>,
}

/// `{"handle": N}`: how rocprofiler-sdk writes agent, queue and stream ids.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
pub struct Handle {
    pub handle: Option<u64>,
}

/// A CPU or GPU of the node (`type`: 1 CPU, 2 GPU).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Agent {
    pub id: Handle,
    #[serde(rename = "type")]
    pub agent_type: Option<i64>,
    /// The GPU's index among the node's GPUs (newer rocprofiler-sdk).
    pub gpu_index: Option<i64>,
    /// The agent's index among agents of its type (older and newer releases alike).
    pub logical_node_type_id: Option<i64>,
    pub name: Option<String>,
    pub product_name: Option<String>,
    pub cu_count: Option<i64>,
    pub max_waves_per_cu: Option<i64>,
    pub wave_front_size: Option<i64>,
}

/// Names of the record kinds and their operations: `buffer_records[kind].operations[op]`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Strings {
    pub buffer_records: Vec<KindNames>,
    /// The messages of ROCTx markers and ranges, by their record's internal correlation id.
    pub marker_api: Vec<MarkerMessage>,
}

/// `{"key": <internal correlation id>, "value": <message>}` (a map, as cereal writes one).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct MarkerMessage {
    pub key: Option<u64>,
    pub value: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct KindNames {
    pub kind: Option<String>,
    pub operations: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct KernelSymbol {
    pub kernel_id: Option<u64>,
    pub kernel_name: Option<String>,
    /// Demangled, without the `.kd` suffix of the code object symbol.
    pub formatted_kernel_name: Option<String>,
}

/// The buffered (asynchronous) records. The kinds stepcast reads are typed; every other kind
/// is only counted, so `info` can say what was skipped.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct BufferRecords {
    pub kernel_dispatch: Vec<KernelDispatch>,
    pub hip_api: Vec<ApiRecord>,
    /// ROCTx markers and ranges (`--marker-trace`): named by `Strings::marker_api`.
    pub marker_api: Vec<ApiRecord>,
    pub memory_copy: Vec<MemoryCopy>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Count>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
pub struct CorrelationId {
    /// rocprofiler-sdk's own id: the same on an API call and the device work it enqueued.
    pub internal: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct KernelDispatch {
    pub thread_id: Option<i64>,
    pub correlation_id: CorrelationId,
    pub start_timestamp: Option<u64>,
    pub end_timestamp: Option<u64>,
    pub dispatch_info: DispatchInfo,
    /// The HIP stream (rocprofiler-sdk 0.6 and later); absent in older files.
    pub stream_id: Option<Handle>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct DispatchInfo {
    pub agent_id: Handle,
    /// The HSA queue the dispatch packet went to.
    pub queue_id: Handle,
    pub kernel_id: Option<u64>,
}

/// A host API call (HIP runtime or compiler API).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ApiRecord {
    pub kind: Option<usize>,
    pub operation: Option<usize>,
    pub thread_id: Option<i64>,
    pub correlation_id: CorrelationId,
    pub start_timestamp: Option<u64>,
    pub end_timestamp: Option<u64>,
}

/// An asynchronous copy done by a DMA engine or a blit kernel.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct MemoryCopy {
    pub kind: Option<usize>,
    pub operation: Option<usize>,
    pub correlation_id: CorrelationId,
    pub start_timestamp: Option<u64>,
    pub end_timestamp: Option<u64>,
    pub dst_agent_id: Handle,
    pub src_agent_id: Handle,
    pub bytes: Option<u64>,
    pub stream_id: Option<Handle>,
}

/// The number of elements of an array member, read without keeping them (anything that is not
/// an array counts 0).
#[derive(Default, Clone, Copy)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;
        impl<'de> Visitor<'de> for CountVisitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_str<E>(self, _: &str) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        deserializer.deserialize_any(CountVisitor)
    }
}
