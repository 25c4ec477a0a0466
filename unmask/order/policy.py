"""Learned orders in the one decode loop: the ``learned`` policy (P_ψ), the posterior Q_φ used in
training rollouts, and the token rule that reveals the true tokens (learned orders by variational
inference: Fox et al. 2026, arXiv 2602.23968).

Both sample a factorised Bernoulli reveal set from max-normalised probabilities with batch-invariant
uniforms and return its log-probability (a :class:`~unmask.decode.Selection`), so a trainer can
differentiate it under :func:`unmask.decode.decode_steps`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode.policy import FixedBudget, Selection, resource
from unmask.decode.registry import Tier, register
from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError
from unmask.order.net import OrderNet

REVEAL_SALT = 0x1EA  # salt of the uniforms that sample learned reveal sets


def bernoulli_log_prob(p: torch.Tensor, reveal: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """``(B,)`` log-probability of the reveal set ``reveal`` ``(B, L)`` under independent Bernoulli(p)
    over the masked positions (a certain position, p = 1, adds log 1 = 0)."""
    tiny = torch.finfo(p.dtype).tiny
    logp = torch.where(reveal, p.clamp_min(tiny).log(), torch.log1p(-p.clamp_max(1 - 1e-7)))
    return (logp * masked).sum(1)


def sample_reveal(p: torch.Tensor, state: DecodeState, sample: bool = True) -> torch.Tensor:
    """``(B, L)`` bool: each masked position with probability p (``sample``), or those with p ≥ ½.
    A position of p = 1 is always revealed (the uniforms lie in [0, 1))."""
    chosen = state.uniform(REVEAL_SALT) < p if sample else p >= 0.5
    return chosen & state.masked


@register("learned", Tier.STABLE)
@dataclass(frozen=True)
class Learned(FixedBudget):
    """Reveal r_t ~ P_ψ(r_t | x_t), a trained order network's max-normalised scores (Fox et al. 2026, arXiv 2602.23968)."""

    steps: int = 0  # T: step budget (0 = the budget the order policy was trained for)
    sample: bool = True  # sample the reveal set; false: reveal every position with p ≥ 0.5 (deterministic)
    net: OrderNet | None = resource("order_policy")  # the order network P_ψ

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise UnmaskError(f"learned: steps must be >= 0 (0 = as trained), got {self.steps}")

    def budget(self) -> int:
        """The step budget T in use."""
        return self.steps or self.net.cfg.budget

    def select(self, state: DecodeState) -> Selection:
        if self.net is None:
            raise UnmaskError("learned needs an order policy (train one with `unmask <task> train-order`)")
        p = self.net.probs(state, self.budget())  # (B, L)
        reveal = sample_reveal(p, state, self.sample)
        return Selection(reveal, log_prob=bernoulli_log_prob(p, reveal, state.masked))


@dataclass(frozen=True)
class PosteriorOrder:
    """Q_φ(r_t | x_t, x_0) as a policy over a batch whose clean sequences are ``clean`` (training only)."""

    net: OrderNet  # the posterior network (OrderConfig.posterior = True)
    clean: torch.Tensor  # (B, L) x_0 of every row of the batch given to decode_steps
    budget: int  # T

    def probs(self, state: DecodeState) -> torch.Tensor:
        """``(B, L)`` q_n at this step for the running rows."""
        return self.net.probs(state, self.budget, self.clean[state.rows])

    def select(self, state: DecodeState) -> Selection:
        q = self.probs(state)
        reveal = sample_reveal(q, state)
        return Selection(reveal, log_prob=bernoulli_log_prob(q, reveal, state.masked))


@dataclass(frozen=True)
class TrueTokens:
    """Token rule of training rollouts: a revealed position takes its value in x_0."""

    clean: torch.Tensor  # (B, L) x_0 of every row of the batch given to decode_steps

    def choose(self, state: DecodeState) -> torch.Tensor:
        return self.clean[state.rows]
