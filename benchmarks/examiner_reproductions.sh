#!/usr/bin/env bash
# Reproductions of the adversarial-examiner paper on ShapeWorld (Table 2, Table 3, Sec. 4.4-4.6) at
# the paper's iterations: RL T = 100/300/500 policy updates of q = 32 (3,200/9,600/16,000 queries
# per instance), BO T = 100/300/500 proposals, random search with RL's query budget; every
# examination with SEEDS (default 3) seeds, N = 10 instances (one per class), sun angles fixed.
# CPU-sized targets (ResNet-18 / AlexNet at width 32, 12 epochs, 32 px, m renders per instance).
#
# Usage: bash benchmarks/examiner_reproductions.sh [OUT] [PART...]
#   PART: targets table2 table3 sec44 sec45 sec46 tables (default: all, in that order)
# Resumable: finished targets (target.pt) and examinations (result.json) are skipped, and an
# interrupted examination resumes from its checkpoint. The tables in docs/RESULTS.md come from the
# last part: .venv/bin/python benchmarks/examiner_tables.py OUT
# Full size is far beyond 2 CPU cores in one session (RL: 160,000 queries per examination); the
# RESULTS section says which parts were rerun. Smaller: SEEDS="0" RL_ITERS="100" ... (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-outputs/repro}; shift || true
PARTS=${*:-"targets table2 table3 sec44 sec45 sec46 tables"}
SEEDS=${SEEDS:-"0 1 2"}
Q=32
PY=.venv/bin/python
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's advaudit, also for benchmarks/*.py
budgets() {  # examiner, T... -> "budget report_budgets" in queries (RL and random: T iterations of q)
  local ex=$1; shift; local scale=1; [ "$ex" = bo ] || scale=$Q
  local list="0" last=0
  for t in "$@"; do list="$list,$((t * scale))"; last=$((t * scale)); done
  echo "$last [$list]"
}
train() {  # name, overrides...
  local name=$1; shift
  [ -f "$OUT/train_$name/checkpoints/target.pt" ] || \
    $PY train.py experiment=examiner/train_shapes threads=1 "$@" hydra.run.dir="$OUT/train_$name" logger=none
}
examine() {  # name, examiner, "T..." , overrides...
  local name=$1 ex=$2 ts=$3; shift 3
  read -r budget report <<< "$(budgets "$ex" $ts)"
  for seed in $SEEDS; do
    [ -f "$OUT/${name}_${ex}_s$seed/result.json" ] || $PY examine.py examiner="$ex" seed="$seed" threads=1 \
      audit.budget="$budget" "audit.report_budgets=$report" "$@" hydra.run.dir="$OUT/${name}_${ex}_s$seed" logger=none
  done
}
T=checkpoints/target.pt
for part in $PARTS; do case $part in
targets)
  train resnet18_m10
  train alexnet_m10 model=alexnet model.arch_params.width=32
  for m in 1 2 5; do train resnet18_m$m dataset.m=$m; done
  train resnet18_elev30 'dataset.factors={camera_elevation:[-30,30]}' ;;
table2)
  for arch in resnet18 alexnet; do for ex in rl bo random; do
    examine table2_$arch $ex "100 300 500" experiment=examiner/table2 target=$OUT/train_${arch}_m10/$T
  done; done ;;
table3)
  for m in 1 2 5 10; do for ex in rl bo random; do
    examine table3_m$m $ex "100 200" experiment=examiner/table3 target=$OUT/train_resnet18_m$m/$T
  done; done ;;
sec44)
  for ex in rl bo random; do
    examine sec44 $ex "100 250" experiment=examiner/sec44_elevation target=$OUT/train_resnet18_elev30/$T
  done ;;
sec45)  # the paper's two orders: lights first (declared order) and the camera block first
  examine sec45_lights_first rl "100 500" experiment=examiner/sec45_order 'examiner.order=[0,1,2,3,4,5,6,7,8]' \
    target=$OUT/train_resnet18_m10/$T
  examine sec45_camera_first rl "100 500" experiment=examiner/sec45_order 'examiner.order=[5,6,7,8,0,1,2,3,4]' \
    target=$OUT/train_resnet18_m10/$T ;;
sec46)
  for ex in rl bo; do
    examine sec46 $ex "100 500" experiment=examiner/sec46_strength target=$OUT/train_resnet18_m10/$T
  done ;;
tables)
  $PY benchmarks/examiner_tables.py "$OUT" | tee "$OUT/tables.md" ;;
*) echo "unknown part $part; use targets table2 table3 sec44 sec45 sec46 tables" >&2; exit 2 ;;
esac; done
echo "done: $OUT"
