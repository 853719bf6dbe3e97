#!/usr/bin/env bash
# Records the thread-count pairs of this folder into OUTDIR with ../cpu-pairs/record.py (the
# same workloads and variants, one process per workload), and the versions and the machine
# used. Run with a Python that has torch (CPU is enough): PYTHON=/path/to/python record.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{ "$py" -c 'import torch, platform; print("torch", torch.__version__, "python", platform.python_version())'
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|Hypervisor)'
  uname -sr
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/versions.txt" 2>&1
status=0
for workload in "mlp threads1 threads2" "cnn threads1 threads2" "transformer threads1 threads2"; do
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 "$py" "$here/../cpu-pairs/record.py" "$out" $workload || status=1
    echo "load average after $workload: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/versions.txt"
done
exit $status
