#!/usr/bin/env bash
# The one device check for a session that is lent a GPU: a short GPU-test step, then every benchmark point's
# kernel timings and baselines, writing figures under $OUT (default data/). The time limits sum to 480 s,
# so the whole run ends within 8 minutes on one H100/H200.
#
# The device machine is offline, so nothing is installed: this runs its image's python3, which holds what
# the engine and these checks need (numpy, pandas, tqdm, tabulate, pytest, hypothesis, CuPy; torch with CUDA for
# the baselines, which are skipped, each row saying why, without it), with the checkout on PYTHONPATH. Only GPU
# test files are collected (the others need the lab extra). Each step has its own time limit and the steps do not
# stop each other, so a slow step still leaves the others' figures; the kernel timings come right after the
# short test step, saved row by row. The script exits 1 when any step failed (a GPU test, a kernel with a wrong
# result, a step out of time), after running them all, and names them.
#
# Before and after in one run: `bash scripts/prepare_before.sh` (in the checkout, with git) exports the commit
# before issue 36 into .before; when the device copy holds .before (the device tool's carry), the kernels step
# also times the fused graphs and the search's best with that tree's generator (rows "… (before)").
#
#   OUT=$OUT bash scripts/gpu_check.sh            # in the device tool; PYTHON=... to pick another interpreter
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-data}"
PY="${PYTHON:-python3}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# torch.compile's caches, shared by the warm-up beside the tests and the timing step (one compile per point)
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-${TMPDIR:-/tmp}/mirage-lab-inductor}"
export TORCHINDUCTOR_FX_GRAPH_CACHE=1
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
step environment 15 "$PY" -c "import sys, numpy, cupy, mirage_lab; print(sys.version); \
print('numpy', numpy.__version__, 'cupy', cupy.__version__, 'usable', cupy.is_available()); \
import importlib.util as u; t = u.find_spec('torch') and __import__('torch'); \
print('torch', t.__version__, 'cuda', t.version.cuda, 'usable', t.cuda.is_available()) if t else print('no torch')"

# the short GPU-test step (the generated kernels on the device), while torch.compile fills its caches beside it
# (a compilation left unfinished at the limit is done again in the timing step: no failure)
timeout 90 "$PY" benchmarks/kernels.py --warm-compile > "$OUT/warm_compile.txt" 2>&1 &
warm=$!
step gpu_tests 90 "$PY" -m pytest -p no:cacheprovider -q -rs -m gpu \
  tests/codegen/test_gpu.py tests/codegen/test_triton.py tests/semantics/test_backend.py
wait "$warm"
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || failed+=("warm_compile (exit $rc)")

# issue 6 and 36: every point's kernels (unfused CuPy, hand-fused and its codegen ablation, the search's best,
# reference μGraphs where shared/ is carried), the baselines (torch eager, SDPA, torch.compile last), each checked
# against the interpreter, the DRAM floor on every row; the CSV and its raw log are rewritten after every row
before=()
if [ -f .before/mirage_lab/__init__.py ]; then
  before=(--before-tree .before)
  echo "== the before tree: $(cat .before/COMMIT 2>/dev/null || echo 'no COMMIT file')"
fi
refs=()
[ -d shared/reference_mugraphs ] && refs=(--reference-dir shared/reference_mugraphs)
step kernels_gpu 280 "$PY" benchmarks/kernels.py --max-graphs 2 --repeats 100 --out "$OUT/timings" --json \
  "${before[@]}" "${refs[@]}"
for csv in "$OUT"/timings/*.csv; do  # the rank correlation and the README's table of whatever rows were saved
  [ -f "$csv" ] || continue
  timeout 10 "$PY" benchmarks/kernels.py --from-csv "$csv" --json > "${csv%.csv}.correlation.txt" 2>&1
  step perf_table 10 "$PY" scripts/perf_table.py --csv "$csv" --print
  cp "$OUT/perf_table.txt" "${csv%.csv}.table.md"
done
# the other GPU tests (interpreter, verifier and the drop-in on CuPy)
step gpu_tests_more 30 "$PY" -m pytest -p no:cacheprovider -q -rs -m gpu \
  tests/verify/test_verify_gpu.py tests/compat/test_kngraph.py tests/compat/test_arrays.py
# the Triton backend's launch parameters (num_warps × num_stages × padding) per kernel, timed within 40 s and
# recorded in data/timings/triton_tuned_<GPU>.json, which the Triton backend reads on that GPU from then on
step triton_tune 45 "$PY" benchmarks/triton_tune.py --budget-s 40 --timings-dir "$OUT/timings"
echo "== done; figures in $OUT"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}"
  exit 1
fi
