"""What the MI head costs next to the denoiser pass it rides on, at several batch sizes.

    python benchmarks/mi/mi_head_cost.py benchmarks/models/heads/sudoku12-relu benchmarks/models/sudoku-12layer \
        --data data/mi/sudoku-seq data/mi/sudoku-par

Times one denoiser forward and one head forward on the hidden states of the same batch of exact-MI
states (median of ``--repeats``, one thread: give it a core of its own, as contention inflates the
small head's time more than the denoiser's). Writes ``benchmarks/results/mi/mi_head_cost.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from unmask.eval import markdown_table, shown_path
from unmask.mi.data import load_mi_datasets
from unmask.mi.estimator import load_head
from unmask.mi.fit import head_cost
from unmask.model import load_model


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("head", type=Path, help="directory holding mi_head.*")
    p.add_argument("model", type=Path, help="the denoiser's model directory")
    p.add_argument("--data", nargs="+", required=True, help="exact-MI data directories (their states are timed)")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 250])
    p.add_argument("--repeats", type=int, default=21)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/mi/mi_head_cost"), help="path prefix of .md/.json")
    args = p.parse_args(argv)
    if min(args.batches) < 1 or args.repeats < 1:
        p.error("--batches and --repeats must be >= 1")
    torch.set_num_threads(1)
    model, head = load_model(args.model).eval(), load_head(args.head)
    tokens = load_mi_datasets(args.data)["tokens"].long()
    if len(tokens) < max(args.batches):
        p.error(f"--data holds {len(tokens)} states, fewer than batch {max(args.batches)}")
    rows = []
    for b in args.batches:
        cost = head_cost(model, head, tokens[:b], repeats=args.repeats)
        rows.append({"batch": b, **cost, "relative_cost %": round(100 * cost["relative_cost"], 2)})
        print(rows[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"head": shown_path(args.head), "model": shown_path(args.model), "threads": 1, "repeats": args.repeats,
            "head_parameters": head.num_parameters(), "denoiser_parameters": model.num_parameters()}
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    table = markdown_table(rows, ["batch", "denoiser_ms", "head_ms", "relative_cost %"])
    args.out.with_suffix(".md").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
