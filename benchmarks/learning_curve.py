"""Validation accuracy (or masked-token perplexity) vs training step of a run (from its ``log.jsonl``): Markdown table + PNG.

    python benchmarks/learning_curve.py runs/sudoku --out benchmarks/results/sudoku_learning_curve
    python benchmarks/learning_curve.py runs/protein --out benchmarks/results/protein_learning_curve
    python benchmarks/learning_curve.py benchmarks/results/maths_runs/gpu-continue.jsonl \
        --out benchmarks/results/maths_learning_curve

Records made on another device (a CPU run continued on a GPU) are marked by colour in the plot and
named in the table's ``device`` column.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from unmask.eval import markdown_table
from unmask.plots import pyplot, save_png


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="run directory with log.jsonl, or a log file itself")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/learning_curve"), help="path prefix of .md/.png")
    args = p.parse_args()
    log = args.run / "log.jsonl" if args.run.is_dir() else args.run
    rows = [json.loads(line) for line in log.read_text().splitlines() if line]
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
    table = markdown_table(rows, ["step", "minutes", "device", "train_loss"] + metrics)
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
