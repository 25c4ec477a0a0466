"""MI maps and a structure score: does the model's MI follow the rules of the task?

The task supplies the pairs its rules relate (:meth:`unmask.tasks.base.Task.related_pairs`); for
Sudoku these are "peer" pairs (same row, column or box: 20 of a cell's 80 others, 25 %).
The structure score is the share of MI mass, and of the top-k pairs, that falls on peer pairs,
beside the chance level for the same candidate pairs — the quantitative form of Sharma, Wang, Li
2026 (arXiv 2605.20187)'s "the MI maps show rows, columns and boxes without being told".
"""

from __future__ import annotations

import torch


def structure_score(mi: torch.Tensor, pairs: torch.Tensor, related: torch.Tensor, k: int = 20) -> dict:
    """Share of MI on ``related`` pairs.

    Args:
        mi: ``(S, L, L)`` MI matrices (exact or estimated); pairs: ``(S, L, L)`` bool candidate pairs;
        related: ``(L, L)`` bool pairs the rules connect.
    Returns ``mass`` (share of MI mass on related pairs), ``topk`` (share of each state's k highest-MI
    pairs that are related) and ``chance`` (share of candidate pairs that are related).
    """
    rel = related[None].expand_as(pairs)
    m = mi.clamp_min(0) * pairs
    mass = float((m * rel).sum() / m.sum().clamp_min(1e-12))
    some = pairs.flatten(1).any(1)  # states with at least one candidate pair
    flat = m.masked_fill(~pairs, float("-inf")).flatten(1)[some]
    kk = max(1, min(k, int(pairs.flatten(1).sum(1)[some].min()))) if some.any() else 1
    top = flat.topk(kk, 1).indices
    topk = float(rel.flatten(1)[some].gather(1, top).double().mean()) if some.any() else float("nan")
    chance = float((pairs & rel).sum() / pairs.sum().clamp_min(1))
    return {"mass": mass, "topk": topk, "chance": chance}
