//! What bounds a replayed step: its critical path, split by the resource each stretch used.

use std::collections::BTreeMap;

use stepcast_trace::NameId;

use crate::graph::{Graph, TaskKind};
use crate::simulate::{CriticalPath, ShareKind};

/// What a stretch of the critical path used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// Host work: runtime calls, CPU ops and the untraced host time after them.
    Host,
    /// Device kernels and memsets.
    Compute,
    /// Host↔device and device↔device copies.
    Copy,
    /// Collectives and point-to-point transfers, and their wait for peers.
    Communication,
    /// Waiting: launch latency, a stream waiting for another.
    Wait,
}

impl Resource {
    pub const ALL: [Resource; 5] = [
        Resource::Host,
        Resource::Compute,
        Resource::Copy,
        Resource::Communication,
        Resource::Wait,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Host => "host",
            Resource::Compute => "compute",
            Resource::Copy => "copy",
            Resource::Communication => "communication",
            Resource::Wait => "wait",
        }
    }

    fn of(kind: TaskKind, share: ShareKind) -> Resource {
        match (share, kind) {
            (ShareKind::Host, _) => Resource::Host,
            (ShareKind::Wait, TaskKind::Collective) => Resource::Communication,
            (ShareKind::Wait, _) => Resource::Wait,
            (ShareKind::Device, TaskKind::Memcpy) => Resource::Copy,
            (ShareKind::Device, TaskKind::Collective) => Resource::Communication,
            (ShareKind::Device, _) => Resource::Compute,
        }
    }
}

/// One of the names that take the most critical-path time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathItem {
    pub name: NameId,
    pub kind: TaskKind,
    pub resource: Resource,
    /// Path time per steady step.
    pub ns: i64,
}

/// The critical path of the steady span of a replay (from the end of the warm-up step to the
/// end of the last step), as the mean per steady step of the time it spends on each
/// [`Resource`]. The resource with the most time is the bottleneck.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bottleneck {
    /// Path time per steady step, by resource, in [`Resource::ALL`] order.
    pub by_resource: [i64; 5],
    /// The names with the most path time (at most [`Bottleneck::TOP`]), most first.
    pub top: Vec<PathItem>,
}

impl Bottleneck {
    /// How many names [`Bottleneck::top`] keeps.
    pub const TOP: usize = 5;

    /// The bottleneck of `path` (through `graph`), spanning `steps` steps.
    pub fn new(graph: &Graph, path: &CriticalPath, steps: i64) -> Bottleneck {
        let steps = steps.max(1);
        let mut totals = [0i64; 5];
        let mut by_name: BTreeMap<(Resource, TaskKind, NameId), i64> = BTreeMap::new();
        for share in &path.shares {
            let t = share.task.index();
            let resource = Resource::of(graph.kind[t], share.kind);
            totals[resource as usize] += share.ns;
            *by_name
                .entry((resource, graph.kind[t], graph.name[t]))
                .or_default() += share.ns;
        }
        let mut top: Vec<PathItem> = by_name
            .into_iter()
            .map(|((resource, kind, name), ns)| PathItem {
                name,
                kind,
                resource,
                ns: ns / steps,
            })
            .collect();
        // Most time first; ties in (resource, kind, name) order, as the map gave them.
        top.sort_by_key(|item| std::cmp::Reverse(item.ns));
        top.truncate(Bottleneck::TOP);
        Bottleneck {
            by_resource: totals.map(|ns| ns / steps),
            top,
        }
    }

    /// Path time per steady step.
    pub fn length_ns(&self) -> i64 {
        self.by_resource.iter().sum()
    }

    /// Path time per steady step on `resource`.
    pub fn ns(&self, resource: Resource) -> i64 {
        self.by_resource[resource as usize]
    }

    /// The share of the path on `resource`, in `[0, 1]` (0 for an empty path).
    pub fn share(&self, resource: Resource) -> f64 {
        let length = self.length_ns();
        if length <= 0 {
            return 0.0;
        }
        self.ns(resource) as f64 / length as f64
    }

    /// The resource with the most path time (the first in [`Resource::ALL`] order on a tie).
    pub fn bound(&self) -> Resource {
        let mut best = Resource::Host;
        for resource in Resource::ALL {
            if self.ns(resource) > self.ns(best) {
                best = resource;
            }
        }
        best
    }
}
