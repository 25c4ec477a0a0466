"""The MI charge at a fixed number of passes on Sudoku: does it choose better sets than entropy order?

    python benchmarks/mi/sudoku_fixed_steps.py --head benchmarks/models/heads/sudoku12-relu \
        --influence-head benchmarks/models/heads/sudoku12-influence --n 300

Every policy here takes exactly S passes per puzzle (``mi_steps:steps=S,lam=λ``: ⌈remaining / steps
left⌉ positions per pass, each next the lowest H_i + λ·Σ_taken Î_ij), so the NFE is matched and the
paired difference in accuracy from λ = 0 (entropy order at the same S, on the same puzzles, with its
exact McNemar p-value) is what the MI term buys by choosing *which* cells share a pass. The budget
rule's frontier (``sudoku_frontier.py``) mixes that with pacing: there the charge also changes how
many cells a pass takes.

Each head (the MI head, ``--head``; a head fitted to DEMASK's influence D, ``--influence-head``) at
λ ∈ {0.5, 1, 2, 4}; S over the low-NFE regime of each set. Beside each row, the entropy budget's
mixture frontier at S passes (``mi:gamma=γ,lam=0``, the best per-puzzle coin flip between two of
its γ), read from OUT/sudoku_frontier.json (``--frontier`` names another) when that file measured the same
model on the same number of puzzles.
Writes OUT/NAME.{json,md,png}; measured rows are kept in OUT/NAME.partial.jsonl, so a rerun resumes;
``--tables-only`` derives the comparisons, tables and plot again from OUT/NAME.json.

``--exact-n N`` adds an oracle on the first N puzzles of ``--exact-sets`` (test-hard by default): the
same rule charging an exact score from probing the model (``exact_steps:steps=S,lam=λ,charge=C``:
DEMASK's influence D and the paper's I) at ``--exact-steps``, each paired with entropy order on those
puzzles, its probe passes reported apart. It answers whether a perfect head would choose better cells.
``--exact-only`` measures the oracle alone, keeping the head rows of OUT/NAME.json; an oracle row that
file already has (the same model, number of puzzles, set, family and spec) is reused, not measured
again (``--remeasure``: measured afresh, e.g. after a change to the data or to ``exact_steps``), and its
oracle rows not asked for are kept.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from unmask.decode import TokenRule
from unmask.eval import decode_all, markdown_table, mixture_frontier, results_cache, shown_path
from unmask.io import atomic_write
from unmask.mi.estimator import HEAD_CONFIG, HEAD_WEIGHTS
from unmask.model import load_model
from unmask.plots import plot_pareto
from unmask.policies import build_policy
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

STEPS = {"test-kaggle": [2, 3, 4, 5, 6], "test-hard": [4, 6, 8, 10, 12, 15]}  # set → passes S (its low-NFE regime)
LAMBDAS = [0.5, 1.0, 2.0, 4.0]
BASE = "entropy order"  # the λ = 0 twin of every row
EXACT = {"influence": "exact D", "mi": "exact MI"}  # exact_steps charge → family of its rows


def mcnemar_p(gained: int, lost: int) -> float:
    """Exact two-sided McNemar p-value (McNemar 1947): the chance, were both rules equally good, of a
    split of the ``gained + lost`` puzzles only one of them solves at least this uneven (binomial at ½)."""
    n = gained + lost
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(gained, lost) + 1)) / 2**n)


def paired(solved: list[bool], base: list[bool]) -> dict:
    """Accuracy difference (points) of ``solved`` from ``base`` on the same puzzles, its 95 % normal
    interval from the per-puzzle differences, the puzzles only one of them solves, and the exact
    McNemar p-value of that split."""
    d = [int(a) - int(b) for a, b in zip(solved, base, strict=True)]
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * sd / math.sqrt(n)
    gained, lost = d.count(1), d.count(-1)
    return {"vs λ=0": round(100 * mean, 1), "95% interval": f"{100 * (mean - half):+.1f}…{100 * (mean + half):+.1f}",
            "gained": gained, "lost": lost, "p (McNemar)": round(mcnemar_p(gained, lost), 4)}


DERIVED = ("vs λ=0", "95% interval", "gained", "lost", "p (McNemar)", "budget mixture %", "vs budget mixture")


def compared(rows: list[dict], frontier_rows: dict[str, list[dict]]) -> list[dict]:
    """``rows`` (measured columns only are read) with each charged row paired with its λ = 0 twin (same
    set, same passes) and every row set against the entropy budget's mixture frontier at its passes."""
    rows = [{k: v for k, v in r.items() if k not in DERIVED} for r in rows]
    base = {(r["set"], r["mean_nfe"]): r for r in rows if r["lam"] == 0}
    for r in rows:
        if r["lam"]:
            twin = base[r["set"], r["mean_nfe"]]
            r.update(paired([c == "1" for c in r["solved"]], [c == "1" for c in twin["solved"]]))
        mix = mixture_frontier(frontier_rows[r["set"]], r["mean_nfe"]) if r["set"] in frontier_rows else None
        if mix is not None:  # (None: fewer passes than the budget's cheapest γ takes; no mixture reaches them)
            r["budget mixture %"] = round(mix, 1)
            r["vs budget mixture"] = round(r["accuracy %"] - r["budget mixture %"], 1)
    return rows


