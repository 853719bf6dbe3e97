#!/usr/bin/env bash
# The second recording of this folder (same session, same machine kind): the profiler's own
# cost per option (record.py's `-prof_<option>` configurations) and one-GPU DDP jobs (ddp.py).
set -uo pipefail
out=${1:?OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
PYTHONUNBUFFERED=1 timeout 200 python3 "$here/record.py" "$out" \
    mlp-fp32-prof_minimal mlp-fp32-prof_stack mlp-fp32-prof_memory mlp-fp32-prof_all \
    resnet-fp32-prof_minimal resnet-fp32-prof_stack resnet-fp32-prof_all \
    loader-workers0-prof_stack
status=$?
for world in 1 2 4; do
    PYTHONUNBUFFERED=1 timeout 70 python3 "$here/ddp.py" "$out" "$world" || status=1
done
exit $status
