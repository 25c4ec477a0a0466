"""Sudoku symmetry augmentation (data.py): solutions stay solutions, puzzles follow their solutions,
masks stay masks, and the draws are seeded and pinned."""

from __future__ import annotations

import numpy as np
import torch

from tests.tasks.sudoku.puzzles import QUIZZES, SOLUTIONS
from unmask.tasks.sudoku.data import (
    MASK_ID,
    VOCAB_SIZE,
    augment,
    augment_pairs,
    from_tokens,
    givens_clash,
    is_valid_solution,
    to_tokens,
)
from unmask.tasks.sudoku.grid import BOX, COL, ROW, count_solutions


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_augment_keeps_solutions_valid():
    tokens = to_tokens(np.repeat(SOLUTIONS, 20, axis=0))  # (120, 81)
    before = tokens.clone()
    out = augment(tokens, gen(0))
    assert torch.equal(tokens, before)  # input untouched
    assert out.shape == tokens.shape and out.dtype == tokens.dtype
    grids = from_tokens(out)
    assert is_valid_solution(grids, np.zeros_like(grids)).all()
    assert not torch.equal(out, tokens)
    # each solution still has nine of every digit
    for row in out:
        assert torch.bincount(row, minlength=VOCAB_SIZE).tolist() == [9] * 9


def test_augment_is_seeded():
    tokens = to_tokens(np.repeat(SOLUTIONS, 3, axis=0))
    a = augment(tokens, gen(7))
    assert torch.equal(a, augment(tokens, gen(7)))
    assert not torch.equal(a, augment(tokens, gen(8)))
    g = gen(7)
    first, second = augment(tokens, g), augment(tokens, g)
    assert torch.equal(first, a) and not torch.equal(first, second)


def test_augment_rows_get_different_transforms():
    tokens = to_tokens(np.repeat(SOLUTIONS[:1], 32, axis=0))
    out = augment(tokens, gen(1))
    assert len({tuple(r.tolist()) for r in out}) == 32
    assert all(not torch.equal(r, tokens[0]) for r in out)


def test_augment_masked_puzzles_follow_their_solutions():
    quiz, sol = to_tokens(np.repeat(QUIZZES, 4, axis=0)), to_tokens(np.repeat(SOLUTIONS, 4, axis=0))
    # the draws do not depend on the token values: the same seed applies the same symmetry
    aq, as_ = augment(quiz, gen(3)), augment(sol, gen(3))
    masked = quiz == MASK_ID
    assert torch.equal((aq == MASK_ID).sum(1), masked.sum(1))  # as many masks per row
    assert ((aq < VOCAB_SIZE) | (aq == MASK_ID)).all()
    keep = aq != MASK_ID
    assert torch.equal(aq[keep], as_[keep])  # every remaining given agrees with the solution
    q, s = from_tokens(aq), from_tokens(as_)
    assert is_valid_solution(s, q).all()
    assert not givens_clash(q).any()
    for k in range(0, len(q), 5):  # a symmetry keeps the puzzle uniquely solvable
        assert count_solutions(q[k].tolist(), 2) == 1
    # per row, the multiset of digit counts among the givens is preserved (digits are relabelled)
    for a, b in zip(quiz, aq):
        ca = sorted(torch.bincount(a, minlength=MASK_ID + 1)[:VOCAB_SIZE].tolist())
        cb = sorted(torch.bincount(b, minlength=MASK_ID + 1)[:VOCAB_SIZE].tolist())
        assert ca == cb


def test_augment_never_turns_a_mask_into_a_digit():
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, MASK_ID + 1, (64, 81), generator=g)  # arbitrary tokens, many masks
    out = augment(tokens, gen(5))
    assert torch.equal((out == MASK_ID).sum(1), (tokens == MASK_ID).sum(1))
    all_mask = torch.full((3, 81), MASK_ID)
    assert torch.equal(augment(all_mask, gen(0)), all_mask)


def _probe(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long).repeat(200, 1)


def test_augment_moves_rows_bands_and_boxes_as_units():
    out = augment(_probe(ROW), gen(11)).view(-1, 9, 9)
    row_const = (out == out[:, :, :1]).all(dim=(1, 2))
    col_const = (out == out[:, :1, :]).all(dim=(1, 2))
    assert (row_const ^ col_const).all()  # rows go to rows, or (transposed) to columns
    assert 40 < int(col_const.sum()) < 160  # the transpose is drawn about half the time
    lines = torch.where(row_const[:, None], out[:, :, 0], out[:, 0, :])  # (B, 9)
    assert (lines.sort(dim=1).values == torch.arange(9)).all()
    # all nine labels appear at cell 0 across draws (digit relabelling + row moves)
    assert len(set(out[:, 0, 0].tolist())) == 9

    bands = augment(_probe([r // 3 for r in ROW]), gen(12)).view(-1, 9, 9)
    for b in bands:
        line = b[:, 0] if (b == b[:, :1]).all() else b[0, :]
        blocks = line.view(3, 3)
        assert (blocks == blocks[:, :1]).all()  # three consecutive lines come from one band
        assert len(set(blocks[:, 0].tolist())) == 3
    # tokens 0, 1, 2 are relabelled independently per row: the set of labels they get varies
    assert len({frozenset(b.unique().tolist()) for b in bands}) > 10

    boxes = augment(_probe(BOX), gen(13))
    for b in boxes:
        labels = [set(b[[i for i in range(81) if BOX[i] == k]].tolist()) for k in range(9)]
        assert all(len(s) == 1 for s in labels)  # every box comes from a single box
        assert len(set().union(*labels)) == 9

    cols = augment(_probe(COL), gen(14)).view(-1, 9, 9)
    row_const = (cols == cols[:, :, :1]).all(dim=(1, 2))
    col_const = (cols == cols[:, :1, :]).all(dim=(1, 2))
    assert (row_const ^ col_const).all() and row_const.any() and col_const.any()


def test_augment_pairs_draws_one_symmetry_for_a_puzzle_and_its_solution():
    quiz, sol = to_tokens(np.repeat(QUIZZES, 4, axis=0)), to_tokens(np.repeat(SOLUTIONS, 4, axis=0))
    g = gen(3)
    aq, as_ = augment_pairs(quiz, sol, g)
    assert torch.equal(aq, augment(quiz, gen(3))) and torch.equal(as_, augment(sol, gen(3)))
    assert not torch.equal(augment_pairs(quiz, sol, g)[0], aq)  # the generator moved on once
    q, s = from_tokens(aq), from_tokens(as_)
    assert is_valid_solution(s, q).all()


def test_augment_draws_are_pinned():
    """The symmetries drawn for a seed are fixed (a resumed or re-run training reads the same batches):
    pinned to the value of the code before the puzzle/solution split (commit 717a9ef)."""
    import hashlib

    out = augment(to_tokens(np.repeat(SOLUTIONS, 3, axis=0)), gen(0))
    assert hashlib.sha256(out.numpy().astype(np.int64).tobytes()).hexdigest()[:16] == "78da42b6622c82ae"
