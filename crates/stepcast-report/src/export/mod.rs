//! The recorded and the replayed window side by side, as a Chrome trace (the JSON Trace Event
//! Format) that Perfetto (ui.perfetto.dev) and `chrome://tracing` open.
//!
//! # Wire format
//!
//! One JSON object whose first member is `displayTimeUnit` (`"ns"`), then `traceEvents`,
//! `deviceProperties` (as Kineto writes it) and `otherData` (`generator`, the trace's absolute
//! `origin_ns`, the `selected_step` or `null`). Timestamps and durations are microseconds with
//! exactly three decimals (nanoseconds, exact), relative to the trace's origin, so the
//! recording and the replay share one clock.
//!
//! `traceEvents` holds the metadata events (`ph: "M"`: `process_name`, `process_sort_index`,
//! `thread_name`, `thread_sort_index`) first, then every other event sorted by `ts` (ties: slices
//! before flow events, longer slices first, then by process and thread):
//!
//! - process 1, `recorded`, and process 2, `replayed`; each has the same tracks (threads), with
//!   the same `tid` for the same track:
//!   - `steps`: one slice per step, `ProfilerStep#N` (or `window` when the trace has no step
//!     markers), from the step's host start to the end of the last task launched in it, as
//!     recorded or as replayed (category `stepcast.step`);
//!   - one track per lane (`CPU thread 1234`, `GPU 0 stream 7`) with a complete event (`ph: "X"`)
//!     per task. Recorded tasks carry the Kineto category of the event they were made from
//!     (`cpu_op`, `cuda_runtime`, `cuda_driver`, `kernel`, `gpu_memcpy`, `gpu_memset`; the MTIA
//!     names on an MTIA trace) and Kineto's `args` (`correlation`, `device`, `stream`,
//!     `bytes`), so that a Kineto reader, stepcast's included, re-imports the recording.
//!     Replayed tasks carry `replay.<kind>` (`replay.kernel`, `replay.api_call`...), which no
//!     Kineto reader knows, and their recorded `recorded_ts`/`recorded_dur`. Both carry the task
//!     `kind` and its `step` number (absent outside any step, and without step markers). With
//!     one step selected, the tasks are the step's and those of other steps that its critical
//!     path runs through;
//!   - given a [`Mapping`], one `... phases and layers` track beside each lane: a slice per run
//!     of consecutive tasks of the lane in one phase (`forward`, `backward`...; category
//!     `stepcast.phase`), with a slice per run in one layer nested inside it (category
//!     `stepcast.layer`). Runs span the idle time between their tasks.
//! - the recorded memory, when the trace has memory events, as counters (`ph: "C"`) of the
//!   recorded process: `GPU 0 memory allocated` and `GPU 0 memory reserved` (`CPU memory ...`
//!   for host memory), each with `args: {"bytes": N}`, one sample per allocation or free (those
//!   before the window or step opened become one sample at its start). The replay does not
//!   model memory, so the replayed process has none;
//! - in both processes, a `critical path` track: one slice per task on the replayed critical
//!   path of each step (category `stepcast.critical_path`, `args` `task_kind` and `step`, no
//!   `kind`, so that no reader counts them twice as tasks), at its recorded time in the
//!   recorded process and its replayed time in the replayed one;
//! - with a prediction ([`Export::with_prediction`]), process 3, `predicted: NAME`: the
//!   transformed graph's tasks of the selected steps (and those of other steps their critical
//!   path runs through) as replayed, a track per lane (category `replay.<kind>`, `args` `kind`
//!   and `step`), then its own `critical path` track;
//! - the replayed critical path of each step, as flow events (`ph: "s"` then `ph: "f"` with
//!   `bp: "e"`, category `critical_path`, one `id` per hop): each hop leaves a critical task when
//!   it released the next (its begin for a launch, else its last nanosecond) and enters the next
//!   where it was gated (its begin, or its last nanosecond for a blocking call held back by the
//!   work it waited for). A hop shared by two steps' paths is drawn once.
//!
//! No two complete events of one track (`pid`, `tid`) partially overlap: a slice that would is
//! moved to a further track of the same name with ` [overlap K]` appended (see `tracks.rs`).
//! Lane tracks need this only where the recording itself overlaps two tasks of one stream (a
//! few kernels in two of the testdata traces); step tracks whenever the device work of a step
//! runs past the start of the next one.
//!
//! The same inputs give byte-identical output.

