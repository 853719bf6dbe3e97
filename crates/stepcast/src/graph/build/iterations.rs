//! Steps of a trace without step markers, from the training loop's own ranges.
//!
//! A program that never calls `prof.step()` (the autograd profiler's API, a `record_function`
//! loop, any profile taken around a few iterations) leaves no `ProfilerStep#N` range, and the
//! whole window would stand as one step: its first iteration's allocation, compilation and
//! cold-start launches inside it, and no steady state to predict from (on tb_plugin's
//! `resnet50_autograd_api` ResNet-50, one `cudaLaunchKernel` of 1.57 s was 30 % of that step).
//! PyTorch records the loop's own landmarks instead, once per iteration:
//!
//! - `Optimizer.step#<Optimizer>.step`: one update per training step (with gradient
//!   accumulation too: micro-batches between two updates are one step). A step ends where an
//!   update ends, as `ProfilerStep#N` ends where the loop calls `prof.step()` after it.
//! - Otherwise `enumerate(DataLoader)#<Iter>.__next__`: one batch drawn per iteration (an
//!   inference loop has no optimizer). A step runs from one draw's start to the next's.
//!
//! Steps are inferred only where one host thread's ranges make at least [`MIN_ITERATIONS`]; the
//! build notes say which ranges made them.

use stepcast_trace::{EventKind, LaneId, LaneKind, Trace};

use crate::window::{INFERRED_STEPS_NOTE, Step};

/// Fewer ranges than this are no loop to take steps from: a warm-up step and two steady ones.
pub(super) const MIN_ITERATIONS: usize = 3;

/// The landmark the steps come from, and which end of its ranges bounds a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Landmark {
    /// Steps end where an optimizer's update ends.
    UpdateEnd,
    /// Steps begin where a batch is drawn.
    BatchStart,
}

/// The steps of a trace with no step markers, and the note that says where they come from;
/// `None` where no host thread has [`MIN_ITERATIONS`] updates or batch draws. `host_start` is
/// where the window's host work begins: the first step opens there when it is bounded by an
/// update's end.
pub(super) fn infer(trace: &Trace, host_start: i64) -> Option<(Vec<Step>, String)> {
    let (landmark, Ranges { name, lane, ranges }) = landmarks(trace, "Optimizer.step#")
        .map(|found| (Landmark::UpdateEnd, found))
        .or_else(|| {
            landmarks(trace, "enumerate(DataLoader)#").map(|found| (Landmark::BatchStart, found))
        })?;
    let step = |number: usize, start_ns: i64, end_ns: i64| Step {
        number: number as u64,
        trace_lane: Some(lane),
        start_ns,
        marker_end_ns: end_ns,
        synthetic: false,
        teardown: false,
    };
    let steps: Vec<Step> = match landmark {
        Landmark::UpdateEnd => ranges
            .iter()
            .enumerate()
            .map(|(i, &(_, end))| {
                let start = if i == 0 { host_start } else { ranges[i - 1].1 };
                step(i, start.min(end), end)
            })
            .collect(),
        // From one draw to the next: the last draw opens no step, as the loop's last draw is
        // the one that finds the loader exhausted (`StopIteration`), and otherwise the window
        // ended inside that iteration.
        Landmark::BatchStart => ranges
            .windows(2)
            .enumerate()
            .map(|(i, pair)| step(i, pair[0].0, pair[1].0))
            .collect(),
    };
    if steps.len() < MIN_ITERATIONS {
        return None;
    }
    let bound = match landmark {
        Landmark::UpdateEnd => "each ends where one ends",
        Landmark::BatchStart => "each from one's start to the next's",
    };
    let note = format!(
        "{INFERRED_STEPS_NOTE} {} steps are the loop's iterations between its {} \
         `{name}` ranges ({bound})",
        steps.len(),
        ranges.len(),
    );
    Some((steps, note))
}

/// One name's outermost ranges on one host thread.
struct Ranges {
    name: String,
    lane: LaneId,
    /// `(start, end)`, in time order.
    ranges: Vec<(i64, i64)>,
}

/// The outermost host ranges whose name begins with `prefix`, of the one name and the one host
/// thread with the most of them, where there are at least [`MIN_ITERATIONS`].
fn landmarks(trace: &Trace, prefix: &str) -> Option<Ranges> {
    let mut best: Option<Ranges> = None;
    for (index, lane) in trace.lanes.iter().enumerate() {
        if lane.kind != LaneKind::CpuThread {
            continue;
        }
        let lane = LaneId(index as u32);
        // Per name on this lane: its outermost ranges (a range inside another of the same
        // name is the same iteration's).
        let mut by_name: Vec<(&str, Vec<(i64, i64)>)> = Vec::new();
        for event in trace.lane_events(lane) {
            if !matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation) {
                continue;
            }
            let name = trace.names.get(event.name);
            if !name.starts_with(prefix) {
                continue;
            }
            let (start, end) = (event.start_ns, event.end_ns());
            let slot = match by_name.iter().position(|(n, _)| *n == name) {
                Some(i) => &mut by_name[i].1,
                None => {
                    by_name.push((name, Vec::new()));
                    &mut by_name.last_mut()?.1
                }
            };
            if slot.last().is_none_or(|&(_, last_end)| start >= last_end) {
                slot.push((start, end));
            }
        }
        for (name, ranges) in by_name {
            let better = match &best {
                None => true,
                // More ranges; on a tie the name first in order, for the same steps every run.
                Some(best) => {
                    ranges.len() > best.ranges.len()
                        || ranges.len() == best.ranges.len() && name < best.name.as_str()
                }
            };
            if better {
                best = Some(Ranges {
                    name: name.to_string(),
                    lane,
                    ranges,
                });
            }
        }
    }
    best.filter(|found| found.ranges.len() >= MIN_ITERATIONS)
}
