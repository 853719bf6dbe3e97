//! Inputs that hold traces without being one: archives, a CTF trace's stream file, an Nsight
//! Systems export with a device table left out. Each is one clear error that says what to
//! give instead; the archives are made here from real traces of `testdata/`.

use std::io::Write;
use std::path::PathBuf;

use stepcast_trace::{ReadError, read_trace};

use crate::{TempDir, kineto_file, testdata};

const RANKS: [&str; 2] = [
    "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz",
    "HolisticTraceAnalysis/tests/data/call_stack/backward_thread.json",
];

fn message(path: &std::path::Path) -> (ReadError, String) {
    let error = read_trace(path).expect_err("refused");
    let text = error.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(!text.contains('\n'), "one line: {text}");
    (error, text)
}

#[test]
fn a_tar_gz_of_rank_traces_says_to_extract_it_as_a_job_folder() {
    let dir = TempDir::new("archive-tar");
    let path = dir.path().join("job.tar.gz");
    let encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).expect("create"),
        flate2::Compression::fast(),
    );
    let mut builder = tar::Builder::new(encoder);
    for (rank, trace) in RANKS.iter().enumerate() {
        let name = format!("job/rank{rank}.json{}", if rank == 0 { ".gz" } else { "" });
        builder
            .append_path_with_name(kineto_file(trace), name)
            .expect("append");
    }
    builder.into_inner().expect("tar").finish().expect("gzip");
    let (error, text) = message(&path);
    assert!(matches!(error, ReadError::Archive { .. }), "{error:?}");
    assert!(
        text.contains("gzip-compressed tar archive holding 2 files, 2 of them traces")
            && text.contains("job/rank0.json.gz, job/rank1.json")
            && text.contains("tar -xzf")
            && text.contains("read as one job"),
        "{text}"
    );
}

#[test]
fn a_zip_of_one_trace_names_it() {
    let dir = TempDir::new("archive-zip");
    let path = dir.path().join("profile.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).expect("create"));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("profile/trace.json", stored).expect("zip");
    zip.write_all(&std::fs::read(kineto_file(RANKS[1])).expect("read"))
        .expect("zip");
    zip.start_file("profile/notes.txt", stored).expect("zip");
    zip.write_all(b"recorded with torch.profiler").expect("zip");
    zip.finish().expect("zip");
    let (error, text) = message(&path);
    assert!(matches!(error, ReadError::Archive { .. }), "{error:?}");
    assert!(
        text.contains("zip archive holding 2 files, one a trace (profile/trace.json)")
            && text.contains("unzip")
            && text.contains("give that trace"),
        "{text}"
    );
}

#[test]
fn a_ctf_stream_file_names_its_trace_directory() {
    let trace =
        testdata().join("ctf/tracecompass-test-traces/context-switches/context-switches-ust");
    let stream = trace.join("channel0_0");
    let (error, text) = message(&stream);
    assert!(matches!(error, ReadError::CtfStream { .. }), "{error:?}");
    assert!(
        text.contains(&format!("give the trace's directory, {}", trace.display())),
        "{text}"
    );
    // The directory itself is read.
    read_trace(&trace).unwrap_or_else(|e| panic!("{e}"));
}

/// An export with its kernel table dropped (a copy made here from a real export): refused,
/// naming the table and the launches SQL counts in the runtime table of the same file.
#[test]
fn an_nsys_export_without_its_kernel_table_is_refused() {
    let original = testdata().join("nsys/nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite");
    let dir = TempDir::new("nsys-partial");
    let copy: PathBuf = dir.path().join("partial.sqlite");
    std::fs::copy(&original, &copy).expect("copy");
    let connection = rusqlite::Connection::open(&copy).expect("open the copy");
    let launches: u64 = connection
        .query_row(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s \
             ON r.nameId = s.id WHERE s.value LIKE 'cudaLaunchKernel%' \
             OR s.value LIKE 'cuLaunchKernel%' OR s.value LIKE 'cudaGraphLaunch%' \
             OR s.value LIKE 'cudaLaunchCooperativeKernel%' OR s.value LIKE 'cuGraphLaunch%' \
             OR s.value LIKE 'cuLaunchCooperativeKernel%'",
            [],
            |row| row.get(0),
        )
        .expect("count");
    assert!(launches > 0);
    connection
        .execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL", [])
        .expect("drop");
    drop(connection);
    let (error, text) = message(&copy);
    assert!(
        matches!(error, ReadError::NsysTableMissing { .. }),
        "{error:?}"
    );
    assert!(
        text.contains(&format!(
            "without its CUPTI_ACTIVITY_KIND_KERNEL table, while CUPTI_ACTIVITY_KIND_RUNTIME \
             records {launches} kernel launches"
        )),
        "{text}"
    );
    // The original, whole, is read.
    read_trace(&original).unwrap_or_else(|e| panic!("{e}"));
}
