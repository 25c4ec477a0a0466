"""A character-level tokenizer for small maths MDMs.

Vocabulary: the 95 printable ASCII characters and newline, then three special tokens: PAD (left
padding of the question), EOS (fills the fixed-length answer region after the answer, as LLaDA
pads with EOS) and MASK (input only). No magic numbers: every id is a named attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from unmask.errors import UnmaskError

CHARS = "\n" + "".join(chr(c) for c in range(32, 127))


@dataclass(frozen=True)
class CharTokenizer:
    """Characters ↔ ids; ``vocab_size`` counts the predictable tokens (chars, PAD, EOS)."""

    chars: str = CHARS  # the character inventory, one id each from 0
    _index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(set(self.chars)) != len(self.chars):
            raise UnmaskError("tokenizer characters must be distinct")
        object.__setattr__(self, "_index", {c: i for i, c in enumerate(self.chars)})

    @property
    def pad_id(self) -> int:
        return len(self.chars)

    @property
    def eos_id(self) -> int:
        return len(self.chars) + 1

    @property
    def mask_id(self) -> int:
        return len(self.chars) + 2

    @property
    def vocab_size(self) -> int:
        """Tokens a model predicts: every character, PAD and EOS (MASK is input only)."""
        return len(self.chars) + 2

    def encode(self, text: str) -> list[int]:
        """Ids of ``text``; UnmaskError naming the first character outside the vocabulary."""
        try:
            return [self._index[c] for c in text]
        except KeyError as e:
            pos = text.index(e.args[0])
            raise UnmaskError(f"character {e.args[0]!r} at position {pos} is not in the tokenizer's vocabulary") from None

    def decode(self, ids) -> str:
        """Text of ``ids``, stopping at the first EOS; PAD and MASK are dropped (MASK shown as '_')."""
        out = []
        for i in (int(x) for x in ids):
            if i == self.eos_id:
                break
            if i < len(self.chars):
                out.append(self.chars[i])
            elif i == self.mask_id:
                out.append("_")
        return "".join(out)

    def encode_pair(self, question: str, answer: str | None, q_len: int, a_len: int) -> torch.Tensor:
        """``(q_len + a_len,)`` ids: the question left-padded with PAD, then the answer region.

        The answer is followed by EOS up to ``a_len``; ``answer=None`` leaves the region masked.
        """
        q = self.encode(question)
        if len(q) > q_len:
            raise UnmaskError(f"question of {len(q)} characters does not fit the model's {q_len}")
        if answer is None:
            a = [self.mask_id] * a_len
        else:
            a = self.encode(answer)
            if len(a) >= a_len:
                raise UnmaskError(f"answer of {len(a)} characters does not fit the model's {a_len} (with EOS)")
            a = a + [self.eos_id] * (a_len - len(a))
        return torch.tensor([self.pad_id] * (q_len - len(q)) + q + a)
