#!/usr/bin/env bash
# Every step behind the shipped Sudoku model (24 layers), its MI head, its order policy and the README's
# tables for it, in order: steps 3-8 run the commands README.md gives for each table it reports on this
# model (benchmarks/results/sudoku/ for the policy tables, benchmarks/results/mi/ for MI, benchmarks/results/order/sudoku-24layer/
# for the learned order, benchmarks/models/ for the heads and order policies it keeps), with the folders below. By the README's timings steps 3-8 take about 13 hours on 2 CPU
# cores (step 7 about 9 of them), and steps 1-2 3.5 hours on the CPU and 10 minutes on a GPU,
# longer than one working session, so the script resumes:
#   - a finished step leaves a stamp in $STAMPS/<model hash>/ (default runs/reproduce-sudoku) and is
#     skipped on a rerun with the same model (delete the stamp to run it again); a new model (another
#     hash) runs every step again;
#   - everything a step builds or trains goes to folders named after the model's hash, and the
#     data builds and training runs inside a step resume what is there.
# Step 2 is the recipe of the 24-layer model shipped now (a 6-layer run, 12 layers stacked from it, 24 from those):
# shipping another model replaces it. The 12-layer model's tables (benchmarks/results/mi/12layer/, benchmarks/results/order/sudoku-12layer/
# and benchmarks/results/sudoku/history/) are history this script no longer makes: the README gives the
# command beside each of them, to be run with --model benchmarks/models/sudoku-12layer.
#
#   benchmarks/sudoku/reproduce_sudoku.sh [FROM [TO]]   the steps FROM..TO (default 1..9; the data of step 1 is
#                                           always made if missing, step 9 always runs); on a new
#                                           model already in unmask/models/sudoku, FROM is 3
#   DRY_RUN=1 benchmarks/sudoku/reproduce_sudoku.sh [FROM [TO]]   print the commands of the steps still to run
#
# A candidate model is measured beside the shipped one, without touching what is shipped, by pointing
# the script at its folder and at a results folder of its own, both or neither (steps 3-8 write the MI
# head and the order policy into MODEL, every table under RESULTS, the stamps into RESULTS/stamps;
# commit both between sessions to resume there):
#   MODEL=benchmarks/models/NAME RESULTS=benchmarks/results/sudoku/candidates/NAME benchmarks/sudoku/reproduce_sudoku.sh 3
set -euo pipefail
cd "$(dirname "$0")/../.."
refuse() { echo "reproduce_sudoku.sh: $*" >&2; exit 2; }
FROM=${1:-1}
[[ $FROM =~ ^[1-9]$ ]] || refuse "FROM must be a step number 1-9, got '$FROM'"
TO=${2:-9}
[[ $TO =~ ^[1-9]$ ]] && [ "$TO" -ge "$FROM" ] || refuse "TO must be a step number $FROM-9, got '$TO'"
if [ -n "${MODEL:-}${RESULTS:-}" ]; then  # a candidate: its own model folder and results folder
  [ -n "${MODEL:-}" ] && [ -n "${RESULTS:-}" ] || refuse "set MODEL and RESULTS together (one alone would write into what is shipped)"
  [ "$FROM" -gt 2 ] || [ "$TO" -lt 2 ] || refuse "step 2 trains the shipped model; with MODEL and RESULTS set, start from step 3"
  [ -f "$MODEL/model.safetensors" ] || refuse "MODEL=$MODEL holds no model.safetensors"
fi
MODEL=${MODEL:-unmask/models/sudoku}  # the model measured (and, in step 2, trained)
R=${RESULTS:-benchmarks/results/mi}  # where its MI tables go
TOP=${RESULTS:-benchmarks/results/sudoku}  # where its policy tables and the puzzles' rounds go
ORD=${RESULTS:-benchmarks/results/order}/sudoku-24layer  # where its learned-order tables go
KEEP=${RESULTS:-benchmarks/models}  # where the MI heads and order policies it keeps go (heads/, orders/)
if [ -n "${RESULTS:-}" ]; then STAMPS=${STAMPS:-$R/stamps}; fi
STAMPS=${STAMPS:-runs/reproduce-sudoku}  # where finished steps are stamped, per model hash

