#!/usr/bin/env bash
# advaudit's GPU figures in one go (<= 10 minutes on one GPU): the CUDA tests (precision against float32, BO's GP
# batch, rendering and attacks on the device), the demo on CUDA, BO against random search at 55 instances x 500
# queries on the demo's control checkpoint (end to end, one run), every figure of
# benchmarks/scale/real_size.py --device cuda, and one RL examination (80 instances x 500 queries) as one job
# against 8 shards in parallel on the GPU's machine (benchmarks/scale/split_speed.py); one results folder with a
# summary table (summary.md).
#
#   benchmarks/scale/gpu.sh [--out DIR] [--parallel] [--dry-run] [--cpu-smoke]
#
#   --out DIR     results folder (default outputs/gpu/<UTC time>)
#   --parallel    after the tests, run the demo, BO against random search and real_size.py at the same time (for a
#                 machine with many CPU cores and one GPU; each step's own ratios stay within its run, and the
#                 summary says the steps shared the machine)
#   --dry-run     print the steps' commands and write nothing
#   --cpu-smoke   the same steps at tiny sizes on the CPU (checks the script's logic; numbers mean nothing)
#
# Environment: PY (python, default .venv/bin/python), TARGET (a target.pt for BO instead of the demo's shipped
# control checkpoint), TESTS_S / DEMO_S / BO_S / REAL_S / SPLIT_S (each step's time limit in seconds; default 90 /
# 150 / 150 / 120 / 120, at most 630 in a row, 360 with --parallel).
# A step that fails or runs out of time is marked in the summary and the next one still runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
OUT="outputs/gpu/$(date -u +%Y%m%d-%H%M%S)"
DRY=0 SMOKE=0 PARALLEL=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --parallel) PARALLEL=1; shift ;;
    --dry-run) DRY=1; shift ;;
    --cpu-smoke) SMOKE=1; shift ;;
    *) echo "error: unknown argument $1; use --out DIR, --parallel, --dry-run or --cpu-smoke" >&2; exit 2 ;;
  esac
done
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} WANDB_MODE=disabled ADVAUDIT_PROGRESS=0
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
BO_TARGET=${TARGET:-advaudit/demo/checkpoints/control.pt}
if [ "$SMOKE" = 1 ]; then
  DEVICE=cpu INSTANCES=3 BUDGET=12 DEMO_ARGS=(--quick) REAL_ARGS=(--quick --models resnet50 --worlds shapes --examiners random)
  SPLIT_ARGS=(--shards 2 --instances 4 --budget 64)
else
  DEVICE=cuda INSTANCES=55 BUDGET=500 DEMO_ARGS=() REAL_ARGS=()
  SPLIT_ARGS=(--shards 8 --instances 80 --budget 500)
  if [ "$DRY" = 0 ] && ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "error: torch sees no CUDA GPU here; run on a GPU machine, or use --cpu-smoke to check the script" >&2
    exit 2
  fi
  if [ "$DRY" = 0 ] && ! "$PY" -c 'import mitsuba' 2>/dev/null; then
    REAL_ARGS+=(--worlds shapes,transforms)  # MeshWorld needs Mitsuba 3; the other worlds' figures still come
    echo "note: mitsuba is not importable here, so real_size.py runs ShapeWorld and TransformWorld only"
  fi
fi
TESTS_S=${TESTS_S:-90} DEMO_S=${DEMO_S:-150} BO_S=${BO_S:-150} REAL_S=${REAL_S:-120} SPLIT_S=${SPLIT_S:-120}

step() {  # step NAME LIMIT_S COMMAND...: run under a time limit; its status and wall seconds go to $OUT/steps/NAME
  local name=$1 limit=$2; shift 2
  local log="$OUT/$name.log"
  echo "== $name (limit ${limit} s): $*"
  if [ "$DRY" = 1 ]; then return 0; fi
  local start=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "$@" >"$log" 2>&1
  local rc=$? status=ok
  if [ $rc -eq 124 ] || [ $rc -eq 130 ] || [ $rc -eq 137 ]; then status="out of time"; elif [ $rc -ne 0 ]; then status="failed (exit $rc)"; fi
  echo "$name|$status|$((SECONDS - start))|$name.log" >"$OUT/steps/$name"
  echo "   $name: $status in $((SECONDS - start)) s (log: $log)"
}

