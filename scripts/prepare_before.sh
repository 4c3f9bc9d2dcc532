#!/usr/bin/env bash
# Export an older commit's mirage_lab into an ignored folder, for "before and after in one run" (issue 36):
# benchmarks/kernels.py --before-tree FOLDER (and scripts/gpu_check.sh, which passes it when FOLDER exists) times
# the fused graphs and the search's best with that commit's generator beside today's. Run it in the checkout
# (the device copy has no git history), then let the device tool carry FOLDER.
#
#   bash scripts/prepare_before.sh [COMMIT] [FOLDER]     # default: 8fba1b8 (before issue 36) into .before
set -euo pipefail
cd "$(dirname "$0")/.."
COMMIT="${1:-8fba1b8}"
DIR="${2:-.before}"
git rev-parse --verify --quiet "$COMMIT^{commit}" > /dev/null || {
  echo "prepare_before.sh: $COMMIT is no commit of this repository; name one (git log --oneline)" >&2; exit 2; }
rm -rf "$DIR/mirage_lab"
mkdir -p "$DIR"
git archive "$COMMIT" mirage_lab | tar -x -C "$DIR"
git rev-parse "$COMMIT" > "$DIR/COMMIT"
echo "exported mirage_lab of $(cat "$DIR/COMMIT") into $DIR"
