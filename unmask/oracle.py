"""An exact denoiser from an explicit joint distribution over short sequences.

``JointDenoiser`` stores P(x_1..x_L) as a dense table of V^L probabilities and answers every
query with the exact conditional P(x_n = v | unmasked tokens). It is the ground truth the tests
check decoding (exact sampling, recovery of a deterministic joint) and MI (analytic values) against.
Only for tiny L and V: the table has V^L entries.
"""

from __future__ import annotations

import itertools

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError

_NEG = -1e9  # log-probability used for impossible values (finite, so softmax stays defined)


class JointDenoiser:
    """Exact conditionals of a joint ``probs`` of shape ``(V,) * L`` (sums to 1)."""

    def __init__(self, probs: torch.Tensor) -> None:
        if probs.dim() < 1 or len(set(probs.shape)) != 1:
            raise UnmaskError(f"joint must have shape (V,)*L, got {tuple(probs.shape)}")
        if (probs < 0).any() or abs(float(probs.sum()) - 1) > 1e-6:
            raise UnmaskError("joint must be non-negative and sum to 1")
        self.joint = probs.double()
        self.seq_len = probs.dim()
        self.vocab_size = probs.shape[0]
        self.mask_id = self.vocab_size
        self.device = torch.device("cpu")  # the table lives on the CPU
        # Every sequence of the support, as rows of ids: (V^L, L)
        self._seqs = torch.tensor(list(itertools.product(range(self.vocab_size), repeat=self.seq_len)))
        self._p = self.joint.reshape(-1)  # (V^L,) aligned with _seqs

    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        """Exact conditional log-probabilities ``(B, L, V)``; hidden = one-hot inputs ``(B, L, V+1)``."""
        b, n = tokens.shape
        if n != self.seq_len:
            raise UnmaskError(f"oracle expects length {self.seq_len}, got {n}")
        known = tokens != self.mask_id  # (B, L)
        agree = ((self._seqs[None] == tokens[:, None]) | ~known[:, None]).all(-1)  # (B, S)
        w = agree * self._p[None]  # (B, S) joint mass of the sequences consistent with the context
        onehot = torch.nn.functional.one_hot(self._seqs, self.vocab_size).double()  # (S, L, V)
        marg = torch.einsum("bs,slv->blv", w, onehot)  # (B, L, V)
        total = w.sum(1)  # (B,)
        if (total <= 0).any():
            raise UnmaskError("context has probability 0 under the joint")
        logits = (marg / total[:, None, None]).log().clamp_min(_NEG)  # float64: exact to ~1e-15
        hidden = torch.nn.functional.one_hot(tokens, self.vocab_size + 1).float()
        return DenoiserOutput(logits, hidden)

    def prob(self, seq: torch.Tensor) -> float:
        """P(x = seq) for a full sequence of ids ``(L,)``."""
        return float(self.joint[tuple(seq.tolist())])
