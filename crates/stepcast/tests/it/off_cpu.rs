//! Scheduler events explain host gaps (issue #13): on the LTTng trace recorded here
//! (`testdata/ctf/recorded/`, a CPU training loop whose thread waits for its loader thread's
//! batches, with the kernel scheduler's events), `analyze` says where the step's thread was off
//! its CPU, why, and who woke it. The reference is the kernel's own ftrace text of the run,
//! read here with string splitting: who was running when each `sched_waking` of the training
//! thread was recorded.

use std::collections::BTreeSet;
use std::path::PathBuf;

use stepcast::analyze::analyze;
use stepcast::analyze::off_cpu::OffCpuState;
use stepcast::graph::{BuildOptions, build};
use stepcast_trace::{OffCpuReason, read_trace};

fn session() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/ctf/recorded/train-session"
    ))
}

#[test]
fn a_host_gap_spent_off_cpu_is_reported_as_such_with_its_waker() {
    let trace = read_trace(&session()).unwrap_or_else(|e| panic!("{e}"));
    let window = build(&trace, &BuildOptions::default());
    let analysis = analyze(&trace, &window, None).expect("analyzes");
    let steps = analysis
        .off_cpu
        .as_ref()
        .expect("scheduler events were read");
    let tid = trace.lane(trace.steps[0].lane).tid;
    let text =
        std::fs::read_to_string(session().join("kernel-ftrace/ftrace-sched.txt")).expect("ftrace");
    // `   train-14299   [000] ... sched_waking: comm=train pid=14296 ...`: the waker is the
    // line's own task.
    let wakers: BTreeSet<i64> = text
        .lines()
        .filter(|l| l.contains(": sched_waking: ") && l.contains(&format!(" pid={tid} ")))
        .filter_map(|l| {
            l.split_whitespace()
                .next()?
                .rsplit('-')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(!wakers.is_empty() && !wakers.contains(&tid), "{wakers:?}");
    assert_eq!(steps.len(), window.steps.len());
    // Preempted inside its events (`backward`): by a thread that `sched_switch` put on the CPU,
    // a runnable switch (`prev_state=R`) of the training thread in ftrace's text.
    let preemptors: BTreeSet<i64> = text
        .lines()
        .filter(|l| l.contains(&format!(" prev_pid={tid} ")) && l.contains(" prev_state=R "))
        .filter_map(|l| {
            l.split(" next_pid=")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let preempted: Vec<_> = steps
        .iter()
        .flat_map(|s| &s.slices)
        .filter(|s| s.reason == OffCpuReason::Preempted)
        .collect();
    assert!(!preempted.is_empty());
    for slice in &preempted {
        let by = slice.next.as_ref().expect("the thread that took the CPU");
        assert!(preemptors.contains(&by.tid), "{by:?} not in {preemptors:?}");
    }
    let in_events: i64 = steps
        .iter()
        .map(|s| s.in_events_ns[OffCpuState::Preempted as usize])
        .sum();
    let preempted_ns: i64 = preempted.iter().map(|s| s.end_ns - s.start_ns).sum();
    assert!(in_events > 0 && in_events <= preempted_ns);
    for step in steps {
        // The wait for the batch lies between operations: an untraced gap, and the scheduler
        // says the thread slept through most of it.
        let waiting = step.gap_off_cpu_ns[OffCpuState::Waiting as usize];
        assert!(
            waiting * 2 > step.gap_ns && step.gap_off_cpu_total_ns() <= step.gap_ns,
            "step {}: {waiting} ns waiting of a {} ns gap",
            step.step,
            step.gap_ns
        );
        // The two clocks agree (LTTng's monotonic clock and ftrace's `mono`): the waits fall
        // in the gaps between the UST events, not inside them.
        assert!(
            step.in_events_ns[OffCpuState::Waiting as usize] * 20 < waiting,
            "step {}: waits inside events",
            step.step
        );
        // On the critical path too: the step's end waited for it.
        assert!(
            step.critical_ns[OffCpuState::Waiting as usize] > 0,
            "step {}",
            step.step
        );
        for slice in step
            .slices
            .iter()
            .filter(|s| s.reason == OffCpuReason::Blocked)
        {
            let waker = slice
                .waker
                .as_ref()
                .expect("a blocked interval names its waker");
            assert!(
                wakers.contains(&waker.tid),
                "step {}: woken by {waker:?}",
                step.step
            );
        }
    }
}

/// A faster CPU speeds up only the time a thread ran: on the recorded session, where the
/// training thread spends most of each step blocked on its loader, `faster_cpu` (2×) cannot
/// save more than half of the step thread's on-CPU time per step, which ftrace-independent
/// arithmetic over the trace's own off-CPU intervals bounds: the step minus the off-CPU time
/// inside it is what may halve.
#[test]
fn a_faster_cpu_does_not_speed_up_time_spent_off_cpu() {
    use stepcast::analyze::mapping::map;
    use stepcast::whatif::models::Model;
    use stepcast::whatif::{Context, apply_models};
    let trace = read_trace(&session()).unwrap_or_else(|e| panic!("{e}"));
    let window = build(&trace, &BuildOptions::default());
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let model = Model::by_name("faster_cpu").expect("faster_cpu");
    let outcome =
        apply_models(&context, std::slice::from_ref(&model)).unwrap_or_else(|e| panic!("{e}"));
    let saved_ns = outcome.baseline.step_ns - outcome.predicted.step_ns;
    // The most a 2× CPU can save per step: half the step thread's on-CPU time, averaged
    // over the steps (the prediction is a steady-state period).
    let lane = trace.steps[0].lane;
    let steps = &trace.steps;
    let on_cpu_ns: i64 = steps
        .iter()
        .map(|s| {
            let (from, to) = (s.start_ns, s.start_ns + s.dur_ns);
            let off: i64 = trace
                .off_cpu
                .iter()
                .filter(|o| o.lane == lane)
                .map(|o| (o.end_ns().min(to) - o.start_ns.max(from)).max(0))
                .sum();
            s.dur_ns - off
        })
        .sum();
    let bound_ns = on_cpu_ns / steps.len() as i64 / 2;
    assert!(saved_ns > 0, "a faster CPU saves something: {saved_ns}");
    assert!(
        saved_ns <= bound_ns + bound_ns / 10,
        "saved {saved_ns} ns per step, more than half the on-CPU time ({bound_ns} ns)"
    );
    assert!(
        model
            .caveats(&context)
            .iter()
            .any(|c| c.contains("off their CPU")),
        "the caveat says the off-CPU time is kept"
    );
}
