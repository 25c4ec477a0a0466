"""GSM8K with a Hugging Face masked diffusion LM (LLaDA, Nie et al. 2025; Dream): prompts, decoding, answers.

Each question becomes a prompt (the tokenizer's chat template if it has one) followed by
``gen_length`` masked positions, decoded by any policy — inside semi-autoregressive blocks if asked
(LLaDA's scheme) — and the answer is read after ``####`` (lm-evaluation-harness's strict match),
else the last number in the text.

The decoding is the seq task's (:func:`unmask.tasks.seq.buckets.fill_rows`): each prompt is a row
(:func:`unmask.tasks.seq.layout.prompt_row`), rows of one length decode together and none is padded, and
question k gets seed ``seed + k``. What is GSM8K's own is the prompt and the answer's extraction.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.decode import TokenRule
from unmask.errors import UnmaskError
from unmask.tasks.maths.answer import extract_answer, last_number
from unmask.tasks.seq.buckets import fill_rows
from unmask.tasks.seq.layout import prompt_row

GSM8K_INSTRUCTION = "Solve the problem step by step. End with the final answer as '#### <number>'.\n\n"


def gsm8k_prompt_ids(questions: list[str], tokenizer, chat: bool = True) -> list[list[int]]:
    """Token ids of GSM8K prompts (the chat template if the tokenizer has one)."""
    templated = chat and bool(getattr(tokenizer, "chat_template", None))
    ids = []
    for q in questions:
        content = GSM8K_INSTRUCTION + q
        if templated:  # the template already holds the special tokens
            text = tokenizer.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                                 add_generation_prompt=True)
        else:
            text = f"Question: {content}\nAnswer:"
        ids.append(list(tokenizer(text, add_special_tokens=not templated)["input_ids"]))
    return ids


@dataclass(frozen=True)
class Generation:
    """What :func:`generate_answers` returns, in the order of the questions."""

    texts: list[str]  # decoded generated regions (special tokens skipped)
    nfe: torch.Tensor  # (N,) forward passes per question
    extra_passes: torch.Tensor  # (N,) passes a policy spent itself (exact-MI probes), apart from NFE
    seconds: float  # wall time of the decoding


def generate_answers(
    denoiser,
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
    Question k always gets seed ``seed + k``: results depend neither on batching nor on the set.
    Under ``torchrun`` question k is answered on rank k mod N and every rank gets all answers."""
    if block and gen_length % block:
        raise UnmaskError(f"gen_length {gen_length} is not a multiple of block {block}")
    rows = [prompt_row(ids, denoiser.mask_id, gen_length, f"question {k + 1}")
            for k, ids in enumerate(gsm8k_prompt_ids(questions, tokenizer, chat))]
    filled = fill_rows(denoiser, rows, policy, rule, batch_size, seed, block or 0, progress)
    texts = tokenizer.batch_decode([t[r.fill] for t, r in zip(filled.tokens, rows)], skip_special_tokens=True)
    return Generation(texts, filled.nfe, filled.extra_passes, filled.seconds)


def answer_from_text(text: str) -> str | None:
    """The ``####`` answer, else the last number in the text (the usual GSM8K fallback)."""
    got = extract_answer(text)
    return got if got is not None else last_number(text)