mod critical_path;
mod tracks;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use stepcast::Window;
use stepcast::analyze::mapping::{Mapping, Phase};
use stepcast::graph::{Graph, NO_STEP, TaskId};
use stepcast::replay::replayed_span;
use stepcast::simulate::{Timeline, critical_path};
use stepcast_trace::{LaneId, LaneKind, NameId, Runtime, Trace};

use tracks::{Interval, place};
use write::{Body, Record, Thread};

/// Which part of the window to export: all of it, or one step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Index into the window's steps.
    step: Option<u32>,
}

impl Selection {
    /// The whole window: every task, every step.
    pub fn window() -> Self {
        Self::default()
    }

    /// Step `number` (the N of `ProfilerStep#N`): the tasks of the step, and the tasks of other
    /// steps its replayed critical path runs through. `None` if the window has no such step.
    pub fn step(window: &Window, number: u64) -> Option<Self> {
        let index = window.steps.iter().position(|step| step.number == number)?;
        Some(Self {
            step: Some(index as u32),
        })
    }
}

/// What to export: a trace, its window, the window's replay and optionally its mapping.
#[derive(Clone, Copy, Debug)]
pub struct Export<'a> {
    trace: &'a Trace,
    window: &'a Window,
    timeline: &'a Timeline,
    mapping: Option<&'a Mapping>,
    selection: Selection,
    prediction: Option<Prediction<'a>>,
}

/// A what-if's predicted window, drawn as a third process: its transformed graph (the same
/// steps as the window's) and the replay of that graph.
#[derive(Clone, Copy, Debug)]
pub struct Prediction<'a> {
    /// What was predicted (`amp`, `cuda_graphs + faster_cpu`).
    pub name: &'a str,
    /// The transformed graph.
    pub graph: &'a Graph,
    /// Its replay.
    pub timeline: &'a Timeline,
}

impl<'a> Export<'a> {
    /// `timeline` is the replay of `window.graph` (in recorded order) and `mapping`, if any,
    /// maps the tasks of the same graph.
    ///
    /// # Panics
    ///
    /// If `timeline` or `mapping` does not have one row per task of the graph.
    pub fn new(
        trace: &'a Trace,
        window: &'a Window,
        timeline: &'a Timeline,
        mapping: Option<&'a Mapping>,
        selection: Selection,
    ) -> Self {
        let tasks = window.graph.task_count();
        assert_eq!(
            timeline.begin_ns.len(),
            tasks,
            "the timeline replays another graph"
        );
        assert_eq!(
            timeline.end_ns.len(),
            tasks,
            "the timeline replays another graph"
        );
        if let Some(mapping) = mapping {
            assert_eq!(mapping.phase.len(), tasks, "the mapping maps another graph");
            assert_eq!(mapping.layer.len(), tasks, "the mapping maps another graph");
        }
        Self {
            trace,
            window,
            timeline,
            mapping,
            selection,
            prediction: None,
        }
    }

    /// Adds a what-if's predicted window as a third process, `predicted: NAME`, with a track
    /// per lane and its own critical path.
    ///
    /// # Panics
    ///
    /// If the prediction's timeline does not replay its graph.
    pub fn with_prediction(mut self, prediction: Prediction<'a>) -> Self {
        assert_eq!(
            prediction.timeline.end_ns.len(),
            prediction.graph.task_count(),
            "the prediction's timeline replays another graph"
        );
        self.prediction = Some(prediction);
        self
    }

