#!/usr/bin/env bash
# End-to-end worst-case audit throughput (examine.py's own queries/s: render, validity judging,
# target forward, examiner, records) of this checkout against an older revision, interleaved in one
# run on the same target and the same examination, so both see the same machine load.
#
# Usage: bash benchmarks/scale/audit_speed_revisions.sh TARGET.pt [REV] [REPEATS]
#   REV: the revision to compare with (default e5a459b: the revision before E_T and
#   label-preservation judging); REPEATS (default 2) alternating old/new runs each.
# Env: EXAMINERS="rl random" BUDGET=640 (queries per instance; RL and random: 20 iterations of 32);
# PY: the interpreter (default: this checkout's .venv/bin/python).
# The examination: ShapeWorld 32 px, 10 instances (best per class), sun angles fixed, the same box on
# both sides whatever each revision's default (Table 1 with camera distance [1.5, 4] m), one torch
# thread. Each side keeps its own validity size check.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET=$(realpath "$1"); REV=${2:-e5a459b}; REPEATS=${3:-2}
EXAMINERS=${EXAMINERS:-"rl random"} BUDGET=${BUDGET:-640}
PY=${PY:-$PWD/.venv/bin/python}
OLD=$(mktemp -d /tmp/advaudit_rev_XXXX); OUT=$(mktemp -d /tmp/audit_speed_XXXX)
git worktree add --detach "$OLD" "$REV" >/dev/null
trap 'git worktree remove --force "$OLD"' EXIT
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 WANDB_MODE=offline ADVAUDIT_PROGRESS=0
run() {  # checkout dir, examiner, run dir -> queries/s
  (cd "$1" && $PY examine.py world=shapes 'world.factors={camera_elevation:[-90,90],camera_distance:[1.5,4],sun_energy:[0,5]}' audit=worst_case \
    examiner="$2" audit.budget="$BUDGET" "audit.report_budgets=[0,$BUDGET]" audit.selection=best_per_class \
    'audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]' target="$TARGET" threads=1 logger=none \
    hydra.run.dir="$3" > "$3.log" 2>&1)
  $PY -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["queries_per_second"], 1))' "$3/result.json"
}
echo "| examiner | repeat | $REV queries/s | $(git rev-parse --short HEAD) queries/s | new / old |"
echo "|---|---|---|---|---|"
for ex in $EXAMINERS; do for r in $(seq "$REPEATS"); do
  old=$(run "$OLD" "$ex" "$OUT/old_${ex}_$r"); new=$(run "$PWD" "$ex" "$OUT/new_${ex}_$r")
  echo "| $ex | $r | $old | $new | $($PY -c "print(f'{$new / $old:.3f}')") |"
done; done
echo "load: $(uptime)"
