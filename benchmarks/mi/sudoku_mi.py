"""MI-guided decoding vs the baselines on both Sudoku test sets, plus the MI structure score.

    python benchmarks/mi/sudoku_mi.py               # shipped model + its MI head, 1,000 + 1,000 puzzles
    python benchmarks/mi/sudoku_mi.py --n 200 --exact-n 50
    python benchmarks/mi/sudoku_mi.py --only-exact --threads 1   # re-measure only the "(first N)" rows, merged in

Writes ``benchmarks/results/mi/sudoku_mi.{json,md,png}``: mean NFE vs exact-match accuracy for
sequential, naive top-k, EB-Sampler at several γ, the entropy budget (MI-guided with λ = 0) and
MI-guided with λ > 0 at several γ, and the exact-MI oracle policy (its probe passes reported
apart from NFE, on the first ``--exact-n`` puzzles); then how much of the head's and the exact MI
falls on Sudoku peer pairs (row/column/box) on the test puzzles: 16 randomly chosen masked cells
(rows of the exact MI) of each of the first 200 puzzles, paired with every other masked cell.

``--only-exact`` re-measures only the rows on the first ``--exact-n`` puzzles (sequential, the head
and the exact-MI oracle at the same γ, λ) and merges them into the existing ``sudoku_mi.json`` in
place of its old "(first N)" rows; every other row and the structure scores are kept as measured,
and the Markdown table and the plot are rewritten from the merged file.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.eval import compare, markdown_table, results_cache, shown_path
from unmask.mi import exact_mi
from unmask.mi.estimator import load_head, predicted_values
from unmask.mi.maps import structure_score
from unmask.mi.policies import MI
from unmask.model import load_model
from unmask.plots import plot_pareto
from unmask.policies import build_policy, parse_policy, policy_spec
from unmask.runs import RowCache
from unmask.tasks.sudoku.data import SudokuSet, to_tokens
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask, sudoku_peers

BASELINES = ["sequential", "topk:k=3", "topk:k=7", "eb:gamma=0.01", "eb:gamma=0.1"]
DEFAULT = MI()  # the recommended setting (chosen on the validation sets, see the README)
REFERENCE = [  # Sharma, Wang, Li 2026 (arXiv 2605.20187): 4.2M model, 1,000 Kaggle test puzzles
    {"set": "reference (paper)", "policy": "sequential", "mean_nfe": 53.9, "accuracy %": 61.6},
    {"set": "reference (paper)", "policy": "naive parallel k=7", "mean_nfe": 9.0, "accuracy %": 36.8},
    {"set": "reference (paper)", "policy": "MI-guided γ=0.3", "mean_nfe": 15.2, "accuracy %": 63.6},
    {"set": "reference (paper)", "policy": "MI-guided γ=0.6", "mean_nfe": 9.7, "accuracy %": 56.2},
]


def reuse_baselines(path: Path, n: int, sets: list[str], model: str, parameters: int) -> list[dict]:
    """Baseline rows already measured by sudoku_policies.py on the same sets and sizes with the same
    model (its folder and parameter count: a model of another size in the same folder is not reused)."""
    if not path.is_file():
        return []
    saved = json.loads(path.read_text())
    if saved["meta"]["n"] != n or (saved["meta"].get("model"), saved["meta"].get("parameters")) != (model, parameters):
        return []
    keep = {policy_spec(parse_policy(s)) for s in BASELINES}
    return [r for r in saved["rows"] if r["set"] in sets and r["policy"] in keep]


def structure(model, head, data: SudokuSet, n: int, rows: int = 16) -> dict:
    """Structure scores of the head's and the exact MI on the first ``n`` puzzles (as given)."""
    tokens = to_tokens(data.quizzes[:n])
    masked = tokens == model.mask_id
    g = torch.Generator().manual_seed(0)
    score = torch.rand(tokens.shape, generator=g).masked_fill(~masked, -1)
    pick = masked & (score.argsort(1, descending=True).argsort(1) < rows)
    exact = exact_mi(model, tokens, rows=pick, eps=1e-3)
    pairs = pick[:, :, None] & masked[:, None, :] & ~torch.eye(81, dtype=torch.bool)
    with torch.no_grad():
        logits, hidden = model(tokens)
        est = head(hidden, predicted_values(logits, model.mask_id))
    peers = sudoku_peers()
    return {"exact": structure_score(exact.raw.float(), pairs, peers), "head": structure_score(est, pairs, peers),
            "asymmetry_of_exact": exact.asymmetry(), "states": n}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--data-dir", default="data/sudoku", type=Path)
    p.add_argument("--n", type=int, default=1000, help="puzzles of each test set")
    p.add_argument("--sets", nargs="+", default=["test-kaggle", "test-hard"], help="standard sets to use (val-* to tune)")
    p.add_argument("--exact-n", type=int, default=20, help="puzzles for the exact-MI oracle policy (0: skip)")
    p.add_argument("--gammas", type=float, nargs="+", help="γ values (default: the default γ × 1/3, 1, 3)")
    p.add_argument("--lams", type=float, nargs="+", default=[2.0], help="λ values besides 0")
    p.add_argument("--exact", default="exact:gamma=0.1,lam=2",
                   help="exact-MI oracle spec, compared with the head at the same γ, λ")
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    p.add_argument("--baselines", type=Path, help="sudoku_policies.json whose baseline rows to reuse when measured with the same "
                   "model and --n (default: OUT/sudoku_policies.json)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--only-exact", action="store_true",
                   help="re-measure only the first --exact-n rows and merge them into OUT/sudoku_mi.json")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    head = load_head(args.model)
    sets = {name: standard_set(args.data_dir, name, args.n) for name in args.sets}
    if args.only_exact:
        saved = json.loads((args.out / "sudoku_mi.json").read_text())
        if saved["meta"]["n"] != args.n or not args.exact_n:
            raise SystemExit(f"--only-exact: {args.out / 'sudoku_mi.json'} holds n={saved['meta']['n']}; "
                             f"pass the same --n and a positive --exact-n")
        rows = [r for r in saved["rows"] if "(first " not in r["set"]]
        rows += exact_rows(args, model, sets)
        meta = saved["meta"] | {"exact_n": args.exact_n, "exact_threads": args.threads,
                                "exact_minutes": round((time.time() - start) / 60, 1)}
        write(args.out, meta, rows, saved["structure"], saved["reference"])
        return
    # Rows (and structure scores) measured before an interruption are kept in OUT/sudoku_mi.partial.jsonl and reused.
    cache = results_cache(args.out, "sudoku_mi", args.model, [Path(__file__), *(args.data_dir / f"{s}.csv" for s in args.sets)],
                          n=args.n, threads=args.threads)
    rows = reuse_baselines(args.baselines or args.out / "sudoku_policies.json", args.n, args.sets, shown_path(args.model),
                           model.num_parameters())
    missing = [s for s in BASELINES if not any(r["policy"] == policy_spec(parse_policy(s)) for r in rows)]
    gammas = args.gammas or [round(DEFAULT.gamma * f, 4) for f in (1 / 3, 1, 3)]
    lams = [0.0] + [lam for lam in args.lams if lam != 0]
    mi = [f"mi:gamma={g},lam={lam}" for lam in lams for g in gammas]
    task = SudokuTask()
    rows += compare(task, model, sets, [build_policy(s, model, args.model) for s in missing + mi], cache=cache)
    for r in rows:
        r["accuracy %"] = round(100 * r["accuracy"], 1)
    if args.exact_n:
        rows += exact_rows(args, model, sets, cache)
    struct = {}
    for name, data in sets.items():
        struct[name] = cache.get({"structure": name})
        if struct[name] is None:
            struct[name] = structure(model, head, data, min(200, len(data)))
            cache.put({"structure": name}, struct[name])
    meta = {"model": shown_path(args.model), "parameters": model.num_parameters(), "head_parameters": head.num_parameters(),
            "n": args.n, "exact_n": args.exact_n, "threads": args.threads, "minutes": round((time.time() - start) / 60, 1),
            "reused_rows": cache.hits}
    write(args.out, meta, rows, struct, REFERENCE)
    cache.done()


