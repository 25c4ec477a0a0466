"""The one decode loop: every policy, every model, the same accounting.

Each step runs the denoiser once on the rows that still have masks (1 NFE for each of them), asks
the policy which masked positions to reveal, and fills them with the token rule. Revealed tokens
never change again. A finished row stops counting NFE while others go on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from unmask.decode.state import DecodeState
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError

TOKEN_SALT = 0x70C  # salt of the uniforms used by the token rule (policies use other salts)


class Policy(Protocol):
    """Chooses which masked positions to reveal at one step."""

    def select(self, state: DecodeState) -> torch.Tensor:
        """``(B, L)`` bool, a subset of ``state.masked`` with at least one True per row."""
        ...


@dataclass(frozen=True)
class TokenRule:
    """How a revealed position gets its value: argmax (temperature 0) or a tempered sample."""

    temperature: float = 0.0  # 0 = argmax; > 0 samples from softmax(logits / temperature)

    def __post_init__(self) -> None:
        if not self.temperature >= 0:  # also refuses NaN
            raise UnmaskError(f"temperature must be >= 0, got {self.temperature}")

    def choose(self, state: DecodeState) -> torch.Tensor:
        """``(B, L)`` a value for every masked position (other positions keep their token)."""
        if self.temperature == 0:
            return state.logits.argmax(-1)
        # Inverse-CDF sampling with one batch-invariant uniform per position, over masked rows only:
        # memory stays O(masked · V) even for a 100k-token vocabulary.
        probs = torch.softmax(state.logits[state.masked].float() / self.temperature, dim=-1)  # (K, V)
        cdf = probs.cumsum(-1)  # (K, V)
        u = state.uniform(TOKEN_SALT)[state.masked]  # (K,)
        picked = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True).squeeze(1)  # first cdf > u
        values = state.tokens.clone()
        values[state.masked] = picked.clamp_max(probs.shape[-1] - 1)
        return values


@dataclass(frozen=True)
class DecodeResult:
    """Outcome of :func:`decode`."""

    tokens: torch.Tensor  # (B, L) final ids, nothing masked
    nfe: torch.Tensor  # (B,) forward passes spent on each row
    reveal_step: torch.Tensor  # (B, L) step (0-based pass) at which each position was revealed; -1 = given


@torch.no_grad()
def decode(
    denoiser: Denoiser,
    tokens: torch.Tensor,
    policy: Policy,
    rule: TokenRule = TokenRule(),
    seeds: torch.Tensor | None = None,
) -> DecodeResult:
    """Fill every masked position of ``tokens`` ``(B, L)``.

    Args:
        denoiser: any :class:`~unmask.denoiser.Denoiser`.
        tokens: ids with ``denoiser.mask_id`` where a value is to be generated.
        policy: which masked positions to reveal at each step (see :mod:`unmask.decode`).
        rule: the value of a revealed position.
        seeds: ``(B,)`` per-row seeds for random policies and sampling; default ``arange(B)``.
            Give each sequence its own fixed seed (e.g. its index in the dataset) and results do
            not depend on how sequences are batched.
    """
    b, n = tokens.shape
    tokens = tokens.clone()
    masked = tokens == denoiser.mask_id  # (B, L)
    seeds = torch.arange(b) if seeds is None else seeds.to(torch.int64)
    nfe = torch.zeros(b, dtype=torch.long)
    reveal_step = torch.full((b, n), -1, dtype=torch.long)
    step = 0
    while True:
        rows = masked.any(1).nonzero().squeeze(1)  # (R,) rows still running
        if rows.numel() == 0:
            break
        logits, hidden = denoiser(tokens[rows])
        if denoiser.mask_id < logits.shape[-1]:
            logits = logits.clone()
            logits[..., denoiser.mask_id] = float("-inf")
        state = DecodeState(tokens[rows], masked[rows], logits, hidden, step, seeds[rows])
        reveal = policy.select(state) & state.masked  # (R, L)
        if not reveal.any(1).all():
            raise RuntimeError(f"{policy!r} revealed nothing in some row at step {step}")
        values = rule.choose(state)
        tokens[rows] = torch.where(reveal, values, state.tokens)
        masked[rows] = state.masked & ~reveal
        reveal_step[rows] = torch.where(reveal, step, reveal_step[rows])
        nfe[rows] += 1
        step += 1
    return DecodeResult(tokens, nfe, reveal_step)
