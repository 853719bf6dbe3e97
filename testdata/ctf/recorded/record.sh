#!/bin/sh
# Records train-session/: an LTTng-UST trace of train.c (a CPU training loop, 12 steps) and
# the kernel scheduler's events of the same run, here (Debian 12 container as root, 2 CPUs):
#   apt-get install lttng-tools liblttng-ust-dev babeltrace2 python3-bt2 gcc
# LTTng's kernel tracer is not available on this kernel (no lttng-modules): `lttng
# enable-event -k` fails (kernel-tracer.err). The scheduler events come from the kernel's
# ftrace instead (tracefs), filtered to the process's threads, and are re-encoded as a CTF
# trace by ftrace_to_ctf.py (babeltrace2's CTF writer). The process is pinned to CPU 0 with a
# spinning thread, so the scheduler preempts the training thread; it also blocks waiting for
# its loader thread's batches.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/train-session"
work="$(mktemp -d)"
tracing=/sys/kernel/tracing
rm -rf "$out"
cc -O2 -I"$here" -o "$work/train" "$here/train.c" "$here/train_tp.c" -llttng-ust -ldl -lpthread -lm
lttng list >/dev/null 2>&1 || lttng-sessiond --daemonize
lttng create stepcast-train --output="$out" >/dev/null
lttng enable-event -u 'stepcast_train:*' >/dev/null
lttng add-context -u -t vpid -t vtid -t procname >/dev/null
lttng enable-event -k sched_switch,sched_waking,sched_wakeup > "$here/kernel-tracer.err" 2>&1 || true
[ -e "$tracing/trace_clock" ] || mount -t tracefs nodev "$tracing"
echo 0 > "$tracing/tracing_on"
echo mono > "$tracing/trace_clock"
echo > "$tracing/trace"
echo 1 > "$tracing/options/event-fork"
for e in sched_switch sched_waking sched_wakeup; do echo 1 > "$tracing/events/sched/$e/enable"; done
lttng start >/dev/null
# The shell writes its own pid as the filter, then becomes the program (threads follow).
sh -c "echo \$\$ > $tracing/set_event_pid; echo 1 > $tracing/tracing_on; exec taskset -c 0 $work/train" 2> "$here/train.log"
echo 0 > "$tracing/tracing_on"
lttng stop >/dev/null
lttng destroy stepcast-train >/dev/null
cp "$tracing/trace" "$work/ftrace.txt"
for e in sched_switch sched_waking sched_wakeup; do echo 0 > "$tracing/events/sched/$e/enable"; done
echo > "$tracing/set_event_pid"
echo 0 > "$tracing/options/event-fork"
echo local > "$tracing/trace_clock"
echo > "$tracing/trace"
ust="$(dirname "$(find "$out/ust" -name metadata | head -1)")"
mkdir -p "$out/kernel-ftrace"
cp "$work/ftrace.txt" "$out/kernel-ftrace/ftrace-sched.txt"
/usr/bin/python3 "$here/ftrace_to_ctf.py" "$work/ftrace.txt" "$ust" "$out/kernel"
rm -rf "$work"
babeltrace2 "$out" | wc -l | xargs echo "events babeltrace2 reads in the session:"