def exact_rows(args, model, sets: dict, cache: RowCache | None = None) -> list[dict]:
    """Sequential, the head and the exact-MI oracle (same γ, λ) on the first ``args.exact_n`` of each set."""
    small = {f"{k} (first {args.exact_n})": SudokuSet(v.quizzes[: args.exact_n], v.solutions[: args.exact_n])
             for k, v in sets.items()}
    exact = build_policy(args.exact, model, args.model)
    same = build_policy(policy_spec(MI(exact.gamma, exact.lam)), model, args.model)
    rows = compare(SudokuTask(), model, small, ["sequential", same, exact], cache=cache)
    for r in rows:
        r["accuracy %"] = round(100 * r["accuracy"], 1)
    return rows


def write(out: Path, meta: dict, rows: list[dict], struct: dict, reference: list[dict]) -> None:
    """``sudoku_mi.{json,md,png}`` from measured rows and structure scores."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "sudoku_mi.json").write_text(
        json.dumps({"meta": meta, "rows": rows, "structure": struct, "reference": reference}, indent=1) + "\n")
    table = markdown_table(rows + reference, ["set", "policy", "mean_nfe", "accuracy %", "extra_passes", "seconds"])
    lines = [table, "", "| set | MI from | mass on peers | top-20 pairs on peers | chance |", "|---|---|---|---|---|"]
    for name, s in struct.items():
        for src in ("exact", "head"):
            lines.append(f"| {name} | {src} | {s[src]['mass']:.1%} | {s[src]['topk']:.1%} | {s[src]['chance']:.1%} |")
    (out / "sudoku_mi.md").write_text("\n".join(lines) + "\n")
    plot_pareto([r for r in rows if "first" not in r["set"]], out / "sudoku_mi.png", "Sudoku")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
