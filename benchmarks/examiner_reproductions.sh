#!/usr/bin/env bash
# Reduced-size reproductions of the adversarial-examiner paper (Table 2, Table 3, Sec. 4.4-4.6)
# on ShapeWorld, CPU-sized (ResNet-18 / AlexNet at width 32, 12 epochs, 32 px, N = 10 instances).
# Usage: bash benchmarks/examiner_reproductions.sh [out_dir]   (about 45 min on 2 CPU cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-outputs/repro}
PY=.venv/bin/python
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=0
train() {  # name, overrides...
  local name=$1; shift
  [ -f "$OUT/train_$name/checkpoints/target.pt" ] || \
    $PY train.py experiment=examiner/train_shapes "$@" hydra.run.dir="$OUT/train_$name" logger=none
}
examine() {  # name, overrides...
  local name=$1; shift
  [ -f "$OUT/$name/result.json" ] || $PY examine.py "$@" hydra.run.dir="$OUT/$name" logger=none
}
train resnet18_m10
train alexnet_m10 model=alexnet model.arch_params.width=32
for m in 1 2 5; do train resnet18_m$m dataset.m=$m; done
train resnet18_elev30 'dataset.factors={camera_elevation:[-30,30]}'
T=checkpoints/target.pt
for arch in resnet18 alexnet; do for ex in rl bo; do
  examine table2_${arch}_$ex experiment=examiner/table2 examiner=$ex target=$OUT/train_${arch}_m10/$T
done; done
for m in 1 2 5 10; do for ex in rl bo; do
  examine table3_m${m}_$ex experiment=examiner/table3 examiner=$ex target=$OUT/train_resnet18_m$m/$T
done; done
for ex in rl bo random; do
  examine sec44_$ex experiment=examiner/sec44_elevation examiner=$ex target=$OUT/train_resnet18_elev30/$T
done
examine sec45_order_a experiment=examiner/sec45_order 'examiner.order=[0,1,2,3,4,5,6,7,8]' target=$OUT/train_resnet18_m10/$T
examine sec45_order_b experiment=examiner/sec45_order 'examiner.order=[8,7,6,5,4,3,2,1,0]' target=$OUT/train_resnet18_m10/$T
for ex in rl bo; do
  examine sec46_$ex experiment=examiner/sec46_strength examiner=$ex target=$OUT/train_resnet18_m10/$T
done
# efficiency reference: dense random search with 20x the budget on the same instances as table2
examine dense_random experiment=examiner/table2 examiner=random audit.budget=10000 \
  'audit.report_budgets=[0,100,500,2000,10000]' target=$OUT/train_resnet18_m10/$T
$PY -m advaudit.report.leaderboard "$OUT" --metric examine/true_prob --ascending > "$OUT/leaderboard.txt"
echo "done: $OUT"
