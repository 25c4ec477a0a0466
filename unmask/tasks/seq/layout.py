"""Where to fill: the positions of each sequence a decode writes, and its row of model ids.

One rule per example, first match wins:

==========================================  ===================================================
the example has                             positions to fill
==========================================  ===================================================
its own ``spans`` (a JSONL field)           those token spans of the sequence (the tokens there are the target)
``--spans LO:HI,...`` was given             those token spans of every sequence
``--generate N`` was given                  N new positions after the sequence (a prompt)
otherwise                                   the positions the input marks with the mask character/token
==========================================  ===================================================

Spans count the sequence's own tokens from 0 (the tokenizer's special tokens not counted), ``HI``
excluded, as Python slices do. A row is ``prefix + body + suffix`` (:mod:`unmask.tasks.seq.codec`)
with the mask id at the positions to fill and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from unmask.errors import UnmaskError
from unmask.tasks.seq.codec import Codec
from unmask.tasks.seq.data import Example, Span


@dataclass(frozen=True)
class Row:
    """One example laid out for the model."""

    tokens: torch.Tensor  # (L,) prefix, body, suffix: the mask id at each position to fill and nowhere else
    fill: torch.Tensor  # (L,) bool: the positions to fill
    clean: torch.Tensor | None  # (L,) the sequence as the input gave it before masking (spans), else None
    offset: int  # model position of the body's first token (the prefix's length)
    start: int  # first position to fill: semi-autoregressive blocks start here


def _row(codec: Codec, body: list[int], clean_body: list[int] | None, start: int) -> Row:
    """``prefix + body + suffix`` (and the same around ``clean_body``) as a :class:`Row`."""
    wrap = lambda ids: torch.tensor([*codec.prefix, *ids, *codec.suffix], dtype=torch.long)  # noqa: E731
    tokens = wrap(body)
    return Row(tokens, tokens == codec.mask_id, None if clean_body is None else wrap(clean_body), len(codec.prefix),
               len(codec.prefix) + start)


class Fill(Protocol):
    """One way of choosing the positions to fill."""

    def row(self, codec: Codec, ex: Example) -> Row:
        """``ex`` laid out with the mask id at its positions to fill (UnmaskError naming ``ex`` if it has none)."""
        ...

    def target_body(self, codec: Codec, ex: Example, row: Row) -> list[int]:
        """The ids the positions to fill should hold, in order (UnmaskError if the example gives none)."""
        ...


def _no_marks(codec: Codec, body: list[int], ex: Example, why: str) -> list[int]:
    if codec.mask_id in body:
        raise UnmaskError(f"{ex.name}: marks positions with {codec.marker!r} and {why}: give one of the two")
    return body


def _target(codec: Codec, ex: Example, what: str) -> list[int]:
    if ex.target is None:
        raise UnmaskError(f"{ex.name}: no target to compare the {what} with")
    return _no_marks(codec, codec.body(ex.target, f"{ex.name}: target"), ex, "a target: the target is the complete answer")


@dataclass(frozen=True)
class MaskFill:
    """The positions the input marks with the mask character or token."""

    def row(self, codec: Codec, ex: Example) -> Row:
        body = codec.body(ex.text, ex.name)
        if codec.mask_id not in body:
            raise UnmaskError(f"{ex.name}: no position to fill: no {codec.marker!r} in it (or give --spans or --generate)")
        return _row(codec, body, None, body.index(codec.mask_id))

    def target_body(self, codec: Codec, ex: Example, row: Row) -> list[int]:
        ids, n = _target(codec, ex, "filled positions"), int(row.fill.sum())
        if len(ids) != n:
            raise UnmaskError(f"{ex.name}: the target is {len(ids)} tokens and the input marks {n} positions")
        return ids


@dataclass(frozen=True)
class SpanFill:
    """Token spans of a complete sequence; what the sequence held there is the target."""

    spans: tuple[Span, ...]  # (lo, hi) pairs over the sequence's own tokens, hi excluded

    def row(self, codec: Codec, ex: Example) -> Row:
        clean = _no_marks(codec, codec.body(ex.text, ex.name), ex, "has spans to fill")
        if ex.target is not None:
            raise UnmaskError(f"{ex.name}: has a target and spans to fill: the spans' own tokens are the target")
        body = list(clean)
        for lo, hi in self.spans:
            if not 0 <= lo < hi <= len(clean):
                raise UnmaskError(f"{ex.name}: span {lo}:{hi} is out of range (the sequence has tokens 0..{len(clean) - 1}; "
                                  "spans are LO:HI with HI excluded)")
            body[lo:hi] = [codec.mask_id] * (hi - lo)
        return _row(codec, body, clean, min(lo for lo, _ in self.spans))

    def target_body(self, codec: Codec, ex: Example, row: Row) -> list[int]:
        return row.clean[row.fill].tolist()


@dataclass(frozen=True)
class GenerateFill:
    """``n`` new positions after the sequence, a prompt (filled in semi-autoregressive blocks if asked)."""

    n: int  # positions to generate

    def row(self, codec: Codec, ex: Example) -> Row:
        body = _no_marks(codec, codec.body(ex.text, ex.name), ex, "--generate")
        return _row(codec, body + [codec.mask_id] * self.n, None, len(body))

    def target_body(self, codec: Codec, ex: Example, row: Row) -> list[int]:
        ids = _target(codec, ex, "generated positions")
        if len(ids) > self.n:
            raise UnmaskError(f"{ex.name}: the target is {len(ids)} tokens, more than the {self.n} generated")
        if len(ids) < self.n and codec.end_id is None:
            raise UnmaskError(f"{ex.name}: the target is {len(ids)} tokens, not {self.n}, and nothing marks an end "
                              "(the model's tokenizer has no EOS or PAD; an alphabet has none)")
        return ids + [codec.end_id] * (self.n - len(ids))


def prompt_row(ids: list[int], mask_id: int, n: int, name: str = "a prompt") -> Row:
    """A prompt already in model ids, special tokens and all (e.g. a chat template's), followed by ``n``
    positions to generate and nothing after them: the layout of LLaDA-style dLLM prompting."""
    tokens = torch.tensor([*ids, *[mask_id] * n], dtype=torch.long)
    fill = torch.arange(len(tokens)) >= len(ids)
    if (tokens[~fill] == mask_id).any():
        raise UnmaskError(f"{name} holds the mask token: it would be filled too")
    return Row(tokens, fill, None, 0, len(ids))


def parse_spans(text: str) -> tuple[Span, ...]:
    """``--spans 5:10,20:25`` as ``((5, 10), (20, 25))`` (each ``LO < HI``, both >= 0)."""
    spans = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition(":")
        try:
            span = int(lo), int(hi)
        except ValueError:
            span = None
        if not sep or span is None or not 0 <= span[0] < span[1]:
            raise UnmaskError(f"--spans {text!r}: expected LO:HI,LO:HI,... with 0 <= LO < HI (HI excluded)")
        spans.append(span)
    return tuple(spans)


def fill_for(ex: Example, spans: tuple[Span, ...] | None, generate: int) -> Fill:
    """The rule that fills ``ex`` (see the table above); ``spans``/``generate``: the flags (None / 0 when not given)."""
    if ex.spans is not None:
        if generate:
            raise UnmaskError(f"{ex.name}: has spans to fill and --generate was given: give one of the two")
        return SpanFill(ex.spans)
    if spans:
        return SpanFill(spans)
    return GenerateFill(generate) if generate else MaskFill()
