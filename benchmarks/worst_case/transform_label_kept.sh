#!/usr/bin/env bash
# TransformWorld's default box measured with an independent judge (docs/results/worst_case/transform-world.md, first table):
# trains the independent judge (a SmallCNN, not the packaged judge's ResNet-18, seed 21, the default box's
# transforms as augmentation, a wall-clock budget), examines the rotation pair's plain checkpoint at the
# default settings (packaged judge in the check) with RL seeds 0-2 and BO seed 0, and judges every failure.
#   bash benchmarks/worst_case/transform_label_kept.sh CONF_DIR OUT_DIR [MINUTES] [EXPERIMENT]
# CONF_DIR holds experiment/<EXPERIMENT>.yaml, a target block (benchmarks/compare/rotation_pair.py writes them;
# default EXPERIMENT plain_s0). MINUTES: the judge's training budget (default 50; 0.896 on box views on an idle core).
set -euo pipefail
conf=$1; out=$2; minutes=${3:-50}; experiment=${4:-plain_s0}
py=${PYTHON:-.venv/bin/python}
export OMP_NUM_THREADS=1 PYTHONPATH=${PYTHONPATH:-.}
mkdir -p "$out/ex"
[ -f "$out/judge.pt" ] || nice -n 5 $py benchmarks/worst_case/transform_judge.py --out "$out/judge.pt" --seed 21 \
  --epochs 8 --minutes "$minutes" --lr 0.003 --arch advaudit.models.nets.SmallCNN \
  --arch-params '{channels: [64, 128], hidden: 256}' > "$out/judge.log" 2>&1
for run in rl:0 rl:1 rl:2 bo:0; do
  ex=${run%%:*}; seed=${run##*:}; dir="$out/ex/${ex}_s$seed"
  [ -f "$dir/result.json" ] || ADVAUDIT_PROGRESS=0 nice -n 5 $py examine.py --config-dir "$conf" experiment="$experiment" \
    world=transforms examiner="$ex" audit.n_instances=40 seed="$seed" threads=1 logger=none hydra.run.dir="$dir" \
    > "$dir.log" 2>&1
done
$py benchmarks/worst_case/transform_label_kept.py --judge "$out/judge.pt" --threshold 0.5 --test-views 10000 \
  --json "$out/label_kept.json" "$out"/ex/*_s*/
