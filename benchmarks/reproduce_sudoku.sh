#!/usr/bin/env bash
# Every step behind the shipped Sudoku model, its MI head, its order policy and the README's Sudoku
# tables, in order. About 10 hours on 2 CPU cores for the 12-layer model (steps 1-2: 3.5 hours) and more
# for the 24-layer one (its steps 3-8 decode with twice the layers; step 2 also needs a GPU for 10 minutes),
# longer than one working session, so the script resumes:
#   - a finished step leaves a stamp in $STAMPS/<model hash>/ (default runs/reproduce-sudoku) and is
#     skipped on a rerun with the same model (delete the stamp to run it again); a new model (another
#     hash) runs every step again;
#   - everything a step builds or trains goes to folders named after the model's hash, and the
#     data builds and training runs inside a step resume what is there.
# Step 2 is the recipe of the 24-layer model shipped now (a 6-layer run, 12 layers stacked from it, 24 from those):
# shipping another model replaces it.
#
#   benchmarks/reproduce_sudoku.sh [FROM [TO]]   the steps FROM..TO (default 1..9; the data of step 1 is
#                                           always made if missing, step 9 always runs); on a new
#                                           model already in unmask/models/sudoku, FROM is 3
#   DRY_RUN=1 benchmarks/reproduce_sudoku.sh [FROM [TO]]   print the commands of the steps still to run
#
# A candidate model is measured beside the shipped one, without touching what is shipped, by pointing
# the script at its folder and at a results folder of its own, both or neither (steps 3-8 write the MI
# head and the order policy into MODEL, every table under RESULTS, the stamps into RESULTS/stamps;
# commit both between sessions to resume there):
#   MODEL=benchmarks/results/NAME/model RESULTS=benchmarks/results/NAME benchmarks/reproduce_sudoku.sh 3
set -euo pipefail
cd "$(dirname "$0")/.."
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
R=${RESULTS:-benchmarks/results}     # where the tables go
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
#    of benchmarks/train_sudoku_gpu.sh (7.4 and 2.4 min of training on an H200; the first call's 6,603 steps
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
  run python benchmarks/learning_curve.py runs/sudoku --out benchmarks/results/sudoku_candidate/6layer/learning_curve
  [ -f data/sudoku/train-hard.csv ] || run unmask sudoku generate --kind hard --n 20000 --seed 6 --out data/sudoku/train-hard.csv
  local twelve=(--data data/sudoku/train.csv --puzzles data/sudoku/train-hard.csv --puzzles data/sudoku/train.csv
                --puzzle-prob 0.5 --init runs/sudoku/model --lr 5e-4 --warmup 100
                --val data/sudoku/val-kaggle.csv --val data/sudoku/val-hard.csv --val-n 100 --eval-every 500
                --steps 2500 --out runs/sudoku-stack12)
  local shape=(--n-layers 12)  # a fresh start only: a resume keeps its checkpoint's shape (and accepts the same --init)
  [ ! -f runs/sudoku-stack12/checkpoint.pt ] || shape=()
  resumable runs/sudoku-stack12 unmask sudoku train "${twelve[@]}" "${shape[@]}"
  run python benchmarks/learning_curve.py runs/sudoku-stack12 --out benchmarks/results/sudoku_candidate/12layer/learning_curve
  [ -f data/sudoku/train-hard-b.csv ] || run unmask sudoku generate --kind hard --n 20000 --seed 7 --out data/sudoku/train-hard-b.csv
  run env INIT=runs/sudoku-stack12/model RUN=runs/sudoku-gpu24 STEPS=6603 benchmarks/train_sudoku_gpu.sh 480
  run env INIT=runs/sudoku-gpu24/model RUN=runs/sudoku-gpu24b LR=4e-4 SEED=25 STEPS=2400 benchmarks/train_sudoku_gpu.sh 200
  run mkdir -p "$MODEL"
  run cp runs/sudoku-gpu24b/model/config.json runs/sudoku-gpu24b/model/model.safetensors "$MODEL"/
  run mkdir -p benchmarks/results/sudoku_gpu
  run cp runs/sudoku-gpu24/log.jsonl benchmarks/results/sudoku_gpu/phase1.jsonl
  run cp runs/sudoku-gpu24b/log.jsonl benchmarks/results/sudoku_gpu/phase2.jsonl
  run python benchmarks/learning_curve.py benchmarks/results/sudoku_gpu/phase1.jsonl benchmarks/results/sudoku_gpu/phase2.jsonl \
      --out benchmarks/results/sudoku_learning_curve
}

