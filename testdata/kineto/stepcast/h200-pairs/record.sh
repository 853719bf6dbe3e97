#!/usr/bin/env bash
# Records every configuration of this folder into OUTDIR (record.py) within LIMIT seconds
# (default 470), and the versions used. The one-process DDP `shape` trace is recorded with
# compiled autograd; only if that fails, without it.
set -uo pipefail
out=${1:?OUTDIR}
limit=${2:-470}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda)'
  lscpu | grep -E '^(Model name|CPU\(s\))'
} > "$out/versions.txt" 2>&1
PYTHONUNBUFFERED=1 timeout "$limit" python3 "$here/record.py" "$out" \
    mlp-fp32 mlp-bf16 mlp-amp mlp-loop mlp-fused mlp-eager_capturable mlp-graphed \
    resnet-fp32 resnet-bf16 resnet-amp resnet-sync \
    transformer-fp32 transformer-bf16 transformer-amp transformer-checkpoint \
    loader-workers0 loader-workers1 loader-workers2 loader-workers4 \
    shape-ddp_compiled mlp-compiled transformer-compiled mlp-compiled_ro
status=$?
if [ ! -e "$out/shape-ddp_compiled.timing.json" ]; then
    PYTHONUNBUFFERED=1 timeout 90 python3 "$here/record.py" "$out" shape-ddp
fi
exit $status