dry() { [ "${DRY_RUN:-0}" != 0 ]; }
run() {  # one command of a step (printed instead under DRY_RUN=1)
  if dry; then printf '  %s' "$1"; shift; printf ' %q' "$@"; echo; else "$@"; fi
}
model_hash() { [ -f "$MODEL"/model.safetensors ] && sha256sum < "$MODEL"/model.safetensors | cut -c1-16 || echo none; }
resumable() {  # resumable OUT COMMAND...: a training run into OUT, resumed where it is
  local out=$1; shift
  if [ -f "$out/checkpoint.pt" ]; then run "$@" --resume; else run "$@"; fi
}
step() {  # step N NAME: run function NAME if FROM <= N <= TO, unless it is stamped done on the current model
  local n=$1 name=$2 stamp
  [ "$n" -ge "$FROM" ] && [ "$n" -le "$TO" ] || return 0
  H=$(model_hash)
  stamp=$STAMPS/$H/step-$n
  if [ -f "$stamp" ]; then echo "step $n ($name): done on model $H, skipped"; return 0; fi
  echo "step $n ($name) on model $H"
  "$name"
  dry || { stamp=$STAMPS/$(model_hash)/step-$n; mkdir -p "$(dirname "$stamp")"; date -u +%FT%TZ > "$stamp"; }
}  # (stamped under the hash after the step: step 2 makes the model)

# 1. Data: train (100k), validation and test sets (deterministic by seed).
data() {
  [ -f data/sudoku/test-hard.csv ] || run unmask sudoku generate --standard --workers 2
  [ -f data/sudoku/train-2k.csv ] || run unmask sudoku generate --kind kaggle --n 2000 --seed 1 --out data/sudoku/train-2k.csv
  [ -f data/sudoku/val-kaggle-200.csv ] || run unmask sudoku generate --kind kaggle --n 200 --seed 2 --out data/sudoku/val-kaggle-200.csv
}

