"""Masked states for the MI data and fit tests."""

from __future__ import annotations

import torch


def prompts(n: int = 12) -> torch.Tensor:
    """``(n, 16)`` random states over 4 digits, about 60 % masked (id 4)."""
    g = torch.Generator().manual_seed(0)
    t = torch.randint(4, (n, 16), generator=g)
    return torch.where(torch.rand(n, 16, generator=g) < 0.6, 4, t)