    /// Writes the Chrome trace to `out`, through a buffer.
    pub fn write_to<W: Write>(&self, out: W) -> io::Result<()> {
        let (threads, records) = self.document();
        write::document(out, self, &threads, &records)
    }

    /// The metadata of every track and every other event, sorted.
    fn document(&self) -> (Vec<Thread>, Vec<Record>) {
        let steps = self.step_views();
        let tasks = self.selected_tasks(&steps);
        let mut logical = vec![self.steps_track(&steps)];
        logical.extend(self.lane_tracks(&tasks));
        logical.push(self.critical_path_track(&steps));

        let mut threads = Vec::new();
        let mut records = Vec::new();
        let mut replayed_tid = vec![u32::MAX; self.window.graph.task_count()];
        let mut next_tid = 1u32;
        for track in logical {
            let [recorded, replayed] = track.slices;
            let levels = [
                place(recorded, |slice| slice.interval),
                place(replayed, |slice| slice.interval),
            ];
            let depth = levels.iter().map(Vec::len).max().unwrap_or(0);
            for (side, side_levels) in Side::ALL.into_iter().zip(levels) {
                for (level, slices) in side_levels.into_iter().enumerate() {
                    if slices.is_empty() {
                        continue;
                    }
                    let tid = next_tid + level as u32;
                    threads.push(Thread {
                        side,
                        tid,
                        name: match level {
                            0 => track.name.clone(),
                            _ => format!("{} [overlap {level}]", track.name),
                        },
                    });
                    for slice in slices {
                        if let (Side::Replayed, What::Task(task)) = (side, slice.what) {
                            replayed_tid[task.index()] = tid;
                        }
                        records.push(Record {
                            ts_ns: slice.interval.start_ns,
                            dur_ns: (slice.interval.end_ns - slice.interval.start_ns).max(0),
                            side,
                            tid,
                            body: Body::Slice(slice.what),
                        });
                    }
                }
            }
            next_tid += depth as u32;
        }
        if let Some(prediction) = &self.prediction {
            self.predicted_tracks(prediction, &mut next_tid, &mut threads, &mut records);
        }
        self.critical_path_flows(&steps, &replayed_tid, &mut records);
        self.memory_counters(&steps, &mut records);
        threads.sort_by_key(|thread| (thread.side, thread.tid));
        write::sort(&mut records);
        (threads, records)
    }

    /// The selected steps, with their spans and replayed critical paths.
    fn step_views(&self) -> Vec<StepView> {
        let graph = &self.window.graph;
        let timeline = self.timeline;
        let mut tasks_by_step = vec![Vec::new(); self.window.steps.len()];
        for (t, &step) in graph.step.iter().enumerate() {
            if step != NO_STEP {
                tasks_by_step[step as usize].push(TaskId(t as u32));
            }
        }
        let indices: Vec<usize> = match self.selection.step {
            Some(index) => vec![index as usize],
            None => (0..self.window.steps.len()).collect(),
        };
        indices
            .into_iter()
            .map(|index| {
                let step = &self.window.steps[index];
                let tasks = &tasks_by_step[index];
                let recorded_end = tasks
                    .iter()
                    .map(|t| graph.rec_end_ns[t.index()])
                    .max()
                    .unwrap_or(step.marker_end_ns);
                let replayed = replayed_step(graph, timeline, step, tasks);
                StepView {
                    index: index as u32,
                    tasks: tasks.len() as u32,
                    recorded: Interval {
                        start_ns: step.start_ns,
                        end_ns: recorded_end.max(step.start_ns),
                    },
                    replayed: Interval {
                        start_ns: replayed.start_ns,
                        end_ns: replayed.end_ns,
                    },
                    path: replayed.path,
                }
            })
            .collect()
    }

