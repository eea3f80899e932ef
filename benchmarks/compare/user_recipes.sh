#!/usr/bin/env bash
# A user's own recipes compared, and why one is weaker: the dense-head CNN trained outside advaudit with no
# augmentation (plain), with colour jitter (jitter: brightness, contrast and gamma together) and with shifts and
# scaling (shift) (benchmarks/compare/user_recipes.py), imported by target blocks, every file examined on the same
# instances (one examination seed), then compared with `python -m advaudit.compare`: per training seed (one file
# each) and as recipes over their files (the why section attributes the gap to factors by intervention).
#
# Usage: bash benchmarks/compare/user_recipes.sh OUT   (after user_recipes.py --out OUT --seeds 0 1 2)
# Environment: SEEDS="0 1 2" (training seeds) EXAMINERS="rl bo" N=40 (instances) CASES="jitter shift"
#   (jitter_photometric: the jitter recipe with only the photometric factors searched)
# The jitter case widens the photometric factors to the jitter's own range (in the default box, brightness +-0.1,
# contrast 0.8-1.2, gamma 0.8-1.25, colour jitter changes accuracy under random conditions by about 1 point:
# docs/results/compare/comparing.md) and names the packaged reference judge explicitly (outside its training box the
# world offers none of its own). Resumable: finished examinations are skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$1
SEEDS=${SEEDS:-"0 1 2"} EXAMINERS=${EXAMINERS:-"rl bo"} N=${N:-40} CASES=${CASES:-"jitter shift"}
PY=.venv/bin/python RUN=${RUN:-}   # RUN: a prefix for every command (e.g. nice -n 5)
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the target blocks name tests.models.user_models.DenseHeadCNN
JUDGE=$PWD/advaudit/worlds/transforms_reference_judge.pt
PHOTOMETRIC='brightness:[-0.25,0.25],contrast:[0.6,1.4],gamma:[0.7,1.5]'
for case in $CASES; do
  recipe=$case box=()
  case $case in
    jitter) box=("world.factors={$PHOTOMETRIC}" "audit.validity.reference=$JUDGE");;
    jitter_photometric)   # only the photometric factors searched: a worst case that can only be photometric
      recipe=jitter
      box=("world.factors={rotation:0,translate_x:0,translate_y:0,scale:1,shear:0,blur:0,$PHOTOMETRIC}"
           "audit.validity.reference=$JUDGE");;
  esac
  experiments=""; for seed in $SEEDS; do experiments+="plain_s$seed,${recipe}_s$seed,"; done
  for ex in $EXAMINERS; do
    sweep="$OUT/examine_${case}_${ex}"
    if [ "$(ls "$sweep"/*/result.json 2>/dev/null | wc -l)" -lt "$(( 2 * $(wc -w <<< "$SEEDS") ))" ]; then
      $RUN $PY examine.py --config-dir "$OUT/conf" -m "experiment=${experiments%,}" world=transforms examiner="$ex" \
        audit.n_instances="$N" seed=0 threads=1 logger=none hydra.sweep.dir="$sweep" "${box[@]}"
    fi
    # the recipes over their files (three training seeds each), then each training seed's pair of files
    $RUN $PY -m advaudit.compare "$sweep" --out "$OUT/compare_${case}_${ex}_recipes"
    i=0; for seed in $SEEDS; do     # the sweep's jobs run plain_s<seed>, <case>_s<seed> in turn
      $RUN $PY -m advaudit.compare "$sweep/$((2 * i))" "$sweep/$((2 * i + 1))" --out "$OUT/compare_${case}_${ex}_s$seed"
      i=$((i + 1))
    done
  done
done
