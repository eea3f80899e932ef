#!/usr/bin/env bash
# Control pairs for benchmarks/compare/rotation_pair.sh: two seeds of the same recipe (plain_s0 against plain_s1, ...),
# examined on the same instances at the same examination seed, then compared. A comparison that gives a
# primary verdict or names a region here is a false positive.
#
# Usage: bash benchmarks/compare/rotation_pair_control.sh OUT   (after benchmarks/compare/rotation_pair.py --out OUT --seeds 0 1 2 3 4)
# Sizes (environment): RECIPES="plain rot" PAIRS="0,1 0,2 ... 3,4" (the 10 pairs of 5 training seeds: 20 comparisons
#   over both recipes) EXAM_SEEDS="0" EXAMINERS="rl" N=40 WHERE=300
# Prints one line per comparison: the primary verdict (or none) and the sentences of the where section.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$1
RECIPES=${RECIPES:-"plain rot"} PAIRS=${PAIRS:-"0,1 0,2 0,3 0,4 1,2 1,3 1,4 2,3 2,4 3,4"} EXAM_SEEDS=${EXAM_SEEDS:-0} EXAMINERS=${EXAMINERS:-rl}
N=${N:-40} WHERE=${WHERE:-300}
PY=.venv/bin/python
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
examine() {  # recipe, model seed, examiner, examination seed -> run dir
  local dir="$OUT/control/examine_$1_s$2_$3_e$4"
  [ -f "$dir/result.json" ] || $PY examine.py --config-dir "$OUT/conf" "experiment=$1_s$2" world=transforms \
    examiner="$3" audit.n_instances="$N" seed="$4" threads=1 logger=none hydra.run.dir="$dir" >/dev/null 2>&1
  echo "$dir"
}
for recipe in $RECIPES; do for ex in $EXAMINERS; do for e in $EXAM_SEEDS; do for pair in $PAIRS; do
  a=${pair%,*} b=${pair#*,}
  da=$(examine "$recipe" "$a" "$ex" "$e") db=$(examine "$recipe" "$b" "$ex" "$e")
  cmp="$OUT/control/compare_${recipe}_${a}_${b}_${ex}_e$e"
  [ -f "$cmp/comparison.json" ] || $PY -m advaudit.compare "$da" "$db" --out "$cmp" --where-instances "$WHERE" >/dev/null
  $PY - "$cmp/comparison.json" "$recipe s$a vs s$b ($ex, seed $e)" <<'PY'
import json, sys
group = json.load(open(sys.argv[1]))["groups"][0]
verdicts = [a["text"] for a in group.get("answers", []) if a.get("weaker")]
section = group.get("where") or {"pairs": [], "sensitivity": {"pairs": []}}
found = [p["confirmation"]["words"] for p in section["pairs"] if p.get("confirmation")]
found += [r["words"] for r in section["sensitivity"]["pairs"] if r["said"]]
print(f"{sys.argv[2]}: verdict: {verdicts[0] if verdicts else 'none'}; where: {'; '.join(found) if found else 'none'}")
PY
done; done; done; done | tee "$OUT/control/summary.txt"
echo "control comparisons: $(grep -c . "$OUT/control/summary.txt"); with a primary verdict: $(grep -vc 'verdict: none' \
  "$OUT/control/summary.txt"); with a where finding: $(grep -vc 'where: none$' "$OUT/control/summary.txt")"
