//! The timeline of one step, per lane: the recording, its replay and, for a what-if, the
//! predicted replay, each on its own row under the lane, with the replayed critical path
//! marked. The data goes into the page as JSON; `report.js` draws it on a canvas, zoomed
//! and panned by the reader (thousands of slices draw faster on a canvas than as SVG
//! elements, and weigh less).

use std::collections::BTreeMap;

use serde::Serialize;
use stepcast::Window;
use stepcast::graph::{Graph, TaskId, TaskKind};
use stepcast::simulate::Timeline;
use stepcast_trace::{LaneId, NameId, Trace};

use crate::export::{LaneLabels, replayed_step};

/// The timeline of one step, ready to draw.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineView {
    /// What the step is (`step 12, the steady-state step closest to the median`).
    pub title: String,
    /// Task names, indexed by the slices.
    pub names: Vec<String>,
    /// Lane labels, indexed by the slices.
    pub lanes: Vec<String>,
    /// Kind names, indexed by the slices (the order of [`KINDS`]).
    pub kinds: [&'static str; 6],
    /// Their colours, as every chart of the report colours the category.
    pub kind_colors: [&'static str; 6],
    /// Recorded, replayed, then any predictions.
    pub rows: Vec<RowView>,
    #[serde(skip)]
    lane_index: BTreeMap<LaneId, u32>,
    #[serde(skip)]
    name_index: BTreeMap<NameId, u32>,
}

/// One version of the step (recorded, replayed, predicted).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RowView {
    /// `recorded`, `replayed`, `predicted: amp`.
    pub label: String,
    /// The step's span in this version, ns.
    pub span_ns: i64,
    /// Time of the critical path's tasks, ns (0 for the recording, whose path is the
    /// replay's).
    pub critical_ns: i64,
    /// Six numbers per slice: lane, start from the version's step start (ns), duration (ns),
    /// name, kind, and 1 if the task is on the replayed critical path.
    pub slices: Vec<i64>,
}

/// A replayed version of the window's graph (its replay, or a what-if's).
struct Version<'a> {
    label: &'a str,
    graph: &'a Graph,
    timeline: &'a Timeline,
}

/// Task kinds in the order the slices number them.
pub const KINDS: [&str; 6] = [
    "api_call",
    "cpu_op",
    "kernel",
    "memcpy",
    "memset",
    "collective",
];

fn kind_code(kind: TaskKind) -> i64 {
    match kind {
        TaskKind::ApiCall => 0,
        TaskKind::CpuOp => 1,
        TaskKind::Kernel => 2,
        TaskKind::Memcpy => 3,
        TaskKind::Memset => 4,
        TaskKind::Collective => 5,
    }
}

/// The tasks of step `index` of `graph`, in task order.
fn step_tasks(graph: &Graph, index: usize) -> Vec<TaskId> {
    graph
        .step
        .iter()
        .enumerate()
        .filter(|&(_, &step)| step as usize == index)
        .map(|(t, _)| TaskId(t as u32))
        .collect()
}

/// The tasks drawn: the step's, and those of other steps its critical path runs through
/// (device work queued by the step before, still running in this one), in task order.
fn drawn_tasks(tasks: &[TaskId], path: &[TaskId]) -> Vec<TaskId> {
    let mut drawn: Vec<TaskId> = tasks.iter().chain(path).copied().collect();
    drawn.sort_unstable();
    drawn.dedup();
    drawn
}

impl TimelineView {
    /// Step `index` of `window`, recorded and as replayed in `replayed` (a replay of
    /// `window.graph`). `title` says which step it is and why.
    ///
    /// # Panics
    ///
    /// If `index` is not a step of the window, or `replayed` replays another graph.
    pub fn new(
        trace: &Trace,
        window: &Window,
        replayed: &Timeline,
        index: usize,
        title: String,
    ) -> TimelineView {
        assert_eq!(
            replayed.end_ns.len(),
            window.graph.task_count(),
            "another graph"
        );
        let mut view = TimelineView {
            title,
            names: Vec::new(),
            lanes: Vec::new(),
            kinds: KINDS,
            kind_colors: KINDS.map(|kind| super::chart::category_color(kind).unwrap_or("#999999")),
            rows: Vec::new(),
            lane_index: BTreeMap::new(),
            name_index: BTreeMap::new(),
        };
        let version = Version {
            label: "replayed",
            graph: &window.graph,
            timeline: replayed,
        };
        view.add_version(trace, window, index, &version, true);
        view
    }

