//! Reduced ranks (`stepcast::ranks::ReducedRank`, what `stepcast reduce` writes): their form
//! is versioned, and a file of the current version reads back whole.

use stepcast::ranks::{RankGraph, ReducedError, ReducedRank, SCHEMA_VERSION};

use crate::{load, testdata};

/// The trace the kept reduced rank was made from: one rank of a real 8-rank DLRM job.
const SOURCE: &str = "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker3_step_12.1694128201557.pt.trace.json";

/// A reduced rank of the current [`SCHEMA_VERSION`], kept in the repository: a change to the
/// fields of `RankGraph` (or of a type under it) that forgets to bump the version makes this
/// file undecodable, and this test says so.
fn kept() -> std::path::PathBuf {
    testdata("../reduced").join(format!("worker3.v{SCHEMA_VERSION}.stepcast-rank"))
}

fn reduce(source: &str) -> ReducedRank {
    let (trace, window) = load(source);
    ReducedRank {
        source: source.to_string(),
        process: 0,
        recorded_rank: stepcast::ranks::recorded_rank(&trace),
        world_size: trace.distributed.as_ref().and_then(|d| d.world_size),
        execution_trace: None,
        graph: RankGraph::new(3, &trace, window),
    }
}

#[test]
fn reduced_rank_of_this_version_still_reads() {
    let path = kept();
    if std::env::var_os("STEPCAST_WRITE_REDUCED").is_some() {
        let bytes = reduce(SOURCE).to_bytes().expect("encode");
        std::fs::write(&path, bytes).expect("write the kept reduced rank");
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; after bumping SCHEMA_VERSION, write it with STEPCAST_WRITE_REDUCED=1 \
             cargo test --release -p stepcast --test it reduced",
            path.display()
        )
    });
    let rank = ReducedRank::from_bytes(&bytes).unwrap_or_else(|e| {
        panic!(
            "{} no longer decodes ({e}): the reduced form changed; bump SCHEMA_VERSION in \
             crates/stepcast/src/ranks/reduced.rs and write the file again with \
             STEPCAST_WRITE_REDUCED=1",
            path.display()
        )
    });
    assert_eq!(rank.source, SOURCE);
    assert_eq!(rank.recorded_rank, Some(3));
    assert_eq!(rank.world_size, Some(8));
    // Decoding and encoding again gives the same bytes: nothing is lost or defaulted.
    assert_eq!(rank.to_bytes().expect("encode"), bytes);
}

#[test]
fn a_fresh_reduction_round_trips_and_damage_is_named() {
    let rank = reduce(SOURCE);
    let bytes = rank.to_bytes().expect("encode");
    let back = ReducedRank::from_bytes(&bytes).expect("decode");
    assert_eq!(back.to_bytes().expect("encode"), bytes);
    assert_eq!(
        back.graph.window.graph.task_count(),
        rank.graph.window.graph.task_count()
    );
    assert_eq!(back.graph.names, rank.graph.names);

    assert_eq!(
        ReducedRank::from_bytes(b"{\"traceEvents\": []}").err(),
        Some(ReducedError::NotReduced)
    );
    assert!(matches!(
        ReducedRank::from_bytes(&bytes[..bytes.len() - 1]),
        Err(ReducedError::Truncated { found, expected })
            if found + 1 == expected && expected == bytes.len() as u64
    ));
    assert!(matches!(
        ReducedRank::from_bytes(&bytes[..10]),
        Err(ReducedError::Truncated { .. })
    ));
    let mut other_version = bytes.clone();
    other_version[8..12].copy_from_slice(&(SCHEMA_VERSION + 1).to_le_bytes());
    assert_eq!(
        ReducedRank::from_bytes(&other_version).err(),
        Some(ReducedError::Version {
            found: SCHEMA_VERSION + 1
        })
    );
}
