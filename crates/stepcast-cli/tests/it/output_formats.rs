//! Output formats: `--format csv` (every table of the JSON document, one file each) and `--format md` (a
//! Markdown digest of analyze and advise), checked against the JSON.

use super::{NCCL, TempDir, path_str, stepcast};

const CSV_TOTALS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/csv_totals.py");

// See: issue 16 (CSV tables load with pandas and sum to the same totals as the JSON).
#[test]
#[allow(clippy::print_stderr)] // the skip message
fn csv_tables_load_in_python_and_sum_to_the_json_totals() {
    let dir = TempDir::new("csv");
    let tables = dir.path().join("tables");
    stepcast(&["analyze", NCCL, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    let json = stepcast(&["analyze", "--json", NCCL]);
    json.assert_success();
    let document = dir.path().join("analyze.json");
    std::fs::write(&document, &json.stdout).expect("write the JSON");
    // Written twice, the same bytes (and the directory replaced whole).
    let again = dir.path().join("again");
    stepcast(&["analyze", NCCL, "--format", "csv", "-o", path_str(&again)]).assert_success();
    stepcast(&["analyze", NCCL, "--format", "csv", "-o", path_str(&again)]).assert_success();
    let names = |path: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .expect("a directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&tables), names(&again));
    for name in names(&tables) {
        assert_eq!(
            std::fs::read(tables.join(&name)).expect("read"),
            std::fs::read(again.join(&name)).expect("read"),
            "{name}"
        );
    }
    assert!(names(&tables).contains(&"statistics.top_kernels.csv".to_string()));
    let python = std::process::Command::new("python3")
        .arg(CSV_TOTALS)
        .arg(&tables)
        .arg(&document)
        .output();
    match python {
        Err(_) => eprintln!("skipping the Python check: python3 not found"),
        Ok(output) => assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

#[test]
fn csv_needs_a_directory() {
    let run = stepcast(&["info", NCCL, "--format", "csv"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("-o DIR"), "{}", run.stderr);
}

#[test]
fn markdown_digest_holds_the_json_figures() {
    let md = stepcast(&["analyze", NCCL, "--format", "md"]);
    md.assert_success();
    let analyze = stepcast(&["analyze", "--json", NCCL]).json();
    for step in analyze["steps"].as_array().expect("steps") {
        let measured = step["measured_ns"].as_i64().expect("measured") as f64 / 1e6;
        let row = format!("| {} | ", step["number"]);
        let line = md
            .stdout
            .lines()
            .find(|line| line.starts_with(&row))
            .unwrap_or_else(|| panic!("no row for step {}", step["number"]));
        assert!(line.contains(&format!("{measured:.3}")), "{line}");
    }
    let text = stepcast(&["analyze", NCCL]).stdout;
    let bound = md
        .stdout
        .lines()
        .find(|line| line.contains("is bound by") && !line.starts_with("**"))
        .expect("the bound sentence");
    assert!(text.replace('\n', " ").contains(&bound[..60]), "{bound}");
    let advise = stepcast(&["advise", NCCL, "--format", "md"]);
    advise.assert_success();
    let json = stepcast(&["advise", "--json", NCCL]).json();
    // The program changes' table: hardware what-ifs are listed apart.
    let best = json["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["hardware"] == false)
        .expect("a program change");
    assert!(
        advise.stdout.contains(&format!(
            "| 1 | {} | ",
            best["name"].as_str().expect("name")
        )),
        "{}",
        advise.stdout
    );
    let refused = stepcast(&["info", NCCL, "--format", "md"]);
    assert_eq!(refused.code, Some(2));
}

#[test]
fn report_writes_the_digest_and_the_tables_of_analyze_and_advise() {
    let md = stepcast(&["report", NCCL, "--format", "md"]);
    md.assert_success();
    let analyze = stepcast(&["analyze", NCCL, "--format", "md"]).stdout;
    let advise = stepcast(&["advise", NCCL, "--format", "md"]).stdout;
    assert_eq!(md.stdout, format!("{analyze}{advise}"));

    let dir = TempDir::new("report-csv");
    let tables = dir.path().join("tables");
    stepcast(&["report", NCCL, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    let candidates = std::fs::read_to_string(tables.join("advise.candidates.csv"))
        .expect("the candidates table");
    let json = stepcast(&["advise", "--json", NCCL]).json();
    let count = json["candidates"].as_array().expect("candidates").len();
    // A header, then a line per candidate (no cell of this table holds a line break).
    assert_eq!(candidates.lines().count(), count + 1);
    assert!(tables.join("analyze.steps.csv").is_file());

    let refused = stepcast(&["report", NCCL, "--format", "csv"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
}