# 2. The MDM: 6 layers from scratch (94 min on 2 CPU cores), then 12 layers stacked from them on a mix of
#    solution grids and training puzzles (103 min), then 24 layers stacked from those on one GPU: two calls
#    of benchmarks/sudoku/train_sudoku_gpu.sh (7.4 and 2.4 min of training on an H200; the first call's 6,603 steps
#    were sized by timing the step there, so STEPS repeats them). The shipped 6-layer run was started with
#    --steps 6000 and resumed at step 500 with --steps 5000; the 12-layer run was started with --steps 2200
#    and resumed at steps 750 and 1750 with --steps 3000 and --steps 2500. The commands below follow the
#    same schedules after the last resume. Without a GPU (DEVICE=cpu) the last two would take days.
mdm() {
  if [ -f "$MODEL"/model.safetensors ] && ! git diff --quiet HEAD -- "$MODEL"/model.safetensors 2>/dev/null; then
    echo "reproduce_sudoku.sh: $MODEL holds a model not committed; step 2 would overwrite it (run from step 3)" >&2; exit 2
  fi
  local six=(--data data/sudoku/train.csv --val data/sudoku/val-kaggle.csv --val data/sudoku/val-hard.csv --val-n 100
             --out runs/sudoku --steps 5000 --batch-size 128 --lr 1.5e-3 --mask-min 0.1 --mask-max 0.9
             --eval-every 500 --ckpt-every 250)
  resumable runs/sudoku unmask sudoku train "${six[@]}"
  run python benchmarks/tools/learning_curve.py runs/sudoku --out benchmarks/results/sudoku/history/6layer/learning_curve
  [ -f data/sudoku/train-hard.csv ] || run unmask sudoku generate --kind hard --n 20000 --seed 6 --out data/sudoku/train-hard.csv
  local twelve=(--data data/sudoku/train.csv --puzzles data/sudoku/train-hard.csv --puzzles data/sudoku/train.csv
                --puzzle-prob 0.5 --init runs/sudoku/model --lr 5e-4 --warmup 100
                --val data/sudoku/val-kaggle.csv --val data/sudoku/val-hard.csv --val-n 100 --eval-every 500
                --steps 2500 --out runs/sudoku-stack12)
  local shape=(--n-layers 12)  # a fresh start only: a resume keeps its checkpoint's shape (and accepts the same --init)
  [ ! -f runs/sudoku-stack12/checkpoint.pt ] || shape=()
  resumable runs/sudoku-stack12 unmask sudoku train "${twelve[@]}" "${shape[@]}"
  run python benchmarks/tools/learning_curve.py runs/sudoku-stack12 --out benchmarks/results/sudoku/history/12layer/learning_curve
  [ -f data/sudoku/train-hard-b.csv ] || run unmask sudoku generate --kind hard --n 20000 --seed 7 --out data/sudoku/train-hard-b.csv
  run env INIT=runs/sudoku-stack12/model RUN=runs/sudoku-gpu24 STEPS=6603 benchmarks/sudoku/train_sudoku_gpu.sh 480
  run env INIT=runs/sudoku-gpu24/model RUN=runs/sudoku-gpu24b LR=4e-4 SEED=25 STEPS=2400 benchmarks/sudoku/train_sudoku_gpu.sh 200
  run mkdir -p "$MODEL"
  run cp runs/sudoku-gpu24b/model/config.json runs/sudoku-gpu24b/model/model.safetensors "$MODEL"/
  run mkdir -p "$TOP"/runs
  run cp runs/sudoku-gpu24/log.jsonl "$TOP"/runs/phase1.jsonl
  run cp runs/sudoku-gpu24b/log.jsonl "$TOP"/runs/phase2.jsonl
  run python benchmarks/tools/learning_curve.py "$TOP"/runs/phase1.jsonl "$TOP"/runs/phase2.jsonl \
      --out benchmarks/results/sudoku/sudoku_learning_curve
}

# 3. Baseline policies on both test sets (41.8 min on 2 cores; docs/results/sudoku.md shows this table, the
#    earlier models' in benchmarks/results/sudoku/history), then the entropy budget and top-k at few passes
#    (10.2 min).
baselines() {
  run python benchmarks/sudoku/sudoku_policies.py --model "$MODEL" --out "$TOP"
  run python benchmarks/sudoku/sudoku_policies.py --model "$MODEL" --policies mi:gamma=0.01,lam=0 mi:gamma=0.1,lam=0 mi:gamma=0.3,lam=0 \
      mi:gamma=1,lam=0 mi:gamma=3,lam=0 topk:k=20 --out "$TOP"/low_nfe
}

