"""How many parallel rounds of naked + hidden singles each test puzzle needs: a yardstick for low-NFE decoding.

    python benchmarks/sudoku/sudoku_rounds.py          # a few seconds; both test sets, all 1,000 puzzles each

A round places, all at once, every digit the grid at the round's start forces
(``unmask.tasks.sudoku.grid.singles_rounds``). A decoder that in each forward pass reveals exactly
the cells so forced needs as many passes as rounds and never collides; to need fewer passes a model
must reason past single deductions within one pass (or guess). Writes
``benchmarks/results/sudoku/sudoku_rounds.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from unmask.eval import markdown_table
from unmask.io import atomic_write
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.grid import singles_rounds

MAX_SHOWN = 8  # cumulative columns "≤ k rounds" for k = 1 .. MAX_SHOWN


def summary(name: str, rounds: list[int | None]) -> dict:
    """One table row: how many puzzles singles solve, their mean rounds, the share within each k."""
    solved = [r for r in rounds if r is not None]
    row = {"set": name, "puzzles": len(rounds), "singles solve %": round(100 * len(solved) / len(rounds), 1),
           "mean rounds": round(sum(solved) / len(solved), 2) if solved else None,
           "max rounds": max(solved) if solved else None}
    for k in range(1, MAX_SHOWN + 1):
        row[f"≤{k} %"] = round(100 * sum(r <= k for r in solved) / len(rounds), 1)
    return row


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default="data/sudoku", type=Path)
    p.add_argument("--sets", nargs="+", default=["test-kaggle", "test-hard"])
    p.add_argument("--n", type=int, help="first N puzzles of each set (default: all)")
    p.add_argument("--out", default="benchmarks/results/sudoku", type=Path)
    args = p.parse_args(argv)

    rows, counts = [], {}
    for name in args.sets:
        quizzes = standard_set(args.data_dir, name, args.n).quizzes  # (N, 81), 0 = blank
        rounds = [singles_rounds(q.tolist()) for q in quizzes]
        rows.append(summary(name, rounds))
        counts[name] = {str(k): v for k, v in sorted(Counter(rounds).items(), key=lambda kv: (kv[0] is None, kv[0] or 0))}
    columns = list(rows[0])
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out / "sudoku_rounds.json", lambda t: Path(t).write_text(
        json.dumps({"rows": rows, "rounds_histogram": counts}, indent=1) + "\n"))
    atomic_write(args.out / "sudoku_rounds.md", lambda t: Path(t).write_text(markdown_table(rows, columns) + "\n"))
    print(markdown_table(rows, columns))


if __name__ == "__main__":
    main()
