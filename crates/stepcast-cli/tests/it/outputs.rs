//! Outputs never destroy what was there (issue 32): a device or a named pipe is written into,
//! not replaced; a symlink keeps being a link to the file replaced; a file replaced keeps its
//! mode; `--format csv` never empties a directory of the user's; and an output path that is
//! one of the command's inputs is an error before anything is read, leaving the input as it
//! was. Hostile outputs, as `bad_input` holds hostile inputs: every failure is one line naming
//! the file, exit status 1, never a panic.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use super::{NCCL, Run, TRACE, TempDir, file_names, path_str, stepcast};

const MANIFEST: &str = ".stepcast-manifest";

/// Checks a refused output: exit 1, one line on stderr naming `file`, and saying `message`.
fn assert_refused(run: &Run, file: &str, message: &str, context: &str) {
    let context = format!("{context}\nstderr: {}", run.stderr);
    assert_eq!(run.code, Some(1), "{context}");
    assert!(run.stderr.starts_with("stepcast: error: "), "{context}");
    assert!(!run.stderr.contains("panicked"), "{context}");
    assert_eq!(run.stderr.lines().count(), 1, "{context}");
    assert!(run.stderr.contains(file), "names {file}: {context}");
    assert!(run.stderr.contains(message), "says {message:?}: {context}");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

// Bar: `-o /dev/null` (a common way to time a command) leaves /dev/null a character device.
#[test]
fn dev_null_stays_a_device() {
    for args in [
        &["info", TRACE, "--json", "-o", "/dev/null"][..],
        &["export", TRACE, "-o", "/dev/null"],
    ] {
        stepcast(args).assert_success();
        let metadata = std::fs::metadata("/dev/null").expect("stat /dev/null");
        assert!(metadata.file_type().is_char_device(), "{args:?}");
    }
}

// Bar: `-o` a named pipe streams into it (a reader on the other end gets the whole answer).
#[test]
fn a_named_pipe_is_streamed_into() {
    let dir = TempDir::new("fifo");
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let reader = {
        let fifo = fifo.clone();
        // Opening a pipe blocks until both ends are open: the reader runs beside stepcast.
        std::thread::spawn(move || {
            let mut text = String::new();
            std::fs::File::open(&fifo)
                .expect("open the pipe")
                .read_to_string(&mut text)
                .expect("read the pipe");
            text
        })
    };
    let run = stepcast(&["info", TRACE, "--json", "-o", path_str(&fifo)]);
    if run.code != Some(0) {
        // Stepcast never opened the pipe: open its write end so the reader ends, not hangs.
        let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
    }
    run.assert_success();
    let text = reader.join().expect("the reader thread");
    let document: serde_json::Value = serde_json::from_str(&text).expect("the pipe got JSON");
    assert_eq!(document["schema"], "stepcast.info/1");
    let kind = std::fs::symlink_metadata(&fifo).expect("stat").file_type();
    assert!(kind.is_fifo(), "the pipe is still a pipe");
    assert_eq!(dir.entries(), ["pipe"], "nothing else written beside it");
}

// Bar: `-o` a symlink replaces its target and keeps the link; the target keeps its mode.
#[test]
fn a_symlink_is_followed_and_kept() {
    let dir = TempDir::new("symlink");
    let real = dir.path().join("real.json");
    std::fs::write(&real, "old").expect("write");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).expect("symlink");
    stepcast(&["info", TRACE, "--json", "-o", path_str(&link)]).assert_success();
    let kind = std::fs::symlink_metadata(&link).expect("stat").file_type();
    assert!(kind.is_symlink(), "the link is still a link");
    assert_eq!(
        std::fs::read_link(&link).expect("readlink"),
        Path::new("real.json")
    );
    let text = std::fs::read_to_string(&real).expect("read the target");
    assert!(
        text.contains("stepcast.info/1"),
        "the target was replaced: {text}"
    );
    assert_eq!(mode(&real), 0o640, "the target keeps its mode");
    assert_eq!(dir.entries(), ["link.json", "real.json"]);

    // A link to a file not there yet: the file is made where the link points.
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink("made.json", &dangling).expect("symlink");
    stepcast(&["info", TRACE, "--json", "-o", path_str(&dangling)]).assert_success();
    assert!(
        std::fs::symlink_metadata(&dangling)
            .expect("stat")
            .file_type()
            .is_symlink()
    );
    let made = std::fs::read_to_string(dir.path().join("made.json")).expect("the target");
    assert!(made.contains("stepcast.info/1"));
}

