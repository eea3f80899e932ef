#!/usr/bin/env bash
# The recipe-level control of the why and where sections: one recipe's files (user_recipes.py --recipes plain
# --seeds 0 ... 11) examined on the same instances, then split at random into two pretend recipes of three files
# each, 20 times (benchmarks/compare/recipe_splits.py). Seeds 0-2 are examined by user_recipes.sh's default-box
# sweep (examine_shift_<examiner>); this examines the others with the same settings.
#
# Usage: bash benchmarks/compare/recipe_control.sh OUT   (after user_recipes.py --out OUT --recipes plain --seeds 3 ... 11)
# Environment: SEEDS="3 4 5 6 7 8 9 10 11" EXAMINER=rl N=40 SPLITS=20 RUN= (a prefix for every command)
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$1
SEEDS=${SEEDS:-"3 4 5 6 7 8 9 10 11"} EXAMINER=${EXAMINER:-rl} N=${N:-40} SPLITS=${SPLITS:-20}
PY=.venv/bin/python RUN=${RUN:-}
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
experiments=""; for seed in $SEEDS; do experiments+="plain_s$seed,"; done
sweep="$OUT/examine_control_$EXAMINER"
if [ "$(ls "$sweep"/*/result.json 2>/dev/null | wc -l)" -lt "$(wc -w <<< "$SEEDS")" ]; then
  $RUN $PY examine.py --config-dir "$OUT/conf" -m "experiment=${experiments%,}" world=transforms examiner="$EXAMINER" \
    audit.n_instances="$N" seed=0 threads=1 logger=none hydra.sweep.dir="$sweep"
fi
$RUN $PY benchmarks/compare/recipe_splits.py "$OUT/examine_shift_$EXAMINER" "$sweep" --label plain \
  --out "$OUT/splits_$EXAMINER" --splits "$SPLITS" --size 3
