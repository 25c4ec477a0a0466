"""The Sudoku task: puzzles in, exact-match scoring out; training batches; Sudoku's peer structure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from unmask.decode import TokenRule
from unmask.decode.sequential import Sequential
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.eval import evaluate
from unmask.model import ModelConfig, TransformerDenoiser
from unmask.tasks.base import MODELS, Board
from unmask.tasks.sudoku.data import (
    MASK_ID,
    POSITION_FEATURES,
    VOCAB_SIZE,
    SudokuSet,
    augment,
    augment_pairs,
    format_grid,
    from_tokens,
    givens_clash,
    parse_grid,
    read_puzzles,
    score,
    to_tokens,
)
from unmask.tasks.sudoku.grid import PEERS

NAME = "sudoku"
PUZZLE_PROB = 0.5  # default share of a training batch drawn from training puzzles, when there are some
DEFAULT_MODEL = MODELS / "sudoku"  # the shipped model (and its MI head)

# The demo's policies: the baselines under one accounting.
DEMO_POLICIES = [
    "sequential", "topk:k=7", "random:steps=10", "top_prob:steps=10", "margin:steps=10", "eb:gamma=0.1",
    "threshold:tau=0.9", "mi", "mi:gamma=0.1,lam=2",
]


def default_model_config() -> ModelConfig:
    """The default shape of a fresh Sudoku model (6 layers, ~1.2M parameters; the shipped one was grown
    from it to 24 layers by stacking, `--init` with `--n-layers`)."""
    return ModelConfig(
        vocab_size=VOCAB_SIZE, mask_id=MASK_ID, seq_len=81, d_model=128, n_layers=6, n_heads=4, d_ff=512,
        position_features=[9, 9, 9], task=NAME,
    )


def sudoku_peers() -> torch.Tensor:
    """``(81, 81)`` bool: same row, column or box (diagonal False) — 20 of a cell's 80 others."""
    peers = torch.zeros(81, 81, dtype=torch.bool)
    for i, ps in enumerate(PEERS):
        peers[i, list(ps)] = True
    return peers


@dataclass(frozen=True)
class SudokuTask:
    """Sudoku as a :class:`~unmask.tasks.base.Task`: examples are a :class:`SudokuSet`."""

    name: str = NAME
    unit: str = "puzzle"
    default_model = DEFAULT_MODEL
    outcome_reward = True  # the solved grid

    def read(self, path) -> SudokuSet:
        """A ``quizzes[,solutions]`` CSV, or one puzzle given inline as an 81-character grid."""
        text = str(path).strip()
        if text and set(text) <= set("0123456789.") and not Path(text).exists():  # a grid, not a file name
            if len(text) != 81:
                raise UnmaskError(f"{text}: no such file, nor a puzzle grid (a grid has 81 characters 0-9 or '.', "
                                  f"this has {len(text)})")
            grid = parse_grid(text)
            if givens_clash(grid[None])[0]:
                raise UnmaskError("the puzzle's givens repeat a digit in a row, column or box")
            return SudokuSet(grid[None], None)
        return read_puzzles(path)

    def check_model(self, denoiser: Denoiser) -> None:
        if denoiser.vocab_size != VOCAB_SIZE or denoiser.mask_id != MASK_ID:
            raise UnmaskError(f"a Sudoku model predicts {VOCAB_SIZE} digit tokens with mask id {MASK_ID}; "
                              f"this one has {denoiser.vocab_size} tokens and mask id {denoiser.mask_id}")

    def encode(self, examples) -> torch.Tensor:
        quizzes = examples.quizzes if isinstance(examples, SudokuSet) else examples
        return to_tokens(quizzes)

    def targets(self, examples: SudokuSet) -> torch.Tensor:
        if examples.solutions is None:
            raise UnmaskError("these puzzles have no solutions column; learning an order needs the solutions")
        return to_tokens(examples.solutions)

    def score(self, tokens: torch.Tensor, examples: SudokuSet) -> torch.Tensor:
        return torch.from_numpy(score(from_tokens(tokens), examples))

    def show(self, tokens: torch.Tensor, examples: SudokuSet, k: int) -> list[dict]:
        grids = from_tokens(tokens[:k])
        return [{"puzzle": format_grid(q), "output": format_grid(g)} for q, g in zip(examples.quizzes[:k], grids)]

    def related_pairs(self) -> torch.Tensor:
        return sudoku_peers()

    def board(self, tokens: torch.Tensor) -> Board:
        grid = from_tokens(tokens[None])[0]
        return Board((9, 9), torch.arange(81), [str(int(v)) if v else "" for v in grid], block=3)

    def parse_position(self, text: str, tokens: torch.Tensor) -> int:
        try:
            r, c = (int(x) - 1 for x in text.split(","))
        except ValueError:
            raise UnmaskError(f"cell {text!r}: expected ROW,COLUMN such as 3,7") from None
        if not (0 <= r < 9 and 0 <= c < 9):
            raise UnmaskError(f"cell {text}: row and column are 1..9")
        if tokens[r * 9 + c] != MASK_ID:
            raise UnmaskError(f"cell {text} is a given; choose a blank cell")
        return r * 9 + c