# 4. The shipped MI head (relu link: it can charge a pair exactly 0): exact-MI rows (16 random masked cells
#    per state) at states along sequential and along parallel trajectories (the entropy budget γ = 1) of
#    training puzzles, 5,000 of each in two builds apiece (1,500 + 3,500: the first two were the data of
#    the 3,000-state head shipped before it; about 110 core-minutes in all), the head fitted to all 10,000
#    states for 12,000 steps and saved into the model's folder (it ranks the pairs that matter at 0.68, and
#    at 0.77 where both rows were computed; the README reports the same data fitted for 3,000 steps at
#    0.66 and 0.77, that head kept in benchmarks/models/heads/sudoku24-10k by step 6); then how negative
#    the exact MI gets and what the head charges, on 1,200 states of sequential trajectories of the first
#    2,000 training puzzles (12.3 min on 2 cores).
HEAD_BUILDS=("seq sequential 1 1500" "par mi:gamma=1,lam=0 2 1500" "seq sequential 3 3500" "par mi:gamma=1,lam=0 4 3500")  # kind, policy, seed, states
head_dir() {  # head_dir KIND SEED: the folder of one build (the first two were named without their seed)
  if [ "$2" -le 2 ]; then echo "data/mi/sudoku-head-$1-$H"; else echo "data/mi/sudoku-head-$1$2-$H"; fi
}
head_data() {  # HEAD_DIRS=(DIR ...), HEAD_DATA=(--data DIR ...): every build of the head's data (steps 4 and 6)
  local kind policy seed states
  HEAD_DIRS=() HEAD_DATA=()
  for b in "${HEAD_BUILDS[@]}"; do
    read -r kind policy seed states <<< "$b"
    HEAD_DIRS+=("$(head_dir "$kind" "$seed")")
    HEAD_DATA+=(--data "${HEAD_DIRS[-1]}")
  done
}
mi_stats_dir() { echo "runs/sudoku_mi_stats-$H"; }  # the states of the statistics (step 4), the head's cost read them (step 6)
shipped_head() {
  local kind policy seed states
  for b in "${HEAD_BUILDS[@]}"; do
    read -r kind policy seed states <<< "$b"
    run unmask mi data --task sudoku --model "$MODEL" --examples data/sudoku/train.csv --out "$(head_dir "$kind" "$seed")" \
        --states "$states" --shard-size 100 --rows 16 --policy "$policy" --seed "$seed" --workers 2
  done
  head_data
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]}" --steps 12000 --out "$MODEL"
  run python benchmarks/mi/sudoku_mi_stats.py --model "$MODEL" --workers 2 --threads 2 --states-dir "$(mi_stats_dir)" --out "$R"
}

# 5. Choose γ, λ on 200 validation puzzles of each kind (the defaults of `mi` come from this table; 14 min),
#    then test, the baseline rows taken from step 3's table (20.0 min on 2 cores).
mi_tables() {
  run python benchmarks/mi/sudoku_mi.py --model "$MODEL" --sets val-kaggle val-hard --n 200 --exact-n 0 \
      --gammas 0.01 0.03 0.1 0.3 1 --lams 2 5 --out "$R"/tuning
  run python benchmarks/mi/sudoku_mi.py --model "$MODEL" --gammas 0.01 0.03 0.1 --lams 2 --out "$R" \
      --baselines "$TOP"/sudoku_policies.json
  # (The "(first 20)" exact-MI rows alone: python benchmarks/mi/sudoku_mi.py --only-exact --threads 1.)
}

# 6. The heads beside the tables measured with them: a copy of the shipped head, the 3,000-state head
#    shipped before it (the first two builds of step 4, 3,000 steps), the 10,000 states fitted for
#    3,000 steps, and the same fitted to DEMASK's influence D (the D head; each fit about 2 min); the
#    shipped head's calibration against the 3,000-state one, and its cost on a core of its own (one
#    thread, nothing else running) on step 4's statistics states; then what else a head could read
#    or be fitted on (the variants on the first two builds and on all four, one thread), and the
#    candidate head that reads P(X_i | C) too, fitted on log(1 + I/0.01), with its calibration.
keep_head() {  # keep_head RUN DIR: the head a fit left in RUN, copied into DIR
  run mkdir -p "$2"
  run cp "$1"/mi_head.json "$1"/mi_head.safetensors "$2"/
}
relu_head() {
  head_data
  run mkdir -p "$KEEP"/heads/sudoku24-relu
  run cp "$MODEL"/mi_head.json "$MODEL"/mi_head.safetensors "$KEEP"/heads/sudoku24-relu/
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]:0:4}" --steps 3000 --out runs/mi-head-3k-$H
  keep_head runs/mi-head-3k-$H "$KEEP"/heads/sudoku24-3k
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]}" --steps 3000 --out runs/mi-head-10k-$H
  keep_head runs/mi-head-10k-$H "$KEEP"/heads/sudoku24-10k
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]}" --out runs/mi-head-influence-$H --steps 3000 --target influence
  keep_head runs/mi-head-influence-$H "$KEEP"/heads/sudoku24-influence-10k
  run python benchmarks/mi/mi_head_calibration.py "$KEEP"/heads/sudoku24-relu --old "$KEEP"/heads/sudoku24-3k --out "$R"/sudoku_head_calibration
  run python benchmarks/mi/mi_head_cost.py "$MODEL" "$MODEL" --data "$(mi_stats_dir)" --out "$R"/mi_head_cost
  local V=(python benchmarks/mi/mi_head_variants.py --model "$MODEL")
  run "${V[@]}" --data "${HEAD_DIRS[@]:0:2}" --heads relu values exclusion --out "$R"/mi_head_variants_3k
  run "${V[@]}" --data "${HEAD_DIRS[@]:0:2}" --only scaled values-scaled --out "$R"/mi_head_variants_3k
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]}" --values --scale 0.01 --steps 12000 --out runs/mi-head-values-$H
  keep_head runs/mi-head-values-$H "$KEEP"/heads/sudoku24-values-10k
  run python benchmarks/mi/mi_head_calibration.py "$KEEP"/heads/sudoku24-values-10k --old "$KEEP"/heads/sudoku24-relu --out "$R"/head_values_calibration
  run "${V[@]}" --data "${HEAD_DIRS[@]}" --heads relu scaled values values-scaled exclusion --out "$R"/mi_head_variants
}

