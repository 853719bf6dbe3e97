//! The export's JSON text, written event by event in a fixed member order (serde would not
//! put `displayTimeUnit` first, and would hold the whole document as values first).

use std::io::{self, BufWriter, Write};

use stepcast::graph::NO_STEP;
use stepcast_trace::{EventKind, Runtime};

use super::{Counter, Export, Side, What};

/// A track of one process, named.
pub(super) struct Thread {
    pub side: Side,
    pub tid: u32,
    pub name: String,
}

/// One event of `traceEvents` other than metadata.
pub(super) struct Record {
    pub ts_ns: i64,
    /// Zero for everything but slices.
    pub dur_ns: i64,
    pub side: Side,
    pub tid: u32,
    pub body: Body,
}

pub(super) enum Body {
    Slice(What),
    /// The start of flow `id` (`ph: "s"`).
    FlowStart(u32),
    /// The end of flow `id` (`ph: "f"`, bound to the enclosing slice).
    FlowEnd(u32),
    /// A sample of a memory counter (`ph: "C"`).
    Counter {
        counter: Counter,
        bytes: i64,
    },
}

impl Body {
    /// Order among events at one instant: a flow binds to a slice that must already be open,
    /// and a flow starts before it ends.
    fn rank(&self) -> u8 {
        match self {
            Body::Slice(_) => 0,
            Body::FlowStart(_) => 1,
            Body::FlowEnd(_) => 2,
            Body::Counter { .. } => 3,
        }
    }
}

/// Sorts records by time; at one instant slices first (the longer first, so a parent precedes
/// its children), then by process and thread, then in the order given.
pub(super) fn sort(records: &mut [Record]) {
    records.sort_by_key(|record| {
        (
            record.ts_ns,
            record.body.rank(),
            std::cmp::Reverse(record.dur_ns),
            record.side,
            record.tid,
        )
    });
}

/// Writes the whole document to `out`.
pub(super) fn document<W: Write>(
    out: W,
    export: &Export<'_>,
    threads: &[Thread],
    records: &[Record],
) -> io::Result<()> {
    let mut writer = EventWriter {
        out: BufWriter::with_capacity(1 << 16, out),
        export,
        first: true,
    };
    writer
        .out
        .write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
    let predicted = export
        .prediction
        .map(|prediction| (Side::Predicted, format!("predicted: {}", prediction.name)));
    let sides = Side::ALL
        .into_iter()
        .map(|side| (side, side.name().to_string()))
        .chain(predicted);
    for (side, name) in sides {
        writer.metadata(side, 0, "process_name", MetadataValue::Name(&name))?;
        writer.metadata(
            side,
            0,
            "process_sort_index",
            MetadataValue::SortIndex(side.pid()),
        )?;
    }
    for thread in threads {
        writer.metadata(
            thread.side,
            thread.tid,
            "thread_name",
            MetadataValue::Name(&thread.name),
        )?;
        writer.metadata(
            thread.side,
            thread.tid,
            "thread_sort_index",
            MetadataValue::SortIndex(thread.tid),
        )?;
    }
    for record in records {
        writer.record(record)?;
    }
    writer.trailer()?;
    writer.out.flush()
}

enum MetadataValue<'a> {
    Name(&'a str),
    SortIndex(u32),
}

struct EventWriter<'a, W: Write> {
    out: BufWriter<W>,
    export: &'a Export<'a>,
    first: bool,
}

