"""Checks `stepcast analyze --format csv` against `stepcast analyze --json`.

Usage: python3 csv_totals.py CSV_DIR ANALYZE_JSON

Every table loads with Python's csv module (and with pandas when it is installed), and the
tables sum to the JSON document's totals. Prints one line per check; exits 1 on a mismatch.
"""

import csv
import json
import os
import sys


def load(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    for row in body:
        assert len(row) == len(header), f"{path}: row of {len(row)} cells, header {len(header)}"
    return [dict(zip(header, row)) for row in body]


def check(label, got, want):
    if got != want:
        print(f"MISMATCH {label}: csv {got} json {want}")
        sys.exit(1)
    print(f"ok {label}: {got}")


def main():
    directory, document_path = sys.argv[1], sys.argv[2]
    with open(document_path, encoding="utf-8") as f:
        document = json.load(f)
    tables = {}
    for name in sorted(os.listdir(directory)):
        if name == ".stepcast-manifest":  # the list of the files stepcast wrote there
            continue
        assert name.endswith(".csv"), name
        tables[name[: -len(".csv")]] = load(os.path.join(directory, name))
    print(f"ok {len(tables)} tables load")

    steps = tables["steps"]
    check("steps", len(steps), len(document["steps"]))
    check(
        "sum of measured_ns",
        sum(int(r["measured_ns"]) for r in steps),
        sum(s["measured_ns"] for s in document["steps"]),
    )
    for row, step in zip(steps, document["steps"]):
        for partition in ("host_device", "device_time_by_phase", "host_time_by_phase"):
            parts = sum(int(v) for k, v in row.items() if k.startswith(partition + "."))
            check(f"step {row['number']} {partition}", parts, step["measured_ns"])

    window = document["window"]
    check(
        "window.host_device",
        sum(int(r["value"]) for r in tables["window.host_device"]),
        window["span_ns"],
    )
    if document["typical_step"] is not None:
        check(
            "typical_step.device_time_by_phase",
            sum(int(r["value"]) for r in tables["typical_step.device_time_by_phase"]),
            document["typical_step"]["span_ns"],
        )
    kernels = document["statistics"]["top_kernels"]
    if kernels:
        check(
            "statistics.top_kernels total_ns",
            sum(int(r["total_ns"]) for r in tables["statistics.top_kernels"]),
            sum(k["total_ns"] for k in kernels),
        )
    summary = {r["field"]: r["value"] for r in tables["summary"]}
    check("summary trace.events", int(summary["trace.events"]), document["trace"]["events"])

    try:
        import pandas
    except ImportError:
        print("pandas not installed: read with the csv module only")
        return
    frame = pandas.read_csv(os.path.join(directory, "steps.csv"))
    check(
        "pandas sum of measured_ns",
        int(frame["measured_ns"].sum()),
        sum(s["measured_ns"] for s in document["steps"]),
    )


main()
