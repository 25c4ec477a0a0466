"""Hugging Face masked diffusion LMs (LLaDA / Dream style) behind the Denoiser interface.

Loads only from a *local* directory (no downloads): any bidirectional model that returns logits
for every position — ``AutoModelForMaskedLM`` models, or LLaDA/Dream through ``AutoModel`` with
``trust_remote_code``. The mask id comes from the config (``mask_token_id``) or the tokenizer.
Dream-style models predict token i at position i−1: pass ``shift_logits=True``.

Needs ``pip install 'unmask[hf]'`` (transformers). Prompting for a task (GSM8K questions) lives with
the task (:mod:`unmask.tasks.maths.gsm8k`); this module is only the model behind the interface.
"""

from __future__ import annotations

import os

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError


def _transformers():
    try:
        import transformers
    except ImportError:
        raise UnmaskError("Hugging Face models need transformers: pip install 'unmask[hf]'") from None
    return transformers


class HFDenoiser:
    """A Hugging Face model as a :class:`~unmask.denoiser.Denoiser` (logits + last hidden states).

    No attention mask is passed: LLaDA ignores one and Dream wants its own 4-D form, so prompts are
    never padded (see :func:`unmask.tasks.seq.buckets.buckets`) and every row of a batch is a
    complete sequence. Outputs stay on the model's device, where the decode loop keeps its tensors.
    """

    def __init__(self, model, mask_id: int, shift_logits: bool = False, device: str | torch.device = "cpu") -> None:
        self.model = model.eval()
        self.mask_id = int(mask_id)
        self.shift_logits = shift_logits  # Dream-style: position i's token is predicted at i - 1
        self.device = torch.device(device)
        head = model.get_output_embeddings()
        self.vocab_size = int(head.weight.shape[0]) if head is not None else int(model.config.vocab_size)

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, *, trust_remote_code: bool = False, shift_logits: bool = False,
        device: str = "cpu", dtype: torch.dtype | None = None,
    ) -> tuple[HFDenoiser, object]:
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
            except ValueError as e:  # LLaDA / Dream register only AutoModel
                if "trust_remote_code" in str(e):
                    raise
                model = tf.AutoModel.from_pretrained(path, dtype=dtype, **kw)
        except (OSError, ValueError) as e:
            hint = "" if trust_remote_code else "; LLaDA/Dream checkpoints need --trust-remote-code"
            raise UnmaskError(f"{path}: cannot load ({str(e).strip().splitlines()[0]}){hint}") from None
        mask_id = getattr(config, "mask_token_id", None)
        if mask_id is None:
            mask_id = tokenizer.mask_token_id
        if mask_id is None:
            raise UnmaskError(f"{path}: no mask token id in the config (mask_token_id) or the tokenizer")
        return cls(model.to(device), mask_id, shift_logits, device), tokenizer

    @torch.no_grad()
    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        out = self.model(input_ids=tokens.to(self.device), output_hidden_states=True)
        if getattr(out, "logits", None) is None:
            raise UnmaskError(f"{type(self.model).__name__} returns no logits: load a model with a language-model head")
        logits = out.logits.float()  # (B, L, V)
        if self.shift_logits:
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        return DenoiserOutput(logits, out.hidden_states[-1].float())  # (B, L, V), (B, L, D) on the model's device
