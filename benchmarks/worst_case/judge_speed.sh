#!/usr/bin/env bash
# Queries/s of the worst-case audit without the reference judge, with it judging every query (eager) and
# with it judging only what can change a result (lazy, the default), alternated, per examiner.
#   bash benchmarks/worst_case/judge_speed.sh TARGET.pt OUT_DIR [REPEATS] [EXAMINERS]
# Prints one line per run: examiner, judge, queries/s (result.json's queries_per_second: the examination
# loop only), seconds, load average before the run.
set -euo pipefail
target=$1; out=$2; repeats=${3:-2}; examiners=${4:-"random rl"}
py=${PYTHON:-.venv/bin/python}
for r in $(seq 1 "$repeats"); do
  for ex in $examiners; do
    order="none eager lazy"; [ $((r % 2)) -eq 0 ] && order="lazy eager none"
    for judge in $order; do
      case $judge in
        none) args="audit.validity.reference=null" ;;
        eager) args="audit.validity.lazy=false" ;;
        lazy) args="audit.validity.lazy=true" ;;
      esac
      dir="$out/$ex-$judge-$r"; rm -rf "$dir"
      load=$(cut -d' ' -f1 /proc/loadavg)
      ADVAUDIT_PROGRESS=0 OMP_NUM_THREADS=1 $py examine.py target="$target" audit=worst_case examiner="$ex" \
        audit.n_instances=40 threads=1 logger=none seed=0 $args hydra.run.dir="$dir" > "$dir.log" 2>&1
      $py -c "import json,sys; r=json.load(open('$dir/result.json')); print('$ex', '$judge', round(r['queries_per_second'],1), r['seconds_examination'], 'load $load')"
    done
  done
done