impl<W: Write> EventWriter<'_, W> {
    /// Starts an event: the separator, then `{"ph":"<ph>"`.
    fn open(&mut self, ph: &str) -> io::Result<()> {
        let separator = if self.first { "\n" } else { ",\n" };
        self.first = false;
        write!(self.out, "{separator}{{\"ph\":\"{ph}\"")
    }

    fn metadata(
        &mut self,
        side: Side,
        tid: u32,
        name: &str,
        value: MetadataValue<'_>,
    ) -> io::Result<()> {
        self.open("M")?;
        write!(
            self.out,
            ",\"name\":\"{name}\",\"pid\":{},\"tid\":{tid},\"args\":{{",
            side.pid()
        )?;
        match value {
            MetadataValue::Name(text) => {
                self.out.write_all(b"\"name\":")?;
                string(&mut self.out, text)?;
            }
            MetadataValue::SortIndex(index) => write!(self.out, "\"sort_index\":{index}")?,
        }
        self.out.write_all(b"}}")
    }

    fn record(&mut self, record: &Record) -> io::Result<()> {
        let pid = record.side.pid();
        let tid = record.tid;
        match record.body {
            Body::Slice(what) => {
                self.open("X")?;
                self.slice_label(record.side, what)?;
                write!(self.out, ",\"pid\":{pid},\"tid\":{tid},\"ts\":")?;
                micros(&mut self.out, record.ts_ns)?;
                self.out.write_all(b",\"dur\":")?;
                micros(&mut self.out, record.dur_ns)?;
                self.out.write_all(b",\"args\":{")?;
                self.slice_args(record.side, what)?;
                self.out.write_all(b"}}")
            }
            Body::FlowStart(id) | Body::FlowEnd(id) => {
                let end = matches!(record.body, Body::FlowEnd(_));
                self.open(if end { "f" } else { "s" })?;
                write!(
                    self.out,
                    ",\"cat\":\"critical_path\",\"name\":\"critical path\",\"id\":{id},\
                     \"pid\":{pid},\"tid\":{tid},\"ts\":"
                )?;
                micros(&mut self.out, record.ts_ns)?;
                if end {
                    self.out.write_all(b",\"bp\":\"e\"")?;
                }
                self.out.write_all(b"}")
            }
            Body::Counter { counter, bytes } => {
                self.open("C")?;
                let device = match (counter.device, self.export.trace.runtime) {
                    (device, _) if device < 0 => "CPU".to_string(),
                    (device, Some(Runtime::Mtia)) => format!("MTIA {device}"),
                    (device, _) => format!("GPU {device}"),
                };
                let series = if counter.reserved {
                    "reserved"
                } else {
                    "allocated"
                };
                write!(
                    self.out,
                    ",\"name\":\"{device} memory {series}\",\"pid\":{pid},\"ts\":"
                )?;
                micros(&mut self.out, record.ts_ns)?;
                write!(self.out, ",\"args\":{{\"bytes\":{bytes}}}}}")
            }
        }
    }

    /// `,"cat":...,"name":...` of a slice.
    fn slice_label(&mut self, side: Side, what: What) -> io::Result<()> {
        let trace = self.export.trace;
        let graph = &self.export.window.graph;
        let (cat, name): (&str, &str) = match what {
            What::Task(task) => {
                let cat = match side {
                    Side::Recorded => {
                        let event = &trace.events[graph.event[task.index()].index()];
                        kineto_category(event.kind, trace.runtime)
                    }
                    Side::Replayed | Side::Predicted => replay_category(graph.kind[task.index()]),
                };
                (cat, trace.name(graph.name[task.index()]))
            }
            What::Critical(task) => (
                "stepcast.critical_path",
                trace.name(graph.name[task.index()]),
            ),
            What::Predicted(task) | What::PredictedCritical(task) => {
                let Some(prediction) = self.export.prediction else {
                    return Ok(());
                };
                let graph = prediction.graph;
                let cat = match what {
                    What::PredictedCritical(_) => "stepcast.critical_path",
                    _ => replay_category(graph.kind[task.index()]),
                };
                (cat, trace.name(graph.name[task.index()]))
            }
            What::Step { step, .. } => {
                let step = &self.export.window.steps[step as usize];
                if step.synthetic {
                    ("stepcast.step", "window")
                } else {
                    write!(
                        self.out,
                        ",\"cat\":\"stepcast.step\",\"name\":\"ProfilerStep#{}\"",
                        step.number
                    )?;
                    return Ok(());
                }
            }
            What::Phase { phase, .. } => ("stepcast.phase", phase.as_str()),
            What::Layer { layer, .. } => ("stepcast.layer", trace.name(layer)),
        };
        write!(self.out, ",\"cat\":\"{cat}\",\"name\":")?;
        string(&mut self.out, name)
    }

    /// The members of a slice's `args`.
    fn slice_args(&mut self, side: Side, what: What) -> io::Result<()> {
        let export = self.export;
        let graph = &export.window.graph;
        match what {
            What::Task(task) => {
                let t = task.index();
                write!(self.out, "\"kind\":\"{}\"", graph.kind[t].as_str())?;
                let step = graph.step[t];
                // A synthetic step (no step markers) has no number worth showing.
                if step != NO_STEP && !export.window.steps[step as usize].synthetic {
                    let number = export.window.steps[step as usize].number;
                    write!(self.out, ",\"step\":{number}")?;
                }
                let event = &export.trace.events[graph.event[t].index()];
                if let Some(correlation) = event.correlation {
                    write!(self.out, ",\"correlation\":{correlation}")?;
                }
                if graph.kind[t].on_device() {
                    let lane = export.trace.lane(event.lane);
                    write!(self.out, ",\"device\":{},\"stream\":{}", lane.pid, lane.tid)?;
                }
                if let Some(bytes) = event.bytes {
                    write!(self.out, ",\"bytes\":{bytes}")?;
                }
                if side == Side::Replayed {
                    self.out.write_all(b",\"recorded_ts\":")?;
                    micros(&mut self.out, graph.rec_start_ns[t])?;
                    self.out.write_all(b",\"recorded_dur\":")?;
                    micros(&mut self.out, graph.rec_end_ns[t] - graph.rec_start_ns[t])?;
                }
                Ok(())
            }
            What::Critical(task) => self.path_args(graph, task),
            What::Predicted(task) | What::PredictedCritical(task) => {
                let Some(prediction) = export.prediction else {
                    return Ok(());
                };
                let t = task.index();
                if let What::Predicted(_) = what {
                    write!(
                        self.out,
                        "\"kind\":\"{}\"",
                        prediction.graph.kind[t].as_str()
                    )?;
                    let step = prediction.graph.step[t];
                    if step != NO_STEP
                        && let Some(step) = export.window.steps.get(step as usize)
                        && !step.synthetic
                    {
                        write!(self.out, ",\"step\":{}", step.number)?;
                    }
                    Ok(())
                } else {
                    self.path_args(prediction.graph, task)
                }
            }
            What::Step { step, tasks } => {
                let step = &export.window.steps[step as usize];
                if !step.synthetic {
                    write!(self.out, "\"step\":{},", step.number)?;
                }
                write!(self.out, "\"tasks\":{tasks}")
            }
            What::Phase { phase, tasks } | What::Layer { phase, tasks, .. } => write!(
                self.out,
                "\"phase\":\"{}\",\"tasks\":{tasks}",
                phase.as_str()
            ),
        }
    }

    /// The `args` of a slice on a critical-path track: the task's kind and step, named so
    /// that no reader counts it as a task of a lane (those carry `kind`).
    fn path_args(
        &mut self,
        graph: &stepcast::graph::Graph,
        task: stepcast::graph::TaskId,
    ) -> io::Result<()> {
        let t = task.index();
        write!(self.out, "\"task_kind\":\"{}\"", graph.kind[t].as_str())?;
        let step = graph.step[t];
        if step != NO_STEP
            && let Some(step) = self.export.window.steps.get(step as usize)
            && !step.synthetic
        {
            write!(self.out, ",\"step\":{}", step.number)?;
        }
        Ok(())
    }

    /// Closes `traceEvents` and writes the other top-level members.
    fn trailer(&mut self) -> io::Result<()> {
        let trace = self.export.trace;
        self.out.write_all(b"\n],\"deviceProperties\":[")?;
        for (i, device) in trace.devices.iter().enumerate() {
            if i > 0 {
                self.out.write_all(b",")?;
            }
            write!(self.out, "{{\"id\":{},\"name\":", device.id)?;
            string(&mut self.out, &device.name)?;
            if let Some((major, minor)) = device.compute_capability {
                write!(
                    self.out,
                    ",\"computeMajor\":{major},\"computeMinor\":{minor}"
                )?;
            }
            self.out.write_all(b"}")?;
        }
        write!(
            self.out,
            "],\"otherData\":{{\"generator\":\"stepcast\",\"origin_ns\":{},\"selected_step\":",
            trace.origin_ns
        )?;
        match self.export.selection.step {
            Some(index) => write!(
                self.out,
                "{}",
                self.export.window.steps[index as usize].number
            )?,
            None => self.out.write_all(b"null")?,
        }
        self.out.write_all(b"}}\n")
    }
}

