#!/usr/bin/env bash
# Fault-test experiments of docs/results/fault_tests/fault-tests.md on Fashion-MNIST: a standard CNN, the patch-fault CNN
# (RQ1), a PGD-trained CNN (RQ3) and the conditional generator; then pullover -> coat tests on the
# standard target (scored on the other two) and on the patch target (fixed and annealed budget).
# Skips finished runs; an interrupted audit resumes from its saved chunks.
# Usage: bash benchmarks/fault_tests/fault_test_experiments.sh [out_dir]   (about 1.5 h on 2 CPU cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-outputs/faults}
PY=.venv/bin/python
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0}
train() {  # name, overrides...
  local name=$1; shift
  [ -f "$OUT/$name/result.json" ] || \
    $PY train.py "$@" threads=1 logger=none callbacks=none hydra.run.dir="$OUT/$name"
}
audit() {  # name, target name, overrides...
  local name=$1 target=$2; shift 2
  [ -f "$OUT/$name/result.json" ] || $PY examine.py experiment=faults/fmnist threads=1 \
    target="$OUT/$target/checkpoints/target.pt" generator="$OUT/generator_fmnist/checkpoints/generator.pt" \
    "$@" logger=none hydra.run.dir="$OUT/$name"
}
# the classifiers are independent: train two at a time, one thread each
train target_fmnist dataset=fashion_mnist model=cnn trainer.max_epochs=5 &
train train_fmnist_patch experiment=faults/train_fmnist_patch
wait
train train_fmnist_robust experiment=faults/train_fmnist_robust &
train generator_fmnist model=generator dataset=fashion_mnist dataset.batch_size=64 trainer.max_epochs=3 \
  model.quality_target="$OUT/target_fmnist/checkpoints/target.pt"
wait
$PY benchmarks/fault_tests/verify_injected_fault.py "$OUT/train_fmnist_patch/checkpoints/target.pt" --kind patch \
  --feature-class coat | tee "$OUT/verify_patch_fault.txt"
TRANSFER="audit.transfer_targets=[$OUT/train_fmnist_robust/checkpoints/target.pt,$OUT/train_fmnist_patch/checkpoints/target.pt]"
audit fmnist_standard target_fmnist "$TRANSFER"
audit fmnist_standard_advaudit_pgd target_fmnist "$TRANSFER" audit.pixel_engine=advaudit
audit fmnist_patch train_fmnist_patch
audit fmnist_patch_annealed train_fmnist_patch audit.budget=annealed
echo "done: $OUT"
