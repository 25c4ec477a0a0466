"""The maths task: question given, fixed-length answer region infilled; exact final-answer accuracy.

Layout of a sequence (LLaDA style): ``[PAD … PAD question][answer … EOS EOS]`` — the question is
left-padded to ``prompt_len`` positions and always given; the answer region is generated and the
answer is followed by EOS to its end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from unmask.decode.sequential import Sequential
from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.eval import evaluate
from unmask.model import ModelConfig, TransformerDenoiser
from unmask.tasks.base import MODELS, Board
from unmask.tasks.maths.answer import extract_answer
from unmask.tasks.maths.arith import Problem
from unmask.tasks.maths.data import STANDARD_SHAPE, read_problems
from unmask.tasks.maths.tokenizer import CharTokenizer

NAME = "maths"
TOKENIZER = CharTokenizer()
DEFAULT_MODEL = MODELS / "maths"  # the shipped 2-step arithmetic model


def default_model_config(prompt_len: int = 144, answer_len: int = 48) -> ModelConfig:
    """Shape of the maths MDM (~1.2M parameters) for questions ≤ ``prompt_len`` characters."""
    return ModelConfig(
        vocab_size=TOKENIZER.vocab_size, mask_id=TOKENIZER.mask_id, seq_len=prompt_len + answer_len,
        d_model=128, n_layers=6, n_heads=4, d_ff=512, rope=True, prompt_len=prompt_len, task=NAME,
    )


def shape(cfg: ModelConfig) -> tuple[int, int]:
    """(question, answer) positions of a maths model."""
    return cfg.prompt_len, cfg.seq_len - cfg.prompt_len


@dataclass(frozen=True)
class MathsTask:
    """Maths as a :class:`~unmask.tasks.base.Task`: examples are a list of :class:`Problem`."""

    prompt_len: int = STANDARD_SHAPE[0]  # question positions (left-padded)
    answer_len: int = STANDARD_SHAPE[1]  # answer region positions (EOS-padded)
    name: str = NAME
    unit: str = "problem"
    default_model = DEFAULT_MODEL
    outcome_reward = True  # the exact answer

    @classmethod
    def for_model(cls, cfg: ModelConfig) -> MathsTask:
        """The layout a maths model of config ``cfg`` was trained on."""
        return cls(*shape(cfg))

    def read(self, path) -> list[Problem]:
        return read_problems(path)

    def check_model(self, denoiser: Denoiser) -> None:
        if denoiser.vocab_size != TOKENIZER.vocab_size or denoiser.mask_id != TOKENIZER.mask_id:
            raise UnmaskError(f"a maths model predicts the {TOKENIZER.vocab_size} character tokens with mask id "
                              f"{TOKENIZER.mask_id}; this one has {denoiser.vocab_size} tokens and mask id {denoiser.mask_id}")

    def encode(self, problems: list[Problem], with_answers: bool = False) -> torch.Tensor:
        """``(N, L)`` ids: questions left-padded, then the answer (with EOS) or a masked answer region.

        A worked solution that does not fit the answer region is refused even when it is masked: a
        model for shorter problems would score 0 % on them without a word."""
        rows = []
        for k, p in enumerate(problems):
            try:
                row = TOKENIZER.encode_pair(p.question, p.solution or None, self.prompt_len, self.answer_len)
            except UnmaskError as e:
                raise UnmaskError(f"problem {k + 1}: {e}; is the model made for these problems?") from None
            if not with_answers:
                row[self.prompt_len :] = TOKENIZER.mask_id
            rows.append(row)
        return torch.stack(rows)

    def targets(self, problems: list[Problem]) -> torch.Tensor:
        return self.encode(problems, with_answers=True)

    def answers(self, tokens: torch.Tensor) -> list[str]:
        """The decoded answer regions as text."""
        return [TOKENIZER.decode(t[self.prompt_len :]) for t in tokens]

    def score(self, tokens: torch.Tensor, problems: list[Problem]) -> torch.Tensor:
        return torch.tensor([extract_answer(t, single=True) == p.answer for t, p in zip(self.answers(tokens), problems)])

    def show(self, tokens: torch.Tensor, problems: list[Problem], k: int) -> list[dict]:
        return [{"question": p.question, "output": t, "target": p.answer} for p, t in zip(problems[:k], self.answers(tokens[:k]))]

    def related_pairs(self) -> None:
        return None  # no rule links answer characters a priori; the MI maps show what the model found

    def board(self, tokens: torch.Tensor) -> Board:
        cols = 24
        rows = -(-self.answer_len // cols)
        pos = torch.full((rows * cols,), -1, dtype=torch.long)
        pos[: self.answer_len] = torch.arange(self.prompt_len, self.prompt_len + self.answer_len)
        ids = tokens[self.prompt_len :].tolist()  # one label per answer position: its character, if one is there
        labels = [TOKENIZER.chars[i] if i < len(TOKENIZER.chars) and TOKENIZER.chars[i] != "\n" else "" for i in ids]
        return Board((rows, cols), pos, labels + [""] * (rows * cols - self.answer_len))

    def parse_position(self, text: str, tokens: torch.Tensor) -> int:
        try:
            k = int(text)
        except ValueError:
            raise UnmaskError(f"position {text!r}: expected the number of an answer character, 1..{self.answer_len}") from None
        if not 1 <= k <= self.answer_len:
            raise UnmaskError(f"position {k}: the answer region has characters 1..{self.answer_len}")
        if tokens[self.prompt_len + k - 1] != TOKENIZER.mask_id:
            raise UnmaskError(f"position {k} is given; choose a masked answer character")
        return self.prompt_len + k - 1


@dataclass
class MathsTraining:
    """Training: the answer region of each problem under random masks; the question never masked."""

    problems: list[Problem]  # training problems
    cfg: ModelConfig  # model shape (fixes prompt_len and the answer region)
    val: list[Problem] = field(default_factory=list)  # scored by sequential decoding at each validation
    name: str = NAME

    def __post_init__(self) -> None:
        task = MathsTask.for_model(self.cfg)
        self._tokens = task.encode(self.problems, with_answers=True)  # (N, L)
        try:  # now, not at the first validation hours later
            if self.val:
                task.encode(self.val)
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
        return {"val_acc": round(evaluate(MathsTask.for_model(model.cfg), model, self.val, Sequential())["accuracy"], 4)}
