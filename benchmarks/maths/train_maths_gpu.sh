#!/usr/bin/env bash
# Continue the committed maths run (benchmarks/maths/checkpoint: 6,000 CPU steps at batch 128) on one CUDA GPU.
#
#   benchmarks/maths/train_maths_gpu.sh STEPS [BATCH] [OUT]
#
# STEPS is the run's new total (the cosine schedule stretches to it); BATCH defaults to 512.
# A GPU sees far more sequences than the 50,000 standard training problems can feed without repeats,
# so it trains on 400,000 fresh ones (seed 11) with every val and test question dropped.
# The run directory OUT (default runs/maths-gpu) starts as a copy of the committed checkpoint, so
# the committed one is never touched; --resume continues it with the same optimizer.
set -euo pipefail
steps=${1:?usage: train_maths_gpu.sh STEPS [BATCH] [OUT]}
batch=${2:-512}
out=${3:-runs/maths-gpu}
device=${DEVICE:-cuda}  # DEVICE=cpu to try the script here
unmask() { python3 -m unmask "$@"; }
unmask maths generate --standard --out data/maths
big=data/maths/train-400k-seed11.jsonl
[ -f "$big" ] || unmask maths generate --n 400000 --seed 11 --out "$big" \
  --exclude data/maths/val.jsonl --exclude data/maths/test.jsonl
if [ ! -f "$out/checkpoint.pt" ]; then
  mkdir -p "$out"
  cp benchmarks/maths/checkpoint/checkpoint.pt benchmarks/maths/checkpoint/log.jsonl "$out"/
fi
unmask maths train --data "$big" --val data/maths/val.jsonl --val-n 100 --out "$out" \
  --steps "$steps" --batch-size "$batch" --lr 1.5e-3 --eval-every 500 --ckpt-every 500 --suffix-prob 0.5 \
  --device "$device" --resume
