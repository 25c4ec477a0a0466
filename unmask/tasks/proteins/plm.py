"""Pretrained protein language models (ESM-2, AntiBERTy, Sapiens, ESM-C) as protein-task denoisers.

A model loaded with ``--model hf:DIR`` (an ``EsmForMaskedLM``, ``EsmcForMaskedLM``, BERT or RoBERTa folder) or
``esmc:FILE`` (EvolutionaryScale's ESM-C file, read into ``EsmcForMaskedLM``) keeps its own vocabulary; :func:`adapt`
wraps it in :class:`~unmask.adapters.mapped.MappedMLM` so it reads and writes the protein task's
ids (residues 0–19, EOS and MASK input-only) and predicts only the 20 standard residues. The
residues' model ids come from the model's tokenizer (one letter per residue).
"""

from __future__ import annotations

from unmask.adapters import Loaded
from unmask.adapters.mapped import HFForward, MappedConfig, MappedMLM, VocabMap
from unmask.errors import UnmaskError
from unmask.tasks.proteins.fasta import AMINO_ACIDS
from unmask.tasks.proteins.task import EOS_ID, MASK_ID


def _special(tokenizer, *names: str) -> int | None:
    for name in names:
        value = getattr(tokenizer, f"{name}_token_id", None)
        if value is not None:
            return int(value)
    return None


def protein_vocab(tokenizer) -> VocabMap:
    """Where each residue letter, the mask, CLS/BOS, SEP/EOS and PAD land in a tokenizer's vocabulary."""
    unk = _special(tokenizer, "unk")
    ids = []
    for aa in AMINO_ACIDS:
        i = tokenizer.convert_tokens_to_ids(aa)
        if i is None or i == unk:
            raise UnmaskError(f"the model's tokenizer has no token for residue {aa!r}: not a one-letter protein model")
        ids.append(int(i))
    mask, pad = _special(tokenizer, "mask"), _special(tokenizer, "pad")
    if mask is None or pad is None:
        raise UnmaskError("the model's tokenizer names no mask or pad token")
    return VocabMap(tuple(ids), mask=mask, bos=_special(tokenizer, "cls", "bos"), eos=_special(tokenizer, "sep", "eos"),
                    pad=pad, task_mask=MASK_ID, task_end=EOS_ID)


def capacity(config) -> int:
    """Residues a Hugging Face protein model takes: its positions less BOS / EOS (and the padding offset of
    RoBERTa's and absolute-position ESM's learned positions). ESM-C's ``max_position_embeddings`` (2,048) is
    its rotary training length, not a table: 2,046 residues."""
    if getattr(config, "position_embedding_type", "absolute") == "rotary":  # ESM-2: no learned positions
        return int(getattr(config, "max_position_embeddings", 1026)) - 2
    positions = int(getattr(config, "max_position_embeddings", 1026))
    offset = int(config.pad_token_id) + 1 if getattr(config, "model_type", "") in ("roberta", "esm") else 0
    return positions - offset - 2


def adapt(loaded: Loaded) -> MappedMLM:
    """The pretrained model of ``loaded`` (hf: or esmc:) as a protein denoiser over the 20 residues."""
    model = loaded.denoiser.model.eval()  # a transformers masked LM, esmc: files included
    cfg = MappedConfig(capacity(model.config), str(loaded.directory), loaded.kind)
    return MappedMLM(HFForward(model), protein_vocab(loaded.tokenizer), cfg, loaded.denoiser.device)
