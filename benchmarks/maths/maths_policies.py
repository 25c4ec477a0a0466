"""Exact final-answer accuracy vs decoding steps on the maths task (Fox et al. 2026's GSM8K table, at our scale).

    python benchmarks/maths/maths_policies.py            # the shipped model on the standard test split

Fixed-budget policies (IID = random, Top-Prob, Top-Prob-Margin) run at every budget T and at the full
budget (T = answer length: one position per pass); adaptive ones (EB, threshold, entropy budget) report
the mean NFE they spend. Writes
``benchmarks/results/maths/maths_policies.{json,md,png}`` beside the paper's rows (Fox et al. 2026, arXiv
2602.23968: a 170M MDM on GSM8K).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.eval import evaluate, markdown_table, shown_path
from unmask.model import load_model, resolve_device
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.tasks.maths.data import problems_or_standard
from unmask.tasks.maths.task import DEFAULT_MODEL, MathsTask, shape

BUDGETS = [4, 5, 10, 15]
FIXED = ["random", "top_prob", "margin"]
ADAPTIVE = ["sequential", "eb:gamma=0.1", "eb:gamma=1", "threshold:tau=0.9", "threshold:tau=0.7",
            "mi:gamma=0.1,lam=0", "mi:gamma=1,lam=0"]  # mi with λ=0: the entropy budget, no head needed
REFERENCE = [  # Fox et al. 2026 (arXiv 2602.23968), 170M MDM on GSM8K
    {"set": "reference (paper)", "policy": f"{name}:T={t}", "mean_nfe": nfe, "accuracy %": acc}
    for name, t, nfe, acc in [("learned", 5, 4.01, 33.1), ("IID", 5, 5, 29.0), ("Top-Prob", 5, 5, 23.7),
                              ("Top-Prob-Margin", 5, 5, 24.0), ("learned", 10, 9.57, 37.8),
                              ("Top-Prob-Margin", 10, 10, 39.5), ("learned", 15, 9.43, 39.0)]
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--problems", help="GSM8K-style JSONL (default: the standard test split, regenerated)")
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--device", default="cpu", help="where the model and the decode loop run, e.g. cuda")
    p.add_argument("--out", default="benchmarks/results/maths", type=Path)
    args = p.parse_args()
    if args.n < 1:
        p.error("--n must be >= 1")

    torch.set_num_threads(2)
    start = time.time()
    model = load_model(args.model, task="maths").to(resolve_device(args.device))
    problems = problems_or_standard(args.problems, "test", shape(model.cfg))
    problems = problems[: args.n]
    full = model.cfg.seq_len - model.cfg.prompt_len  # the answer region: one position per pass
    runs = [(build_policy(name, model, args.model, budget=t), t) for t in [*BUDGETS, full] for name in FIXED]
    runs += [(build_policy(spec, model, args.model), None) for spec in ADAPTIVE]
    task = MathsTask.for_model(model.cfg)
    rows = []
    for policy, budget in runs:
        m = evaluate(task, model, problems, policy, batch_size=128)
        rows.append({"set": "maths test", "policy": policy_spec(policy), "budget T": budget, "mean_nfe": m["mean_nfe"],
                     "accuracy %": round(100 * m["accuracy"], 1), "seconds": m["seconds"]})
        print(rows[-1])
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"model": shown_path(args.model), "device": args.device, "problems": args.problems or "standard test split",
            "n": len(problems), "minutes": round((time.time() - start) / 60, 1)}
    (args.out / "maths_policies.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "reference": REFERENCE}, indent=1) + "\n")
    table = markdown_table(rows + REFERENCE, ["set", "policy", "budget T", "mean_nfe", "accuracy %", "seconds"])
    (args.out / "maths_policies.md").write_text(table + "\n")
    plot_pareto(rows + REFERENCE, args.out / "maths_policies.png", "Maths")
    print(table)


if __name__ == "__main__":
    main()
