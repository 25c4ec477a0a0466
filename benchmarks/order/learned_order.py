"""Learned generation orders vs the heuristics at the same budgets, and on the accuracy-vs-NFE frontier.

    python benchmarks/order/learned_order.py --task maths --model unmask/models/maths-3step \
        --sets test=data/maths-3step/test.jsonl --n 200 --out benchmarks/results/order/maths-3step

Fixed budgets T: the ``learned`` policy (the order policy saved in ``--model``, run at budget T) vs
IID (``random``), Top-Prob and Top-Prob-Margin at the same T — accuracy and the mean and range of the
steps each used; then the adaptive policies (entropy budget ``mi`` with λ = 0, ``eb``, ``threshold``)
swept so that their mean NFE covers the learned policy's. ``--learned NAME=DIR`` adds more order
policies trained for the same base model (e.g. with other step costs ``--step-cost``), each run at
the budget it was trained for, sampled and deterministic (``sample=False``: every position with
p ≥ ½): the learned family's points on the accuracy-vs-NFE frontier.

Writes ``learned_order.{json,md,png}`` beside the reference paper's rows (170M MDM on GSM8K;
Fox et al. 2026, arXiv 2602.23968), and ``frontier.md``: every learned point against the heuristics at the
same mean NFE — the best heuristic row at most that cheap, and the best coin-flip mixture of two
heuristic rows at exactly that NFE (``unmask.eval.mixture_frontier``, the stricter comparator).
``--tables-only`` rebuilds the tables and the plot from ``learned_order.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.artifacts import ORDER_POLICY
from unmask.eval import evaluate, markdown_table, mixture_frontier, results_cache, shown_path
from unmask.model import WEIGHTS_FILE, load_model
from unmask.order.net import OrderConfig, OrderNet, load_order_net
from unmask.order.policy import Learned
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.runs import file_digest
from unmask.tasks import get_task

BUDGETS = [4, 5, 10, 15]
FIXED = ["learned", "random", "top_prob", "margin"]
ADAPTIVE = ([f"mi:gamma={g},lam=0" for g in (0.01, 0.03, 0.1, 0.3, 1, 3)]
            + [f"eb:gamma={g}" for g in (0.1, 0.3, 1, 3, 10)]
            + [f"threshold:tau={t}" for t in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)])
REFERENCE = [  # Fox et al. 2026 (arXiv 2602.23968), 170M MDM on GSM8K: (policy, T, mean steps, accuracy %)
    {"set": "reference (paper)", "policy": f"{name}:T={t}", "budget T": t, "mean_nfe": nfe, "accuracy %": acc}
    for name, t, nfe, acc in [("learned", 5, 4.01, 33.1), ("IID", 5, 5, 29.0), ("Top-Prob", 5, 5, 23.7),
                              ("Top-Prob-Margin", 5, 5, 24.0), ("learned", 10, 9.57, 37.8),
                              ("Top-Prob-Margin", 10, 10, 39.5), ("learned", 15, 9.43, 39.0)]
]


def family(label: str) -> str:
    """``learned`` for every trained order policy, else the policy's name (random, top_prob, mi, eb, …)."""
    name = label.split(":")[0]
    return "learned" if name.startswith("learned") and "untrained" not in name else name


def frontier_rows(rows: list[dict]) -> list[dict]:
    """Each learned row against the heuristics of its set at its mean NFE (untrained init left out)."""
    out = []
    for r in rows:
        if family(r["policy"]) != "learned":
            continue
        heur = [h for h in rows if h["set"] == r["set"] and family(h["policy"]) not in ("learned", "learned-untrained")]
        best = max((h for h in heur if h["mean_nfe"] <= r["mean_nfe"] + 1e-9), key=lambda h: h["accuracy %"], default=None)
        step = None if best is None else best["accuracy %"]  # the step frontier at this NFE
        mix = mixture_frontier(heur, r["mean_nfe"])
        out.append({"set": r["set"], "policy": r["policy"], "mean_nfe": r["mean_nfe"], "accuracy %": r["accuracy %"],
                    "best heuristic at ≤ NFE": None if best is None else f"{best['policy']} ({step})",
                    "gap vs step frontier": None if step is None else round(r["accuracy %"] - step, 1) + 0.0,  # no "-0"
                    "heuristic mixture %": None if mix is None else round(mix, 1),
                    "gap vs mixture": None if mix is None else round(r["accuracy %"] - mix, 1) + 0.0})
    return sorted(out, key=lambda r: (r["set"], r["mean_nfe"]))


