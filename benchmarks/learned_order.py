"""Learned generation orders vs the heuristics at the same budgets, and on the accuracy-vs-NFE frontier.

    python benchmarks/learned_order.py --task maths --model unmask/models/maths-3step \
        --sets test=data/maths-3step/test.jsonl --n 200 --out benchmarks/results/learned_order/maths-3step

Fixed budgets T: the ``learned`` policy (the order policy saved in ``--model``, run at budget T) vs
IID (``random``), Top-Prob and Top-Prob-Margin at the same T — accuracy and the mean and range of the
steps each used; then the adaptive policies (entropy budget ``mi`` with λ = 0, ``eb``, ``threshold``)
swept so that their mean NFE covers the learned policy's. Writes ``learned_order.{json,md,png}``
beside the reference paper's rows (170M MDM on GSM8K; Bristol/Mistral, seed 004).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.eval import evaluate, markdown_table, shown_path
from unmask.model import load_model
from unmask.order.net import OrderConfig, OrderNet
from unmask.order.policy import LearnedOrder
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.tasks import get_task

BUDGETS = [4, 5, 10, 15]
FIXED = ["learned", "random", "top_prob", "margin"]
ADAPTIVE = ([f"mi:gamma={g},lam=0" for g in (0.01, 0.03, 0.1, 0.3, 1, 3)]
            + [f"eb:gamma={g}" for g in (0.1, 0.3, 1, 3, 10)]
            + [f"threshold:tau={t}" for t in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)])
REFERENCE = [  # seed 004, 170M MDM on GSM8K: (policy, T, mean steps, accuracy %)
    {"set": "reference (paper)", "policy": f"{name}:T={t}", "budget T": t, "mean_nfe": nfe, "accuracy %": acc}
    for name, t, nfe, acc in [("learned", 5, 4.01, 33.1), ("IID", 5, 5, 29.0), ("Top-Prob", 5, 5, 23.7),
                              ("Top-Prob-Margin", 5, 5, 24.0), ("learned", 10, 9.57, 37.8),
                              ("Top-Prob-Margin", 10, 10, 39.5), ("learned", 15, 9.43, 39.0)]
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="maths", help="sudoku or maths")
    p.add_argument("--model", required=True, help="model directory holding order_policy.* beside the model")
    p.add_argument("--sets", nargs="+", required=True, metavar="NAME=FILE", help="the task's example files to score")
    p.add_argument("--n", type=int, default=200, help="first N examples of each set")
    p.add_argument("--budgets", type=int, nargs="+", default=BUDGETS)
    p.add_argument("--adaptive", nargs="*", default=ADAPTIVE, help="adaptive policy specs")
    p.add_argument("--batch-size", type=int, default=200)
    p.add_argument("--untrained", action="store_true", help="also the order network at its initialisation (what training adds)")
    p.add_argument("--out", type=Path, required=True, help="folder for learned_order.{json,md,png}")
    args = p.parse_args()
    if args.n < 1:
        p.error("--n must be >= 1")

    torch.set_num_threads(2)
    start = time.time()
    model = load_model(args.model, task=args.task)
    task = get_task(args.task, model.cfg)
    sets = {}
    for item in args.sets:
        name, eq, path = item.partition("=")
        if not eq:
            p.error(f"--sets takes NAME=FILE, got {item!r}")
        sets[name] = task.read(path)[: args.n]
    runs = [(build_policy(name, model, args.model, budget=t), t, None) for t in args.budgets for name in FIXED]
    if args.untrained:  # what training adds: the same parametrisation at its initialisation (scores = −entropy)
        trained = build_policy("learned", model, args.model).net.cfg
        fresh = OrderNet(OrderConfig(trained.d_in, trained.d_hidden, trained.tau, trained.budget)).eval()
        runs += [(LearnedOrder(steps=t, net=fresh), t, f"learned-untrained:steps={t}") for t in args.budgets]
    runs += [(build_policy(spec, model, args.model), None, None) for spec in args.adaptive]
    rows = []
    for set_name, examples in sets.items():
        for policy, budget, label in runs:
            m = evaluate(task, model, examples, policy, batch_size=args.batch_size)
            rows.append({"set": set_name, "policy": label or policy_spec(policy), "budget T": budget, "mean_nfe": m["mean_nfe"],
                         "steps range": f"{m['min_nfe']}–{m['max_nfe']}", "accuracy %": round(100 * m["accuracy"], 1),
                         "seconds": m["seconds"]})
            print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"model": shown_path(args.model), "task": args.task, "sets": args.sets, "n": args.n,
            "order_policy": json.loads((Path(args.model) / "order_policy.json").read_text()).get("train"),
            "minutes": round((time.time() - start) / 60, 1)}
    (args.out / "learned_order.json").write_text(json.dumps({"meta": meta, "rows": rows, "reference": REFERENCE}, indent=1) + "\n")
    table = markdown_table(rows + REFERENCE, ["set", "policy", "budget T", "mean_nfe", "steps range", "accuracy %", "seconds"])
    (args.out / "learned_order.md").write_text(table + "\n")
    plot_pareto(rows, args.out / "learned_order.png", f"{args.task}: learned order vs heuristics")
    print(table)


if __name__ == "__main__":
    main()
