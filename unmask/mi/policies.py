"""MI-guided parallel decoding (Shah et al., neural estimation of pairwise MI in masked sequence
models — seed 000): reveal many tokens at once, but not dependent ones.

Sort masked positions by entropy; always take the lowest; then scan the rest in order and take
position i if  H_i + λ · Σ_{j already taken} Î_ij  fits the remaining budget γ, charging it
against the budget; positions that do not fit wait for a later step. Every taken token pays its
own entropy — unlike EB-Sampler's Σ H − max H, which lets the least confident token in for free.
With λ = 0 this is a pure entropy budget (a strong baseline in its own right).

``mi`` uses a learned estimator head on the denoiser's hidden states (cost: one small head per
step); ``mi_exact`` probes the model itself (:func:`unmask.mi.exact_mi`) and returns every pass it
runs (its own base pass included) as ``extra_passes``, kept apart from model NFE — an oracle for analysis.

``influence_exact`` is the ``mi_exact`` rule charging DEMASK's exact total-variation influence
instead of MI (an oracle too).

``demask`` is the rule of DEMASK (arXiv 2604.02560), with our MI head as its dependency head: in
entropy order, take position i while the total pairwise dependency of the taken set stays within δ
— a bound on dependency alone, with no charge for a token's own uncertainty (``max_entropy``
optionally keeps very uncertain positions out).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode.policy import Selection, resource
from unmask.decode.registry import register
from unmask.decode.scores import entropy
from unmask.decode.state import DecodeState, take_top
from unmask.errors import UnmaskError
from unmask.mi.exact import exact_mi


def mi_greedy(h: torch.Tensor, masked: torch.Tensor, mi: torch.Tensor | None, gamma: float, lam: float) -> torch.Tensor:
    """``(B, L)`` bool reveal set of the greedy entropy + λ·MI budget rule.

    Args:
        h: ``(B, L)`` entropies; masked: ``(B, L)`` bool; mi: ``(B, L, L)`` pairwise MI (unused if λ = 0).
    """
    if lam == 0:  # costs no longer depend on what was taken: sorted by entropy, the rule is a prefix
        h_sorted = h.masked_fill(~masked, float("inf")).sort(dim=1, stable=True).values  # (B, L)
        count = (h_sorted.cumsum(1) <= gamma).sum(1).clamp_min(1)  # (B,)
        return take_top(-h, masked, count)
    b = h.shape[0]
    rows = torch.arange(b, device=h.device)
    order = h.masked_fill(~masked, float("inf")).argsort(dim=1, stable=True)  # (B, L) most certain first
    taken = torch.zeros_like(masked)
    budget = torch.full((b,), float(gamma), dtype=h.dtype, device=h.device)
    for k in range(int(masked.sum(1).max())):  # vectorised over the batch; ≤ L iterations
        i = order[:, k]  # (B,) k-th candidate of each row
        cost = h[rows, i]
        if lam != 0:
            cost = cost + lam * (mi[rows, i] * taken).sum(1)
        take = masked[rows, i] & ((k == 0) | (cost <= budget))
        taken[rows, i] = take
        budget = budget - cost * take
    return taken


def dependency_greedy(h: torch.Tensor, masked: torch.Tensor, dep: torch.Tensor, delta: float,
                      max_entropy: float = float("inf")) -> torch.Tensor:
    """``(B, L)`` bool reveal set: in entropy order, take i while Σ_{pairs in the taken set} dep ≤ δ.

    Args:
        h: ``(B, L)`` entropies (the order); masked: ``(B, L)`` bool; dep: ``(B, L, L)`` pairwise dependency ≥ 0.
        max_entropy: positions above it are never candidates (the most certain one is always taken).
    """
    b = h.shape[0]
    rows = torch.arange(b, device=h.device)
    order = h.masked_fill(~masked, float("inf")).argsort(dim=1, stable=True)  # (B, L) most certain first
    taken = torch.zeros_like(masked)
    total = torch.zeros(b, dtype=dep.dtype, device=h.device)  # dependency within the taken set
    for k in range(int(masked.sum(1).max())):  # vectorised over the batch; ≤ L iterations
        i = order[:, k]
        added = (dep[rows, i] * taken).sum(1)  # (B,) dependency of i with what is taken
        take = masked[rows, i] & ((k == 0) | ((total + added <= delta) & (h[rows, i] <= max_entropy)))
        taken[rows, i] = take
        total = total + added * take
    return taken


def _check(gamma: float, lam: float) -> None:
    if gamma < 0 or lam < 0:
        raise UnmaskError(f"mi: gamma and lam must be >= 0, got gamma={gamma}, lam={lam}")


@register("mi")
@dataclass(frozen=True)
class MIGuided:
    """Entropy order; take i while H_i + λ·Σ_taken Î_ij fits the remaining γ (Î: the learned MI head)."""

    # Defaults: the recommended setting on the shipped Sudoku model, chosen on val-kaggle (README).
    gamma: float = 0.03  # γ: budget in nats per step (entropy + λ·MI of each taken token)
    lam: float = 0.0  # λ: weight of the pairwise MI with tokens already taken this step
    head: object = resource("mi_head", needed=lambda p: p.lam != 0)  # MI head: hidden (B, L, D) → (B, L, L)

    def __post_init__(self) -> None:
        _check(self.gamma, self.lam)

    def select(self, state: DecodeState) -> torch.Tensor:
        h = entropy(state.probs)  # (B, L)
        mi = None
        if self.lam != 0:
            if self.head is None:
                raise UnmaskError("mi: lam > 0 needs an MI estimator head (train one with `unmask mi train`)")
            with torch.no_grad():
                mi = self.head(state.hidden.float())  # (B, L, L)
        return mi_greedy(h, state.masked, mi, self.gamma, self.lam)


@register("mi_exact")
@dataclass(frozen=True)
class MIExact:
    """The same rule with exact MI from probing the denoiser (1 + N·|V| passes, returned apart): an oracle."""

    gamma: float = 0.1  # γ: budget in nats per step
    lam: float = 2.0  # λ: weight of the pairwise MI with tokens already taken
    eps: float = 1e-3  # skip probe values with P < eps (see unmask.mi.exact)
    joint: bool = False  # charge the MI of each row's probe joint (a true MI, ≥ 0) instead of the paper's I
    denoiser: object = resource("denoiser")  # the model to probe

    def __post_init__(self) -> None:
        _check(self.gamma, self.lam)

    def select(self, state: DecodeState) -> Selection:
        # A model's conditionals can give negative I; a negative charge would refill the budget.
        return exact_budget(self, state, lambda res: (res.symmetric_joint if self.joint else res.symmetric).clamp_min(0))


@register("influence_exact")
@dataclass(frozen=True)
class InfluenceExact:
    """The same rule charging DEMASK's exact influence instead of MI: take i while H_i + λ·Σ_taken D_ij
    fits γ, D_ij = ½(D(i → j) + D(j → i)) the total variation by which revealing one moves the other
    (:mod:`unmask.mi.exact`; probe passes returned apart): an oracle."""

    gamma: float = 0.1  # γ: budget in nats per step (entropy + λ·influence of each taken token)
    lam: float = 2.0  # λ: weight of the pairwise influence (in [0, 1]) with tokens already taken
    eps: float = 1e-3  # skip probe values with P < eps (see unmask.mi.exact)
    denoiser: object = resource("denoiser")  # the model to probe

    def __post_init__(self) -> None:
        _check(self.gamma, self.lam)

    def select(self, state: DecodeState) -> Selection:
        return exact_budget(self, state, lambda res: res.symmetric_influence)


def exact_budget(policy, state: DecodeState, charge) -> Selection:
    """The greedy budget rule with the pairwise ``charge(ExactMI)`` ``(B, L, L)`` of ``policy.denoiser``'s
    exact probes (``policy``'s γ, λ and ε); every pass the probes run is returned as extra passes."""
    if policy.denoiser is None:
        raise UnmaskError(f"{policy.spec_name} needs the denoiser to probe")
    res = exact_mi(policy.denoiser, state.tokens, eps=policy.eps)
    reveal = mi_greedy(entropy(state.probs), state.masked, charge(res).float(), policy.gamma, policy.lam)
    return Selection(reveal, extra_passes=res.passes)  # its own base pass included: it is a real pass


@register("demask")
@dataclass(frozen=True)
class DependencyBound:
    """DEMASK's rule (arXiv 2604.02560): entropy order; take i while the taken set's total pairwise
    dependency (the MI head's Î) stays within δ."""

    delta: float = 0.05  # δ: bound on Σ Î_ij over the pairs revealed together, in nats
    max_entropy: float = float("inf")  # positions less certain than this wait (nats)
    head: object = resource("mi_head")  # dependency head: hidden (B, L, D) → (B, L, L)

    def __post_init__(self) -> None:
        if not self.delta >= 0 or not self.max_entropy >= 0:
            raise UnmaskError(f"demask: delta and max_entropy must be >= 0, got {self.delta}, {self.max_entropy}")

    def select(self, state: DecodeState) -> torch.Tensor:
        if self.head is None:
            raise UnmaskError("demask needs an MI (dependency) head (train one with `unmask mi train`)")
        with torch.no_grad():
            dep = self.head(state.hidden.float()).clamp_min(0)  # (B, L, L)
        return dependency_greedy(entropy(state.probs), state.masked, dep, self.delta, self.max_entropy)
