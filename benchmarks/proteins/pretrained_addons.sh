#!/usr/bin/env bash
# Both papers' add-ons for a pretrained model nobody here trained, from the command line, with their costs:
# AntiBERTy (imported from its PyPI wheel) gets an MI head (Sharma, Wang, Li 2026, arXiv 2605.20187) and a
# learned order (Fox et al. 2026, arXiv 2602.23968), each saved in a folder of its own and used with --head /
# --order; then the same on a FASTA of the user's own (the heavy chains cut to 100 residues) through `unmask seq`.
# A smoke run of the pipeline on a few sequences, not a benchmark: the numbers it prints are costs.
#
#   benchmarks/proteins/pretrained_addons.sh [OUT]     # default runs/pretrained-addons; about 10 minutes on 1 core
#
# Every step's stderr is kept in OUT/<step>.log, its stdout in OUT/<step>.out and its wall time in OUT/times.txt; a rerun resumes the MI
# data builds (finished shards are kept) and retrains the rest.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-runs/pretrained-addons}
F=benchmarks/proteins/data/heavy_chains.fasta
M=hf:$OUT/antiberty
mkdir -p "$OUT"
: > "$OUT/times.txt"

step() {  # step NAME COMMAND...: run it, keep its stderr and its wall time
  local name=$1; shift
  local start=$SECONDS
  echo "== $name: $*" >&2
  "$@" 2> "$OUT/$name.log" | tee "$OUT/$name.out"
  echo "$name $((SECONDS - start)) s" | tee -a "$OUT/times.txt"
}

[ -f "$OUT/antiberty/model.safetensors" ] || step import unmask proteins import antiberty --out "$OUT/antiberty"

# The protein task: heavy chains written from their lengths alone (all masked), judged later by composition.
P="--length 110:130 --reference $F --n 16"
# States along parallel trajectories (a pass reveals every position of entropy below 1 nat, at least one): a
# sequential trajectory of a 120-residue chain would cost 120 passes of the 26M-parameter model per state.
step mi-data unmask mi data --task proteins --model "$M" --examples "$F" --out "$OUT/mi-data" --states 16 --shard-size 8 \
    --rows 4 --policy mi:gamma=1,lam=0
step mi-train unmask mi train --task proteins --model "$M" --data "$OUT/mi-data" --out "$OUT/mi-head" --steps 300
step gen-entropy unmask proteins generate --model "$M" $P --policy mi:gamma=2,lam=0 --out "$OUT/entropy.fasta"
step gen-mi unmask proteins generate --model "$M" $P --head "$OUT/mi-head" --policy mi:gamma=2,lam=1 \
    --out "$OUT/mi.fasta"
step train-order unmask proteins train-order --model "$M" --data "$F" --out "$OUT/order" --budget 10 --tau 0.1 \
    --steps 30 --batch-size 4 --samples 4 --warmup 5 --eval-every 30 --ckpt-every 10
step gen-learned unmask proteins generate --model "$M" $P --order "$OUT/order" --policy learned --out "$OUT/learned.fasta"

# Your own sequences: one length after tokenisation (the chains cut to 100 residues), residues 95-99 to fill.
awk '/^>/ { if (s) print name "\n" substr(s, 1, 100); name = $0; s = ""; next } { s = s $0 }
     END { print name "\n" substr(s, 1, 100) }' "$F" > "$OUT/chains100.fasta"
S="--input $OUT/chains100.fasta --spans 95:100"
step seq-mi-data unmask mi data --task seq --model "$M" --examples "$OUT/chains100.fasta" --spans 95:100 \
    --out "$OUT/seq-mi-data" --states 16 --shard-size 8
step seq-mi-train unmask mi train --task seq --model "$M" --spans 95:100 --data "$OUT/seq-mi-data" --out "$OUT/seq-mi-head" \
    --steps 300
step seq-eval-mi unmask seq eval --model "$M" $S --head "$OUT/seq-mi-head" --policy mi:gamma=2,lam=1 --json
step seq-train-order unmask seq train-order --model "$M" --data "$OUT/chains100.fasta" --spans 95:100 --out "$OUT/seq-order" \
    --budget 2 --steps 30 --batch-size 4 --samples 4 --warmup 5 --eval-every 30 --ckpt-every 10
step seq-eval-learned unmask seq eval --model "$M" $S --order "$OUT/seq-order" --policy learned --json
for f in entropy mi learned; do
  echo "$f: $(grep -c '>' "$OUT/$f.fasta") proteins, mean NFE $(grep -o 'nfe=[0-9]*' "$OUT/$f.fasta" | cut -d= -f2 |
    awk '{ s += $1 } END { printf "%.1f", s / NR }')"
done | tee -a "$OUT/times.txt"
cat "$OUT"/seq-eval-*.out | tee -a "$OUT/times.txt"
