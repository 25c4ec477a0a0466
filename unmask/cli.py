"""Command line: ``unmask sudoku generate|eval|demo``, ``unmask train sudoku|maths``, ``unmask mi data|train|map``,
``unmask maths generate|eval``.

User errors (bad files, specs, puzzles) print one line ``unmask: error: ...`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import sys

from unmask.commands import maths, mi, sudoku
from unmask.commands.common import DEFAULT_SUDOKU_MODEL  # noqa: F401  (public: the shipped model)
from unmask.errors import UnmaskError


class Parser(argparse.ArgumentParser):
    """argparse with the project's error style: one line, exit code 2."""

    def error(self, message: str):
        where = self.prog.removeprefix("unmask").strip()
        self.exit(2, f"unmask: error: {where + ': ' if where else ''}{message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``unmask`` argument parser."""
    p = Parser(prog="unmask", description="Parallel decoding of masked diffusion models.")
    sub = p.add_subparsers(dest="command", required=True)
    sudoku.add_parser(sub)
    train = sub.add_parser("train", help="train a masked diffusion model")
    tsub = train.add_subparsers(dest="task", required=True)
    sudoku.add_train_parser(tsub)
    maths.add_train_parser(tsub)
    mi.add_parser(sub)
    maths.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``unmask`` command."""
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except UnmaskError as e:
        print(f"unmask: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("unmask: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