# 7. Exact MI that scales (16.5 min on one thread); the frontier on 150 puzzles per set, family by family and
#    oracle by oracle (about 5 hours on 2 cores, the runs in the order that made the file), and on 300
#    (1.5 hours); the prefix rule's gaps with bootstrap intervals on all of test-hard (63.9 min); the same
#    rules on puzzles with several solutions, by their exact posterior and by the model (25.4 min; then
#    25 min to build and fit a head on such puzzles, 4.7 min to decode with it); why the parallel decodes
#    fail (6.8 min); the charge at a fixed number of passes (16.6 min, its exact-charge oracle 58.9 min,
#    then its tables beside the 300-puzzle frontier) and what it fails through (2.2 min);
#    the passes the puzzles allow (seconds; no model, a table beside the policy table).
exact_and_frontier() {
  local F=(python benchmarks/mi/sudoku_frontier.py --model "$MODEL" --n 150 --threads 2 --out "$R")
  local D="$KEEP"/heads/sudoku24-influence-10k G18=(0.01 0.03 0.1 0.3 0.5 0.7 1 1.5 2 2.5 3 4 5 7 10 15 30 100)
  run python benchmarks/mi/exact_mi_scaling.py --model "$MODEL" --n 20 --eps 3e-4 1e-3 1e-2 1e-1 --skip 1e-3 --skip-eps 3e-4 1e-3 \
      --out "$R"
  run python benchmarks/mi/oracle_probes.py --model "$MODEL" --n 30 --check 3 --out "$R"   # the oracles' probe passes: 6.9 min
  run rm -f "$R"/sudoku_frontier.json  # the file starts afresh, as it did (its first run, a full one, refuses to drop an old file's D-head rows)
  run "${F[@]}" --exact-n 0 --quick                                            # every family, every other point: 25.7 min
  run "${F[@]}" --families "entropy budget"                                    # its whole sweep: 1.1 min
  run "${F[@]}" --exact-n 100 --oracle-sets test-hard --oracle-only "entropy budget" "exact MI λ=2" \
      --exact-gammas 0.3 1 2 3 --threads 1                                     # the exact-MI oracle: 68.1 min on one core
  run "${F[@]}" --families "MI head λ=0.5" "MI head λ=2" demask "paced, MI head λ=1"                 # 12.0 min
  run "${F[@]}" --influence-head "$D" --families "D head λ=2" "D head λ=8" "demask, D head" "paced, D head λ=0.5" \
      "paced, D head λ=2"                                                      # the D head: 14.3 min
  run "${F[@]}" --exact-n 100 --oracle-sets test-hard --oracle-only "entropy budget" "exact influence λ=2" \
      --exact-gammas 0.3 1 2 3                                                 # exact influence: 52 min
  run "${F[@]}" --influence-head "$D" --extend --families "entropy budget" "MI head λ=0.5" "MI head λ=2" "D head λ=2" \
      "D head λ=8" "paced, MI head λ=1" "paced, D head λ=0.5" "paced, D head λ=2"   # γ = 10-100 alone: 1.8 min
  run "${F[@]}" --exact-n 100 --oracle-sets test-kaggle --oracle-only "entropy budget" "exact MI λ=2" "exact influence λ=2" \
      --exact-gammas 1 3 10 30 100                                             # the oracles on test-kaggle: 30 min
  run "${F[@]}" --exact-n 100 --oracle-sets test-kaggle --oracle-only "entropy budget" \
      --exact-gammas 0.01 0.03 0.1 0.3 1 3 10 30 100                           # the budget there from γ = 0.01: 0.2 min
  run "${F[@]}" --oracle-only "entropy budget" "exact influence prefix λ=8" --exact-n 100 --oracle-sets test-hard \
      --exact-gammas 2 5 10                                                    # 33 min
  run "${F[@]}" --oracle-only "exact MI prefix λ=2" --exact-n 100 --oracle-sets test-hard --exact-gammas 1 2   # 24 min
  run "${F[@]}" --oracle-only "entropy budget" --exact-n 150 --oracle-sets test-hard --exact-gammas 0.3 1 2 3
  run "${F[@]}" --oracle-only "exact MI prefix λ=2" --exact-n 150 --oracle-sets test-hard --exact-gammas 1    # the two: 31 min
  run "${F[@]}" --families "prefix, MI head λ=2"                               # 2.3 min
  run "${F[@]}" --families "entropy budget" --extend                           # the budget's finer points: 0.9 min
  run "${F[@]}" --oracle-only "entropy budget" --exact-n 150 --oracle-sets test-hard --exact-gammas "${G18[@]}"  # 2.0 min
  run "${F[@]}" --oracle-only "entropy budget" --exact-n 100 --oracle-sets test-hard --exact-gammas "${G18[@]}"  # 1.3 min
  run "${F[@]}" --head "$KEEP"/heads/sudoku24-values-10k --name sudoku_frontier_values --families "entropy budget" "MI head λ=0.5" \
      "MI head λ=2"                                                            # the candidate head of step 6: 11.3 min
  local F300=("${F[@]}" --n 300 --name sudoku_frontier_300)
  run rm -f "$R"/sudoku_frontier_300.json  # afresh too (a run keeps the rows of the families it does not measure)
  run "${F300[@]}" --influence-head "$D" --families "entropy budget" "MI head λ=0.5" "MI head λ=2" "D head λ=8" \
      "demask, D head"                                                         # 32 min
  run "${F300[@]}" --influence-head "$D" --extend --families "entropy budget" "MI head λ=0.5" "MI head λ=2" "D head λ=8"  # 2.0 min
  run "${F300[@]}" --influence-head "$D" --families "prefix, D head λ=2" "prefix, D head λ=8"         # 12.7 min
  run "${F300[@]}" --families "prefix, MI head λ=2" "prefix, MI head λ=8"                            # 16.8 min
  run "${F300[@]}" --families "prefix, MI head λ=0.5" "prefix, MI head λ=1" "prefix, MI head λ=4"    # 21 min
  run "${F300[@]}" --families "entropy budget" --extend                        # the budget's finer points: 2.3 min
  run python benchmarks/mi/sudoku_prefix_gap.py --model "$MODEL" --threads 2 --lams 2 --exact-n 1000 --out "$R"
  run python benchmarks/mi/sudoku_consistent.py --model "$MODEL" --threads 2 --out "$R"  # puzzles with several solutions: 25.4 min
  [ -f data/sudoku/train-wide-3k.csv ] || run unmask sudoku widen --puzzles data/sudoku/train.csv --n 3000 --out data/sudoku/train-wide-3k.csv
  local kind policy seed  # a head fitted on states of such puzzles (training puzzles widened alike): 25 min
  for b in "seq sequential 11" "par mi:gamma=1,lam=0 12"; do
    read -r kind policy seed <<< "$b"
    run unmask mi data --task sudoku --model "$MODEL" --examples data/sudoku/train-wide-3k.csv --out data/mi/sudoku-wide-$kind-$H \
        --states 1500 --shard-size 100 --rows 16 --policy "$policy" --seed "$seed" --workers 2
  done
  run unmask mi train --task sudoku --model "$MODEL" --data data/mi/sudoku-wide-seq-$H --data data/mi/sudoku-wide-par-$H --steps 3000 \
      --out runs/mi-head-wide-$H
  keep_head runs/mi-head-wide-$H "$KEEP"/heads/sudoku24-wide
  run python benchmarks/mi/sudoku_consistent.py --model "$MODEL" --head "$KEEP"/heads/sudoku24-wide --families "MI head λ=2" "MI head λ=8" \
      --name sudoku_consistent_widehead --threads 2 --out "$R"                  # 4.7 min
  run python benchmarks/mi/sudoku_failures.py --model "$MODEL" --head "$KEEP"/heads/sudoku24-relu --n 150 --threads 2 --out "$R"
  local S=(python benchmarks/mi/sudoku_fixed_steps.py --model "$MODEL" --influence-head "$D" --n 300
           --steps-kaggle 2 3 --steps-hard 3 4 5 6 8 10 --threads 2 --out "$R")
  run "${S[@]}"
  run "${S[@]}" --exact-only --exact-n 100 --exact-lams 0.1 1                # exact D and exact I charged: 58.9 min
  run "${S[@]}" --tables-only --frontier sudoku_frontier_300                  # beside the 300-puzzle frontier (last: a run compares
                                                                               # with its --frontier, sudoku_frontier by default)
  run python benchmarks/mi/sudoku_failures.py --model "$MODEL" --n 150 --families "entropy order, fixed passes" \
      "MI head λ=1, fixed passes" --culprits --threads 2 --out "$R" --name sudoku_failures_fixed
  run python benchmarks/sudoku/sudoku_rounds.py --out "$TOP"
}