    /// Adds the same step of `graph`, a what-if's transform of the window's graph, as
    /// `timeline` replays it, with its own critical path.
    pub fn add_prediction(
        &mut self,
        trace: &Trace,
        window: &Window,
        index: usize,
        label: &str,
        graph: &Graph,
        timeline: &Timeline,
    ) {
        let version = Version {
            label,
            graph,
            timeline,
        };
        self.add_version(trace, window, index, &version, false);
    }

    /// Adds step `index` of a replayed graph, marking its critical path; first, with
    /// `with_recording`, the same tasks as recorded (the replay's critical path marked on
    /// them too).
    fn add_version(
        &mut self,
        trace: &Trace,
        window: &Window,
        index: usize,
        version: &Version<'_>,
        with_recording: bool,
    ) {
        let (graph, timeline) = (version.graph, version.timeline);
        let step = &window.steps[index];
        let tasks = step_tasks(graph, index);
        let replay = replayed_step(graph, timeline, step, &tasks);
        let mut on_path = vec![false; graph.task_count()];
        for task in &replay.path {
            on_path[task.index()] = true;
        }
        let labels = LaneLabels::new(trace);
        let drawn = drawn_tasks(&tasks, &replay.path);
        if with_recording {
            let recorded_end = tasks
                .iter()
                .map(|t| graph.rec_end_ns[t.index()])
                .max()
                .unwrap_or(step.marker_end_ns);
            let recorded = self.row(
                "recorded",
                (recorded_end - step.start_ns).max(0),
                graph,
                &labels,
                &drawn,
                &on_path,
                |t| {
                    (
                        graph.rec_start_ns[t] - step.start_ns,
                        graph.rec_end_ns[t] - step.start_ns,
                    )
                },
            );
            self.rows.push(recorded);
        }
        let row = self.row(
            version.label,
            replay.end_ns - replay.start_ns,
            graph,
            &labels,
            &drawn,
            &on_path,
            |t| {
                (
                    timeline.begin_ns[t] - replay.start_ns,
                    timeline.end_ns[t] - replay.start_ns,
                )
            },
        );
        self.rows.push(row);
    }

    /// Number of slices over every row.
    pub fn slice_count(&self) -> usize {
        self.rows.iter().map(|row| row.slices.len() / 6).sum()
    }

    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        label: &str,
        span_ns: i64,
        graph: &Graph,
        labels: &LaneLabels<'_>,
        tasks: &[TaskId],
        on_path: &[bool],
        interval: impl Fn(usize) -> (i64, i64),
    ) -> RowView {
        let mut slices = Vec::with_capacity(tasks.len() * 6);
        let mut critical_ns = 0;
        for task in tasks {
            let t = task.index();
            let trace_lane = graph.lanes[graph.lane[t] as usize].trace_lane;
            let next_lane = self.lane_index.len() as u32;
            let lane = *self.lane_index.entry(trace_lane).or_insert_with(|| {
                self.lanes.push(labels.label(trace_lane));
                next_lane
            });
            let next_name = self.name_index.len() as u32;
            let name_id = graph.name[t];
            let name = match self.name_index.get(&name_id) {
                Some(&name) => name,
                None => {
                    self.name_index.insert(name_id, next_name);
                    self.names.push(labels.trace().name(name_id).to_string());
                    next_name
                }
            };
            let (start, end) = interval(t);
            let critical = on_path[t];
            if critical {
                critical_ns += (end - start).max(0);
            }
            slices.extend_from_slice(&[
                i64::from(lane),
                start,
                (end - start).max(0),
                i64::from(name),
                kind_code(graph.kind[t]),
                i64::from(critical),
            ]);
        }
        RowView {
            label: label.to_string(),
            span_ns,
            critical_ns,
            slices,
        }
    }
}