@dataclass
class SudokuTraining:
    """Training: augmented solution grids under random masks; validation: sequential decoding.

    With ``puzzles``, a share ``puzzle_prob`` of every batch is drawn from them instead, split evenly
    between the sets: the solution with its puzzle's givens always visible, so the trainer's random
    mask falls on the blanks only. These are the states sequential decoding of such puzzles visits
    (givens plus some solved cells), and their answer is unique, which random masks of a bare grid
    rarely make it.
    """

    solutions: np.ndarray  # (N, 81) training solution grids, digits 1..9
    val_sets: dict[str, SudokuSet] = field(default_factory=dict)  # name → puzzles scored at each validation
    puzzles: tuple[SudokuSet, ...] = ()  # sets of training puzzles with solutions (e.g. minimal "hard" ones)
    puzzle_prob: float = 0.0  # share of each batch drawn from ``puzzles`` (rounded to whole sequences)
    name: str = NAME

    def __post_init__(self) -> None:
        self._tokens = to_tokens(self.solutions)  # (N, 81)
        if not 0.0 <= self.puzzle_prob <= 1.0:
            raise UnmaskError(f"puzzle_prob must be in [0, 1], got {self.puzzle_prob}")
        if self.puzzle_prob > 0 and not self.puzzles:
            raise UnmaskError("puzzle_prob > 0 needs training puzzles")
        for k, p in enumerate(self.puzzles):
            if p.solutions is None:
                raise UnmaskError(f"training puzzle set {k + 1} has no solutions")
            if (p.quizzes > 0).all(1).any():
                raise UnmaskError(f"training puzzle set {k + 1} holds a puzzle with no blank cell (nothing to train on)")
        # Per set: (givens as tokens, blanks as MASK_ID) and solutions, (M, 81) each.
        self._puzzle_tokens = [(to_tokens(p.quizzes), to_tokens(p.solutions)) for p in self.puzzles]

    def model(self, cfg: ModelConfig | None) -> TransformerDenoiser:
        return TransformerDenoiser(cfg or default_model_config(), POSITION_FEATURES)

    def sample(self, gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        k = int(self.puzzle_prob * n + 0.5)  # rows drawn from the puzzles (the last k of the batch), p·n rounded
        idx = torch.randint(len(self._tokens), (n - k,), generator=gen)
        rows = [augment(self._tokens[idx], gen)]  # (n - k, 81)
        maskable = [torch.ones(n - k, 81, dtype=torch.bool)]
        m = len(self._puzzle_tokens)
        shares = [k // m] * m if m else []  # an even split; the remainder goes to sets drawn at random
        if m and k % m:
            for s in torch.randperm(m, generator=gen)[: k % m].tolist():
                shares[s] += 1
        for (quizzes, solutions), share in zip(self._puzzle_tokens, shares):
            pick = torch.randint(len(quizzes), (share,), generator=gen)
            quiz, sol = augment_pairs(quizzes[pick], solutions[pick], gen)  # (share, 81) each
            rows.append(sol)
            maskable.append(quiz == MASK_ID)  # the givens stay visible
        return torch.cat(rows), torch.cat(maskable)

    def validate(self, model: TransformerDenoiser) -> dict[str, float]:
        out = {}
        for name, data in self.val_sets.items():
            m = evaluate(SudokuTask(), model, data, Sequential(), TokenRule())
            out[f"{name}_acc"] = round(m["accuracy"], 4)
        return out
