"""How sure is the MI charge's lead? The prefix rule vs the entropy budget, with bootstrap intervals.

The whole of test-hard by default, with paired bootstrap intervals on the mixture gap.

    python benchmarks/mi/sudoku_prefix_gap.py --model unmask/models/sudoku --threads 2 --out benchmarks/results/mi

``sudoku_frontier.py`` reads its gaps off 150-300 puzzles and 11 sweep points a family, where a few
puzzles move a gap by points and the mixture frontier of a sparse sweep is a chord the family may
sit above only because it was measured where the other was not. Here every family decodes the same
puzzles (default: all 1,000 of ``test-hard``), the entropy budget (``mi:gamma=γ,lam=0``) over 18 γ
from 0.1 to 10, more finely than the rule it is compared with (``mi_prefix:gamma=γ,lam=λ``, the
MI head's charge stopping each pass of entropy order at the first position that does not fit, 8 γ
from 0.3 to 5, for each ``--lams`` λ). Each row keeps every puzzle's outcome and passes, so the gap
at each mean NFE gets a 95 % interval from resampling the puzzles (the same draw for both families,
both hulls rebuilt: :func:`unmask.eval.mixture_gap_interval`) and the share of resamples in which
the MI rule is ahead; each row of the MI rule also gets its gap at its own mean NFE
(:func:`unmask.eval.row_gap_interval`), which stays defined in every resample where a gap read at a
fixed NFE may not (a family whose cheapest row costs about that much). With ``--exact-n N`` the
oracle of the same rule (``exact_prefix``: exact MI from probing the model, ε = 10⁻³, its probe
passes reported apart and not counted in NFE) joins on the first N puzzles, and every family is
compared there too, on those N.

Writes ``OUT/NAME.{json,md,png}`` and ``OUT/NAME_gaps.png``; rows are kept as measured
(``OUT/NAME.partial.jsonl``), so an interrupted run resumes. ``--gaps-only`` recomputes the gaps
from OUT/NAME.json (with ``--points`` and ``--resamples``, recorded in it).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch

from unmask.decode import TokenRule
from unmask.errors import UnmaskError
from unmask.eval import (
    decode_all,
    family_outcomes,
    gap_summary,
    markdown_table,
    mixture_gap_interval,
    regapped,
    results_cache,
    row_gap_interval,
    shown_path,
)
from unmask.io import atomic_write
from unmask.mi.estimator import HEAD_CONFIG, HEAD_WEIGHTS
from unmask.model import load_model
from unmask.plots import plot_pareto, pyplot, save_png
from unmask.policies import build_policy, parse_policy, policy_spec
from unmask.tasks.sudoku.generate import STANDARD_SETS, standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

BASE = "entropy budget"
# γ of the baseline (2.1-11.5 passes on test-hard) and of the prefix rule (where it ran level with or
# above the baseline on 150-300 puzzles): the baseline more finely, so its hull is not a long chord.
BUDGET_GAMMAS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 7.0, 10.0]
PREFIX_GAMMAS = [0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0]
POINTS = [3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 12.0]  # mean NFE at which the gap is read (default of --points)


def prefix_family(lam: float) -> str:
    return f"prefix, MI head λ={lam:g}"


def exact_family(lam: float) -> str:
    return f"exact MI prefix λ={lam:g} (oracle)"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model folder")
    p.add_argument("--head", help="folder of the MI head (mi_head.*) (default: the model folder's)")
    p.add_argument("--set", default="test-hard", choices=list(STANDARD_SETS), help="standard Sudoku set (default test-hard)")
    p.add_argument("--n", type=int, default=1000, help="its first N puzzles (default 1000: all of test-hard)")
    p.add_argument("--lams", nargs="+", type=float, default=[2.0], metavar="LAM", help="λ of the prefix rule (default 2)")
    p.add_argument("--exact-n", type=int, default=0, help="the exact-MI oracle on the first N puzzles (default 0: none)")
    p.add_argument("--exact-gammas", nargs="+", type=float, default=[1.0], metavar="GAMMA", help="its γ (default 1)")
    p.add_argument("--exact-lam", type=float, default=2.0, help="its λ (default 2)")
    p.add_argument("--points", nargs="+", type=float, default=POINTS, metavar="NFE",
                   help=f"mean NFE at which to read the gap (default {' '.join(f'{x:g}' for x in POINTS)})")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--data-dir", type=Path, default=Path("data/sudoku"), help="where the standard sets live")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/mi"), help="output folder")
    p.add_argument("--name", default="sudoku_prefix_gap", help="output file stem")
    p.add_argument("--gaps-only", action="store_true", help="recompute the gaps and tables from OUT/NAME.json, decoding nothing")
    args = p.parse_args(argv)
    if args.n < 1 or args.resamples < 1 or not all(0 < x < math.inf for x in [*args.lams, args.exact_lam, *args.exact_gammas]):
        p.error("--n and --resamples must be >= 1, every λ and γ a number > 0 (λ = 0 is the baseline)")
    if not 0 <= args.exact_n <= args.n:
        p.error(f"--exact-n must be between 0 and --n ({args.n})")
    if args.gaps_only:
        try:
            result = regapped(args.out / f"{args.name}.json", args.points, args.resamples, gap_rows)
        except UnmaskError as e:
            p.error(f"--gaps-only: {e}")
        write(result, args.out, args.name)
        return
    head_dir = args.head or args.model
    if not (Path(head_dir) / HEAD_WEIGHTS).is_file():
        p.error(f"no {HEAD_WEIGHTS} in {head_dir}")

    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    task = SudokuTask()
    examples = standard_set(args.data_dir, args.set, args.n)
    if len(examples) < args.n:
        p.error(f"--n {args.n}: {args.set} has only {len(examples)} puzzles")
    tokens = task.encode(examples)
    files = [Path(__file__), args.data_dir / f"{args.set}.csv", *(Path(head_dir) / w for w in (HEAD_WEIGHTS, HEAD_CONFIG))]
    # (rows keep their seconds)
    cache = results_cache(args.out, args.name, args.model, files, n=args.n, set=args.set, threads=args.threads)
    sweeps = {BASE: [f"mi:gamma={g},lam=0" for g in BUDGET_GAMMAS],
              **{prefix_family(lam): [f"mi_prefix:gamma={g},lam={lam:g}" for g in PREFIX_GAMMAS] for lam in args.lams}}
    if args.exact_n:
        sweeps[exact_family(args.exact_lam)] = [f"exact_prefix:gamma={g},lam={args.exact_lam:g},charge=mi"
                                                for g in args.exact_gammas]
    # (as results files spell them)
    sweeps = {family: [policy_spec(parse_policy(s)) for s in specs] for family, specs in sweeps.items()}
    rows = []
    for family, specs in sweeps.items():
        n = args.exact_n if family == exact_family(args.exact_lam) else args.n  # the oracle: its first puzzles
        for spec in specs:
            key = {"set": args.set, "puzzles": n, "family": family, "policy": spec}
            row = cache.get(key)
            if row is None:
                run = decode_all(model, tokens[:n], build_policy(spec, model, head_dir), TokenRule(), progress=True)
                solved = task.score(run.result.tokens, examples[:n]).tolist()
                row = {**key, "mean_nfe": float(run.result.nfe.double().mean()),
                       "accuracy %": round(100 * sum(solved) / len(solved), 1), "seconds": round(run.seconds, 1),
                       "solved": "".join("1" if s else "0" for s in solved),
                       "nfe": run.result.nfe.tolist()}
                if run.result.extra_passes.any():  # the oracle's probes, apart from NFE
                    row["extra_passes"] = round(float(run.result.extra_passes.double().mean()), 1)
                cache.put(key, row)
            print(json.dumps({k: row[k] for k in ("family", "policy", "mean_nfe", "accuracy %")}), flush=True)
            rows.append(row)
    result = {"model": shown_path(args.model), "head": shown_path(head_dir), "set": args.set, "n": args.n,
              "minutes": round((time.time() - start) / 60, 1), "reused_rows": cache.hits, "points": args.points,
              "resamples": args.resamples, "rows": rows, **gap_rows(rows, args.points, args.resamples)}
    write(result, args.out, args.name)
    cache.done()


def gap_rows(rows: list[dict], points: list[float], resamples: int) -> dict[str, list[dict]]:
    """Each MI family against the entropy budget, with 95 % paired bootstrap intervals (accuracy
    points): ``gaps``, its mixture gap at every mean NFE of ``points``; ``row_gaps``, each of its rows
    at that row's own mean NFE. On all puzzles, and where a family (the oracle) has fewer, every
    family again on those alone."""
    families = list(dict.fromkeys(r["family"] for r in rows if r["family"] != BASE))
    base = [r for r in rows if r["family"] == BASE]
    gaps, row_gaps = [], []
    for n in sorted({len(r["solved"]) for r in rows}, reverse=True):
        for family in families:
            mine = [r for r in rows if r["family"] == family]
            if len(mine[0]["solved"]) < n:
                continue
            for g in mixture_gap_interval(family_outcomes(base, n), family_outcomes(mine, n), points, resamples):
                gaps.append({"puzzles": n, "family": family, "nfe": g["nfe"], **gap_summary(g)})
            for g in row_gap_interval(family_outcomes(base, n), family_outcomes(mine, n), resamples):
                row_gaps.append({"puzzles": n, "family": family, "policy": mine[g["row"]]["policy"],
                                 "mean_nfe": round(g["nfe"], 2), "accuracy %": round(g["accuracy %"], 1), **gap_summary(g)})
    return {"gaps": gaps, "row_gaps": row_gaps}


def write(result: dict, out: Path, name: str) -> None:
    """The JSON, the Markdown tables (rows without their per-puzzle outcomes, then the gaps) and the plot."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / f"{name}.json", lambda t: Path(t).write_text(json.dumps(result, indent=1) + "\n"))
    rows, gaps = result["rows"], result["gaps"]
    shown = ["gap", "95% interval", "share of resamples ahead", "defined"]
    md = "\n\n".join([markdown_table(rows, ["puzzles", "family", "policy", "mean_nfe", "extra_passes", "accuracy %"]),
                       markdown_table(gaps, ["puzzles", "family", "nfe", *shown]),
                       markdown_table(result["row_gaps"], ["puzzles", "family", "policy", "mean_nfe", "accuracy %", *shown])])
    atomic_write(out / f"{name}.md", lambda t: Path(t).write_text(md + "\n"))
    counts = sorted({len(r["solved"]) for r in rows}, reverse=True)  # a panel per number of puzzles, every family on them
    shown_rows = [{"set": f"{result['set']}, first {n}", "policy": r["family"], "mean_nfe": sum(r["nfe"][:n]) / n,
                   "accuracy %": 100 * r["solved"][:n].count("1") / n} for n in counts for r in rows if len(r["solved"]) >= n]
    plot_pareto(shown_rows, out / f"{name}.png", "Prefix rule vs entropy budget")
    plot_gaps(gaps, out / f"{name}_gaps.png", result["set"])
    print(md)


def plot_gaps(gaps: list[dict], path: Path, title: str) -> None:
    """Mixture gap vs mean NFE with its bootstrap interval, one series per family."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for i, (n, family) in enumerate(dict.fromkeys((g["puzzles"], g["family"]) for g in gaps)):
        gs = [g for g in gaps if (g["puzzles"], g["family"]) == (n, family)]
        x = [g["nfe"] + 0.06 * i for g in gs]  # (side by side where several series share a point)
        y = [g["gap"] for g in gs]
        ax.errorbar(x, y, yerr=[[v - g["low"] for v, g in zip(y, gs)], [g["high"] - v for v, g in zip(y, gs)]],
                    fmt="o-", capsize=3, color=f"C{i}", label=f"{family}, {n} puzzles")
    ax.axhline(0, color="k", lw=0.8)
    ax.axhline(5, color="grey", lw=0.8, ls="--", label="the aim: +5")
    ax.set_xlabel("mean NFE (forward passes per puzzle)")
    ax.set_ylabel("mixture gap over the entropy budget (points)")
    ax.set_title(f"MI prefix rule vs entropy budget: {title}\n(95 % paired bootstrap intervals)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, path)


if __name__ == "__main__":
    main()