    /// The tasks to export, in task order (lane by lane, in recorded order).
    fn selected_tasks(&self, steps: &[StepView]) -> Vec<TaskId> {
        let graph = &self.window.graph;
        match self.selection.step {
            None => (0..graph.task_count() as u32).map(TaskId).collect(),
            Some(index) => {
                let mut tasks: BTreeSet<TaskId> = (0..graph.task_count())
                    .filter(|&t| graph.step[t] == index)
                    .map(|t| TaskId(t as u32))
                    .collect();
                tasks.extend(steps.iter().flat_map(|step| step.path.iter().copied()));
                tasks.into_iter().collect()
            }
        }
    }

    fn steps_track(&self, steps: &[StepView]) -> LogicalTrack {
        let mut track = LogicalTrack::new("steps".to_string());
        for view in steps {
            for side in Side::ALL {
                track.slices[side as usize].push(Slice {
                    interval: match side {
                        Side::Recorded => view.recorded,
                        Side::Replayed | Side::Predicted => view.replayed,
                    },
                    what: What::Step {
                        step: view.index,
                        tasks: view.tasks,
                    },
                });
            }
        }
        track
    }

    /// The replayed critical path of each selected step as a track of its own: one slice per
    /// task on the path (category `stepcast.critical_path`), at its recorded time in the
    /// recorded process and its replayed time in the replayed one.
    fn critical_path_track(&self, steps: &[StepView]) -> LogicalTrack {
        let mut track = LogicalTrack::new("critical path".to_string());
        let on_path: BTreeSet<TaskId> = steps.iter().flat_map(|s| s.path.iter().copied()).collect();
        for side in Side::ALL {
            track.slices[side as usize] = on_path
                .iter()
                .map(|&task| Slice {
                    interval: self.interval(side, task),
                    what: What::Critical(task),
                })
                .collect();
        }
        track
    }

    /// The predicted process: the selected steps' tasks of the transformed graph, a track per
    /// lane, then their critical path.
    fn predicted_tracks(
        &self,
        prediction: &Prediction<'_>,
        next_tid: &mut u32,
        threads: &mut Vec<Thread>,
        records: &mut Vec<Record>,
    ) {
        let graph = prediction.graph;
        let timeline = prediction.timeline;
        let selected = |step: u32| match self.selection.step {
            Some(index) => step == index,
            None => step != NO_STEP,
        };
        let mut path: BTreeSet<TaskId> = BTreeSet::new();
        let mut by_step: Vec<Vec<TaskId>> = vec![Vec::new(); self.window.steps.len()];
        for (t, &step) in graph.step.iter().enumerate() {
            if step != NO_STEP && (step as usize) < by_step.len() {
                by_step[step as usize].push(TaskId(t as u32));
            }
        }
        for (index, tasks) in by_step.iter().enumerate() {
            if selected(index as u32) {
                let step = &self.window.steps[index];
                path.extend(replayed_step(graph, timeline, step, tasks).path);
            }
        }
        let mut lanes: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
        for t in 0..graph.task_count() {
            let task = TaskId(t as u32);
            if (self.selection.step.is_none() || selected(graph.step[t])) || path.contains(&task) {
                lanes.entry(graph.lane[t]).or_default().push(task);
            }
        }
        let labels = LaneLabels::new(self.trace);
        let interval = |task: TaskId| Interval {
            start_ns: timeline.begin_ns[task.index()],
            end_ns: timeline.end_ns[task.index()],
        };
        let mut tracks: Vec<(String, Vec<Slice>)> = lanes
            .into_iter()
            .map(|(lane, tasks)| {
                let label = labels.label(graph.lanes[lane as usize].trace_lane);
                let slices = tasks
                    .into_iter()
                    .map(|task| Slice {
                        interval: interval(task),
                        what: What::Predicted(task),
                    })
                    .collect();
                (label, slices)
            })
            .collect();
        tracks.push((
            "critical path".to_string(),
            path.iter()
                .map(|&task| Slice {
                    interval: interval(task),
                    what: What::PredictedCritical(task),
                })
                .collect(),
        ));
        for (name, slices) in tracks {
            let levels = place(slices, |slice| slice.interval);
            for (level, slices) in levels.iter().enumerate() {
                let tid = *next_tid + level as u32;
                threads.push(Thread {
                    side: Side::Predicted,
                    tid,
                    name: match level {
                        0 => name.clone(),
                        _ => format!("{name} [overlap {level}]"),
                    },
                });
                for slice in slices {
                    records.push(Record {
                        ts_ns: slice.interval.start_ns,
                        dur_ns: (slice.interval.end_ns - slice.interval.start_ns).max(0),
                        side: Side::Predicted,
                        tid,
                        body: Body::Slice(slice.what),
                    });
                }
            }
            *next_tid += levels.len().max(1) as u32;
        }
    }

