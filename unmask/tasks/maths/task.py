"""The maths task: question given, fixed-length answer region infilled; exact final-answer accuracy.

Layout of a sequence (LLaDA style): ``[PAD … PAD question][answer … EOS EOS]`` — the question is
left-padded to ``prompt_len`` positions and always given; the answer region is generated and the
answer is followed by EOS to its end.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from unmask.decode import Policy, TokenRule, policy_spec
from unmask.decode.sequential import Sequential
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.eval import decode_all
from unmask.model import ModelConfig, TransformerDenoiser
from unmask.tasks.maths.answer import extract_answer
from unmask.tasks.maths.arith import Problem
from unmask.tasks.maths.tokenizer import CharTokenizer

NAME = "maths"
TOKENIZER = CharTokenizer()


def default_model_config(prompt_len: int = 144, answer_len: int = 48) -> ModelConfig:
    """Shape of the maths MDM (~1.2M parameters) for questions ≤ ``prompt_len`` characters."""
    return ModelConfig(
        vocab_size=TOKENIZER.vocab_size, mask_id=TOKENIZER.mask_id, seq_len=prompt_len + answer_len,
        d_model=128, n_layers=6, n_heads=4, d_ff=512, rope=True, prompt_len=prompt_len, task=NAME,
    )


def shape(cfg: ModelConfig) -> tuple[int, int]:
    """(question, answer) positions of a maths model."""
    return cfg.prompt_len, cfg.seq_len - cfg.prompt_len


def encode(problems: list[Problem], cfg: ModelConfig, with_answers: bool) -> torch.Tensor:
    """``(N, L)`` ids: questions left-padded, answers (with EOS) or a masked answer region."""
    a_len = cfg.seq_len - cfg.prompt_len
    rows = []
    for k, p in enumerate(problems):
        try:
            rows.append(TOKENIZER.encode_pair(p.question, p.solution if with_answers else None, cfg.prompt_len, a_len))
        except UnmaskError as e:
            raise UnmaskError(f"problem {k + 1}: {e}") from None
    return torch.stack(rows)


def with_budget(policy: Policy, steps: int | None) -> Policy:
    """The policy with its fixed step budget set to ``steps``; ``None`` leaves it as it is.

    An adaptive policy has no budget to set: asking for one is an UnmaskError, not a silent no-op.
    """
    if steps is None:
        return policy
    if not hasattr(policy, "steps"):  # as SemiAR tells a fixed-budget policy
        raise UnmaskError(f"{policy_spec(policy)} has no step budget: --steps applies to random, top_prob and margin")
    return dataclasses.replace(policy, steps=steps)


def evaluate(
    denoiser: Denoiser,
    cfg: ModelConfig,
    problems: list[Problem],
    policy: Policy,
    rule: TokenRule = TokenRule(),
    batch_size: int = 128,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """Decode every answer region; exact match of the number after ``####``; NFE and speed."""
    run = decode_all(denoiser, encode(problems, cfg, with_answers=False), policy, rule, batch_size, seed, progress)
    texts = [TOKENIZER.decode(t[cfg.prompt_len :]) for t in run.result.tokens]
    correct = [extract_answer(t) == p.answer for t, p in zip(texts, problems)]
    nfe = run.result.nfe.double()
    return {
        "n": len(problems),
        "accuracy": sum(correct) / len(problems),
        "mean_nfe": float(nfe.mean()),
        "max_nfe": int(nfe.max()),
        "seconds": round(run.seconds, 3),
        "problems_per_s": round(len(problems) / max(run.seconds, 1e-9), 2),
        "examples": [{"question": p.question, "output": t, "target": p.answer} for p, t in list(zip(problems, texts))[:3]],
    }


@dataclass
class MathsTask:
    """Training: the answer region of each problem under random masks; the question never masked."""

    problems: list[Problem]  # training problems
    cfg: ModelConfig  # model shape (fixes prompt_len and the answer region)
    val: list[Problem] = field(default_factory=list)  # scored by sequential decoding at each validation
    name: str = NAME

    def __post_init__(self) -> None:
        self._tokens = encode(self.problems, self.cfg, with_answers=True)  # (N, L)
        try:  # now, not at the first validation hours later
            if self.val:
                encode(self.val, self.cfg, with_answers=False)
        except UnmaskError as e:
            raise UnmaskError(f"validation {e}") from None
        self._maskable = torch.arange(self.cfg.seq_len) >= self.cfg.prompt_len  # (L,)

    def model(self, cfg: ModelConfig | None) -> TransformerDenoiser:
        return TransformerDenoiser(cfg or self.cfg)

    def sample(self, gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.randint(len(self._tokens), (n,), generator=gen)
        return self._tokens[idx], self._maskable.expand(n, -1)

    def validate(self, model: TransformerDenoiser) -> dict[str, float]:
        if not self.val:
            return {}
        return {"val_acc": round(evaluate(model, model.cfg, self.val, Sequential())["accuracy"], 4)}
