//! The Nsight Systems reader against SQL run here over the same files: every vendored export
//! (`testdata/nsys/`) and every one in the shared collection beside the repository, when it is
//! there. Nothing below is a figure copied from stepcast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use stepcast_trace::{EventKind, LaneKind, ReadError, ReadOptions, Trace, read_processes};

use super::testdata;

/// Every `.sqlite` file under `dir`, sorted.
fn sqlite_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            sqlite_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "sqlite") {
            found.push(path);
        }
    }
}

/// The vendored exports (required) and the shared collection's (when present).
fn exports() -> Vec<PathBuf> {
    let mut files = Vec::new();
    sqlite_files(&testdata().join("nsys"), &mut files);
    assert!(
        files.len() >= 4,
        "test data missing: fewer than 4 exports under testdata/nsys"
    );
    sqlite_files(&testdata().join("../../shared/traces/nsys"), &mut files);
    files
}

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Per process id: rows of `sql` as (key, start, end), where `sql` selects the pid first.
fn rows(connection: &Connection, sql: &str) -> Vec<(i64, i64, i64, i64, i64)> {
    let mut statement = connection.prepare(sql).expect("prepare");
    statement
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ))
        })
        .expect("query")
        .map(|row| row.expect("row"))
        .collect()
}

/// Busy time of a set of intervals: the length of their union.
fn busy_ns(mut intervals: Vec<(i64, i64)>) -> i64 {
    intervals.sort_unstable();
    let mut busy = 0;
    let mut open: Option<(i64, i64)> = None;
    for (start, end) in intervals {
        match open {
            Some((s, e)) if start <= e => open = Some((s, e.max(end))),
            _ => {
                if let Some((s, e)) = open {
                    busy += e - s;
                }
                open = Some((start, end));
            }
        }
    }
    busy + open.map_or(0, |(s, e)| e - s)
}

/// What SQL says of each process's device work: kernels, device time, and busy time per
/// (device, stream).
#[derive(Debug, Default, PartialEq)]
struct DeviceFacts {
    kernels: u64,
    device_ns: i64,
    busy_ns: BTreeMap<(i64, i64), i64>,
}

fn sql_facts(connection: &Connection) -> BTreeMap<i64, DeviceFacts> {
    let tables: Vec<String> = {
        let mut statement = connection
            .prepare("SELECT name FROM sqlite_master WHERE type='table'")
            .expect("tables");
        statement
            .query_map([], |row| row.get(0))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect()
    };
    let mut facts: BTreeMap<i64, DeviceFacts> = BTreeMap::new();
    let mut intervals: BTreeMap<(i64, i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        if !tables.iter().any(|t| t == table) {
            continue;
        }
        let sql = format!(
            "SELECT (globalPid >> 24) & 16777215, deviceId, streamId, start, \"end\" FROM {table} \
             WHERE \"end\" >= start"
        );
        for (pid, device, stream, start, end) in rows(connection, &sql) {
            let entry = facts.entry(pid).or_default();
            entry.kernels += u64::from(table.ends_with("KERNEL"));
            entry.device_ns += end - start;
            intervals
                .entry((pid, device, stream))
                .or_default()
                .push((start, end));
        }
    }
    for ((pid, device, stream), spans) in intervals {
        if let Some(entry) = facts.get_mut(&pid) {
            entry.busy_ns.insert((device, stream), busy_ns(spans));
        }
    }
    facts
}

fn trace_facts(trace: &Trace) -> DeviceFacts {
    let mut facts = DeviceFacts::default();
    let mut intervals: BTreeMap<(i64, i64), Vec<(i64, i64)>> = BTreeMap::new();
    for event in trace.events.iter().filter(|e| e.kind.is_device_task()) {
        facts.kernels += u64::from(event.kind == EventKind::Kernel);
        facts.device_ns += event.dur_ns;
        let lane = trace.lane(event.lane);
        assert_eq!(lane.kind, LaneKind::DeviceStream);
        intervals
            .entry((lane.pid, lane.tid))
            .or_default()
            .push((event.start_ns, event.end_ns()));
    }
    facts.busy_ns = intervals
        .into_iter()
        .map(|(key, spans)| (key, busy_ns(spans)))
        .collect();
    facts
}

