//! A rank reduced to its [`RankGraph`], as bytes: what `stepcast reduce` writes, one file per
//! rank, so that the per-rank work (read, build, map) runs wherever the traces are and the
//! job's replay reads only these (docs/scaling.md).
//!
//! The form is a fixed header, then the rank in postcard (serde's compact binary form, varints
//! for the graph's integer columns):
//!
//! | bytes | what |
//! |---|---|
//! | 8 | [`MAGIC`] |
//! | 4 | [`SCHEMA_VERSION`], little-endian |
//! | 8 | the payload's length in bytes, little-endian |
//! | n | the payload: a [`ReducedRank`] |
//!
//! The length makes a truncated file one clear error rather than a decoding failure deep in a
//! column; the version makes a file of another stepcast one too. Any change to the fields of
//! `RankGraph` or of a type under it (`Graph`, `Window`, `CollectiveInstance`...) changes the
//! form: bump [`SCHEMA_VERSION`] with it (`reduced_rank_of_this_version_still_reads` holds a
//! file of the current version to that).

use serde::{Deserialize, Serialize};

use super::RankGraph;

/// The first bytes of a reduced rank.
pub const MAGIC: &[u8; 8] = b"STEPCRNK";

/// The version of the form: the fields of [`ReducedRank`] and every type under it.
pub const SCHEMA_VERSION: u32 = 8;

const HEADER_BYTES: usize = MAGIC.len() + 4 + 8;

/// One rank of a job as `stepcast reduce` keeps it: its graph and where it came from.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReducedRank {
    /// The trace it was reduced from, as the user named it (documents name the trace, so a
    /// job replayed from reduced ranks gives the same document as from its traces).
    pub source: String,
    /// Which process of that file (an Nsight Systems export may hold several; 0 otherwise).
    pub process: u32,
    /// The rank the trace records (`distributedInfo.rank`), if any.
    pub recorded_rank: Option<i64>,
    /// The world size the trace records, if any.
    pub world_size: Option<i64>,
    /// What its Execution Trace joined, where one was given with the job (its data edges are
    /// in the graph).
    pub execution_trace: Option<crate::et::JoinSummary>,
    pub graph: RankGraph,
}

/// Why bytes are not a reduced rank this stepcast reads.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReducedError {
    #[error("not a reduced rank (it does not begin with stepcast's reduced-rank header)")]
    NotReduced,
    #[error(
        "a reduced rank of schema version {found}, and this stepcast reads version \
         {SCHEMA_VERSION}: reduce its trace again with this stepcast"
    )]
    Version { found: u32 },
    #[error("a truncated reduced rank: {found} of its {expected} bytes")]
    Truncated { found: u64, expected: u64 },
    #[error("a corrupt reduced rank: {0}")]
    Corrupt(String),
}

/// Whether `prefix` (a file's first bytes) begins like a reduced rank.
pub fn is_reduced(prefix: &[u8]) -> bool {
    prefix.starts_with(MAGIC)
}

impl ReducedRank {
    /// The rank in its on-disk form.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ReducedError> {
        let payload =
            postcard::to_stdvec(self).map_err(|e| ReducedError::Corrupt(e.to_string()))?;
        let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&SCHEMA_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }

    /// A rank read back from [`ReducedRank::to_bytes`]'s form, checked whole: magic, version,
    /// length, and every byte of the payload decoded.
    pub fn from_bytes(bytes: &[u8]) -> Result<ReducedRank, ReducedError> {
        if !is_reduced(bytes) {
            return Err(ReducedError::NotReduced);
        }
        let Some(header) = bytes.get(..HEADER_BYTES) else {
            return Err(ReducedError::Truncated {
                found: bytes.len() as u64,
                expected: HEADER_BYTES as u64,
            });
        };
        let word = |range: std::ops::Range<usize>| {
            let mut out = [0u8; 8];
            out[..range.len()].copy_from_slice(&header[range]);
            u64::from_le_bytes(out)
        };
        let found = word(MAGIC.len()..MAGIC.len() + 4) as u32;
        if found != SCHEMA_VERSION {
            return Err(ReducedError::Version { found });
        }
        let payload_bytes = word(MAGIC.len() + 4..HEADER_BYTES);
        let payload = &bytes[HEADER_BYTES..];
        let expected = (HEADER_BYTES as u64).saturating_add(payload_bytes);
        if (payload.len() as u64) < payload_bytes {
            return Err(ReducedError::Truncated {
                found: bytes.len() as u64,
                expected,
            });
        }
        if payload.len() as u64 > payload_bytes {
            return Err(ReducedError::Corrupt(format!(
                "{} bytes after its declared end",
                payload.len() as u64 - payload_bytes
            )));
        }
        let (rank, rest) = postcard::take_from_bytes::<ReducedRank>(payload)
            .map_err(|e| ReducedError::Corrupt(e.to_string()))?;
        if !rest.is_empty() {
            return Err(ReducedError::Corrupt(format!(
                "{} bytes of its payload left undecoded",
                rest.len()
            )));
        }
        Ok(rank)
    }
}
