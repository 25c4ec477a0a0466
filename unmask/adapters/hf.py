"""Hugging Face masked diffusion LMs (LLaDA / Dream style) behind the Denoiser interface.

Loads only from a *local* directory (no downloads): any bidirectional model that returns logits
for every position — ``AutoModelForMaskedLM`` models, or LLaDA/Dream through ``AutoModel`` with
``trust_remote_code``. The mask id comes from the config (``mask_token_id``) or the tokenizer.
Dream-style models predict token i at position i−1: pass ``shift_logits=True``.

Needs ``pip install 'unmask[hf]'`` (transformers).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import torch
from tqdm import tqdm

from unmask.decode import TokenRule, decode
from unmask.decode.semi_ar import SemiAR
from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError
from unmask.tasks.maths.answer import extract_answer, last_number

GSM8K_INSTRUCTION = "Solve the problem step by step. End with the final answer as '#### <number>'.\n\n"


def _transformers():
    try:
        import transformers
    except ImportError:
        raise UnmaskError("Hugging Face models need transformers: pip install 'unmask[hf]'") from None
    return transformers


class HFDenoiser:
    """A Hugging Face model as a :class:`~unmask.denoiser.Denoiser` (logits + last hidden states).

    No attention mask is passed: LLaDA ignores one and Dream wants its own 4-D form, so prompts are
    never padded (see :func:`group_prompts`) and every row of a batch is a complete sequence.
    """

    def __init__(self, model, mask_id: int, shift_logits: bool = False, device: str = "cpu") -> None:
        self.model = model.eval()
        self.mask_id = int(mask_id)
        self.shift_logits = shift_logits  # Dream-style: position i's token is predicted at i - 1
        self.device = device
        head = model.get_output_embeddings()
        self.vocab_size = int(head.weight.shape[0]) if head is not None else int(model.config.vocab_size)

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
        return DenoiserOutput(logits.cpu(), out.hidden_states[-1].float().cpu())


def gsm8k_prompt_ids(questions: list[str], tokenizer, chat: bool = True) -> list[list[int]]:
    """Token ids of GSM8K prompts (the chat template if the tokenizer has one)."""
    templated = chat and bool(getattr(tokenizer, "chat_template", None))
    ids = []
    for q in questions:
        content = GSM8K_INSTRUCTION + q
        if templated:  # the template already holds the special tokens
            text = tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True)
        else:
            text = f"Question: {content}\nAnswer:"
        ids.append(list(tokenizer(text, add_special_tokens=not templated)["input_ids"]))
    return ids


@dataclass(frozen=True)
class PromptGroup:
    """Prompts of one token length, each followed by ``gen_length`` masked positions (no padding)."""

    index: torch.Tensor  # (B,) where these prompts stand in the input list
    tokens: torch.Tensor  # (B, P + G)
    prompt_len: int  # P


def group_prompts(ids: list[list[int]], mask_id: int, gen_length: int) -> list[PromptGroup]:
    """Group prompts by length so that no row is ever padded: a prompt decodes the same whatever
    else is in the set (left padding would shift absolute positions, and LLaDA ignores masks)."""
    lengths = sorted({len(x) for x in ids})
    groups = []
    for p in lengths:
        index = [k for k, x in enumerate(ids) if len(x) == p]
        rows = [ids[k] + [mask_id] * gen_length for k in index]
        groups.append(PromptGroup(torch.tensor(index), torch.tensor(rows), p))
    return groups


@dataclass(frozen=True)
class Generation:
    """What :func:`generate_answers` returns, in the order of the questions."""

    texts: list[str]  # decoded generated regions (special tokens skipped)
    nfe: torch.Tensor  # (N,) forward passes per question
    seconds: float  # wall time of the decoding


def generate_answers(
    denoiser: HFDenoiser,
    tokenizer,
    questions: list[str],
    policy,
    gen_length: int,
    block: int | None = None,
    rule: TokenRule = TokenRule(),
    batch_size: int = 8,
    seed: int = 0,
    chat: bool = True,
    progress: bool = False,
) -> Generation:
    """Answer GSM8K questions: ``gen_length`` masked positions after each prompt, decoded by
    ``policy`` (inside semi-autoregressive blocks of ``block`` positions if given, LLaDA's scheme).
    Question k always gets seed ``seed + k``: results depend neither on batching nor on the set."""
    if block and gen_length % block:
        raise UnmaskError(f"gen_length {gen_length} is not a multiple of block {block}")
    groups = group_prompts(gsm8k_prompt_ids(questions, tokenizer, chat), denoiser.mask_id, gen_length)
    texts: list[str] = [""] * len(questions)
    nfe = torch.zeros(len(questions), dtype=torch.long)
    start = time.perf_counter()
    with tqdm(total=len(questions), disable=not progress, desc="decode", unit="question") as bar:
        for g in groups:
            pol = SemiAR(policy, block, g.prompt_len) if block else policy
            for lo in range(0, len(g.index), batch_size):
                index = g.index[lo : lo + batch_size]
                res = decode(denoiser, g.tokens[lo : lo + batch_size], pol, rule, seeds=index + seed)
                for k, text in zip(index.tolist(), tokenizer.batch_decode(res.tokens[:, g.prompt_len :], skip_special_tokens=True)):
                    texts[k] = text
                nfe[index] = res.nfe
                bar.update(len(index))
    return Generation(texts, nfe, time.perf_counter() - start)


def answer_from_text(text: str) -> str | None:
    """The ``####`` answer, else the last number in the text (the usual GSM8K fallback)."""
    got = extract_answer(text)
    return got if got is not None else last_number(text)
