"""What a task gives the library: the one protocol every domain (Sudoku, maths, proteins) meets.

A task turns its examples (puzzles, problems, proteins) into partly masked id sequences, scores
decoded sequences, names its shipped model, and tells the MI tools which position pairs its rules
relate and how to draw a sequence. Everything generic — the evaluator (:mod:`unmask.eval`), the MI
commands, the benchmarks — works through this protocol and never imports a concrete task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError

MODELS = Path(__file__).resolve().parent.parent / "models"  # the shipped model directories


def shipped_model(name: str) -> Path:
    """The folder of a model shipped inside the package (``sudoku``, ``maths``, ``maths-3step``,
    ``protein``), for :func:`unmask.load_denoiser`."""
    names = sorted(p.name for p in MODELS.iterdir() if (p / "config.json").is_file())
    if name not in names:
        raise UnmaskError(f"no shipped model {name!r}; the package ships {', '.join(names)}")
    return MODELS / name


@dataclass(frozen=True)
class Board:
    """How one sequence is drawn on a picture (the MI maps): a grid of cells, each showing a position."""

    shape: tuple[int, int]  # (rows, columns) of the picture
    positions: torch.Tensor  # (rows · columns,) sequence position drawn in each cell, -1 for an empty cell
    labels: list[str]  # text written in each cell (a given digit or character), "" for none
    block: int = 0  # heavy grid lines every ``block`` cells (Sudoku boxes: 3); 0 for none


class Task(Protocol):
    """A domain, as the evaluator, the MI tools and the CLI see it."""

    name: str  # the CLI word and the ``task`` a model records in its config
    unit: str  # what one example is called ("puzzle", "problem"); progress bars count these
    default_model: Path  # the shipped model directory
    outcome_reward: bool  # can a decoded example be right or wrong (an answer, a solution)? outcome RL needs it

    def read(self, path: str) -> Any:
        """Examples from a file (UnmaskError with one clear line on bad input)."""
        ...

    def check_model(self, denoiser: Denoiser) -> None:
        """Refuse (UnmaskError) a model that cannot do this task: another vocabulary or length."""
        ...

    def encode(self, examples: Any) -> torch.Tensor:
        """``(N, L)`` ids with the mask id wherever the model is to generate."""
        ...

    def targets(self, examples: Any) -> torch.Tensor:
        """``(N, L)`` the clean sequences x_0 of the examples (UnmaskError if the examples have none)."""
        ...

    def score(self, tokens: torch.Tensor, examples: Any) -> torch.Tensor:
        """``(N,)`` bool: is each decoded sequence ``(N, L)`` right?"""
        ...

    def show(self, tokens: torch.Tensor, examples: Any, k: int) -> list[dict]:
        """Up to ``k`` decoded examples as people read them (may be empty)."""
        ...

    def related_pairs(self) -> torch.Tensor | None:
        """``(L, L)`` bool position pairs the task's rules connect (for MI structure), None if none known."""
        ...

    def board(self, tokens: torch.Tensor) -> Board:
        """How the sequence ``(L,)`` is laid out in an MI map."""
        ...

    def parse_position(self, text: str, tokens: torch.Tensor) -> int:
        """The sequence position a user names (Sudoku ``ROW,COL``; maths the answer character ``K``)."""
        ...
