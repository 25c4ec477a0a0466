"""What a protein model believes about residue pairs: exact pairwise MI against sequence separation |i − j|.

    python benchmarks/proteins/protein_mi_separation.py                       # the shipped protein model
    python benchmarks/proteins/protein_mi_separation.py --model hf:runs/plm/sapiens-heavy \\
        --proteins benchmarks/proteins/data/heavy_chains.fasta --name sapiens_heavy_mi_separation

Each protein (the first ``--n`` of ``--proteins``; default the shipped reference, 500 held-out UniProt
proteins) has every residue masked with probability ``--rate`` (seeded), and the exact MI of every
masked pair is computed from the model's own conditionals (1 + N·20 passes per protein, no
truncation). Pairs are pooled by separation: the mean MI, the share above 0.01 nats, and where the
top 1 % of pairs lie. A contact-like view: local pairs (|i − j| ≤ 4, helix and turn geometry) vs
distant ones. Writes ``benchmarks/results/proteins/NAME.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from tqdm import tqdm

from unmask.adapters import load_denoiser
from unmask.eval import markdown_table, shown_path
from unmask.mi import exact_mi
from unmask.plots import pyplot, save_png
from unmask.tasks import task_denoiser
from unmask.tasks.proteins.fasta import read_fasta
from unmask.tasks.proteins.task import DEFAULT_MODEL, DEFAULT_REFERENCE, EOS_ID, MASK_ID, encode_residues

BINS = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 8), (9, 16), (17, 32), (33, 64), (65, 10_000)]  # separation ranges
THRESHOLD = 0.01  # nats: a pair "matters" above this (as in the MI issue)


def pairs_by_separation(mi: torch.Tensor, masked: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(separations (P,), MI (P,))`` of every masked pair i < j of the states ``mi`` ``(B, L, L)``."""
    L = mi.shape[-1]
    i, j = torch.triu_indices(L, L, offset=1)
    both = masked[:, i] & masked[:, j]  # (B, P_all)
    sep = (j - i).expand_as(both)[both]
    return sep, mi[:, i, j][both]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--proteins", default=str(DEFAULT_REFERENCE))
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--rate", type=float, default=0.5, help="share of residues masked")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default="protein_mi_separation")
    p.add_argument("--out", default="benchmarks/results/proteins", type=Path)
    args = p.parse_args()

    torch.set_num_threads(1)
    start = time.time()
    model = task_denoiser("proteins", load_denoiser(args.model, task="proteins"))
    records = read_fasta(args.proteins)[: args.n]
    x0 = encode_residues([r.sequence for r in records], model.cfg.seq_len)
    gen = torch.Generator().manual_seed(args.seed)
    masked = (torch.rand(x0.shape, generator=gen) < args.rate) & (x0 != EOS_ID)  # (N, L)
    states = torch.where(masked, MASK_ID, x0)
    seps, values, passes = [], [], 0
    for k in tqdm(range(len(states)), desc="exact MI", unit="protein"):
        res = exact_mi(model, states[k : k + 1], batch_size=512)
        sep, mi = pairs_by_separation(res.symmetric.float(), masked[k : k + 1])
        seps.append(sep)
        values.append(mi)
        passes += int(res.passes.sum())
    sep, mi = torch.cat(seps), torch.cat(values)
    top = mi >= mi.quantile(0.99)
    rows = []
    for lo, hi in BINS:
        inside = (sep >= lo) & (sep <= hi)
        if inside.any():
            v = mi[inside]
            rows.append({"separation": f"{lo}" if lo == hi else f"{lo}–{hi}" if hi < 10_000 else f"≥{lo}",
                         "pairs": int(inside.sum()), "mean_mi": float(v.mean()), "median_mi": float(v.median()),
                         "share_above_0.01": float((v > THRESHOLD).float().mean()),
                         "share_of_top_1pct": float((top & inside).sum() / top.sum())})
    per_sep = [{"separation": s, "mean_mi": float(mi[sep == s].mean()), "pairs": int((sep == s).sum())}
               for s in range(1, min(int(sep.max()), 60) + 1) if (sep == s).any()]
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"model": shown_path(args.model.removeprefix("hf:")), "proteins": shown_path(args.proteins), "n": len(records),
              "rate": args.rate, "seed": args.seed, "pairs": int(len(mi)), "passes": passes,
              "share_negative": float((mi < 0).float().mean()), "bins": rows, "per_separation": per_sep,
              "minutes": round((time.time() - start) / 60, 1)}
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    md = markdown_table(rows, list(rows[0]))
    (args.out / f"{args.name}.md").write_text(md + "\n")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["separation"] for r in per_sep], [r["mean_mi"] for r in per_sep], "o-", ms=3)
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_xlabel("sequence separation |i − j|")
    ax.set_ylabel("mean exact MI (nats)")
    ax.set_title(f"{Path(args.model).name}: {len(records)} proteins, {args.rate:.0%} of residues masked")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, args.out / f"{args.name}.png")
    print(md)


if __name__ == "__main__":
    main()
