"""Training curves of a learned-order run (its ``log.jsonl``): ELBO, KL (or, for ``--objective rl``, success
and reward), mean steps and validation accuracy per optimizer step, as a Markdown table and a four-panel PNG.

    python benchmarks/order/order_curve.py runs/order-maths3-T4 --out benchmarks/results/order/maths-3step/curve
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from unmask.eval import markdown_table
from unmask.plots import pyplot, save_png

PANELS = {  # objective → (log key, axis label) of each panel
    "elbo": [("train_elbo", "ELBO per generated position (nats)"), ("train_kl", "KL(Q‖P) per generated position (nats)"),
             ("train_mean_steps", "mean steps of training rollouts"), ("val_acc", "validation accuracy (learned policy)")],
    "rl": [("train_success", "success of training rollouts"), ("train_reward", "reward (success − c·NFE)"),
           ("train_mean_steps", "mean steps of training rollouts"), ("val_acc", "validation accuracy (learned policy)")],
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="run directory with log.jsonl, or a log file itself")
    p.add_argument("--out", type=Path, required=True, help="path prefix of .md/.png")
    args = p.parse_args(argv)
    log = args.run / "log.jsonl" if args.run.is_dir() else args.run
    if not log.is_file():
        p.error(f"{log}: no such log (give a train-order run folder or its log.jsonl)")
    try:
        rows = [json.loads(line) for line in log.read_text().splitlines() if line]
    except json.JSONDecodeError as e:
        p.error(f"{log}: not a JSON-lines log ({e})")
    if not rows:
        p.error(f"{log}: empty; the run has not logged a step yet")
    columns = ["step", "minutes"] + [k for k in ("train_elbo", "train_kl", "train_loglik", "train_objective", "train_success",
                                                 "train_reward", "train_kl_start", "train_mean_steps", "val_acc",
                                                 "val_mean_nfe", "val_max_nfe") if k in rows[0]]
    panels = PANELS["rl" if "train_success" in rows[0] else "elbo"]  # a run of --objective rl logs success, not the ELBO
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table = markdown_table(rows, columns)
    args.out.with_suffix(".md").write_text(table + "\n")
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4))
    for ax, (key, label) in zip(axes, panels):
        ax.plot([r["step"] for r in rows if key in r], [r[key] for r in rows if key in r], "o-")
        ax.set_xlabel("optimizer step")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, args.out.with_suffix(".png"))
    print(table)


if __name__ == "__main__":
    main()
