"""All the judges on one set of generated heavy chains, against the real ones: one row of the table."""

from __future__ import annotations

import math
import statistics
from collections import Counter

from unmask.tasks.proteins.judges.composition import composition_jsd, split_half_floor
from unmask.tasks.proteins.judges.humanness import humanness
from unmask.tasks.proteins.judges.identity import diversity, novelty
from unmask.tasks.proteins.judges.numbering import heavy_share, number
from unmask.tasks.proteins.metrics import distinct_share


def _mean(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.fmean(kept) if kept else math.nan


def judge_heavy_chains(generated: list[str], real: list[str], rounds: int = 20, seed: int = 0,
                       with_humanness: bool = False, max_pairs: int | None = None) -> dict:
    """The judges' verdict on ``generated`` against ``real`` (both lists of residues):

    - ``n``, ``n_real``, ``distinct`` (share of distinct sequences), ``mean_length``;
    - ``jsd_aa``, ``jsd_dipeptide`` to the real set, and the real set's split-half floor
      (``floor_jsd_aa`` ± ``floor_jsd_aa_sd``, ``floor_jsd_dipeptide`` ± ``..._sd``; ``rounds`` halvings, ``seed``);
    - ``heavy_share``: share ANARCI numbers as a heavy-chain variable domain; among those,
      ``v_identity`` / ``j_identity`` (mean identity to the closest germline) and ``v_species``
      (count of each closest germline's species);
    - ``diversity``: mean pairwise identity within the generated set (``max_pairs``: a seeded sample);
    - ``novelty``: mean over generated sequences of the highest identity to a real one, and
      ``novelty_copies``: the share at identity >= 0.99 (a real chain copied, give or take a residue);
    - with ``with_humanness``: ``humanness``, AntPack's mean human log-likelihood (needs AntPack).
    """
    floor = split_half_floor(real, rounds, seed)
    numbered = number(generated)
    heavy = [n for n in numbered if n.is_heavy]
    nearest = novelty(generated, real)
    out = {
        "n": len(generated), "n_real": len(real), "distinct": distinct_share(generated),
        "mean_length": statistics.fmean(map(len, generated)),
        **composition_jsd(generated, real),
        "floor_jsd_aa": floor.jsd_aa, "floor_jsd_aa_sd": floor.jsd_aa_sd,
        "floor_jsd_dipeptide": floor.jsd_dipeptide, "floor_jsd_dipeptide_sd": floor.jsd_dipeptide_sd,
        "heavy_share": heavy_share(numbered),
        "v_identity": _mean([n.v_identity for n in heavy]), "j_identity": _mean([n.j_identity for n in heavy]),
        "v_species": dict(sorted(Counter(n.v_species or "none" for n in heavy).items())),
        "diversity": diversity(generated, max_pairs, seed) if len(generated) > 1 else math.nan,
        "novelty": float(nearest.mean()), "novelty_copies": float((nearest >= 0.99).double().mean()),
    }
    if with_humanness:
        out["humanness"] = _mean(humanness(generated).tolist())
    return out
