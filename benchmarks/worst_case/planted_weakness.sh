#!/usr/bin/env bash
# Planted-weakness experiment: does each examiner concentrate its late proposals
# on a region of S that the target never saw in training, more than random search does and more
# than on a control target trained on the full ranges?
#
# Usage: bash benchmarks/worst_case/planted_weakness.sh OUT FACTOR LOW HIGH
#   trains OUT/train_control (full ranges; shared by every factor run into the same OUT) and
#   OUT/train_weak_FACTOR (FACTOR restricted to [LOW, HIGH] in training: the weak region is the rest
#   of its range), examines both with each examiner and seed, and writes
#   OUT/concentration_FACTOR/concentration.{md,json} (late proposals outside [LOW, HIGH]).
# Sizes (environment): EXAMINERS="rl bo random" SEEDS="0 1" RL_BUDGET=3200 (queries: 100 RL
#   iterations of 32) RL_LR=0.01 (at 100 iterations the paper's 0.001 barely moves the policy:
#   benchmarks/worst_case/rl_concentration_synthetic.py, docs/results/worst_case/worst-case-concentration.md) BO_BUDGET=512 RANDOM_BUDGET=640 LAST=64 (late window, queries; random search's
#   share needs only enough late proposals, not a long run).
# Resumable: finished targets and examinations are skipped; an interrupted examination resumes.
# The report covers every finished examination of the two targets in OUT, so a second call with
# e.g. EXAMINERS="tpe cmaes" SEEDS=0 adds those rows to the same table.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 4 ] || { echo "usage: $0 OUT FACTOR LOW HIGH" >&2; exit 2; }
OUT=$1 FACTOR=$2 LOW=$3 HIGH=$4
EXAMINERS=${EXAMINERS:-"rl bo random"} SEEDS=${SEEDS:-"0 1"}
RL_BUDGET=${RL_BUDGET:-3200} RL_LR=${RL_LR:-0.01} BO_BUDGET=${BO_BUDGET:-512} RANDOM_BUDGET=${RANDOM_BUDGET:-640} LAST=${LAST:-64}
PY=.venv/bin/python
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's advaudit, also for benchmarks/*.py
train() {  # name, overrides...
  local name=$1; shift
  [ -f "$OUT/train_$name/checkpoints/target.pt" ] || \
    $PY train.py experiment=examiner/train_fresh threads=1 "$@" hydra.run.dir="$OUT/train_$name" logger=none
}
budget() { case $1 in rl) echo "$RL_BUDGET";; bo) echo "$BO_BUDGET";; *) echo "$RANDOM_BUDGET";; esac; }
train control
train "weak_$FACTOR" "dataset.factors={$FACTOR:[$LOW,$HIGH]}"
runs=()
for target in control "weak_$FACTOR"; do for ex in $EXAMINERS; do for seed in $SEEDS; do
  dir="$OUT/examine_${target}_${ex}_s$seed"
  b=$(budget "$ex") options=()
  [ "$ex" = rl ] && options=("examiner.lr=$RL_LR" examiner.q=32)
  [ -f "$dir/result.json" ] || $PY examine.py experiment=examiner/planted_weakness examiner="$ex" "${options[@]}" seed="$seed" threads=1 \
    audit.budget="$b" "audit.report_budgets=[0,$((b / 2)),$b]" \
    target="$OUT/train_$target/checkpoints/target.pt" hydra.run.dir="$dir" logger=none
done; done; done
# every finished examination of these two targets, also those of earlier calls with other
# EXAMINERS or SEEDS (e.g. TPE and CMA-ES with one seed next to RL/BO/random with three)
for dir in "$OUT"/examine_control_* "$OUT/examine_weak_${FACTOR}"_*; do
  [ -f "$dir/result.json" ] && runs+=("$dir")
done
$PY -m advaudit.report.concentration "${runs[@]}" --factor "$FACTOR" --low "$LOW" --high "$HIGH" --outside \
  --last "$LAST" --control train_control --out "$OUT/concentration_$FACTOR"