#[test]
fn a_file_replaced_keeps_its_mode() {
    let dir = TempDir::new("mode");
    for (name, wanted) in [("private.json", 0o600), ("shared.json", 0o664)] {
        let out = dir.path().join(name);
        std::fs::write(&out, "old").expect("write");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(wanted)).expect("chmod");
        stepcast(&["analyze", TRACE, "--json", "-o", path_str(&out)]).assert_success();
        assert_eq!(mode(&out), wanted, "{name}");
        assert_ne!(std::fs::read(&out).expect("read"), b"old");
    }
    // And a file of ours in a csv directory, rewritten.
    let tables = dir.path().join("tables");
    stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    let summary = tables.join("summary.csv");
    std::fs::set_permissions(&summary, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    assert_eq!(mode(&summary), 0o600);
}

// Bar: `--format csv -o DIR` on a directory holding a file stepcast did not write exits 1, and
// the file is still there (before issue 32 the directory was replaced, the file deleted).
#[test]
fn csv_never_empties_a_directory_of_the_users() {
    let dir = TempDir::new("csv-foreign");
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).expect("mkdir");
    std::fs::write(notes.join("notes.txt"), "mine").expect("write");
    let run = stepcast(&["analyze", TRACE, "--format", "csv", "-o", path_str(&notes)]);
    assert_refused(
        &run,
        path_str(&notes),
        "holds 1 file stepcast did not write (notes.txt); give a new or empty directory",
        "a directory of the user's",
    );
    assert_eq!(
        std::fs::read(notes.join("notes.txt")).expect("still there"),
        b"mine"
    );
    let left: Vec<_> = std::fs::read_dir(&notes).expect("ls").collect();
    assert_eq!(left.len(), 1, "nothing added");

    // Written by stepcast before, with a file of the user's added since: refused the same.
    let tables = dir.path().join("tables");
    stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    std::fs::create_dir(tables.join("plots")).expect("mkdir");
    std::fs::write(tables.join("a.txt"), "mine").expect("write");
    let run = stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&tables)]);
    assert_refused(
        &run,
        path_str(&tables),
        "holds 2 files stepcast did not write (a.txt, plots/)",
        "",
    );

    // A listed name that is no longer a regular file is not ours either.
    let linked = dir.path().join("linked");
    stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&linked)]).assert_success();
    std::fs::remove_file(linked.join("summary.csv")).expect("rm");
    std::os::unix::fs::symlink(notes.join("notes.txt"), linked.join("summary.csv")).expect("ln");
    let run = stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&linked)]);
    assert_refused(
        &run,
        path_str(&linked),
        "(summary.csv)",
        "a link in place of a table",
    );
    assert_eq!(
        std::fs::read(notes.join("notes.txt")).expect("still there"),
        b"mine"
    );

    // A file where a directory is asked for.
    let file = dir.path().join("file.csv");
    std::fs::write(&file, "mine").expect("write");
    let run = stepcast(&["info", TRACE, "--format", "csv", "-o", path_str(&file)]);
    assert_refused(&run, path_str(&file), "is not a directory", "a file");
    assert_eq!(std::fs::read(&file).expect("read"), b"mine");
}

