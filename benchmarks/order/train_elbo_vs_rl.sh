#!/usr/bin/env bash
# The four order policies behind benchmarks/results/order/elbo-vs-rl: the ELBO (Fox et al. 2026, arXiv
# 2602.23968) and outcome RL (--objective rl) on the same order network, model, budget T, τ and number of
# training rollouts (steps × batch × K), for maths-3step and Sudoku. Each run uses one CPU core; the two
# runs of a task go side by side. Re-running resumes unfinished runs and skips finished ones; a run whose
# checkpoint was committed under benchmarks/results/order/elbo-vs-rl/checkpoints resumes from there.
#
#   bash benchmarks/order/train_elbo_vs_rl.sh [WORKDIR]    # WORKDIR (default .) gets data/ and runs/
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "${1:-.}"
export OMP_NUM_THREADS=1
[ -f data/maths-3step/train.jsonl ] || unmask maths generate --standard --operations 3 --out data/maths-3step
[ -f data/sudoku/train-2k.csv ] || unmask sudoku generate --kind kaggle --n 2000 --seed 1 --out data/sudoku/train-2k.csv
[ -f data/sudoku/val-kaggle-200.csv ] || unmask sudoku generate --kind kaggle --n 200 --seed 2 --out data/sudoku/val-kaggle-200.csv

CKPT=$REPO/benchmarks/results/order/elbo-vs-rl/checkpoints  # runs cut short by a session's end, committed to resume
train() {  # train OUT ARGS...: resume OUT if it has a checkpoint (here or committed), skip it if it is finished
  local out=$1; shift
  [ -e "$out" ] || [ ! -d "$CKPT/$(basename "$out")" ] || cp -r "$CKPT/$(basename "$out")" "$out"
  if [ -f "$out/order_policy.json" ] && grep -q "\"step\": $STEPS," "$out/order_policy.json"; then echo "$out: done"; return; fi
  local again=(); [ -f "$out/checkpoint.pt" ] && again=(--resume)
  unmask "$@" --out "$out" --steps "$STEPS" --batch-size 16 --samples 4 --eval-every 100 --ckpt-every 50 "${again[@]}" \
    >> "$out.log" 2>&1
}
both() {  # both PID PID: wait for two runs; fail if either failed (a bare `wait` always succeeds)
  local ok=0
  wait "$1" || ok=1
  wait "$2" || ok=1
  return $ok
}

MATHS=(maths train-order --model "$REPO/unmask/models/maths-3step" --data data/maths-3step/train.jsonl
       --val data/maths-3step/val.jsonl --val-n 100 --budget 4 --tau 0.3)
STEPS=400
mkdir -p runs
train runs/maths3-elbo-c0.4 "${MATHS[@]}" --step-cost 0.4 & a=$!
train runs/maths3-rl-c0.05 "${MATHS[@]}" --objective rl --step-cost 0.05 & b=$!
both $a $b

SUDOKU=(sudoku train-order --model "$REPO/unmask/models/sudoku" --data data/sudoku/train-2k.csv
        --val data/sudoku/val-kaggle-200.csv --val-n 100 --budget 10 --tau 0.1)
STEPS=800
train runs/sudoku-elbo-c0.2 "${SUDOKU[@]}" --step-cost 0.2 & a=$!
train runs/sudoku-rl-c0.02 "${SUDOKU[@]}" --objective rl --step-cost 0.02 & b=$!
both $a $b
