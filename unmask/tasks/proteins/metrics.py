"""How close a set of generated proteins is to real ones (the first reference paper's metric and more).

- Jensen–Shannon divergence (natural log, so 0 ≤ JSD ≤ ln 2) between the amino-acid frequencies of
  two sets, as in the paper, and between their dipeptide frequencies (order-1 structure);
- the share of distinct sequences (a collapsed sampler repeats itself);
- the nearest-neighbour identity of each generated sequence to the training set, by ``mmseqs
  easy-search``, so that memorisation shows.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import torch

from unmask.tasks.proteins.fasta import AMINO_ACIDS, RESIDUE_INDEX, Record

N = len(AMINO_ACIDS)


def residue_counts(sequences: list[str]) -> torch.Tensor:
    """``(20,)`` float64 counts of each residue over all sequences."""
    ids = torch.tensor([RESIDUE_INDEX[c] for s in sequences for c in s], dtype=torch.long)
    return torch.bincount(ids, minlength=N).double()


def dipeptide_counts(sequences: list[str]) -> torch.Tensor:
    """``(400,)`` float64 counts of each ordered pair of neighbouring residues."""
    pairs = [RESIDUE_INDEX[a] * N + RESIDUE_INDEX[b] for s in sequences for a, b in zip(s, s[1:])]
    return torch.bincount(torch.tensor(pairs, dtype=torch.long), minlength=N * N).double()


def jsd(p: torch.Tensor, q: torch.Tensor) -> float:
    """Jensen–Shannon divergence in nats between two count (or probability) vectors."""
    p, q = p.double() / p.sum(), q.double() / q.sum()
    m = 0.5 * (p + q)

    def kl(a: torch.Tensor) -> torch.Tensor:
        nz = a > 0
        return (a[nz] * (a[nz] / m[nz]).log()).sum()

    return float(min(max(0.5 * kl(p) + 0.5 * kl(q), 0.0), math.log(2)))


def distinct_share(sequences: list[str]) -> float:
    """Share of the sequences that are distinct (1.0: no repeats)."""
    return len(set(sequences)) / max(len(sequences), 1)


def compare_sets(generated: list[str], reference: list[str]) -> dict[str, float]:
    """Amino-acid and dipeptide JSD of ``generated`` against ``reference``, and its distinct share."""
    return {
        "jsd_aa": jsd(residue_counts(generated), residue_counts(reference)),
        "jsd_dipeptide": jsd(dipeptide_counts(generated), dipeptide_counts(reference)),
        "distinct": distinct_share(generated),
        "mean_length": sum(map(len, generated)) / max(len(generated), 1),
    }


def nearest_identity(generated: list[str], train: list[Record]) -> dict[str, float]:
    """Identity of each generated sequence's best ``mmseqs easy-search`` hit in ``train``: the mean
    (0 for a sequence without a hit), the share with a hit at all, and the share ≥ 90 % identical."""
    from unmask.tasks.proteins.uniprot import hits

    query = [Record(f"g{k}", s) for k, s in enumerate(generated)]
    with tempfile.TemporaryDirectory() as tmp:
        best = hits(query, train, min_seq_id=0.0, coverage=0.0, work=Path(tmp))
    ident = [best.get(r.name, 0.0) for r in query]
    n = max(len(ident), 1)
    return {"nn_identity": sum(ident) / n, "nn_hit_share": sum(1 for r in query if r.name in best) / n,
            "nn_identity_90": sum(1 for v in ident if v >= 0.9) / n}
