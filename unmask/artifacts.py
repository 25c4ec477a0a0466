"""One on-disk format for everything trained: a safetensors file of tensors beside a versioned JSON.

A base model, an MI head and an order policy are each a :class:`Kind` (the two file names) saved in
a directory. The JSON holds ``format_version``, ``kind``, the ``config`` that rebuilds the module,
and free metadata (training record, metrics). Loading refuses, in one line each, a missing file,
corrupt JSON or weights, another format version or kind, unknown or missing config keys, and
tensors whose names or shapes do not match the module the config builds.

An MI head or an order policy is an *add-on* of one base model: it reads that model's hidden states.
It lives in a folder of its own (or beside the model, as the shipped ones do) and records the base
model's :func:`model_digest` under :data:`BASE_SHA256`; :func:`check_base` refuses it with any other.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from unmask.errors import UnmaskError
from unmask.io import atomic_write, dumps_strict, make_dir

FORMAT_VERSION = 1  # bump when a saved layout changes


@dataclass(frozen=True)
class Kind:
    """One kind of saved thing and its two files inside a model directory."""

    name: str  # recorded in the JSON as "kind"
    weights: str  # safetensors file name
    meta: str  # JSON file name
    hint: str  # how a user makes one (named in the refusal when it is missing)


MODEL = Kind("model", "model.safetensors", "config.json", "train one with `unmask <task> train`")
MI_HEAD = Kind("mi_head", "mi_head.safetensors", "mi_head.json", "train one with `unmask mi train`")
ORDER_POLICY = Kind("order_policy", "order_policy.safetensors", "order_policy.json", "train one with `unmask <task> train-order`")


BASE_SHA256 = "base_model_sha256"  # add-on JSON key: the model_digest of the model it was trained for
ADDONS = (MI_HEAD, ORDER_POLICY)  # the kinds that belong to a base model
MODEL_WEIGHTS = ("model*.safetensors", "pytorch_model*.bin")  # the files that identify a model folder, first found wins


def exists(directory: str | os.PathLike, kind: Kind) -> bool:
    """Whether ``directory`` holds a ``kind`` (its JSON file)."""
    return (Path(directory) / kind.meta).is_file()


def save(directory: str | os.PathLike, kind: Kind, tensors: dict[str, torch.Tensor], config, extra: dict | None = None) -> None:
    """Write ``kind``'s safetensors and JSON into ``directory`` atomically.

    ``config`` is the dataclass that rebuilds the module; ``extra`` is metadata kept beside it.
    """
    from safetensors.torch import save_file

    d = make_dir(directory)
    state = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    meta = {"format_version": FORMAT_VERSION, "kind": kind.name, "config": dataclasses.asdict(config), **(extra or {})}
    atomic_write(d / kind.weights, lambda p: save_file(state, p))
    atomic_write(d / kind.meta, lambda p: Path(p).write_text(dumps_strict(meta, indent=2) + "\n"))


def read_meta(directory: str | os.PathLike, kind: Kind) -> dict:
    """The JSON of ``kind`` in ``directory``, checked for format version and kind."""
    path = Path(directory) / kind.meta
    if not path.is_file():
        what = "not a model directory" if kind is MODEL else f"no {kind.name.replace('_', ' ')}"
        raise UnmaskError(f"{directory}: {what} (no {kind.meta}); {kind.hint}")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UnmaskError(f"{path}: corrupt JSON ({e})") from None
    if not isinstance(meta, dict) or "config" not in meta:
        raise UnmaskError(f"{path}: not an unmask {kind.name} file")
    # Files written before kinds were recorded: models carried format_version 1, MI heads no version.
    version = meta.get("format_version", FORMAT_VERSION if kind is MI_HEAD else None)
    if version != FORMAT_VERSION or meta.get("kind", kind.name) != kind.name:
        raise UnmaskError(f"{path}: not an unmask {kind.name} file of format {FORMAT_VERSION} "
                          f"(found kind {meta.get('kind')!r}, format {meta.get('format_version')!r})")
    return meta


def build_config(cls: type, raw, path: str | os.PathLike):
    """``cls(**raw)`` for a config dataclass, refusing unknown or missing keys in one line."""
    if not isinstance(raw, dict):
        raise UnmaskError(f"{path}: config is not an object")
    unknown = sorted(set(raw) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise UnmaskError(f"{path}: unknown config keys {unknown}")
    try:
        return cls(**raw)
    except (TypeError, ValueError) as e:
        raise UnmaskError(f"{path}: bad config ({e})") from None


def load_tensors(directory: str | os.PathLike, kind: Kind) -> dict[str, torch.Tensor]:
    """The tensors of ``kind``'s safetensors file (on the CPU)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(directory) / kind.weights
    if not path.is_file():
        raise UnmaskError(f"{directory}: missing {kind.weights}")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as e:
        raise UnmaskError(f"{path}: corrupt weights file ({e})") from None


