"""One on-disk format for everything trained: a safetensors file of tensors beside a versioned JSON.

A base model, an MI head and an order policy are each a :class:`Kind` (the two file names) saved in
a model directory. The JSON holds ``format_version``, ``kind``, the ``config`` that rebuilds the
module, and free metadata (training record, metrics). Loading refuses, in one line each, a missing
file, corrupt JSON or weights, another format version or kind, unknown or missing config keys, and
tensors whose names or shapes do not match the module the config builds.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from unmask.errors import UnmaskError
from unmask.io import atomic_write, make_dir

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
    atomic_write(d / kind.meta, lambda p: Path(p).write_text(json.dumps(meta, indent=2) + "\n"))


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