[ "$DRY" = 1 ] || mkdir -p "$OUT/steps"
echo "results: $OUT"
STARTED=$SECONDS

# 0. the tests that need a GPU: precision (32, bf16, 16) against the CPU's float32, BO, rendering, attacks on CUDA
if [ "$SMOKE" = 0 ]; then
  step cuda_tests "$TESTS_S" "$PY" -m pytest -q -p no:cacheprovider -m "cuda or not slow" \
    tests/models/test_precision.py tests/examiners/test_bo.py tests/faults/test_fault_tests.py \
    tests/search/test_attacks.py tests/worlds/test_shapes_renderer.py -k "cuda or precision"
fi

# 1. the demo (the shipped checkpoints, examination, comparison) on CUDA: device=auto takes the GPU
# 2. BO against random search, same target, seed and instances, one after the other in one run
# 3. every figure of benchmarks/scale/real_size.py on the device
# 4. one RL examination as one job against 8 shards at once (one thread each, the GPU shared): the whole multirun
run_steps() {
  step demo "$DEMO_S" "$PY" -m advaudit.demo --out "$OUT/demo" "${DEMO_ARGS[@]}" &
  [ "$PARALLEL" = 1 ] || wait
  step bo_vs_random "$BO_S" "$PY" benchmarks/worst_case/bo_wall_time.py --target "$BO_TARGET" \
    --instances "$INSTANCES" --budget "$BUDGET" --arms 'random=random,bo=bo' --out "$OUT/bo_vs_random" \
    "device=$DEVICE" 'audit.selection=random' 'audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]' &
  [ "$PARALLEL" = 1 ] || wait
  step real_size "$REAL_S" "$PY" benchmarks/scale/real_size.py --device "$DEVICE" --out "$OUT/real_size" \
    "${REAL_ARGS[@]}" &
  wait
  step split "$SPLIT_S" "$PY" benchmarks/scale/split_speed.py --mode parallel --audit worst_case --examiner rl \
    --target "$BO_TARGET" "${SPLIT_ARGS[@]}" --set "device=$DEVICE" --out "$OUT/split"
}
run_steps

[ "$DRY" = 1 ] && exit 0
{
  echo "# GPU figures ($(date -u +%Y-%m-%dT%H:%MZ), device=$DEVICE$([ "$SMOKE" = 1 ] && echo ', CPU smoke run: numbers mean nothing'))"
  echo
  echo "Machine: $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'), $(nproc --all) CPU cores; torch $("$PY" -c 'import torch; print(torch.__version__)'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $([ "$PARALLEL" = 1 ] && echo 'demo, BO and real_size ran at the same time (--parallel)' || echo 'steps one after another'); $((SECONDS - STARTED)) s in all"
  echo
  echo "| step | status | wall s | log |"
  echo "|---|---|---|---|"
  for name in cuda_tests demo bo_vs_random real_size split; do
    [ -f "$OUT/steps/$name" ] && IFS='|' read -r n s t l <"$OUT/steps/$name" && echo "| $n | $s | $t | $l |"
  done
  echo
  echo "## BO against random search ($INSTANCES instances x $BUDGET queries, $BO_TARGET)"
  echo
  grep '^|' "$OUT/bo_vs_random.log" 2>/dev/null || echo "(no table: see the step's log)"
  echo
  echo "## real_size.py"
  echo
  cat "$OUT/real_size/real_size.md" 2>/dev/null || echo "(no table: see the step's log)"
  echo
  echo "## one job against shards (split_speed.py)"
  echo
  cat "$OUT/split/table.md" 2>/dev/null || echo "(no table: see the step's log)"
  echo
  echo "## CUDA tests (last lines)"
  echo
  echo '```'
  tail -n 6 "$OUT/cuda_tests.log" 2>/dev/null
  echo '```'
  echo
  echo "## demo (last lines)"
  echo
  echo '```'
  tail -n 15 "$OUT/demo.log" 2>/dev/null
  echo '```'
} >"$OUT/summary.md"
echo "summary: $OUT/summary.md"
