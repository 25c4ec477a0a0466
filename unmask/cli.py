"""Command line, one grammar: ``unmask <task> generate|train|eval|demo`` for every task
(``sudoku``, ``maths``), and ``unmask mi data|train|map --task T``.

User errors (bad files, specs, puzzles) print one line ``unmask: error: ...`` and exit with code 2.
The old spellings ``unmask train sudoku|maths`` and ``unmask maths hf-eval`` still work (hidden) for
one release.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import warnings

from unmask import __version__
from unmask.errors import SpecRenamed, UnmaskError


class Parser(argparse.ArgumentParser):
    """argparse with the project's error style: one line, exit code 2."""

    def parse_known_args(self, args=None, namespace=None):
        self.argv = list(sys.argv[1:] if args is None else args)  # (each subcommand's parser sees its own part)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        where = self.prog.removeprefix("unmask").strip()
        flag = re.match(r"argument (--[\w-]+)(?:/\S+)?: expected one argument$", message)
        argv = getattr(self, "argv", [])
        if flag and any(a == flag[1] and b.startswith("-") for a, b in zip(argv, argv[1:])):
            message += f"; a value that starts with '-' is given as {flag[1]}=VALUE"  # --length -5:60 reads as a flag
        self.exit(2, f"unmask: error: {where + ': ' if where else ''}{message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``unmask`` argument parser."""
    from unmask.commands import maths, mi, proteins, seq, sudoku  # (torch and every task: not needed for --version)

    p = Parser(prog="unmask", description="Parallel decoding of masked diffusion models.")
    p.add_argument("--version", action="version", version=f"unmask {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{sudoku,maths,proteins,seq,mi}")
    sudoku.add_parser(sub)
    maths.add_parser(sub)
    proteins.add_parser(sub)
    seq.add_parser(sub)
    mi.add_parser(sub)
    train = sub.add_parser("train", help=argparse.SUPPRESS)  # old spelling: unmask train <task>
    tsub = train.add_subparsers(dest="task", required=True)
    sudoku.add_train_parser(tsub)
    maths.add_train_parser(tsub)
    for name, parser in tsub.choices.items():
        parser.set_defaults(old_spelling=(f"`unmask train {name}`", f"`unmask {name} train`"))
    sub._choices_actions = [a for a in sub._choices_actions if a.dest != "train"]  # hidden from --help
    return p


@contextlib.contextmanager
def spec_notes():
    """Show each :class:`SpecRenamed` warning once, as one ``unmask: note:`` line on stderr (other
    warnings as Python shows them)."""
    with warnings.catch_warnings():
        show = warnings.showwarning

        def note(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, SpecRenamed):
                print(f"unmask: note: {message}", file=sys.stderr)
            else:
                show(message, category, filename, lineno, file, line)

        warnings.simplefilter("once", SpecRenamed)  # a spec checked before the model loads, then built, notes once
        warnings.showwarning = note
        yield


def _end_progress_bars() -> None:
    """Close the progress bars an interrupt left open, so that the next message starts a line of its own
    (a closed bar has ended its line; an open one would be drawn again, after it, when collected)."""
    std = sys.modules.get("tqdm.std")  # (never imported here: a command that drew no bar has none)
    for bar in list(getattr(std.tqdm, "_instances", ())) if std else []:  # the open, shown bars
        bar.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``unmask`` command."""
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:  # answered before torch is imported
        print(f"unmask {__version__}")
        raise SystemExit(0)  # as argparse's version action does
    args = build_parser().parse_args(argv)
    if getattr(args, "old_spelling", None):  # set only by the hidden old-spelling parsers
        from unmask.commands.common import deprecated

        deprecated(*args.old_spelling)
    try:
        with spec_notes():
            args.run(args)
    except UnmaskError as e:
        print(f"unmask: error: {e}", file=sys.stderr)
        return 2
    except (MemoryError, RuntimeError) as e:  # a batch or model too large for this machine is the user's to shrink
        if not isinstance(e, MemoryError) and "allocate" not in str(e) and "out of memory" not in str(e):
            raise
        print(f"unmask: error: out of memory ({type(e).__name__}); try a smaller --batch-size or model", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _end_progress_bars()
        print("unmask: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