def budget_frontier(out: Path, name: str, model: str, n: int) -> dict[str, list[dict]]:
    """The entropy budget's rows per set from OUT/NAME.json (a ``sudoku_frontier.py`` result), if it
    measured ``model`` on ``n`` puzzles."""
    path = out / f"{name}.json"
    if not path.is_file():
        return {}
    old = json.loads(path.read_text())
    if old.get("model") != model or old.get("n") != n:
        return {}
    rows: dict[str, list[dict]] = {}
    for r in old["rows"]:
        if r["family"] == "entropy budget" and r["set"] in STEPS:
            rows.setdefault(r["set"], []).append(r)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model folder")
    p.add_argument("--head", help="folder of the MI head (mi_head.*) (default: the model folder's)")
    p.add_argument("--influence-head",
                   help="folder of a head fitted to DEMASK's influence D (mi_head.*), measured beside the MI head")
    p.add_argument("--data-dir", default="data/sudoku", type=Path, help="folder of test-kaggle.csv and test-hard.csv")
    p.add_argument("--n", type=int, default=300, help="puzzles of each test set (the frontier's 300 by default)")
    p.add_argument("--lams", type=float, nargs="+", default=LAMBDAS, help="λ of every head")
    p.add_argument("--steps-kaggle", type=int, nargs="+", default=STEPS["test-kaggle"], help="passes S on test-kaggle")
    p.add_argument("--steps-hard", type=int, nargs="+", default=STEPS["test-hard"], help="passes S on test-hard")
    p.add_argument("--name", default="sudoku_fixed_steps")
    p.add_argument("--frontier", default="sudoku_frontier",
                   help="OUT/FRONTIER.json: the frontier result whose entropy budget rows are compared")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    p.add_argument("--tables-only", action="store_true", help="rewrite the comparisons, tables and plot from OUT/NAME.json")
    p.add_argument("--exact-n", type=int, default=0, help="puzzles of the exact-charge oracle (0: none)")
    p.add_argument("--exact-sets", nargs="+", default=["test-hard"], choices=list(STEPS), help="test sets of the oracle")
    p.add_argument("--exact-steps", type=int, nargs="+", default=[4, 6], help="passes S of the oracle")
    p.add_argument("--exact-lams", type=float, nargs="+", default=[1.0], help="λ of the oracle's charges")
    p.add_argument("--exact-charges", nargs="+", default=list(EXACT), choices=list(EXACT), help="exact scores charged")
    p.add_argument("--exact-only", action="store_true",
                   help="measure the oracle alone; keep the other rows from OUT/NAME.json, "
                        "and reuse its oracle rows asked for again")
    p.add_argument("--remeasure", action="store_true",
                   help="with --exact-only: measure the oracle rows asked for afresh, not reuse them")
    args = p.parse_args(argv)
    if args.tables_only:  # the comparisons, tables and plot again from the measured rows
        path = args.out / f"{args.name}.json"
        if not path.is_file():
            p.error(f"--tables-only: no {path}")
        result = json.loads(path.read_text())
        frontier_rows = budget_frontier(args.out, args.frontier, result["model"], result["n"])
        result["budget_frontier_from"] = f"{args.frontier}.json" if frontier_rows else None
        write({**result, "rows": compared(result["rows"], frontier_rows)}, args.out, args.name, frontier_rows)
        return
    if args.remeasure and not args.exact_only:
        p.error("--remeasure applies to the oracle rows --exact-only would reuse; give --exact-only too")
    if any(lam <= 0 for lam in args.lams):
        p.error("--lams: every λ must be > 0 (λ = 0 is the baseline each row is compared with)")
    if any(s < 1 for s in args.steps_kaggle + args.steps_hard + args.exact_steps):
        p.error("--steps-kaggle/--steps-hard/--exact-steps: passes must be >= 1")
    if any(lam <= 0 for lam in args.exact_lams) or args.exact_n < 0:
        p.error("--exact-lams: every λ must be > 0; --exact-n must be >= 0")
    heads = {"MI head": args.head or args.model, **({"D head": args.influence_head} if args.influence_head else {})}
    kept = []  # --exact-only: the head rows measured before
    earlier: dict[tuple, dict] = {}  # --exact-only: the oracle rows measured before, reused where asked again
    if args.exact_only:
        path = args.out / f"{args.name}.json"
        if not args.exact_n or not path.is_file():
            p.error(f"--exact-only needs --exact-n > 0 and {path} to keep the other rows from")
        old = json.loads(path.read_text())
        if (old["model"], old["n"]) != (shown_path(args.model), args.n):
            p.error(f"--exact-only: {path} was measured with {old['model']} on {old['n']} puzzles, "
                    f"not {shown_path(args.model)} on {args.n}")
        kept, heads = [r for r in old["rows"] if r["set"] in STEPS], old["heads"]
        earlier = {(r["set"], r["family"], r["policy"]): {k: v for k, v in r.items() if k not in DERIVED}
                   for r in old["rows"] if r["set"] not in STEPS}
    for label, folder in heads.items():
        if not (Path(folder) / HEAD_WEIGHTS).is_file():
            p.error(f"{label}: no {HEAD_WEIGHTS} in {folder}")

    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    task = SudokuTask()
    steps = {"test-kaggle": args.steps_kaggle, "test-hard": args.steps_hard}
    files = [Path(__file__), *(args.data_dir / f"{s}.csv" for s in steps)]
    cache = results_cache(args.out, args.name, args.model,
                          files + [Path(f) / w for f in heads.values() for w in (HEAD_WEIGHTS, HEAD_CONFIG)],
                          n=args.n, threads=args.threads)  # (rows keep their seconds)

    reused: list[str] = []  # the oracle rows taken from OUT/NAME.json
    asked: set[tuple] = set()  # (set, family, spec) of every row measured or reused this run

    def measure(label: str, examples: list, tokens: torch.Tensor, family: str, spec: str, folder: str, lam: float) -> dict:
        key = {"set": label, "family": family, "policy": spec}
        row = cache.get(key)
        asked.add((label, family, spec))
        if row is None and (label, family, spec) in earlier and not args.remeasure:  # --exact-only: measured by an earlier run
            row = earlier[label, family, spec]
            reused.append(spec)
        if row is None:
            run = decode_all(model, tokens, build_policy(spec, model, folder), TokenRule())
            solved = task.score(run.result.tokens, examples).tolist()
            row = {**key, "mean_nfe": float(run.result.nfe.double().mean()),
                   "accuracy %": round(100 * sum(solved) / len(solved), 1), "seconds": round(run.seconds, 1),
                   "solved": "".join("1" if s else "0" for s in solved)}
            if run.result.extra_passes.any():  # the oracle's probes, apart from NFE
                row["extra_passes"] = round(float(run.result.extra_passes.double().mean()), 1)
            cache.put(key, row)
        print(json.dumps({k: row[k] for k in ("set", "family", "policy", "mean_nfe", "accuracy %")}), flush=True)
        return {**row, "lam": lam}

    rows = kept
    for set_name, passes in {} if args.exact_only else steps.items():
        examples = standard_set(args.data_dir, set_name, args.n)
        tokens = task.encode(examples)
        for s in passes:
            rows.append(measure(set_name, examples, tokens, BASE, f"mi_steps:steps={s},lam=0", args.model, 0.0))
            for label, folder in heads.items():
                for lam in args.lams:
                    rows.append(measure(set_name, examples, tokens, label, f"mi_steps:steps={s},lam={lam}", folder, lam))
    for set_name in args.exact_sets if args.exact_n else []:  # the oracle: exact charges on the first puzzles
        examples = standard_set(args.data_dir, set_name, args.exact_n)
        tokens, label = task.encode(examples), f"{set_name} (first {args.exact_n})"
        for s in args.exact_steps:
            rows.append(measure(label, examples, tokens, BASE, f"mi_steps:steps={s},lam=0", args.model, 0.0))
            for charge in args.exact_charges:
                for lam in args.exact_lams:
                    rows.append(measure(label, examples, tokens, EXACT[charge],
                                        f"exact_steps:steps={s},lam={lam},charge={charge}", args.model, lam))
    rows += [r for key, r in earlier.items() if key not in asked]  # --exact-only: earlier oracle rows not asked for
    frontier_rows = budget_frontier(args.out, args.frontier, shown_path(args.model), args.n)
    rows = compared(rows, frontier_rows)
    result = {"model": shown_path(args.model), "heads": {k: shown_path(v) for k, v in heads.items()}, "n": args.n,
              **({"exact_n": args.exact_n} if args.exact_n else {}),
              "budget_frontier_from": f"{args.frontier}.json" if frontier_rows else None,
              "minutes": round((time.time() - start) / 60, 1), "reused_rows": cache.hits + len(reused), "rows": rows}
    write(result, args.out, args.name, frontier_rows)
    cache.done()


