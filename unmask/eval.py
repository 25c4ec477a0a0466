"""Batched evaluation helpers shared by every task: decode a whole dataset, time it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from unmask.decode import DecodeResult, Policy, TokenRule, decode
from unmask.denoiser import Denoiser


@dataclass(frozen=True)
class Run:
    """A decoded dataset and how long it took."""

    result: DecodeResult  # decoded tokens, NFE and reveal steps for every sequence
    seconds: float  # wall time of the decoding


def decode_all(
    denoiser: Denoiser,
    tokens: torch.Tensor,
    policy: Policy,
    rule: TokenRule = TokenRule(),
    batch_size: int = 250,
    seed: int = 0,
    progress: bool = False,
) -> Run:
    """Decode ``tokens`` ``(N, L)`` in batches; sequence k always gets seed ``seed + k``,
    so results do not depend on ``batch_size``."""
    parts = []
    start = time.perf_counter()
    for lo in tqdm(range(0, len(tokens), batch_size), disable=not progress, desc="decode", unit="batch"):
        chunk = tokens[lo : lo + batch_size]
        parts.append(decode(denoiser, chunk, policy, rule, seeds=torch.arange(lo, lo + len(chunk)) + seed))
    seconds = time.perf_counter() - start
    result = DecodeResult(*(torch.cat([getattr(p, f) for p in parts]) for f in ("tokens", "nfe", "reveal_step")))
    return Run(result, seconds)


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table of ``rows`` restricted to ``columns`` (floats to 3 significant places)."""

    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
        return "" if v is None else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as a results file should record it: relative to the working directory when inside it,
    so that committed results carry no machine-specific prefix."""
    full = Path(path).resolve()
    return str(full.relative_to(Path.cwd())) if full.is_relative_to(Path.cwd()) else str(path)
