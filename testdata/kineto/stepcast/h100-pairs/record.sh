#!/usr/bin/env bash
# Records every pair of this folder into OUTDIR (record.py), then the JAX GPU XPlane trace of
# testdata/xplane/stepcast/jax-cpu-mlp/record.py run on the GPU, and the versions used.
set -uo pipefail
out=${1:?OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.version.cuda)'
} > "$out/versions.txt" 2>&1
PYTHONUNBUFFERED=1 python3 "$here/record.py" "$out" \
    mlp-fp32 mlp-amp mlp-loop mlp-fused mlp-eager_capturable mlp-graphed \
    resnet-fp32 resnet-amp resnet-sync \
    transformer-fp32 transformer-amp \
    loader-workers0 loader-workers4 \
    transformer-compiled
status=$?
XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 timeout 120 \
    python3 "$here/../../../xplane/stepcast/jax-cpu-mlp/record.py" "$out/jax" \
    && python3 -c 'import jax; print("jax", jax.__version__, jax.devices())' >> "$out/versions.txt" 2>&1
exit $status
