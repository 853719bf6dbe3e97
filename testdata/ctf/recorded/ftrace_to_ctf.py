#!/usr/bin/env python3
"""Re-encodes the kernel scheduler events of an ftrace text recording as a CTF trace, with
babeltrace2's own CTF writer (sink.ctf.fs, python3-bt2 2.0.4).

Why: LTTng's kernel tracer needs its kernel modules (lttng-modules), which this machine's
kernel does not have (`lttng enable-event -k` answers "Kernel tracer not available"; the error
is kept in kernel-tracer.err), but the kernel's own tracer (ftrace) records the same
scheduler tracepoints. Nothing is computed or invented here: each ftrace line becomes one
event of the same name, its fields as ftrace printed them (LTTng's field names: prev_comm,
prev_tid, prev_prio, prev_state, next_comm, next_tid, next_prio; comm, tid, prio,
target_cpu), plus the line's own columns as the event's common context (cpu_id, the current
thread's tid and procname). ftrace prints times in microseconds, on CLOCK_MONOTONIC
(trace_clock=mono), LTTng's `monotonic` clock: the clock class takes the offset of the LTTng
trace recorded beside it so both traces share one time line.

Usage: /usr/bin/python3 ftrace_to_ctf.py FTRACE.txt LTTNG_UST_TRACE_DIR OUT_DIR
"""
import re
import sys

import bt2

LINE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<sec>\d+)\.(?P<usec>\d{6}):\s+"
    r"(?P<event>sched_switch|sched_waking|sched_wakeup|sched_wakeup_new):\s+(?P<rest>.*)$"
)
FIELD = re.compile(r"(\w+)=(\S*)")
# ftrace's field names where LTTng's differ.
RENAME = {"prev_pid": "prev_tid", "next_pid": "next_tid", "pid": "tid"}
STRINGS = {"prev_comm", "next_comm", "comm", "prev_state"}


def parse(path):
    events = []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        rest = m["rest"]
        fields = {}
        if m["event"] == "sched_switch":
            # `prev_comm=a b prev_pid=1 ... ==> next_comm=c next_pid=2 next_prio=120`: comms
            # may hold spaces, so each side is split on its known keys.
            left, right = rest.split(" ==> ")
            for side in (left, right):
                keys = list(re.finditer(r"(\w+)=", side))
                for i, k in enumerate(keys):
                    end = keys[i + 1].start() if i + 1 < len(keys) else len(side)
                    fields[k[1]] = side[k.end():end].strip()
        else:
            keys = list(re.finditer(r"(\w+)=", rest))
            for i, k in enumerate(keys):
                end = keys[i + 1].start() if i + 1 < len(keys) else len(rest)
                fields[k[1]] = rest[k.end():end].strip()
        fields = {RENAME.get(k, k): v for k, v in fields.items()}
        ns = int(m["sec"]) * 1_000_000_000 + int(m["usec"]) * 1000
        events.append((ns, int(m["cpu"]), int(m["pid"]), m["comm"].strip(), m["event"], fields))
    return events


def lttng_clock_offset(ust_dir):
    """The offset of the LTTng trace's monotonic clock (seconds, cycles)."""
    for msg in bt2.TraceCollectionMessageIterator(ust_dir):
        if type(msg) is bt2._EventMessageConst:
            offset = msg.default_clock_snapshot.clock_class.offset
            return offset.seconds, offset.cycles
    raise SystemExit(f"{ust_dir}: no event to take the clock from")


def make_stream(component, events, offset):
    """The trace class, clock, stream class, event classes and stream of the re-encoding."""
    tc = component._create_trace_class()
    cc = component._create_clock_class(
        frequency=1_000_000_000,
        name="monotonic",
        offset=bt2.ClockClassOffset(*offset),
        origin_is_unix_epoch=True,
    )
    context = tc.create_structure_field_class()
    context.append_member("cpu_id", tc.create_unsigned_integer_field_class(32))
    context.append_member("tid", tc.create_signed_integer_field_class(32))
    context.append_member("procname", tc.create_string_field_class())
    sc = tc.create_stream_class(
        default_clock_class=cc, event_common_context_field_class=context
    )
    classes = {}
    for _, _, _, _, name, fields in events:
        if name in classes:
            continue
        payload = tc.create_structure_field_class()
        for key in fields:
            fc = (
                tc.create_string_field_class()
                if key in STRINGS
                else tc.create_signed_integer_field_class(64)
            )
            payload.append_member(key, fc)
        classes[name] = (sc.create_event_class(name=name, payload_field_class=payload), list(fields))
    return tc().create_stream(sc), classes


class Iter(bt2._UserMessageIterator):
    def __init__(self, config, port):
        self._data = port.user_data
        self._msgs = None

    def __next__(self):
        if self._msgs is None:
            self._msgs = iter(self._all())
        return next(self._msgs)

    def _all(self):
        stream, classes, events, offset = self._data
        yield self._create_stream_beginning_message(stream)
        for ns, cpu, pid, comm, name, fields in events:
            ec, keys = classes[name]
            cycles = ns  # CLOCK_MONOTONIC, as LTTng's clock counts: the offset places it
            msg = self._create_event_message(ec, stream, default_clock_snapshot=cycles)
            msg.event.common_context_field["cpu_id"] = cpu
            msg.event.common_context_field["tid"] = pid
            msg.event.common_context_field["procname"] = comm
            for key in keys:
                value = fields[key]
                msg.event.payload_field[key] = value if key in STRINGS else int(value)
            yield msg
        yield self._create_stream_end_message(stream)


class Source(bt2._UserSourceComponent, message_iterator_class=Iter):
    def __init__(self, config, params, data):
        events, offset = data
        stream, classes = make_stream(self, events, offset)
        self._add_output_port("out", (stream, classes, events, offset))


def main():
    ftrace, ust_dir, out = sys.argv[1:4]
    events = parse(ftrace)
    if not events:
        raise SystemExit(f"{ftrace}: no scheduler event")
    # Uncommon but possible: the text is per-CPU interleaved; CTF wants one time line.
    events.sort(key=lambda e: e[0])
    offset = lttng_clock_offset(ust_dir)
    graph = bt2.Graph()
    src = graph.add_component(Source, "ftrace", obj=(events, offset))
    sink = graph.add_component(
        bt2.find_plugin("ctf").sink_component_classes["fs"],
        "ctf",
        params={"path": out, "assume-single-trace": True},
    )
    graph.connect_ports(src.output_ports["out"], sink.input_ports["in"])
    graph.run()
    print(f"{len(events)} scheduler events -> {out}")


if __name__ == "__main__":
    main()