    /// Per lane with selected tasks: its task track, then its phases-and-layers track.
    fn lane_tracks(&self, tasks: &[TaskId]) -> Vec<LogicalTrack> {
        let graph = &self.window.graph;
        let labels = LaneLabels::new(self.trace);
        let mut tracks = Vec::new();
        // Tasks are numbered lane by lane: the selected tasks of a lane are contiguous.
        for lane_tasks in tasks.chunk_by(|a, b| graph.lane[a.index()] == graph.lane[b.index()]) {
            let lane_index = graph.lane[lane_tasks[0].index()] as usize;
            let label = labels.label(graph.lanes[lane_index].trace_lane);
            let mut track = LogicalTrack::new(label.clone());
            for side in Side::ALL {
                track.slices[side as usize] = lane_tasks
                    .iter()
                    .map(|&task| Slice {
                        interval: self.interval(side, task),
                        what: What::Task(task),
                    })
                    .collect();
            }
            tracks.push(track);
            if let Some(mapping) = self.mapping {
                let mut runs = LogicalTrack::new(format!("{label} phases and layers"));
                for side in Side::ALL {
                    runs.slices[side as usize] = self.runs(mapping, side, lane_tasks);
                }
                tracks.push(runs);
            }
        }
        tracks
    }

    /// Runs of consecutive tasks of one lane in one phase, and within them in one layer.
    fn runs(&self, mapping: &Mapping, side: Side, lane_tasks: &[TaskId]) -> Vec<Slice> {
        let mut slices = Vec::new();
        let span = |run: &[TaskId]| Interval {
            start_ns: run
                .iter()
                .map(|&t| self.interval(side, t).start_ns)
                .min()
                .unwrap_or(0),
            end_ns: run
                .iter()
                .map(|&t| self.interval(side, t).end_ns)
                .max()
                .unwrap_or(0),
        };
        for phase_run in
            lane_tasks.chunk_by(|a, b| mapping.phase[a.index()] == mapping.phase[b.index()])
        {
            let phase = mapping.phase[phase_run[0].index()];
            slices.push(Slice {
                interval: span(phase_run),
                what: What::Phase {
                    phase,
                    tasks: phase_run.len() as u32,
                },
            });
            for layer_run in
                phase_run.chunk_by(|a, b| mapping.layer[a.index()] == mapping.layer[b.index()])
            {
                if let Some(layer) = mapping.layer[layer_run[0].index()] {
                    slices.push(Slice {
                        interval: span(layer_run),
                        what: What::Layer {
                            layer,
                            phase,
                            tasks: layer_run.len() as u32,
                        },
                    });
                }
            }
        }
        slices
    }

    /// Flow events along each selected step's replayed critical path.
    fn critical_path_flows(
        &self,
        steps: &[StepView],
        replayed_tid: &[u32],
        records: &mut Vec<Record>,
    ) {
        let mut drawn: BTreeSet<(TaskId, TaskId)> = BTreeSet::new();
        let mut id = 0u32;
        for step in steps {
            for hop in critical_path::hops(&self.window.graph, self.timeline, &step.path) {
                let (from_tid, to_tid) =
                    (replayed_tid[hop.from.index()], replayed_tid[hop.to.index()]);
                if from_tid == u32::MAX || to_tid == u32::MAX || !drawn.insert((hop.from, hop.to)) {
                    continue;
                }
                id += 1;
                records.push(Record {
                    ts_ns: hop.out_ns,
                    dur_ns: 0,
                    side: Side::Replayed,
                    tid: from_tid,
                    body: Body::FlowStart(id),
                });
                records.push(Record {
                    ts_ns: hop.in_ns,
                    dur_ns: 0,
                    side: Side::Replayed,
                    tid: to_tid,
                    body: Body::FlowEnd(id),
                });
            }
        }
    }

