"""The one interface every model meets: token ids in, logits and hidden states out.

Our own transformer (:mod:`unmask.model`), a Hugging Face masked LM (:mod:`unmask.adapters.hf`)
and the exact oracle used in tests (:mod:`unmask.oracle`) all implement :class:`Denoiser`, so
the decode loop, MI heads and order policies never care which one they run.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

import torch


class DenoiserOutput(NamedTuple):
    """What one forward pass returns."""

    logits: torch.Tensor  # (B, L, V) unnormalised scores over the V predictable tokens
    hidden: torch.Tensor  # (B, L, D) final hidden states, reused by MI heads and order policies


@runtime_checkable
class Denoiser(Protocol):
    """A masked-diffusion denoiser.

    Attributes:
        vocab_size: V, the number of tokens the model predicts (last dim of ``logits``).
        mask_id: the input id of a masked position. It may lie outside ``range(V)``; if inside,
            decoding never chooses it.
        device: where the model runs; the decode loop keeps its tensors there, and the outputs of
            ``__call__`` should be there too (no per-step copies).
    """

    vocab_size: int
    mask_id: int
    device: torch.device

    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        """One forward pass on token ids ``(B, L)``."""
        ...


def never_mask(logits: torch.Tensor, mask_id: int) -> torch.Tensor:
    """``logits`` ``(…, V)`` with the mask id at −∞ when it is one of the V predictable tokens (a copy
    then), so no decode chooses or samples it; unchanged otherwise."""
    if mask_id >= logits.shape[-1]:
        return logits
    logits = logits.clone()
    logits[..., mask_id] = float("-inf")
    return logits
