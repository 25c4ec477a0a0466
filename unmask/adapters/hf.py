"""Hugging Face masked diffusion LMs (LLaDA / Dream style) behind the Denoiser interface.

Loads only from a *local* directory (no downloads): any bidirectional model that returns logits
for every position — ``AutoModelForMaskedLM`` models, or LLaDA/Dream through ``AutoModel`` with
``trust_remote_code``. The mask id comes from the config (``mask_token_id``) or the tokenizer.
Dream-style models predict token i at position i−1: pass ``shift_logits=True``.

Needs ``pip install 'unmask[hf]'`` (transformers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError
from unmask.tasks.maths.answer import extract_answer, normalise_number

GSM8K_INSTRUCTION = "Solve the problem step by step. End with the final answer as '#### <number>'.\n\n"


def _transformers():
    try:
        import transformers
    except ImportError:
        raise UnmaskError("Hugging Face models need transformers: pip install 'unmask[hf]'") from None
    return transformers


class HFDenoiser:
    """A Hugging Face model as a :class:`~unmask.denoiser.Denoiser` (logits + last hidden states)."""

    def __init__(self, model, mask_id: int, shift_logits: bool = False, device: str = "cpu", pad_id: int | None = None) -> None:
        self.model = model.eval()
        self.mask_id = int(mask_id)
        self.pad_id = pad_id  # left padding (a leading run of this id) is hidden by the attention mask
        self.shift_logits = shift_logits
        self.device = device
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0]) if model.get_output_embeddings() is not None else int(model.config.vocab_size)

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, *, trust_remote_code: bool = False, shift_logits: bool = False,
        device: str = "cpu", dtype: torch.dtype | None = None,
    ) -> tuple["HFDenoiser", object]:
        """Load model and tokenizer from a local directory; returns ``(denoiser, tokenizer)``."""
        tf = _transformers()
        if not os.path.isdir(path):
            raise UnmaskError(f"{path}: not a local model directory (unmask never downloads weights)")
        kw = dict(local_files_only=True, trust_remote_code=trust_remote_code)
        try:
            tokenizer = tf.AutoTokenizer.from_pretrained(path, **kw)
            config = tf.AutoConfig.from_pretrained(path, **kw)
            try:
                model = tf.AutoModelForMaskedLM.from_pretrained(path, dtype=dtype, **kw)
            except ValueError:  # LLaDA / Dream register only AutoModel
                model = tf.AutoModel.from_pretrained(path, dtype=dtype, **kw)
        except OSError as e:
            raise UnmaskError(f"{path}: cannot load ({str(e).splitlines()[0]})") from None
        mask_id = getattr(config, "mask_token_id", None)
        if mask_id is None:
            mask_id = tokenizer.mask_token_id
        if mask_id is None:
            raise UnmaskError(f"{path}: no mask token id in the config (mask_token_id) or the tokenizer")
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        return cls(model.to(device), mask_id, shift_logits, device, pad), tokenizer

    @torch.no_grad()
    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        kw = {}
        if self.pad_id is not None:  # attend to nothing in the left padding: results do not depend on batching
            kw["attention_mask"] = ((tokens != self.pad_id).cumsum(1) > 0).long().to(self.device)
        out = self.model(input_ids=tokens.to(self.device), output_hidden_states=True, **kw)
        logits = out.logits.float()
        if self.shift_logits:
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        return DenoiserOutput(logits.cpu(), out.hidden_states[-1].float().cpu())


@dataclass(frozen=True)
class PromptBatch:
    """Prompts left-padded to one length, followed by ``gen_length`` masked positions."""

    tokens: torch.Tensor  # (B, P + G)
    prompt_len: int  # P


def gsm8k_prompts(questions: list[str], tokenizer, mask_id: int, gen_length: int, chat: bool = True) -> PromptBatch:
    """GSM8K prompts (chat template if the tokenizer has one) + a masked generation region."""
    templated = chat and bool(getattr(tokenizer, "chat_template", None))
    texts = []
    for q in questions:
        content = GSM8K_INSTRUCTION + q
        if templated:  # the template already holds the special tokens
            texts.append(tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True))
        else:
            texts.append(f"Question: {content}\nAnswer:")
    ids = [tokenizer(t, add_special_tokens=not templated)["input_ids"] for t in texts]
    p = max(len(x) for x in ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    rows = [[pad] * (p - len(x)) + list(x) + [mask_id] * gen_length for x in ids]
    return PromptBatch(torch.tensor(rows), p)


def answer_from_text(text: str) -> str | None:
    """The ``####`` answer, else the last number in the text (the usual GSM8K fallback)."""
    got = extract_answer(text)
    if got is not None:
        return got
    numbers = [normalise_number(w) for w in text.replace("$", " ").split()]
    numbers = [n for n in numbers if n is not None]
    return numbers[-1] if numbers else None
