#!/bin/sh
# Records testdata/horovod/: a 2-process CPU Horovod run (Gloo), its Horovod timeline (rank 0)
# and each rank's PyTorch profiler trace. Run in a throwaway virtual environment:
#   python3.11 -m venv /tmp/venv-hvd && . /tmp/venv-hvd/bin/activate
#   pip install torch==2.0.1 "numpy<2" "cmake<3.28" "setuptools<70"
#   HOROVOD_CMAKE=$(which cmake) HOROVOD_WITH_GLOO=1 HOROVOD_WITH_PYTORCH=1 \
#     HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
#     pip install --no-build-isolation horovod==0.28.1
#   sh testdata/horovod/gloo_mlp_2proc/record.sh /tmp/hvd-out
set -eu
out=${1:?usage: record.sh OUT_DIR}
mkdir -p "$out"
here=$(dirname "$0")  # testdata/horovod/gloo_mlp_2proc
# DYNAMIC: the script starts and stops the timeline around the profiled steps.
HOROVOD_TIMELINE=DYNAMIC horovodrun --gloo -np 2 -H localhost:2 python "$here/train.py" "$out"
gzip -9 -n -f "$out"/*.json
