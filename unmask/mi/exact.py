"""Exact pairwise conditional mutual information from a denoiser's own conditionals.

Sharma, Wang, Li 2026 (pairwise MI in masked sequence models, arXiv 2605.20187), "ground truth":
one base pass gives P(X_j | C) and H(X_j | C); for every masked i and value v, fixing X_i = v and
running again gives P(X_j | X_i = v, C); then

    I(X_i; X_j | C) = H(X_j | C) − Σ_v P(X_i = v | C) · H(X_j | X_i = v, C)        (row i, column j)

— 1 + N·|V| passes for N masked positions. Two honest savings: only a chosen subset of rows i, and
skipping values with P(X_i = v | C) < ε. The skipped mass m_i is filled in with the kept values'
average conditional entropy; since every conditional entropy lies in [0, log V], the error of any
entry in row i is at most m_i · log V (returned as ``bound``). :class:`RowProbes` computes rows on
demand, each once: the oracle decoders (:mod:`unmask.mi.policies`) ask only for the rows they read.

A model's conditionals are not one consistent joint, so I[i, j] ≠ I[j, i] in general and entries
can be negative (38 % of entries on Sudoku states, down to −1.89 nats: benchmarks/results/
sudoku_mi_stats.md). ``raw`` keeps them as computed; ``symmetric`` averages the pair.

The same probes also define one real joint per row: P(X_i = v | C) · P(X_j | X_i = v, C), the pair
as the model samples it when it reveals i first, then j. ``joint`` is its MI,

    J(X_i; X_j | C) = H(Σ_v P(X_i = v | C) P(X_j | X_i = v, C)) − Σ_v P(X_i = v | C) · H(X_j | X_i = v, C),

the formula above with H(X_j | C) from the probes' own mixture instead of the base pass. It costs no
extra pass, equals ``raw`` when the conditionals are consistent, and is a true MI whatever the model:
0 ≤ J ≤ H(X_i | C), so a row of a position with H(X_i | C) < δ may be skipped at an error below δ.
With ε-truncation the kept values' joint is used (the truncated joint conditioned on X_i being kept);
its error is at most h(m) + m·log V for a skipped mass m (h the binary entropy).

The same probes also give ``influence``, the dependency DEMASK bounds (Ringel et al. 2026, arXiv
2604.02560): how far revealing X_i moves the prediction at j, in total variation,

    D(i → j | C) = Σ_v P(X_i = v | C) · ½ Σ_w |P(X_j = w | X_i = v, C) − P(X_j = w | C)|,

in [0, 1], laid out as ``raw`` (row i revealed, column j moved; its diagonal is 1 − Σ_v P(X_i = v)²,
as ``raw``'s is H(X_i | C)). With ε-truncation it is the kept values' average, off by at most the
skipped mass m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from unmask.decode.scores import entropy
from unmask.denoiser import Denoiser, never_mask


@dataclass(frozen=True)
class ExactMI:
    """Exact MI of a batch of partly masked states."""

    raw: torch.Tensor  # (B, L, L) float64; row i = conditioning position; 0 off computed rows/masked columns
    rows: torch.Tensor  # (B, L) bool, rows that were computed
    entropy: torch.Tensor  # (B, L) float64 H(X_j | C), 0 at unmasked positions
    bound: torch.Tensor  # (B, L) float64 error bound of each computed row (0 with ε = 0)
    passes: torch.Tensor  # (B,) forward passes spent on each state, the base pass included
    joint: torch.Tensor | None = None  # (B, L, L) float64 MI of each row's probe joint (see the module doc), laid out as raw
    influence: torch.Tensor | None = None  # (B, L, L) float64 D(i → j): how far revealing i moves j (total variation), as raw

    @property
    def symmetric(self) -> torch.Tensor:
        """``(B, L, L)`` ½(I + Iᵀ) where both rows were computed, else the computed entry."""
        return symmetrise(self.raw, self.rows)

    @property
    def symmetric_joint(self) -> torch.Tensor:
        """``(B, L, L)`` the same for ``joint``, the MI of each row's probe joint."""
        return symmetrise(self.joint, self.rows)

    @property
    def symmetric_influence(self) -> torch.Tensor:
        """``(B, L, L)`` the same for ``influence``, ½(D(i → j) + D(j → i))."""
        return symmetrise(self.influence, self.rows)

    def asymmetry(self) -> float:
        """Mean |I_ij − I_ji| / (|I_ij| + |I_ji|) over off-diagonal pairs with both rows computed
        and some MI (a diagnostic of how far the model is from one consistent joint)."""
        both = self.rows[:, :, None] & self.rows[:, None, :]
        both &= ~torch.eye(self.raw.shape[1], dtype=torch.bool, device=self.raw.device)
        a, b = self.raw[both], self.raw.transpose(1, 2)[both]
        scale = a.abs() + b.abs()
        keep = scale > 1e-6
        return float(((a - b).abs()[keep] / scale[keep]).mean()) if keep.any() else 0.0


