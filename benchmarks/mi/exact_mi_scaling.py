"""Exact MI that scales: forward passes against 1 + N·|V| and the measured error of ε-truncation, on the same states.

    python benchmarks/mi/exact_mi_scaling.py           # shipped Sudoku model, 100 states per kind and test set

Exact MI probes every value v of every masked position i (1 + N·|V| passes). Skipping values with
P(X_i = v | C) < ε saves passes; the skipped mass is filled in with the kept values' mean conditional
entropy, so an entry's error is at most (skipped mass)·log|V| (``exact_mi``'s bound). This measures
the real error against ε = 0 on the same states (every entry I[i, j] of every masked pair, as computed):
states drawn at a uniformly random step of sequential trajectories and of parallel ones (the entropy
budget, mi:gamma=1,lam=0 — where parallel decoding makes its decisions), on test-kaggle and test-hard.
The rows with ``skip_rows_below`` also leave out positions the model is nearly sure of: for one
consistent joint their MI would be at most H(X_i | C); the measured error shows whether this model's
conditionals allow it. The ε = 0 rows also say how far the model is from one consistent joint: the
Spearman correlation of I[i, j] with I[j, i] over masked pairs (1 for a joint; also over the pairs that
matter, above 0.01 nats), the share of negative entries (0 for a joint), and the share of the pairs that
matter whose ½(I_ij + I_ji) exceeds min(H_i, H_j), more than any joint with the model's own marginals
allows.

Every row is measured twice: for the paper's I (``raw``) and for the MI of each row's probe joint
P(X_i = v | C)·P(X_j | X_i = v, C) (``exact_mi``'s ``joint``, the ``_joint`` columns): the same
passes, a true MI whatever the model, so a skipped row errs by at most H(X_i | C) < the skip level.
Writes ``benchmarks/results/mi/exact_mi_scaling.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from unmask.eval import markdown_table, results_cache, shown_path
from unmask.mi import exact_mi
from unmask.mi.data import states_along
from unmask.mi.fit import MATTERS, consistency
from unmask.model import load_model
from unmask.tasks.sudoku.data import to_tokens
from unmask.tasks.sudoku.generate import standard_set
from unmask.tasks.sudoku.task import DEFAULT_MODEL

EPS = [1e-4, 3e-4, 5e-4, 1e-3, 3e-3, 1e-2, 3e-2]
SKIP = [1e-4, 1e-3]  # also skip whole rows of positions with H(X_i | C) below this ...
SKIP_EPS = [3e-4, 1e-3]  # ... at each of these ε
SETS = ("test-kaggle", "test-hard")
KINDS = {"sequential": "sequential", "parallel": "mi:gamma=1,lam=0"}  # whose trajectories the states come from


def states(model, puzzles: torch.Tensor, policy: str, seed: int) -> torch.Tensor:
    """One state per puzzle at a uniformly random step of its trajectory under ``policy``."""
    return states_along(model, puzzles, policy, torch.arange(len(puzzles)) + seed, torch.Generator().manual_seed(seed))


def measure(model, puzzles: torch.Tensor, split: str, kind: str, seed: int, eps_levels: list[float], skips: list[float],
            skip_eps: list[float]) -> list[dict]:
    """The rows of one test set and one kind of trajectory: ε = 0 (the reference), each ε, each skip."""
    policy = KINDS[kind]
    rows = []
    x = states(model, puzzles, policy, seed)
    masked = x == model.mask_id
    n_masked = masked.sum(1).double()
    full = 1 + n_masked * model.vocab_size  # (S,) passes of the plain method
    ref = exact_mi(model, x, eps=0.0)
    base = {"set": split, "states_from": kind, "states": len(x), "mean_masked": float(n_masked.mean())}
    both = masked[:, :, None] & masked[:, None, :]
    off = both & ~torch.eye(x.shape[1], dtype=torch.bool)
    sym = ref.symmetric
    matter = off & (sym > MATTERS)
    least_h = torch.minimum(ref.entropy[:, :, None], ref.entropy[:, None, :])  # (S, L, L) min(H_i, H_j)
    joint = {f"{k}_joint": v for k, v in consistency({"tokens": x, "mi": ref.joint, "rows": ref.rows}, model.mask_id).items()}
    rows.append({**base, "eps": 0.0, "skip_rows_below": 0.0, "mean_passes": float(ref.passes.double().mean()),
                 "full_passes": float(full.mean()), "saving_x": float(full.sum() / ref.passes.sum()),
                 "max_error": 0.0, "mean_error": 0.0, "max_bound": 0.0, "max_error_joint": 0.0, "mean_error_joint": 0.0,
                 "negative_share": float((ref.raw[off] < 0).double().mean()),
                 "above_min_entropy_share_matters": (float((sym[matter] > least_h[matter]).double().mean())
                                                     if matter.any() else None),
                 **consistency({"tokens": x, "mi": ref.raw, "rows": ref.rows}, model.mask_id), **joint})
    runs = [(eps, 0.0) for eps in eps_levels] + [(eps, skip) for skip in skips for eps in skip_eps]
    for eps, skip in runs:
        res = exact_mi(model, x, rows=masked & (ref.entropy >= skip), eps=eps)
        err, err_joint = (res.raw - ref.raw).abs()[both], (res.joint - ref.joint).abs()[both]
        rows.append({**base, "eps": eps, "skip_rows_below": skip, "mean_passes": float(res.passes.double().mean()),
                     "full_passes": float(full.mean()), "saving_x": float(full.sum() / res.passes.sum()),
                     "max_error": float(err.max()), "mean_error": float(err.mean()),
                     "max_bound": float(res.bound.max()), "max_error_joint": float(err_joint.max()),
                     "mean_error_joint": float(err_joint.mean())})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL))
    p.add_argument("--data-dir", default="data/sudoku", type=Path)
    p.add_argument("--n", type=int, default=100, help="states per kind and test set")
    p.add_argument("--eps", type=float, nargs="+", default=EPS, help="truncation levels to measure")
    p.add_argument("--skip", type=float, nargs="+", default=SKIP, help="row-skipping entropies (each at every --skip-eps)")
    p.add_argument("--skip-eps", type=float, nargs="+", default=SKIP_EPS, help="the truncation levels of the row-skipping runs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benchmarks/results/mi", type=Path)
    args = p.parse_args(argv)
    if not all(e > 0 for e in args.eps + args.skip_eps):  # (NaN too)
        p.error("--eps: levels must be > 0 (ε = 0 is the reference every row is measured against, always run)")

    torch.set_num_threads(1)
    start = time.time()
    model = load_model(args.model, task="sudoku")
    puzzles = {split: to_tokens(standard_set(args.data_dir, split, args.n).quizzes) for split in SETS}  # made if missing
    # Blocks measured before an interruption are kept in OUT/exact_mi_scaling.partial.jsonl and reused.
    cache = results_cache(args.out, "exact_mi_scaling", args.model, [Path(__file__), *(args.data_dir / f"{s}.csv" for s in SETS)],
                          n=args.n, seed=args.seed, eps=args.eps, skip=args.skip, skip_eps=args.skip_eps)
    rows = []
    for split in SETS:
        for kind in KINDS:
            block = cache.get({"set": split, "kind": kind})
            if block is None:
                block = measure(model, puzzles[split], split, kind, args.seed, args.eps, args.skip, args.skip_eps)
                cache.put({"set": split, "kind": kind}, block)
            rows += block
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"model": shown_path(args.model), "n": args.n, "seed": args.seed, "rows": rows,
              "minutes": round((time.time() - start) / 60, 1), "reused_blocks": cache.hits}
    (args.out / "exact_mi_scaling.json").write_text(json.dumps(result, indent=1) + "\n")
    cols = ["set", "states_from", "mean_masked", "eps", "skip_rows_below", "mean_passes", "full_passes", "saving_x", "max_error",
            "mean_error", "max_bound", "max_error_joint", "mean_error_joint", "negative_share", "above_min_entropy_share_matters",
            "exact_ij_vs_ji_spearman", "exact_ij_vs_ji_spearman_matters", "exact_ij_vs_ji_spearman_joint",
            "exact_ij_vs_ji_spearman_matters_joint"]
    md = markdown_table(rows, cols)
    (args.out / "exact_mi_scaling.md").write_text(md + "\n")
    cache.done()
    print(md)


if __name__ == "__main__":
    main()
