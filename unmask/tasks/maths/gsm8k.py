"""GSM8K with a Hugging Face masked diffusion LM (LLaDA, Nie et al. 2025; Dream): prompts, decoding, answers.

Each question becomes a prompt (the tokenizer's chat template if it has one) followed by
``gen_length`` masked positions, decoded by any policy — inside semi-autoregressive blocks if asked
(LLaDA's scheme) — and the answer is read after ``####`` (lm-evaluation-harness's strict match),
else the last number in the text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from tqdm import tqdm

from unmask import dist
from unmask.decode import SemiAR, TokenRule, decode
from unmask.errors import UnmaskError
from unmask.tasks.maths.answer import extract_answer, last_number

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
    rank, world = dist.rank_world()
    mine = list(range(rank, len(questions), world))  # this process's share of the questions
    groups = group_prompts(gsm8k_prompt_ids([questions[k] for k in mine], tokenizer, chat), denoiser.mask_id, gen_length)
    answers: dict[int, tuple[str, int, int]] = {}  # question → (text, NFE, extra passes)
    start = time.perf_counter()
    with tqdm(total=len(mine), disable=not progress or rank != 0, desc="decode", unit="question") as bar:
        for g in groups:
            pol = SemiAR(policy, block, g.prompt_len) if block else policy
            for lo in range(0, len(g.index), batch_size):
                index = torch.tensor([mine[i] for i in g.index[lo : lo + batch_size].tolist()])  # (B,) question numbers
                rows = g.tokens[lo : lo + batch_size].to(denoiser.device)
                res = decode(denoiser, rows, pol, rule, seeds=(index + seed).to(denoiser.device))
                texts = tokenizer.batch_decode(res.tokens[:, g.prompt_len :].cpu(), skip_special_tokens=True)
                for k, text, n, x in zip(index.tolist(), texts, res.nfe.tolist(), res.extra_passes.tolist()):
                    answers[k] = (text, n, x)
                bar.update(len(index))
    merged = {k: v for part in dist.all_gather(answers) for k, v in part.items()}
    order = [merged[k] for k in range(len(questions))]
    return Generation([t for t, _, _ in order], torch.tensor([n for _, n, _ in order], dtype=torch.long),
                      torch.tensor([x for _, _, x in order], dtype=torch.long), time.perf_counter() - start)


def answer_from_text(text: str) -> str | None:
    """The ``####`` answer, else the last number in the text (the usual GSM8K fallback)."""
    got = extract_answer(text)
    return got if got is not None else last_number(text)
