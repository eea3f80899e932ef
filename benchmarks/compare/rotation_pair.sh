#!/usr/bin/env bash
# A user's own recipe compared: the same CNN trained outside advaudit with and without random rotations
# (benchmarks/compare/rotation_pair.py), imported by target blocks, examined in world=transforms on the same instances,
# then compared with `python -m advaudit.compare` (primary verdict, where one checkpoint is weaker).
#
# Usage: bash benchmarks/compare/rotation_pair.sh OUT   (after benchmarks/compare/rotation_pair.py --out OUT --seeds ...)
# Sizes (environment): SEEDS="0 1 2" EXAMINERS="rl bo" N=40 (instances, stratified) WHERE=300 (held-out
#   instances of the checks of where one checkpoint is weaker)
# Resumable: finished examinations are skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$1
SEEDS=${SEEDS:-"0 1 2"} EXAMINERS=${EXAMINERS:-"rl bo"} N=${N:-40}
PY=.venv/bin/python RUN=${RUN:-}   # RUN: a prefix for every command (e.g. nice -n 5)
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the target blocks name tests.models.user_models.SmallNet
for seed in $SEEDS; do for ex in $EXAMINERS; do
  sweep="$OUT/examine_${ex}_s$seed"
  if [ ! -f "$sweep/1/result.json" ]; then
    $RUN $PY examine.py --config-dir "$OUT/conf" -m "experiment=plain_s$seed,rot_s$seed" world=transforms examiner="$ex" \
      audit.n_instances="$N" seed="$seed" threads=1 logger=none hydra.sweep.dir="$sweep"
  fi
  $RUN $PY -m advaudit.compare "$sweep" --out "$OUT/compare_${ex}_s$seed" --where-instances "${WHERE:-300}"
done; done
# the recipes over their training seeds in one comparison: the fifth every seed agrees on, confirmed per seed
for ex in $EXAMINERS; do
  sweeps=(); for seed in $SEEDS; do sweeps+=("$OUT/examine_${ex}_s$seed"); done
  [ ${#sweeps[@]} -ge 2 ] && $RUN $PY -m advaudit.compare "${sweeps[@]}" --out "$OUT/compare_${ex}_recipe" --where-instances "${WHERE:-300}"
done
