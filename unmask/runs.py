"""Run directories of every trainer (the MDM, the order policy): resumable checkpoints and the log;
and :class:`RowCache`, the measured rows a long benchmark keeps so that it too resumes.

A run directory holds ``checkpoint.pt`` (everything needed to resume), ``log.jsonl`` (one record
per validation) and ``model/`` (the latest export). Resuming refuses settings that would make the
continued run a different one, and an unreadable checkpoint, each in one line.
"""

from __future__ import annotations

import json
import os
from dataclasses import MISSING, asdict, fields
from pathlib import Path

import torch

from unmask.errors import UnmaskError
from unmask.io import atomic_write, dumps_strict, make_dir

CHECKPOINT = "checkpoint.pt"  # resumable training state inside the run directory
LOG = "log.jsonl"  # one JSON record per validation inside the run directory


def start_or_resume(out: Path, cfg, resume: bool, resumable: tuple[str, ...], source: dict | None = None) -> dict | None:
    """The checkpoint to resume from (None for a fresh run), after checking it may be resumed.

    ``resumable``: the config fields a resumed run may change (e.g. more steps, another device).
    ``source``: what identifies the run's inputs (e.g. the training file's hash); a resumed run must
    have the same values (the trainer stores them in its checkpoint as ``state["source"]``).
    """
    path = out / CHECKPOINT
    if not resume:
        if path.exists():
            raise UnmaskError(f"{out} already holds a run; pass --resume or choose another --out")
        make_dir(out)  # refuses a file of that name before any work
        return None
    state = read_checkpoint(out)
    # A setting added since the run started is taken at its default, so a new field's default must be
    # what the trainer did before it existed (step_cost = 0: the plain ELBO).
    defaults = {f.name: f.default_factory() if f.default_factory is not MISSING else f.default for f in fields(cfg)}
    changed = sorted(k for k, v in asdict(cfg).items()
                     if state["train_config"].get(k, defaults[k]) != v and k not in resumable)
    if changed:
        raise UnmaskError(f"{path}: --resume with different training settings {changed}")
    stored = state.get("source", {})  # checkpoints written before sources were recorded have none
    moved = sorted(k for k, v in (source or {}).items() if k in stored and stored[k] != v)
    if moved:
        raise UnmaskError(f"{path}: --resume with different inputs {moved} than the run started with")
    if cfg.steps < state["step"]:
        raise UnmaskError(f"{path}: the run is at step {state['step']}, past --steps {cfg.steps}")
    return state


def read_checkpoint(out: Path) -> dict:
    """The resumable state in run directory ``out`` (one-line errors for a missing or broken file)."""
    path = Path(out) / CHECKPOINT
    if not path.is_file():
        raise UnmaskError(f"{path}: nothing to resume")
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # a truncated or foreign file: pickle, zip and torch errors alike
        raise UnmaskError(f"{path}: unreadable checkpoint ({type(e).__name__}); start afresh or restore it") from None
    if not isinstance(state, dict) or "train_config" not in state or "step" not in state:
        raise UnmaskError(f"{path}: not a checkpoint of this trainer")
    return state


def truncate_log(out: Path, step: int) -> None:
    """Drop log records past ``step`` (written after the checkpoint a resume starts from)."""
    path = out / LOG
    if path.is_file():
        keep = [line for line in path.read_text().splitlines() if line and json.loads(line)["step"] <= step]
        atomic_write(path, lambda p: Path(p).write_text("".join(k + "\n" for k in keep)))


def append_log(out: Path, record: dict) -> None:
    """Append one record to the run's log."""
    with open(out / LOG, "a") as f:
        f.write(dumps_strict(record) + "\n")


def file_digest(path: str | Path) -> str:
    """A short SHA-256 of a file's bytes (identifies a run's training data)."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def save_checkpoint(out: Path, state: dict) -> None:
    """Write the resumable state atomically."""
    atomic_write(out / CHECKPOINT, lambda p: torch.save(state, p))


class RowCache:
    """Finished results of a long benchmark, kept so that a rerun after an interruption resumes.

    Each result is one JSON line ``{"key": ..., "value": ...}`` appended (and flushed) as soon as it
    is measured; a rerun with the same ``context`` (what identifies the measurement: the model's and
    the code's hashes, the number of examples, ...) takes the stored value instead of measuring again.
    Another context never matches, so a changed model, code or setting measures afresh. A line cut
    short by a kill is dropped. :meth:`done` removes the file once the benchmark has written its
    real output; ``hits`` counts the values found (measurements this run did not make).
    """

    def __init__(self, path: str | Path, context: dict) -> None:
        self.path = Path(path)
        self.context = context
        self.hits = 0
        self._stored: dict[str, str] = {}  # key → the value's JSON (so callers get fresh copies)
        if self.path.is_file():
            for line in self.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # the last line of a killed run
                self._stored[record["key"]] = dumps_strict(record["value"])
            # Rewrite without a cut line, so that the next append starts a line of its own.
            atomic_write(self.path, lambda p: Path(p).write_text("".join(self._line(k, v) for k, v in self._stored.items())))

    @staticmethod
    def _line(key: str, value_json: str) -> str:
        return f'{{"key": {dumps_strict(key)}, "value": {value_json}}}\n'

    def _key(self, key: dict) -> str:
        return dumps_strict({"context": self.context, "key": key}, sort_keys=True)  # a key never overrides the context

    def get(self, key: dict):
        """A copy of the value stored for ``key`` in this context, or None."""
        found = self._stored.get(self._key(key))
        if found is None:
            return None
        self.hits += 1
        return json.loads(found)

    def put(self, key: dict, value) -> None:
        """Store ``value`` (JSON-serialisable) for ``key`` in this context."""
        k, v = self._key(key), dumps_strict(value)
        self._stored[k] = v
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(self._line(k, v))
            f.flush()
            os.fsync(f.fileno())

    def done(self) -> None:
        """Remove the file (the benchmark's results are written)."""
        self.path.unlink(missing_ok=True)


def code_digest() -> str:
    """A short SHA-256 of every source file of the ``unmask`` package (a cached result is only as
    good as the code that measured it)."""
    import hashlib

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]
