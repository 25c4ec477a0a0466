"""Models from elsewhere behind the :class:`~unmask.denoiser.Denoiser` interface, and one loader for all.

``--model`` on every evaluating command takes a model directory saved by ``unmask``, ``hf:DIR`` for a
local Hugging Face masked LM (:mod:`unmask.adapters.hf`; ESM-2 and ESM-C folders included), or ``esmc:FILE``
for EvolutionaryScale's ESM-C weights file, read into transformers' ``EsmcForMaskedLM`` (:mod:`unmask.adapters.esmc`).
A model with its own vocabulary is mapped onto a task's ids by :class:`unmask.adapters.mapped.MappedMLM` (the
protein task does this for protein LMs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

HF_PREFIX = "hf:"  # ``--model hf:DIR`` names a local Hugging Face model directory
ESMC_PREFIX = "esmc:"  # ``--model esmc:FILE`` names a local ESM-C weights file (EvolutionaryScale's .pth)


def is_pretrained(spec: str) -> bool:
    """Does ``--model`` name a pretrained model with its own vocabulary (``hf:DIR`` or ``esmc:FILE``)?"""
    return spec.startswith((HF_PREFIX, ESMC_PREFIX))


@dataclass(frozen=True)
class HFOptions:
    """How to load a Hugging Face model (ignored for an unmask model directory)."""

    trust_remote_code: bool = False  # LLaDA / Dream checkpoints ship their own modelling code
    shift_logits: bool = False  # Dream-style models predict token i at position i − 1
    dtype: torch.dtype | None = None  # e.g. torch.bfloat16 for 8B models (esmc: files too)


@dataclass(frozen=True)
class Loaded:
    """A loaded denoiser and what came with it."""

    denoiser: object  # the Denoiser, on the requested device
    directory: Path  # where it was loaded from (the shipped models keep their MI head and order policy there)
    tokenizer: object | None  # the tokenizer of an hf: or esmc: model, else None
    kind: str = "unmask"  # "unmask", "hf" or "esmc" (a transformers EsmcForMaskedLM read from a .pth): where it came from
    weights: Path | None = None  # the file or folder whose weights identify the model (artifacts.model_digest)
    spec: str = ""  # the spec it was loaded from (``--model``), recorded by the add-ons trained for it

    @property
    def is_hf(self) -> bool:
        """A pretrained model with its own vocabulary (hf: or esmc:), not an unmask model."""
        return self.tokenizer is not None


def load_denoiser(spec: str | os.PathLike, device: str | torch.device = "cpu", task: str | None = None,
                  hf: HFOptions = HFOptions()) -> Loaded:
    """Load ``spec`` (an unmask model directory, ``hf:DIR`` or ``esmc:FILE``) onto ``device``.

    ``task``: refuse an unmask model trained for another task (Hugging Face models carry no task).
    """
    from unmask.model import load_model, resolve_device

    spec = os.fspath(spec)
    dev = resolve_device(str(device))
    if spec.startswith(ESMC_PREFIX):
        from unmask.adapters.esmc import load_esmc
        from unmask.adapters.hf import HFDenoiser

        path = Path(spec[len(ESMC_PREFIX):])
        model, tokenizer = load_esmc(path, dev, hf.dtype)
        return Loaded(HFDenoiser(model, tokenizer.mask_token_id, device=dev), path.parent, tokenizer, "esmc", path, spec)
    if spec.startswith(HF_PREFIX):
        from unmask.adapters.hf import HFDenoiser

        path = spec[len(HF_PREFIX):]
        model, tokenizer = HFDenoiser.from_pretrained(path, trust_remote_code=hf.trust_remote_code,
                                                      shift_logits=hf.shift_logits, device=dev, dtype=hf.dtype)
        return Loaded(model, Path(path), tokenizer, "hf", Path(path), spec)
    return Loaded(load_model(spec, task=task).to(dev), Path(spec), None, "unmask", Path(spec), spec)
