#!/usr/bin/env bash
# Train the larger Sudoku MDM of issue 14 (3.6M parameters: width 192, 8 layers, 6 heads) on one CUDA GPU.
#
#   benchmarks/train_sudoku_gpu.sh STEPS [BATCH] [OUT]
#
# Resumable: a second call with the same OUT continues the run (a larger STEPS stretches the cosine
# schedule). It needs the standard sets (made here if missing, ~5 min on 2 cores). On a 10-minute GPU
# lease, run it with a STEPS the lease can finish (about 20k steps at batch 512 on an H200 was not
# measured yet: time one `--steps 500` call first) and commit OUT's checkpoint for the next lease.
# DEVICE=cpu runs the same thing here (slowly: ~3 s per step of batch 128 on one core).
set -euo pipefail
steps=${1:?usage: train_sudoku_gpu.sh STEPS [BATCH] [OUT]}
batch=${2:-512}
out=${3:-runs/sudoku-big}
device=${DEVICE:-cuda}
unmask() { python3 -m unmask "$@"; }
[ -f data/sudoku/val-hard.csv ] || unmask sudoku generate --standard --workers 2
# Hard training puzzles (17 min on one core; carry data/sudoku to a GPU machine rather than make them there).
[ -f data/sudoku/train-hard.csv ] || unmask sudoku generate --kind hard --n 20000 --seed 6 --out data/sudoku/train-hard.csv \
    --workers "$(nproc)"
# Half of each batch: puzzle states (givens kept, blanks masked), a quarter hard and a quarter Kaggle-density.
args=(--data data/sudoku/train.csv --puzzles data/sudoku/train-hard.csv --puzzles data/sudoku/train.csv --puzzle-prob 0.5
      --val data/sudoku/val-kaggle.csv --val data/sudoku/val-hard.csv --val-n 100
      --out "$out" --steps "$steps" --batch-size "$batch" --lr 1e-3 --warmup 500 --mask-min 0.1 --mask-max 0.9
      --eval-every 1000 --ckpt-every 500 --seed 1 --device "$device")
if [ -f "$out/checkpoint.pt" ]; then
  unmask sudoku train "${args[@]}" --resume
else
  unmask sudoku train "${args[@]}" --d-model 192 --n-layers 8 --n-heads 6 --d-ff 768
fi
