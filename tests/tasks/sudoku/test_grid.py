"""The Sudoku solver, puzzle generator, singles solver and difficulty labels (grid.py, generate.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from unmask.errors import UnmaskError
from unmask.tasks.sudoku.data import givens_clash, is_valid_solution
from unmask.tasks.sudoku.generate import PRESETS, generate, widened_set
from unmask.tasks.sudoku.grid import (
    BOX,
    COL,
    PEERS,
    ROW,
    UNITS,
    PuzzleSpec,
    count_solutions,
    is_easy,
    make_puzzle,
    puzzle_rng,
    random_solution,
    singles_rounds,
    solutions,
    solve,
    solve_with_singles,
    widen,
)

# A published, well-known puzzle with a unique solution (Wikipedia's Sudoku article).
WIKI_PUZZLE = [int(c) for c in (
    "530070000600195000098000060800060003400803001700020006060000280000419005000080079"
)]
WIKI_SOLUTION = [int(c) for c in (
    "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
)]


def valid(grid, quiz=None) -> bool:
    g = np.array([grid])
    q = np.zeros_like(g) if quiz is None else np.array([quiz])
    return bool(is_valid_solution(g, q)[0])


def givens(puzzle) -> int:
    return sum(1 for v in puzzle if v)


@pytest.fixture(scope="module")
def kaggle_pairs():
    return [make_puzzle(PRESETS["kaggle"], puzzle_rng(11, k)) for k in range(8)]


# --- geometry -----------------------------------------------------------------------------------


def test_units_and_peers_geometry():
    assert len(UNITS) == 27 and all(len(u) == 9 and len(set(u)) == 9 for u in UNITS)
    # every cell lies in exactly one row, one column and one box unit
    for i in range(81):
        holding = [k for k, u in enumerate(UNITS) if i in u]
        assert holding == [ROW[i], 9 + COL[i], 18 + BOX[i]]
    # 8 row + 8 column + 4 more box cells = 20 peers, never the cell itself
    assert all(len(PEERS[i]) == 20 and i not in PEERS[i] for i in range(81))
    assert BOX[0] == 0 and BOX[8] == 2 and BOX[30] == 4 and BOX[80] == 8 and BOX[27] == 3


# --- solver -------------------------------------------------------------------------------------


def test_solver_on_a_known_puzzle():
    assert valid(WIKI_SOLUTION, WIKI_PUZZLE)
    assert count_solutions(WIKI_PUZZLE) == 1
    assert solve(WIKI_PUZZLE) == WIKI_SOLUTION
    assert solve(WIKI_PUZZLE, random.Random(3)) == WIKI_SOLUTION
    assert WIKI_PUZZLE == [int(c) for c in "530070000600195000098000060800060003400803001700020006060000280000419005000080079"]


def test_count_solutions_zero_for_clashing_givens():
    row_clash = [0] * 81
    row_clash[0] = row_clash[8] = 5
    col_clash = [0] * 81
    col_clash[4] = col_clash[76] = 2
    box_clash = [0] * 81
    box_clash[0] = box_clash[20] = 9  # (0,0) and (2,2)
    for g in (row_clash, col_clash, box_clash):
        assert count_solutions(g) == 0
        assert solve(g) is None
    # a full grid with one clash is also refused
    broken = list(WIKI_SOLUTION)
    broken[0], broken[1] = broken[1], broken[0]
    assert count_solutions(broken) == 0


def test_count_solutions_zero_without_direct_clash():
    # no two givens clash, yet cell 0 has no candidate: row 0 holds 1..8 and column 0 holds 9
    g = [0] * 81
    g[1:9] = range(1, 9)
    g[9] = 9
    assert count_solutions(g) == 0
    assert solve(g) is None


def test_count_solutions_limit_on_empty_and_one_on_full():
    assert count_solutions([0] * 81) == 2
    assert count_solutions([0] * 81, limit=5) == 5
    assert count_solutions([0] * 81, limit=1) == 1
    assert count_solutions(WIKI_SOLUTION) == 1
    assert count_solutions(WIKI_SOLUTION, limit=5) == 1


def _deadly_rectangle(sol):
    """Rows r1, r2 and columns c1, c2 spanning two boxes whose corners read a b / b a."""
    for r1 in range(9):
        for r2 in range(r1 + 1, 9):
            for c1 in range(9):
                for c2 in range(c1 + 1, 9):
                    a, b = sol[r1 * 9 + c1], sol[r1 * 9 + c2]
                    two_boxes = (r1 // 3 == r2 // 3) != (c1 // 3 == c2 // 3)
                    if two_boxes and sol[r2 * 9 + c1] == b and sol[r2 * 9 + c2] == a:
                        return r1, r2, c1, c2
    return None


def test_count_solutions_exact_small_count():
    # Blank a "deadly rectangle" of a solution: its two digits can swap, so exactly 2 completions.
    for k in range(50):
        sol = random_solution(puzzle_rng(5, k))
        found = _deadly_rectangle(sol)
        if found:
            break
    assert found is not None
    r1, r2, c1, c2 = found
    g = list(sol)
    cells = [r * 9 + c for r in (r1, r2) for c in (c1, c2)]
    for i in cells:
        g[i] = 0
    assert count_solutions(g, limit=10) == 2
    other = list(sol)
    for i in cells:
        other[i] = sol[cells[0]] + sol[cells[1]] - sol[i]  # swap a <-> b
    assert valid(other, g) and other != sol
    assert solve(g) in (sol, other)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_random_solution_is_valid_and_seeded(seed):
    a = random_solution(puzzle_rng(seed, 0))
    b = random_solution(puzzle_rng(seed, 0))
    assert len(a) == 81 and valid(a)
    assert a == b
    assert random_solution(puzzle_rng(seed, 1)) != a


def test_random_solutions_vary():
    grids = {tuple(random_solution(puzzle_rng(0, k))) for k in range(20)}
    assert len(grids) == 20
    # the first row is not fixed (digit order is shuffled)
    assert len({g[:9] for g in grids}) > 1


def test_puzzle_rng_is_a_fresh_deterministic_stream():
    a = [puzzle_rng(3, 7).random() for _ in range(2)]
    assert a[0] == a[1]
    assert puzzle_rng(3, 7).random() != puzzle_rng(3, 8).random()
    assert puzzle_rng(3, 7).random() != puzzle_rng(4, 7).random()


# --- generator ----------------------------------------------------------------------------------


def test_kaggle_puzzles_unique_with_right_density(kaggle_pairs):
    counts = []
    for puzzle, solution in kaggle_pairs:
        assert len(puzzle) == 81 and len(solution) == 81
        assert valid(solution, puzzle)
        assert all(p in (0, s) for p, s in zip(puzzle, solution))
        n = givens(puzzle)
        counts.append(n)
        assert 30 <= n <= 36
        assert count_solutions(puzzle, 2) == 1
        assert solve(puzzle) == solution
        assert not givens_clash(np.array([puzzle]))[0]
    assert len(set(counts)) > 1  # the target is drawn, not fixed


def test_make_puzzle_is_deterministic_per_rng():
    spec = PRESETS["kaggle"]
    assert make_puzzle(spec, puzzle_rng(2, 5)) == make_puzzle(spec, puzzle_rng(2, 5))
    assert make_puzzle(spec, puzzle_rng(2, 5)) != make_puzzle(spec, puzzle_rng(2, 6))


def test_givens_range_is_respected():
    spec = PuzzleSpec(min_givens=40, max_givens=40)
    for k in range(3):
        puzzle, solution = make_puzzle(spec, puzzle_rng(9, k))
        assert givens(puzzle) == 40
        assert count_solutions(puzzle) == 1 and valid(solution, puzzle)


@pytest.mark.parametrize("k", [0, 1])
def test_minimal_puzzles_are_unique_and_minimal(k):
    puzzle, solution = make_puzzle(PuzzleSpec(minimal=True), puzzle_rng(21, k))
    assert valid(solution, puzzle)
    assert all(p in (0, s) for p, s in zip(puzzle, solution))
    assert count_solutions(puzzle, 2) == 1
    assert 17 <= givens(puzzle) < 30  # minimal puzzles are sparse
    for i in range(81):
        if puzzle[i]:
            fewer = list(puzzle)
            fewer[i] = 0
            assert count_solutions(fewer, 2) == 2, f"given at cell {i} is removable"


def test_hard_puzzles_are_unique_and_not_singles_solvable():
    for k in range(3):
        puzzle, solution = make_puzzle(PRESETS["hard"], puzzle_rng(31, k))
        assert count_solutions(puzzle, 2) == 1
        assert valid(solution, puzzle)
        assert not is_easy(puzzle)
        stuck = solve_with_singles(puzzle)
        assert 0 in stuck
        # what singles did fill is right
        assert all(v in (0, s) for v, s in zip(stuck, solution))


def test_easy_puzzles_are_singles_solvable():
    for k in range(4):
        puzzle, solution = make_puzzle(PRESETS["easy"], puzzle_rng(41, k))
        assert 30 <= givens(puzzle) <= 36
        assert count_solutions(puzzle, 2) == 1
        assert is_easy(puzzle)
        assert solve_with_singles(puzzle) == solution


def test_solve_with_singles_never_writes_a_wrong_digit(kaggle_pairs):
    for puzzle, solution in kaggle_pairs:
        filled = solve_with_singles(puzzle)
        assert len(filled) == 81
        assert all(v in (0, s) for v, s in zip(filled, solution))
        # it keeps every given and only ever adds
        assert all(f == p for f, p in zip(filled, puzzle) if p)
        assert givens(filled) >= givens(puzzle)
        assert is_easy(puzzle) == (filled == solution)


def test_solve_with_singles_does_not_mutate_and_uses_both_rules():
    # The known puzzle is solvable by singles alone.
    before = list(WIKI_PUZZLE)
    assert solve_with_singles(WIKI_PUZZLE) == WIKI_SOLUTION
    assert WIKI_PUZZLE == before
    assert is_easy(WIKI_PUZZLE)
    # A hidden single that is not a naked single: digit 1 in row 0 can only go to cell 0.
    g = [0] * 81
    g[9 + 3] = 1  # row 1, col 3 -> box 1 holds 1
    g[18 + 6] = 1  # row 2, col 6 -> box 2 holds 1
    g[27 + 1] = 1  # row 3, col 1
    g[54 + 2] = 1  # row 6, col 2
    out = solve_with_singles(g)
    assert out[0] == 1
    # nothing else is forced in such an empty grid
    assert givens(out) == 5
    assert not is_easy(g)


def test_empty_and_clashing_grids_with_singles():
    assert solve_with_singles([0] * 81) == [0] * 81
    assert not is_easy([0] * 81)
    clash = [0] * 81
    clash[0] = clash[1] = 3
    assert solve_with_singles(clash) == clash  # refuses to work on a broken grid
    assert is_easy(WIKI_SOLUTION)


def test_puzzle_spec_validation():
    with pytest.raises(ValueError):
        PuzzleSpec(min_givens=16, max_givens=30)
    with pytest.raises(ValueError):
        PuzzleSpec(min_givens=36, max_givens=30)
    with pytest.raises(ValueError):
        PuzzleSpec(min_givens=30, max_givens=81)
    with pytest.raises(ValueError):
        PuzzleSpec(difficulty="medium")
    PuzzleSpec(min_givens=17, max_givens=80, difficulty="hard")


# --- generate() ---------------------------------------------------------------------------------


@pytest.mark.parametrize("preset,n", [("kaggle", 6), ("hard", 4)])
def test_generate_same_for_any_worker_count(preset, n):
    one = generate(preset, n, seed=3, workers=1, progress=False)
    two = generate(preset, n, seed=3, workers=2, progress=False)
    assert one.quizzes.shape == (n, 81) and one.solutions.shape == (n, 81)
    assert one.quizzes.dtype == np.int8 and one.solutions.dtype == np.int8
    np.testing.assert_array_equal(one.quizzes, two.quizzes)
    np.testing.assert_array_equal(one.solutions, two.solutions)
    assert is_valid_solution(one.solutions, one.quizzes).all()
    for q in one.quizzes:
        assert count_solutions([int(v) for v in q], 2) == 1
    # puzzle k of the set is make_puzzle on its own stream
    assert list(one.quizzes[n - 1]) == make_puzzle(PRESETS[preset], puzzle_rng(3, n - 1))[0]
    # and a prefix of a longer set
    longer = generate(preset, n + 1, seed=3, workers=1, progress=False)
    np.testing.assert_array_equal(longer.quizzes[:n], one.quizzes)


def test_generate_different_seeds_give_different_sets():
    a = generate("kaggle", 6, seed=1, progress=False)
    b = generate("kaggle", 6, seed=2, progress=False)
    assert not {q.tobytes() for q in a.quizzes} & {q.tobytes() for q in b.quizzes}
    assert len({q.tobytes() for q in a.quizzes}) == 6  # and no repeats inside a set
    h = generate("hard", 3, seed=1, progress=False)
    assert all(not is_easy([int(v) for v in q]) for q in h.quizzes)
    e = generate("easy", 3, seed=1, progress=False)
    assert all(is_easy([int(v) for v in q]) for q in e.quizzes)


def test_generate_rejects_bad_arguments():
    with pytest.raises(UnmaskError, match="unknown puzzle kind"):
        generate("medium", 2, seed=0, progress=False)
    with pytest.raises(UnmaskError, match="need 1 <= n"):
        generate("kaggle", 0, seed=0, progress=False)
    with pytest.raises(UnmaskError, match="seed must be >= 0"):
        generate("kaggle", 2, seed=-1, progress=False)
    with pytest.raises(ValueError):
        puzzle_rng(0, 1_000_003)  # would collide with (seed 1, index 0)


def one_parallel_round(grid):
    """Reference for singles_rounds, by candidate sets over PEERS and UNITS: every cell the grid as it
    stands forces (naked or hidden single), or None when nothing is forced."""
    cand = {i: set(range(1, 10)) - {grid[j] for j in PEERS[i]} for i in range(81) if not grid[i]}
    forced = {i: next(iter(c)) for i, c in cand.items() if len(c) == 1}
    for unit in UNITS:
        for d in range(1, 10):
            spots = [i for i in unit if d in cand.get(i, ())]
            if len(spots) == 1:
                forced[spots[0]] = d
    return forced or None


def test_singles_rounds_counts_parallel_rounds_like_a_slow_reference(kaggle_pairs):
    seen = []
    for puzzle, solution in [(WIKI_PUZZLE, WIKI_SOLUTION), *kaggle_pairs]:
        g, rounds = list(puzzle), 0
        while 0 in g:
            forced = one_parallel_round(g)
            assert forced and all(solution[i] == d for i, d in forced.items())
            for i, d in forced.items():
                g[i] = d
            rounds += 1
        assert singles_rounds(puzzle) == rounds
        seen.append(rounds)
    assert max(seen) >= 3  # chains of deductions are exercised, not only one-round fills


def test_singles_rounds_edge_cases():
    assert singles_rounds(WIKI_SOLUTION) == 0
    one = list(WIKI_SOLUTION)
    one[40] = 0
    assert singles_rounds(one) == 1
    row = [0 if i < 9 else v for i, v in enumerate(WIKI_SOLUTION)]  # each blank's column forces it
    assert singles_rounds(row) == 1
    assert singles_rounds(WIKI_PUZZLE) == singles_rounds(tuple(WIKI_PUZZLE))  # any sequence
    for k in range(2):
        hard, _ = make_puzzle(PRESETS["hard"], puzzle_rng(31, k))
        assert singles_rounds(hard) is None  # singles get stuck
    clash = list(WIKI_PUZZLE)
    clash[2] = 5  # two 5s in row 0
    assert singles_rounds(clash) is None
    assert singles_rounds([0] * 81) is None  # nothing forced on an empty grid
    twice = [1, 2, 3, 4, 6, 7, 8, 0, 0] + [0] * 72
    twice[27 + 7], twice[54 + 8] = 9, 9  # cells 7 and 8 of row 0 both forced to 5: no completion
    assert singles_rounds(twice) is None
    # No completion, yet every round's forced cells fit the round-start grid: two cells of one unit
    # are forced to the same digit within a round (placing both would go on to "solve" it in 4).
    clash_in_round = [4, 0, 9, 2, 0, 5, 0, 0, 7, 0, 0, 7, 0, 8, 0, 0, 0, 1, 2, 8, 0, 0, 0, 4, 5, 0, 6, 8, 0, 0, 1, 0, 9, 3, 2,
                      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 5, 2, 3, 0, 8, 0, 0, 3, 0, 6, 0, 7, 4, 0, 8, 0, 0, 0, 8, 0, 2, 9,
                      0, 0, 9, 4, 8, 0, 0, 0, 6, 7, 0]
    assert count_solutions(clash_in_round, 2) == 0
    assert singles_rounds(clash_in_round) is None


# --- several solutions: every completion, widened puzzles and their exact posterior ----------------


def test_solutions_lists_every_completion_once(kaggle_pairs):
    assert solutions(WIKI_PUZZLE, 5) == [WIKI_SOLUTION]
    assert solutions(WIKI_PUZZLE[:-1] + [1], 5) == []  # a given that breaks the grid: no completion
    puzzle, _ = kaggle_pairs[0]
    loose = list(puzzle)
    for i in [i for i in range(81) if puzzle[i]][:8]:  # 8 givens blanked: several completions
        loose[i] = 0
    found = solutions(loose, 10_000)
    assert len(found) == count_solutions(loose, 10_000) > 1
    assert len({tuple(g) for g in found}) == len(found) and all(valid(g, loose) for g in found)
    assert solutions(loose, 2) == found[:2]  # the limit keeps the first found
    assert solutions(WIKI_SOLUTION, 0) == [] and solutions(WIKI_SOLUTION, 1) == [WIKI_SOLUTION]


def test_widen_blanks_givens_until_the_puzzle_has_low_to_high_solutions(kaggle_pairs):
    for k, (puzzle, _solution) in enumerate(kaggle_pairs):
        wide = widen(puzzle, random.Random(k), 3, 6)
        assert wide is not None and 3 <= count_solutions(wide, 100) <= 6
        assert all(w in (0, p) for w, p in zip(wide, puzzle)) and givens(wide) < givens(puzzle)
        assert widen(puzzle, random.Random(k), 3, 6) == wide  # deterministic given the stream
    assert widen(WIKI_SOLUTION, random.Random(0), 2, 1) is None  # (high < low: no count fits)


def test_widened_set_and_its_exact_posterior():
    import math

    import torch

    from unmask.mi.exact import exact_mi
    from unmask.tasks.sudoku.data import SudokuSet, to_tokens

    base = SudokuSet(np.array([WIKI_PUZZLE] * 3, dtype=np.int8), None)
    wide = widened_set(base, 2, 2, seed=4)  # exactly two solutions each, where an order of blanks gets there
    kept = [k for k in range(3) if widen(WIKI_PUZZLE, puzzle_rng(4, k), 2, 2) is not None]
    assert wide.source.tolist() == kept and len(wide) == len(kept) >= 2 and wide.puzzles.solutions is None
    assert all(len(s) == 2 and WIKI_SOLUTION in s.tolist() for s in wide.solutions)
    with pytest.raises(UnmaskError, match="2 <= low <= high"):
        widened_set(base, 1, 2)
    assert widened_set(base, 2, 2, seed=4).puzzles.quizzes.tolist() == wide.puzzles.quizzes.tolist()
    with pytest.raises(UnmaskError, match="fit a solution of another"):
        wide.oracle()  # two widenings of one puzzle share its solution: their posteriors would mix
    one = wide[:1]
    a, b = one.solutions[0].astype(int)
    differ = np.flatnonzero(a != b)  # the cells the two solutions swap
    assert len(differ) >= 4
    oracle = one.oracle()
    state = to_tokens(one.puzzles.quizzes)
    p = oracle(state).logits.exp()[0]  # (81, 9)
    blanks = np.flatnonzero(one.puzzles.quizzes[0] == 0)
    for i in blanks:  # the true posterior: each swapped cell 50/50, every other blank certain
        want = {a[i] - 1: 0.5, b[i] - 1: 0.5} if i in differ else {a[i] - 1: 1.0}
        assert {v: round(float(q), 9) for v, q in enumerate(p[i]) if q > 1e-12} == want
    mi = exact_mi(oracle, state, eps=0.0).symmetric[0]  # (81, 81): the true MI
    i, j = differ[:2]
    assert mi[i, j].item() == pytest.approx(math.log(2), abs=1e-9)  # one swapped cell decides the other
    certain = next(c for c in blanks if c not in differ)
    assert mi[i, certain].abs().item() < 1e-12
    assert torch.equal(one.oracle()(state).logits, oracle(state).logits)
