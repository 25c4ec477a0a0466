"""Does the MI term pay when the denoiser's conditionals agree with one joint? Puzzles with several solutions.

    python benchmarks/mi/sudoku_consistent.py --model unmask/models/sudoku --threads 2 --out benchmarks/results/mi

Every puzzle of the test sets has one solution, so its true posterior P(grid | clues) is a point mass:
every cell is certain and every pair of cells independent. The dependencies a model shows there are
its own uncertainty, in conditionals that agree with no one joint (README: its I(i;j) and I(j;i)
rank the pairs that matter at 0.21). Here the first ``--n`` puzzles of each set get givens blanked, in
an order seeded by their index, until each has ``--low``..``--high`` solutions
(:func:`unmask.tasks.sudoku.generate.widened_set`), so the true posterior is uniform over several
grids and its cells depend on each other. Two denoisers decode them:

- ``oracle``: the exact posterior (:meth:`WidenedSet.oracle`, a :class:`unmask.oracle.SupportDenoiser`
  over every solution), whose exact MI is the true MI;
- ``model``: the model, on the first ``--model-n`` of them (out of its training distribution: it was
  trained on puzzles with one solution).

Tokens are sampled (temperature 1: a decode should draw one of the solutions; sequential decoding of the
oracle then draws exactly from the posterior) and a decode is scored as solved when its grid is valid.
Families: the entropy budget (``mi:gamma=γ,lam=0``, finely swept), EB-Sampler, the exact-MI rule
(``exact``, probing the denoiser decoding, its probe passes reported apart and not counted in NFE),
and with the model its MI head (``mi``, λ = 2 and 8; ``--head`` names another head than the model's).
Each family's mixture frontier is compared with the entropy budget's of the same denoiser and set, with
95 % paired bootstrap intervals (:func:`unmask.eval.mixture_gap_interval`).

Writes ``OUT/NAME.{json,md,png}``; rows are kept as measured (``OUT/NAME.partial.jsonl``), so an
interrupted run resumes. ``--gaps-only`` recomputes the gaps from OUT/NAME.json (``--points``, ``--resamples``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
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
from unmask.plots import plot_pareto
from unmask.policies import build_policy, parse_policy, policy_spec
from unmask.tasks.sudoku.generate import standard_set, widened_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

BASE = "entropy budget"
BUDGET_GAMMAS = [0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0]
# family → (the denoisers it decodes with, its specs)
FAMILIES: dict[str, tuple[tuple[str, ...], list[str]]] = {
    BASE: (("oracle", "model"), [f"mi:gamma={g},lam=0" for g in BUDGET_GAMMAS]),
    "EB-Sampler": (("oracle", "model"), [f"eb:gamma={g}" for g in (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)]),
    "exact MI λ=8": (("oracle", "model"), [f"exact:gamma={g},lam=8" for g in (0.7, 1.5, 3.0, 10.0)]),
    "exact MI λ=32": (("oracle",), [f"exact:gamma={g},lam=32" for g in (0.5, 1.0, 2.0, 3.0, 10.0, 30.0)]),
    "MI head λ=2": (("model",), [f"mi:gamma={g},lam=2" for g in (0.3, 1.0, 3.0, 10.0)]),
    "MI head λ=8": (("model",), [f"mi:gamma={g},lam=8" for g in (0.7, 1.5, 3.0, 10.0)]),
}
POINTS = [1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0]  # mean NFE at which the gap is read (default of --points)
ORACLE_CHUNK = 50  # puzzles per exact denoiser (its cost grows with the solutions it holds)
BATCH_SIZE = 50  # puzzles decoded at once (results do not depend on it)
TEMPERATURE = 1.0  # tokens are sampled: a decode draws one of a puzzle's solutions


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model folder")
    p.add_argument("--head", help="folder of the MI head (mi_head.*) (default: the model folder's)")
    p.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES), metavar="FAMILY",
                   help="families to decode (the entropy budget always; default all)")
    p.add_argument("--sets", nargs="+", default=["test-kaggle", "test-hard"], choices=["test-kaggle", "test-hard"],
                   help="standard sets whose puzzles are widened (default both)")
    p.add_argument("--n", type=int, default=300, help="the first N puzzles of each set, for the oracle (default 300)")
    p.add_argument("--model-n", type=int, default=100, help="the first N of those for the model (default 100; 0: none)")
    p.add_argument("--low", type=int, default=2, help="fewest solutions of a widened puzzle (default 2)")
    p.add_argument("--high", type=int, default=64, help="most solutions of a widened puzzle (default 64)")
    p.add_argument("--points", nargs="+", type=float, default=POINTS, metavar="NFE",
                   help=f"mean NFE at which to read the gaps (default {' '.join(f'{x:g}' for x in POINTS)})")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--data-dir", type=Path, default=Path("data/sudoku"), help="where the standard sets live")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/mi"), help="output folder")
    p.add_argument("--name", default="sudoku_consistent", help="output file stem")
    p.add_argument("--gaps-only", action="store_true", help="recompute the gaps and tables from OUT/NAME.json, decoding nothing")
    args = p.parse_args(argv)
    if args.n < 1 or args.resamples < 1 or args.threads < 1 or not 0 <= args.model_n <= args.n:
        p.error("--n, --resamples and --threads must be >= 1, and --model-n between 0 and --n")
    if not 2 <= args.low <= args.high:
        p.error(f"need 2 <= --low <= --high, got {args.low} and {args.high}")
    if not all(0 < x < math.inf for x in args.points):
        p.error("every --points value must be a number > 0")

    if args.gaps_only:
        try:
            result = regapped(args.out / f"{args.name}.json", args.points, args.resamples, gap_rows)
        except UnmaskError as e:
            p.error(f"--gaps-only: {e}")
        write(result, args.out, args.name)
        return
    head_dir = args.head or args.model
    if args.model_n and {"MI head λ=2", "MI head λ=8"} & set(args.families) and not (Path(head_dir) / HEAD_WEIGHTS).is_file():
        p.error(f"no {HEAD_WEIGHTS} in {head_dir}")
    families = {f: FAMILIES[f] for f in FAMILIES if f == BASE or f in args.families}

    torch.set_num_threads(args.threads)
    start = time.time()
    task = SudokuTask()
    model = load_model(args.model, task="sudoku") if args.model_n else None
    files = [Path(__file__), *(args.data_dir / f"{s}.csv" for s in args.sets),
             *(Path(head_dir) / w for w in (HEAD_WEIGHTS, HEAD_CONFIG))]
    cache = results_cache(args.out, args.name, args.model, files, n=args.n, model_n=args.model_n, low=args.low, high=args.high,
                          threads=args.threads)
    rows, puzzles = [], {}
    for set_name in args.sets:
        examples = standard_set(args.data_dir, set_name, args.n)
        if len(examples) < args.n:
            p.error(f"--n {args.n}: {set_name} has only {len(examples)} puzzles")
        wide = widened_set(examples, args.low, args.high)
        counts = np.array([len(s) for s in wide.solutions])
        puzzles[set_name] = {"widened": len(counts), "of": args.n, "solutions_mean": round(float(counts.mean()), 2),
                             "solutions_median": float(np.median(counts)), "solutions_max": int(counts.max()),
                             "givens_mean": round(float((wide.puzzles.quizzes > 0).sum(1).mean()), 2)}
        chunks = {"oracle": [(wide[lo : lo + ORACLE_CHUNK].oracle(), lo) for lo in range(0, len(wide), ORACLE_CHUNK)]}
        if model is not None:
            chunks["model"] = [(model, 0)]
        for who, parts in chunks.items():
            n = len(wide) if who == "oracle" else min(args.model_n, len(wide))
            for family, (users, specs) in families.items():
                if who not in users:
                    continue
                for spec in (policy_spec(parse_policy(s)) for s in specs):  # (as results files spell them)
                    key = {"set": set_name, "denoiser": who, "puzzles": n, "family": family, "policy": spec}
                    if (row := cache.get(key)) is None:
                        row = measure(key, parts, head_dir, wide.puzzles[:n], task)
                        cache.put(key, row)
                    print(json.dumps({k: row[k] for k in ("set", "denoiser", "policy", "mean_nfe", "accuracy %")}), flush=True)
                    rows.append(row)
    result = {"model": shown_path(args.model), "head": shown_path(head_dir), "sets": args.sets, "n": args.n,
              "model_n": args.model_n, "low": args.low, "high": args.high, "temperature": TEMPERATURE, "puzzles": puzzles,
              "minutes": round((time.time() - start) / 60, 1),
              "reused_rows": cache.hits, "points": args.points, "resamples": args.resamples, "rows": rows,
              **gap_rows(rows, args.points, args.resamples)}
    write(result, args.out, args.name)
    cache.done()


def measure(key: dict, parts: list, head_dir: str, examples, task: SudokuTask) -> dict:
    """One row: every puzzle's outcome (a valid grid or not) and passes, and the means. ``parts``: (denoiser,
    first puzzle) of each slice of the puzzles, decoded in turn (puzzle k always with seed k)."""
    tokens, starts = task.encode(examples), [lo for _, lo in parts] + [len(examples)]
    got, seconds = [], 0.0
    for (denoiser, lo), hi in zip(parts, starts[1:]):
        run = decode_all(denoiser, tokens[lo:hi], build_policy(key["policy"], denoiser, head_dir),
                         TokenRule(temperature=TEMPERATURE), batch_size=BATCH_SIZE, seed=lo, progress=True)
        got.append(run.result)
        seconds += run.seconds
    decoded, nfe, extra = (torch.cat([getattr(r, f) for r in got]) for f in ("tokens", "nfe", "extra_passes"))
    solved = task.score(decoded, examples).tolist()
    row = {**key, "mean_nfe": float(nfe.double().mean()), "accuracy %": round(100 * sum(solved) / len(solved), 1),
           "seconds": round(seconds, 1), "solved": "".join("1" if s else "0" for s in solved), "nfe": nfe.tolist()}
    if extra.any():  # the exact rule's probes, apart from NFE
        row["extra_passes"] = round(float(extra.double().mean()), 1)
    return row


def gap_rows(rows: list[dict], points: list[float], resamples: int) -> dict[str, list[dict]]:
    """Each family against the entropy budget of the same set and denoiser, with 95 % paired bootstrap
    intervals (accuracy points): ``gaps``, its mixture gap at each mean NFE of ``points``; ``row_gaps``,
    each of its rows at that row's own mean NFE."""
    gaps, row_gaps = [], []
    for set_name, who in dict.fromkeys((r["set"], r["denoiser"]) for r in rows):
        mine = [r for r in rows if (r["set"], r["denoiser"]) == (set_name, who)]
        base = [r for r in mine if r["family"] == BASE]
        n = len(base[0]["solved"])
        for family in dict.fromkeys(r["family"] for r in mine if r["family"] != BASE):
            fam = [r for r in mine if r["family"] == family]
            where = {"set": set_name, "denoiser": who, "family": family}
            for g in mixture_gap_interval(family_outcomes(base, n), family_outcomes(fam, n), points, resamples):
                gaps.append({**where, "nfe": g["nfe"], **gap_summary(g)})
            for g in row_gap_interval(family_outcomes(base, n), family_outcomes(fam, n), resamples):
                row_gaps.append({**where, "policy": fam[g["row"]]["policy"], "mean_nfe": round(g["nfe"], 2),
                                 "accuracy %": round(g["accuracy %"], 1), **gap_summary(g)})
    return {"gaps": gaps, "row_gaps": row_gaps}


