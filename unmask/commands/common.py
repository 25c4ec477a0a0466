"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from pathlib import Path

DEFAULT_SUDOKU_MODEL = Path(__file__).resolve().parent.parent / "models" / "sudoku"  # the shipped model


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_dataclass_args(parser: argparse.ArgumentParser, cls: type, only: list[str] | None = None) -> None:
    """One ``--flag`` per dataclass field (default None = keep the dataclass default)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if only is not None and f.name not in only:
            continue
        flag = "--" + f.name.replace("_", "-")
        if hints[f.name] is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        else:
            parser.add_argument(flag, type=hints[f.name], default=None, metavar=f.name.upper())


def from_args(cls: type, args: argparse.Namespace, base=None):
    """Build ``cls`` from the flags that were given, over ``base`` (or the defaults)."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name, None) is not None}
    return dataclasses.replace(base, **given) if base is not None else cls(**given)


def policy_for(spec: str, model, model_dir: str | Path):
    """Parse a policy spec and attach what it needs: the model to probe, the MI head if saved."""
    from unmask.decode import attach, parse_policy
    from unmask.mi.estimator import load_head

    policy = parse_policy(spec)
    needs_head = getattr(policy, "lam", 0) != 0 and hasattr(policy, "head")
    return attach(policy, denoiser=model, head=load_head(model_dir, required=needs_head) if needs_head else None)