/// The Kineto category of a recorded event, so that a Kineto reader re-imports it as the same
/// kind of event.
fn kineto_category(kind: EventKind, runtime: Option<Runtime>) -> &'static str {
    let mtia = runtime == Some(Runtime::Mtia);
    match kind {
        EventKind::CpuOp => "cpu_op",
        EventKind::UserAnnotation => "user_annotation",
        EventKind::PythonFunction => "python_function",
        EventKind::RuntimeCall if mtia => "mtia_runtime",
        EventKind::RuntimeCall => "cuda_runtime",
        EventKind::DriverCall => "cuda_driver",
        EventKind::Kernel if mtia => "mtia_ccp_events",
        EventKind::Kernel => "kernel",
        EventKind::Memcpy => "gpu_memcpy",
        EventKind::Memset => "gpu_memset",
        EventKind::DeviceAnnotation => "gpu_user_annotation",
    }
}

/// The category of a replayed task: unknown to Kineto readers, so a re-import sees only the
/// recording.
fn replay_category(kind: stepcast::graph::TaskKind) -> &'static str {
    use stepcast::graph::TaskKind;
    match kind {
        TaskKind::ApiCall => "replay.api_call",
        TaskKind::CpuOp => "replay.cpu_op",
        TaskKind::Kernel => "replay.kernel",
        TaskKind::Memcpy => "replay.memcpy",
        TaskKind::Memset => "replay.memset",
        TaskKind::Collective => "replay.collective",
    }
}

/// `ns` as microseconds with exactly three decimals: `-1500` is `-1.500`.
fn micros(out: &mut impl Write, ns: i64) -> io::Result<()> {
    let sign = if ns < 0 { "-" } else { "" };
    let magnitude = ns.unsigned_abs();
    write!(out, "{sign}{}.{:03}", magnitude / 1000, magnitude % 1000)
}

/// `text` as a JSON string (serde_json escapes quotes, backslashes and control characters).
fn string(out: &mut impl Write, text: &str) -> io::Result<()> {
    serde_json::to_writer(out, text).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::micros;

    #[test]
    fn micros_have_three_decimals() {
        let text = |ns: i64| {
            let mut out = Vec::new();
            micros(&mut out, ns).expect("write to a vector");
            String::from_utf8(out).expect("ASCII")
        };
        assert_eq!(text(0), "0.000");
        assert_eq!(text(1), "0.001");
        assert_eq!(text(1_234_567), "1234.567");
        assert_eq!(text(-1500), "-1.500");
        assert_eq!(text(i64::MIN), "-9223372036854775.808");
    }
}
