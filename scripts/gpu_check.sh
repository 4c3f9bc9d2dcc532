#!/usr/bin/env bash
# The one device check for a session that is lent a GPU (see DEVELOPERS.md): installs the
# gpu extra, runs the GPU tests and the GPU benchmarks, and writes figures under $OUT (or data/).
# Meant to finish in well under 8 minutes on one H100/H200.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-data}"
mkdir -p "$OUT"
python3 -m venv .venv-gpu
.venv-gpu/bin/python -m pip install --quiet --upgrade pip
.venv-gpu/bin/python -m pip install --quiet -e '.[test,gpu]'
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu_info.csv"
.venv-gpu/bin/python -m pytest -m gpu -q -rs 2>&1 | tee "$OUT/gpu_tests.log"
.venv-gpu/bin/python benchmarks/interpret.py --backend cupy --repeats 5 --json "$OUT/interpret_gpu.json" \
  | tee "$OUT/interpret_gpu.txt"
.venv-gpu/bin/python benchmarks/verify.py --backend cupy --repeats 1 --no-cached --json "$OUT/verify_gpu.json" \
  | tee "$OUT/verify_gpu.txt"
# Issue 6: measured kernel times beside the proxy (skips itself while mirage_lab.codegen is missing),
# then the proxy/measured rank correlation. Bounded so the whole check stays under 8 minutes.
mkdir -p "$OUT/timings"
timeout 240 .venv-gpu/bin/python benchmarks/kernels.py --max-graphs 4 --repeats 200 --out "$OUT/timings" --json \
  2>&1 | tee "$OUT/kernels_gpu.txt" || echo "benchmarks/kernels.py stopped (exit $?)" | tee -a "$OUT/kernels_gpu.txt"
# the CSV is saved after every row, so a timeout above still leaves the rows it timed: correlate those
for csv in "$OUT"/timings/*.csv; do
  [ -f "$csv" ] && .venv-gpu/bin/python benchmarks/kernels.py --from-csv "$csv" --json > "${csv%.csv}.correlation.txt" || true
done
.venv-gpu/bin/python benchmarks/cost.py --ranking --json "$OUT/cost_ranking.json" > "$OUT/cost_ranking.txt" || true
