"""MI-guided parallel decoding (Sharma, Wang, Li 2026, "pairwise mutual information in masked
sequence models", arXiv 2605.20187): reveal many tokens at once, but not dependent ones.

Sort masked positions by entropy; always take the lowest; then scan the rest in order and take
position i if  H_i + λ · Σ_{j already taken} Î_ij  fits the remaining budget γ, charging it
against the budget; positions that do not fit wait for a later step. Every taken token pays its
own entropy — unlike EB-Sampler's Σ H − max H, which lets the least confident token in for free.
With λ = 0 this is a pure entropy budget (a strong baseline in its own right).
``mi_prefix`` (and ``exact_prefix``, with an exact charge) stops the scan at the first position that
does not fit: the set stays a prefix of entropy order, never longer than the entropy budget's at the
same γ, so the charge decides only *how many* to reveal (fewer where the most certain ones depend on
each other), never *which* — the pace apart from the choice, the other way round from ``mi_paced``.

``mi`` uses a learned estimator head on the denoiser's hidden states (cost: one small head per
step); ``exact`` (the oracle tier) probes the model itself (:class:`unmask.mi.exact.RowProbes`), a row
only when its scan reaches a position whose entropy still fits, and returns every pass it runs (its
own base pass included) as ``extra_passes``, kept apart from model NFE — an oracle for analysis. Its
``charge`` is the paper's exact MI (``mi``), the MI of each row's probe joint (``joint``) or DEMASK's
exact total-variation influence (``influence``); ``exact_steps`` and ``exact_prefix`` are ``mi_steps``
and ``mi_prefix`` with such an exact charge. The old names ``mi_exact`` (``joint=1``: charge=joint) and
``influence_exact`` still parse, to ``exact``, with a :class:`~unmask.errors.SpecRenamed` note.

``mi_steps`` keeps the MI charge but fixes the pace: every step reveals ⌈remaining / steps left⌉
positions, so a sequence takes exactly ``steps`` passes, and the charge decides only *which* ones (greedily,
the lowest H_i + λ · Σ_{j already taken} Î_ij next). With λ = 0 it is entropy order at a fixed budget,
its twin at the same passes: a matched comparison of what the MI term buys. ``mi_paced`` does the
same at the entropy budget's pace: each step reveals as many as ``mi:gamma=γ,lam=0`` would, chosen by
the charge.

``demask`` is the rule of DEMASK (Ringel et al. 2026, arXiv 2604.02560), with our MI head as its
dependency head: in entropy order, take position i while the total pairwise dependency of the taken
set stays within δ — a bound on dependency alone, with no charge for a token's own uncertainty (``max_entropy``
optionally keeps very uncertain positions out).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from unmask.decode.policy import FixedBudget, Selection, resource
from unmask.decode.registry import Tier, register, rename, spec_bool
from unmask.decode.scores import entropy
from unmask.decode.state import DecodeState, budget_count, take_top
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.mi.estimator import MIHead
from unmask.mi.exact import RowProbes, exact_mi


def mi_greedy(h: torch.Tensor, masked: torch.Tensor, mi: torch.Tensor | Callable[[torch.Tensor], torch.Tensor] | None,
              gamma: float, lam: float, prefix: bool = False) -> torch.Tensor:
    """``(B, L)`` bool reveal set of the greedy entropy + λ·MI budget rule.

    Args:
        h: ``(B, L)`` entropies; masked: ``(B, L)`` bool; mi: ``(B, L, L)`` pairwise MI ≥ 0 (unused if
            λ = 0), or a function of the rows ``(B, L)`` bool whose charge the scan needs now → such a
            matrix right on those rows and their pairs: an exact oracle then probes only the rows the
            scan reaches (the candidate and the taken set, where the candidate's own entropy fits).
            Both choose the same set: a position whose entropy alone does not fit is never taken.
        prefix: stop at the first position that does not fit instead of passing over it, so the
            set is always a prefix of entropy order, never longer than the entropy budget's (λ = 0)
            at the same γ: the charge sets only how many are revealed, not which.
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
    open_ = torch.ones(b, dtype=torch.bool, device=h.device)  # (B,) False once a prefix row has stopped
    charge = torch.zeros(b, h.shape[1], h.shape[1], dtype=h.dtype, device=h.device) if callable(mi) else mi  # (B, L, L)
    for k in range(int(masked.sum(1).max())):  # vectorised over the batch; ≤ L iterations
        i = order[:, k]  # (B,) k-th candidate of each row
        if callable(mi):  # the rows of the candidates that could fit (their charge is read) and of the taken set
            may = masked[rows, i] & (h[rows, i] <= budget) & open_ & (k > 0)  # (B,)
            if may.any():
                need = taken.clone()
                need[rows, i] = True
                charge = mi(need & may[:, None])
        cost = h[rows, i] + lam * (charge[rows, i] * taken).sum(1)
        take = masked[rows, i] & ((k == 0) | ((cost <= budget) & open_))
        taken[rows, i] = take
        budget = budget - cost * take
        if prefix:
            open_ = open_ & take
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


def mi_count_greedy(h: torch.Tensor, masked: torch.Tensor, mi: torch.Tensor | None, lam: float,
                    count: torch.Tensor) -> torch.Tensor:
    """``(B, L)`` bool: ``count[b]`` masked positions per row, taken one at a time, each the lowest
    H_i + λ · Σ_{j taken} Î_ij among those left (ties to the lower position; with λ = 0, the
    ``count`` lowest entropies; a negative Î charges nothing).

    Args:
        h: ``(B, L)`` entropies; masked: ``(B, L)`` bool; mi: ``(B, L, L)`` pairwise MI (unused if λ = 0);
        count: ``(B,)`` positions to take (at most the masked ones).
    """
    if lam == 0:
        return take_top(-h, masked, count)
    mi = mi.clamp_min(0)
    rows = torch.arange(h.shape[0], device=h.device)
    taken = torch.zeros_like(masked)
    charge = torch.zeros_like(h)  # (B, L) Σ_{j taken} Î_ij of every candidate i
    for k in range(int(count.max())):  # vectorised over the batch; ≤ L iterations
        i = (h + lam * charge).masked_fill(~masked | taken, float("inf")).argmin(1)  # (B,)
        take = (k < count) & masked[rows, i] & ~taken[rows, i]
        taken[rows, i] |= take
        charge = charge + mi[rows, i] * take[:, None]
    return taken


def _check(policy) -> None:
    if not (policy.gamma >= 0 and policy.lam >= 0):  # (NaN refused too)
        raise UnmaskError(f"{policy.spec_name}: gamma and lam must be >= 0, got gamma={policy.gamma}, lam={policy.lam}")


def head_mi(policy, state: DecodeState) -> torch.Tensor | None:
    """``(B, L, L)`` ``policy.head``'s MI estimate on the state's hidden states and P(X | C), or None when
    ``policy.lam`` is 0 (no charge, so no head needed)."""
    if policy.lam == 0:
        return None
    if policy.head is None:
        raise UnmaskError(f"{policy.spec_name}: lam > 0 needs an MI estimator head (train one with `unmask mi train`)")
    with torch.no_grad():
        return policy.head(state.hidden.float(), state.probs)


@register("mi", Tier.STABLE)
@dataclass(frozen=True)
class MI:
    """Entropy order; take i while H_i + λ·Σ_taken Î_ij fits the remaining γ (Î: the learned MI head;
    Sharma, Wang, Li 2026, arXiv 2605.20187)."""

    # Defaults: the recommended setting on a 12-layer Sudoku model, chosen on the validation set val-kaggle (README).
    gamma: float = 0.03  # γ: budget in nats per step (entropy + λ·MI of each taken token)
    lam: float = 0.0  # λ: weight of the pairwise MI with tokens already taken this step
    # MI head: (hidden (B, L, D), P(X | C) (B, L, V)) → (B, L, L)
    head: MIHead | None = resource("mi_head", needed=lambda p: p.lam != 0)

    def __post_init__(self) -> None:
        _check(self)

    def select(self, state: DecodeState) -> torch.Tensor:
        return mi_greedy(entropy(state.probs), state.masked, head_mi(self, state), self.gamma, self.lam)


@register("mi_steps", Tier.RESEARCH)
@dataclass(frozen=True)
class MISteps(FixedBudget):
    """⌈remaining / steps left⌉ positions per step, chosen greedily by H_i + λ·Σ_taken Î_ij (Î: the
    learned MI head): the MI rule at a fixed number of passes (λ = 0: entropy order)."""

    lam: float = 1.0  # λ: weight of the pairwise MI with tokens already taken this step
    # MI head: (hidden (B, L, D), P(X | C) (B, L, V)) → (B, L, L)
    head: MIHead | None = resource("mi_head", needed=lambda p: p.lam != 0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.lam >= 0:
            raise UnmaskError(f"mi_steps: lam must be >= 0, got {self.lam}")

    def select(self, state: DecodeState) -> torch.Tensor:
        return mi_count_greedy(entropy(state.probs), state.masked, head_mi(self, state), self.lam,
                               budget_count(state, self.steps))


@register("mi_paced", Tier.RESEARCH)
@dataclass(frozen=True)
class MIPaced:
    """As many positions per step as the entropy budget γ takes (``mi:gamma=γ,lam=0``), chosen greedily
    by H_i + λ·Σ_taken Î_ij: the budget's pace with the MI charge's choice (λ = 0: the entropy budget)."""

    gamma: float = 0.3  # γ: entropy budget in nats per step; sets how many are revealed
    lam: float = 1.0  # λ: weight of the pairwise MI with tokens already taken this step; sets which
    # MI head: (hidden (B, L, D), P(X | C) (B, L, V)) → (B, L, L)
    head: MIHead | None = resource("mi_head", needed=lambda p: p.lam != 0)

    def __post_init__(self) -> None:
        _check(self)

    def select(self, state: DecodeState) -> torch.Tensor:
        h = entropy(state.probs)  # (B, L)
        count = mi_greedy(h, state.masked, None, self.gamma, 0.0).sum(1)  # (B,) the entropy budget's pace
        return mi_count_greedy(h, state.masked, head_mi(self, state), self.lam, count)


@register("mi_prefix", Tier.RESEARCH)
@dataclass(frozen=True)
class MIPrefix:
    """Entropy order; take the next while H_i + λ·Σ_taken Î_ij fits the remaining γ, stopping at the
    first that does not (Î: the learned head): the charge sets how many are revealed, never which."""

    gamma: float = 1.0  # γ: budget in nats per step (entropy + λ·charge of each taken token)
    lam: float = 2.0  # λ: weight of the pairwise charge with tokens already taken this step
    # MI (or D) head: (hidden (B, L, D), P(X | C) (B, L, V)) → (B, L, L)
    head: MIHead | None = resource("mi_head", needed=lambda p: p.lam != 0)

    def __post_init__(self) -> None:
        _check(self)

    def select(self, state: DecodeState) -> torch.Tensor:
        return mi_greedy(entropy(state.probs), state.masked, head_mi(self, state), self.gamma, self.lam, prefix=True)


EXACT_CHARGES = {  # name → the symmetric pairwise charge (B, L, L) of an ExactMI result
    "mi": lambda res: res.symmetric.clamp_min(0),  # the paper's I (a model's conditionals can make it < 0)
    "joint": lambda res: res.symmetric_joint.clamp_min(0),  # the probe joint's MI (a true MI; rounding can dip below 0)
    "influence": lambda res: res.symmetric_influence,  # DEMASK's total-variation influence D, in [0, 1]
}


def _check_charge(policy) -> None:
    if policy.charge not in EXACT_CHARGES:
        raise UnmaskError(f"{policy.spec_name}: charge must be one of {', '.join(EXACT_CHARGES)}, got {policy.charge!r}")


@register("exact", Tier.ORACLE)
@dataclass(frozen=True)
class Exact:
    """The ``mi`` rule with an exact charge from probing the denoiser: entropy order; take i while
    H_i + λ·Σ_taken C_ij fits the remaining γ, C the exact MI (``mi``), the probe joint's MI (``joint``)
    or DEMASK's total-variation influence (``influence``; :mod:`unmask.mi.exact`). A row is probed only
    when the scan needs it."""

    gamma: float = 0.1  # γ: budget in nats per step (entropy + λ·charge of each taken token)
    lam: float = 2.0  # λ: weight of the pairwise charge with tokens already taken this step
    charge: str = "mi"  # C: "mi" (the paper's I, clamped at 0), "joint" (probe-joint MI) or "influence" (DEMASK's D)
    eps: float = 1e-3  # skip probe values with P < eps (see unmask.mi.exact)
    denoiser: Denoiser | None = resource("denoiser")  # the model to probe

    def __post_init__(self) -> None:
        _check(self)
        _check_charge(self)

    def select(self, state: DecodeState) -> Selection:
        return exact_budget(self, state, EXACT_CHARGES[self.charge])  # every charge is ≥ 0: none refills the budget


def _renamed_exact(name: str, charge: str):
    """The new spec of an old ``name`` (``mi_exact``, ``influence_exact``) spelling, from its arguments."""

    def new(args: dict[str, str]) -> str:
        c = "joint" if spec_bool(name, "joint", args.get("joint", "false")) else charge
        keys = [f"{k}={args[k]}" for k in ("gamma", "lam") if k in args] + [f"charge={c}"]
        return "exact:" + ",".join(keys + ([f"eps={args['eps']}"] if "eps" in args else []))

    return new


rename("mi_exact", ("gamma", "lam", "eps", "joint"), _renamed_exact("mi_exact", "mi"))
rename("influence_exact", ("gamma", "lam", "eps"), _renamed_exact("influence_exact", "influence"))


@register("exact_steps", Tier.ORACLE)
@dataclass(frozen=True)
class ExactSteps(FixedBudget):
    """``mi_steps`` with an exact charge from probing the denoiser (:mod:`unmask.mi.exact`; probe passes
    returned apart): ⌈remaining / steps left⌉ positions per step, each next the lowest H_i + λ·Σ_taken C_ij;
    a step that takes every masked cell probes nothing. An oracle for what a perfect head would choose at
    a fixed number of passes (λ = 0: entropy order, no probes)."""

    lam: float = 1.0  # λ: weight of the pairwise charge with tokens already taken this step
    charge: str = "influence"  # C: "mi" (the paper's I, clamped at 0), "joint" (probe-joint MI) or "influence" (DEMASK's D)
    eps: float = 1e-3  # skip probe values with P < eps (see unmask.mi.exact)
    denoiser: Denoiser | None = resource("denoiser", needed=lambda p: p.lam != 0)  # the model to probe

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.lam >= 0:
            raise UnmaskError(f"exact_steps: lam must be >= 0, got {self.lam}")
        _check_charge(self)

    def select(self, state: DecodeState) -> Selection:
        h, count = entropy(state.probs), budget_count(state, self.steps)  # (B, L), (B,)
        if self.lam == 0:
            return Selection(mi_count_greedy(h, state.masked, None, 0.0, count))
        if self.denoiser is None:
            raise UnmaskError("exact_steps needs the denoiser to probe")
        # Rows whose step takes every masked cell (a sequence's last pass) need no charge: not probed.
        probe = count < state.masked.sum(1)  # (B,)
        b, n = state.tokens.shape
        charge = torch.zeros(b, n, n, dtype=h.dtype, device=h.device)  # (B, L, L)
        extra = torch.zeros(b, dtype=torch.long, device=h.device)  # (B,)
        if probe.any():
            res = exact_mi(self.denoiser, state.tokens[probe], eps=self.eps)
            charge[probe], extra[probe] = EXACT_CHARGES[self.charge](res).to(h.dtype), res.passes
        return Selection(mi_count_greedy(h, state.masked, charge, self.lam, count), extra_passes=extra)


@register("exact_prefix", Tier.ORACLE)
@dataclass(frozen=True)
class ExactPrefix:
    """``mi_prefix`` with an exact charge from probing the denoiser (:mod:`unmask.mi.exact`; probe passes
    returned apart): entropy order, stopped at the first i whose H_i + λ·Σ_taken C_ij does not fit γ.
    An oracle for how well a perfect charge sets the pace."""

    gamma: float = 1.0  # γ: budget in nats per step (entropy + λ·charge of each taken token)
    lam: float = 8.0  # λ: weight of the pairwise charge with tokens already taken this step
    charge: str = "influence"  # C: "mi" (the paper's I, clamped at 0), "joint" (probe-joint MI) or "influence" (DEMASK's D)
    eps: float = 1e-3  # skip probe values with P < eps (see unmask.mi.exact)
    denoiser: Denoiser | None = resource("denoiser")  # the model to probe

    def __post_init__(self) -> None:
        _check(self)
        _check_charge(self)

    def select(self, state: DecodeState) -> Selection:
        return exact_budget(self, state, EXACT_CHARGES[self.charge], prefix=True)


def exact_budget(policy, state: DecodeState, charge, prefix: bool = False) -> Selection:
    """The greedy budget rule (stopped at the first misfit with ``prefix``) with the pairwise
    ``charge(ExactMI)`` ``(B, L, L)`` (≥ 0) of ``policy.denoiser``'s exact probes (``policy``'s γ, λ and
    ε); every pass the probes run is returned as extra passes. A row is probed only when the scan
    needs its charge (:func:`mi_greedy`): the choice of probing every masked row, at a fraction of the
    passes (benchmarks/mi/oracle_probes.py)."""
    if policy.denoiser is None:
        raise UnmaskError(f"{policy.spec_name} needs the denoiser to probe")
    probes = RowProbes(policy.denoiser, state.tokens, eps=policy.eps)

    def charged(rows: torch.Tensor) -> torch.Tensor:  # (B, L, L), right on ``rows``
        c = charge(probes.probe(rows)).float()
        if (c < 0).any():  # a negative charge refills the budget: a cell left unprobed might have fitted
            raise UnmaskError(f"{policy.spec_name}: an exact charge must be >= 0 (clamp it), got {float(c.min()):.3g}")
        return c

    reveal = mi_greedy(entropy(state.probs), state.masked, charged, policy.gamma, policy.lam, prefix)
    return Selection(reveal, extra_passes=probes.result.passes)  # its own base pass included: it is a real pass


@register("demask", Tier.STABLE)
@dataclass(frozen=True)
class Demask:
    """DEMASK's rule (arXiv 2604.02560): entropy order; take i while the taken set's total pairwise
    dependency (the MI head's Î) stays within δ."""

    delta: float = 0.05  # δ: bound on Σ Î_ij over the pairs revealed together, in nats
    max_entropy: float = float("inf")  # positions less certain than this wait (nats)
    head: MIHead | None = resource("mi_head")  # dependency head: (hidden (B, L, D), P(X | C) (B, L, V)) → (B, L, L)

    def __post_init__(self) -> None:
        if not self.delta >= 0 or not self.max_entropy >= 0:
            raise UnmaskError(f"demask: delta and max_entropy must be >= 0, got {self.delta}, {self.max_entropy}")

    def select(self, state: DecodeState) -> torch.Tensor:
        if self.head is None:
            raise UnmaskError("demask needs an MI (dependency) head (train one with `unmask mi train`)")
        with torch.no_grad():
            dep = self.head(state.hidden.float(), state.probs).clamp_min(0)  # (B, L, L)
        return dependency_greedy(entropy(state.probs), state.masked, dep, self.delta, self.max_entropy)
