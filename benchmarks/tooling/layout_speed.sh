#!/usr/bin/env bash
# Is a code reorganisation free? The same examination and comparison timed with two checkouts, interleaved.
#
# Usage: bash benchmarks/tooling/layout_speed.sh BASE_CHECKOUT OUT [ROUNDS] [RUN_TO_COMPARE]
#   BASE_CHECKOUT: e.g. `git worktree add --detach ../base <commit>`; this checkout is the other side.
#   RUN_TO_COMPARE: a sweep folder of examinations to compare (default outputs/rotation_pair/examine_rl_s0).
# Each round runs the base, then this checkout: a worst-case RL examination of the demo's control checkpoint
# (20 instances x 256 queries) and `python -m advaudit.compare` on the sweep (60 held-out where instances);
# prints one line per run into OUT/times.txt. Run it alone on the machine (one torch thread per process).
set -u
HERE=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 BASE_CHECKOUT OUT [ROUNDS] [RUN_TO_COMPARE]" >&2; exit 2; }
BASE=$(realpath "$1") OUT=$(realpath -m "$2") ROUNDS=${3:-2} RUNS=$(realpath "${4:-$HERE/outputs/rotation_pair/examine_rl_s0}")
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 WANDB_MODE=disabled ADVAUDIT_PROGRESS=0
mkdir -p "$OUT"
for round in $(seq "$ROUNDS"); do for code in base head; do
  dir=$HERE; [ $code = base ] && dir=$BASE
  cd "$dir" || exit 2
  s=$(date +%s.%N)
  PYTHONPATH=$dir "$HERE/.venv/bin/python" examine.py audit=worst_case examiner=rl audit.n_instances=20 audit.budget=256 \
    target="$HERE/advaudit/demo/checkpoints/control.pt" seed=0 threads=1 logger=none \
    hydra.run.dir="$OUT/${code}_r$round" > "$OUT/${code}_r$round.log" 2>&1
  m=$(date +%s.%N)
  PYTHONPATH=$dir "$HERE/.venv/bin/python" -m advaudit.compare "$RUNS" --out "$OUT/cmp_${code}_r$round" \
    --where-instances 60 > "$OUT/cmp_${code}_r$round.log" 2>&1
  e=$(date +%s.%N)
  echo "$round $code examine $(echo "$m - $s" | bc) compare $(echo "$e - $m" | bc)" | tee -a "$OUT/times.txt"
done; done
