"""Does a sequence number as an antibody heavy-chain variable domain? ANARCI says (Dunbar & Deane 2016,
"ANARCI: antigen receptor numbering and receptor classification", Bioinformatics 32:298).

ANARCI aligns each sequence to its profile HMMs of antibody and T-cell-receptor variable domains (one per
species and chain type) with HMMER's ``hmmscan``, numbers the best domain scoring at least 80 bits (IMGT
scheme here) and finds its most identical V and J germlines. It comes from PyPI (``pip install
anarci==2026.2.13.2``, which carries its HMMs in the wheel and needs only Biopython) and runs offline;
``hmmscan`` comes from Debian's ``hmmer`` 3.3.2 and is named by its path, ``/usr/bin/hmmscan``, so that
another ``hmmscan`` earlier on PATH (PyPI's ``hmmer`` 3.4 binaries, whose output ANARCI's parser misreads)
is never the one run. Each call also numbers a known human heavy chain (:data:`CANARY`) and refuses if
it does not come back as one, so a silently broken HMMER cannot make every sequence look "not heavy".
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
from dataclasses import dataclass
from pathlib import Path

from unmask.errors import UnmaskError
from unmask.tasks.proteins import uniprot

HMMER_BIN = Path("/usr/bin")  # where Debian's hmmer puts hmmscan and hmmsearch
ANARCI_PIN = "anarci==2026.2.13.2"  # the ANARCI release these judges were checked with
MIN_BITS = 80.0  # ANARCI's own threshold for a domain
# Trastuzumab's heavy-chain variable domain (a public humanised antibody): must number as "H"
CANARY = ("EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSR"
          "WGGDGFYAMDYWGQGTLVTVSS")


@dataclass(frozen=True)
class Numbering:
    """ANARCI's reading of one sequence: its best-scoring variable domain, if any."""

    chain_type: str | None  # "H" heavy, "K"/"L" light, "A"/"B"/"G"/"D" T-cell receptor; None: no domain >= 80 bits
    bitscore: float  # HMMER bit score of that domain (0.0 without one)
    hmm_species: str | None  # the species of the best-scoring HMM
    start: int  # first residue of the numbered domain (0-based; -1 without one)
    end: int  # one past its last residue (-1 without one)
    imgt_first: int  # the IMGT position of its first residue (1..128; -1 without one)
    imgt_last: int  # the IMGT position of its last residue
    v_species: str | None  # species of the most identical V germline (searched over all of ANARCI's species)
    v_gene: str | None  # that germline, e.g. "IGHV3-23*01"
    v_identity: float  # its identity over the germline's IMGT positions (nan without one)
    j_gene: str | None  # the most identical J germline
    j_identity: float  # its identity (nan without one)

    @property
    def is_heavy(self) -> bool:
        """The best domain is a heavy-chain variable domain."""
        return self.chain_type == "H"


NONE = Numbering(None, 0.0, None, -1, -1, -1, -1, None, None, math.nan, None, math.nan)  # no domain found


def require_anarci():
    """The ``anarci.anarci`` module, with Debian's HMMER in place (installed with apt-get as root when missing)."""
    tools = [str(HMMER_BIN / "hmmscan"), str(HMMER_BIN / "hmmsearch")]
    for tool in tools:  # tell uniprot.require_tools which Debian package brings these paths
        uniprot.TOOLS.setdefault(tool, "hmmer")
    uniprot.require_tools(*tools)
    try:
        return importlib.import_module("anarci.anarci")
    except ImportError as e:
        raise UnmaskError(f"needs ANARCI ({e.name or e}): `pip install {ANARCI_PIN}` "
                          "(or `pip install 'unmask[antibody]'`)") from None


def _read(numbered, details) -> Numbering:
    """One sequence's :class:`Numbering` from ANARCI's ``numbered`` and ``alignment_details`` entries."""
    if not details:
        return NONE
    k = max(range(len(details)), key=lambda d: details[d]["bitscore"])  # the best domain
    residues, start, end = numbered[k]  # [((imgt, insertion), aa)], first, last index (inclusive)
    d = details[k]
    imgt = [pos for (pos, _), aa in residues if aa != "-"]
    (v_species, v_gene), v_id = _germline(d, "v_gene")
    (_, j_gene), j_id = _germline(d, "j_gene")
    return Numbering(d["chain_type"], float(d["bitscore"]), d["species"], int(start), int(end) + 1,
                     imgt[0] if imgt else -1, imgt[-1] if imgt else -1, v_species, v_gene, v_id, j_gene, j_id)


def _germline(details: dict, which: str) -> tuple[tuple[str | None, str | None], float]:
    """``((species, gene), identity)`` from ANARCI's ``details["germlines"][which]`` (``[None, None]`` if unassigned)."""
    hit, identity = details.get("germlines", {}).get(which) or (None, None)
    return (tuple(hit) if hit else (None, None)), (math.nan if identity is None else float(identity))


def number(sequences: list[str], germlines: bool = True) -> list[Numbering]:
    """ANARCI's :class:`Numbering` of each sequence (IMGT scheme; ``germlines``: also the closest V and J
    germlines over every species ANARCI knows). One ``hmmscan`` run for all of them."""
    if not sequences:
        return []
    mod = require_anarci()
    named = [("canary", CANARY)] + [(f"s{k}", s.upper()) for k, s in enumerate(sequences)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # ANARCI prints notes
        try:
            numbered, details, _ = mod.anarci(named, scheme="imgt", hmmerpath=str(HMMER_BIN), assign_germline=germlines,
                                              allowed_species=None, bit_score_threshold=MIN_BITS)
        except Exception as e:  # ANARCI raises bare AssertionError, HMMscanError, ...
            line = (str(e).strip().splitlines() or [type(e).__name__])[-1]
            raise UnmaskError(f"ANARCI failed ({type(e).__name__}): {line[:200]}") from None
    out = [_read(n, d) for n, d in zip(numbered, details)]
    if not out[0].is_heavy:
        raise UnmaskError(f"ANARCI did not number a known heavy chain as one: check {HMMER_BIN / 'hmmscan'} "
                          "is Debian's HMMER 3.3.2 (`apt-get install hmmer`)")
    return out[1:]


def heavy_share(numberings: list[Numbering]) -> float:
    """Share of the sequences whose best domain is a heavy-chain variable domain."""
    return sum(n.is_heavy for n in numberings) / max(len(numberings), 1)
