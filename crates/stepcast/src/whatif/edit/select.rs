//! Selecting tasks of an [`EditGraph`]: by criteria ([`Select`]) or by a predicate, and
//! freezing a selection out of every later one.

use regex::Regex;
use stepcast_trace::Trace;

use crate::analyze::mapping::{Mapping, Phase};
use crate::graph::{NO_STEP, TaskId, TaskKind};

use super::EditGraph;

/// A set of tasks of an [`EditGraph`], sorted by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection(pub(super) Vec<TaskId>);

impl Selection {
    pub fn new(mut tasks: Vec<TaskId>) -> Selection {
        tasks.sort_unstable();
        tasks.dedup();
        Selection(tasks)
    }

    pub fn tasks(&self) -> &[TaskId] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, task: TaskId) -> bool {
        self.0.binary_search(&task).is_ok()
    }
}

/// What to select; every criterion given must hold (an empty list or `None` accepts all).
/// Name criteria are regular expressions searched anywhere in the name (`gemm|conv`).
#[derive(Clone, Debug, Default)]
pub struct Select {
    pub kinds: Vec<TaskKind>,
    /// The task's own name (kernel or call).
    pub name: Option<Regex>,
    /// The name of the op around the task's launching call (needs a [`Mapping`]).
    pub op: Option<Regex>,
    /// The task's layer (module) name (needs a [`Mapping`]).
    pub layer: Option<Regex>,
    /// Needs a [`Mapping`].
    pub phases: Vec<Phase>,
    /// Graph lane indices.
    pub lanes: Vec<u32>,
    /// Step indices (into the window's steps).
    pub steps: Vec<u32>,
    /// Only host tasks (calls and CPU ops) or only device tasks.
    pub on_device: Option<bool>,
}

/// What selection reads besides the graph: names, and the mapping of the input's tasks.
#[derive(Clone, Copy)]
pub struct SelectContext<'a> {
    pub trace: &'a Trace,
    pub mapping: Option<&'a Mapping>,
}

impl Select {
    /// Whether `select` can be evaluated without a mapping.
    pub fn needs_mapping(&self) -> bool {
        self.op.is_some() || self.layer.is_some() || !self.phases.is_empty()
    }
}

impl EditGraph {
    /// The live tasks that `select` accepts.
    pub fn select(&self, select: &Select, context: SelectContext<'_>) -> Selection {
        self.select_where(|task| self.matches(select, context, task))
    }

    /// The live tasks that `accept` accepts (frozen tasks never are).
    pub fn select_where(&self, mut accept: impl FnMut(TaskId) -> bool) -> Selection {
        Selection(
            (0..self.rows.len() as u32)
                .map(TaskId)
                .filter(|&t| self.alive[t.index()] && !self.frozen[t.index()] && accept(t))
                .collect(),
        )
    }

    /// Excludes the selected tasks from every later selection (primitives given them
    /// explicitly still apply).
    pub fn freeze(&mut self, selection: &Selection) {
        for &t in selection.tasks() {
            self.frozen[t.index()] = true;
        }
    }

    pub fn is_frozen(&self, task: TaskId) -> bool {
        self.frozen.get(task.index()).copied().unwrap_or(false)
    }

    fn matches(&self, select: &Select, context: SelectContext<'_>, task: TaskId) -> bool {
        let row = &self.rows[task.index()];
        let trace = context.trace;
        if !select.kinds.is_empty() && !select.kinds.contains(&row.kind) {
            return false;
        }
        if select.on_device.is_some_and(|d| d != row.kind.on_device()) {
            return false;
        }
        if !select.lanes.is_empty() && !select.lanes.contains(&row.lane) {
            return false;
        }
        if !select.steps.is_empty() && (row.step == NO_STEP || !select.steps.contains(&row.step)) {
            return false;
        }
        if let Some(name) = &select.name
            && !name.is_match(trace.names.get(row.name))
        {
            return false;
        }
        if !select.needs_mapping() {
            return true;
        }
        // Inserted tasks have no mapping: criteria on op, layer or phase reject them.
        let Some(mapping) = context.mapping.filter(|_| self.is_original(task)) else {
            return false;
        };
        let t = task.index();
        if !select.phases.is_empty() && !select.phases.contains(&mapping.phase[t]) {
            return false;
        }
        if let Some(op) = &select.op {
            let Some(name) = mapping.op_name(trace, task) else {
                return false;
            };
            if !op.is_match(trace.names.get(name)) {
                return false;
            }
        }
        if let Some(layer) = &select.layer {
            let Some(name) = mapping.layer[t] else {
                return false;
            };
            if !layer.is_match(trace.names.get(name)) {
                return false;
            }
        }
        true
    }
}
