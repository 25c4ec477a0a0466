"""Files in and out, with one-line errors: UTF-8 text read, folders made, atomic writes, strict JSON.

Readers and the killed job's resume never see half a file; a path the user got wrong (a folder
where a file goes, a file where a folder goes, a place that cannot be written, bytes that are not
UTF-8) is an :class:`UnmaskError` naming the path, never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from unmask.errors import UnmaskError


def finite_or_none(obj):
    """``obj`` with every NaN or infinite float, in nested dicts, lists and tuples, replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_none(v) for v in obj]
    return obj


def dumps_strict(obj, **kw) -> str:
    """``json.dumps(obj, **kw)`` as strict JSON: a NaN or infinite float is written ``null``, never
    ``NaN``/``Infinity`` (which JSON does not have). Every JSON the package prints or writes goes through here."""
    return json.dumps(finite_or_none(obj), allow_nan=False, **kw)


def read_text(path: str | os.PathLike) -> str:
    """The UTF-8 text of ``path`` (a leading byte-order mark dropped)."""
    if os.fspath(path) == "":  # (Path("") is ".", a folder: the message would not say what went wrong)
        raise UnmaskError("'': an empty file name; give a file")
    path = Path(path)
    if path.is_dir():
        raise UnmaskError(f"{path}: is a folder, not a file")
    if not path.is_file():
        raise UnmaskError(f"{path}: no such file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnmaskError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})") from None
    except OSError as e:
        raise UnmaskError(f"{path}: cannot read it ({e.strerror or e})") from None


def fasta_records(text: str, where: str = "<text>",
                  clean: Callable[[str, str], str] = lambda line, at: "".join(line.split())) -> list[tuple[str, str]]:
    """``(name, sequence)`` of every record of FASTA ``text``: a ``>`` header, then sequence lines, each turned
    into residues by ``clean(line, at)`` (``at`` is ``where:line``, for its one-line refusals). A header without
    a name, a sequence before any header and a record without a sequence are refused, naming the line."""
    records: list[tuple[str, str]] = []
    name, parts, start = None, [], 0

    def close() -> None:
        if name is not None:
            if not "".join(parts):
                raise UnmaskError(f"{where}:{start}: record {name[:40]!r} has no sequence")
            records.append((name, "".join(parts)))

    for line_no, raw in enumerate(text.split("\n"), start=1):  # line feeds only: a name may hold other separators
        line = raw.strip()
        if not line:
            continue
        if line.startswith(">"):
            close()
            name, parts, start = line[1:].strip(), [], line_no
            if not name:
                raise UnmaskError(f"{where}:{line_no}: empty header (a name must follow '>')")
        elif name is None:
            raise UnmaskError(f"{where}:{line_no}: sequence line before any '>' header")
        else:
            parts.append(clean(line, f"{where}:{line_no}"))
    close()
    return records


def make_dir(path: str | os.PathLike) -> Path:
    """``path`` as a folder, made with its parents if missing; refuses a file of that name."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UnmaskError(f"{path}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UnmaskError(f"{path}: cannot make the folder ({e.strerror or e})") from None
    return path


def check_output_file(path: str | os.PathLike, inputs: Iterable[str | os.PathLike | None] = ()) -> Path:
    """Refuse, before any work, an output file path that is a folder, lies under a file, or is one of the
    command's ``inputs`` (through ``.``, ``..`` or a link alike): writing it would destroy what is read.
    An empty path, or one ending in a slash (``out/`` names a folder; ``Path`` would make it a file ``out``), is refused too."""
    given = os.fspath(path)
    if given == "" or given.endswith(("/", os.sep)):
        raise UnmaskError(f"{given!r}: " + ("an empty file name" if not given else "names a folder (it ends in a slash)")
                          + "; give a file name")
    path = Path(path)
    if path.is_dir():
        raise UnmaskError(f"{path}: is a folder; give a file name")
    for given in inputs:
        if given and os.path.exists(path) and os.path.exists(given) and os.path.samefile(path, given):
            raise UnmaskError(f"{path}: is also an input of this command ({given}); give another output")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UnmaskError(f"{parent}: exists and is not a folder")
            break
    return path


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it over ``path``.

    Only a regular file is ever replaced by the rename. A link is followed: a link to a regular file
    has that file replaced (the link stays); anything else that exists — a device such as
    ``/dev/null``, a pipe, ``/dev/stdout`` — is written in place, never replaced (renaming onto
    ``/dev/null`` as root turns the device into a file). Parent folders are made; a folder at
    ``path`` or a place that cannot be written is an :class:`UnmaskError`."""
    path = check_output_file(path)
    if os.path.lexists(path):
        target = Path(os.path.realpath(path))
        if not target.is_file():
            _write_in_place(path, write)
            return
        path = target
    make_dir(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise UnmaskError(f"{path}: cannot write it ({e.strerror or e})") from None
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:  # the bytes reach the disk before the rename makes them visible
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; models and datasets are meant to be shared
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise UnmaskError(f"{path}: cannot write it ({e.strerror or e})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_in_place(path: Path, write: Callable[[str], None]) -> None:
    """``write`` into a temporary file of the system's temp folder, then its bytes into ``path``, an
    existing path that is not a regular file (a device, a pipe): opened and written, never renamed over."""
    fd, tmp = tempfile.mkstemp(prefix="unmask-", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as src, open(path, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    except OSError as e:
        raise UnmaskError(f"{path}: cannot write it ({e.strerror or e})") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