def write(result: dict, out: Path, name: str) -> None:
    """The JSON, the Markdown tables (rows without their per-puzzle outcomes, then the gaps) and the plot."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / f"{name}.json", lambda t: Path(t).write_text(json.dumps(result, indent=1) + "\n"))
    shown = ["gap", "95% interval", "share of resamples ahead", "defined"]
    puzzles = [{"set": s, **v} for s, v in result["puzzles"].items()]
    md = "\n\n".join([markdown_table(puzzles, list(puzzles[0])),
                      markdown_table(result["rows"], ["set", "denoiser", "puzzles", "family", "policy", "mean_nfe",
                                                      "extra_passes", "accuracy %"]),
                      markdown_table(result["gaps"], ["set", "denoiser", "family", "nfe", *shown]),
                      markdown_table(result["row_gaps"],
                                     ["set", "denoiser", "family", "policy", "mean_nfe", "accuracy %", *shown])])
    atomic_write(out / f"{name}.md", lambda t: Path(t).write_text(md + "\n"))
    shown_rows = [{"set": f"{r['set']}, {r['denoiser']}", "policy": r["family"], "mean_nfe": r["mean_nfe"],
                   "accuracy %": r["accuracy %"]} for r in result["rows"]]
    plot_pareto(shown_rows, out / f"{name}.png", "Puzzles with several solutions", ylabel="valid grids %")
    print(md)


if __name__ == "__main__":
    main()
