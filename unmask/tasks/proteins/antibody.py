"""Antibody CDR infilling: real heavy-chain variable domains with their CDRs masked.

The CDRs are found from conserved framework anchors, not from a numbering tool (ANARCI is not on
PyPI's CPU path here); each rule is the usual anchor of one numbering scheme:

- **H1** (AbM definition, H26–H35): from the 4th residue after the first cysteine (Cys22, within
  residues 19–27) up to the tryptophan of ``W[VIFL][RK]Q`` (Trp36).
- **H2** (Kabat, H50–H65): from 14 residues after Trp36 up to the framework-3 motif
  ``[RK][FVAILG][TSIVAF][IFLMVA][STNRD]`` (H66–H70), which starts 30–33 residues after Trp36
  (16–19 CDR residues: Kabat's insertions 52a–c).
- **H3** (IMGT CDR3, 105–117): between the ``YYC`` of Cys104 and the J-region ``WGxG`` (Trp118).

:class:`AntibodyTask` lays an antibody out like :class:`~unmask.tasks.proteins.task.ProteinTask`
(residues then EOS) with only the chosen CDRs masked, so the decode loop, the evaluator and
``unmask mi map --task antibodies`` run on it unchanged. :func:`pseudo_log_likelihood` is the judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.tasks.base import Board
from unmask.tasks.proteins.fasta import AMINO_ACIDS, Record, read_fasta
from unmask.tasks.proteins.task import (
    EOS_ID,
    MASK_ID,
    VOCAB_SIZE,
    check_protein_model,
    decode_residues,
    encode_residues,
    parse_residue,
    refuse_long,
)

NAME = "antibodies"
CDR_NAMES = ("H1", "H2", "H3")
_TRP36 = re.compile(r"W[VIFL][RK]Q")
_FR3 = re.compile(r"[RK][FVAILG][TSIVAF][IFLMVA][STNRD]")
_H3 = re.compile(r"YYC([A-Z]{2,40}?)WG[A-Z]G")


@dataclass(frozen=True)
class Antibody:
    """A heavy-chain variable domain and where its CDRs are (0-based, end exclusive)."""

    name: str  # the FASTA name (a UniProt accession for the shipped set)
    sequence: str  # residues
    cdrs: dict[str, tuple[int, int]]  # "H1" / "H2" / "H3" → (start, end)


def find_cdrs(sequence: str) -> dict[str, tuple[int, int]] | None:
    """The three heavy-chain CDRs of ``sequence`` by the anchors in the module docstring, or None where one is missing."""
    cys = sequence.find("C", 18, 27)
    trp = _TRP36.search(sequence, cys + 8) if cys >= 0 else None
    h3 = _H3.search(sequence)
    if trp is None or h3 is None:
        return None
    fr3 = _FR3.search(sequence, trp.start() + 30, trp.start() + 38)  # the match must start by Trp36 + 33
    if fr3 is None or fr3.start() > trp.start() + 33 or not cys + 4 < trp.start():
        return None
    spans = {"H1": (cys + 4, trp.start()), "H2": (trp.start() + 14, fr3.start()), "H3": h3.span(1)}
    if not (spans["H1"][1] <= spans["H2"][0] and spans["H2"][1] <= spans["H3"][0]):
        return None
    return spans


def read_antibodies(path) -> list[Antibody]:
    """The antibodies of a FASTA file; a record whose CDRs cannot be found is refused with its name."""
    out = []
    for r in read_fasta(path):
        cdrs = find_cdrs(r.sequence)
        if cdrs is None:
            raise UnmaskError(f"{path}: {r.name[:40]!r}: no heavy-chain CDR anchors (Cys22, W[VIFL][RK]Q, "
                              "FR3 [RK][FVAILG][TSIVAF][IFLMVA][STNRD], YYC…WGxG)")
        out.append(Antibody(r.name, r.sequence, cdrs))
    return out


def heavy_chains(records: list[Record]) -> list[Record]:
    """UniProt "Ig heavy chain V region" entries (accessions P01xxx) that are whole variable domains: only
    the 20 standard residues, no signal peptide (not starting with Met), all three CDR anchors found;
    one record per distinct sequence, sorted by accession."""
    seen: dict[str, str] = {}
    for r in records:
        if re.fullmatch(r"P01\d{3}", r.name) and set(r.sequence) <= set(AMINO_ACIDS) and not r.sequence.startswith("M") \
                and find_cdrs(r.sequence) is not None:
            seen.setdefault(r.sequence, r.name)
    return sorted((Record(name, seq) for seq, name in seen.items()), key=lambda r: r.name)


@dataclass(frozen=True)
class AntibodyTask:
    """Infill the chosen CDRs of real antibodies; "right" means every CDR residue recovered."""

    max_len: int = 150  # positions of the model (variable domains are shorter)
    cdrs: tuple[str, ...] = CDR_NAMES  # which CDRs are masked
    name: str = NAME
    unit: str = "antibody"
    default_model = None  # no shipped antibody model: give --model hf:DIR (see `unmask proteins import`)
    outcome_reward = False  # `score` asks for every CDR residue recovered exactly: almost never, no signal

    def __post_init__(self) -> None:
        unknown = set(self.cdrs) - set(CDR_NAMES)
        if unknown or not self.cdrs:
            raise UnmaskError(f"CDRs must be among {', '.join(CDR_NAMES)}, got {', '.join(self.cdrs) or 'none'}")
        twice = sorted({c for c in self.cdrs if self.cdrs.count(c) > 1})
        if twice:  # (a CDR listed twice would count twice in the recovery and diversity averages)
            raise UnmaskError(f"CDRs: {', '.join(twice)} given more than once; list each CDR once")

    @classmethod
    def for_model(cls, cfg) -> AntibodyTask:
        return cls(cfg.seq_len)

    def read(self, path) -> list[Antibody]:
        return refuse_long(path, read_antibodies(path), self.max_len)

    def check_model(self, denoiser: Denoiser) -> None:
        check_protein_model(denoiser)

    def masked(self, antibodies: list[Antibody]) -> torch.Tensor:
        """``(N, max_len)`` bool: the positions of the chosen CDRs."""
        out = torch.zeros(len(antibodies), self.max_len, dtype=torch.bool)
        for k, a in enumerate(antibodies):
            for name in self.cdrs:
                lo, hi = a.cdrs[name]
                out[k, lo:hi] = True
        return out

    def targets(self, antibodies: list[Antibody]) -> torch.Tensor:
        return encode_residues([a.sequence for a in antibodies], self.max_len)

    def encode(self, antibodies: list[Antibody]) -> torch.Tensor:
        return torch.where(self.masked(antibodies), MASK_ID, self.targets(antibodies))

    def score(self, tokens: torch.Tensor, antibodies: list[Antibody]) -> torch.Tensor:
        return torch.tensor([s == a.sequence for s, a in zip(decode_residues(tokens), antibodies)])

    def show(self, tokens: torch.Tensor, antibodies: list[Antibody], k: int) -> list[dict]:
        out = []
        for a, s in zip(antibodies[:k], decode_residues(tokens[:k])):
            out.append({"name": a.name, **{c: {"true": a.sequence[slice(*a.cdrs[c])], "infilled": s[slice(*a.cdrs[c])]}
                                           for c in self.cdrs}})
        return out

    def related_pairs(self) -> None:
        return None

    def board(self, tokens: torch.Tensor) -> Board:
        """Rows of 10 residues; the framework shows its letters, the masked CDR cells are blank."""
        cols = 10
        n = int((tokens != EOS_ID).sum())
        rows = -(-n // cols)
        labels = [AMINO_ACIDS[i] if i < VOCAB_SIZE else "" for i in tokens[:n].tolist()]
        pos = torch.cat([torch.arange(n), torch.full((rows * cols - n,), -1)])
        return Board((rows, cols), pos, labels + [""] * (rows * cols - n))

    def parse_position(self, text: str, tokens: torch.Tensor) -> int:
        return parse_residue(text, tokens)


@torch.no_grad()
def pseudo_log_likelihood(denoiser: Denoiser, tokens: torch.Tensor, positions: torch.Tensor, batch: int = 64) -> torch.Tensor:
    """``(N,)`` mean log p(x_i | x_{−i}) over the ``positions`` ``(N, L)`` of each sequence ``tokens`` ``(N, L)``
    (each position masked alone: one pass per position; Salazar et al., 2020)."""
    rows, cols = positions.nonzero(as_tuple=True)  # (R,) one masked copy per judged position
    logp = torch.empty(len(rows))
    for lo in range(0, len(rows), batch):
        r, c = rows[lo : lo + batch], cols[lo : lo + batch]
        x = tokens[r].clone()
        x[torch.arange(len(r)), c] = MASK_ID
        logits = denoiser(x.to(denoiser.device)).logits.float().cpu()  # (b, L, V)
        picked = logits[torch.arange(len(r)), c]  # (b, V)
        logp[lo : lo + batch] = F.log_softmax(picked, -1).gather(1, tokens[r, c][:, None])[:, 0]
    total = torch.zeros(len(tokens)).index_add_(0, rows, logp)
    return total / positions.sum(1).clamp(min=1)
