"""What limits the MI head's fit: the same exact-MI data, the same held-out puzzles, four heads.

    python benchmarks/mi_head_variants.py --data data/mi/sudoku-seq data/mi/sudoku-par    # ~15 min, one thread

The shipped head form (a per-position MLP into a rank-32 symmetric bilinear form, relu link) misses
the aim (Spearman ≥ 0.8 on the pairs that matter). Three changes, each aimed at one suspected cause:

- **targets**: the same head trained only on pairs whose target averages both directions (the
  one-direction targets carry the model's asymmetry);
- **capacity**: a small MLP over 8 bilinear forms per pair instead of one (symmetric, non-negative);
- **information**: the hidden states of earlier blocks (``--layers``) concatenated to the final ones.

Each is fitted by MSE like ``unmask mi train`` (Adam, cosine, the same seed and split) and scored by
:func:`unmask.mi.fit.evaluate_head` on the held-out states, with its cost against one denoiser pass
(median of 11, one thread; the denoiser's block outputs are caught by forward hooks, free).
Writes ``OUT.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm import tqdm

from unmask.eval import markdown_table, shown_path
from unmask.mi.data import load_mi_datasets
from unmask.mi.estimator import HeadConfig, MIHead
from unmask.mi.fit import HeadTrainConfig, both_rows, evaluate_head, median_time, pair_mask, split, targets
from unmask.model import load_model
from unmask.optim import adamw, set_lr, warmup_cosine
from unmask.tasks.sudoku.task import DEFAULT_MODEL

COLUMNS = ["head", "parameters", "spearman_matters", "spearman_matters_both_rows", "spearman", "mse", "top10_recall",
           "relative_cost"]


class PairMLPHead(nn.Module):
    """``forms`` symmetric bilinear scores per pair, mixed by a small MLP into a relu'd MI estimate."""

    def __init__(self, d_in: int, d_hidden: int = 128, forms: int = 8, rank: int = 16, width: int = 16) -> None:
        super().__init__()
        self.forms, self.rank = forms, rank
        self.mlp = nn.Sequential(nn.LayerNorm(d_in), nn.Linear(d_in, d_hidden), nn.GELU(), nn.Linear(d_hidden, forms * rank))
        self.mix = nn.Sequential(nn.Linear(forms, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        b, n, _ = hidden.shape
        e = self.mlp(hidden).view(b, n, self.forms, self.rank).transpose(1, 2)  # (B, M, N, r)
        s = torch.matmul(e, e.transpose(2, 3)) / math.sqrt(self.rank)  # (B, M, N, N), each symmetric
        return F.relu(self.mix(s.permute(0, 2, 3, 1)).squeeze(-1))  # (B, N, N)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


@torch.no_grad()
def features(model, tokens: torch.Tensor, layers: list[int], batch_size: int = 256) -> torch.Tensor:
    """``(S, L, D·(1 + len(layers)))`` final hidden states with those of blocks ``layers`` beside them."""
    caught = {}
    hooks = [model.blocks[k].register_forward_hook(lambda mod, inp, out, k=k: caught.__setitem__(k, out)) for k in layers]
    try:
        parts = []
        for a in range(0, len(tokens), batch_size):
            hidden = model(tokens[a : a + batch_size].long())[1]
            parts.append(torch.cat([hidden, *(caught[k] for k in layers)], -1).float())
    finally:
        for h in hooks:
            h.remove()
    return torch.cat(parts)


def fit(head: nn.Module, x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor, train: torch.Tensor,
        steps: int, lr: float = 2e-3, batch_size: int = 64, seed: int = 0) -> nn.Module:
    """MSE over the pairs of ``weight`` > 0 (weighted), as ``unmask mi train`` fits its head."""
    opt = adamw(head, lr)
    gen = torch.Generator().manual_seed(seed)
    for step in tqdm(range(steps), desc="head", leave=False):
        set_lr(opt, warmup_cosine(step, steps, lr, warmup=0, min_ratio=0.1))
        idx = train[torch.randint(len(train), (min(batch_size, len(train)),), generator=gen)]
        w = weight[idx]
        loss = (((head(x[idx]) - target[idx]) ** 2) * w).sum() / w.sum().clamp_min(1e-12)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.eval()


@torch.no_grad()
def relative_cost(model, head: nn.Module, tokens: torch.Tensor, x: torch.Tensor, repeats: int = 11) -> float:
    """Median head time over median denoiser time on the same batch."""
    return median_time(lambda: head(x), repeats) / median_time(lambda: model(tokens), repeats)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=str(DEFAULT_MODEL), help="the denoiser the exact MI was computed with")
    p.add_argument("--data", nargs="+", required=True, help="exact-MI data directories (unmask mi data)")
    p.add_argument("--steps", type=int, default=3000, help="optimizer steps per head")
    p.add_argument("--layers", type=int, nargs="+", default=[1, 3], help="earlier blocks whose outputs the third head also reads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/mi_head_variants"))
    args = p.parse_args(argv)

    torch.set_num_threads(1)
    start = time.time()
    model = load_model(args.model)
    if any(not 0 <= k < len(model.blocks) for k in args.layers):
        p.error(f"--layers: the model has blocks 0-{len(model.blocks) - 1}")
    data = load_mi_datasets(args.data)
    target, pairs, both = targets(data), pair_mask(data, model.mask_id), both_rows(data, model.mask_id)
    train, val = split(data, HeadTrainConfig.val_fraction)  # the states unmask mi train holds out
    final = features(model, data["tokens"], [])
    deep = features(model, data["tokens"], args.layers)
    d = final.shape[-1]
    variants = [  # name, head, its inputs, the pairs it is fitted on
        ("bilinear, rank 32 (the shipped form)", MIHead(HeadConfig(d, link="relu")), final, pairs),
        ("same, fitted on both-direction targets only", MIHead(HeadConfig(d, link="relu")), final, both),
        ("MLP over 8 bilinear forms", PairMLPHead(d), final, pairs),
        (f"bilinear, + blocks {','.join(map(str, args.layers))}", MIHead(HeadConfig(deep.shape[-1], link="relu")), deep, pairs),
    ]
    rows = []
    sample = data["tokens"][val[:250]].long()
    for name, head, x, fitted_on in variants:
        torch.manual_seed(args.seed)
        head = fit(head, x, target, fitted_on.float(), train, args.steps, seed=args.seed)
        m = evaluate_head(head, x[val], target[val], pairs[val], both=both[val])
        rows.append({"head": name, "parameters": head.num_parameters(), **{k: m.get(k) for k in COLUMNS[2:-1]},
                     "relative_cost": relative_cost(model, head, sample, x[val[:250]])})
        print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"model": shown_path(args.model), "data": [shown_path(x) for x in args.data], "steps": args.steps,
              "train_states": len(train), "val_states": len(val), "rows": rows, "minutes": round((time.time() - start) / 60, 1)}
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    md = markdown_table(rows, COLUMNS)
    args.out.with_suffix(".md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
