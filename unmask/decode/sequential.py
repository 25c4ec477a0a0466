"""Sequential decoding: one position per pass, the most confident first (the accurate, slow baseline)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode.registry import Tier, register
from unmask.decode.scores import CONFIDENCE, check_metric
from unmask.decode.state import DecodeState, take_top
from unmask.errors import UnmaskError


@register("sequential", Tier.STABLE)
@dataclass(frozen=True)
class Sequential:
    """Reveal the single most confident masked position per step."""

    metric: str = "entropy"  # confidence metric: entropy | top_prob | margin

    def __post_init__(self) -> None:
        check_metric(self.metric)

    def select(self, state: DecodeState) -> torch.Tensor:
        score = CONFIDENCE[self.metric](state.probs)  # (B, L)
        return take_top(score, state.masked, torch.ones_like(state.remaining))


@register("topk", Tier.STABLE)
@dataclass(frozen=True)
class TopK:
    """Reveal the k most confident masked positions per step (Mask-Predict, Ghazvininejad et al. 2019)."""

    k: int = 7  # positions per step (all that are left if fewer)
    metric: str = "entropy"  # confidence metric: entropy | top_prob | margin

    def __post_init__(self) -> None:
        check_metric(self.metric)
        if self.k < 1:
            raise UnmaskError(f"topk: k must be >= 1, got {self.k}")

    def select(self, state: DecodeState) -> torch.Tensor:
        score = CONFIDENCE[self.metric](state.probs)  # (B, L)
        return take_top(score, state.masked, torch.full_like(state.remaining, self.k))
