#!/usr/bin/env bash
# Planted weaknesses answered by the comparison: for each seed, a control and two planted checkpoints
# (the demo's recipe, conf/experiment/demo/train_control.yaml; camera roll trained on [0, 240] as
# demo/train_roll_narrowed, camera elevation trained on [-30, 30]), examined on the same instances with the
# demo's RL examination (experiment=demo/rl) and compared with `python -m advaudit.compare`, one comparison per
# planted checkpoint against the control (primary verdict, where one checkpoint is weaker).
#
# Usage: bash benchmarks/compare/planted_pairs.sh OUT [train|examine|compare|all]
# Sizes (environment): SEEDS="0 1 2" PLANTS="roll_narrowed elevation_narrowed" JOBS=2 (trainings and
#   examinations at once, one core each) TRAIN_EXTRA="" (training overrides, e.g. trainer.max_epochs=6) WHERE=60 (held-out instances of the where checks, the comparison's default) WHERE_RECIPE=50 (the recipe comparison's)
# Resumable: finished trainings, examinations and comparisons are skipped. The table:
#   PYTHONPATH=$PWD .venv/bin/python benchmarks/compare/planted_table.py OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [train|examine|compare|all]" >&2; exit 2; }
OUT=$(realpath -m "$1") WHAT=${2:-all}
SEEDS=${SEEDS:-"0 1 2"} PLANTS=${PLANTS:-"roll_narrowed elevation_narrowed"} JOBS=${JOBS:-2} WHERE=${WHERE:-60}
TRAIN_EXTRA=${TRAIN_EXTRA:-}  # training overrides for every checkpoint, e.g. trainer.max_epochs=6 (a shorter recipe)
PY=${PY:-.venv/bin/python}
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PY OUT TRAIN_EXTRA
plant() {  # the training override of a checkpoint name
  case $1 in
    control) echo "experiment=demo/train_control" ;;
    roll_narrowed) echo "experiment=demo/train_roll_narrowed" ;;
    elevation_narrowed) echo "experiment=demo/train_control dataset.factors={camera_elevation:[-30,30]}" ;;
    *) echo "unknown checkpoint $1" >&2; exit 2 ;;
  esac
}
train_one() {  # seed name
  local dir="$OUT/s$1/$2"
  [ -f "$dir/checkpoints/target.pt" ] && return 0
  # shellcheck disable=SC2046
  $PY train.py $(plant "$2") $TRAIN_EXTRA seed="$1" threads=1 logger=none hydra.run.dir="$dir" \
    > "$OUT/logs/train_s$1_$2.log" 2>&1
}
examine_one() {  # seed name
  local dir="$OUT/s$1/examine/$2"
  [ -f "$dir/result.json" ] && return 0
  $PY examine.py experiment=demo/rl seed="$1" threads=1 logger=none target="$OUT/s$1/$2/checkpoints/target.pt" \
    hydra.run.dir="$dir" > "$OUT/logs/examine_s$1_$2.log" 2>&1
}
export -f plant train_one examine_one
mkdir -p "$OUT/logs"
jobs_of() { for s in $SEEDS; do for n in control $PLANTS; do echo "$s $n"; done; done; }
if [ "$WHAT" = train ] || [ "$WHAT" = all ]; then
  jobs_of | xargs -P "$JOBS" -L 1 bash -c 'train_one "$0" "$1" || echo "training $0 $1 failed: $OUT/logs"'
fi
if [ "$WHAT" = examine ] || [ "$WHAT" = all ]; then
  jobs_of | xargs -P "$JOBS" -L 1 bash -c 'examine_one "$0" "$1" || echo "examination $0 $1 failed: $OUT/logs"'
fi
if [ "$WHAT" = compare ] || [ "$WHAT" = all ]; then
  for s in $SEEDS; do for p in $PLANTS; do
    out="$OUT/compare_${p}_s$s"
    [ -f "$out/comparison.json" ] || $PY -m advaudit.compare "$OUT/s$s/examine/control" "$OUT/s$s/examine/$p" \
      --out "$out" --where-instances "$WHERE" > "$OUT/logs/compare_${p}_s$s.log" 2>&1 || echo "comparison $p s$s failed"
  done; done
  # each planted recipe against the control over the seeds (unnamed targets: named by --recipe); the world's
  # 100 held-out test scenes split in two, the first half proposes the fifth, the second half confirms it
  for p in $PLANTS; do
    runs=(); for s in $SEEDS; do runs+=("$OUT/s$s/examine/control" "$OUT/s$s/examine/$p"); done
    out="$OUT/compare_${p}_recipe"
    [ ${#runs[@]} -ge 4 ] && { [ -f "$out/comparison.json" ] || $PY -m advaudit.compare "${runs[@]}" --out "$out" \
      --recipe control='*/control/*' --recipe "$p=*/$p/*" --where-instances "${WHERE_RECIPE:-50}" \
      > "$OUT/logs/compare_${p}_recipe.log" 2>&1 || echo "recipe comparison $p failed"; }
  done
fi