# 3. Baseline policies on both test sets.
baselines() { run python benchmarks/sudoku_policies.py --model "$MODEL" --out "$R"; }

# 4. The shipped MI head (relu link: it can charge a pair exactly 0): exact-MI rows (16 random masked cells
#    per state) at states along sequential and along parallel trajectories (the entropy budget γ = 1) of
#    training puzzles, 5,000 of each in two builds apiece (1,500 + 3,500: the first two were the 3,000-state
#    head's data; about 110 core-minutes in all on the 24-layer model), the head fitted for 12,000 steps (3,000 rank
#    the pairs that matter at 0.664 instead of 0.676) and saved into the model's folder; then how negative the exact MI gets and what the head charges, on 1,200 states from the first
#    2,000 training puzzles (about 18 minutes on one thread for the 12-layer model).
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
shipped_head() {
  local kind policy seed states
  for b in "${HEAD_BUILDS[@]}"; do
    read -r kind policy seed states <<< "$b"
    run unmask mi data --task sudoku --model "$MODEL" --examples data/sudoku/train.csv --out "$(head_dir "$kind" "$seed")" \
        --states "$states" --shard-size 100 --rows 16 --policy "$policy" --seed "$seed" --workers 2
  done
  head_data
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]}" --steps 12000 --out "$MODEL"
  run python benchmarks/sudoku_mi_stats.py --model "$MODEL" --out "$R"
}

# 5. Choose γ, λ on validation puzzles (the defaults of `mi` come from this table), then test.
mi_tables() {
  run python benchmarks/sudoku_mi.py --model "$MODEL" --sets val-kaggle --n 200 --exact-n 0 \
      --gammas 0.01 0.03 0.1 0.3 --lams 2 5 --out "$R"/tuning
  run python benchmarks/sudoku_mi.py --model "$MODEL" --gammas 0.01 0.03 0.1 --lams 2 --out "$R"
  # (The "(first 20)" exact-MI rows alone: python benchmarks/sudoku_mi.py --only-exact --threads 1.)
}

# 6. The shipped head's calibration (a copy of the head beside the tables measured with it), the same
#    head fitted to DEMASK's influence D on the same states (2 min), the head's cost on a core of its
#    own, and what else a head could read.
relu_head() {
  head_data
  run mkdir -p "$R"/sudoku_head_relu
  run cp "$MODEL"/mi_head.json "$MODEL"/mi_head.safetensors "$R"/sudoku_head_relu/
  run python benchmarks/mi_head_calibration.py "$R"/sudoku_head_relu --out "$R"/sudoku_head_calibration
  run unmask mi train --task sudoku --model "$MODEL" "${HEAD_DATA[@]}" --out runs/mi-head-influence-$H --steps 3000 --target influence
  run mkdir -p "$R"/sudoku_head_influence
  run cp runs/mi-head-influence-$H/mi_head.json runs/mi-head-influence-$H/mi_head.safetensors "$R"/sudoku_head_influence/
  run python benchmarks/mi_head_calibration.py "$R"/sudoku_head_influence --old "$R"/sudoku_head_relu \
      --out "$R"/sudoku_head_influence_calibration
  run python benchmarks/mi_head_cost.py "$R"/sudoku_head_relu "$MODEL" --out "$R"/mi_head_cost \
      --data "${HEAD_DIRS[@]}"                                                      # one thread, nothing else running
  run python benchmarks/mi_head_variants.py --model "$MODEL" --data "${HEAD_DIRS[@]}" \
      --out "$R"/mi_head_variants                                            # what else the head could read
  run python benchmarks/mi_head_variants.py --model "$MODEL" --data "${HEAD_DIRS[@]}" \
      --target joint --out "$R"/mi_head_variants_joint                       # the same heads on the probe-joint MI J
}

