"""Files of sequences: FASTA, JSONL or plain text, each read into :class:`Example` records.

=========  ==========================================================================================
format     one example is
=========  ==========================================================================================
``fasta``  a record: ``>name`` then its sequence lines (whitespace inside a sequence is dropped)
``jsonl``  a JSON object per line: the text field (``"text"``, or ``--text-field``), and optionally the
           target field (``"target"``, or ``--target-field``; a string or a number), ``"spans"`` (a
           list of ``[lo, hi]`` token positions to fill) and ``"name"``
``text``   a non-blank line (its line ending dropped, nothing else)
=========  ==========================================================================================

``auto`` picks the format by the file's suffix (:data:`SUFFIXES`); any other suffix reads as ``text``.
Every problem is one :class:`~unmask.errors.UnmaskError` line naming the file and line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from unmask.errors import UnmaskError
from unmask.io import fasta_records, read_text

Span = tuple[int, int]  # token positions lo..hi-1 of a sequence (0-based, the tokenizer's special tokens not counted)


@dataclass(frozen=True)
class Example:
    """One sequence of the user's file."""

    text: str  # the sequence, with mask characters where to fill, or the prompt to continue (--generate)
    name: str  # the FASTA header, the JSONL "name", or "line K"
    target: str | None = None  # what the positions to fill should read, in order, where the file says
    spans: tuple[Span, ...] | None = None  # this example's own token spans to fill (JSONL "spans"), if any


@dataclass(frozen=True)
class Fields:
    """Which JSONL fields hold what."""

    text: str = "text"  # the sequence or prompt
    target: str = "target"  # what the positions to fill should read (optional per line)


def lines(text: str) -> list[str]:
    """The lines of ``text``, split at line feeds only (a JSON string or a sentence may hold other separators
    that ``str.splitlines`` would break at), each without its line ending."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def parse_fasta(text: str, where: str = "<text>", fields: Fields = Fields()) -> list[Example]:
    """The records of FASTA ``text`` (no targets: FASTA has no field for one)."""
    return [Example(seq, name) for name, seq in fasta_records(text, where)]


def _spans(value, where: str) -> tuple[Span, ...]:
    """A JSONL ``spans`` value: a non-empty list of ``[lo, hi]`` integer pairs."""
    ok = isinstance(value, list) and value and all(
        isinstance(s, list) and len(s) == 2 and all(type(v) is int for v in s) for s in value)
    if not ok:
        raise UnmaskError(f"{where}: \"spans\" must be a list of [lo, hi] integer pairs, e.g. [[5, 10]]")
    return tuple((lo, hi) for lo, hi in value)


def parse_jsonl(text: str, where: str = "<text>", fields: Fields = Fields()) -> list[Example]:
    """One example per non-blank line: a JSON object with a string ``fields.text``."""
    examples = []
    for line_no, line in enumerate(lines(text), start=1):
        if not line.strip():
            continue
        at = f"{where}:{line_no}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise UnmaskError(f"{at}: not JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise UnmaskError(f"{at}: expected a JSON object, got {type(obj).__name__}")
        if not isinstance(obj.get(fields.text), str):
            raise UnmaskError(f"{at}: needs a string field {fields.text!r} (the sequence; --text-field names another)")
        target = obj.get(fields.target)
        if target is not None and (isinstance(target, bool) or not isinstance(target, (str, int, float))):
            raise UnmaskError(f"{at}: field {fields.target!r} must be a string or a number")
        name = obj.get("name")
        examples.append(Example(obj[fields.text], name if isinstance(name, str) and name else f"line {line_no}",
                                None if target is None else str(target),
                                _spans(obj["spans"], at) if obj.get("spans") is not None else None))
    return examples


def parse_lines(text: str, where: str = "<text>", fields: Fields = Fields()) -> list[Example]:
    """One example per non-blank line, as it stands (only the line ending dropped)."""
    return [Example(line, f"line {k}") for k, line in enumerate(lines(text), start=1) if line.strip()]


PARSERS: dict[str, Callable[[str, str, Fields], list[Example]]] = {"fasta": parse_fasta, "jsonl": parse_jsonl,
                                                                  "text": parse_lines}  # --format → parser
SUFFIXES = {".fasta": "fasta", ".fa": "fasta", ".faa": "fasta", ".fna": "fasta", ".ffn": "fasta", ".fas": "fasta",
            ".jsonl": "jsonl", ".ndjson": "jsonl"}  # what --format auto reads each suffix as (others: text)
FORMATS = ("auto", *PARSERS)  # the --format choices


def file_format(path: str | os.PathLike, fmt: str = "auto") -> str:
    """The format ``path`` is read as: ``fmt``, or by its suffix when ``fmt`` is ``auto``."""
    if fmt not in FORMATS:
        raise UnmaskError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return SUFFIXES.get(Path(path).suffix.lower(), "text") if fmt == "auto" else fmt


def read_examples(path: str | os.PathLike, fmt: str = "auto", fields: Fields = Fields()) -> list[Example]:
    """The examples of the file at ``path`` (UnmaskError with one line for an empty or malformed file)."""
    kind = file_format(path, fmt)
    examples = PARSERS[kind](read_text(path), str(path), fields)
    if not examples:
        raise UnmaskError(f"{path}: no sequences (read as {kind})")
    return examples
