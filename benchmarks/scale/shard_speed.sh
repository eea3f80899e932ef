#!/usr/bin/env bash
# One examination as K = 1 job against K = 2 shards in parallel (joblib launcher), alternated
# K=1, K=2, K=2, K=1, wall time of the whole multirun (examination, reports, merge, comparison).
#   bash benchmarks/scale/shard_speed.sh TARGET.pt OUT_DIR [EXAMINER]
# K = 1 runs with n_jobs=1 (its job gets every core's torch thread), K = 2 with n_jobs=2 (one each).
set -euo pipefail
target=$1; out=$2; examiner=${3:-random}
py=${PYTHON:-.venv/bin/python}
for k in 1 2 2 1; do
  dir="$out/k$k-$RANDOM"
  if [ "$k" -eq 1 ]; then args="hydra.launcher.n_jobs=1 audit.shards=1"
  else args="hydra.launcher.n_jobs=2 audit.shards=2 audit.shard=0,1"; fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  start=$(date +%s.%N)
  ADVAUDIT_PROGRESS=0 $py examine.py -m hydra/launcher=parallel $args target="$target" audit=worst_case \
    examiner="$examiner" audit.n_instances=40 logger=none seed=0 hydra.sweep.dir="$dir" > "$dir.log" 2>&1
  end=$(date +%s.%N)
  result=$(ls "$dir"/merged/*/result.json 2>/dev/null | head -1 || true); [ -n "$result" ] || result="$dir/0/result.json"
  $py -c "import json; r=json.load(open('$result')); print('K=$k', 'wall', round($end-$start,1), 's; E_T', round(r['examine/E_T'],6), 'worst', round(r['examine/worst'],6), 'load $load', '$result')"
done
