#!/usr/bin/env bash
# Records the pairs of README.md into OUTDIR within LIMIT seconds (default 420), with the
# versions used. On a lent GPU machine, from the repository root:
#   bash testdata/kineto/stepcast/gpu-pairs/record.sh "$OUT/gpu-pairs"
set -uo pipefail
out=${1:?OUTDIR}
limit=${2:-420}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda)'
  lscpu | grep -E '^(Model name|CPU\(s\))'
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/versions.txt" 2>&1
PYTHONUNBUFFERED=1 timeout "$limit" python3 "$here/record.py" "$out" \
    resnet-fp32 resnet-offload transformer-fp32 transformer-offload \
    copy-pageable copy-pinned \
    loader-workers0 loader-workers2 loader-workers4 \
    resnet-gist transformer-gist
status=$?
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/versions.txt"
exit $status
