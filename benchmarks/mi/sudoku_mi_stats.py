"""How negative the exact MI of the shipped Sudoku model gets, and what the MI head charges per pair.

    python benchmarks/mi/sudoku_mi_stats.py                       # 1,200 states, as many as the 12-layer head was fitted on
    python benchmarks/mi/sudoku_mi_stats.py --states 100 --examples data/sudoku/val-kaggle-200.csv

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
* what the head Î = link(s_ij + b) outputs on the same pairs (link: softplus or relu, as the head
  was fitted): its bias b and link(b) (the value at s_ij = 0, not a floor: s_ij is a learned
  bilinear form of either sign), the share of pairs below link(b) and the share charged exactly 0
  (relu only can), the minimum and quantiles, and the share of pairs whose charge λ·Î alone exceeds
  the budget γ for the (γ, λ) pairs in the results tables.

The states are built shard by shard into ``--states-dir`` (a killed run resumes there).
Writes ``OUT/sudoku_mi_stats.{json,md}`` (``--out``, default ``benchmarks/results/mi``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from functools import partial
from pathlib import Path

import torch

from unmask.errors import UnmaskError
from unmask.eval import shown_path
from unmask.io import atomic_write
from unmask.mi.data import MIDataConfig, build_mi_data, load_mi_data
from unmask.mi.estimator import load_head
from unmask.mi.fit import consistency, head_inputs
from unmask.model import WEIGHTS_FILE, load_model
from unmask.runs import file_digest
from unmask.tasks.sudoku.data import read_puzzles, to_tokens
from unmask.tasks.sudoku.task import DEFAULT_MODEL

CHARGES = [(0.01, 2.0), (0.03, 2.0), (0.1, 2.0)]  # (γ, λ) of the λ > 0 rows in sudoku_mi.md
QUANTILES = [0.01, 0.1, 0.5, 0.9, 0.99]


def quantiles(x: torch.Tensor) -> dict:
    q = torch.quantile(x.double()[torch.randperm(len(x), generator=torch.Generator().manual_seed(0))[: 10**6]],
                       torch.tensor(QUANTILES, dtype=torch.float64))
    return {f"q{round(100 * p)}": float(v) for p, v in zip(QUANTILES, q)}


@torch.no_grad()  # statistics only: no graph over 1,200 states, and the caller's grad mode is restored
def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--examples", default="data/sudoku/train-2k.csv", type=Path, help="puzzles the trajectories start from")
    p.add_argument("--states", type=int, default=1200, help="states (one per trajectory)")
    p.add_argument("--seed", type=int, default=0, help="seed of unmask mi data (prompt, step and row choice)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--workers", type=int, default=1, help="processes building the exact-MI states")
    p.add_argument("--states-dir", type=Path,
                   help="where the exact-MI states are built and kept "
                        "(default: runs/sudoku_mi_stats/<hash of the inputs and the model's weights>)")
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    args = p.parse_args(argv)
    if not args.examples.is_file():
        p.error(f"--examples: no {args.examples}")
    if args.states < 1:
        p.error("--states must be >= 1")

    torch.set_num_threads(args.threads)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    head = load_head(args.model)
    prompts = to_tokens(read_puzzles(args.examples).quizzes)
    cfg = MIDataConfig(states=args.states, shard_size=100, rows=0, eps=1e-3, policy="sequential", seed=args.seed)
    source = {"model": shown_path(args.model), "examples": shown_path(args.examples)}
    weights = file_digest(Path(args.model) / WEIGHTS_FILE)  # in the folder's name: another model in the same path builds anew
    states_dir = args.states_dir or Path("runs/sudoku_mi_stats") / hashlib.sha256(
        json.dumps([source, weights, args.states, args.seed]).encode()).hexdigest()[:12]
    try:  # shard by shard: a killed run resumes, a rerun with the same inputs reuses them
        build_mi_data(partial(load_model, args.model, task="sudoku"), prompts, cfg, states_dir, workers=args.workers,
                      source=source)
        data = load_mi_data(states_dir)
    except UnmaskError as e:
        p.error(str(e))
    tokens = data["tokens"].long()
    masked = tokens == model.mask_id
    eye = torch.eye(tokens.shape[1], dtype=torch.bool)
    pairs = data["rows"][:, :, None] & masked[:, None, :] & ~eye  # (S, L, L): row i computed, j masked, i ≠ j
    raw = data["mi"].double()[pairs]

    est = head(*head_inputs(model, tokens, bool(head.cfg.n_values))).double()[pairs]
    bias = float(head.bias)
    at_zero = float(head.link(torch.tensor(bias, dtype=torch.float64)))  # Î at s_ij = 0: link(b)
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
        "link": head.cfg.link,
        "bias": bias,
        "link_bias": at_zero,
        "share_below_link_bias": float((est < at_zero).double().mean()),
        "share_zero": float((est == 0).double().mean()),
        "min": float(est.min()),
        "max": float(est.max()),
        "mean": float(est.mean()),
        **quantiles(est),
        **charges,
    }
    meta = {"model": shown_path(args.model), "examples": shown_path(args.examples), "states": args.states,
            "seed": args.seed, "eps": cfg.eps, "mean_masked_cells": float(masked.double().sum(1).mean()),
            "probe_passes": int(data["passes"].sum()), "threads": args.threads, "workers": args.workers,
            "minutes": round((time.time() - start) / 60, 1)}
    args.out.mkdir(parents=True, exist_ok=True)
    out = {"meta": meta, "exact": exact, "head": head_stats}
    atomic_write(args.out / "sudoku_mi_stats.json", lambda t: Path(t).write_text(json.dumps(out, indent=1) + "\n"))
    lines = [f"{args.states} states of sequential trajectories of `{meta['examples']}` (seed {args.seed}), "
             f"{meta['mean_masked_cells']:.1f} masked cells on average; every ordered pair of distinct masked cells.", "",
             "| MI from | pairs | share < 0 | share < −0.01 | share < −0.1 "
             "| min | 1st percentile | median | 99th percentile | max |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in (("exact (raw)", exact), ("head", head_stats)):
        lines.append(f"| {name} | {exact['entries']} | {(s.get('share_below_0', 0)):.1%} | {s.get('share_below_-0.01', 0):.1%} | "
                     f"{s.get('share_below_-0.1', 0):.1%} | {s['min']:.3g} | {s['q1']:.3g} | {s['q50']:.3g} | "
                     f"{s['q99']:.3g} | {s['max']:.3g} |")
    lines += ["", "| quantity | value |", "|---|---|",
              f"| exact: negative entries' share of the total \\|I\\| mass | {exact['negative_share_of_abs_mass']:.1%} |",
              f"| exact: I_ij vs I_ji Pearson | {exact['exact_ij_vs_ji_pearson']:.3g} |",
              f"| exact: I_ij vs I_ji Spearman | {exact['exact_ij_vs_ji_spearman']:.3g} |",
              f"| head: link | {head.cfg.link} |",
              f"| head: bias b | {bias:.3g} |",
              f"| head: {head.cfg.link}(b), its output at s_ij = 0 | {at_zero:.3g} |",
              f"| head: share of pairs below {head.cfg.link}(b) | {head_stats['share_below_link_bias']:.1%} |",
              f"| head: share of pairs charged exactly 0 | {head_stats['share_zero']:.1%} |",
              f"| head: mean | {head_stats['mean']:.3g} |"]
    lines += [f"| head: share of pairs with λ·Î > γ (γ = {g}, λ = {lam}) | "
              f"{charges[f'share_lam_I_above_gamma(gamma={g},lam={lam})']:.1%} |"
              for g, lam in CHARGES]
    atomic_write(args.out / "sudoku_mi_stats.md", lambda t: Path(t).write_text("\n".join(lines) + "\n"))
    print("\n".join(lines))
    print(f"{meta['minutes']} min", flush=True)


if __name__ == "__main__":
    main()
