"""Sudoku grids (data.py): validity, scoring, parsing and formatting one grid, tokens, clashing givens."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tasks.sudoku.puzzles import QUIZZES, SOLUTIONS
from unmask.errors import UnmaskError
from unmask.tasks.sudoku.data import (
    MASK_ID,
    POSITION_FEATURES,
    VOCAB_SIZE,
    SudokuSet,
    format_grid,
    from_tokens,
    givens_clash,
    is_valid_solution,
    parse_grid,
    score,
    to_tokens,
)
from unmask.tasks.sudoku.grid import ROW, count_solutions, solve

BOX_BREAKER = np.array([(r + c) % 9 + 1 for r in range(9) for c in range(9)], dtype=np.int8)


def one(grid, quiz=None) -> bool:
    """is_valid_solution on a single grid."""
    g = np.asarray(grid)[None]
    q = np.zeros_like(g) if quiz is None else np.asarray(quiz)[None]
    return bool(is_valid_solution(g, q)[0])


def grid_str(g) -> str:
    return format_grid(g)


# --- is_valid_solution ---------------------------------------------------------------------------


def test_valid_solutions_are_accepted():
    ok = is_valid_solution(SOLUTIONS, QUIZZES)
    assert ok.dtype == bool and ok.shape == (6,) and ok.all()
    assert is_valid_solution(SOLUTIONS, np.zeros_like(QUIZZES)).all()
    assert is_valid_solution(SOLUTIONS, SOLUTIONS).all()
    # lists work too
    assert is_valid_solution(SOLUTIONS.tolist(), QUIZZES.tolist()).all()


def test_swap_within_a_row_is_rejected():
    for s in SOLUTIONS:
        bad = s.copy()
        # cells 0 and 4 lie in different boxes and columns: the row stays a permutation
        bad[0], bad[4] = bad[4], bad[0]
        assert sorted(bad[:9]) == list(range(1, 10))
        assert not one(bad)
        # a swap inside a box: rows and the box stay permutations, the columns break
        bad = s.copy()
        bad[0], bad[1] = bad[1], bad[0]
        assert not one(bad)


def test_latin_square_that_breaks_boxes_is_rejected():
    g = BOX_BREAKER.reshape(9, 9)
    assert all(sorted(row) == list(range(1, 10)) for row in g)
    assert all(sorted(col) == list(range(1, 10)) for col in g.T)
    assert not one(BOX_BREAKER)
    # a Latin square whose boxes are also fine is the usual pattern grid, and it is accepted
    pattern = np.array([(3 * (r % 3) + r // 3 + c) % 9 + 1 for r in range(9) for c in range(9)])
    assert one(pattern)


def test_changed_given_and_zero_and_out_of_range_are_rejected():
    q, s = QUIZZES[0], SOLUTIONS[0]
    assert one(s, q)
    given_cell = int(np.flatnonzero(q)[0])
    other = q.copy()
    other[given_cell] = q[given_cell] % 9 + 1  # the puzzle now asks for a different digit there
    assert not one(s, other)
    with_zero = s.copy()
    with_zero[int(np.flatnonzero(q == 0)[0])] = 0
    assert not one(with_zero, q)
    assert not one(np.zeros(81, dtype=np.int8))
    shifted = s.astype(np.int64) + 1  # values 2..10: every unit still has nine distinct values
    assert not one(shifted)
    mixed = np.stack([s, with_zero, BOX_BREAKER, SOLUTIONS[1]])
    np.testing.assert_array_equal(
        is_valid_solution(mixed, np.stack([q, q, np.zeros(81, np.int8), QUIZZES[1]])),
        [True, False, False, True],
    )


def test_validity_uses_values_not_identity():
    # Equal-valued but distinct objects and wrong grids of the right type must be told apart.
    wrong = np.full((3, 81), 5, dtype=np.int8)
    assert not is_valid_solution(wrong, np.zeros_like(wrong)).any()
    assert is_valid_solution(SOLUTIONS.copy(), QUIZZES.copy()).all()


# --- score -------------------------------------------------------------------------------------


def _other_solution():
    """A 16-given puzzle (never unique) and a valid completion differing from the stored one."""
    q, s = QUIZZES[0].tolist(), SOLUTIONS[0].tolist()
    keep = [i for i in range(81) if q[i]][:16]
    sparse = [s[i] if i in keep else 0 for i in range(81)]
    assert count_solutions(sparse, 2) == 2
    for seed in range(50):
        alt = solve(sparse, random.Random(seed))
        if alt != s:
            return np.array(sparse, np.int8), np.array(s, np.int8), np.array(alt, np.int8)
    raise AssertionError("no second solution found")


def test_score_exact_match_when_solutions_are_known():
    sparse, s, alt = _other_solution()
    assert one(alt, sparse) and one(s, sparse)
    data = SudokuSet(np.stack([sparse, sparse]), np.stack([s, s]))
    np.testing.assert_array_equal(score(np.stack([s, alt]), data), [True, False])
    # without solutions, any valid completion counts
    blind = SudokuSet(np.stack([sparse, sparse]), None)
    np.testing.assert_array_equal(score(np.stack([s, alt]), blind), [True, True])


def test_score_on_a_set():
    data = SudokuSet(QUIZZES, SOLUTIONS)
    assert len(data) == 6
    assert score(SOLUTIONS, data).all()
    grids = SOLUTIONS.copy()
    grids[2, 40] = grids[2, 40] % 9 + 1
    grids[4] = QUIZZES[4]  # unfinished
    np.testing.assert_array_equal(score(grids, data), [True, True, False, True, False, True])
    blind = SudokuSet(QUIZZES, None)
    np.testing.assert_array_equal(score(grids, blind), [True, True, False, True, False, True])
    # validity mode also refuses a valid grid that ignores the givens
    np.testing.assert_array_equal(score(SOLUTIONS[[1, 0]], SudokuSet(QUIZZES[:2], None)), [False, False])
    np.testing.assert_array_equal(score(SOLUTIONS[[1, 0]], SudokuSet(QUIZZES[:2], SOLUTIONS[:2])), [False, False])


# --- parse_grid / format_grid ------------------------------------------------------------------

NEAR_GRIDS = st.text(alphabet="0123456789. \t\nx-", min_size=78, max_size=85)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), NEAR_GRIDS, st.binary().map(lambda b: b.decode("latin-1"))))
def test_parse_grid_never_crashes(text):
    try:
        g = parse_grid(text)
    except UnmaskError:
        stripped = text.strip()
        assert len(stripped) != 81 or set(stripped) - set("0123456789.")
        return
    assert isinstance(g, np.ndarray) and g.shape == (81,) and g.dtype == np.int8
    assert g.min() >= 0 and g.max() <= 9
    assert format_grid(g) == text.strip().replace(".", "0")


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="0123456789.", min_size=81, max_size=81),
    st.text(alphabet=" \t\r\n", max_size=3),
    st.text(alphabet=" \t\r\n", max_size=3),
)
def test_parse_grid_accepts_every_well_formed_grid(body, left, right):
    g = parse_grid(left + body + right)
    expected = [0 if ch == "." else int(ch) for ch in body]
    assert g.tolist() == expected
    assert format_grid(g) == body.replace(".", "0")
    assert parse_grid(format_grid(g)).tolist() == expected
    if "0" in body or "." in body:
        with pytest.raises(UnmaskError, match="blanks"):
            parse_grid(body, allow_blanks=False)
    else:
        assert parse_grid(body, allow_blanks=False).tolist() == expected


def test_parse_grid_errors():
    good = grid_str(SOLUTIONS[0])
    with pytest.raises(UnmaskError, match="81 characters, got 80"):
        parse_grid(good[:80])
    with pytest.raises(UnmaskError, match="81 characters, got 82"):
        parse_grid(good + "1")
    with pytest.raises(UnmaskError, match="'x'"):
        parse_grid(good[:40] + "x" + good[41:])
    with pytest.raises(UnmaskError):
        parse_grid(good[:40] + "٣" + good[41:])  # a non-ASCII digit
    with pytest.raises(UnmaskError):
        parse_grid(good[:40] + "-" + good[41:])
    assert parse_grid(good, allow_blanks=False).tolist() == SOLUTIONS[0].tolist()


def test_format_grid():
    assert format_grid([0] * 81) == "0" * 81
    assert format_grid(np.arange(81) % 10) == "0123456789" * 8 + "0"
    assert format_grid(torch.tensor(SOLUTIONS[0].astype(np.int64))) == grid_str(SOLUTIONS[0])


# --- tokens ------------------------------------------------------------------------------------


def test_token_constants():
    assert VOCAB_SIZE == 9 and MASK_ID == 9
    assert POSITION_FEATURES.shape == (81, 3)
    assert POSITION_FEATURES[0].tolist() == [0, 0, 0]
    assert POSITION_FEATURES[80].tolist() == [8, 8, 8]
    assert POSITION_FEATURES[5 * 9 + 7].tolist() == [5, 7, 5]


def test_to_tokens_and_back():
    t = to_tokens(QUIZZES)
    assert t.dtype == torch.long and t.shape == (6, 81)
    blank = torch.as_tensor(QUIZZES == 0)
    assert (t[blank] == MASK_ID).all()
    assert torch.equal(t[~blank], torch.as_tensor(QUIZZES.astype(np.int64))[~blank] - 1)
    assert int(t.min()) >= 0 and int(t.max()) <= MASK_ID
    back = from_tokens(t)
    assert back.dtype == np.int8
    np.testing.assert_array_equal(back, QUIZZES)
    sol = to_tokens(SOLUTIONS)
    assert (sol < VOCAB_SIZE).all()
    np.testing.assert_array_equal(from_tokens(sol), SOLUTIONS)
    assert to_tokens([[0, 1, 9]]).tolist() == [[MASK_ID, 0, 8]]
    assert from_tokens(torch.tensor([[MASK_ID, 0, 8]], dtype=torch.int32)).tolist() == [[0, 1, 9]]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 9), min_size=81, max_size=81), min_size=1, max_size=4))
def test_token_round_trip_property(grids):
    g = np.array(grids, dtype=np.int8)
    t = to_tokens(g)
    assert ((t == MASK_ID) == torch.as_tensor(g == 0)).all()
    np.testing.assert_array_equal(from_tokens(t), g)
    assert torch.equal(to_tokens(from_tokens(t)), t)


# --- givens_clash ------------------------------------------------------------------------------


def test_givens_clash():
    def with_two(i, j, d=4):
        g = np.zeros(81, dtype=np.int8)
        g[i] = g[j] = d
        return g

    row = with_two(9 * 4 + 0, 9 * 4 + 8)
    col = with_two(3, 9 * 8 + 3)
    box = with_two(9 * 3 + 3, 9 * 5 + 5)  # (3,3) and (5,5): same box, other row and column
    fine = with_two(0, 9 * 4 + 4)  # (0,0) and (4,4): no shared unit
    assert givens_clash(np.stack([row, col, box, fine])).tolist() == [True, True, True, False]
    assert not givens_clash(QUIZZES).any()
    assert not givens_clash(SOLUTIONS).any()
    assert not givens_clash(np.zeros((2, 81), np.int8)).any()
    assert givens_clash(BOX_BREAKER[None]).tolist() == [True]
    # a clash inside a real puzzle
    q = QUIZZES[0].copy()
    given_cell = int(np.flatnonzero(q)[0])
    peer = next(i for i in range(81) if i != given_cell and ROW[i] == ROW[given_cell] and q[i] == 0)
    q[peer] = q[given_cell]
    assert givens_clash(np.stack([QUIZZES[0], q])).tolist() == [False, True]
