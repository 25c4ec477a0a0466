"""The ELBO against outcome RL for the same order network, beside the heuristics, at fixed budgets and on the frontier.

    python benchmarks/order/elbo_vs_rl.py --task maths --model unmask/models/maths-3step \
        --learned elbo=runs/maths3-elbo-c0.4 rl=runs/maths3-rl-c0.05 \
        --sets test=data/maths-3step/test.jsonl --n 1000 --out benchmarks/results/order/elbo-vs-rl/maths-3step

Every order policy of ``--learned`` (trained by ``benchmarks/order/train_elbo_vs_rl.sh``: the same
network, model, budget, τ and number of rollouts; Fox et al. 2026, arXiv 2602.23968, against the
outcome RL of UPO, arXiv 2510.05725, and its kin) runs at each budget T of ``--budgets`` beside IID
(``random``), Top-Prob and Top-Prob-Margin at the same T: accuracy, mean and max steps, and the paired
bootstrap gap (Efron 1979; the examples resampled, the same draw for both rows) of each learned row
against Margin at its T and of the first learned policy against the second. The adaptive heuristics
(entropy budget ``mi`` with λ = 0, ``eb``, ``threshold``) are swept for the frontier: every learned row
against the best coin-flip mixture of two heuristic rows at its mean NFE
(:func:`unmask.eval.row_gap_interval`, with its paired bootstrap interval).

Example k is decoded with seed k, greedy tokens. Rows are kept as they finish (``OUT/elbo_vs_rl.partial.jsonl``),
so an interrupted run resumes; ``--tables-only`` rebuilds the tables and the plot from ``OUT/elbo_vs_rl.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.artifacts import ORDER_POLICY
from unmask.errors import UnmaskError
from unmask.eval import (
    bootstrap_weights,
    decode_all,
    family_outcomes,
    gap_summary,
    markdown_table,
    results_cache,
    row_gap_interval,
    shown_path,
)
from unmask.model import load_model
from unmask.order.net import load_order_net
from unmask.order.policy import Learned
from unmask.plots import plot_pareto
from unmask.policies import build_policy, policy_spec
from unmask.tasks import get_task

BUDGETS = [4, 5, 10, 15]
FIXED = ["random", "top_prob", "margin"]
ADAPTIVE = ([f"mi:gamma={g},lam=0" for g in (0.01, 0.03, 0.1, 0.3, 1, 3)]
            + [f"eb:gamma={g}" for g in (0.1, 0.3, 1, 3, 10)]
            + [f"threshold:tau={t}" for t in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)])
RESAMPLES = 2000


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def paired_gap(a: str, b: str, resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Accuracy of outcome string ``a`` minus ``b`` (points, same examples) with its paired bootstrap 95 % interval."""
    d = torch.tensor([int(x) - int(y) for x, y in zip(a, b, strict=True)], dtype=torch.float64)  # (N,)
    gaps = 100 * bootstrap_weights(len(d), resamples, seed) @ d / len(d)  # (1 + B,)
    lo, hi = torch.quantile(gaps[1:], torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    return {"gap": round(float(gaps[0]), 1), "95% interval": f"{lo:+.1f}…{hi:+.1f}", "low": round(lo, 2), "high": round(hi, 2)}


def learned_name(policy: str) -> str | None:
    """``NAME`` of a ``learned[NAME]:…`` row, else None."""
    return policy[len("learned["):policy.index("]")] if policy.startswith("learned[") else None


def gaps(rows: list[dict], names: list[str], resamples: int) -> list[dict]:
    """Each learned row against Margin at its T, and the first learned policy against the second, paired."""
    by = {(r["set"], r["policy"]): r for r in rows}
    out = []
    for r in rows:
        name = learned_name(r["policy"])
        if name is None:
            continue
        margin = by.get((r["set"], f"margin:steps={r['budget T']}"))
        row = {"set": r["set"], "policy": r["policy"], "budget T": r["budget T"], "accuracy %": r["accuracy %"],
               "mean_nfe": r["mean_nfe"], "max_nfe": r["max_nfe"]}
        if margin is not None:
            g = paired_gap(r["solved"], margin["solved"], resamples)
            row |= {"vs Margin": g["gap"], "vs Margin 95%": g["95% interval"]}
        if len(names) > 1 and name == names[0]:
            other = by.get((r["set"], f"learned[{names[1]}]:steps={r['budget T']}"))
            if other is not None:
                g = paired_gap(r["solved"], other["solved"], resamples)
                row |= {f"{names[0]} − {names[1]}": g["gap"], f"{names[0]} − {names[1]} 95%": g["95% interval"]}
        out.append(row)
    return out


def frontier(rows: list[dict], resamples: int) -> list[dict]:
    """Each learned row against the heuristics' mixture frontier of its set at its mean NFE (paired bootstrap)."""
    out = []
    for s in sorted({r["set"] for r in rows}):
        mine = [r for r in rows if r["set"] == s]
        heur = [r for r in mine if learned_name(r["policy"]) is None]
        learned = [r for r in mine if learned_name(r["policy"]) is not None]
        if not heur or not learned:
            continue
        n = len(heur[0]["solved"])
        for g in row_gap_interval(family_outcomes(heur, n), family_outcomes(learned, n), resamples):
            r = learned[g["row"]]
            out.append({"set": s, "policy": r["policy"], "mean_nfe": round(g["nfe"], 2), "accuracy %": round(g["accuracy %"], 1),
                        **{f"vs mixture {k}": v for k, v in gap_summary(g).items() if k in ("gap", "95% interval")}})
    return sorted(out, key=lambda r: (r["set"], r["mean_nfe"]))


def write_tables(result: dict, out: Path) -> str:
    rows, names, resamples = result["rows"], result["meta"]["learned_names"], result["meta"]["resamples"]
    main = markdown_table(rows, ["set", "policy", "budget T", "accuracy %", "mean_nfe", "max_nfe", "seconds"])
    gap_cols = ["set", "policy", "budget T", "accuracy %", "mean_nfe", "max_nfe", "vs Margin", "vs Margin 95%"]
    if len(names) > 1:
        gap_cols += [f"{names[0]} − {names[1]}", f"{names[0]} − {names[1]} 95%"]
    fixed = markdown_table(gaps(rows, names, resamples), gap_cols)
    front = markdown_table(frontier(rows, resamples), ["set", "policy", "mean_nfe", "accuracy %", "vs mixture gap",
                                                       "vs mixture 95% interval"])
    (out / "elbo_vs_rl.md").write_text(main + "\n")
    (out / "fixed_budgets.md").write_text(fixed + "\n")
    (out / "frontier.md").write_text(front + "\n")
    for s in sorted({r["set"] for r in rows}):
        shown = [{**r, "policy": learned_name(r["policy"]) or r["policy"].split(":")[0]} for r in rows if r["set"] == s]
        plot_pareto(shown, out / f"elbo_vs_rl-{s}.png", f"{result['meta']['task']} {s}: ELBO vs RL order vs heuristics")
    return fixed + "\n\n" + front


def measure(task, model, examples, policy, batch_size: int) -> dict:
    """One row: every example's outcome and passes (example k decoded with seed k, greedy tokens)."""
    run = decode_all(model, task.encode(examples), policy, batch_size=batch_size)
    solved = task.score(run.result.tokens, examples).tolist()
    nfe = run.result.nfe
    return {"accuracy %": round(100 * sum(solved) / len(solved), 1), "mean_nfe": round(float(nfe.double().mean()), 3),
            "max_nfe": int(nfe.max()), "seconds": round(run.seconds, 1), "solved": "".join("1" if s else "0" for s in solved),
            "nfe": nfe.tolist()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="maths", help="sudoku or maths")
    p.add_argument("--model", help="the base model directory the order policies were trained for")
    p.add_argument("--learned", nargs="+", default=[], metavar="NAME=DIR",
                   help="order policies (run folders), e.g. elbo=RUN rl=RUN")
    p.add_argument("--sets", nargs="+", metavar="NAME=FILE", help="the task's example files to score")
    p.add_argument("--n", type=positive_int, default=1000, help="first N examples of each set")
    p.add_argument("--budgets", type=positive_int, nargs="+", default=BUDGETS)
    p.add_argument("--adaptive", nargs="*", default=ADAPTIVE, help="adaptive heuristic specs for the frontier")
    p.add_argument("--batch-size", type=positive_int, default=200)
    p.add_argument("--resamples", type=positive_int, default=RESAMPLES, help="bootstrap resamples of the intervals")
    p.add_argument("--out", type=Path, required=True, help="folder for elbo_vs_rl.{json,md}, fixed_budgets.md, frontier.md, PNGs")
    p.add_argument("--tables-only", action="store_true", help="rebuild the tables and plots from OUT/elbo_vs_rl.json")
    args = p.parse_args(argv)
    try:
        if args.tables_only:
            print(write_tables(json.loads((args.out / "elbo_vs_rl.json").read_text()), args.out))
            return
        run(p, args)
    except (UnmaskError, OSError, json.JSONDecodeError) as e:
        p.error(str(e))


def named(p: argparse.ArgumentParser, items: list[str], flag: str) -> dict[str, str]:
    """``NAME=PATH`` items as a dict (argparse error for another form or a name given twice)."""
    out = {}
    for item in items:
        name, eq, path = item.partition("=")
        if not (eq and name and path):
            p.error(f"{flag} takes NAME=PATH, got {item!r}")
        if name in out:
            p.error(f"{flag}: the name {name!r} is given twice")
        out[name] = path
    return out


def run(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not (args.model and args.sets and args.learned):
        p.error("--model, --sets and --learned are required (or --tables-only)")
    set_files, learned_dirs = named(p, args.sets, "--sets"), named(p, args.learned, "--learned")
    start = time.time()
    model = load_model(args.model, task=args.task)
    task = get_task(args.task, model.cfg)
    sets = {name: task.read(path)[: args.n] for name, path in set_files.items()}
    nets = {name: load_order_net(path, base=args.model, named=True) for name, path in learned_dirs.items()}
    runs = [(Learned(steps=t, net=net), f"learned[{name}]:steps={t}", t) for t in args.budgets for name, net in nets.items()]
    # the adaptive heuristics (a few passes each) before the fixed budgets' up to 15: a run cut short has the frontier
    runs += [(build_policy(spec, model, args.model), None, None) for spec in args.adaptive]
    runs += [(build_policy(name, model, args.model, budget=t), None, t) for t in args.budgets for name in FIXED]
    files = [Path(__file__), *set_files.values(),
             *(Path(d) / f for d in learned_dirs.values() for f in (ORDER_POLICY.weights, ORDER_POLICY.meta))]
    cache = results_cache(args.out, "elbo_vs_rl", args.model, files, n=args.n, sets=args.sets, learned=args.learned)
    rows = []
    for set_name, examples in sets.items():
        for policy, label, budget in runs:
            key = {"set": set_name, "policy": label or policy_spec(policy)}
            m = cache.get(key)
            if m is None:
                m = measure(task, model, examples, policy, args.batch_size)
                cache.put(key, m)
            rows.append({**key, "budget T": budget, **m})
            print({k: v for k, v in rows[-1].items() if k not in ("solved", "nfe")}, flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"model": shown_path(args.model), "task": args.task, "sets": args.sets, "n": args.n, "resamples": args.resamples,
            "learned_names": list(nets),
            "learned": {name: json.loads((Path(path) / ORDER_POLICY.meta).read_text()).get("train_config")
                        for name, path in learned_dirs.items()},
            "minutes": round((time.time() - start) / 60, 1), "reused_rows": cache.hits}
    result = {"meta": meta, "rows": rows}
    (args.out / "elbo_vs_rl.json").write_text(json.dumps(result, indent=1) + "\n")
    print(write_tables(result, args.out))
    cache.done()


if __name__ == "__main__":
    main()