def symmetrise(raw: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``(B, L, L)`` ½(I_ij + I_ji) where rows i and j were both computed, else whichever was."""
    both = rows[:, :, None] & rows[:, None, :]
    t = raw.transpose(1, 2)
    return torch.where(both, 0.5 * (raw + t), raw + t * ~rows[:, :, None])


ROW_MEMORY = 1 << 30  # bytes the per-row sums of one group of probed rows may take (a large vocabulary splits rows)


@torch.no_grad()
def exact_mi(
    denoiser: Denoiser,
    tokens: torch.Tensor,
    rows: torch.Tensor | None = None,
    eps: float = 0.0,
    batch_size: int = 1024,
) -> ExactMI:
    """Exact conditional MI matrix of each state in ``tokens`` ``(B, L)``.

    Args:
        rows: ``(B, L)`` bool, the masked positions i whose rows to compute (default: all masked).
        eps: skip values v with P(X_i = v | C) < eps (error bound reported per row).
        batch_size: probe sequences per forward pass.
    """
    probes = RowProbes(denoiser, tokens, eps, batch_size)
    return probes.probe(probes.masked if rows is None else rows)


class RowProbes:
    """The rows of :func:`exact_mi` probed on demand: one base pass when made, then :meth:`probe` runs
    the probes of the rows asked for that are not yet computed (each row once, whatever else is
    probed with it). An oracle decoder asks for a row only when its scan needs that row's charge.
    The arguments are :func:`exact_mi`'s; the numbers are its numbers, however the rows are split.
    (Results share their unchanged tensors with earlier ones: read them, never write into them.)"""

    @torch.no_grad()
    def __init__(self, denoiser: Denoiser, tokens: torch.Tensor, eps: float = 0.0, batch_size: int = 1024) -> None:
        self.denoiser, self.tokens, self.eps, self.batch_size = denoiser, tokens, eps, batch_size
        b, n = tokens.shape
        self.masked = tokens == denoiser.mask_id  # (B, L)
        self.p = _log_probs(denoiser, tokens).exp()  # (B, L, V) P(X_j | C)
        self.h = entropy(self.p) * self.masked  # (B, L)
        empty = torch.zeros(b, n, n, dtype=torch.float64, device=tokens.device)  # (B, L, L)
        self.result = ExactMI(empty, torch.zeros_like(self.masked), self.h, torch.zeros_like(self.h),
                              torch.ones(b, dtype=torch.long, device=tokens.device), empty, empty)  # the base pass only

    @torch.no_grad()
    def probe(self, rows: torch.Tensor) -> ExactMI:
        """Compute the masked rows of ``rows`` ``(B, L)`` bool not computed yet; the result so far (a
        new :class:`ExactMI`: an earlier one is never changed)."""
        new = rows & self.masked & ~self.result.rows  # (B, L)
        bs, ks = new.nonzero(as_tuple=True)  # (R,) each
        n, v = self.tokens.shape[1], self.p.shape[-1]
        group = max(1, ROW_MEMORY // (3 * n * v * 8))  # rows whose three (R, L, V)-sized float64 sums fit the cap
        for k in range(0, len(bs), group):  # (one group for a small model; a large vocabulary takes several)
            self.result = self._add(bs[k : k + group], ks[k : k + group])
        return self.result

    def _add(self, bs: torch.Tensor, ks: torch.Tensor) -> ExactMI:
        """The result with the rows (state ``bs``, position ``ks``) ``(R,)`` each added."""
        dev, tokens, masked, v = self.tokens.device, self.tokens, self.masked, self.p.shape[-1]
        n = tokens.shape[1]
        p = self.p[bs, ks]  # (R, V) P(X_i = v | C)
        ri, vi = probed_values(p, self.eps).nonzero(as_tuple=True)  # (K,) each: row, value of every probe
        bi, ii = bs[ri], ks[ri]  # (K,) its state and position
        probe_tokens = tokens[bi].clone()
        probe_tokens[torch.arange(len(bi), device=dev), ii] = vi
        w = p[ri, vi]  # (K,) P(X_i = v | C)
        r = len(bs)
        expected = torch.zeros(r, n, dtype=torch.float64, device=dev)  # (R, L) Σ_v P(X_i = v) H(X_j | X_i = v, C)
        mixture = torch.zeros(r, n, v, dtype=torch.float64, device=dev)  # (R, L, V) Σ_v P(X_i = v) P(X_j | X_i = v, C)
        moved = torch.zeros(r, n, dtype=torch.float64, device=dev)  # (R, L) Σ_v P(X_i = v) TV(P(X_j | X_i = v, C), P(X_j | C))
        for k in range(0, len(bi), self.batch_size):  # one chunk of probes at a time: (chunk, L, V) in memory, never (K, L, V)
            at = slice(k, k + self.batch_size)
            p_cond = _log_probs(self.denoiser, probe_tokens[at]).exp()  # (k, L, V) P(X_j | X_i = v, C)
            p_cond[torch.arange(len(p_cond), device=dev), ii[at]] = F.one_hot(vi[at], v).to(p_cond.dtype)  # X_i is now known
            h_cond = entropy(p_cond) * masked[bi[at]]  # (k, L) given positions have no uncertainty
            expected.index_add_(0, ri[at], w[at, None] * h_cond)
            mixture.index_add_(0, ri[at], w[at, None, None] * p_cond)
            tv = 0.5 * (p_cond - self.p[bi[at]]).abs().sum(-1) * masked[bi[at]]  # (k, L) how far X_i = v moves each X_j
            moved.index_add_(0, ri[at], w[at, None] * tv)
        kept = torch.zeros(r, dtype=torch.float64, device=dev).index_add_(0, ri, w)[:, None]  # (R, 1)
        cols = masked[bs]  # (R, L) masked columns
        # Fill in the skipped mass with the kept values' average conditional entropy.
        expected = expected / kept.clamp_min(1e-300)
        raw = (self.h[bs] - expected) * cols
        mixture = mixture / kept.clamp_min(1e-300)[..., None]  # the probe joint's X_j marginal (kept values)
        joint = ((entropy(mixture) - expected) * cols).clamp_min(0)  # a true MI: ≥ 0 up to rounding
        influence = moved / kept.clamp_min(1e-300) * cols  # (kept values, as the others)
        old = self.result
        return ExactMI(
            raw=old.raw.index_put((bs, ks), raw),
            rows=old.rows.index_put((bs, ks), torch.ones_like(bs, dtype=torch.bool)),
            entropy=self.h,
            bound=old.bound.index_put((bs, ks), (1 - kept[:, 0]).clamp_min(0) * math.log(v)),
            passes=old.passes + torch.bincount(bi, minlength=len(old.passes)),
            joint=old.joint.index_put((bs, ks), joint),
            influence=old.influence.index_put((bs, ks), influence),
        )


def probed_values(p: torch.Tensor, eps: float) -> torch.Tensor:
    """``(…, V)`` bool: the values of a row's P(X_i | C) ``(…, V)`` that get a probe pass. Values of
    probability exactly 0 contribute nothing and are always skipped; the most likely value is always
    probed, so no row is left without a conditional."""
    top = torch.zeros_like(p, dtype=torch.bool).scatter_(-1, p.argmax(-1, keepdim=True), True)
    return ((p >= eps) | top) & (p > 0)


def _log_probs(denoiser: Denoiser, tokens: torch.Tensor) -> torch.Tensor:
    logits = never_mask(denoiser(tokens)[0].to(tokens.device).double(), denoiser.mask_id)
    return torch.log_softmax(logits, -1)
