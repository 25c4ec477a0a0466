"""Confidence metrics of a position's predictive distribution, higher = more confident.

Entropy is negated so that every metric sorts the same way (Kim et al. 2025 for top-prob and
margin; the EB-Sampler of Ben-Hamu et al. 2025 for entropy as an error proxy).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from unmask.errors import UnmaskError


def entropy(probs: torch.Tensor) -> torch.Tensor:
    """``(..., V)`` → ``(...)`` Shannon entropy in nats."""
    return -(probs * probs.clamp_min(1e-30).log()).sum(-1)


def top_prob(probs: torch.Tensor) -> torch.Tensor:
    """``(..., V)`` → ``(...)`` probability of the most likely token."""
    return probs.max(-1).values


def margin(probs: torch.Tensor) -> torch.Tensor:
    """``(..., V)`` → ``(...)`` gap between the two most likely tokens' probabilities."""
    top2 = probs.topk(2, dim=-1).values
    return top2[..., 0] - top2[..., 1]


CONFIDENCE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "entropy": lambda p: -entropy(p),
    "top_prob": top_prob,
    "margin": margin,
}


def check_metric(name: str) -> str:
    """Return ``name`` if it is a known metric, else raise UnmaskError listing them."""
    if name not in CONFIDENCE:
        raise UnmaskError(f"unknown confidence metric {name!r}; choose one of {', '.join(CONFIDENCE)}")
    return name
