#!/usr/bin/env bash
# The GPU check: on a machine with CUDA, compare every model's and fast op's output and
# gradients on the GPU with the CPU (the case list comes from the model registry and from
# the public functions of sst_core/ops, sst_core.bench.gpu_check.cases: a new kernel is
# compared, or fails as a check with no inputs), then run the benchmarks on the GPU; both are stored
# as records under results/bench/ (the book's benchmark chapter shows them). Never part
# of CI. Exit status 1 when a comparison fails, 2 when there is no usable CUDA.
#
#   scripts/gpu_check.sh [--no-bench] [--bench-size small|full] [--repeat N]
#
# Python: $PYTHON if set; else the project's .venv if its torch sees CUDA; else python3.
# That interpreter needs a CUDA build of torch 2.x plus numpy, scipy, sympy, pandas and
# matplotlib (a GPU image usually has them); sst_core is read from this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

has_cuda() { "$1" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

if [[ -n "${PYTHON:-}" ]]; then
  py=$PYTHON
elif [[ -x .venv/bin/python ]] && has_cuda .venv/bin/python; then
  py=.venv/bin/python
else
  py=python3
fi
if ! has_cuda "$py"; then
  echo "gpu_check: $py has no CUDA-enabled torch (or no GPU is visible); nothing checked" >&2
  exit 2
fi
"$py" -c 'import torch; print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))'
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
exec "$py" -m sst_core gpu-check --device cuda "$@"
