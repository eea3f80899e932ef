#!/usr/bin/env bash
# Reproductions of the adversarial-examiner paper on ShapeWorld (Table 2, Table 3, Sec. 4.4-4.6) at
# the paper's iterations: RL T = 100/300/500 policy updates of q = 32 (3,200/9,600/16,000 queries
# per instance) at the paper's lr 0.001, BO T = 100/300/500 proposals, random search; every
# examination with SEEDS (default 3) seeds, N = 10 instances (one per class), sun angles fixed.
#
# Targets (CPU-sized, 32 px):
# - Table 2, Sec. 4.5, 4.6: strong targets trained on fresh random conditions every epoch
#   (experiment=examiner/train_fresh, 30 epochs): ResNet-18 at width 16, AlexNet at width 32.
# - Table 3: the paper's m-limited training (experiment=examiner/train_shapes, m = 1, 2, 5, 10
#   renders per instance, fixed), ResNet-18 at width M_WIDTH (default 16), 12 epochs.
# - Sec. 4.4: the fresh recipe with camera elevation restricted to [-30, 30] in training.
# Random search: its E_T is the mean true-class probability of uniformly random conditions at every
# T (its proposals do not depend on T), so it runs RANDOM_T (default: 100) iterations, which gives
# its E_T row and its worst case up to that budget.
#
# Usage: bash benchmarks/worst_case/examiner_reproductions.sh [OUT] [PART...]
#   PART: targets table2 table3 sec44 sec45 sec46 tables (default: all, in that order)
# Sizes (environment): SEEDS="0 1 2" RL_T="100 300 500" BO_T="100 300 500" RANDOM_T="100"
#   T3_T="100 200" T3_EXAMINERS="rl bo random" M_WIDTH=16 (Table 3) EXAMINERS2="rl bo random"
#   ARCHS="resnet18 alexnet" (Table 2); RUN="" prefixes every train/examine command (e.g. RUN="flock
#   /tmp/cpu.lock nice -n 5" to share a machine with other jobs).
# Resumable: finished targets (target.pt) and examinations (result.json) are skipped, an
# interrupted examination resumes from its checkpoint, and one finished at a smaller T is extended
# (RL_T="100 300 500" after RL_T="100 300" runs only the 200 updates from 300 to 500). A target dir
# may be a symlink to a target trained elsewhere with the same recipe (e.g. the planted-weakness
# control). The tables in
# docs/results/worst_case/worst-case-paper.md come from the last part: .venv/bin/python benchmarks/worst_case/examiner_tables.py OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-outputs/repro}; shift || true
PARTS=${*:-"targets table2 table3 sec44 sec45 sec46 tables"}
SEEDS=${SEEDS:-"0 1 2"} RL_T=${RL_T:-"100 300 500"} BO_T=${BO_T:-"100 300 500"} RANDOM_T=${RANDOM_T:-"100"}
T3_T=${T3_T:-"100 200"} T3_EXAMINERS=${T3_EXAMINERS:-"rl bo random"} RUN=${RUN:-} M_WIDTH=${M_WIDTH:-16} EXAMINERS2=${EXAMINERS2:-"rl bo random"} ARCHS=${ARCHS:-"resnet18 alexnet"}
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
train() {  # name, experiment, overrides...
  local name=$1 experiment=$2; shift 2
  [ -f "$OUT/train_$name/checkpoints/target.pt" ] || \
    $RUN $PY train.py experiment="examiner/$experiment" threads=1 "$@" hydra.run.dir="$OUT/train_$name" logger=none
}
iterations() {  # examiner -> its T list
  case $1 in rl) echo "$RL_T";; bo) echo "$BO_T";; *) echo "$RANDOM_T";; esac
}
finished() {  # run dir, budget in queries: true when its result.json covers that budget
  [ -f "$1/result.json" ] && $PY -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(r["queries_per_instance"] < int(sys.argv[2]))' "$1/result.json" "$2"
}
examine() {  # name, examiner, "T..." , overrides... (a finished run with a smaller budget is extended)
  local name=$1 ex=$2 ts=$3; shift 3
  read -r budget report <<< "$(budgets "$ex" $ts)"
  for seed in $SEEDS; do
    paper=(); [ "$ex" = rl ] && paper=(examiner.q=32 examiner.lr=0.001)   # the paper's RL, not advaudit's default
    finished "$OUT/${name}_${ex}_s$seed" "$budget" || $RUN $PY examine.py examiner="$ex" "${paper[@]}" seed="$seed" threads=1 \
      audit.budget="$budget" "audit.report_budgets=$report" "$@" hydra.run.dir="$OUT/${name}_${ex}_s$seed" logger=none
  done
}
T=checkpoints/target.pt
for part in $PARTS; do case $part in
targets)  # TARGETS="..." trains only those
  for name in ${TARGETS:-resnet18_fresh alexnet_fresh resnet18_m1 resnet18_m2 resnet18_m5 resnet18_m10 resnet18_elev30}; do
    case $name in
      resnet18_fresh) train resnet18_fresh train_fresh ;;
      alexnet_fresh) train alexnet_fresh train_fresh model=alexnet model.arch.width=32 ;;
      resnet18_m*) train "$name" train_shapes dataset.m="${name#resnet18_m}" model.arch.width=$M_WIDTH ;;
      resnet18_elev30) train resnet18_elev30 train_fresh 'dataset.factors={camera_elevation:[-30,30]}' ;;
      *) echo "TARGETS: unknown target $name" >&2; exit 2 ;;
    esac
  done ;;
