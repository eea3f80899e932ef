#!/usr/bin/env bash
# A recipe-level control for the comparison over training seeds: one recipe compared with itself. Three
# checkpoints of the recipe (training seeds A) are labelled <recipe>_a and three others (training seeds B)
# <recipe>_b; the i-th of each is examined at examination seed i on the same instances, and the three
# sweeps go to one comparison, as benchmarks/compare/rotation_pair.sh's recipes do
# (`python -m advaudit.compare examine_rl_s0 examine_rl_s1 examine_rl_s2`). Any primary verdict or
# "In every training seed" sentence here is a false positive.
#
# Usage: SRCS="outputs/rotation_pair ..." bash benchmarks/compare/recipe_control.sh OUT
#   SRCS: folders of benchmarks/compare/rotation_pair.py (their conf/experiment/<recipe>_s<seed>.yaml name the checkpoints)
# Sizes (environment): RECIPES="plain rot" A="0 1 2" B="3 4 5" EXAMINER=rl N=40 WHERE=300
# Resumable: finished examinations and comparisons are skipped. Prints one line per recipe.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
OUT=$(realpath -m "$1")
SRCS=${SRCS:-outputs/rotation_pair} RECIPES=${RECIPES:-"plain rot"} EXAMINER=${EXAMINER:-rl}
read -r -a A <<< "${A:-0 1 2}"; read -r -a B <<< "${B:-3 4 5}"
N=${N:-40} WHERE=${WHERE:-300} PY=${PY:-.venv/bin/python}
[ "${#A[@]}" = "${#B[@]}" ] || { echo "A and B need as many seeds each (A=${A[*]}, B=${B[*]})" >&2; exit 2; }
export WANDB_MODE=${WANDB_MODE:-offline} ADVAUDIT_PROGRESS=${ADVAUDIT_PROGRESS:-0} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the target blocks name tests.models.user_models.SmallNet
mkdir -p "$OUT/conf/experiment"
relabel() {  # recipe, training seed, new label, examination seed: writes conf/experiment/<label>_e<seed>.yaml
  local src
  for dir in $SRCS; do [ -f "$dir/conf/experiment/$1_s$2.yaml" ] && src="$dir/conf/experiment/$1_s$2.yaml"; done
  [ -n "${src:-}" ] || { echo "no $1_s$2.yaml under conf/experiment of any of: $SRCS" >&2; exit 2; }
  sed "s/\"name\": \"$1\"/\"name\": \"$3\"/" "$src" > "$OUT/conf/experiment/$3_e$4.yaml"
  grep -q "\"name\": \"$3\"" "$OUT/conf/experiment/$3_e$4.yaml" || { echo "$src has no name $1" >&2; exit 2; }
}
for recipe in $RECIPES; do
  sweeps=()
  for i in "${!A[@]}"; do
    relabel "$recipe" "${A[$i]}" "${recipe}_a" "$i"; relabel "$recipe" "${B[$i]}" "${recipe}_b" "$i"
    sweep="$OUT/examine_${recipe}_e$i"
    [ -f "$sweep/1/result.json" ] || $PY examine.py --config-dir "$OUT/conf" -m \
      "experiment=${recipe}_a_e$i,${recipe}_b_e$i" world=transforms examiner="$EXAMINER" audit.n_instances="$N" \
      seed="$i" threads=1 logger=none hydra.sweep.dir="$sweep" > "$OUT/examine_${recipe}_e$i.log" 2>&1
    sweeps+=("$sweep")
  done
  cmp="$OUT/compare_${recipe}"
  [ -f "$cmp/comparison.json" ] || $PY -m advaudit.compare "${sweeps[@]}" --out "$cmp" --where-instances "$WHERE" \
    > "$OUT/compare_${recipe}.log" 2>&1
  $PY - "$cmp/comparison.json" "$recipe seeds {${A[*]}} vs {${B[*]}}" <<'PY'
import json, sys
group = json.load(open(sys.argv[1]))["groups"][0]
verdicts = [a["text"] for a in group.get("answers", []) if a.get("weaker")]
section = group.get("where") or {"pairs": [], "sensitivity": {"pairs": []}, "sentences": []}
every = [s for s in section.get("sentences", []) if s.startswith("In every training seed")]
seeds = section.get("per_seed") or {"first": section}
confirmed = {k: sum(bool((p.get("confirmation") or {}).get("weaker")) for p in s["pairs"]) for k, s in seeds.items()}
per_fifth = {k: sum(r["said"] for r in s["sensitivity"]["pairs"]) for k, s in seeds.items()}
print(f"{sys.argv[2]}: verdict: {verdicts[0] if verdicts else 'none'}; in every seed: {'; '.join(every) or 'none'}; "
      f"confirmed regions per seed: {confirmed}; per-fifth findings per seed: {per_fifth}")
PY
done | tee "$OUT/summary.txt"
