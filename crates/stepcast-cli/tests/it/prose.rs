//! Every sentence stepcast writes is spaced as a sentence. A string literal continued on its
//! next source line without a `\` carries that line's indentation into the output: two
//! `faster_hardware` caveats and the note on ranks left out as unreadable did, unseen by any
//! test, until 2026-12-02.

use super::ranks::DLRM;
use super::{TempDir, path_str, stepcast};

fn testdata(relative: &str) -> String {
    format!("{}/../../testdata/{relative}", env!("CARGO_MANIFEST_DIR"))
}

/// Every string in `value` with a run of spaces inside, as `where: text`.
fn spaced(value: &serde_json::Value, at: &str, found: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) if text.trim().contains("  ") => {
            found.push(format!("{at}: {text}"))
        }
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                spaced(item, &format!("{at}[{i}]"), found);
            }
        }
        serde_json::Value::Object(fields) => {
            for (name, field) in fields {
                spaced(field, &format!("{at}.{name}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn no_sentence_has_a_run_of_spaces_inside() {
    let resnet = testdata("kineto/stepcast/h100-pairs/resnet-fp32.json.gz");
    let ctf = testdata("ctf/recorded/train-session");
    let loader = testdata("kineto/stepcast/cpu-loader-pairs/steady/textloader-workers0.json.gz");
    let runs: Vec<Vec<&str>> = vec![
        vec!["advise", &resnet],
        vec!["analyze", &resnet],
        vec!["whatif", &resnet, "faster_hardware", "--to", "h200"],
        vec!["whatif", &ctf, "faster_cpu"],
        vec!["advise", &ctf],
        vec!["advise", &loader, "--cores", "2", "--threads", "1"],
    ];
    let mut found = Vec::new();
    for args in &runs {
        let mut with_json = args.clone();
        with_json.push("--json");
        let run = stepcast(&with_json);
        run.assert_success();
        spaced(&run.json(), &args.join(" "), &mut found);
    }
    // The sentences these runs exist for are in them (else the test checks nothing).
    let caveats = stepcast(&[
        "whatif",
        "--json",
        &resnet,
        "faster_hardware",
        "--to",
        "h200",
    ]);
    assert!(
        caveats.stdout.contains("from the datasheets"),
        "{}",
        caveats.stdout
    );
    let off_cpu = stepcast(&["whatif", "--json", &ctf, "faster_cpu"]);
    assert!(
        off_cpu.stdout.contains("off their CPU"),
        "{}",
        off_cpu.stdout
    );

    // The text of a job with a rank left out as unreadable.
    let dir = TempDir::new("prose-unreadable");
    for trace in std::fs::read_dir(DLRM).expect("list") {
        let trace = trace.expect("entry").path();
        std::fs::copy(&trace, dir.path().join(trace.file_name().expect("name"))).expect("copy");
    }
    std::fs::write(
        dir.path()
            .join("worker5_step_12.1694128201549.pt.trace.json"),
        b"{\"traceEvents\": [",
    )
    .expect("write");
    let run = stepcast(&["replay", "--skip-unreadable", path_str(dir.path())]);
    run.assert_success();
    let note = run
        .stdout
        .lines()
        .skip_while(|line| !line.contains("Left out as unreadable"))
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(note.contains("every figure across ranks"), "{}", run.stdout);
    if note.contains("  ") {
        found.push(format!("replay --skip-unreadable: {note}"));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
