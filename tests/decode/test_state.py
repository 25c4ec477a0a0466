"""take_top: the shared ranking helper every ranked policy reveals through."""

from __future__ import annotations

import torch

from unmask.decode.state import take_top


def test_take_top_breaks_ties_by_lower_position_and_skips_unmasked():
    # Row 0: positions 1, 2, 4 tie at the top, 0 is higher but given; k = 2 takes 1 and 2.
    # Row 1: all tie; k = 3 takes the three lowest masked positions (0 is given).
    score = torch.tensor([[9.0, 0.5, 0.5, 0.1, 0.5], [0.3, 0.3, 0.3, 0.3, 0.3]])
    masked = torch.tensor([[False, True, True, True, True], [False, True, True, True, True]])
    got = take_top(score, masked, torch.tensor([2, 3]))
    assert got.tolist() == [[False, True, True, False, False], [False, True, True, True, False]]


def test_take_top_takes_all_masked_when_k_exceeds_them():
    score = torch.tensor([[0.2, 0.1, 0.3]])
    masked = torch.tensor([[True, False, True]])
    assert take_top(score, masked, torch.tensor([5])).tolist() == [[True, False, True]]
