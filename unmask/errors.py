"""Errors a user can cause (bad files, bad specs, bad puzzles).

The CLI turns an :class:`UnmaskError` into one clear line on stderr and exit code 2;
anything else is a bug and keeps its traceback.
"""


class UnmaskError(ValueError):
    """A problem with the user's input, reported as one line without a traceback."""


class SpecRenamed(FutureWarning):
    """A policy spec was given under an old name: it still parses, to the same policy under its new
    name (the CLI shows the message as one ``unmask: note:`` line)."""
