#!/usr/bin/env bash
# Error-search experiments of docs/results/error_search/error-search.md: three Fashion-MNIST critical-class targets (dataset
# bias, test-time shift, overfitting) and three biased SVM black boxes on real tables, each searched
# with every method. Skips finished runs, so an interrupted run resumes.
# Usage: bash benchmarks/error_search/error_search_experiments.sh [out_dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-outputs/error_search}
PY=.venv/bin/python
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0}
train() {  # name, overrides...
  local name=$1; shift
  [ -f "$OUT/train_$name/checkpoints/target.pt" ] || \
    $PY train.py "$@" hydra.run.dir="$OUT/train_$name" logger=none
}
search() {  # name, target name, overrides...
  local name=$1 target=$2; shift 2
  [ -f "$OUT/$name/result.json" ] || \
    $PY examine.py "$@" target="$OUT/train_$target/checkpoints/target.pt" hydra.run.dir="$OUT/$name" logger=none
}
for t in bias shift overfit; do
  train fmnist_$t experiment=error_search/train_fmnist_$t
  search fmnist_$t fmnist_$t experiment=error_search/fmnist
done
train table_breast_cancer experiment=error_search/train_table
train table_fair experiment=error_search/train_table dataset.name=fair \
  'dataset.bias={drop_subgroup:{class:affair,attribute:rate_marriage,low:4,high:5}}'
train table_anes96 experiment=error_search/train_table dataset.name=anes96 \
  'dataset.bias={drop_subgroup:{class:dole,attribute:PID,low:0,high:2}}'
search table_breast_cancer table_breast_cancer experiment=error_search/table
search table_fair table_fair experiment=error_search/table audit.pool_size=250
search table_anes96 table_anes96 experiment=error_search/table
$PY -m advaudit.report.leaderboard "$OUT" --metric search/sdr@20 > "$OUT/leaderboard.txt"
echo "done: $OUT"
