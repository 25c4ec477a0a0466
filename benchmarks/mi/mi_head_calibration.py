"""The MI head's calibration: mean predicted vs mean exact MI in bins of the exact MI, on held-out puzzles.

    python benchmarks/mi/mi_head_calibration.py benchmarks/models/heads/sudoku12-relu \\
        --old benchmarks/models/sudoku-12layer --out benchmarks/results/mi/sudoku_head_calibration

Reads the metrics ``unmask mi train`` stored in a head's ``mi_head.json`` (held-out states; the
calibration bins, Spearman on the pairs that matter, what independent pairs are charged) and writes a
Markdown table and a PNG: predicted against exact MI per bin, the diagonal for a calibrated head.
``--old`` adds a head trained before these metrics existed, for its summary figures only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from unmask.eval import markdown_table
from unmask.plots import pyplot, save_png

QUANTITY = {"raw": ("exact MI", "nats"), "joint": ("exact probe-joint MI", "nats"),  # a head's target → its name, unit
            "influence": ("exact influence D", "total variation")}


def target_of(metrics: dict) -> tuple[str, str]:
    """The name and unit of what a head was fitted to (heads fitted before targets were a choice fit the paper's I)."""
    return QUANTITY[metrics.get("target", "raw")]


SUMMARY = ["spearman", "spearman_matters", "spearman_matters_both_rows", "symmetric_vs_one_direction_spearman_matters",
           "pearson", "mse", "top10_recall", "independent_mean_charge", "independent_share_zero", "relative_cost",
           "train_states", "val_states", "head_parameters"]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("head", type=Path, help="folder with mi_head.json")
    p.add_argument("--old", type=Path, help="another head's folder, for the summary table")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/mi/sudoku_head_calibration"))
    args = p.parse_args(argv)

    meta = json.loads((args.head / "mi_head.json").read_text())
    m = meta["metrics"]
    name, unit = target_of(m)
    heads = [{"head": f"{args.head} ({meta['config']['link']})", "target": name, **{k: m.get(k) for k in SUMMARY}}]
    if args.old:
        old = json.loads((args.old / "mi_head.json").read_text())
        heads.append({"head": f"{args.old} ({old['config'].get('link', 'softplus')})",
                      "target": target_of(old["metrics"])[0], **{k: old["metrics"].get(k) for k in SUMMARY}})
    bins = [{f"{name} from": b["exact_from"], "to": b["exact_to"], "pairs": b["pairs"], "mean exact": b["mean_exact"],
             "mean predicted": b["mean_predicted"], "share predicted 0": b["share_predicted_zero"]} for b in m["calibration"]]
    # (each head's metrics are against its own target)
    md = markdown_table(heads, ["head", "target", *SUMMARY]) + f"\n\nCalibration (held-out pairs, bins of the {name}):\n\n"
    md += markdown_table(bins, list(bins[0]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(md + "\n")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 4.5))
    xs = [b["mean exact"] for b in bins]
    ys = [b["mean predicted"] for b in bins]
    ax.plot(xs, ys, "o-", label="head (mean per bin)")
    lo, hi = 1e-3, max(max(xs), max(ys)) * 1.5
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="calibrated")
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel(f"mean {name} in the bin ({unit})")
    ax.set_ylabel(f"mean predicted ({unit})")
    ax.set_title(f"Calibration vs {name} (held out)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_png(fig, args.out.with_suffix(".png"))
    print(md)


if __name__ == "__main__":
    main()