    /// The recorded memory of each device as counters: allocated bytes, and reserved bytes
    /// where the trace records them. The samples within the window (from the origin) or the
    /// step (its recorded span), led by each counter's level at that start: memory events may
    /// precede the trace's origin, and no timestamp of the export is negative.
    fn memory_counters(&self, steps: &[StepView], records: &mut Vec<Record>) {
        let (from_ns, to_ns) = match (self.selection.step, steps.first()) {
            (Some(_), Some(step)) => (step.recorded.start_ns, step.recorded.end_ns),
            _ => (0, i64::MAX),
        };
        let mut allocated: BTreeMap<i64, i64> = BTreeMap::new();
        let mut before: BTreeMap<Counter, i64> = BTreeMap::new();
        let mut samples = Vec::new();
        for event in &self.trace.memory {
            // Without the allocator's total, the level moves by the bytes allocated or freed.
            let level = allocated.entry(event.device).or_insert(0);
            *level = event.total_allocated.unwrap_or(*level + event.bytes);
            let values = [
                (Counter::allocated(event.device), Some(*level)),
                (Counter::reserved(event.device), event.total_reserved),
            ];
            for (counter, value) in values {
                let Some(bytes) = value else { continue };
                if event.time_ns < from_ns {
                    before.insert(counter, bytes);
                } else if event.time_ns <= to_ns {
                    samples.push((event.time_ns, counter, bytes));
                }
            }
        }
        let leading = before
            .into_iter()
            .map(|(counter, bytes)| (from_ns, counter, bytes));
        for (ts_ns, counter, bytes) in leading.chain(samples) {
            records.push(Record {
                ts_ns,
                dur_ns: 0,
                side: Side::Recorded,
                tid: 0,
                body: Body::Counter { counter, bytes },
            });
        }
    }

    /// When `task` ran in the recording or in the replay.
    fn interval(&self, side: Side, task: TaskId) -> Interval {
        let t = task.index();
        match side {
            Side::Recorded => Interval {
                start_ns: self.window.graph.rec_start_ns[t],
                end_ns: self.window.graph.rec_end_ns[t],
            },
            Side::Replayed | Side::Predicted => Interval {
                start_ns: self.timeline.begin_ns[t],
                end_ns: self.timeline.end_ns[t],
            },
        }
    }
}

/// Names lanes for people: `CPU thread 1234 (name)` or `GPU 0 stream 7`.
pub(crate) struct LaneLabels<'a> {
    trace: &'a Trace,
    /// Thread ids seen in more than one process: those name their process too.
    shared_tids: BTreeSet<i64>,
}

impl<'a> LaneLabels<'a> {
    pub(crate) fn new(trace: &'a Trace) -> Self {
        let mut host_tids: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
        for lane in &trace.lanes {
            if lane.kind == LaneKind::CpuThread {
                host_tids.entry(lane.tid).or_default().insert(lane.pid);
            }
        }
        let shared_tids = host_tids
            .into_iter()
            .filter(|(_, pids)| pids.len() > 1)
            .map(|(tid, _)| tid)
            .collect();
        Self { trace, shared_tids }
    }

