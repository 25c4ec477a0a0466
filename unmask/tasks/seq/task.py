"""The task of the user's own sequences, as the evaluator, the MI tools and the CLI see it.

:class:`SeqConfig` holds the choices (the ``unmask seq`` flags); :func:`bind` builds, for a loaded
model, the task (:class:`SeqTask`) and the model as the task decodes it (:class:`SeqDenoiser`: fills
keep to the codec's values). Sequences of different lengths are decoded length by length
(:mod:`unmask.tasks.seq.buckets`); :meth:`SeqTask.encode` and :meth:`SeqTask.targets`, which give one
``(N, L)`` tensor for the MI and learned-order tools, need every example at one length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError
from unmask.tasks.base import Board
from unmask.tasks.seq.codec import Codec, build_codec
from unmask.tasks.seq.data import FORMATS, Example, Fields, read_examples
from unmask.tasks.seq.layout import Fill, Row, fill_for, parse_spans
from unmask.tasks.seq.score import answer_text, scorer, target_text

NAME = "seq"
BOARD_COLUMNS = 10  # cells per line of an MI map's picture of a sequence


@dataclass(frozen=True)
class SeqConfig:
    """How a file of sequences becomes rows to fill (the flags of ``unmask seq``)."""

    format: str = "auto"  # input format: auto (by the file's suffix), fasta, jsonl or text
    text_field: str = "text"  # JSONL: the field holding the sequence or prompt
    target_field: str = "target"  # JSONL: the field holding what the positions to fill should read (optional)
    alphabet: str = ""  # one token per character of this alphabet (e.g. ACGT) instead of the model's tokenizer
    mask_char: str = ""  # marks a position to fill in the input (default: the tokenizer's mask token; _ with an alphabet)
    spans: str = ""  # fill these token spans of every sequence: LO:HI,LO:HI (0-based, HI excluded, special tokens not counted)
    generate: int = 0  # fill this many new positions after each sequence (a prompt); 0 = off
    block: int = 0  # with --generate: semi-autoregressive blocks of this many positions (LLaDA); 0 = none

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise UnmaskError(f"--format {self.format!r}: choose one of {', '.join(FORMATS)}")
        if self.generate < 0 or self.block < 0:
            raise UnmaskError("--generate and --block must be >= 0")
        if self.spans:
            parse_spans(self.spans)
            if self.generate:
                raise UnmaskError("--spans and --generate: give one of the two")
        if self.block and (not self.generate or self.generate % self.block):
            raise UnmaskError(f"--block {self.block} needs --generate N, a multiple of it")


@dataclass(frozen=True)
class Lengths:
    """The lengths (special tokens included) a model takes."""

    exact: int | None = None  # an unmask model's one length, else None
    most: int | None = None  # a pretrained model's learned positions, else None (no limit known)

    def check(self, n: int, what: str) -> None:
        if self.exact is not None and n != self.exact:
            raise UnmaskError(f"{what}: {n} tokens; this model takes sequences of exactly {self.exact}")
        if self.most is not None and n > self.most:
            raise UnmaskError(f"{what}: {n} tokens; the model holds {self.most}")


@dataclass(frozen=True)
class SeqSetup:
    """What the task lays sequences out with for one model (``model.cfg`` of a :class:`SeqDenoiser`)."""

    codec: Codec  # text ↔ the model's ids
    config: SeqConfig = SeqConfig()  # the user's choices
    lengths: Lengths = Lengths()  # the lengths the model takes


class SeqDenoiser:
    """``base`` whose fills keep to the values ``allowed`` (an alphabet's characters; inside a sequence,
    no special token): the others' logits are −∞. Hidden states are the base model's."""

    def __init__(self, base, allowed: torch.Tensor, setup: SeqSetup) -> None:
        self.base = base  # the model as loaded (pseudo-log-likelihoods read its own distribution)
        self.vocab_size, self.mask_id, self.device = base.vocab_size, base.mask_id, base.device
        self.cfg = setup
        self._blocked = ~allowed.to(base.device)  # (V,)

    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        logits, hidden = self.base(tokens)  # (B, L, V), (B, L, D)
        return DenoiserOutput(logits.masked_fill(self._blocked.to(logits.device), float("-inf")), hidden)

    def num_parameters(self) -> int:
        module = self.base if isinstance(self.base, torch.nn.Module) else self.base.model  # an unmask model, or a wrapped one
        return sum(p.numel() for p in module.parameters())


def model_lengths(loaded) -> Lengths:
    """An unmask model's fixed length, or a Hugging Face model's learned absolute positions (if it has them)."""
    from unmask.model import TransformerDenoiser

    if isinstance(loaded.denoiser, TransformerDenoiser):
        return Lengths(exact=loaded.denoiser.cfg.seq_len)
    config = getattr(getattr(loaded.denoiser, "model", None), "config", None)
    if getattr(config, "position_embedding_type", "absolute") != "absolute" or \
            not isinstance(getattr(config, "max_position_embeddings", None), int):
        return Lengths()
    offset = int(config.pad_token_id) + 1 if config.model_type in ("roberta", "xlm-roberta", "esm") else 0
    return Lengths(most=config.max_position_embeddings - offset)


def bind(loaded, config: SeqConfig = SeqConfig()) -> tuple[SeqTask, SeqDenoiser]:
    """The task and the model it decodes, for ``loaded`` (:class:`unmask.adapters.Loaded`) and ``config``."""
    base = loaded.denoiser
    codec = build_codec(base.mask_id, loaded.tokenizer, config.alphabet, config.mask_char)
    setup = SeqSetup(codec, config, model_lengths(loaded))
    return SeqTask(setup), SeqDenoiser(base, codec.allowed(base.vocab_size, end=config.generate > 0), setup)


@dataclass(frozen=True)
class SeqTask:
    """The user's sequences as a :class:`~unmask.tasks.base.Task`. Without a :class:`SeqSetup` it can
    only read files (``get_task("seq")``); :func:`bind` gives it the model's codec."""

    setup: SeqSetup | None = None
    name: str = NAME
    unit: str = "sequence"
    default_model = None  # no shipped model: --model is required
    outcome_reward = True  # the target, exactly (examples without one are refused)

    @classmethod
    def for_model(cls, cfg) -> SeqTask:
        """The task of a :class:`SeqDenoiser` (``cfg``: its :class:`SeqSetup`)."""
        if not isinstance(cfg, SeqSetup):
            raise UnmaskError("the seq task needs the model's tokenizer or an alphabet: build it with unmask.tasks.seq.task.bind")
        return cls(cfg)

    @property
    def config(self) -> SeqConfig:
        return self.setup.config if self.setup is not None else SeqConfig()

    @property
    def codec(self) -> Codec:
        if self.setup is None:
            raise UnmaskError("the seq task needs a model to lay sequences out for")
        return self.setup.codec

    def read(self, path) -> list[Example]:
        return read_seq(path, self.config)

    def fill(self, ex: Example) -> Fill:
        """The rule that chooses ``ex``'s positions to fill (:func:`unmask.tasks.seq.layout.fill_for`)."""
        return fill_for(ex, parse_spans(self.config.spans) if self.config.spans else None, self.config.generate)

    def rows(self, examples: list[Example]) -> list[Row]:
        """Every example laid out for the model (UnmaskError naming the first that cannot be)."""
        rows = [self.fill(ex).row(self.codec, ex) for ex in examples]
        for ex, row in zip(examples, rows):
            self.setup.lengths.check(len(row.tokens), ex.name)
        return rows

    def check_model(self, denoiser) -> None:
        if denoiser.mask_id != self.codec.mask_id:
            raise UnmaskError(f"the model's mask id is {denoiser.mask_id}, the task's {self.codec.mask_id}: another model")

    def encode(self, examples: list[Example]) -> torch.Tensor:
        """``(N, L)`` ids with the mask id at the positions to fill; every example must come to one length."""
        return _stack([r.tokens for r in self.rows(examples)], examples)

    def targets(self, examples: list[Example]) -> torch.Tensor:
        """``(N, L)`` the complete sequences: the target's ids at the positions to fill (one length, as :meth:`encode`)."""
        clean = []
        for ex, row in zip(examples, self.rows(examples)):
            tokens = row.tokens.clone()
            tokens[row.fill] = torch.tensor(self.fill(ex).target_body(self.codec, ex, row), dtype=torch.long)
            clean.append(tokens)
        return _stack(clean, examples)

    def score(self, tokens: torch.Tensor, examples: list[Example], regex: str = "") -> torch.Tensor:
        """``(N,)`` bool: does each decoded sequence's filled text equal its target (exact, or by ``regex``)?"""
        rule = scorer(regex)
        rows = self.rows(examples)
        return torch.tensor([rule.correct(answer_text(self.codec, r, t), _needs_target(target_text(self.codec, ex, r), ex))
                             for ex, r, t in zip(examples, rows, tokens)], dtype=torch.bool)

    def show(self, tokens: torch.Tensor, examples: list[Example], k: int) -> list[dict]:
        rows = self.rows(examples[:k])
        return [{"name": ex.name, "output": answer_text(self.codec, r, t)} for ex, r, t in zip(examples, rows, tokens)]

    def related_pairs(self) -> None:
        return None  # nothing is known of a user's sequences: MI maps show what the model found

    def board(self, tokens: torch.Tensor) -> Board:
        n = len(tokens)
        rows = -(-n // BOARD_COLUMNS)
        body = torch.arange(n)
        inside = (body >= len(self.codec.prefix)) & (body < n - len(self.codec.suffix))  # (L,) not a special token
        labels = [s[:4] if t != self.codec.mask_id and ok else "" for s, t, ok in
                  zip(self.codec.symbols(tokens.tolist()), tokens.tolist(), inside.tolist())]
        pad = rows * BOARD_COLUMNS - n
        return Board((rows, BOARD_COLUMNS), torch.cat([torch.where(inside, body, -1), torch.full((pad,), -1)]),
                     labels + [""] * pad)

    def parse_position(self, text: str, tokens: torch.Tensor) -> int:
        """Token K (1-based, over the sequence's own tokens) as a model position; it must be one to fill."""
        offset, n = len(self.codec.prefix), len(tokens) - len(self.codec.prefix) - len(self.codec.suffix)
        try:
            k = int(text)
        except ValueError:
            raise UnmaskError(f"position {text!r}: expected a token number 1..{n}") from None
        if not 1 <= k <= n:
            raise UnmaskError(f"position {k}: the sequence has tokens 1..{n}")
        if tokens[offset + k - 1] != self.codec.mask_id:
            raise UnmaskError(f"token {k} is given; choose one to fill")
        return offset + k - 1


def read_seq(path, config: SeqConfig = SeqConfig()) -> list[Example]:
    """The examples of the file at ``path``, read as ``config`` says (no model needed)."""
    return read_examples(path, config.format, Fields(config.text_field, config.target_field))


def records(codec: Codec, examples: list[Example], rows: list[Row], tokens: list[torch.Tensor], nfe: torch.Tensor) -> list[dict]:
    """One JSON-ready record per decoded example: its number in the input, name, whole text, the filled
    text (``answer``), the filled tokens and their positions (counted as ``--spans`` counts), and NFE."""
    out = []
    for k, (ex, row, t) in enumerate(zip(examples, rows, tokens)):
        body = t[row.offset : len(t) - len(codec.suffix)].tolist()
        out.append({"index": k, "name": ex.name, "text": codec.text(body), "answer": answer_text(codec, row, t),
                    "filled": codec.symbols(t[row.fill].tolist()),
                    "positions": (row.fill.nonzero().squeeze(1) - row.offset).tolist(), "nfe": int(nfe[k])})
    return out


def _needs_target(text: str | None, ex: Example) -> str:
    if text is None:
        raise UnmaskError(f"{ex.name}: no target to score against (a JSONL target field, or --spans)")
    return text


def _stack(rows: list[torch.Tensor], examples: list[Example]) -> torch.Tensor:
    """``(N, L)`` from rows of one length; else one line naming two examples of different lengths."""
    lengths = {len(r) for r in rows}
    if len(lengths) > 1:
        a = next(k for k, r in enumerate(rows) if len(r) == len(rows[0]))
        b = next(k for k, r in enumerate(rows) if len(r) != len(rows[0]))
        raise UnmaskError(f"{examples[a].name} is {len(rows[a])} tokens and {examples[b].name} {len(rows[b])}: this "
                          "command needs every sequence at one length")
    return torch.stack(rows) if rows else torch.zeros(0, 0, dtype=torch.long)
