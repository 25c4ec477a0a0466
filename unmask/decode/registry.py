"""Policy names and the ``name:key=value,...`` spec syntax used by the CLI and benchmarks."""

from __future__ import annotations

import dataclasses
import typing

from unmask.errors import UnmaskError

POLICIES: dict[str, type] = {}


def register(name: str):
    """Class decorator: make a frozen policy dataclass available as ``name`` in specs.

    The first line of the class docstring is the policy's one-line rule in ``--help``.
    """

    def wrap(cls: type) -> type:
        POLICIES[name] = cls
        cls.spec_name = name
        return cls

    return wrap


def _convert(cls: type, key: str, text: str):
    hint = typing.get_type_hints(cls)[key]
    try:
        if hint is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        value = hint(text)
        if value != value:  # NaN would silently disable every comparison a policy makes
            raise ValueError(text)
        if hint is int and abs(value) >= 2**31:  # counts beyond overflow torch's int64 arithmetic
            raise ValueError(text)
        return value
    except ValueError:
        raise UnmaskError(f"policy {cls.spec_name}: {key}={text!r} is not a valid {hint.__name__}") from None


def parse_policy(spec: str):
    """Build a policy from ``name`` or ``name:key=value,...`` (e.g. ``topk:k=7``, ``eb:gamma=0.6``)."""
    cls, kwargs = _parse(spec)
    return cls(**kwargs)


def spec_keys(spec: str) -> set[str]:
    """The keys ``spec`` sets explicitly (``random:steps=5`` → ``{"steps"}``)."""
    return set(_parse(spec)[1])


def _parse(spec: str) -> tuple[type, dict]:
    name, _, args = spec.strip().partition(":")
    if name not in POLICIES:
        raise UnmaskError(f"unknown policy {name!r}; choose one of {', '.join(sorted(POLICIES))}")
    cls = POLICIES[name]
    keys = spec_fields(cls)
    kwargs = {}
    for item in filter(None, (a.strip() for a in args.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in keys:
            raise UnmaskError(f"policy {name}: bad argument {item!r}; it takes {', '.join(keys) or 'no arguments'} as key=value")
        if key in kwargs:
            raise UnmaskError(f"policy {name}: {key} is given twice")
        kwargs[key] = _convert(cls, key, value.strip())
    return cls, kwargs


def spec_fields(cls) -> list[str]:
    """Fields settable from a spec: the numbers, not the resources (models, heads) or a wrapped policy."""
    return [f.name for f in dataclasses.fields(cls) if not {"resource", "inner"} & set(f.metadata)]


def policy_spec(policy) -> str:
    """The canonical spec string of a policy (inverse of :func:`parse_policy`)."""
    args = ",".join(f"{k}={getattr(policy, k)}" for k in spec_fields(policy))
    return f"{policy.spec_name}:{args}" if args else policy.spec_name


def describe_policies() -> list[str]:
    """One line per registered policy: its spec with the defaults, and its rule (for ``--help``)."""
    lines = []
    for name in sorted(POLICIES):
        cls = POLICIES[name]
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        defaults = ",".join(f"{f.name}={f.default}" for f in dataclasses.fields(cls) if f.name in spec_fields(cls))
        lines.append(f"{name + (':' + defaults if defaults else ''):<44} {' '.join(doc.split())}")
    return lines