def write(result: dict, out: Path, name: str, frontier_rows: dict[str, list[dict]]) -> None:
    """The JSON, the Markdown table (per-puzzle outcomes left out) and the plot."""
    rows = result["rows"]
    out.mkdir(parents=True, exist_ok=True)
    # (--tables-only rewrites its input)
    atomic_write(out / f"{name}.json", lambda t: Path(t).write_text(json.dumps(result, indent=1) + "\n"))
    cols = ["set", "family", "lam", "policy", "mean_nfe", "extra_passes", "accuracy %", "vs λ=0", "95% interval", "gained",
            "lost", "p (McNemar)", "budget mixture %", "vs budget mixture"]
    md = markdown_table(rows, [c for c in cols if any(c in r for r in rows)])
    atomic_write(out / f"{name}.md", lambda t: Path(t).write_text(md + "\n"))
    shown = [{"set": r["set"], "policy": f"{r['family']} λ={r['lam']:g}" if r["lam"] else BASE, "mean_nfe": r["mean_nfe"],
              "accuracy %": r["accuracy %"]} for r in rows]
    shown += [{"set": s, "policy": "entropy budget (its γ sweep)", "mean_nfe": r["mean_nfe"], "accuracy %": r["accuracy %"]}
              for s, rs in frontier_rows.items() for r in rs
              if r["mean_nfe"] <= 2 * max(x["mean_nfe"] for x in rows if x["set"] == s)]
    plot_pareto(shown, out / f"{name}.png", "Fixed passes: MI charge vs entropy order")
    print(md)


if __name__ == "__main__":
    main()
