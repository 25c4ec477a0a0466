"""What a policy sees at one decoding step, plus the shared helpers policies are built from."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from unmask.decode.rng import uniform


@dataclass(frozen=True)
class DecodeState:
    """One step of decoding for the rows still running (every tensor is over those rows)."""

    tokens: torch.Tensor  # (B, L) current ids, mask_id where still masked
    masked: torch.Tensor  # (B, L) bool, True where still masked
    logits: torch.Tensor  # (B, L, V) this step's denoiser logits (mask token already excluded)
    hidden: torch.Tensor  # (B, L, D) this step's denoiser hidden states
    step: int  # forward passes done before this one (same for every running row)
    seeds: torch.Tensor  # (B,) int64 per-row random seeds (batch-invariant randomness)
    rows: torch.Tensor | None = None  # (B,) index of each running row in the batch given to decode

    @cached_property
    def log_probs(self) -> torch.Tensor:
        """``(B, L, V)`` float32 log-probabilities."""
        return torch.log_softmax(self.logits.float(), dim=-1)

    @cached_property
    def probs(self) -> torch.Tensor:
        """``(B, L, V)`` float32 probabilities."""
        return self.log_probs.exp()

    @cached_property
    def remaining(self) -> torch.Tensor:
        """``(B,)`` number of masked positions per row."""
        return self.masked.sum(1)

    def uniform(self, salt: int) -> torch.Tensor:
        """``(B, L)`` uniforms in [0, 1) that depend only on (row seed, step, position, salt)."""
        return uniform(self.seeds, self.step, self.masked.shape[1], salt)


def take_top(score: torch.Tensor, masked: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """``(B, L)`` bool: the ``k[b]`` masked positions of highest ``score`` in each row.

    Ties go to the lower position index (stable sort), so the choice is deterministic.
    """
    s = score.masked_fill(~masked, float("-inf"))
    order = s.argsort(dim=1, descending=True, stable=True)  # (B, L)
    rank = torch.empty_like(order).scatter_(1, order, torch.arange(s.shape[1], device=s.device).expand_as(order))
    return masked & (rank < k[:, None])


def budget_count(state: DecodeState, steps: int) -> torch.Tensor:
    """``(B,)`` how many to reveal so that a fixed budget of ``steps`` passes ends on time.

    ⌈remaining / (steps − step)⌉, everything once the budget is spent (MDLM ancestral sampling).
    """
    left = max(steps - state.step, 1)
    return torch.div(state.remaining + left - 1, left, rounding_mode="floor")
