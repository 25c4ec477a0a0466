#!/usr/bin/env bash
# Every step behind the shipped Sudoku model, its MI head and the README's Sudoku tables, in order.
# About 2.5 hours on 2 CPU cores; each step resumes or skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# 1. Data: train (100k), validation and test sets (deterministic by seed).
[ -f data/sudoku/test-hard.csv ] || unmask sudoku generate --standard --workers 2

# 2. The MDM (the shipped run was started with --steps 6000 and resumed at step 500 with --steps 5000;
#    the command below, with --steps 5000 from the start, follows the same schedule after step 500).
args=(--data data/sudoku/train.csv --val data/sudoku/val-kaggle.csv --val data/sudoku/val-hard.csv --val-n 100
      --out runs/sudoku --steps 5000 --batch-size 128 --lr 1.5e-3 --mask-min 0.1 --mask-max 0.9
      --eval-every 500 --ckpt-every 250)
if [ -f runs/sudoku/checkpoint.pt ]; then unmask sudoku train "${args[@]}" --resume; else unmask sudoku train "${args[@]}"; fi
mkdir -p unmask/models/sudoku
cp runs/sudoku/model/config.json runs/sudoku/model/model.safetensors unmask/models/sudoku/
python benchmarks/learning_curve.py runs/sudoku --out benchmarks/results/sudoku_learning_curve

# 3. Baseline policies on both test sets.
python benchmarks/sudoku_policies.py

# 4. MI head: exact-MI states along sequential trajectories of training puzzles, then the head.
unmask mi data --task sudoku --model unmask/models/sudoku --examples data/sudoku/train.csv --out data/mi/sudoku \
    --states 1200 --shard-size 100 --workers 2
unmask mi train --task sudoku --model unmask/models/sudoku --data data/mi/sudoku --steps 2000
#    How negative the exact MI gets and what the head charges, on 1,200 states made the same way
#    (from the first 2,000 training puzzles; about 12 minutes on one thread).
[ -f data/sudoku/train-2k.csv ] || unmask sudoku generate --kind kaggle --n 2000 --seed 1 --out data/sudoku/train-2k.csv
python benchmarks/sudoku_mi_stats.py

# 5. Choose γ, λ on validation puzzles (the defaults of `mi` come from this table), then test.
python benchmarks/sudoku_mi.py --sets val-kaggle --n 200 --exact-n 0 \
    --gammas 0.01 0.03 0.1 0.3 --lams 2 5 --out benchmarks/results/tuning
python benchmarks/sudoku_mi.py --gammas 0.01 0.03 0.1 --lams 2
#    (The "(first 20)" exact-MI rows alone: python benchmarks/sudoku_mi.py --only-exact --threads 1.)

# 6. Every README table against its results file.
python benchmarks/check_readme.py
