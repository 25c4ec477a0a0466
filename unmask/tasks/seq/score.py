"""Scoring filled sequences against targets: the filled text, exactly or by a regex-extracted answer.

Both sides are text as the model writes it: the answer is the text of the filled tokens, the target
goes through the model's tokenizer and back (so a lower-casing tokenizer compares lower-cased text;
an alphabet's target is taken as it is), each stripped of surrounding whitespace. With ``--answer-regex RE`` each side is
reduced to RE's first match (its first group that took part in the match, if RE has groups); a target RE does not match is
compared whole, and an answer it does not match is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from unmask.errors import UnmaskError
from unmask.tasks.seq.codec import Codec
from unmask.tasks.seq.data import Example
from unmask.tasks.seq.layout import Row


def answer_text(codec: Codec, row: Row, tokens) -> str:
    """The text of the filled positions of a decoded row ``tokens`` ``(L,)``, in order."""
    return codec.text(tokens[row.fill].tolist()).strip()


def target_text(codec: Codec, ex: Example, row: Row) -> str | None:
    """What the filled text should be: the spans' own tokens, or the example's target; None if neither."""
    if row.clean is not None:
        return codec.text(row.clean[row.fill].tolist()).strip()
    if ex.target is None:
        return None
    return codec.normal(ex.target).strip()


@dataclass(frozen=True)
class ExactMatch:
    """The filled text equals the target."""

    def extract(self, text: str) -> str | None:
        return text.strip()

    def correct(self, answer: str, target: str) -> bool:
        return self.extract(answer) == self.extract(target)


@dataclass(frozen=True)
class RegexMatch:
    """The answer the regex finds in the filled text equals the one it finds in the target (or the target)."""

    pattern: str  # a Python regular expression; its first group that matched (else the whole match) is the answer

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as e:
            raise UnmaskError(f"--answer-regex {self.pattern!r}: not a regular expression ({e})") from None

    def extract(self, text: str) -> str | None:
        m = re.search(self.pattern, text)
        if m is None:
            return None
        return next((g for g in m.groups() if g is not None), m.group(0)).strip()

    def correct(self, answer: str, target: str) -> bool:
        got = self.extract(answer)
        want = self.extract(target)
        return got is not None and got == (want if want is not None else target.strip())


def scorer(regex: str = "") -> ExactMatch | RegexMatch:
    """Exact match, or :class:`RegexMatch` when a regex (``--answer-regex``) is given."""
    return RegexMatch(regex) if regex else ExactMatch()
