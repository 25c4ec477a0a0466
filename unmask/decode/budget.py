"""Fixed step budget policies: after S passes nothing is masked.

At step s each reveals ⌈remaining / (S − s)⌉ positions, chosen uniformly at random (IID order, MDLM
ancestral sampling, Sahoo et al. 2024) or by top-prob / margin (Kim et al. 2025, "Train for the
worst, plan for the best").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode.policy import FixedBudget
from unmask.decode.registry import Tier, register
from unmask.decode.scores import margin, top_prob
from unmask.decode.state import DecodeState, budget_count, take_top

ORDER_SALT = 0x0D3  # salt of the uniforms that draw the random order


@dataclass(frozen=True)
class _Ranked(FixedBudget):
    """⌈remaining / steps left⌉ positions per step, the highest by :meth:`score`."""

    def score(self, state: DecodeState) -> torch.Tensor:  # (B, L), higher goes first
        raise NotImplementedError

    def select(self, state: DecodeState) -> torch.Tensor:
        return take_top(self.score(state), state.masked, budget_count(state, self.steps))


@register("random", Tier.STABLE)
@dataclass(frozen=True)
class Random(_Ranked):
    """IID order: uniformly random positions, ⌈remaining / steps left⌉ per step."""

    def score(self, state: DecodeState) -> torch.Tensor:
        return state.uniform(ORDER_SALT)


@register("top_prob", Tier.STABLE)
@dataclass(frozen=True)
class TopProb(_Ranked):
    """Top-Prob: the positions with the highest max probability, ⌈remaining / steps left⌉ per step."""

    def score(self, state: DecodeState) -> torch.Tensor:
        return top_prob(state.probs)


@register("margin", Tier.STABLE)
@dataclass(frozen=True)
class Margin(_Ranked):
    """Top-Prob-Margin: the largest gap between the two best tokens, ⌈remaining / steps left⌉ per step."""

    def score(self, state: DecodeState) -> torch.Tensor:
        return margin(state.probs)
