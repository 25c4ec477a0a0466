#!/usr/bin/env bash
# Train a Sudoku MDM on one CUDA GPU inside a fixed wall time (issue 14).
#
#   benchmarks/sudoku/train_sudoku_gpu.sh SECONDS [OUT]
#
# The shipped 24-layer model was made by two calls (benchmarks/sudoku/reproduce_sudoku.sh, step 2):
#   INIT=runs/sudoku-stack12/model RUN=runs/sudoku-gpu24 benchmarks/sudoku/train_sudoku_gpu.sh 480
#       24 blocks stacked from the 12-layer CPU model (progressive stacking, Gong et al. 2019: block k
#       starts as block k mod 12), timed to 6,603 steps of batch 1024 at lr 1e-3 (7.4 min on an H200);
#   INIT=runs/sudoku-gpu24/model RUN=runs/sudoku-gpu24b LR=4e-4 SEED=25 STEPS=2400 benchmarks/sudoku/train_sudoku_gpu.sh 200
#       a fresh schedule from that model at a lower peak (2.4 min).
# Each batch: half random masks of augmented solution grids, half puzzle states (givens visible, blanks
# masked) split evenly between two files of hard puzzles and the Kaggle-density training puzzles.
#
# 1. Times 40 steps of the shape and batch (benchmarks/sudoku/train_speed.py) and sets --steps so that the run
#    fills SECONDS (the cosine schedule ends when the time does); STEPS=N skips the timing (and SECONDS
#    then only names the run's intent: nothing stops it).
# 2. Trains (`unmask sudoku train`); a timed run under `timeout` (a minute over the estimate), so a run
#    cut short keeps its last validated model/ and its checkpoint. A RUN folder with a checkpoint is
#    continued to STEPS (--resume, with the warm-up it started with).
# 3. With OUT (an argument, or $OUT: the device tool's output folder) the model's weights, split into
#    files of 15 MiB (`cat model.safetensors.part-* > model.safetensors`), its config, the log and the
#    timing are copied there.
#
# It needs data/sudoku/{train,val-kaggle,val-hard,train-hard,train-hard-b}.csv: the first three from
# `unmask sudoku generate --standard`, the others from
#   unmask sudoku generate --kind hard --n 20000 --seed 6 --out data/sudoku/train-hard.csv
#   unmask sudoku generate --kind hard --n 20000 --seed 7 --out data/sudoku/train-hard-b.csv
# (15 min each on one core: make them here and carry data/sudoku to the GPU machine, packed: the tree
# that travels has a size limit).
#
# Knobs (environment):
#   INIT    the model a fresh run starts from (unmask/models/sudoku); a multiple of its depth stacks it
#   LAYERS  blocks (24)             BATCH  sequences per step (1024)      LR     peak learning rate (1e-3)
#   SEED    data stream (24)        STEPS  skip the timing, train this many      TIMED  steps timed (40)
#   VAL_N   validation puzzles of each set (100)      RUN    run folder (runs/sudoku-gpu)
#   DEVICE  cuda; cpu tries the script here with a tiny SECONDS, BATCH and VAL_N
set -euo pipefail
seconds=${1:?usage: train_sudoku_gpu.sh SECONDS [OUT]}
out=${2:-${OUT:-}}
batch=${BATCH:-1024}
layers=${LAYERS:-24}
lr=${LR:-1e-3}
init=${INIT:-unmask/models/sudoku}
device=${DEVICE:-cuda}
run=${RUN:-runs/sudoku-gpu}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} PYTHONUNBUFFERED=1  # batches are drawn on the CPU: a few threads do
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # unmask from this checkout, installed or not
refuse() { echo "train_sudoku_gpu.sh: $*" >&2; exit 2; }
for f in train val-kaggle val-hard train-hard train-hard-b; do
  [ -f "data/sudoku/$f.csv" ] || refuse "data/sudoku/$f.csv is missing (see the header)"
done
start=(--init "$init" --n-layers "$layers")  # a fresh run: its start and shape
warmup=""                                    # a fresh run: 5 % of its steps
if [ -f "$run/checkpoint.pt" ]; then         # a resumed one: the checkpoint keeps both (and accepts the same --init)
  [ -n "${STEPS:-}" ] || refuse "$run holds a run; give STEPS to continue it"
  start=(--init "$init" --resume)
  warmup=$(python3 -c "import sys; from unmask.runs import read_checkpoint; print(read_checkpoint(sys.argv[1])['train_config']['warmup'])" \
    "$run")                                  # a resume refuses another warm-up
elif [ -e "$run" ]; then
  refuse "$run exists and holds no checkpoint; choose another RUN"
fi
started=$(date +%s)

# 1. Time the step, then size the run to the seconds left (20 s kept for start-up, validations and export).
limit=()
if [ -n "${STEPS:-}" ]; then
  speed='{"ms_per_step": null}' left=$seconds steps=$STEPS
else
  speed=$(python3 benchmarks/sudoku/train_speed.py --task sudoku --device "$device" --batch-size "$batch" --n-layers "$layers" \
    --steps "${TIMED:-40}" --warmup 10 | tail -n 1)
  left=$(( seconds - ($(date +%s) - started) - 20 ))
  (( left >= 10 )) || refuse "timing the step left $left s of $seconds; give more SECONDS"
  steps=$(python3 -c "import json, sys; ms = json.loads(sys.argv[1])['ms_per_step']; print(max(1, int(0.95 * 1000 * $left / ms)))" "$speed")
  limit=(timeout $(( left + 60 )))  # a minute over the estimate stops it (its last validated model is kept)
fi
echo "$speed"
every=$(( steps / 10 > 0 ? steps / 10 : 1 ))  # ten validations (sequential decoding)
echo "training $steps steps of batch $batch, validating every $every"

# 2. Train.
status=0
${limit[@]+"${limit[@]}"} python3 -m unmask sudoku train --data data/sudoku/train.csv \
  --puzzles data/sudoku/train-hard.csv --puzzles data/sudoku/train-hard-b.csv --puzzles data/sudoku/train.csv \
  --puzzle-prob 0.5 "${start[@]}" --lr "$lr" --warmup "${warmup:-$(( steps / 20 ))}" \
  --mask-min 0.1 --mask-max 0.9 --batch-size "$batch" --steps "$steps" --eval-every "$every" --ckpt-every "$every" \
  --val data/sudoku/val-kaggle.csv --val data/sudoku/val-hard.csv --val-n "${VAL_N:-100}" --seed "${SEED:-24}" \
  --device "$device" --out "$run" || status=$?
echo "train exit status $status after $(( $(date +%s) - started )) s"

# 3. Hand the results back.
if [ -n "$out" ] && [ -f "$run/model/model.safetensors" ]; then
  mkdir -p "$out"
  split -b 15M -d "$run/model/model.safetensors" "$out/model.safetensors.part-"
  cp "$run/model/config.json" "$run/log.jsonl" "$out/"
  echo "$speed" > "$out/speed.json"
fi
exit "$status"
