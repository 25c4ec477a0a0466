"""FASTA files of protein sequences: a strict reader with one-line errors, and an atomic writer.

Only the 20 standard amino acids are accepted inside a sequence (upper or lower case; a trailing
``*`` stop is refused rather than silently dropped, so a file of translated ORFs is noticed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from unmask.errors import UnmaskError
from unmask.io import atomic_write, fasta_records, read_text

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"  # the 20 standard residues, in the order of their token ids
RESIDUE_INDEX = {c: i for i, c in enumerate(AMINO_ACIDS)}  # residue letter → token id
LINE_WIDTH = 60  # residues per line when writing


@dataclass(frozen=True)
class Record:
    """One FASTA record."""

    name: str  # the header line without ">" (identifier and description)
    sequence: str  # upper-case residues


def parse_fasta(text: str, where: str = "<text>") -> list[Record]:
    """The records of FASTA ``text``; UnmaskError naming ``where`` and the line for any problem."""

    def residues(line: str, at: str) -> str:
        seq = line.replace(" ", "").upper()
        bad = next((c for c in seq if c not in AMINO_ACIDS), None)
        if bad is not None:
            what = "a stop codon '*'" if bad == "*" else f"{bad!r}, not one of the 20 standard amino acids"
            raise UnmaskError(f"{at}: {what}")
        return seq

    records = [Record(name, seq) for name, seq in fasta_records(text, where, residues)]
    if not records:
        raise UnmaskError(f"{where}: no FASTA records")
    return records


def read_fasta(path: str | os.PathLike) -> list[Record]:
    """Read a FASTA file of protein sequences (one-line UnmaskError for any problem)."""
    return parse_fasta(read_text(path), str(path))


def format_fasta(records: list[Record]) -> str:
    """FASTA text: each header, then its residues in lines of :data:`LINE_WIDTH`."""
    out = []
    for r in records:
        if not r.name.strip() or "\n" in r.name or "\r" in r.name or not r.sequence or set(r.sequence) - set(AMINO_ACIDS):
            raise UnmaskError(f"cannot write record {r.name[:40]!r}: needs a one-line name and standard residues")
        out.append(f">{r.name}\n")
        out.extend(r.sequence[i : i + LINE_WIDTH] + "\n" for i in range(0, len(r.sequence), LINE_WIDTH))
    return "".join(out)


def write_fasta(path: str | os.PathLike, records: list[Record]) -> None:
    """Write ``records`` as FASTA atomically."""
    text = format_fasta(records)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
