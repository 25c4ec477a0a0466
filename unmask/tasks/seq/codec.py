"""Text ↔ the model's ids: through the model's own tokenizer, or a given alphabet, one id per character.

A codec reads a sequence's *body* (its tokens, with the mask id where the input marks a position to
fill) and says what the model wants around it: ``prefix`` and ``suffix``, the special tokens its
tokenizer adds (BERT's ``[CLS]``/``[SEP]``, ESM's ``<cls>``/``<eos>``, LLaDA's BOS), found by asking
the tokenizer to add them around one token. A model input is ``prefix + body + suffix``; those
special positions are never filled. Token positions the user names (``--spans``) count the body only.
"""

from __future__ import annotations

from typing import Protocol

import torch

from unmask.errors import UnmaskError

ALPHABET_MASK = "_"  # the default mask character of an alphabet


class Codec(Protocol):
    """How a sequence's text becomes the model's ids and back."""

    mask_id: int  # the model's input id of a position to fill
    marker: str  # the text that marks a position to fill in the input
    prefix: tuple[int, ...]  # special ids the model wants before every sequence
    suffix: tuple[int, ...]  # special ids the model wants after every sequence
    end_id: int | None  # pads a target shorter than the generated region (the model's EOS), None for none

    def body(self, text: str, what: str) -> list[int]:
        """The ids of ``text`` without special tokens, ``mask_id`` at each marker (``what`` names it in errors)."""
        ...

    def text(self, ids: list[int]) -> str:
        """``ids`` (no special tokens) as text."""
        ...

    def symbols(self, ids: list[int]) -> list[str]:
        """Each id as its token's text (a character of an alphabet)."""
        ...

    def normal(self, text: str) -> str:
        """``text`` as the model would write it (a target, before it is compared with filled text)."""
        ...

    def from_symbols(self, symbols: list[str], what: str) -> list[int]:
        """The ids of tokens given by their text (the inverse of :meth:`symbols`)."""
        ...

    def allowed(self, vocab_size: int, end: bool) -> torch.Tensor:
        """``(V,)`` bool: the values a position to fill may take (``end``: the model's end-of-text tokens too)."""
        ...


