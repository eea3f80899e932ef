#!/usr/bin/env bash
# advaudit's GPU figures in one go (<= 8 minutes on one GPU): the demo on CUDA, BO against random search at
# 55 instances x 500 queries on the demo's target (end to end, one run), and every figure of
# benchmarks/scale/real_size.py --device cuda; one results folder with a summary table (summary.md).
#
#   benchmarks/scale/gpu.sh [--out DIR] [--dry-run] [--cpu-smoke]
#
#   --out DIR     results folder (default outputs/gpu/<UTC time>)
#   --dry-run     print the steps' commands and write nothing
#   --cpu-smoke   the same steps at tiny sizes on the CPU (checks the script's logic; numbers mean nothing)
#
# Environment: PY (python, default .venv/bin/python), TARGET (a target.pt for BO instead of the demo's),
# DEMO_S / BO_S / REAL_S (each step's time limit in seconds; default 180 / 150 / 150, 480 in all).
# A step that fails or runs out of time is marked in the summary and the next one still runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
OUT="outputs/gpu/$(date -u +%Y%m%d-%H%M%S)"
DRY=0 SMOKE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --cpu-smoke) SMOKE=1; shift ;;
    *) echo "error: unknown argument $1; use --out DIR, --dry-run or --cpu-smoke" >&2; exit 2 ;;
  esac
done
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} WANDB_MODE=disabled ADVAUDIT_PROGRESS=0 PYTHONPATH=$PWD
if [ "$SMOKE" = 1 ]; then
  DEVICE=cpu INSTANCES=3 BUDGET=12 DEMO_ARGS=(--quick) REAL_ARGS=(--quick --models resnet50 --worlds shapes --examiners random)
else
  DEVICE=cuda INSTANCES=55 BUDGET=500 DEMO_ARGS=() REAL_ARGS=()
  if [ "$DRY" = 0 ] && ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "error: torch sees no CUDA GPU here; run on a GPU machine, or use --cpu-smoke to check the script" >&2
    exit 2
  fi
fi
DEMO_S=${DEMO_S:-180} BO_S=${BO_S:-150} REAL_S=${REAL_S:-150}
STEPS=()  # "name|status|seconds|where" rows of the summary

step() {  # step NAME LIMIT_S LOG COMMAND...: run under a time limit, record status and wall seconds
  local name=$1 limit=$2 log=$3; shift 3
  echo "== $name (limit ${limit} s): $*"
  if [ "$DRY" = 1 ]; then return 0; fi
  local start=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "$@" >"$log" 2>&1
  local rc=$? status=ok
  if [ $rc -eq 124 ] || [ $rc -eq 130 ] || [ $rc -eq 137 ]; then status="out of time"; elif [ $rc -ne 0 ]; then status="failed (exit $rc)"; fi
  STEPS+=("$name|$status|$((SECONDS - start))|${log#"$OUT"/}")
  echo "   $status in $((SECONDS - start)) s (log: $log)"
}

[ "$DRY" = 1 ] || mkdir -p "$OUT"
echo "results: $OUT"

# 1. the demo (training or the shipped checkpoints, examination, comparison) on CUDA: device=auto takes the GPU
step demo "$DEMO_S" "$OUT/demo.log" "$PY" -m advaudit.demo --out "$OUT/demo" "${DEMO_ARGS[@]}"

# 2. BO against random search, same target, seed and instances, one after the other in one run
BO_TARGET=${TARGET:-}
if [ -z "$BO_TARGET" ] && [ "$DRY" = 0 ]; then
  BO_TARGET=$(find "$OUT/demo" -name target.pt 2>/dev/null | sort | head -n 1)
fi
if [ -n "$BO_TARGET" ] || [ "$DRY" = 1 ]; then
  step bo_vs_random "$BO_S" "$OUT/bo_vs_random.log" "$PY" benchmarks/worst_case/bo_wall_time.py --target "${BO_TARGET:-<demo target.pt>}" \
    --instances "$INSTANCES" --budget "$BUDGET" --arms 'random=random,bo=bo' --out "$OUT/bo_vs_random" \
    "device=$DEVICE" 'audit.selection=random' 'audit.fixed_random=[sun_rot_x,sun_rot_y,sun_rot_z]'
else
  STEPS+=("bo_vs_random|skipped: no target (the demo wrote none; set TARGET=...)|0|-")
fi

# 3. every figure of benchmarks/scale/real_size.py on the device
if [ -f benchmarks/scale/real_size.py ]; then
  step real_size "$REAL_S" "$OUT/real_size.log" "$PY" benchmarks/scale/real_size.py --device "$DEVICE" --out "$OUT/real_size" \
    "${REAL_ARGS[@]}"
else
  echo "== real_size: skipped, benchmarks/scale/real_size.py is not in this checkout"
  STEPS+=("real_size|skipped: benchmarks/scale/real_size.py is not in this checkout|0|-")
fi

[ "$DRY" = 1 ] && exit 0
{
  echo "# GPU figures ($(date -u +%Y-%m-%dT%H:%MZ), device=$DEVICE$([ "$SMOKE" = 1 ] && echo ', CPU smoke run: numbers mean nothing'))"
  echo
  echo "Machine: $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")'), $(nproc) CPU cores; torch $("$PY" -c 'import torch; print(torch.__version__)'); commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  echo "| step | status | wall s | log |"
  echo "|---|---|---|---|"
  for row in "${STEPS[@]}"; do IFS='|' read -r n s t l <<<"$row"; echo "| $n | $s | $t | $l |"; done
  echo
  echo "## BO against random search ($INSTANCES instances x $BUDGET queries)"
  echo
  grep '^|' "$OUT/bo_vs_random.log" 2>/dev/null || echo "(no table: see the step's log)"
  echo
  echo "## real_size.py"
  echo
  cat "$OUT/real_size/real_size.md" 2>/dev/null || echo "(no table: see the step's log)"
  echo
  echo "## demo (last lines)"
  echo
  echo '```'
  tail -n 15 "$OUT/demo.log" 2>/dev/null
  echo '```'
} >"$OUT/summary.md"
echo "summary: $OUT/summary.md"
