"""How negative the exact MI of the shipped Sudoku model gets, and what the MI head charges per pair.

    python benchmarks/sudoku_mi_stats.py                       # 1,200 states, as many as the 12-layer head was fitted on
    python benchmarks/sudoku_mi_stats.py --states 100 --examples data/sudoku/val-kaggle-200.csv

The states are made exactly as the MI head's training data is (``unmask mi data``, i.e.
:func:`unmask.mi.data.build_shard`): one state per sequential trajectory of a random training
puzzle, at a uniformly random step, with every masked row of the exact MI computed (ε = 10⁻³). The
12-layer model's softplus head was fitted on 1,200 such states of ``data/sudoku/train.csv`` (the
24-layer model's head since 2026-12-04: 3,000 states, half of them parallel); this draws them from
``--examples`` (default: ``data/sudoku/train-2k.csv``, the first 2,000 of that set).

Over every ordered pair (i, j) of distinct masked cells it reports:

* the raw exact entries I[i, j] (row i = the probed cell): the share below 0 (and below −0.01,
  −0.1 nats), the minimum, quantiles, and the negative entries' share of the total |I| mass;
* how well I[i, j] and I[j, i] agree (:func:`unmask.mi.fit.consistency`, as in ``mi_head.json``);
* what the head Î = softplus(s_ij + b) outputs on the same pairs: its bias b and softplus(b) (the
  value at s_ij = 0, not a floor: s_ij is a learned bilinear form of either sign), the share of
  pairs below softplus(b), the minimum and quantiles, and the share of pairs whose charge λ·Î alone
  exceeds the budget γ for the (γ, λ) pairs in the results tables.

Writes ``benchmarks/results/sudoku_mi_stats.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from unmask.eval import shown_path
from unmask.mi.data import MIDataConfig, build_shard
from unmask.mi.estimator import load_head
from unmask.mi.fit import consistency, hidden_states
from unmask.model import load_model
from unmask.tasks.sudoku.data import read_puzzles, to_tokens
from unmask.tasks.sudoku.task import DEFAULT_MODEL

CHARGES = [(0.01, 2.0), (0.03, 2.0), (0.1, 2.0)]  # (γ, λ) of the λ > 0 rows in sudoku_mi.md
QUANTILES = [0.01, 0.1, 0.5, 0.9, 0.99]


def quantiles(x: torch.Tensor) -> dict:
    q = torch.quantile(x.double()[torch.randperm(len(x), generator=torch.Generator().manual_seed(0))[: 10**6]],
                       torch.tensor(QUANTILES, dtype=torch.float64))
    return {f"q{round(100 * p)}": float(v) for p, v in zip(QUANTILES, q)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--examples", default="data/sudoku/train-2k.csv", type=Path, help="puzzles the trajectories start from")
    p.add_argument("--states", type=int, default=1200, help="states (one per trajectory)")
    p.add_argument("--seed", type=int, default=0, help="seed of unmask mi data (prompt, step and row choice)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", default="benchmarks/results", type=Path)
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    head = load_head(args.model)
    prompts = to_tokens(read_puzzles(args.examples).quizzes)
    cfg = MIDataConfig(states=args.states, shard_size=100, rows=0, eps=1e-3, policy="sequential", seed=args.seed)
    shards = [build_shard(model, prompts, cfg, k) for k in range(cfg.shards)]
    data = {key: torch.from_numpy(np.concatenate([s[key] for s in shards])) for key in shards[0]}
    tokens = data["tokens"].long()
    masked = tokens == model.mask_id
    eye = torch.eye(tokens.shape[1], dtype=torch.bool)
    pairs = data["rows"][:, :, None] & masked[:, None, :] & ~eye  # (S, L, L): row i computed, j masked, i ≠ j
    raw = data["mi"].double()[pairs]

    with torch.no_grad():
        est = head(hidden_states(model, tokens)).double()[pairs]
    bias = float(head.bias)
    exact = {
        "entries": int(len(raw)),
        "share_below_0": float((raw < 0).double().mean()),
        "share_below_-0.01": float((raw < -0.01).double().mean()),
        "share_below_-0.1": float((raw < -0.1).double().mean()),
        "min": float(raw.min()),
        "max": float(raw.max()),
        "mean": float(raw.mean()),
        **quantiles(raw),
        "negative_share_of_abs_mass": float(raw.clamp_max(0).abs().sum() / raw.abs().sum()),
        **consistency({k: data[k] for k in ("tokens", "rows", "mi")}, model.mask_id),
    }
    charges = {f"share_lam_I_above_gamma(gamma={g},lam={lam})": float((lam * est > g).double().mean()) for g, lam in CHARGES}
    head_stats = {
        "bias": bias,
        "softplus_bias": float(F.softplus(torch.tensor(bias))),
        "share_below_softplus_bias": float((est < F.softplus(torch.tensor(bias, dtype=torch.float64))).double().mean()),
        "min": float(est.min()),
        "max": float(est.max()),
        "mean": float(est.mean()),
        **quantiles(est),
        **charges,
    }
    meta = {"model": shown_path(args.model), "examples": shown_path(args.examples), "states": args.states,
            "seed": args.seed, "eps": cfg.eps, "mean_masked_cells": float(masked.double().sum(1).mean()),
            "probe_passes": int(data["passes"].sum()), "threads": args.threads,
            "minutes": round((time.time() - start) / 60, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    out = {"meta": meta, "exact": exact, "head": head_stats}
    (args.out / "sudoku_mi_stats.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"{args.states} states of sequential trajectories of `{meta['examples']}` (seed {args.seed}), "
             f"{meta['mean_masked_cells']:.1f} masked cells on average; every ordered pair of distinct masked cells.", "",
             "| MI from | pairs | share < 0 | share < −0.01 | share < −0.1 | min | 1st percentile | median | 99th percentile | max |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in (("exact (raw)", exact), ("head", head_stats)):
        lines.append(f"| {name} | {exact['entries']} | {(s.get('share_below_0', 0)):.1%} | {s.get('share_below_-0.01', 0):.1%} | "
                     f"{s.get('share_below_-0.1', 0):.1%} | {s['min']:.3g} | {s['q1']:.3g} | {s['q50']:.3g} | {s['q99']:.3g} | {s['max']:.3g} |")
    lines += ["", "| quantity | value |", "|---|---|",
              f"| exact: negative entries' share of the total \\|I\\| mass | {exact['negative_share_of_abs_mass']:.1%} |",
              f"| exact: I_ij vs I_ji Pearson | {exact['exact_ij_vs_ji_pearson']:.3g} |",
              f"| exact: I_ij vs I_ji Spearman | {exact['exact_ij_vs_ji_spearman']:.3g} |",
              f"| head: bias b | {bias:.3g} |",
              f"| head: softplus(b), its output at s_ij = 0 | {head_stats['softplus_bias']:.3g} |",
              f"| head: share of pairs below softplus(b) | {head_stats['share_below_softplus_bias']:.1%} |",
              f"| head: mean | {head_stats['mean']:.3g} |"]
    lines += [f"| head: share of pairs with λ·Î > γ (γ = {g}, λ = {lam}) | {charges[f'share_lam_I_above_gamma(gamma={g},lam={lam})']:.1%} |"
              for g, lam in CHARGES]
    (args.out / "sudoku_mi_stats.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{meta['minutes']} min", flush=True)


if __name__ == "__main__":
    main()
