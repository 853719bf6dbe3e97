//! The Horovod timeline reader and its join with the framework trace, on the 2-process Gloo
//! run recorded here (`testdata/horovod/gloo_mlp_2proc/`, `record.sh`). Expected counts are
//! read from the file with `serde_json` (an independent reader), never from stepcast's output.

use std::io::Read;
use std::path::PathBuf;

use stepcast_trace::horovod::{self, join::join};
use stepcast_trace::{LinkKind, ReadError, ReadOptions, read_processes, read_trace};

fn sample() -> PathBuf {
    super::testdata().join("horovod/gloo_mlp_2proc")
}

fn timeline_text() -> String {
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(sample().join("horovod_timeline.json.gz")).expect("sample"),
    )
    .read_to_string(&mut text)
    .expect("gzip");
    text
}

/// The timeline's records as serde reads them.
fn records() -> Vec<serde_json::Value> {
    serde_json::from_str(&timeline_text()).expect("the recorded timeline is whole JSON")
}

#[test]
fn every_collective_carries_its_tensors_names_and_sizes() {
    let trace =
        read_trace(&sample().join("horovod_timeline.json.gz")).unwrap_or_else(|e| panic!("{e}"));
    let records = records();
    // Reference: one `GLOO_ALLREDUCE` begin per tensor per all-reduce; its response's end
    // names the shape.
    let tensor_allreduces = records
        .iter()
        .filter(|r| r["ph"] == "B" && r["name"] == "GLOO_ALLREDUCE")
        .count();
    assert!(tensor_allreduces > 0);
    let collectives: Vec<_> = trace
        .comm_args
        .iter()
        .map(|(event, args)| {
            let tensors = &trace.comm_tensors[trace
                .comm_tensors
                .binary_search_by_key(event, |(e, _)| *e)
                .expect("a collective carries tensors")]
            .1;
            (
                trace.name(trace.events[event.index()].name).to_string(),
                args,
                tensors,
            )
        })
        .collect();
    let carried: usize = collectives.iter().map(|(_, _, t)| t.len()).sum();
    assert_eq!(
        carried, tensor_allreduces,
        "each tensor's all-reduce in exactly one collective"
    );
    assert!(
        collectives.len() < tensor_allreduces,
        "fused tensors are one collective ({} collectives)",
        collectives.len()
    );
    for (name, args, tensors) in &collectives {
        assert_eq!(name, "GLOO_ALLREDUCE");
        assert_eq!(args.collective.as_deref(), Some("allreduce"));
        let mut elements = 0;
        for tensor in tensors.iter() {
            assert!(tensor.name.starts_with("allreduce."), "{}", tensor.name);
            assert!(tensor.bytes().is_some_and(|b| b > 0), "{tensor:?}");
            elements += tensor
                .shape
                .as_ref()
                .expect("shape")
                .iter()
                .product::<i64>();
        }
        assert_eq!(args.in_nelems, Some(elements));
        assert!(args.bytes().is_some());
    }
    // The 8 parameters' sizes, as the model defines them (fc1 512→1024, fc2 and fc3
    // 1024→1024, head 1024→10), float32.
    let mut per_step: Vec<(String, i64)> = collectives
        .iter()
        .flat_map(|(_, _, t)| t.iter().map(|t| (t.name.clone(), t.bytes().unwrap_or(0))))
        .collect();
    per_step.sort();
    per_step.dedup();
    let fc1_weight = per_step.iter().find(|(n, _)| n == "allreduce.fc1.weight");
    assert_eq!(fc1_weight.map(|(_, b)| *b), Some(1024 * 512 * 4));
    assert_eq!(per_step.len(), 8);
}

#[test]
fn a_timeline_without_its_closing_bracket_reads_and_one_cut_mid_event_does_not() {
    let text = timeline_text();
    let whole = horovod::read(text.as_bytes(), &sample()).unwrap_or_else(|e| panic!("{e}"));
    let open = text
        .trim_end()
        .strip_suffix(']')
        .expect("Horovod 0.28 closes its array");
    let unclosed = horovod::read(open.as_bytes(), &sample()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unclosed.events, whole.events);
    assert!(
        unclosed
            .diagnostics
            .notes
            .iter()
            .any(|n| n.contains("without its `]`"))
    );
    // Cut inside the last record.
    let cut = &open[..open.len() - 5];
    match horovod::read(cut.as_bytes(), &sample()) {
        Err(ReadError::Truncated { .. }) => {}
        other => panic!("a cut timeline must be refused as truncated, got {other:?}"),
    }
}

#[test]
fn the_join_attaches_every_allreduce_to_the_gradients_it_carries() {
    let framework =
        read_trace(&sample().join("rank0.pt.trace.json.gz")).unwrap_or_else(|e| panic!("{e}"));
    let timeline =
        read_trace(&sample().join("horovod_timeline.json.gz")).unwrap_or_else(|e| panic!("{e}"));
    let negotiations = records()
        .iter()
        .filter(|r| r["ph"] == "B" && r["name"] == "NEGOTIATE_ALLREDUCE")
        .count();
    let framework_events = framework.events.len();
    let (joined, report) = join(framework, timeline);
    assert!(report.collectives > 0);
    assert_eq!(report.unmatched_collectives, 0, "{report:?}");
    assert_eq!(report.producers, negotiations);
    assert!(report.consumers > 0);
    for link in joined
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::GradientReady)
    {
        let producer = &joined.events[link.from.index()];
        let negotiation = &joined.events[link.to.index()];
        assert!(joined.name(producer.name).contains("AccumulateGrad"));
        assert!(joined.name(negotiation.name).starts_with("NEGOTIATE_"));
        // The gradient is ready before every rank is.
        assert!(producer.end_ns() <= negotiation.end_ns() + 2_000);
    }
    for link in joined
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::ReducedTensorUsed)
    {
        assert!(
            joined.events[link.from.index()].end_ns() <= joined.events[link.to.index()].start_ns
        );
    }
    assert_eq!(
        joined.events.len(),
        framework_events
            + read_trace(&sample().join("horovod_timeline.json.gz"))
                .map(|t| t.events.len())
                .unwrap_or(0)
    );
    // Through the read options, as `--comm-timeline` does.
    let options = ReadOptions {
        comm_timeline: Some(sample().join("horovod_timeline.json.gz")),
        ..ReadOptions::default()
    };
    let read = read_processes(&sample().join("rank0.pt.trace.json.gz"), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read[0].links, joined.links);
}