def load_state(module: torch.nn.Module, tensors: dict[str, torch.Tensor], path: str | os.PathLike) -> None:
    """Load ``tensors`` into ``module``, refusing other names or shapes than the config builds."""
    expected = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    if expected != got:
        diff = sorted(set(expected.items()) ^ set(got.items()))[:3]
        raise UnmaskError(f"{path}: weights do not match the config (first differences: {diff})")
    module.load_state_dict(tensors)


def copy_file(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy one saved file atomically (e.g. a base model's files into a run's export)."""
    import shutil

    atomic_write(dst, lambda p: shutil.copyfile(src, p))


def copy_model(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a model's files from directory ``src`` into ``dst`` (nothing if they are the same folder),
    so that heads saved into ``dst`` sit beside the model they were trained for."""
    if Path(dst).exists() and Path(dst).resolve() == Path(src).resolve():
        return
    for name in (MODEL.meta, MODEL.weights):
        copy_file(Path(src) / name, Path(dst) / name)


_digests: dict[tuple, str] = {}  # (path, size, mtime) of each weights file → its digest, within one process


def _file_sha256(path: Path) -> str:
    import hashlib

    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _digests:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 24), b""):  # 16 MiB at a time: a 300M model is never whole in memory
                h.update(block)
        _digests[key] = h.hexdigest()
    return _digests[key]


def model_digest(path: str | os.PathLike) -> str:
    """A short SHA-256 that identifies a model by its weights.

    ``path`` is a weights file (an ESM-C ``.pth``), or a folder: an unmask model directory (its
    ``model.safetensors``) or a Hugging Face folder (its ``model*.safetensors`` shards, else its
    ``pytorch_model*.bin``). Nothing else in the folder counts: not the add-ons saved beside a model, nor a
    trainer's checkpoint or optimizer state. One file: the SHA-256 of its bytes (as the training runs record
    ``model_sha256``); several shards: the SHA-256 of their names and digests.
    """
    p = Path(path)
    if p.is_file():
        return _file_sha256(p)[:16]
    files = []
    for pattern in MODEL_WEIGHTS:
        files = sorted(f for f in p.glob(pattern) if f.is_file()) if p.is_dir() else []
        if files:
            break
    if not files:
        raise UnmaskError(f"{path}: no model weights to identify the model by ({', '.join(MODEL_WEIGHTS)})")
    if len(files) == 1:
        return _file_sha256(files[0])[:16]
    import hashlib

    return hashlib.sha256("".join(f"{f.name}\0{_file_sha256(f)}\n" for f in files).encode()).hexdigest()[:16]


def recorded_base(meta: dict) -> str | None:
    """The base model digest an add-on's JSON records (None for files saved before it was recorded).
    Order policies first recorded it as their run's ``source.model_sha256``: the model they started from,
    which is not their base after ``finetune`` (they belong with the fine-tuned model saved beside them)."""
    if BASE_SHA256 in meta:
        return meta[BASE_SHA256]
    if (meta.get("train_config") or {}).get("finetune"):
        return None
    return (meta.get("source") or {}).get("model_sha256")


NAMES = {"mi_head": "MI head", "order_policy": "order policy"}  # how a refusal names each add-on


def check_base(meta: dict, where: str | os.PathLike, kind: Kind, base: str | os.PathLike | None,
               required: bool = False) -> None:
    """Refuse, in one line, an add-on (``meta``: its JSON, found in ``where``) trained for another model than
    ``base`` (a path :func:`model_digest` reads). ``required``: also refuse one that records no base model
    (an add-on named on its own, away from any model); otherwise nothing is checked when either side is unknown."""
    recorded = recorded_base(meta)
    what = NAMES.get(kind.name, kind.name)
    if recorded is None and required and base is not None:
        raise UnmaskError(f"{where}: this {what} records no base model (base_model_sha256), so nothing ties it to the "
                          f"model given; {kind.hint} for it, or save it beside its model")
    if recorded is None or base is None:
        return
    actual = model_digest(base)
    if recorded != actual:
        trained = f" ({meta['base_model']})" if isinstance(meta.get("base_model"), str) else ""
        raise UnmaskError(f"{where}: this {what} was trained for another model{trained}, weights {recorded}; "
                          f"the model given ({base}) has weights {actual}; {kind.hint} for it")
