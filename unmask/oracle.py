"""Exact denoisers from an explicit joint distribution: ground truth for tests and benchmarks.

``SupportDenoiser`` stores a joint by its support, sequences with their probabilities, and answers
every query with the exact conditional P(x_n = v | unmasked tokens): its conditionals all agree with
one joint, which no trained model's do. ``JointDenoiser`` is the same for a dense table of V^L
probabilities (tiny L and V only); the tests check decoding (exact sampling, recovery of a
deterministic joint) and MI (analytic values) against it. ``benchmarks/mi/sudoku_consistent.py`` uses a
support of every solution of Sudoku puzzles that have several.
"""

from __future__ import annotations

import itertools

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError

_NEG = -1e9  # log-probability used for impossible values (finite, so softmax stays defined)
_CHUNK = 2**25  # most (query, support sequence, position) comparisons held at once


class SupportDenoiser:
    """Exact conditionals of the joint P(seqs[s]) = weights[s] over sequences ``seqs`` ``(S, L)`` of
    ids in ``range(vocab_size)``; the mask id is ``vocab_size``. Hidden states are the one-hot inputs.

    A context of probability 0 (a parallel decode that broke the joint) is refused, or with
    ``nearest`` answered by the conditionals of the support sequences that disagree with the fewest of
    its tokens, so such a decode can finish (and be scored as failed) at a pace like a model's.
    """

    def __init__(self, seqs: torch.Tensor, weights: torch.Tensor, vocab_size: int, nearest: bool = False) -> None:
        if seqs.dim() != 2 or seqs.shape[0] == 0 or weights.shape != seqs.shape[:1]:
            raise UnmaskError(f"need sequences (S, L) with S >= 1 and weights (S,), "
                              f"got {tuple(seqs.shape)} and {tuple(weights.shape)}")
        if vocab_size < 1 or seqs.min() < 0 or seqs.max() >= vocab_size:
            raise UnmaskError(f"sequence ids must lie in range({vocab_size})")
        if (weights < 0).any() or abs(float(weights.double().sum()) - 1) > 1e-6:
            raise UnmaskError("weights must be non-negative and sum to 1")
        keep = weights > 0  # the support proper (a sequence of weight 0 must not be anyone's nearest)
        self.seq_len = seqs.shape[1]
        self.vocab_size = vocab_size
        self.mask_id = vocab_size
        self.device = torch.device("cpu")  # the support lives on the CPU
        self.seqs = seqs[keep].long()  # (S, L)
        self.weights = weights[keep].double()  # (S,)
        self.nearest = nearest
        self._onehot = torch.nn.functional.one_hot(self.seqs, vocab_size).reshape(len(self.seqs), -1).double()  # (S, L·V)

    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        """Exact conditional log-probabilities ``(B, L, V)`` (float64); hidden = one-hot inputs ``(B, L, V+1)``."""
        b, n = tokens.shape
        if n != self.seq_len:
            raise UnmaskError(f"oracle expects length {self.seq_len}, got {n}")
        w = self.mass(tokens)  # (B, S)
        total = w.sum(1)  # (B,)
        if (total <= 0).any():
            raise UnmaskError("context has probability 0 under the joint")
        marg = (w @ self._onehot).reshape(b, n, self.vocab_size)  # (B, L, V) joint mass of each value
        logits = (marg / total[:, None, None]).log().clamp_min(_NEG)  # exact to ~1e-15
        hidden = torch.nn.functional.one_hot(tokens, self.vocab_size + 1).float()
        return DenoiserOutput(logits, hidden)

    def mass(self, tokens: torch.Tensor, nearest: bool | None = None) -> torch.Tensor:
        """``(B, S)`` the joint mass of each support sequence that agrees with each context's unmasked tokens
        ``(B, L)`` (with ``nearest``, by default the denoiser's own: that disagrees with the fewest of them)."""
        nearest = self.nearest if nearest is None else nearest
        step = max(1, _CHUNK // (len(self.seqs) * self.seq_len))  # contexts per chunk
        parts = [torch.zeros(0, len(self.seqs), dtype=torch.float64)]
        for lo in range(0, len(tokens), step):
            t = tokens[lo : lo + step]
            known = t != self.mask_id  # (b, L)
            wrong = ((self.seqs[None] != t[:, None]) & known[:, None]).sum(-1)  # (b, S) disagreeing tokens
            best = wrong.min(1, keepdim=True).values if nearest else torch.zeros_like(wrong[:, :1])  # (b, 1)
            parts.append((wrong == best) * self.weights[None])
        return torch.cat(parts)


class JointDenoiser(SupportDenoiser):
    """Exact conditionals of a joint ``probs`` of shape ``(V,) * L`` (sums to 1)."""

    def __init__(self, probs: torch.Tensor) -> None:
        if probs.dim() < 1 or len(set(probs.shape)) != 1:
            raise UnmaskError(f"joint must have shape (V,)*L, got {tuple(probs.shape)}")
        if (probs < 0).any() or abs(float(probs.sum()) - 1) > 1e-6:
            raise UnmaskError("joint must be non-negative and sum to 1")
        self.joint = probs.double()
        vocab, length = probs.shape[0], probs.dim()
        seqs = torch.tensor(list(itertools.product(range(vocab), repeat=length)))  # (V^L, L), aligned with the table
        p = self.joint.reshape(-1)  # (V^L,)
        super().__init__(seqs, p, vocab)  # (its zeros dropped there)

    def prob(self, seq: torch.Tensor) -> float:
        """P(x = seq) for a full sequence of ids ``(L,)``."""
        return float(self.joint[tuple(seq.tolist())])
