#!/usr/bin/env bash
# One multirun over three checkpoints (plus one bad path) x two examiners x
# three seeds finishes every good job, lists the failures, exits non-zero, and leaves a comparison
# (intervals, paired tests, replay matrix, plots) in <sweep>/comparison/. CPU-sized: 16-px
# ShapeWorld, a small CNN whose three epochs are the three checkpoints (callbacks.model_checkpoint).
#   bash benchmarks/compare/compare_sweep_demo.sh [OUT=outputs/demo_compare] [LAUNCHER=parallel]
set -u
cd "$(dirname "$0")/../.."
OUT=$(realpath -m "${OUT:-outputs/demo_compare}")
LAUNCHER=${LAUNCHER:-parallel}
PY=${PY:-.venv/bin/python}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 WANDB_MODE=${WANDB_MODE:-offline} WANDB_SILENT=true
WORLD=("world.image_size=16" "world.instances_per_class={train:20,val:4,test:4}")

# 1. one CNN on 16-px ShapeWorld; every epoch kept as an auditable target (checkpoints/epochs/epoch_NN.pt)
if [ ! -f "$OUT/train/checkpoints/target.pt" ]; then
  $PY train.py model=cnn dataset=shapes dataset.image_size=16 'dataset.instances_per_class={train:20,val:4,test:4}' \
    dataset.m=6 trainer.max_epochs=3 seed=1 callbacks.model_checkpoint.save_top_k=-1 \
    hydra.run.dir="$OUT/train" || exit 1
fi

# 2. the checkpoints to compare: the three epochs and one path that does not exist
ls -d "$OUT"/train/checkpoints/epochs/epoch_*.pt > "$OUT/targets.txt"
echo "$OUT/train/checkpoints/epochs/epoch_09.pt" >> "$OUT/targets.txt"

# 3. one command: 4 checkpoints x 2 examiners x 3 seeds = 24 jobs (6 fail on the bad path)
rm -rf "$OUT/sweep"
time $PY examine.py -m hydra/launcher="$LAUNCHER" audit=worst_case world=shapes "${WORLD[@]}" \
  examiner=random,rl audit.budget=128 'audit.report_budgets=[32,128]' audit.selection=random \
  audit.n_instances=20 seed=0,1,2 target=list:"$OUT/targets.txt" hydra.sweep.dir="$OUT/sweep"
echo "multirun exit code: $? (2: only user errors, listed in $OUT/sweep/failures.json)"
ls "$OUT/sweep/comparison"
