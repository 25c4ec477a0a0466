"""Forward passes vs exact-match accuracy of every baseline policy on both Sudoku test sets.

    python benchmarks/sudoku/sudoku_policies.py                 # shipped model, 1,000 + 1,000 puzzles
    python benchmarks/sudoku/sudoku_policies.py --n 100         # quicker
    python benchmarks/sudoku/sudoku_policies.py --model DIR --policies sequential mi:gamma=1,lam=0 --out OUT
        # any model, any policy

Writes ``benchmarks/results/sudoku/sudoku_policies.{json,md}``. The test sets are the project's standard
ones (``unmask sudoku generate --standard``); they are generated here if missing.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from unmask.eval import compare, markdown_table, results_cache, shown_path
from unmask.model import load_model, read_config
from unmask.policies import build_policy
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL, SudokuTask

NAME = "sudoku_policies"  # OUT/NAME.{json,md}, and NAME.partial.jsonl while it runs
POLICIES = [
    "sequential", "topk:k=3", "topk:k=7",
    "random:steps=20", "top_prob:steps=20", "margin:steps=20",
    "eb:gamma=0.01", "eb:gamma=0.1", "threshold:tau=0.9", "threshold:tau=0.7",
]
# Sharma, Wang, Li 2026 (arXiv 2605.20187): 4.2M-parameter model, 1,000 test puzzles from the Kaggle 1M set.
REFERENCE = [
    {"set": "reference (paper)", "policy": "sequential", "mean_nfe": 53.9, "accuracy %": 61.6},
    {"set": "reference (paper)", "policy": "naive parallel k=7", "mean_nfe": 9.0, "accuracy %": 36.8},
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--data-dir", default="data/sudoku", type=Path)
    p.add_argument("--n", type=int, default=1000, help="puzzles of each test set")
    p.add_argument("--sets", nargs="+", default=["test-kaggle", "test-hard"], help="standard sets to use (val-* to tune)")
    p.add_argument("--policies", nargs="+", default=POLICIES)
    p.add_argument("--out", default="benchmarks/results/sudoku", type=Path)
    args = p.parse_args()

    torch.set_num_threads(2)
    model = load_model(args.model, task="sudoku")
    sets = {name: standard_set(args.data_dir, name, args.n) for name in args.sets}
    start = time.time()
    # Rows measured before an interruption are kept in OUT/sudoku_policies.partial.jsonl and reused.
    cache = results_cache(args.out, NAME, args.model, [Path(__file__), *(args.data_dir / f"{s}.csv" for s in args.sets)],
                          n=args.n, threads=torch.get_num_threads())
    rows = compare(SudokuTask(), model, sets, [build_policy(spec, model, args.model) for spec in args.policies], cache=cache)
    for r in rows:
        r["accuracy %"] = round(100 * r["accuracy"], 1)
    meta = {
        "model": shown_path(args.model), "parameters": model.num_parameters(), "train": read_config(args.model).get("train"),
        "n": args.n, "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
        "threads": torch.get_num_threads(), "minutes": round((time.time() - start) / 60, 1), "reused_rows": cache.hits,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{NAME}.json").write_text(json.dumps({"meta": meta, "rows": rows, "reference": REFERENCE}, indent=1) + "\n")
    table = markdown_table(rows + REFERENCE, ["set", "policy", "mean_nfe", "accuracy %", "seconds"])
    (args.out / f"{NAME}.md").write_text(table + "\n")
    cache.done()
    print(table)


if __name__ == "__main__":
    main()