#[test]
fn nsys_device_work_agrees_with_sql_on_every_export() {
    for path in exports() {
        let traces =
            read_processes(&path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let expected = sql_facts(&open(&path));
        assert_eq!(
            traces.len(),
            expected.len(),
            "{}: one trace per process with device work",
            path.display()
        );
        for (trace, (pid, want)) in traces.iter().zip(&expected) {
            if let Some(process) = trace.process_id {
                assert_eq!(process, *pid, "{}: process order", path.display());
            }
            let got = trace_facts(trace);
            assert_eq!(&got, want, "{} process {pid}", path.display());
            assert!(
                want.kernels > 0,
                "{}: a process without kernels",
                path.display()
            );
        }
    }
}

#[test]
fn nsys_runtime_calls_and_nvtx_ranges_agree_with_sql() {
    for path in exports() {
        let traces =
            read_processes(&path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let connection = open(&path);
        let per_pid = |sql: &str| -> BTreeMap<i64, i64> {
            // A table the export lacks holds no rows.
            let mut statement = match connection.prepare(sql) {
                Ok(statement) => statement,
                Err(e) if e.to_string().contains("no such table") => return BTreeMap::new(),
                Err(e) => panic!("{e}"),
            };
            statement
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .expect("query")
                .map(|r| r.expect("row"))
                .collect()
        };
        let calls = per_pid(
            "SELECT (globalTid >> 24) & 16777215, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME \
             WHERE \"end\" >= start GROUP BY 1",
        );
        // Push/pop and start/end ranges (event types 59, 60), steps aside.
        let ranges = per_pid(
            "SELECT (n.globalTid >> 24) & 16777215, count(*) FROM NVTX_EVENTS n \
             LEFT JOIN StringIds s ON s.id = n.textId \
             WHERE n.eventType IN (59, 60) AND n.\"end\" >= n.start \
             AND coalesce(n.text, s.value) NOT LIKE 'ProfilerStep#%' GROUP BY 1",
        );
        let device_pids: Vec<i64> = sql_facts(&connection).into_keys().collect();
        for (trace, pid) in traces.iter().zip(&device_pids) {
            let count = |kinds: &[EventKind]| {
                trace
                    .events
                    .iter()
                    .filter(|e| kinds.contains(&e.kind))
                    .count() as i64
            };
            assert_eq!(
                count(&[EventKind::RuntimeCall, EventKind::DriverCall]),
                calls.get(pid).copied().unwrap_or(0),
                "{} process {pid}: runtime and driver calls",
                path.display()
            );
            assert_eq!(
                count(&[EventKind::CpuOp, EventKind::UserAnnotation]),
                ranges.get(pid).copied().unwrap_or(0),
                "{} process {pid}: NVTX ranges",
                path.display()
            );
        }
    }
}

#[test]
fn nsys_step_range_makes_steps_of_matching_ranges() {
    let path = testdata().join("nsys/nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite");
    let options = ReadOptions {
        step_range: Some(regex::Regex::new("^ncclGroupEnd$").expect("regex")),
        ..ReadOptions::default()
    };
    let traces = read_processes(&path, &options).unwrap_or_else(|e| panic!("{e}"));
    let connection = open(&path);
    for trace in &traces {
        let pid = trace
            .process_id
            .expect("a two-process file names each process");
        let want: i64 = connection
            .query_row(
                "SELECT count(*) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId \
                 WHERE s.value = 'ncclGroupEnd' AND (n.globalTid >> 24) & 16777215 = ?1",
                [pid],
                |row| row.get(0),
            )
            .expect("count");
        assert!(want > 0);
        assert_eq!(trace.steps.len() as i64, want, "process {pid}");
        let numbers: Vec<u64> = trace.steps.iter().map(|s| s.number).collect();
        assert_eq!(numbers, (0..want as u64).collect::<Vec<_>>());
    }
}

/// A scratch file, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, bytes: &[u8]) -> Scratch {
        let path = std::env::temp_dir().join(format!("stepcast-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).expect("write scratch file");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn refused(path: &Path) -> ReadError {
    match std::panic::catch_unwind(|| read_processes(path, &ReadOptions::default())) {
        Ok(Ok(traces)) => panic!("{} read as {} traces", path.display(), traces.len()),
        Ok(Err(error)) => {
            let message = error.to_string();
            assert!(
                message.contains(&path.display().to_string()),
                "the message names the file: {message}"
            );
            assert!(!message.contains('\n'), "one line: {message}");
            error
        }
        Err(_) => panic!("{} panicked", path.display()),
    }
}

#[test]
fn nsys_bad_sqlite_inputs_are_one_clear_error() {
    let real = std::fs::read(
        testdata().join("nsys/pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"),
    )
    .expect("vendored export");
    // Truncated at several points: the header alone, one page, half the file.
    for cut in [100, 4096, real.len() / 2] {
        let file = Scratch::new(&format!("cut{cut}.sqlite"), &real[..cut]);
        let error = refused(&file.0);
        assert!(
            matches!(
                error,
                ReadError::Sqlite { .. } | ReadError::NoCudaTrace { .. }
            ),
            "cut at {cut}: {error}"
        );
    }
    // The header followed by garbage.
    let mut garbage = b"SQLite format 3\0".to_vec();
    garbage.extend((0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    let file = Scratch::new("garbage.sqlite", &garbage);
    assert!(matches!(refused(&file.0), ReadError::Sqlite { .. }));

    // A SQLite database that is not an export.
    let other = Scratch::new("other.sqlite", b"");
    std::fs::remove_file(&other.0).expect("remove");
    {
        let connection = Connection::open(&other.0).expect("create");
        connection
            .execute_batch(
                "CREATE TABLE users (id INTEGER, name TEXT); INSERT INTO users VALUES (1, 'a');",
            )
            .expect("fill");
    }
    let error = refused(&other.0);
    assert!(matches!(error, ReadError::NotNsys { .. }), "{error}");
    assert!(error.to_string().contains("users"), "{error}");

    // A real export of a run without CUDA trace: the same file without its CUPTI device and
    // runtime tables.
    let without = Scratch::new("nocuda.sqlite", &real);
    {
        let connection = Connection::open(&without.0).expect("open copy");
        connection
            .execute_batch(
                "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; \
                 DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET; DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME;",
            )
            .expect("drop");
    }
    let error = refused(&without.0);
    assert!(matches!(error, ReadError::NoCudaTrace { .. }), "{error}");
    // The device tables dropped but the runtime calls kept: an export with tables left out,
    // named as such.
    let partial = Scratch::new("partial.sqlite", &real);
    {
        let connection = Connection::open(&partial.0).expect("open copy");
        connection
            .execute_batch(
                "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; \
                 DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET;",
            )
            .expect("drop");
    }
    let error = refused(&partial.0);
    assert!(
        matches!(error, ReadError::NsysTableMissing { .. }),
        "{error}"
    );
}

#[test]
fn every_format_names_itself_when_refused() {
    // Each row of the detection table: a bad file of a format read gets its reader's error.
    let xplane = Scratch::new("x.pb", b"\n\x20\x12\x09/host:CPU rest of a plane");
    let error = refused(&xplane.0);
    assert!(matches!(error, ReadError::NotXPlane { .. }), "{error}");
    assert!(error.to_string().contains("XPlane"), "{error}");
    let rocprof = Scratch::new("r.json", b"{\"rocprofiler-sdk-tool\": []}");
    let error = refused(&rocprof.0);
    assert!(matches!(error, ReadError::NotATrace { .. }), "{error}");
    assert!(
        error.to_string().contains("rocprofiler-sdk-tool"),
        "{error}"
    );
    // A format known but not read is named, with what to do.
    let zstd = Scratch::new("z.json.zst", &[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0]);
    let error = refused(&zstd.0);
    assert!(matches!(error, ReadError::NotRead { .. }), "{error}");
    assert!(error.to_string().contains("zstd -d"), "{error}");
    // An export in memory is named, not read: SQLite is read from a file.
    let export = std::fs::read(
        testdata().join("nsys/pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"),
    )
    .expect("vendored export");
    let error = stepcast_trace::read_trace_bytes(&export, Path::new("in-memory.sqlite"))
        .expect_err("not read from memory");
    assert!(matches!(error, ReadError::NotRead { .. }), "{error}");
    assert!(error.to_string().contains("from a file"), "{error}");
    // A zip that is not whole is an archive whose members cannot be listed.
    let broken = Scratch::new("u.zip", b"PK\x03\x04 not a trace");
    let error = refused(&broken.0);
    assert!(matches!(error, ReadError::Archive { .. }), "{error}");
    assert!(error.to_string().contains("cannot be listed"), "{error}");
    let unknown = Scratch::new("u.bin", b"\x7fELF\x02\x01\x01 not a trace");
    assert!(matches!(
        refused(&unknown.0),
        ReadError::UnknownFormat { .. }
    ));
}

/// Per kernel row, in the reader's order (process, device, stream, start, then file order):
/// blocks, warps per block and the SM count of its device, by SQL over the export.
fn sql_launches(connection: &Connection) -> BTreeMap<i64, Vec<(i64, i64, i64)>> {
    let sql = "SELECT (k.globalPid >> 24) & 16777215, \
               k.gridX * k.gridY * k.gridZ, \
               (k.blockX * k.blockY * k.blockZ + g.threadsPerWarp - 1) / g.threadsPerWarp, \
               g.smCount, k.start \
               FROM CUPTI_ACTIVITY_KIND_KERNEL AS k \
               JOIN TARGET_INFO_GPU AS g ON g.cuDevice = k.deviceId \
               ORDER BY 1, k.deviceId, k.streamId, k.start, k.\"end\" DESC, k.rowid";
    let mut out: BTreeMap<i64, Vec<(i64, i64, i64)>> = BTreeMap::new();
    for (pid, blocks, warps_per_block, sm_count, _) in rows(connection, sql) {
        out.entry(pid)
            .or_default()
            .push((blocks, warps_per_block, sm_count));
    }
    out
}

fn has_table(connection: &Connection, table: &str) -> bool {
    connection
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |row| row.get::<_, i64>(0),
        )
        .expect("sqlite_master")
        > 0
}

// See: issue 14 (nsys launch configuration → the device capacity model of issue 10).
#[test]
fn nsys_kernel_fill_follows_the_launch_configuration_sql_reads() {
    let mut with_limits = 0;
    for path in exports() {
        let connection = open(&path);
        let traces =
            read_processes(&path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        if !has_table(&connection, "TARGET_INFO_GPU") {
            // Device limits unknown: no kernel gets a fill, and `info` says why.
            for trace in &traces {
                assert!(trace.kernel_fill.is_empty(), "{}", path.display());
                assert!(
                    trace
                        .diagnostics
                        .notes
                        .iter()
                        .any(|n| n.contains("multiprocessor limits")),
                    "{}: {:?}",
                    path.display(),
                    trace.diagnostics.notes
                );
            }
            continue;
        }
        with_limits += 1;
        let expected = sql_launches(&connection);
        for trace in &traces {
            let pid = trace
                .process_id
                .or_else(|| expected.keys().next().copied())
                .expect("a process");
            let launches = &expected[&pid];
            let kernels: Vec<usize> = trace
                .events
                .iter()
                .enumerate()
                .filter(|(_, e)| e.kind == EventKind::Kernel)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(kernels.len(), launches.len(), "{}", path.display());
            // Every kernel of these exports has a launch its device can hold.
            assert_eq!(trace.kernel_fill.len(), kernels.len(), "{}", path.display());
            for ((id, fill), (&event, &(blocks, warps_per_block, sm_count))) in
                trace.kernel_fill.iter().zip(kernels.iter().zip(launches))
            {
                assert_eq!(id.index(), event);
                let warps = fill.warps_per_sm * sm_count as f64;
                assert!(
                    (warps - (blocks * warps_per_block) as f64).abs() < 1e-6,
                    "{}: kernel {event}: {warps} warps, SQL {blocks} blocks × {warps_per_block}",
                    path.display()
                );
                assert!(
                    fill.occupancy_pct > 0.0 && fill.occupancy_pct <= 100.0,
                    "{fill:?}"
                );
            }
        }
    }
    assert!(with_limits >= 2, "the pipit exports have TARGET_INFO_GPU");
}

#[test]
fn nsys_nccl_domains_without_payloads_are_said() {
    let path = testdata().join("nsys/nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite");
    let connection = open(&path);
    let traces = read_processes(&path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    for trace in &traces {
        let pid = trace.process_id.expect("two processes");
        let (ranges, payloads): (i64, i64) = connection
            .query_row(
                "SELECT count(*), count(jsonText) + count(jsonTextId) + count(uint64Value) \
                 FROM NVTX_EVENTS WHERE (globalTid >> 24) & 16777215 = ?1 AND domainId IN \
                 (SELECT domainId FROM NVTX_PAYLOAD_SCHEMA_ENTRIES \
                  WHERE name = 'Message size [bytes]')",
                [pid],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("count");
        assert!(ranges > 0 && payloads == 0);
        let note = format!("{ranges} NVTX records of the domain");
        assert!(
            trace
                .diagnostics
                .notes
                .iter()
                .any(|n| n.starts_with(&note) && n.contains("carry no payload")),
            "{:?}",
            trace.diagnostics.notes
        );
    }
}