// `--format csv` into the same directory twice works (its manifest says the files are its
// own), and so does an existing empty directory; a table the new answer lacks goes away.
#[test]
fn csv_rewrites_its_own_directory() {
    let dir = TempDir::new("csv-again");
    let tables = dir.path().join("tables");
    stepcast(&["analyze", NCCL, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    let first = file_names(&tables);
    assert!(first.contains(&MANIFEST.to_string()), "{first:?}");
    assert!(first.contains(&"steps.csv".to_string()), "{first:?}");
    // A table of an earlier answer that this one lacks: listed, so ours, so removed.
    std::fs::write(tables.join("old_table.csv"), "a\n1\n").expect("write");
    let manifest = tables.join(MANIFEST);
    let mut text = std::fs::read_to_string(&manifest).expect("read the manifest");
    text.push_str("old_table.csv\n");
    std::fs::write(&manifest, text).expect("write the manifest");
    stepcast(&["analyze", NCCL, "--format", "csv", "-o", path_str(&tables)]).assert_success();
    assert_eq!(
        file_names(&tables),
        first,
        "the same files, the stale one gone, no staging left"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    stepcast(&["analyze", NCCL, "--format", "csv", "-o", path_str(&empty)]).assert_success();
    assert_eq!(file_names(&empty), first);
    assert_eq!(mode(&empty), 0o750, "the directory itself is kept");
    for name in &first {
        assert_eq!(
            std::fs::read(tables.join(name)).expect("read"),
            std::fs::read(empty.join(name)).expect("read"),
            "{name}"
        );
    }
}

// Bar: `-o` the input trace exits 1 and the trace's bytes are unchanged (before issue 32,
// `export run.json.gz -o run.json.gz` replaced the trace by its export). Every input counts,
// however spelled: a symlink or a hard link to it, a rank trace of a job folder, a scenario,
// a plan, a Horovod timeline, the other trace of `compare`.
#[test]
fn an_input_is_never_an_output() {
    let dir = TempDir::new("input-output");
    let trace = dir.path().join("t.json.gz");
    std::fs::copy(TRACE, &trace).expect("copy the trace");
    let bytes = std::fs::read(&trace).expect("read");
    let link = dir.path().join("link.json.gz");
    std::os::unix::fs::symlink(&trace, &link).expect("symlink");
    let hard = dir.path().join("hard.json.gz");
    std::fs::hard_link(&trace, &hard).expect("hard link");
    let job = dir.path().join("job");
    std::fs::create_dir(&job).expect("mkdir");
    let rank = job.join("rank1.json.gz");
    std::fs::copy(NCCL, job.join("rank0.json.gz")).expect("copy");
    std::fs::copy(NCCL, &rank).expect("copy");
    // Inputs that do not parse: the refusal comes before any is read, so it is the answer.
    let scenario = dir.path().join("scenario.toml");
    std::fs::write(&scenario, "not toml [").expect("write");
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, "{").expect("write");
    let timeline = dir.path().join("horovod.json");
    std::fs::write(&timeline, "[").expect("write");

    let (t, l, h, r) = (
        path_str(&trace),
        path_str(&link),
        path_str(&hard),
        path_str(&rank),
    );
    let (s, p, c, j) = (
        path_str(&scenario),
        path_str(&plan),
        path_str(&timeline),
        path_str(&job),
    );
    let cases: [&[&str]; 16] = [
        &["export", t, "-o", t],
        &["export", l, "-o", t],
        &["export", t, "-o", l],
        &["export", t, "-o", h],
        &["info", t, "--json", "-o", t],
        &["analyze", t, "-o", t],
        &["advise", t, "--format", "md", "-o", t],
        &["whatif", t, "amp", "-o", t],
        &["whatif", t, "--scenario", s, "-o", s],
        &["export", t, "--plan", p, "-o", p],
        &["info", t, "--comm-timeline", c, "-o", c],
        &["compare", NCCL, t, "-o", t],
        &["replay", j, "--json", "-o", r],
        &["optimize", j, "-o", r],
        &["report", t, "-o", t],
        &["analyze", t, "--format", "csv", "-o", j],
    ];
    for args in cases {
        let run = stepcast(args);
        let output = args.last().expect("-o PATH");
        let message = if output == &j {
            "stepcast did not write"
        } else {
            "is an input of this command"
        };
        assert_refused(&run, output, message, &format!("stepcast {args:?}"));
    }
    assert_eq!(
        std::fs::read(&trace).expect("read"),
        bytes,
        "the trace is unchanged"
    );
    assert_eq!(std::fs::read(&scenario).expect("read"), b"not toml [");
    assert_eq!(std::fs::read(&plan).expect("read"), b"{");
    assert_eq!(std::fs::read(&timeline).expect("read"), b"[");
    assert_eq!(
        std::fs::read(&rank).expect("read"),
        std::fs::read(NCCL).expect("read")
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("stat")
            .file_type()
            .is_symlink()
    );

    // A directory holding an input, for csv: refused, not emptied.
    let holder = dir.path().join("holder");
    std::fs::create_dir(&holder).expect("mkdir");
    let inside = holder.join("t.json.gz");
    std::fs::copy(TRACE, &inside).expect("copy");
    let run = stepcast(&[
        "info",
        path_str(&inside),
        "--format",
        "csv",
        "-o",
        path_str(&holder),
    ]);
    assert_refused(
        &run,
        path_str(&holder),
        "holds the input",
        "csv into the trace's folder",
    );
    assert_eq!(file_names(&holder), ["t.json.gz"]);

    // A new file beside the inputs is fine.
    let beside = dir.path().join("t.export.json");
    stepcast(&["export", t, "-o", path_str(&beside)]).assert_success();
}

#[test]
fn dash_and_dev_stdout_are_the_standard_output() {
    for out in ["-", "/dev/stdout"] {
        let run = stepcast(&["info", TRACE, "--json", "-o", out]);
        run.assert_success();
        assert_eq!(run.json()["schema"], "stepcast.info/1", "-o {out}");
    }
    let run = stepcast(&["info", TRACE, "--format", "csv", "-o", "-"]);
    assert_refused(&run, "-", "is not a directory", "csv to stdout");
}

#[test]
fn a_directory_is_not_a_file_output() {
    let dir = TempDir::new("dir-as-file");
    let run = stepcast(&["export", TRACE, "-o", path_str(dir.path())]);
    assert_refused(
        &run,
        path_str(dir.path()),
        "is a directory",
        "export into a directory",
    );
    assert!(dir.entries().is_empty());
}