# 8. The learned order shipped beside the model (T = 10, τ = 0.1, step cost c = 0.2, 800 steps: 21.8 min on
#    one core), its learning curve, then its table against the heuristics at budgets 2-10 (14 min on 2 cores).
train_order() {  # train_order OUT ARGS...: a learned-order run, resumed where it is
  local out=$1; shift
  resumable "$out" unmask sudoku train-order --model "$MODEL" --data data/sudoku/train-2k.csv --val data/sudoku/val-kaggle-200.csv \
      --val-n 100 --out "$out" --batch-size 16 --samples 4 --eval-every 100 --ckpt-every 50 "$@"
}
learned_orders() {
  local P="$KEEP"/orders out=runs/order-sudoku-tau0.1-c0.2-$H
  train_order "$out" --budget 10 --tau 0.1 --step-cost 0.2 --steps 800
  run python benchmarks/order/keep_order_policy.py "$out" "$P"/sudoku24-tau0.1-c0.2
  run cp "$P"/sudoku24-tau0.1-c0.2/order_policy.json "$P"/sudoku24-tau0.1-c0.2/order_policy.safetensors "$MODEL"/
  run mkdir -p "$ORD"/runs
  run cp "$out"/log.jsonl "$ORD"/runs/sudoku-tau0.1-c0.2.jsonl  # its log, and its curve
  run python benchmarks/order/order_curve.py "$out" --out "$ORD"/sudoku/curve
  run python benchmarks/order/learned_order.py --task sudoku --model "$MODEL" --n 200 --untrained --budgets 2 3 4 5 10 \
      --sets test-kaggle=data/sudoku/test-kaggle.csv test-hard=data/sudoku/test-hard.csv --out "$ORD"/sudoku
}


echo "step 1 (data, whatever FROM is)"
data
step 2 mdm
step 3 baselines
step 4 shipped_head
step 5 mi_tables
step 6 relu_head
step 7 exact_and_frontier
step 8 learned_orders

# 9. Every README table against its results file (always; no stamp).
echo "step 9 (check_readme)"
run python benchmarks/tools/check_readme.py
