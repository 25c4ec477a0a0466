"""The low-NFE frontier on Sudoku: accuracy vs mean NFE for every adaptive rule, each swept widely.

    python benchmarks/mi/sudoku_frontier.py --head benchmarks/models/heads/sudoku12-relu --n 300 --exact-n 50
    python benchmarks/mi/sudoku_frontier.py --n 50 --exact-n 10 --quick         # a fast look

Families (each a sweep; specs in the README's policy table):
- entropy budget (``mi:gamma=γ,lam=0``), γ from 0.01 to 100 nats (from 10 on, test-kaggle takes 1-1.2 passes),
  with 7 more points from 0.5 to 15 than the γ-swept families (so no family's mixture frontier is
  compared with a chord of the baseline where the baseline was not measured);
- MI-guided with the head (``mi:gamma=γ,lam=λ``), same γ, λ ∈ {0.5, 2};
- DEMASK's rule with the head as dependency head (``demask:delta=δ,max_entropy=h``): δ from 0.003 to
  1 nats, each with no entropy cap and with caps from 0.03 to 1 nats (DEMASK's own sweep pairs its
  dependency bound with a confidence threshold);
- with ``--influence-head DIR``, a head fitted to DEMASK's influence D instead of MI (``unmask mi train
  --target influence``) in both rules: charged as λ·Σ D̂ (``mi:gamma=γ,lam=λ``, λ ∈ {2, 8}) and bounded
  (``demask``, the same caps, δ up to 3: D is a total variation in [0, 1], larger than MI);
- the budget's pace with the charge's choice (``mi_paced:gamma=γ,lam=λ``: each pass reveals as many
  as the entropy budget γ would, the next always the lowest H_i + λ·Σ_taken Î_ij), same γ, with the MI
  head (λ = 1) and with the D head (λ ∈ {0.5, 2});
- entropy order with the charge setting the pace (``mi_prefix:gamma=γ,lam=λ``: the entropy budget's
  scan, stopped at the first position whose H_i + λ·Σ_taken Î_ij does not fit, so each pass reveals a
  prefix of entropy order no longer than the budget's), same γ, with the MI head (λ ∈ {0.5, 1, 2, 4, 8})
  and the D head (λ ∈ {2, 8});
- EB-Sampler (``eb:gamma=γ``), confidence threshold (``threshold:tau=τ``), naive top-k (``topk:k=k``);
- MI-guided with *exact* MI (``exact``; probe passes reported apart from NFE), charging the paper's
  I or the MI of each row's probe joint (``joint=1``, a true MI: see unmask.mi.exact), the same rule
  charging DEMASK's exact total-variation influence instead (``exact:charge=influence``; also stopped
  at the first misfit, ``exact_prefix``), and the entropy budget at the same γ, all on the first
  ``--exact-n`` puzzles only (an oracle, at the oracle's cost; ``--oracle-only [FAMILY ...]``
  re-measures these rows alone, or those of the named oracle families, and keeps the others from
  OUT/NAME.json; with another ``--exact-n`` and ``--oracle-sets`` it adds an oracle on more puzzles of
  one set beside the first one, e.g.
  ``--oracle-only "entropy budget" "exact MI λ=2" --exact-n 150 --oracle-sets test-hard``; ``--exact-gammas``
  sets their γ, each needing an entropy-budget row at the same γ, kept or measured with them; a measured
  family's rows at other γ are kept).

``--families FAMILY ...`` re-measures the named sweep families on the full test sets alone and keeps
every other row (oracle rows included) from OUT/NAME.json; with no such file and "entropy budget" among
them, it starts one with those families alone (e.g. a larger ``--n`` under another ``--name``); with
``--extend`` it measures only the points of those families not yet in the file (a sweep widened since)
and keeps the rest. A full run without ``--influence-head``
refuses to overwrite a file that has D-head rows.

For each family the frontier is the best accuracy reached at mean NFE ≤ n. The gap table compares
the MI-guided frontier with the entropy-only frontier at n = 1, 1.25, 1.5, 1.75 and every integer n
of the low-NFE regime from 2 (n ≤ 6 on test-kaggle, ≤ 15 on test-hard). Writes
``benchmarks/results/mi/sudoku_frontier.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.eval import compare, frontier, markdown_table, mixture_frontier, results_cache, shown_path
from unmask.mi.estimator import HEAD_CONFIG, HEAD_WEIGHTS
from unmask.model import load_model
from unmask.plots import plot_pareto
from unmask.policies import build_policy, parse_policy, policy_spec
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

GAMMAS = [0.01, 0.03, 0.1, 0.3, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0]  # (10-100: down to one pass on test-kaggle)
# The baseline also between those points: a mixture frontier is a chord between measured rows, so a
# sparse baseline sweep would flatter any family measured where the baseline was not.
FINE_GAMMAS = sorted(GAMMAS + [0.5, 0.7, 1.5, 2.5, 4.0, 7.0, 15.0])
FAMILIES = {  # family → specs
    "entropy budget": [f"mi:gamma={g},lam=0" for g in FINE_GAMMAS],
    "MI head λ=0.5": [f"mi:gamma={g},lam=0.5" for g in GAMMAS],
    "MI head λ=2": [f"mi:gamma={g},lam=2" for g in GAMMAS],
    "demask": [f"demask:delta={d},max_entropy={h}" for h in ("inf", 1.0, 0.3, 0.1, 0.03)
               for d in (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)],
    "D head λ=2": [f"mi:gamma={g},lam=2" for g in GAMMAS],
    "D head λ=8": [f"mi:gamma={g},lam=8" for g in GAMMAS],
    "demask, D head": [f"demask:delta={d},max_entropy={h}" for h in ("inf", 1.0, 0.3, 0.1, 0.03)
                       for d in (0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)],
    "paced, MI head λ=1": [f"mi_paced:gamma={g},lam=1" for g in GAMMAS],
    "paced, D head λ=0.5": [f"mi_paced:gamma={g},lam=0.5" for g in GAMMAS],
    "paced, D head λ=2": [f"mi_paced:gamma={g},lam=2" for g in GAMMAS],
    **{f"prefix, MI head λ={lam}": [f"mi_prefix:gamma={g},lam={lam}" for g in GAMMAS] for lam in (0.5, 1, 2, 4, 8)},
    "prefix, D head λ=2": [f"mi_prefix:gamma={g},lam=2" for g in GAMMAS],
    "prefix, D head λ=8": [f"mi_prefix:gamma={g},lam=8" for g in GAMMAS],
    "eb": [f"eb:gamma={g}" for g in (0.01, 0.1, 0.3, 1.0, 3.0, 10.0)],
    "threshold": [f"threshold:tau={t}" for t in (0.3, 0.5, 0.7, 0.9, 0.99)],
    "topk": [f"topk:k={k}" for k in (3, 5, 10, 20, 40)],
}
D_RULES = ["D head λ=2", "D head λ=8", "demask, D head"]  # the MI rule and DEMASK's rule with the D head
D_PACED = ["paced, D head λ=0.5", "paced, D head λ=2"]  # the D head's charge at the entropy budget's pace
MI_PREFIX = [f"prefix, MI head λ={lam}" for lam in (0.5, 1, 2, 4, 8)]  # entropy order, the MI head's charge setting how many
D_PREFIX = ["prefix, D head λ=2", "prefix, D head λ=8"]  # entropy order, the D head's charge setting how many
INFLUENCE = D_RULES + D_PACED + D_PREFIX  # the families decoding with --influence-head
EXACT_GAMMAS = [0.3, 1.0, 3.0]  # γ of the exact-MI oracle and of its entropy-only twin
# family → spec, on the first --exact-n
ORACLE = {"entropy budget": "mi:gamma={g},lam=0", "exact MI λ=2": "exact:gamma={g},lam=2",
          "exact joint MI λ=2": "exact:gamma={g},lam=2,charge=joint", "exact joint MI λ=8": "exact:gamma={g},lam=8,charge=joint",
          "exact influence λ=2": "exact:gamma={g},lam=2,charge=influence",
          "exact influence prefix λ=8": "exact_prefix:gamma={g},lam=8,charge=influence",
          "exact MI prefix λ=2": "exact_prefix:gamma={g},lam=2,charge=mi"}
REGIME = {"test-kaggle": 6, "test-hard": 15}  # the low-NFE regime where parallel reveals collide
BELOW_TWO = [1.0, 1.25, 1.5, 1.75]  # gap points below 2 passes (a strong model solves most of test-kaggle there)


def gaps(rows: list[dict], sets: list[str], mi_families: list[str]) -> list[dict]:
    """MI-guided frontier − entropy-only frontier at each quarter NFE below 2 and each integer NFE of
    the low regime from 2 (a set's "first N" subset shares the regime of its full set): the step
    frontiers (best row at mean NFE ≤ n), and the mixture frontiers (the best a per-puzzle coin flip
    between two rows of the family reaches at mean NFE n), which a sweep's spacing cannot flatter."""
    out = []
    for s in sets:
        base = [r for r in rows if r["set"] == s and r["family"] == "entropy budget"]
        mi = [r for r in rows if r["set"] == s and r["family"] in mi_families]
        for n in [*BELOW_TWO, *range(2, REGIME[s.split(" (first")[0]] + 1)]:
            b, m = frontier(base, n), frontier(mi, n)
            bm, mm = mixture_frontier(base, n), mixture_frontier(mi, n)
            if b is not None and m is not None:
                mixed = {"entropy_only mixture %": round(bm, 1), "mi_guided mixture %": round(mm, 1),
                         "mixture gap": round(mm - bm, 1)} if bm is not None and mm is not None else {}
                out.append({"set": s, "nfe_at_most": n, "entropy_only %": b, "mi_guided %": m, "gap": round(m - b, 1), **mixed})
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="model folder")
    p.add_argument("--head", help="folder of the MI head (mi_head.*) to use (default: the model folder's)")
    p.add_argument("--influence-head", help="folder of a head fitted to DEMASK's influence D (mi_head.*); "
                   f"measures the families {', '.join(INFLUENCE)}")
    p.add_argument("--data-dir", default="data/sudoku", type=Path, help="folder of test-kaggle.csv and test-hard.csv")
    p.add_argument("--n", type=int, default=1000, help="puzzles of each test set")
    p.add_argument("--exact-n", type=int, default=100, help="puzzles for the exact-MI oracle (0: skip)")
    p.add_argument("--quick", action="store_true", help="every other sweep point")
    p.add_argument("--name", default="sudoku_frontier")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    p.add_argument("--tables-only", action="store_true", help="rewrite the tables and plot from OUT/NAME.json")
    p.add_argument("--oracle-only", nargs="*", metavar="FAMILY", choices=list(ORACLE),
                   help="measure the exact-MI rows alone (or those of the named oracle families); "
                        "keep the others from OUT/NAME.json")
    p.add_argument("--oracle-sets", nargs="+", choices=list(REGIME), default=list(REGIME),
                   help="test sets the exact-MI oracle runs on")
    p.add_argument("--exact-gammas", nargs="+", type=float, default=EXACT_GAMMAS, metavar="GAMMA",
                   help=f"γ of the oracle families and of their entropy-only twin (default: {' '.join(map(str, EXACT_GAMMAS))})")
    p.add_argument("--families", nargs="+", metavar="FAMILY", choices=list(FAMILIES),
                   help="measure the rows of these sweep families alone; keep the others from OUT/NAME.json "
                        "(none there: start it, with \"entropy budget\" among them)")
    p.add_argument("--extend", action="store_true",
                   help="with --families: measure only their sweep points not yet in OUT/NAME.json (a widened sweep); "
                        "keep the rest")
    args = p.parse_args(argv)
    args.exact_gammas = list(dict.fromkeys(args.exact_gammas))  # (a γ given twice is measured once)
    if args.tables_only:
        write(json.loads((args.out / f"{args.name}.json").read_text()), args.out, args.name)
        return
    if args.extend and not args.families:
        p.error("--extend widens the sweeps of --families; name them")
    if args.families and args.oracle_only is not None:
        p.error("--families and --oracle-only each keep the rows the other measures; give one")
    partial = args.families or args.oracle_only is not None  # some rows measured, the others kept
    sweep = args.families or ([] if partial else [f for f in FAMILIES if args.influence_head or f not in INFLUENCE])  # to measure
    if any(f in INFLUENCE for f in sweep) and not args.influence_head:
        p.error(f"--families {' '.join(f for f in sweep if f in INFLUENCE)} needs --influence-head")
    measured = args.oracle_only or ([] if args.families else list(ORACLE))  # the oracle families to measure
    if any(g <= 0 for g in args.exact_gammas):
        p.error(f"--exact-gammas: every γ must be > 0, got {' '.join(map(str, args.exact_gammas))}")
    head_dir = args.head or args.model  # where build_policy finds the MI head
    kept, runs, kept_influence = kept_rows(args, p, sweep, measured, head_dir, args.extend) if partial else ([], [], None)
    if not partial and not args.influence_head:
        refuse_to_drop_d_rows(args, p)
    # what D-head rows were measured with
    influence_head = shown_path(args.influence_head) if args.influence_head else kept_influence

    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    task = SudokuTask()
    sets = {name: standard_set(args.data_dir, name, args.n) for name in REGIME}
    # Rows measured before an interruption are kept in OUT/NAME.partial.jsonl and reused.
    # One cache per head: a spec's rows depend on the head it decodes with.
    caches = {folder: results_cache(args.out, args.name + suffix, args.model,
                                    [Path(__file__), *(args.data_dir / f"{s}.csv" for s in REGIME),
                                     Path(folder) / HEAD_WEIGHTS, Path(folder) / HEAD_CONFIG],
                                    n=args.n, threads=args.threads)  # (--exact-n and --quick show in the keys)
              for folder, suffix in ((head_dir, ""), (args.influence_head, ".influence_head")) if folder}
    rows = kept
    for family in sweep:
        specs = FAMILIES[family][::2] if args.quick else FAMILIES[family]
        if args.extend:  # the points on every test set already: kept; the others measured (a half-kept point afresh)
            have = {(r["set"], r["policy"]) for r in rows if r["family"] == family}
            specs = [s for s in specs if not all((name, policy_spec(parse_policy(s))) in have for name in REGIME)]
            again = {policy_spec(parse_policy(s)) for s in specs}
            rows = [r for r in rows if not (r["family"] == family and r["policy"] in again)]
        folder = args.influence_head if family in INFLUENCE else head_dir
        for r in compare(task, model, sets, [build_policy(s, model, folder) for s in specs], progress=False,
                         cache=caches[folder]):
            rows.append({"family": family, **r, "accuracy %": round(100 * r["accuracy"], 1)})
            print(json.dumps({k: rows[-1][k] for k in ("set", "policy", "mean_nfe", "accuracy %")}), flush=True)
    # Sweep rows in FAMILIES' order (re-measured ones back in their place), then the oracle rows as they were.
    order = {family: k for k, family in enumerate(FAMILIES)}  # (a family no longer swept goes last)
    rows.sort(key=lambda r: (1, 0) if r["set"] not in REGIME else (0, order.get(r["family"], len(order))))
    if args.exact_n and measured:
        first = {oracle_label(name, args.exact_n): standard_set(args.data_dir, name, args.exact_n) for name in args.oracle_sets}
        for family in measured:
            policies = [build_policy(ORACLE[family].format(g=g), model, head_dir) for g in args.exact_gammas]
            for r in compare(task, model, first, policies, progress=False, cache=caches[head_dir]):
                rows.append({"family": family, **r, "accuracy %": round(100 * r["accuracy"], 1)})
                print(json.dumps({k: rows[-1][k] for k in ("set", "policy", "mean_nfe", "accuracy %")}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    # (--families runs no oracle)
    oracle = {"exact_n": args.exact_n, "oracle_sets": args.oracle_sets, "exact_gammas": args.exact_gammas} if measured else {}
    this_run = {"model": shown_path(args.model), "head": shown_path(head_dir), "n": args.n, **oracle,
                **({"influence_head": shown_path(args.influence_head)} if any(f in INFLUENCE for f in sweep) else {}),
                "measured": sweep + measured if partial else "all rows", **({"extended": True} if args.extend else {}),
                "threads": args.threads, "minutes": round((time.time() - start) / 60, 1),
                "reused_rows": sum(c.hits for c in caches.values())}
    with_d = influence_head and any(r["family"] in INFLUENCE for r in rows)
    heads = {"head": this_run["head"], **({"influence_head": influence_head} if with_d else {})}
    result = {"model": this_run["model"], **heads, "n": args.n, "rows": rows, "runs": [*runs, this_run]}
    write(result, args.out, args.name)
    for cache in caches.values():
        cache.done()


GAPS = {"head": ("MI head vs entropy budget", ["MI head λ=0.5", "MI head λ=2"], False),  # name → title, families, oracle sets
        "demask": ("DEMASK rule vs entropy budget", ["demask"], False),
        "influence_head": ("D head (MI rule and DEMASK rule) vs entropy budget", D_RULES, False),
        "paced_head": ("MI head at the entropy budget's pace vs entropy budget", ["paced, MI head λ=1"], False),
        "paced_influence_head": ("D head at the entropy budget's pace vs entropy budget", D_PACED, False),
        "prefix_head": ("MI head setting the pace in entropy order (prefix) vs entropy budget", MI_PREFIX, False),
        "prefix_influence_head": ("D head setting the pace in entropy order (prefix) vs entropy budget", D_PREFIX, False),
        "exact": ("exact MI vs entropy budget (oracle)", ["exact MI λ=2"], True),
        "exact_joint": ("exact probe-joint MI vs entropy budget (oracle)", ["exact joint MI λ=2", "exact joint MI λ=8"], True),
        "influence": ("exact influence (DEMASK's D) vs entropy budget (oracle)", ["exact influence λ=2"], True),
        "influence_prefix": ("exact influence setting the pace in entropy order (prefix) vs entropy budget (oracle)",
                             ["exact influence prefix λ=8"], True),
        "exact_prefix": ("exact MI setting the pace in entropy order (prefix) vs entropy budget (oracle)",
                         ["exact MI prefix λ=2"], True)}


def oracle_spec(family: str, gamma: float) -> str:
    """The canonical spec of oracle ``family``'s row at budget ``gamma``."""
    return policy_spec(parse_policy(ORACLE[family].format(g=gamma)))


def oracle_label(name: str, exact_n: int) -> str:
    """The set label of the oracle's rows: the first ``exact_n`` puzzles of test set ``name``."""
    return f"{name} (first {exact_n})"


def kept_rows(args, p: argparse.ArgumentParser, sweep: list[str], measured: list[str],
              head_dir: str, extend: bool = False) -> tuple[list[dict], list[dict], str | None]:
    """The rows of OUT/NAME.json that ``--families`` or ``--oracle-only`` keeps (all but the rows of
    the ``sweep`` families on the full test sets and those of the ``measured`` oracle families at the
    ``--exact-gammas`` on the oracle sets about to be measured; with ``extend``, the sweep families' rows
    at points still in their sweep are kept too), the runs that measured them and the D head its kept
    D-head rows were measured with, refusing a file measured with another model, head, D head or number
    of puzzles, or an oracle set that would be left without an entropy-budget twin at one of the
    ``--exact-gammas``. Without the file, ``--families`` with the entropy budget among them starts one
    (nothing kept)."""
    flag = "--families" if sweep else "--oracle-only"
    path = args.out / f"{args.name}.json"
    if not path.is_file() and sweep and "entropy budget" in sweep:
        return [], [], None  # a new file with these families alone (the entropy budget: every gap's base)
    if not path.is_file():
        p.error(f"{flag}: no {path} to keep the other rows from"
                + ("; to start one with these families alone, name \"entropy budget\" too" if sweep else ""))
    old = json.loads(path.read_text())
    if old.get("n") != args.n:
        p.error(f"{flag}: {path} was measured on {old.get('n')} puzzles per set, not --n {args.n}")
    if (old.get("model"), old.get("head")) != (shown_path(args.model), shown_path(head_dir)):
        p.error(f"{flag}: {path} was measured with model {old.get('model')} and head {old.get('head')}, "
                f"not {shown_path(args.model)} and {shown_path(head_dir)}")
    labels = {oracle_label(name, args.exact_n) for name in args.oracle_sets} if measured else set()
    still_swept = {(f, policy_spec(parse_policy(s))) for f in sweep for s in FAMILIES[f]} if extend else set()
    oracle_specs = {(f, oracle_spec(f, g)) for f in measured for g in args.exact_gammas}  # measured again; their other γ kept
    kept = [r for r in old["rows"] if not (r["set"] in labels and (r["family"], r["policy"]) in oracle_specs)
            and not (r["set"] in REGIME and r["family"] in sweep and (r["family"], r["policy"]) not in still_swept)]
    old_influence = old.get("influence_head")
    if args.influence_head and old_influence and any(r["family"] in INFLUENCE and r["family"] not in sweep for r in kept) \
            and old_influence != shown_path(args.influence_head):
        p.error(f"{flag}: {path}'s D-head rows were measured with {old_influence}, not {shown_path(args.influence_head)}")
    for label in sorted(labels):  # every γ of the oracle needs its entropy-only twin on every oracle set
        twins = {r["policy"] for r in kept if r["set"] == label and r["family"] == "entropy budget"}
        missing = [g for g in args.exact_gammas if oracle_spec("entropy budget", g) not in twins]
        if "entropy budget" not in measured and missing:
            p.error(f"{flag}: {path} has no entropy-budget rows on {label} at γ {' '.join(map(str, missing))}; "
                    "name \"entropy budget\" too")
    return kept, past_runs(old), old_influence


def refuse_to_drop_d_rows(args, p: argparse.ArgumentParser) -> None:
    """A full run without ``--influence-head`` would rewrite OUT/NAME.json without its D-head rows: refuse."""
    path = args.out / f"{args.name}.json"
    old = json.loads(path.read_text()) if path.is_file() else {"rows": []}
    if any(r["family"] in INFLUENCE for r in old["rows"]):
        p.error(f"{path} has D-head rows ({old.get('influence_head')}) that this run would drop: "
                "give --influence-head to measure them again, or --families to measure the others")


def past_runs(old: dict) -> list[dict]:
    """The runs that measured a results file's rows; for a file written before runs were recorded,
    what it says of them (its first full run, if rows were kept from one, and its last run)."""
    if "runs" in old:
        return old["runs"]
    first = old.get("kept_rows_from")
    last = {k: old[k] for k in ("model", "head", "n", "exact_n", "threads", "minutes") if k in old}
    return ([{**first, "measured": "all rows"}, {**last, "measured": "oracle rows"}] if first
            else [{**last, "measured": "all rows"}])


def write(result: dict, out: Path, name: str) -> None:
    """The gap tables, the JSON, the Markdown and the plot from the measured rows (``--tables-only`` re-runs this)."""
    rows = result["rows"]
    all_sets = sorted({r["set"] for r in rows})
    md_parts = []
    for key, (title, families, oracle) in GAPS.items():
        g = gaps(rows, [s for s in all_sets if ("(first" in s) == oracle], families)
        for r in g:  # each gap table names its own column, so a README marker finds the right one
            r[f"{key} %"] = r.pop("mi_guided %")
            r["gap"] = r.pop("gap")
            if "mi_guided mixture %" in r:
                r[f"{key} mixture %"] = r.pop("mi_guided mixture %")
                r["mixture gap"] = r.pop("mixture gap")
        result[f"{key}_gaps"] = g
        if g:
            columns = list(dict.fromkeys(c for r in g for c in r))  # (rows below a family's cheapest mixture lack its columns)
            md_parts.append(f"Frontier gap, {title} (accuracy % at mean NFE ≤ n; mixture: at mean NFE n):\n\n"
                            + markdown_table(g, columns))
    (out / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    cols = ["set", "family", "policy", "mean_nfe", "accuracy %", "extra_passes"]
    md = markdown_table(rows, [c for c in cols if c != "extra_passes" or any(c in r for r in rows)])
    md = "\n\n".join([md, *md_parts])
    (out / f"{name}.md").write_text(md + "\n")
    plot_pareto([{**r, "policy": r["family"]} for r in rows], out / f"{name}.png", "Sudoku frontier")
    print(md)

if __name__ == "__main__":
    main()