table2)
  for arch in $ARCHS; do for ex in $EXAMINERS2; do
    examine table2_$arch $ex "$(iterations $ex)" experiment=examiner/table2 target=$OUT/train_${arch}_fresh/$T
  done; done ;;
table3)
  for m in 1 2 5 10; do for ex in $T3_EXAMINERS; do
    t=$T3_T; [ $ex = random ] && t=${RANDOM_T%% *}
    examine table3_m$m $ex "$t" experiment=examiner/table3 target=$OUT/train_resnet18_m$m/$T
  done; done ;;
sec44)
  for ex in rl bo random; do
    examine sec44 $ex "100 250" experiment=examiner/sec44_elevation target=$OUT/train_resnet18_elev30/$T
  done ;;
sec45)  # the paper's two orders: lights first (the declared order: the same examination as Table 2's
  # RL runs, which are linked rather than rerun) and the camera block first
  for seed in $SEEDS; do
    [ -e "$OUT/sec45_lights_first_rl_s$seed" ] || [ ! -d "$OUT/table2_resnet18_rl_s$seed" ] || \
      ln -s "table2_resnet18_rl_s$seed" "$OUT/sec45_lights_first_rl_s$seed"
  done
  examine sec45_lights_first rl "$RL_T" experiment=examiner/sec45_order target=$OUT/train_resnet18_fresh/$T
  examine sec45_camera_first rl "$RL_T" experiment=examiner/sec45_order 'examiner.order=[5,6,7,8,0,1,2,3,4]' \
    target=$OUT/train_resnet18_fresh/$T ;;
sec46)  # random search's proposals do not depend on the mode: Table 2's random runs are linked as its row
  for seed in $SEEDS; do
    [ -e "$OUT/sec46_random_s$seed" ] || [ ! -d "$OUT/table2_resnet18_random_s$seed" ] || \
      ln -s "table2_resnet18_random_s$seed" "$OUT/sec46_random_s$seed"
  done
  for ex in rl bo; do
    examine sec46 $ex "$(iterations $ex)" experiment=examiner/sec46_strength target=$OUT/train_resnet18_fresh/$T
  done ;;
tables)
  $PY benchmarks/worst_case/examiner_tables.py "$OUT" | tee "$OUT/tables.md" ;;
*) echo "unknown part $part; use targets table2 table3 sec44 sec45 sec46 tables" >&2; exit 2 ;;
esac; done
echo "done: $OUT"
