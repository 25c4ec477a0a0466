"""Adaptive policies: the number revealed per step depends on the model's confidence."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode.registry import Tier, register
from unmask.decode.scores import CONFIDENCE, check_metric, entropy, top_prob
from unmask.decode.state import DecodeState, take_top
from unmask.errors import UnmaskError


@register("eb", Tier.STABLE)
@dataclass(frozen=True)
class EB:
    """EB-Sampler (Ben-Hamu et al. 2025): sort by confidence; reveal the largest prefix U with
    Σ_U H − max_U H ≤ γ. The least confident token of U enters free, so U is never empty."""

    gamma: float = 0.1  # γ: entropy budget in nats
    metric: str = "entropy"  # order of the candidates: entropy | top_prob | margin

    def __post_init__(self) -> None:
        check_metric(self.metric)
        if self.gamma < 0:
            raise UnmaskError(f"eb: gamma must be >= 0, got {self.gamma}")

    def select(self, state: DecodeState) -> torch.Tensor:
        score = CONFIDENCE[self.metric](state.probs).masked_fill(~state.masked, float("-inf"))
        order = score.argsort(dim=1, descending=True, stable=True)  # (B, L)
        h = entropy(state.probs).masked_fill(~state.masked, 0.0).gather(1, order)  # (B, L) sorted
        # With entropy order, max_U H is the last of the prefix, so prefix k+1 costs sum(h[:k]).
        # For other orders, the running max is subtracted explicitly.
        cost = h.cumsum(1) - h.cummax(1).values  # (B, L): Σ_{≤k} H − max_{≤k} H
        count = ((cost <= self.gamma) & state.masked.gather(1, order)).sum(1).clamp_min(1)
        return take_top(score, state.masked, count)


@register("threshold", Tier.STABLE)
@dataclass(frozen=True)
class Threshold:
    """Fast-dLLM (Wu et al. 2025): reveal every position with top-prob ≥ τ, else the single best."""

    tau: float = 0.9  # τ: confidence threshold on the top probability

    def __post_init__(self) -> None:
        if not 0 < self.tau <= 1:
            raise UnmaskError(f"threshold: tau must be in (0, 1], got {self.tau}")

    def select(self, state: DecodeState) -> torch.Tensor:
        p = top_prob(state.probs)  # (B, L)
        sure = state.masked & (p >= self.tau)
        best = take_top(p, state.masked, torch.ones_like(state.remaining))
        return torch.where(sure.any(1, keepdim=True), sure, best)
