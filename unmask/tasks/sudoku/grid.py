"""Sudoku grids: a bitmask solver, a generator of unique-solution puzzles, and difficulty labels.

A grid is a tuple/list of 81 ints in row-major order, 0 for a blank and 1..9 for a digit.
Everything is deterministic given a seed: puzzle ``k`` of a set is drawn from its own stream
(:func:`puzzle_rng`), so a set is the same whatever the number of workers.

Difficulty (the usual human-solver split):
  * easy — naked singles + hidden singles alone fill the grid;
  * hard — they get stuck (search or stronger techniques are needed).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ALL = 0x1FF  # bitmask of the nine digits; bit d-1 stands for digit d

ROW = tuple(i // 9 for i in range(81))
COL = tuple(i % 9 for i in range(81))
BOX = tuple((i // 27) * 3 + (i % 9) // 3 for i in range(81))
UNITS = tuple(
    [tuple(r * 9 + c for c in range(9)) for r in range(9)]
    + [tuple(r * 9 + c for r in range(9)) for c in range(9)]
    + [tuple((b // 3) * 27 + (b % 3) * 3 + (k // 3) * 9 + k % 3 for k in range(9)) for b in range(9)]
)
PEERS = tuple(
    tuple(sorted({j for u in UNITS if i in u for j in u} - {i})) for i in range(81)
)
_POPCOUNT = tuple(bin(m).count("1") for m in range(512))
_DIGITS = tuple(tuple(d + 1 for d in range(9) if m >> d & 1) for m in range(512))


def _masks(grid) -> tuple[list[int], list[int], list[int]] | None:
    """Used-digit bitmasks of rows, columns and boxes; None if two givens clash."""
    rows, cols, boxes = [0] * 9, [0] * 9, [0] * 9
    for i, v in enumerate(grid):
        if v:
            bit = 1 << (v - 1)
            r, c, b = ROW[i], COL[i], BOX[i]
            if (rows[r] | cols[c] | boxes[b]) & bit:
                return None
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
    return rows, cols, boxes


def count_solutions(grid, limit: int = 2) -> int:
    """Number of completions of ``grid``, counting at most ``limit`` (2 answers "unique?")."""
    masks = _masks(grid)
    if masks is None:
        return 0
    rows, cols, boxes = masks
    cells = [i for i in range(81) if not grid[i]]
    return _search(cells, rows, cols, boxes, limit, None, None)


def solve(grid, rng: random.Random | None = None) -> list[int] | None:
    """One completion of ``grid`` (random digit order if ``rng`` is given), or None."""
    masks = _masks(grid)
    if masks is None:
        return None
    rows, cols, boxes = masks
    out = list(grid)
    cells = [i for i in range(81) if not grid[i]]
    return out if _search(cells, rows, cols, boxes, 1, out, rng) else None


def solutions(grid, limit: int) -> list[list[int]]:
    """Every completion of ``grid`` (the first ``limit`` found), each a list of 81 digits."""
    masks = _masks(grid)
    if masks is None or limit < 1:
        return []
    rows, cols, boxes = masks
    found: list[list[int]] = []
    _enumerate(list(grid), [i for i in range(81) if not grid[i]], rows, cols, boxes, limit, found)
    return found


def widen(puzzle, rng: random.Random, low: int, high: int) -> list[int] | None:
    """``puzzle`` with givens blanked in random order (a blank that would give more than ``high``
    completions is put back) until it has ``low``..``high`` completions; None if this order does not get there."""
    grid = list(puzzle)
    order = [i for i in range(81) if grid[i]]
    rng.shuffle(order)
    for i in order:
        d, grid[i] = grid[i], 0
        n = count_solutions(grid, high + 1)
        if n > high:
            grid[i] = d
        elif n >= low:
            return grid
    return None


def _most_constrained(cells, rows, cols, boxes) -> tuple[int, int, int]:
    """(index in ``cells``, candidate bitmask, candidate count) of the cell with fewest candidates."""
    best, best_free, best_n = -1, 0, 10
    for k, i in enumerate(cells):
        free = ALL & ~(rows[ROW[i]] | cols[COL[i]] | boxes[BOX[i]])
        n = _POPCOUNT[free]
        if n < best_n:
            best, best_free, best_n = k, free, n
            if n <= 1:
                break
    return best, best_free, best_n


def _enumerate(g, cells, rows, cols, boxes, limit, found) -> None:
    """Depth-first search appending every completion of ``g`` to ``found`` until it holds ``limit``."""
    if not cells:
        found.append(list(g))
        return
    best, free, _ = _most_constrained(cells, rows, cols, boxes)
    i = cells[best]
    rest = cells[:best] + cells[best + 1 :]
    r, c, b = ROW[i], COL[i], BOX[i]
    for d in _DIGITS[free]:
        if len(found) >= limit:
            return
        _place(g, (rows, cols, boxes), i, d)
        _enumerate(g, rest, rows, cols, boxes, limit, found)
        bit = 1 << (d - 1)  # undo the placement
        g[i] = 0
        rows[r] ^= bit
        cols[c] ^= bit
        boxes[b] ^= bit


def _search(cells, rows, cols, boxes, limit, out, rng) -> int:
    """Depth-first search, most-constrained cell first; fills ``out`` with the first solution."""
    if not cells:
        return 1
    best, best_free, best_n = _most_constrained(cells, rows, cols, boxes)
    if best_n == 0:
        return 0
    i = cells[best]
    rest = cells[:best] + cells[best + 1 :]
    r, c, b = ROW[i], COL[i], BOX[i]
    digits = list(_DIGITS[best_free])
    if rng is not None:
        rng.shuffle(digits)
    found = 0
    for d in digits:
        bit = 1 << (d - 1)
        rows[r] |= bit
        cols[c] |= bit
        boxes[b] |= bit
        got = _search(rest, rows, cols, boxes, limit - found, out, rng)
        rows[r] ^= bit
        cols[c] ^= bit
        boxes[b] ^= bit
        if got and out is not None and not found:
            out[i] = d
        found += got
        if found >= limit:
            break
    return found


def _place(g: list[int], masks, i: int, d: int) -> None:
    """Write digit ``d`` at cell ``i`` and mark it used in its row, column and box masks."""
    rows, cols, boxes = masks
    bit = 1 << (d - 1)
    g[i] = d
    rows[ROW[i]] |= bit
    cols[COL[i]] |= bit
    boxes[BOX[i]] |= bit


def solve_with_singles(grid) -> list[int]:
    """Fill what naked and hidden singles alone can; blanks stay 0 where they get stuck."""
    g = list(grid)
    masks = _masks(g)
    if masks is None:
        return g
    rows, cols, boxes = masks
    progress = True
    while progress:
        progress = False
        for i in range(81):  # naked singles: a cell with one candidate
            if not g[i]:
                free = ALL & ~(rows[ROW[i]] | cols[COL[i]] | boxes[BOX[i]])
                if _POPCOUNT[free] == 1:
                    _place(g, masks, i, _DIGITS[free][0])
                    progress = True
        for unit in UNITS:  # hidden singles: a digit with one place in a unit
            for d in range(1, 10):
                bit = 1 << (d - 1)
                spots = [
                    i for i in unit
                    if not g[i] and not (rows[ROW[i]] | cols[COL[i]] | boxes[BOX[i]]) & bit
                ]
                if len(spots) == 1:
                    _place(g, masks, spots[0], d)
                    progress = True
    return g


def singles_rounds(grid) -> int | None:
    """Parallel rounds of naked + hidden singles that fill ``grid``, or None where they get stuck.

    Each round places, all at once, every digit the grid as it stood at the round's start forces
    (unlike :func:`solve_with_singles`, which uses each placement at once). A decoder that reveals
    only such cells, all of them in every forward pass, needs this many passes: a yardstick for
    low-NFE decoding, not a bound on a model that reasons further within one pass.
    """
    g = list(grid)
    masks = _masks(g)
    if masks is None:
        return None
    rows, cols, boxes = masks
    rounds = 0
    while not all(g):
        free = {i: ALL & ~(rows[ROW[i]] | cols[COL[i]] | boxes[BOX[i]]) for i in range(81) if not g[i]}
        forced = {i: _DIGITS[m][0] for i, m in free.items() if _POPCOUNT[m] == 1}  # naked singles
        for unit in UNITS:  # hidden singles
            for d in range(1, 10):
                spots = [i for i in unit if i in free and free[i] >> (d - 1) & 1]
                if len(spots) == 1:
                    if forced.setdefault(spots[0], d) != d:
                        return None  # one cell forced to two digits: no completion
        if not forced:
            return None
        for i, d in forced.items():
            if (rows[ROW[i]] | cols[COL[i]] | boxes[BOX[i]]) >> (d - 1) & 1:
                return None  # two cells of a unit forced to one digit in the same round
            _place(g, masks, i, d)
        rounds += 1
    return rounds


def is_easy(puzzle) -> bool:
    """True if naked + hidden singles alone solve the puzzle."""
    return all(solve_with_singles(puzzle))


def random_solution(rng: random.Random) -> list[int]:
    """A random complete grid (randomised most-constrained-first search)."""
    grid = solve([0] * 81, rng)
    assert grid is not None
    return grid


@dataclass(frozen=True)
class PuzzleSpec:
    """What kind of puzzle to draw."""

    min_givens: int = 30  # fewest givens allowed (ignored for minimal puzzles)
    max_givens: int = 36  # most givens allowed (ignored for minimal puzzles)
    minimal: bool = False  # remove every removable cell (no given can go without losing uniqueness)
    difficulty: str | None = None  # "easy" | "hard" | None (any): redraw until the label matches

    def __post_init__(self) -> None:
        if not 17 <= self.min_givens <= self.max_givens <= 80:
            raise ValueError(f"need 17 <= min_givens <= max_givens <= 80, got {self.min_givens}, {self.max_givens}")
        if self.difficulty not in (None, "easy", "hard"):
            raise ValueError(f"difficulty must be easy, hard or None, got {self.difficulty!r}")


def make_puzzle(spec: PuzzleSpec, rng: random.Random) -> tuple[list[int], list[int]]:
    """Draw (puzzle, solution) with exactly one solution, matching ``spec``."""
    while True:
        solution = random_solution(rng)
        puzzle = _carve(solution, spec, rng)
        if puzzle is None:
            continue
        if spec.difficulty is not None and ("easy" if is_easy(puzzle) else "hard") != spec.difficulty:
            continue
        return puzzle, solution


def _carve(solution: list[int], spec: PuzzleSpec, rng: random.Random) -> list[int] | None:
    """Blank cells in random order while the solution stays unique."""
    puzzle = list(solution)
    target = 17 if spec.minimal else rng.randint(spec.min_givens, spec.max_givens)
    order = list(range(81))
    rng.shuffle(order)
    givens = 81
    for i in order:
        if givens == target:
            break
        d = puzzle[i]
        puzzle[i] = 0
        # A cell that singles would refill keeps the solution unique: skip the search.
        if _forced(puzzle, i, d) or count_solutions(puzzle, 2) == 1:
            givens -= 1
        else:
            puzzle[i] = d
    if not spec.minimal and givens != target:
        return None
    return puzzle


def _forced(puzzle: list[int], i: int, d: int) -> bool:
    """True if blank ``i`` has ``d`` as its only candidate given the other cells."""
    used = 0
    for j in PEERS[i]:
        if puzzle[j]:
            used |= 1 << (puzzle[j] - 1)
    return (ALL & ~used) == 1 << (d - 1)


MAX_SET_SIZE = 1_000_003  # puzzles per seed: streams of different (seed, index) pairs never coincide


def puzzle_rng(seed: int, index: int) -> random.Random:
    """The random stream of puzzle ``index`` (< MAX_SET_SIZE) in a set drawn with ``seed`` (>= 0)."""
    if seed < 0 or not 0 <= index < MAX_SET_SIZE:
        raise ValueError(f"need seed >= 0 and 0 <= index < {MAX_SET_SIZE}, got seed={seed}, index={index}")
    return random.Random(seed * MAX_SET_SIZE + index)
