"""How far a set's residue and dipeptide frequencies are from the real set's, and how far two halves of the
real set already are from each other (the noise floor below which a difference means nothing).

The divergence is the Jensen–Shannon divergence in nats (natural log, so 0 <= JSD <= ln 2), between
frequencies pooled over each set, as in the first reference paper (arXiv 2605.20187); the counting and
the JSD are :mod:`unmask.tasks.proteins.metrics`' own.

**Split-half floor.** A finite real set is not its own distribution: two random halves of it differ too.
:func:`split_half_floor` draws ``rounds`` random halvings of the real set, each a fresh permutation
from ``random.Random(seed)``; each compares its first ``n // 2`` sequences with the next ``n // 2``
(for an odd ``n``, one sequence sits out of that round). It reports the mean JSD over the rounds and its
sample standard deviation (ddof 1), for residues and dipeptides. A generated set's JSD to the real set
near this floor is as close as the real set's size can show. (The floor is for two sets of ``n // 2``;
JSD's small-sample bias shrinks as sets grow, so a generated set of several hundred against all ``n``
real ones sits somewhat lower for the same distribution: the floor is conservative.)
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from unmask.errors import UnmaskError
from unmask.tasks.proteins.fasta import AMINO_ACIDS
from unmask.tasks.proteins.metrics import dipeptide_counts, jsd, residue_counts


def _check(sequences: list[str], what: str) -> None:
    if not sequences:
        raise UnmaskError(f"{what}: no sequences")
    bad = next((s for s in sequences if set(s) - set(AMINO_ACIDS)), None)
    if bad is not None:
        raise UnmaskError(f"{what}: {bad[:30]!r} has residues outside the 20 standard amino acids")


def composition_jsd(a: list[str], b: list[str]) -> dict[str, float]:
    """``{"jsd_aa", "jsd_dipeptide"}``: JSD in nats between the pooled residue (and ordered neighbouring-pair)
    frequencies of the sets ``a`` and ``b``. Symmetric; 0 for equal frequencies; at most ln 2."""
    _check(a, "composition_jsd")
    _check(b, "composition_jsd")
    return {"jsd_aa": jsd(residue_counts(a), residue_counts(b)),
            "jsd_dipeptide": jsd(dipeptide_counts(a), dipeptide_counts(b))}


@dataclass(frozen=True)
class Floor:
    """The split-half noise floor of a real set (see the module docstring for how halves are drawn)."""

    jsd_aa: float  # mean residue JSD between two random halves
    jsd_aa_sd: float  # its sample standard deviation over the rounds
    jsd_dipeptide: float  # mean dipeptide JSD between two random halves
    jsd_dipeptide_sd: float  # its sample standard deviation over the rounds
    half: int  # sequences in each half (n // 2)
    rounds: int  # random halvings drawn
    seed: int  # seed of the random.Random that drew them


def split_half_floor(sequences: list[str], rounds: int = 20, seed: int = 0) -> Floor:
    """The :class:`Floor` of ``sequences`` over ``rounds`` seeded random halvings."""
    _check(sequences, "split_half_floor")
    if len(sequences) < 4 or rounds < 2:
        raise UnmaskError(f"split_half_floor needs >= 4 sequences and >= 2 rounds, got {len(sequences)} and {rounds}")
    rng, half = random.Random(seed), len(sequences) // 2
    aa, di = [], []
    for _ in range(rounds):
        order = rng.sample(range(len(sequences)), len(sequences))  # a fresh random permutation
        d = composition_jsd([sequences[k] for k in order[:half]], [sequences[k] for k in order[half : 2 * half]])
        aa.append(d["jsd_aa"])
        di.append(d["jsd_dipeptide"])
    return Floor(statistics.fmean(aa), statistics.stdev(aa), statistics.fmean(di), statistics.stdev(di), half, rounds, seed)
