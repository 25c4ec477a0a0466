"""Policy names, their tiers, and the ``name:key=value,...`` spec syntax used by the CLI and benchmarks."""

from __future__ import annotations

import dataclasses
import enum
import re
import sys
import typing
import warnings
from collections.abc import Callable

from unmask.errors import SpecRenamed, UnmaskError

POLICIES: dict[str, type] = {}


class Tier(enum.StrEnum):
    """How a policy is meant to be used; ``--help`` lists the tiers apart, stable first."""

    STABLE = "stable"  # the published rules: baselines, MI-guided decoding, DEMASK, learned orders
    RESEARCH = "research"  # variants of the MI rule under study (pace and choice apart)
    ORACLE = "oracle"  # probe the model itself for exact dependencies: analysis, not deployment


TIER_HEADINGS = {
    Tier.STABLE: "stable (any of them also runs inside semi-AR blocks, SemiAR / --block where a command has it)",
    Tier.RESEARCH: "research (variants under study; defaults may change)",
    Tier.ORACLE: "oracle (exact probes of the model, for analysis)",
}
ORACLE_COST = "Cost: probes the model, up to 1 + N·|V| extra passes a step, reported apart from NFE as extra passes."


def register(name: str, tier: Tier):
    """Class decorator: make a frozen policy dataclass available as ``name`` in specs, in ``tier``.

    The first line of the class docstring is the policy's one-line rule in ``--help``.
    """
    tier = Tier(tier)

    def wrap(cls: type) -> type:
        old = POLICIES.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ValueError(f"policy name {name!r} is taken by {old.__module__}.{old.__qualname__}")
        POLICIES[name] = cls
        cls.spec_name = name
        cls.tier = tier
        return cls

    return wrap


def policies_in_tier(tier: Tier | str) -> list[str]:
    """The spec names registered in ``tier``, sorted (for ``--help``, the docs and the README)."""
    tier = Tier(tier)
    return sorted(name for name, cls in POLICIES.items() if cls.tier is tier)


@dataclasses.dataclass(frozen=True)
class Renamed:
    """An old policy name that still parses: ``old:key=value,...`` becomes ``new(arguments)``."""

    keys: tuple[str, ...]  # the keys the old spelling took
    new: Callable[[dict[str, str]], str]  # its arguments (key → text, in the order given) → the new spec


RENAMED: dict[str, Renamed] = {}


def rename(old: str, keys: tuple[str, ...], new: Callable[[dict[str, str]], str]) -> None:
    """Keep ``old`` working: it parses as the spec ``new(arguments)`` with a :class:`SpecRenamed` note."""
    RENAMED[old] = Renamed(keys, new)


def spec_bool(name: str, key: str, text: str) -> bool:
    """A bool spec value (``true|false|1|0``), or an UnmaskError naming ``name`` and ``key``."""
    if text.lower() not in ("true", "false", "1", "0"):
        raise UnmaskError(f"policy {name}: {key}={text!r} is not a valid bool")
    return text.lower() in ("true", "1")


def _convert(cls: type, key: str, text: str):
    hint = typing.get_type_hints(cls)[key]
    if hint is bool:
        return spec_bool(cls.spec_name, key, text)
    try:
        value = hint(text)
        if value != value:  # NaN would silently disable every comparison a policy makes
            raise ValueError(text)
        if hint is int and abs(value) >= 2**31:  # counts beyond overflow torch's int64 arithmetic
            raise ValueError(text)
        return value
    except ValueError:
        raise UnmaskError(f"policy {cls.spec_name}: {key}={text!r} is not a valid {hint.__name__}") from None


def parse_policy(spec: str):
    """Build a policy from ``name`` or ``name:key=value,...`` (e.g. ``topk:k=7``, ``eb:gamma=0.6``).

    This is the registry of the families imported so far (``unmask.decode`` registers the baselines);
    :func:`unmask.parse_policy` (:mod:`unmask.policies`) imports every family first.
    """
    cls, kwargs = _parse(spec)
    return cls(**kwargs)


def spec_keys(spec: str) -> set[str]:
    """The keys ``spec`` sets explicitly (``random:steps=5`` → ``{"steps"}``; an old name's keys under
    its new spelling). Silent: the note on an old name is :func:`parse_policy`'s."""
    return set(_parse(spec, note=False)[1])


def _arguments(name: str, args: str, keys: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``key=value,...`` → key → value text, in order; an unknown, bare or repeated key is an UnmaskError."""
    given = {}
    for item in filter(None, (a.strip() for a in args.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in keys:
            raise UnmaskError(f"policy {name}: bad argument {item!r}; it takes {', '.join(keys) or 'no arguments'} as key=value")
        if key in given:
            raise UnmaskError(f"policy {name}: {key} is given twice")
        given[key] = value.strip()
    return given


def _parse(spec: str, note: bool = True) -> tuple[type, dict]:
    name, _, args = spec.strip().partition(":")
    if name in RENAMED:
        new = RENAMED[name].new(_arguments(name, args, RENAMED[name].keys))
        if note:
            warnings.warn(f"policy spec {spec.strip()!r} is now {new!r}", SpecRenamed, stacklevel=3)
        return _parse(new, note)
    if name not in POLICIES:
        # this registry holds the families imported so far; unmask.parse_policy and build_policy import them all
        hint = "" if "unmask.policies" in sys.modules else " (of the families imported; unmask.parse_policy knows them all)"
        raise UnmaskError(f"unknown policy {name!r}; choose one of {', '.join(sorted(POLICIES))}{hint}")
    cls = POLICIES[name]
    return cls, {key: _convert(cls, key, text) for key, text in _arguments(name, args, spec_fields(cls)).items()}


def spec_fields(cls) -> list[str]:
    """Fields settable from a spec: the numbers, not the resources (models, heads) or a wrapped policy."""
    return [f.name for f in dataclasses.fields(cls) if not {"resource", "inner"} & set(f.metadata)]


def policy_spec(policy) -> str:
    """The canonical spec string of a policy (inverse of :func:`parse_policy`)."""
    args = ",".join(f"{k}={getattr(policy, k)}" for k in spec_fields(policy))
    return f"{policy.spec_name}:{args}" if args else policy.spec_name


def plain_text(text: str) -> str:
    """``text`` with its reST inline markup as plain text for ``--help``: literals and roles (mod, class, ...) lose
    their marks, and a role's ``~`` target keeps only its last name."""
    text = re.sub(r":\w+:`(~?)([^`]+)`", lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    return re.sub(r"``([^`]+)``", r"\1", text)


def describe_policies() -> list[str]:
    """The ``--help`` policy list: a heading per tier (stable first), then one indented line per policy
    of that tier: its spec with the defaults, and its rule (an oracle's line also says what it costs)."""
    lines = []
    for tier in Tier:
        names = policies_in_tier(tier)
        if names:
            lines.append(f"{TIER_HEADINGS[tier]}:")
        for name in names:
            cls = POLICIES[name]
            doc = plain_text(" ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()))
            if tier is Tier.ORACLE:
                doc += " " + ORACLE_COST
            defaults = ",".join(f"{f.name}={f.default}" for f in dataclasses.fields(cls) if f.name in spec_fields(cls))
            lines.append(f"  {name + (':' + defaults if defaults else ''):<44} {doc}")
    return lines
