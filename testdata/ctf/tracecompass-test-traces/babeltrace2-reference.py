#!/usr/bin/env python3
"""How babeltrace2-counts.tsv beside this script was made: babeltrace2's own reader
(python3-bt2 2.0.4, Debian 12's `apt-get install python3-bt2`) over each CTF 1.8 trace here,
counting its event messages per trace and event name (paths relative to this folder), with
the sum of their timestamps (ns from the clock's origin: every timestamp, its clock mapping and
the wrapping of short timestamp fields, checked at once) and the first and last. stepcast's tests compare its CTF reader
with this file and, where `babeltrace2` is installed, with a live `babeltrace2` run.

babeltrace2 2.0.4 does not read CTF 2 (its error is kept in babeltrace2-ctf2.err): the CTF 2
trace is checked against its LTTng packet index (index/*.idx) instead.

Run: /usr/bin/python3 babeltrace2-reference.py (the system Python, where python3-bt2 is installed)
"""
import collections
import os
import subprocess

import bt2

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = [
    "mpi_allreduce",
    "context-switches/context-switches-ust",
    # The trace recorded here (../recorded/record.sh): an LTTng session of two traces.
    "../recorded/train-session",
]

rows = []
for trace in TRACES:
    counts = collections.Counter()
    sums = collections.Counter()
    first, last = {}, {}
    for msg in bt2.TraceCollectionMessageIterator(os.path.join(HERE, trace)):
        if type(msg) is bt2._EventMessageConst:
            name = msg.event.name
            ns = msg.default_clock_snapshot.ns_from_origin
            counts[name] += 1
            sums[name] += ns
            first[name] = min(first.get(name, ns), ns)
            last[name] = max(last.get(name, ns), ns)
    rows += [
        (trace, name, n, sums[name], first[name], last[name])
        for name, n in sorted(counts.items())
    ]
with open(os.path.join(HERE, "babeltrace2-counts.tsv"), "w") as out:
    out.write("trace\tevent\tcount\tsum_ns\tfirst_ns\tlast_ns\n")
    for row in rows:
        out.write("\t".join(str(v) for v in row) + "\n")
err = subprocess.run(
    ["babeltrace2", os.path.join(HERE, "CTF2-7.0-trace-with-index")],
    capture_output=True,
    text=True,
).stderr
# Only the messages, without the process ids and addresses that change from run to run.
lines = [line.split(" ", 5)[-1] for line in err.splitlines() if " E " in line or " W " in line]
with open(os.path.join(HERE, "babeltrace2-ctf2.err"), "w") as out:
    out.write("\n".join(lines[:6]) + "\n")