    /// The trace the lanes are of.
    pub(crate) fn trace(&self) -> &'a Trace {
        self.trace
    }

    /// `CPU thread 1234 (name)` or `GPU 0 stream 7`.
    pub(crate) fn label(&self, lane: LaneId) -> String {
        let lane = self.trace.lane(lane);
        match lane.kind {
            LaneKind::CpuThread => {
                let mut label = match self.shared_tids.contains(&lane.tid) {
                    true => format!("CPU process {} thread {}", lane.pid, lane.tid),
                    false => format!("CPU thread {}", lane.tid),
                };
                // Kineto names threads `thread 1234 (python)`: the number is already there.
                if let Some(name) = lane
                    .name
                    .as_deref()
                    .filter(|name| !name.is_empty() && !name.contains(&lane.tid.to_string()))
                {
                    label.push_str(&format!(" ({name})"));
                }
                label
            }
            LaneKind::DeviceStream => {
                let device = match self.trace.runtime {
                    Some(Runtime::Mtia) => "MTIA",
                    _ => "GPU",
                };
                format!("{device} {} stream {}", lane.pid, lane.tid)
            }
        }
    }
}

/// A step as replayed: its span and its critical path.
pub(crate) struct ReplayedStep {
    pub start_ns: i64,
    pub end_ns: i64,
    /// The replayed critical path ending at the step's last task, as
    /// `stepcast::simulate::critical_path` walks it from the step's start.
    pub path: Vec<TaskId>,
}

/// `step` (whose tasks are `tasks`) in `timeline`, a replay of `graph`: the span
/// `stepcast::replay` measures (`replayed_span`: from the step's host start, which moves with
/// its first host task on the marker's thread, to the end of the task that ends it), and the
/// critical path that ends there.
pub(crate) fn replayed_step(
    graph: &Graph,
    timeline: &Timeline,
    step: &stepcast::Step,
    tasks: &[TaskId],
) -> ReplayedStep {
    let (span_ns, last, start_ns) = replayed_span(graph, timeline, step, tasks);
    let path = last.map_or_else(Vec::new, |last| {
        critical_path(graph, timeline, last, start_ns).tasks
    });
    ReplayedStep {
        start_ns,
        end_ns: start_ns + span_ns.max(0),
        path,
    }
}

/// The processes of the export: the recording and its replay, and a what-if's prediction
/// when one is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Recorded,
    Replayed,
    Predicted,
}

impl Side {
    const ALL: [Side; 2] = [Side::Recorded, Side::Replayed];

    fn pid(self) -> u32 {
        match self {
            Side::Recorded => 1,
            Side::Replayed => 2,
            Side::Predicted => 3,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Side::Recorded => "recorded",
            Side::Replayed => "replayed",
            Side::Predicted => "predicted",
        }
    }
}

/// What a slice shows.
#[derive(Clone, Copy, Debug)]
enum What {
    Task(TaskId),
    /// A task on the replayed critical path, on the critical path's own track.
    Critical(TaskId),
    /// A task of the prediction's graph.
    Predicted(TaskId),
    /// A task on the prediction's critical path.
    PredictedCritical(TaskId),
    Step {
        /// Index into the window's steps.
        step: u32,
        tasks: u32,
    },
    Phase {
        phase: Phase,
        tasks: u32,
    },
    Layer {
        layer: NameId,
        phase: Phase,
        tasks: u32,
    },
}

/// A memory counter track: one device's allocated or reserved bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Counter {
    /// `-1` for host memory.
    device: i64,
    reserved: bool,
}

impl Counter {
    fn allocated(device: i64) -> Self {
        Self {
            device,
            reserved: false,
        }
    }

    fn reserved(device: i64) -> Self {
        Self {
            device,
            reserved: true,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Slice {
    interval: Interval,
    what: What,
}

/// A named track and its slices on each side, before they are placed on threads.
struct LogicalTrack {
    name: String,
    /// Indexed by [`Side`].
    slices: [Vec<Slice>; 2],
}

impl LogicalTrack {
    fn new(name: String) -> Self {
        Self {
            name,
            slices: [Vec::new(), Vec::new()],
        }
    }
}

/// A selected step: its spans and its replayed critical path.
struct StepView {
    /// Index into the window's steps.
    index: u32,
    tasks: u32,
    recorded: Interval,
    replayed: Interval,
    path: Vec<TaskId>,
}
