"""What a policy is: one method that chooses which masked positions to reveal, and what it declares.

A policy is a small frozen dataclass. Its numbers are its fields (settable from a spec such as
``topk:k=7``); objects it needs (a model to probe, an MI head, a learned order network) are
*resource* fields, declared with :func:`resource` and filled by :func:`attach`; a wrapper declares
the policy it wraps with :func:`wrapped`. Fixed-budget policies share the base class
:class:`FixedBudget`, so callers ask ``isinstance(policy, FixedBudget)`` rather than for an attribute.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import torch

from unmask.decode.registry import POLICIES, policy_spec
from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError


class Selection(NamedTuple):
    """What a policy may return instead of a bare reveal mask."""

    reveal: torch.Tensor  # (B, L) bool, a subset of state.masked with at least one True per row
    log_prob: torch.Tensor | None = None  # (B,) log-probability of this reveal set, for a policy that samples it
    extra_passes: torch.Tensor | None = None  # (B,) forward passes the policy spent itself (e.g. exact-MI probes)


class Policy(Protocol):
    """Chooses which masked positions to reveal at one step."""

    def select(self, state: DecodeState) -> torch.Tensor | Selection:
        """``(B, L)`` bool (a subset of ``state.masked``, ≥ 1 True per row), or a :class:`Selection`."""
        ...


def as_selection(out: torch.Tensor | Selection) -> Selection:
    """A policy's answer as a :class:`Selection` (a bare mask has no log-probability and no extra passes)."""
    return out if isinstance(out, Selection) else Selection(out)


@dataclass(frozen=True)
class FixedBudget:
    """Base class of policies that finish every sequence in ``steps`` passes (MDLM-style schedules)."""

    steps: int = 10  # S: forward passes allowed per sequence

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise UnmaskError(f"{self.spec_name}: steps must be >= 1, got {self.steps}")


def with_budget(policy: Policy, budget: int | None) -> Policy:
    """``policy`` with its fixed budget set to ``budget`` passes; ``None`` leaves it as it is.

    An adaptive policy has no budget to set, and a spec that already names one would be silently
    overridden: both are an UnmaskError.
    """
    if budget is None:
        return policy
    if not isinstance(policy, FixedBudget):
        raise UnmaskError(f"{policy_spec(policy)} has no step budget: --budget applies to {', '.join(budget_policies())}")
    return dataclasses.replace(policy, steps=budget)


def budget_policies() -> list[str]:
    """The registered names of the fixed-budget family (the :class:`FixedBudget` subclasses ``--budget`` sets), sorted."""
    return sorted(name for name, cls in POLICIES.items() if issubclass(cls, FixedBudget))


RESOURCES: set[str] = set()  # every resource name some policy declares


def resource(name: str, needed: Callable[[Any], bool] | None = None, doc: str = ""):
    """A field holding an object a policy needs, filled by :func:`attach` under ``name``.

    ``needed(policy)`` says whether this policy instance needs it (default: always), so a loader
    fetches it only then (e.g. an MI head only when λ > 0). Resource fields are not part of specs.
    """
    RESOURCES.add(name)
    return field(default=None, compare=False, repr=False, metadata={"resource": name, "needed": needed, "doc": doc})


def wrapped():
    """A field holding the policy a wrapper delegates to (attach reaches through it)."""
    return field(metadata={"inner": True})


def needed_resources(policy) -> set[str]:
    """Names of the resources ``policy`` (and any policy it wraps) needs and lacks."""
    names = set()
    for f in dataclasses.fields(policy):
        if f.metadata.get("inner"):
            names |= needed_resources(getattr(policy, f.name))
        elif "resource" in f.metadata and getattr(policy, f.name) is None:
            needed = f.metadata["needed"]
            if needed is None or needed(policy):
                names.add(f.metadata["resource"])
    return names


def attach(policy, **objects):
    """Fill the unset resource fields of ``policy`` (and of any policy it wraps) from ``objects``.

    Specs carry numbers only; a loader (:func:`unmask.policies.build_policy`) or a caller attaches
    the objects, e.g. ``attach(policy, denoiser=model, mi_head=head)``. A name no policy declares is
    a TypeError (a misspelt resource would otherwise be dropped without a word).
    """
    unknown = sorted(set(objects) - RESOURCES)
    if unknown:
        raise TypeError(f"attach: no policy declares the resources {unknown}; known: {sorted(RESOURCES)}")
    given = {}
    for f in dataclasses.fields(policy):
        value = getattr(policy, f.name)
        if f.metadata.get("inner"):
            new = attach(value, **objects)
            if new is not value:
                given[f.name] = new
        elif "resource" in f.metadata and value is None and objects.get(f.metadata["resource"]) is not None:
            given[f.name] = objects[f.metadata["resource"]]
    return dataclasses.replace(policy, **given) if given else policy