# 7. Exact MI that scales (83 min on one core), the low-NFE frontier (about 140 min; 84 more for
#    the larger oracle), why its parallel decodes fail (13 min on two cores), the MI charge at a fixed
#    number of passes (17 min on two cores), the passes the puzzles allow (seconds), the MI map.
exact_and_frontier() {
  run python benchmarks/exact_mi_scaling.py --model "$MODEL" --out "$R"
  run python benchmarks/sudoku_frontier.py --model "$MODEL" --head "$R"/sudoku_head_relu --n 300 --exact-n 50 --out "$R" \
      --influence-head "$R"/sudoku_head_influence                              # (D-head rule families 35 min on one core, paced ones 5 on two)
  run python benchmarks/sudoku_frontier.py --model "$MODEL" --head "$R"/sudoku_head_relu --n 300 --exact-n 150 --out "$R" \
      --oracle-sets test-hard --oracle-only "entropy budget" "exact MI λ=2"      # the oracle on 150 test-hard puzzles (84 min)
  run python benchmarks/sudoku_failures.py --model "$MODEL" --head "$R"/sudoku_head_relu --n 300 --threads 2 --out "$R"
  run python benchmarks/sudoku_failures.py --model "$MODEL" --head "$R"/sudoku_head_influence --n 300 --threads 2 --out "$R" \
      --name sudoku_failures_dhead                                           # the same with the D head
  run python benchmarks/sudoku_fixed_steps.py --model "$MODEL" --head "$R"/sudoku_head_relu --n 300 --threads 2 --out "$R" \
      --influence-head "$R"/sudoku_head_influence                              # the charge at matched passes (17 min)
  run python benchmarks/sudoku_rounds.py --out "$R"
  run unmask mi map --task sudoku --model "$MODEL" --examples data/sudoku/test-kaggle.csv --index 3 --cell 1,1 --joint \
      --out "$R"/sudoku_mi_map.png
}

# 8. Learned orders: the shipped policy (c = 0.2, 36 min on one core) and c = 1 (29 min), the plain-ELBO
#    one (τ = 1, budget 8, 42 min), then their tables (12 min).
train_order() {  # train_order OUT ARGS...: a learned-order run, resumed where it is
  local out=$1; shift
  resumable "$out" unmask sudoku train-order --model "$MODEL" --data data/sudoku/train-2k.csv --val data/sudoku/val-kaggle-200.csv \
      --val-n 100 --out "$out" --batch-size 16 --samples 4 --eval-every 100 --ckpt-every 50 "$@"
}
learned_orders() {
  local c P="$R"/learned_order/policies
  for c in 0.2 1; do
    train_order runs/order-sudoku-tau0.1-c$c-$H --budget 10 --tau 0.1 --step-cost $c --steps 800
  done
  # The plain-ELBO policy was trained to step 400 and resumed with --steps 1200 (a stretched schedule).
  [ -f runs/order-sudoku-T8-$H/checkpoint.pt ] || train_order runs/order-sudoku-T8-$H --budget 8 --steps 400
  train_order runs/order-sudoku-T8-$H --budget 8 --steps 1200
  run python benchmarks/keep_order_policy.py runs/order-sudoku-T8-$H "$P"/sudoku-plain
  run python benchmarks/keep_order_policy.py runs/order-sudoku-tau0.1-c1-$H "$P"/sudoku-tau0.1-c1
  run python benchmarks/keep_order_policy.py runs/order-sudoku-tau0.1-c0.2-$H "$P"/sudoku-tau0.1-c0.2
  run cp "$P"/sudoku-tau0.1-c0.2/order_policy.json "$P"/sudoku-tau0.1-c0.2/order_policy.safetensors "$MODEL"/
  run mkdir -p "$R"/learned_order/runs
  for run_name in T8 tau0.1-c0.2 tau0.1-c1; do  # their logs, and the shipped policy's curve
    run cp runs/order-sudoku-$run_name-$H/log.jsonl "$R"/learned_order/runs/sudoku-$run_name.jsonl
  done
  run python benchmarks/order_curve.py runs/order-sudoku-tau0.1-c0.2-$H --out "$R"/learned_order/sudoku/curve
  run python benchmarks/learned_order.py --task sudoku --model "$MODEL" --n 200 --untrained \
      --sets test-kaggle=data/sudoku/test-kaggle.csv test-hard=data/sudoku/test-hard.csv \
      --learned plain="$P"/sudoku-plain c1="$P"/sudoku-tau0.1-c1 --out "$R"/learned_order/sudoku
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
run python benchmarks/check_readme.py
