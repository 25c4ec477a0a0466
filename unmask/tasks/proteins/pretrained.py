"""Real pretrained protein masked LMs that ship inside PyPI wheels, written out as local Hugging Face models.

- **AntiBERTy** (Ruffolo, Gray & Sulam, 2021; ``pip install --no-deps antiberty==0.1.3``, MIT): a
  26M-parameter BERT masked LM of 558M natural antibody sequences. Its wheel holds a
  ``BertForMaskedLM``-shaped checkpoint with extra species / chain heads, which are dropped.
- **Sapiens** (Prihoda et al., 2022; ``pip install --no-deps sapiens==1.0.5``, MIT): two ~0.57M-parameter
  fairseq RoBERTa masked LMs of human antibody heavy and light chains, converted without fairseq
  (:mod:`unmask.adapters.fairseq`).

``unmask proteins import NAME --out DIR`` writes ``DIR`` with ``config.json``, ``model.safetensors`` and a
one-letter tokenizer, so ``--model hf:DIR`` runs it behind the Denoiser interface everywhere
(generate, infill, ``mi map --task proteins``). Nothing is downloaded: the weights come from the
installed wheel.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from unmask.errors import UnmaskError
from unmask.io import atomic_write, dumps_strict, make_dir

SOURCE_FILE = "unmask_source.json"  # written beside the converted model: what it was made from


@dataclass(frozen=True)
class Pretrained:
    """One importable model."""

    package: str  # the pip distribution that carries the weights
    pip: str  # how to install it
    cite: str  # authors, year
    build: Callable[[Path], tuple[torch.nn.Module, list[str], dict[str, str]]]  # package dir → (model, symbols, specials)


def _package_dir(name: str, pip: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise UnmaskError(f"the {name} package is not installed: {pip}")
    return Path(list(spec.submodule_search_locations)[0])


def _antiberty(root: Path):
    from unmask.adapters.hf import _transformers

    tf = _transformers()
    folder = root / "trained_models" / "AntiBERTy_md_smooth"
    symbols = [ln.strip() for ln in (root / "trained_models" / "vocab.txt").read_text().splitlines() if ln.strip()]
    config = json.loads((folder / "config.json").read_text())
    config.pop("architectures", None)
    config.pop("_name_or_path", None)
    state = torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    keep = {k: v for k, v in state.items() if k.startswith(("bert.embeddings.", "bert.encoder.", "cls.predictions."))
            and not k.endswith("position_ids")}
    model = tf.BertForMaskedLM(tf.BertConfig(**config))
    missing, unexpected = model.load_state_dict(keep, strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise UnmaskError(f"AntiBERTy checkpoint does not fit BertForMaskedLM: missing {missing[:3]}, "
                          f"unexpected {unexpected[:3]}")
    specials = dict(bos_token="[CLS]", eos_token="[SEP]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                    mask_token="[MASK]", unk_token="[UNK]")
    return model.eval(), symbols, specials


def _sapiens(chain: str):
    def build(root: Path):
        from unmask.adapters.fairseq import MASK, convert_fairseq_roberta

        folder = root / "models" / "v1"
        model, symbols = convert_fairseq_roberta(folder / f"checkpoint_v{chain}.pt", folder / "dict.txt")
        specials = dict(bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>", pad_token="<pad>",
                        mask_token=MASK, unk_token="<unk>")
        return model, symbols, specials

    return build


PRETRAINED: dict[str, Pretrained] = {
    "antiberty": Pretrained("antiberty", "pip install --no-deps antiberty==0.1.3", "Ruffolo et al., 2021", _antiberty),
    "sapiens-heavy": Pretrained("sapiens", "pip install --no-deps sapiens==1.0.5", "Prihoda et al., 2022", _sapiens("h")),
    "sapiens-light": Pretrained("sapiens", "pip install --no-deps sapiens==1.0.5", "Prihoda et al., 2022", _sapiens("l")),
}


def char_tokenizer(symbols: list[str], specials: dict[str, str]):
    """A Hugging Face tokenizer whose tokens are ``symbols`` (id = index), splitting text into single letters."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    from unmask.adapters.hf import _transformers

    tok = Tokenizer(models.WordLevel({s: i for i, s in enumerate(symbols)}, unk_token=specials["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return _transformers().PreTrainedTokenizerFast(tokenizer_object=tok, **specials)


def import_pretrained(name: str, out: str | os.PathLike) -> Path:
    """Write the pretrained model ``name`` (a key of :data:`PRETRAINED`) as a Hugging Face directory ``out``."""
    if name not in PRETRAINED:
        raise UnmaskError(f"unknown pretrained model {name!r}; choose one of {', '.join(PRETRAINED)}")
    entry = PRETRAINED[name]
    model, symbols, specials = entry.build(_package_dir(entry.package, entry.pip))
    out = make_dir(out)
    model.save_pretrained(out, safe_serialization=True)
    for weights in out.glob("model*.safetensors*"):  # transformers 5 writes them 0600; shared as atomic_write's files are
        os.chmod(weights, 0o644)
    char_tokenizer(symbols, specials).save_pretrained(out)
    info = {"name": name, "package": entry.package, "cite": entry.cite, "parameters": sum(p.numel() for p in model.parameters())}
    text = dumps_strict(info, indent=1) + "\n"
    atomic_write(out / SOURCE_FILE, lambda tmp: Path(tmp).write_text(text))
    return out
