#!/usr/bin/env bash
# Records every pair of this folder into OUTDIR (record.py, one process per workload), and the
# versions and the machine used. Run with a Python that has torch and torchvision (CPU is
# enough): PYTHON=/path/to/python record.sh OUTDIR
set -uo pipefail
out=${1:?OUTDIR}
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{ "$py" -c 'import torch, torchvision, platform; print("torch", torch.__version__, "torchvision", torchvision.__version__, "python", platform.python_version())'
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|Hypervisor)'
  uname -sr
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/versions.txt" 2>&1
status=0
for workload in "mlp base loop fused compiled" "mlp threads1 threads2" "cnn base compiled" \
    "cnn threads1 threads2" "transformer base compiled" "transformer threads1 threads2" \
    "loader workers0 workers1 workers2" "ddp"; do
    # shellcheck disable=SC2086
    PYTHONUNBUFFERED=1 "$py" "$here/record.py" "$out" $workload || status=1
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/versions.txt"
exit $status
