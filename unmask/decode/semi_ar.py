"""Semi-autoregressive block decoding (LLaDA, Nie et al. 2025): blocks left to right, any policy inside.

The generated region, from position ``start``, is cut into blocks of ``block`` positions; only the
first block that still has masks is eligible, and the inner policy chooses among its positions.
A fixed-budget inner policy's ``steps`` is its budget per block: the step it sees is the step
within the block, ``step mod steps``. That is exact when every block starts fully masked and has at
least ``steps`` positions (LLaDA's setting); a block that starts with given tokens would end early
and shift every later block's budget, so it is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from unmask.decode.policy import FixedBudget, Selection, as_selection, wrapped
from unmask.decode.registry import policy_spec
from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError


@dataclass(frozen=True)
class SemiAR:
    """Wrap ``inner`` so that blocks of the generated region are decoded one after another."""

    inner: object = wrapped()  # the policy used inside each block
    block: int = 32  # positions per block
    start: int = 0  # first generated position (e.g. the prompt length)

    spec_name = "semi_ar"

    def __post_init__(self) -> None:
        if self.block < 1 or self.start < 0:
            raise UnmaskError(f"semi_ar: need block >= 1 and start >= 0, got block={self.block}, start={self.start}")
        steps = self.inner.steps if isinstance(self.inner, FixedBudget) else None
        if steps is not None and steps > self.block:
            raise UnmaskError(f"semi_ar: the per-block budget steps={steps} exceeds the block size {self.block}")

    def select(self, state: DecodeState) -> Selection:
        n = state.masked.shape[1]
        pos = torch.arange(n, device=state.masked.device)  # (L,)
        blk = (pos - self.start).clamp_min(0) // self.block  # (L,) block index per position
        first = torch.where(state.masked, blk, n).min(1).values  # (B,) first block with a mask
        eligible = state.masked & (blk[None] == first[:, None])  # (B, L)
        steps = self.inner.steps if isinstance(self.inner, FixedBudget) else None
        if steps and state.step % steps == 0:  # a block starts: it must be whole
            region = pos >= self.start  # (L,)
            started = region[None] & (blk[None] == first[:, None]) & ~state.masked  # (B, L)
            if started.any():
                raise UnmaskError("semi_ar: a block starts with given tokens in it; a per-block budget needs fully masked blocks")
        inner_state = dataclasses.replace(state, masked=eligible, step=state.step % steps if steps else state.step)
        sel = as_selection(self.inner.select(inner_state))
        return sel._replace(reveal=sel.reveal & eligible)

    def __str__(self) -> str:
        return f"semi_ar(block={self.block}, {policy_spec(self.inner)})"