def special_frame(tokenizer, mask_id: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The special ids ``tokenizer`` puts before and after a sequence, read off its own encoding of one token."""
    probe = tokenizer.convert_ids_to_tokens(mask_id)
    bare = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(probe)["input_ids"])
    at = next((i for i in range(len(full) - len(bare) + 1) if full[i : i + len(bare)] == bare), None)
    if not bare or at is None:
        raise UnmaskError("cannot tell which special tokens the model's tokenizer puts around a sequence")
    return tuple(full[:at]), tuple(full[at + len(bare) :])


class TokenizerCodec:
    """Text through the model's own tokenizer (``AutoTokenizer`` of an ``hf:`` folder)."""

    def __init__(self, tokenizer, mask_id: int, mask_char: str = "") -> None:
        self.tokenizer = tokenizer
        self.mask_id = int(mask_id)
        self.mask_text = tokenizer.convert_ids_to_tokens(self.mask_id)  # the mask token as the tokenizer writes it
        if not isinstance(self.mask_text, str) or list(tokenizer(self.mask_text, add_special_tokens=False)["input_ids"]) \
                != [self.mask_id]:
            raise UnmaskError(f"the model's mask id {self.mask_id} is not a token its tokenizer reads back; use --alphabet")
        self.marker = mask_char or self.mask_text
        self.prefix, self.suffix = special_frame(tokenizer, self.mask_id)
        end = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id
        self.end_id = None if end is None else int(end)

    def body(self, text: str, what: str) -> list[int]:
        if self.marker != self.mask_text:
            text = text.replace(self.marker, self.mask_text)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def text(self, ids: list[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def symbols(self, ids: list[int]) -> list[str]:
        return list(self.tokenizer.convert_ids_to_tokens(list(ids)))

    def normal(self, text: str) -> str:
        """Through the tokenizer and back: a lower-casing tokenizer's targets are lower-cased, as its fills are."""
        return self.text(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def from_symbols(self, symbols: list[str], what: str) -> list[int]:
        tok = self.tokenizer
        ids = [tok.convert_tokens_to_ids(s) for s in symbols]
        bad = next((s for s, i in zip(symbols, ids) if i is None or (i == tok.unk_token_id and s != tok.unk_token)), None)
        if bad is not None:
            raise UnmaskError(f"{what}: the model's vocabulary has no token {bad!r}")
        return [int(i) for i in ids]

    def allowed(self, vocab_size: int, end: bool) -> torch.Tensor:
        """Any token of the tokenizer but its special ones; when generating (``end``), its special tokens too
        but those that open a sequence (BOS / CLS) or stand for an unknown: a dLLM ends an answer with EOS (or
        an end-of-turn token) and pads after it."""
        tok = self.tokenizer
        ok = torch.zeros(vocab_size, dtype=torch.bool)
        ok[: min(len(tok), vocab_size)] = True  # rows past the tokenizer's vocabulary are padding
        never = {tok.bos_token_id, tok.cls_token_id, tok.unk_token_id, self.mask_id} if end else \
            {*tok.all_special_ids, self.mask_id}
        ok[[i for i in never if i is not None and i < vocab_size]] = False
        return ok


class AlphabetCodec:
    """One id per character of ``alphabet``, e.g. ``ACGT`` (``ids``: the model id of each character)."""

    def __init__(self, alphabet: str, ids: list[int], mask_id: int, mask_char: str = "",
                 prefix: tuple[int, ...] = (), suffix: tuple[int, ...] = ()) -> None:
        self.marker = mask_char or ALPHABET_MASK
        if not alphabet or len(set(alphabet)) != len(alphabet):
            raise UnmaskError(f"--alphabet {alphabet!r}: give each character once")
        if len(self.marker) != 1 or self.marker in alphabet:
            raise UnmaskError(f"--mask-char {self.marker!r}: with an alphabet, one character outside it")
        if len(set(ids)) != len(ids) or mask_id in ids:
            raise UnmaskError(f"--alphabet {alphabet!r}: two characters, or a character and the mask, share a model id")
        self.alphabet = alphabet
        self.ids = [int(i) for i in ids]
        self.mask_id = int(mask_id)
        self.prefix, self.suffix = tuple(prefix), tuple(suffix)
        self.end_id = None  # an alphabet has no end token
        self._id = {c: i for c, i in zip(alphabet, self.ids)} | {self.marker: self.mask_id}  # character → id
        self._char = {i: c for c, i in zip(alphabet, self.ids)}  # id → character

    def body(self, text: str, what: str) -> list[int]:
        bad = next((c for c in text if c not in self._id), None)
        if bad is not None:
            raise UnmaskError(f"{what}: {bad!r} is neither in the alphabet {self.alphabet!r} nor the mask {self.marker!r}")
        return [self._id[c] for c in text]

    def text(self, ids: list[int]) -> str:
        return "".join(self._char.get(int(i), "?") for i in ids)

    def symbols(self, ids: list[int]) -> list[str]:
        return list(self.text(ids))

    def normal(self, text: str) -> str:
        return text  # characters are written as they are

    def from_symbols(self, symbols: list[str], what: str) -> list[int]:
        return self.body("".join(symbols), what)

    def allowed(self, vocab_size: int, end: bool) -> torch.Tensor:
        """Only the alphabet's characters."""
        if max(self.ids) >= vocab_size:
            raise UnmaskError(f"--alphabet {self.alphabet!r}: the model predicts only {vocab_size} tokens")
        ok = torch.zeros(vocab_size, dtype=torch.bool)
        ok[self.ids] = True
        return ok


def alphabet_codec(alphabet: str, mask_char: str, mask_id: int, tokenizer=None) -> AlphabetCodec:
    """An alphabet over a model's ids: its tokenizer's id of each character (and its special tokens around a
    sequence) for a pretrained model, else the character's place in the alphabet (an unmask model)."""
    if tokenizer is None:
        return AlphabetCodec(alphabet, list(range(len(alphabet))), mask_id, mask_char)
    ids = [tokenizer.convert_tokens_to_ids(c) for c in alphabet]
    bad = next((c for c, i in zip(alphabet, ids) if i is None or i == tokenizer.unk_token_id), None)
    if bad is not None:
        raise UnmaskError(f"--alphabet: the model's tokenizer has no token for {bad!r}")
    return AlphabetCodec(alphabet, ids, mask_id, mask_char, *special_frame(tokenizer, mask_id))


def build_codec(mask_id: int, tokenizer=None, alphabet: str = "", mask_char: str = "") -> Codec:
    """The codec of a model: ``alphabet`` if given, else the model's ``tokenizer`` (an unmask model has none)."""
    if alphabet:
        return alphabet_codec(alphabet, mask_char, mask_id, tokenizer)
    if tokenizer is None:
        raise UnmaskError("this model has no tokenizer: give --alphabet (its characters in the order of its token ids)")
    return TokenizerCodec(tokenizer, mask_id, mask_char)
