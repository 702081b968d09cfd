#!/usr/bin/env bash
# Chapter 06b's GPU run: the one script a machine with a CUDA GPU runs, from
# the repository root.  That machine has torch but no package registry: the
# wheels it lacks (cffi, pycparser; nbval too if its pytest lacks it) are
# brought in .whl/ (fill it beforehand with
#   pip download --only-binary=:all: --python-version 3.X --platform manylinux2014_x86_64 -d .whl cffi pycparser nbval
# for the GPU machine's Python) and installed into /tmp/site.
#
# It builds the C core in place, runs the gpu-marked tests, executes
# chapters/06_training/06b_gpu.ipynb in place (normalised as the course's
# notebooks are), and writes into $OUT (default ./gpu-out): the tests' log,
# the figures, 06b_numbers.json and the executed notebook.  About 3 minutes on
# an H200; each step has its own time limit so that the whole stays under 8.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
log() { echo "[gpu_run $(date +%H:%M:%S)] $*" | tee -a "$OUT/gpu_run.log"; }

log "python: $($PY --version 2>&1); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    mkdir -p /tmp/site
    $PY -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl >>"$OUT/gpu_run.log" 2>&1 \
        || log "warning: installing .whl/ into /tmp/site failed (see the log)"
fi
export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export LOWLAT_GPU_OUT="$OUT"

missing=$($PY - <<'EOF'
import importlib.util
need = ["torch", "numpy", "cffi", "pycparser", "pytest", "matplotlib", "nbformat", "nbclient", "ipykernel"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
EOF
)
if [ -n "$missing" ]; then
    log "missing Python packages: $missing (bring their wheels in .whl/)"
    exit 2
fi
$PY -c "from lowlat.train import gpu; ok, why = gpu.available(); print(why); raise SystemExit(0 if ok else 1)" \
    | tee -a "$OUT/gpu_run.log" || { log "no usable CUDA GPU: stopping"; exit 2; }

log "building the C core in place"
timeout 120 $PY setup.py -q build_ext --inplace >>"$OUT/gpu_run.log" 2>&1 || { log "the C core did not build"; exit 1; }

rc=0
log "pytest -m gpu tests/test_gpu.py"
timeout 180 $PY -m pytest -p no:cacheprovider -m gpu -v -s tests/test_gpu.py >"$OUT/pytest_gpu.log" 2>&1
t=$?; log "pytest exit $t (log: pytest_gpu.log)"; [ $t -eq 0 ] || rc=1
grep -E "GB/s|busy|per step|TFLOP/s|compiles|PASSED|FAILED|SKIPPED" "$OUT/pytest_gpu.log" | tee -a "$OUT/gpu_run.log"

log "executing chapters/06_training/06b_gpu.ipynb in place"
timeout 300 $PY - <<'EOF' 2>&1 | tee -a "$OUT/gpu_run.log"
from pathlib import Path
from tools import notebooks
p = Path("chapters/06_training/06b_gpu.ipynb").resolve()
print(f"executed in {notebooks.execute(p, timeout_s=280):.1f} s; problems: {notebooks.problems(p) or 'none'}")
EOF
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
cp chapters/06_training/06b_gpu.ipynb "$OUT/" 2>/dev/null
if [ -f "$OUT/06b_numbers.json" ]; then log "numbers: $OUT/06b_numbers.json"; else log "no numbers written"; rc=1; fi
ls -l "$OUT" | tee -a "$OUT/gpu_run.log"
log "done, exit $rc"
exit $rc
