"""The checks every config runs on its numbers, so that each refusal is one line naming the field
and the value it got (``lr must be a finite number > 0, got nan``).

A field is named as in its dataclass; its flag is the same name with dashes (``val_fraction`` is
``--val-fraction``). NaN fails every comparison, so each check refuses it.
"""

from __future__ import annotations

import math
import numbers

from unmask.errors import UnmaskError


def positive(name: str, value) -> None:
    """``value`` is a finite number > 0 (a learning rate, a clip norm, a temperature)."""
    if not (_real(value) and math.isfinite(value) and value > 0):
        raise UnmaskError(f"{name} must be a finite number > 0, got {value}")


def non_negative(name: str, value) -> None:
    """``value`` is a finite number >= 0 (a weight decay, a cost)."""
    if not (_real(value) and math.isfinite(value) and value >= 0):
        raise UnmaskError(f"{name} must be a finite number >= 0, got {value}")


def between(name: str, value, low: float, high: float, ends: str = "[]") -> None:
    """``value`` lies in the interval from ``low`` to ``high``; ``ends`` says which ends are open:
    ``"[)"`` is low <= value < high, ``"()"`` low < value < high (a share, a probability)."""
    above = _real(value) and (value >= low if ends[0] == "[" else value > low)
    if not (above and (value <= high if ends[1] == "]" else value < high)):
        raise UnmaskError(f"{name} must be in {ends[0]}{low}, {high}{ends[1]}, got {value}")


def integer(name: str, value, low: int, high: int | None = None) -> None:
    """``value`` is an integer >= ``low`` (and <= ``high``): a count of steps, a width, a size."""
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not (whole and value >= low and (high is None or value <= high)):
        bound = f">= {low}" if high is None else f"in {low}..{high}"
        raise UnmaskError(f"{name} must be an integer {bound}, got {value!r}")


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