def write_tables(result: dict, out: Path, task: str) -> str:
    rows = result["rows"]
    table = markdown_table(rows + result["reference"],
                           ["set", "policy", "budget T", "mean_nfe", "steps range", "accuracy %", "seconds"])
    (out / "learned_order.md").write_text(table + "\n")
    gaps = markdown_table(frontier_rows(rows), ["set", "policy", "mean_nfe", "accuracy %", "best heuristic at ≤ NFE",
                                                "gap vs step frontier", "heuristic mixture %", "gap vs mixture"])
    (out / "frontier.md").write_text(gaps + "\n")
    # one series per order policy (learned, learned[NAME], untrained) and reveal rule; heuristics by name
    shown = lambda r: r["policy"].split(":")[0] + (" (p ≥ ½)" if "sample=False" in r["policy"] else "")  # noqa: E731
    plot_pareto([{**r, "policy": shown(r)} for r in rows], out / "learned_order.png",
                f"{task}: learned order vs heuristics")
    return table + "\n\n" + gaps


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="maths", help="sudoku or maths")
    p.add_argument("--model", help="model directory holding order_policy.* beside the model")
    p.add_argument("--sets", nargs="+", metavar="NAME=FILE", help="the task's example files to score")
    p.add_argument("--n", type=int, default=200, help="first N examples of each set")
    p.add_argument("--budgets", type=int, nargs="+", default=BUDGETS)
    p.add_argument("--adaptive", nargs="*", default=ADAPTIVE, help="adaptive policy specs")
    p.add_argument("--learned", nargs="*", default=[], metavar="NAME=DIR",
                   help="more order policies for the same base model (model directories), each at its trained budget")
    p.add_argument("--batch-size", type=int, default=200)
    p.add_argument("--untrained", action="store_true", help="also the order network at its initialisation (what training adds)")
    p.add_argument("--out", type=Path, required=True, help="folder for learned_order.{json,md,png} and frontier.md")
    p.add_argument("--tables-only", action="store_true", help="rebuild the tables and the plot from OUT/learned_order.json")
    args = p.parse_args(argv)
    if args.tables_only:
        result = json.loads((args.out / "learned_order.json").read_text())
        print(write_tables(result, args.out, result["meta"]["task"]))
        return
    if not args.model:
        p.error("--model is required (or --tables-only)")
    if args.n < 1:
        p.error("--n must be >= 1")
    if not args.sets:
        p.error("--sets is required (or --tables-only)")

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
    shipped = build_policy("learned", model, args.model)  # also deterministic (p ≥ ½) at its trained budget
    runs.append((Learned(net=shipped.net, sample=False), shipped.budget(), f"learned:steps={shipped.budget()},sample=False"))
    if args.untrained:  # what training adds: the same parametrisation at its initialisation (scores = −entropy)
        trained = build_policy("learned", model, args.model).net.cfg
        fresh = OrderNet(OrderConfig(trained.d_in, trained.d_hidden, trained.tau, trained.budget)).eval()
        runs += [(Learned(steps=t, net=fresh), t, f"learned-untrained:steps={t}") for t in args.budgets]
    base = file_digest(Path(args.model) / WEIGHTS_FILE)
    extra = {}
    for item in args.learned:
        name, eq, path = item.partition("=")
        if not eq:
            p.error(f"--learned takes NAME=DIR, got {item!r}")
        if name in extra or name == "":
            p.error(f"--learned {item}: each policy needs a name of its own")
        if not (Path(path) / "order_policy.json").is_file():
            p.error(f"--learned {item}: no order_policy.json there")
        recorded = json.loads((Path(path) / "order_policy.json").read_text())
        weights = Path(path) / WEIGHTS_FILE  # a model directory, or order_policy.* alone with its trainer's record
        theirs = file_digest(weights) if weights.is_file() else recorded.get("source", {}).get("model_sha256")
        if theirs is None:
            p.error(f"--learned {item}: neither model weights beside it nor a recorded base-model hash")
        if theirs != base:
            p.error(f"--learned {item}: its base model is not --model's (the policy was trained for another model)")
        net = load_order_net(path)
        extra[name] = recorded.get("train_config")
        runs.append((Learned(net=net), net.cfg.budget, f"learned[{name}]:steps={net.cfg.budget}"))
        runs.append((Learned(net=net, sample=False), net.cfg.budget, f"learned[{name}]:steps={net.cfg.budget},sample=False"))
    runs += [(build_policy(spec, model, args.model), None, None) for spec in args.adaptive]
    # Rows measured before an interruption are kept in OUT/learned_order.partial.jsonl and reused.
    policy_files = [Path(i.partition("=")[2]) / name for i in args.learned for name in (ORDER_POLICY.weights, ORDER_POLICY.meta)]
    cache = results_cache(args.out, "learned_order", args.model, [Path(__file__), *(s.partition("=")[2] for s in args.sets),
                          *policy_files], n=args.n, sets=args.sets, learned=args.learned, batch_size=args.batch_size)
    rows = []
    for set_name, examples in sets.items():
        for policy, budget, label in runs:
            name = label or policy_spec(policy)
            key = {"set": set_name, "policy": name}
            m = cache.get(key)
            if m is None:
                m = evaluate(task, model, examples, policy, batch_size=args.batch_size)
                cache.put(key, m)
            rows.append({"set": set_name, "policy": name, "budget T": budget, "mean_nfe": m["mean_nfe"],
                         "steps range": f"{m['min_nfe']}–{m['max_nfe']}", "accuracy %": round(100 * m["accuracy"], 1),
                         "seconds": m["seconds"]})
            print(rows[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"model": shown_path(args.model), "task": args.task, "sets": args.sets, "n": args.n,
            "order_policy": json.loads((Path(args.model) / "order_policy.json").read_text()).get("train"),
            "learned": {name: {"directory": shown_path(item.partition("=")[2]), "train_config": cfg}
                        for (name, cfg), item in zip(extra.items(), args.learned)},
            "minutes": round((time.time() - start) / 60, 1), "reused_rows": cache.hits}
    result = {"meta": meta, "rows": rows, "reference": REFERENCE}
    (args.out / "learned_order.json").write_text(json.dumps(result, indent=1) + "\n")
    print(write_tables(result, args.out, args.task))
    cache.done()


if __name__ == "__main__":
    main()
