"""Final-answer extraction, GSM8K convention: the number after ``####``."""

from __future__ import annotations

import re

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def normalise_number(text: str) -> str | None:
    """Canonical string of a number: no thousands commas, no trailing zeros after a point, no '+'.

    ``"1,234.50"`` → ``"1234.5"``; ``"-0"`` → ``"0"``; None if ``text`` holds no number.
    """
    m = _NUMBER.search(text.replace("−", "-"))
    if m is None:
        return None
    s = m.group(0).replace(",", "")
    neg = s.startswith("-")
    s = s.lstrip("-")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    s = s.lstrip("0") or "0"
    if s.startswith("."):
        s = "0" + s
    return "-" + s if neg and s != "0" else s


def extract_answer(text: str, *, single: bool = False) -> str | None:
    """The number after the first ``####`` (GSM8K), normalised; None if there is no ``####`` number.

    The first, as lm-evaluation-harness's strict match: a free-running model that goes on to invent a
    new question and its ``####`` answer is scored on its own answer, not on the invented one.
    ``single``: where a text holds one answer only (a target; the answer region of the task's own
    model), GSM8K's convention of one ``####`` holds, and a text with several (``#### 3 #### 4``) is
    ambiguous: None, never read as its first.
    """
    if "####" not in text or (single and text.count("####") > 1):
        return None
    return normalise_number(text.split("####", 2)[1])


def last_number(text: str) -> str | None:
    """The last number in ``text``, normalised (the usual fallback when ``####`` is missing)."""
    matches = _NUMBER.findall(text.replace("−", "-"))
    return normalise_number(matches[-1]) if matches else None
