"""Validation accuracy (or masked-token perplexity) vs training step of a run (from its ``log.jsonl``): Markdown table + PNG.

    python benchmarks/tools/learning_curve.py runs/sudoku --out benchmarks/results/sudoku/sudoku_learning_curve
    python benchmarks/tools/learning_curve.py runs/protein --out benchmarks/results/proteins/protein_learning_curve
    python benchmarks/tools/learning_curve.py benchmarks/results/maths/runs/gpu-continue.jsonl \
        --out benchmarks/results/maths/maths_learning_curve

Records made on another device (a CPU run continued on a GPU) are marked by colour in the plot and
named in the table's ``device`` column. Several runs make one curve when each continued the one before
(a fresh run started from its model with ``--init``): a later run's steps and minutes count on from the
last record of the one before it, and its ``run`` column names it.

    python benchmarks/tools/learning_curve.py benchmarks/results/sudoku/runs/phase1.jsonl \
        benchmarks/results/sudoku/runs/phase2.jsonl --out benchmarks/results/sudoku/sudoku_learning_curve
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from unmask.eval import markdown_table
from unmask.plots import pyplot, save_png


def read_log(run: Path) -> list[dict]:
    """The records of a run directory's ``log.jsonl``, or of a log file."""
    log = run / "log.jsonl" if run.is_dir() else run
    return [json.loads(line) for line in log.read_text().splitlines() if line]


def chained(runs: list[Path]) -> list[dict]:
    """The records of ``runs`` as one run: each continues the last record of the one before it (steps
    and minutes counted on), and names its run (the log's folder, or its file name) in ``run``."""
    rows, step, minutes = [], 0, 0.0
    for run in runs:
        records = read_log(run)
        for r in records:
            r["run"] = run.name if run.is_dir() else run.stem
            r["step"] += step
            r["minutes"] = round(r["minutes"] + minutes, 2)
        if records:
            step, minutes = records[-1]["step"], records[-1]["minutes"]
        rows += records
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", type=Path, nargs="+", help="run directory with log.jsonl, or a log file itself; "
                   "several: each continued the one before")
    p.add_argument("--out", type=Path, required=True,
                   help="path prefix of .md/.png, e.g. benchmarks/results/sudoku/sudoku_learning_curve")
    args = p.parse_args(argv)
    rows = chained(args.runs)
    metrics = [k for k in rows[0] if k.endswith("_acc")]
    for r in rows:
        for k in metrics:
            r[k] = round(100 * r[k], 1)
    scale = "exact-match accuracy %"
    if not metrics:  # a run validated by perplexity (proteins): masked-residue NLL at fixed masks
        metrics, scale = [k for k in ("val_nll", "val_ppl") if k in rows[0]], "validation perplexity of masked positions"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for r in rows:
        r.setdefault("device", "cpu")  # logs from before the device field were CPU runs
    table = markdown_table(rows,
                           ["step", "minutes", "device"] + (["run"] if len(args.runs) > 1 else []) + ["train_loss"] + metrics)
    args.out.with_suffix(".md").write_text(table + "\n")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in [m for m in metrics if m != "val_nll"]:  # the perplexity says the same as its log
        ax.plot([r["step"] for r in rows], [r[k] for r in rows], "-", color="0.6")
        for device in dict.fromkeys(r["device"] for r in rows):
            on = [r for r in rows if r["device"] == device]
            ax.plot([r["step"] for r in on], [r[k] for r in on], "o", label=f"{k} on {device}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(scale)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_png(fig, args.out.with_suffix(".png"))
    print(table)


if __name__ == "__main__":
    main()
