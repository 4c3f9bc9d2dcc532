#!/usr/bin/env bash
# The one device check for a session that is lent a GPU: the GPU tests, then the GPU benchmarks, writing
# figures under $OUT (default data/). Meant to finish in about 7 minutes on one H100/H200.
#
# The device machine is offline, so nothing is installed: this runs its image's python3, which holds what
# the engine and these checks need (numpy, pandas, tqdm, tabulate, pytest, hypothesis, CuPy), with the
# checkout on PYTHONPATH. Only the GPU test files are collected (the others need the lab extra). Each step
# has its own time limit and the steps do not stop each other, so a slow step still leaves the others'
# figures; the kernel timings go first after the tests, saved row by row. The script exits 1 when any step
# failed (a GPU test, a kernel with a wrong result, a step out of time), after running them all, and names them.
#
#   OUT=$OUT bash scripts/gpu_check.sh            # in the device tool; PYTHON=... to pick another interpreter
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-data}"
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT/timings"

failed=()
step() {  # step NAME SECONDS COMMAND...: run with a limit, log to $OUT/NAME.txt, never abort the script
  local name=$1 limit=$2
  shift 2
  echo "== $name (limit ${limit}s)"
  timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "== $name stopped (exit $rc)" | tee -a "$OUT/$name.txt"; failed+=("$name (exit $rc)"); }
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu_info.csv"
step environment 60 "$PY" -c "import sys, numpy, cupy, mirage_lab; print(sys.version); \
print('numpy', numpy.__version__, 'cupy', cupy.__version__, 'usable', cupy.is_available())"
step gpu_tests 170 "$PY" -m pytest -p no:cacheprovider -q -rs -m gpu \
  tests/codegen/test_gpu.py tests/verify/test_verify_gpu.py tests/semantics/test_backend.py tests/compat/test_kngraph.py \
  tests/compat/test_arrays.py tests/codegen/test_triton.py
# issue 6: measured kernel times beside the proxy: unfused CuPy, hand-fused (default, then no prefetch, no tensor
# cores, no padding, plain loops), the search's best, reference μGraphs and PyTorch; the CSV is rewritten after
# every row
step kernels_gpu 200 "$PY" benchmarks/kernels.py --max-graphs 3 --repeats 100 --out "$OUT/timings" --json
for csv in "$OUT"/timings/*.csv; do  # the rank correlation of whatever rows were saved
  [ -f "$csv" ] && "$PY" benchmarks/kernels.py --from-csv "$csv" --json > "${csv%.csv}.correlation.txt" 2>&1
done
step interpret_gpu 45 "$PY" benchmarks/interpret.py --backend cupy --repeats 3 --json "$OUT/interpret_gpu.json"
# the verifier on CuPy (the working tree alone: the device copy has no git history for a 'before' tree)
step verify_gpu 90 "$PY" benchmarks/verify.py --before none --backend cupy --no-reference-graphs --no-search \
  --repeats 3 --json "$OUT/verify_gpu.json"
step cost_ranking 30 "$PY" benchmarks/cost.py --ranking --json "$OUT/cost_ranking.json"
echo "== done; figures in $OUT"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}"
  exit 1
fi
