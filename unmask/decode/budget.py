"""Fixed step budget policies: after S passes nothing is masked.

At step s each reveals ⌈remaining / (S − s)⌉ positions, chosen uniformly at random (IID order, MDLM
ancestral sampling, Sahoo et al. 2024) or by top-prob / margin (Kim et al. 2025, "Train for the
worst, plan for the best").
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode.registry import register
from unmask.decode.scores import margin, top_prob
from unmask.decode.state import DecodeState, budget_count, take_top
from unmask.errors import UnmaskError

ORDER_SALT = 0x0D3  # salt of the uniforms that draw the random order


@dataclass(frozen=True)
class _Budget:
    steps: int = 10  # S: forward passes allowed per sequence

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise UnmaskError(f"{self.spec_name}: steps must be >= 1, got {self.steps}")

    def score(self, state: DecodeState) -> torch.Tensor:  # (B, L), higher goes first
        raise NotImplementedError

    def select(self, state: DecodeState) -> torch.Tensor:
        return take_top(self.score(state), state.masked, budget_count(state, self.steps))


@register("random")
@dataclass(frozen=True)
class Random(_Budget):
    """IID order: uniformly random positions, ⌈remaining / steps left⌉ per step."""

    def score(self, state: DecodeState) -> torch.Tensor:
        return state.uniform(ORDER_SALT)


@register("top_prob")
@dataclass(frozen=True)
class TopProb(_Budget):
    """Top-Prob: the positions with the highest max probability, ⌈remaining / steps left⌉ per step."""

    def score(self, state: DecodeState) -> torch.Tensor:
        return top_prob(state.probs)


@register("margin")
@dataclass(frozen=True)
class Margin(_Budget):
    """Top-Prob-Margin: the largest gap between the two best tokens, ⌈remaining / steps left⌉ per step."""

    def score(self, state: DecodeState) -> torch.Tensor:
        return margin(state.probs)
