"""A pretrained masked LM with its own vocabulary, behind a task's ids (protein LMs: ESM-2, AntiBERTy, Sapiens, ESM-C).

A task lays a sequence out over ``seq_len`` positions as ``[t_1 … t_n END … END]`` with its own
ids (proteins: residues 0–19, END and MASK input-only). A pretrained model wants
``[BOS m(t_1) … m(t_n) EOS PAD …]`` in *its* ids, with the pads attention-masked. :class:`MappedMLM`
translates one into the other on the way in, and on the way out keeps only the logits of the
task's V predictable tokens at the sequence positions, so the decode loop, MI tools and policies
see an ordinary :class:`~unmask.denoiser.Denoiser` over the task's vocabulary.

Each model family only says how to run one forward pass (:data:`Forward`); the mapping is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError


class Forward(Protocol):
    """One model family's forward pass."""

    module: torch.nn.Module  # the model (parameters, device)

    def __call__(self, ids: torch.Tensor, attention: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``ids (B, S)``, ``attention (B, S)`` bool → ``(logits (B, S, V_model), hidden (B, S, D))``."""
        ...


@dataclass(frozen=True)
class VocabMap:
    """Where the task's ids land in the model's vocabulary."""

    predict: tuple[int, ...]  # model id of each of the task's V predictable tokens, in the task's order
    mask: int  # the model's mask id
    bos: int | None  # put before the sequence (CLS / <s>); None for a model without one
    eos: int | None  # put after the last token (SEP / </s> / <eos>); None for none
    pad: int  # fills the positions past EOS (attention-masked)
    task_mask: int  # the task's input id of a position still to generate
    task_end: int  # the task's input-only id of the positions past the sequence's end

    def __post_init__(self) -> None:
        if len(set(self.predict)) != len(self.predict):
            raise UnmaskError("two task tokens map onto the same model token")
        if self.mask in self.predict:
            raise UnmaskError("the model's mask token is one of the tokens to predict")


@dataclass(frozen=True)
class MappedConfig:
    """What a mapped model tells the task that lays sequences out for it."""

    seq_len: int  # the longest task sequence it takes (model positions minus BOS / EOS)
    source: str  # where the weights came from (a directory), for reports
    family: str  # "hf" or "esmc" (EvolutionaryScale's file): where the model came from


class MappedMLM:
    """A pretrained masked LM as a :class:`~unmask.denoiser.Denoiser` over a task's vocabulary.

    The model input is cut to the batch's longest sequence (+ BOS / EOS): pads beyond are
    attention-masked, so a row's logits do not depend on what else is in the batch (up to float
    rounding of differently shaped matrix products); positions past a row's own end come back as
    zeros.
    """

    def __init__(self, forward: Forward, vocab: VocabMap, cfg: MappedConfig, device: str | torch.device = "cpu") -> None:
        self.forward = forward
        self.vocab = vocab
        self.cfg = cfg
        self.vocab_size = len(vocab.predict)  # V: the task's predictable tokens
        self.mask_id = vocab.task_mask
        self.device = torch.device(device)
        lut = torch.full((max(vocab.task_mask, vocab.task_end, self.vocab_size - 1) + 1,), vocab.pad, dtype=torch.long)
        lut[: self.vocab_size] = torch.tensor(vocab.predict)
        lut[vocab.task_mask] = vocab.mask
        self._lut = lut.to(self.device)  # task id → model id (END → PAD)
        self._predict = torch.tensor(vocab.predict, device=self.device)  # (V,)

    def model_inputs(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The model's ``(ids (B, S), attention (B, S))`` for task ids ``(B, L)``, and the offset of position 0."""
        tokens = tokens.to(self.device)
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= len(self._lut)):
            raise UnmaskError(f"token ids must be in 0..{len(self._lut) - 1}")
        end = tokens == self.vocab.task_end  # (B, L)
        lengths = (~end).sum(1)  # (B,)
        if (end.long().diff(dim=1) < 0).any():  # a token after the end: the layout is [tokens … END …]
            raise UnmaskError("a sequence continues after its end token: the task's layout is tokens first, then END")
        width = int(lengths.max()) if len(tokens) else 0
        if width > self.cfg.seq_len:
            raise UnmaskError(f"a sequence of {width} tokens: the model holds {self.cfg.seq_len}")
        body = self._lut[tokens[:, :width]]  # (B, n)
        B = len(tokens)
        parts, offset = [], 0
        if self.vocab.bos is not None:
            parts.append(torch.full((B, 1), self.vocab.bos, dtype=torch.long, device=self.device))
            offset = 1
        parts += [body, torch.full((B, 1), self.vocab.pad, dtype=torch.long, device=self.device)]
        ids = torch.cat(parts, dim=1)  # (B, S)
        if self.vocab.eos is not None:
            ids[torch.arange(B, device=self.device), lengths + offset] = self.vocab.eos
        else:
            ids = ids[:, :-1]
        used = lengths + offset + (self.vocab.eos is not None)  # (B,) real (non-pad) positions
        attention = torch.arange(ids.shape[1], device=self.device)[None, :] < used[:, None]  # (B, S)
        return ids, attention, offset

    @torch.no_grad()
    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        B, L = tokens.shape
        ids, attention, offset = self.model_inputs(tokens)
        width = ids.shape[1] - offset - (self.vocab.eos is not None)
        logits, hidden = self.forward(ids, attention)  # (B, S, V_model), (B, S, D)
        logits = logits[:, offset : offset + width].float().index_select(-1, self._predict)  # (B, n, V)
        hidden = hidden[:, offset : offset + width].float()  # (B, n, D)
        pad = L - width
        if pad:
            logits = torch.cat([logits, logits.new_zeros(B, pad, self.vocab_size)], dim=1)
            hidden = torch.cat([hidden, hidden.new_zeros(B, pad, hidden.shape[-1])], dim=1)
        past = (tokens == self.vocab.task_end).to(self.device)[:, :, None]  # (B, L, 1) past each row's own end
        # there the model saw EOS/PAD (what the batch's longest row set): flat logits, zero states, never decoded
        return DenoiserOutput(logits.masked_fill(past, 0.0), hidden.masked_fill(past, 0.0))  # (B, L, V), (B, L, D)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.forward.module.parameters())


@dataclass(frozen=True)
class HFForward:
    """The forward pass of a Hugging Face masked LM (``BertForMaskedLM``, ``RobertaForMaskedLM``, ``EsmForMaskedLM``,
    ``EsmcForMaskedLM``): logits and the last hidden states (after the final norm)."""

    module: torch.nn.Module  # the model, in eval mode

    def __call__(self, ids: torch.Tensor, attention: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.module(input_ids=ids, attention_mask=attention.long(), output_hidden_states=True)
        return out.logits, out.hidden_states[-1]
