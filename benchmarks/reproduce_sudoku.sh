#!/usr/bin/env bash
# Every step behind the shipped Sudoku model, its MI head, its order policy and the README's Sudoku
# tables, in order: on a new model (see the README's "stronger model" note) run it from step 3.
# About 6 hours on 2 CPU cores (steps 1-6: 2.5 hours); the training steps resume what is there.
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

# 6. A head that can charge 0 (relu link), on 10,000 states, half of them from parallel trajectories;
#    its calibration and its cost on a core of its own.
unmask mi data --task sudoku --examples data/sudoku/train.csv --out data/mi/sudoku-seq --states 5000 --shard-size 250 \
    --rows 16 --policy sequential --seed 1                                 # 32 min on one core
unmask mi data --task sudoku --examples data/sudoku/train.csv --out data/mi/sudoku-par --states 5000 --shard-size 250 \
    --rows 16 --policy mi:gamma=1,lam=0 --seed 2                           # 15 min
unmask mi train --task sudoku --data data/mi/sudoku-seq --data data/mi/sudoku-par --out runs/mi-head-sudoku --steps 3000
mkdir -p benchmarks/results/sudoku_head_relu
cp runs/mi-head-sudoku/mi_head.json runs/mi-head-sudoku/mi_head.safetensors benchmarks/results/sudoku_head_relu/
python benchmarks/mi_head_calibration.py benchmarks/results/sudoku_head_relu --old unmask/models/sudoku
python benchmarks/mi_head_cost.py benchmarks/results/sudoku_head_relu unmask/models/sudoku \
    --data data/mi/sudoku-seq data/mi/sudoku-par                           # one thread, nothing else running

# 7. Exact MI that scales (36 min on one core), the low-NFE frontier (40 min), the MI map.
python benchmarks/exact_mi_scaling.py
python benchmarks/sudoku_frontier.py --head benchmarks/results/sudoku_head_relu --n 300 --exact-n 50
unmask mi map --task sudoku --examples data/sudoku/test-kaggle.csv --index 3 --cell 1,1 --exact \
    --out benchmarks/results/sudoku_mi_map.png

# 8. Learned orders: the shipped policy (c = 0.2) and c = 1 (about 22 min each), then their tables.
[ -f data/sudoku/val-kaggle-200.csv ] || unmask sudoku generate --kind kaggle --n 200 --seed 2 --out data/sudoku/val-kaggle-200.csv
for c in 0.2 1; do
  order=(--data data/sudoku/train-2k.csv --val data/sudoku/val-kaggle-200.csv --val-n 100
         --out runs/order-sudoku-tau0.1-c$c --budget 10 --tau 0.1 --step-cost $c --steps 800 --batch-size 16
         --samples 4 --eval-every 100 --ckpt-every 50)
  if [ -f runs/order-sudoku-tau0.1-c$c/checkpoint.pt ]; then unmask sudoku train-order "${order[@]}" --resume
  else unmask sudoku train-order "${order[@]}"; fi
done
P=benchmarks/results/learned_order/policies
python benchmarks/keep_order_policy.py runs/order-sudoku-tau0.1-c1 $P/sudoku-tau0.1-c1
python benchmarks/keep_order_policy.py runs/order-sudoku-tau0.1-c0.2 $P/sudoku-tau0.1-c0.2
cp $P/sudoku-tau0.1-c0.2/order_policy.* unmask/models/sudoku/
python benchmarks/learned_order.py --task sudoku --model unmask/models/sudoku --n 200 --untrained \
    --sets test-kaggle=data/sudoku/test-kaggle.csv test-hard=data/sudoku/test-hard.csv \
    --learned plain=$P/sudoku-plain c1=$P/sudoku-tau0.1-c1 --out benchmarks/results/learned_order/sudoku

# 9. Every README table against its results file.
python benchmarks/check_readme.py
