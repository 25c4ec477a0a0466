"""Decode rows of many lengths, each length as its own batch: no row is ever padded.

A masked LM attends to every position, so padding a row would change its logits, and which rows
share a batch would change the results. Rows are grouped by (length, first position to fill) and
decoded in batches inside each group; example k always gets seed ``seed + k``. So a sequence's fill
depends neither on the batch size nor on what else the file holds. Under ``torchrun`` example k is
decoded on rank k mod N and every rank gets every result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from tqdm import tqdm

from unmask import dist
from unmask.decode import SemiAR, TokenRule, decode
from unmask.tasks.seq.layout import Row


@dataclass(frozen=True)
class Bucket:
    """Rows of one length and one first position to fill."""

    index: torch.Tensor  # (B,) example numbers of the rows
    tokens: torch.Tensor  # (B, L)
    start: int  # first position to fill (where semi-autoregressive blocks start)


def buckets(rows: list[Row], index: list[int] | None = None) -> list[Bucket]:
    """``rows`` grouped by (length, start), shortest first; ``index``: the example number of each row (default 0..)."""
    index = list(range(len(rows))) if index is None else index
    keys = sorted({(len(r.tokens), r.start) for r in rows})
    out = []
    for length, start in keys:
        mine = [k for k, r in enumerate(rows) if (len(r.tokens), r.start) == (length, start)]
        out.append(Bucket(torch.tensor([index[k] for k in mine]), torch.stack([rows[k].tokens for k in mine]), start))
    return out


@dataclass(frozen=True)
class Filled:
    """What :func:`fill_rows` returns, in the order of the rows."""

    tokens: list[torch.Tensor]  # (L_k,) each decoded row, on the CPU
    nfe: torch.Tensor  # (N,) forward passes spent on each row
    extra_passes: torch.Tensor  # (N,) passes a policy spent itself (exact-MI probes), apart from NFE
    seconds: float  # wall time of the decoding


def fill_rows(denoiser, rows: list[Row], policy, rule: TokenRule = TokenRule(), batch_size: int = 8, seed: int = 0,
              block: int = 0, progress: bool = False) -> Filled:
    """Decode every row's positions to fill with ``policy`` (inside semi-autoregressive blocks of ``block``
    positions from each row's first position to fill, if ``block``), length by length."""
    rank, world = dist.rank_world()
    mine = list(range(rank, len(rows), world))  # this process's share
    done: dict[int, tuple[torch.Tensor, int, int]] = {}  # example → (tokens, NFE, extra passes)
    start = time.perf_counter()
    with tqdm(total=len(mine), disable=not progress or rank != 0, desc="decode", unit="sequence") as bar:
        for b in buckets([rows[k] for k in mine], mine):
            pol = SemiAR(policy, block, b.start) if block else policy
            for lo in range(0, len(b.index), batch_size):
                index = b.index[lo : lo + batch_size]  # (B,) example numbers
                res = decode(denoiser, b.tokens[lo : lo + batch_size].to(denoiser.device), pol, rule,
                             seeds=(index + seed).to(denoiser.device))
                for k, t, n, x in zip(index.tolist(), res.tokens.cpu(), res.nfe.tolist(), res.extra_passes.tolist()):
                    done[k] = (t, n, x)
                bar.update(len(index))
    merged = {k: v for part in dist.all_gather(done) for k, v in part.items()}
    order = [merged[k] for k in range(len(rows))]
    return Filled([t for t, _, _ in order], torch.tensor([n for _, n, _ in order], dtype=torch.long),
                  torch.tensor([x for _, _, x in order], dtype=torch.long), time.perf_counter() - start)
