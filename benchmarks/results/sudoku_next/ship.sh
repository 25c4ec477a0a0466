#!/usr/bin/env bash
# One-off: move the staged candidate and its results over what is shipped (run from the repository root,
# once every step is stamped). Prints what is left by hand. Not part of the product: deleted with this folder.
set -euo pipefail
N=benchmarks/results/sudoku_next
H=$(sha256sum < $N/model/model.safetensors | cut -c1-16)
for s in 3 4 5 6 7 8; do [ -f $N/stamps/$H/step-$s ] || { echo "ship.sh: step $s not stamped on $H" >&2; exit 2; }; done
# the model, its heads and its order policy
for f in config.json model.safetensors mi_head.json mi_head.safetensors order_policy.json order_policy.safetensors; do
  git mv -f $N/model/$f unmask/models/sudoku/$f
done
# the 6-layer model's learning curve and measurements go to the candidate history, under its own name
git mv benchmarks/results/sudoku_candidate/shipped benchmarks/results/sudoku_candidate/6layer
git mv benchmarks/results/sudoku_learning_curve.md benchmarks/results/sudoku_candidate/6layer/learning_curve.md
git mv benchmarks/results/sudoku_learning_curve.png benchmarks/results/sudoku_candidate/6layer/learning_curve.png
git mv benchmarks/results/sudoku_candidate/learning_curve.md benchmarks/results/sudoku_learning_curve.md
git mv benchmarks/results/sudoku_candidate/learning_curve.png benchmarks/results/sudoku_learning_curve.png
git rm -rq benchmarks/results/sudoku_candidate/run/model   # the same weights as unmask/models/sudoku
# every table, over the one it replaces
(cd $N && git ls-files | grep -v -e '^model/' -e '^stamps/' -e '^resume/' -e '^README' -e '^readme_draft' -e '^ship.sh' \
   -e 'partial.jsonl$') | while read -r f; do
  mkdir -p "benchmarks/results/$(dirname "$f")"
  git mv -f "$N/$f" "benchmarks/results/$f"
done
sed -e 's#benchmarks/results/sudoku_candidate/shipped#benchmarks/results/sudoku_candidate/6layer#g' $N/README.ship.md > README.md
git rm -rq $N
git add README.md
echo "moved; now: python benchmarks/refresh_readme.py --write; python benchmarks/check_readme.py;"
echo "by hand: the mi default (gamma 0.03), tests/tasks/sudoku/test_shipped_model.py, step 2 of reproduce_sudoku.sh"
