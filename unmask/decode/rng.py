"""Counter-based random numbers: a row's draws depend on its own seed, never on the batch.

A stateful generator hands row b the b-th slice of one stream, so the same sequence decoded in a
batch of 1 or of 100 would see different numbers. Hashing (seed, step, position, salt) instead
makes every draw a pure function of that row, which is what batch-invariance needs.
"""

from __future__ import annotations

import torch

_M32 = 0xFFFFFFFF


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer finaliser (lowbias32); int64 arithmetic that never overflows."""
    x = x & _M32
    x = ((x ^ (x >> 16)) * 0x21F0AAAD) & _M32
    x = ((x ^ (x >> 15)) * 0x735A2D97) & _M32
    return x ^ (x >> 15)


def uniform(seeds: torch.Tensor, step: int, length: int, salt: int) -> torch.Tensor:
    """``(B, length)`` uniforms in [0, 1) from per-row ``seeds`` ``(B,)``, a step and a salt, on the seeds' device.

    Integer hashing is exact on every device, so a CPU and a GPU run draw the same numbers."""
    pos = torch.arange(length, dtype=torch.int64, device=seeds.device)
    s = seeds.to(torch.int64)[:, None]  # (B, 1)
    x = _mix(_mix(s & _M32) * 0x61C88647 + (s >> 32))
    x = _mix(x ^ _mix(torch.tensor(step * 0x85EBCA6B + salt * 0xC2B2AE35, dtype=torch.int64, device=seeds.device)))
    x = _mix(x + pos * 0x27D4EB2F)
    return (x >> 8).to(torch.float64).div(1 << 24).to(torch.float32)
