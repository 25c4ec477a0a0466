"""Semi-autoregressive blocks: where blocks lie, which settings are refused, when a block must be whole.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import pytest
import torch

from unmask.decode import DecodeState, SemiAR, decode, parse_policy
from unmask.decode.policy import as_selection
from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError


class Flat:
    """A denoiser with the same mild preference everywhere (vocabulary 2, mask id 2)."""

    vocab_size, mask_id, device = 2, 2, torch.device("cpu")

    def __call__(self, tokens):
        b, n = tokens.shape
        return DenoiserOutput(torch.tensor([1.0, 0.0]).expand(b, n, 2), torch.zeros(b, n, 1))


def eligible(policy: SemiAR, tokens: list[int]) -> list[int]:
    """Positions revealed at step 0 when the inner policy takes everything it may."""
    t = torch.tensor([tokens])
    logits, hidden = Flat()(t)
    state = DecodeState(t, t == Flat.mask_id, logits, hidden, 0, torch.zeros(1, dtype=torch.long))
    return as_selection(policy.select(state)).reveal[0].nonzero().squeeze(1).tolist()


def test_blocks_are_counted_from_start():
    # Bugs caught: block indices counted from −start (pos + start) or with the prompt clamped to
    # index 1: the first block holds the prompt region and the first ``block`` generated positions.
    everything = parse_policy("topk:k=100")
    assert eligible(SemiAR(everything, block=3, start=2), [2] * 8) == [0, 1, 2, 3, 4]
    assert eligible(SemiAR(everything, block=1, start=2), [2] * 5) == [0, 1, 2]
    assert eligible(SemiAR(everything, block=1, start=2), [0, 1, 0, 2, 2]) == [3]


@pytest.mark.parametrize("kwargs, message", [
    ({"block": 0}, "need block >= 1 and start >= 0"),
    ({"block": 4, "start": -1}, "need block >= 1 and start >= 0"),
    ({"block": 3, "inner": "top_prob:steps=4"}, "per-block budget steps=4 exceeds the block size 3"),
])
def test_bad_blocks_are_refused(kwargs, message):
    # Bugs caught: block and start refused only when both are wrong; the per-block budget check
    # skipped (steps taken as None) so a block could never finish in its budget.
    kwargs = dict(kwargs)  # the parameter is shared between runs: never mutate it
    inner = parse_policy(kwargs.pop("inner", "sequential"))
    with pytest.raises(UnmaskError, match=message):
        SemiAR(inner, **kwargs)


def test_edge_settings_are_accepted():
    # Bugs caught: block = 1 refused (≤ 1 or < 2), a budget equal to the block refused (≥ for >).
    SemiAR(parse_policy("sequential"), block=1)
    SemiAR(parse_policy("top_prob:steps=4"), block=4)


def test_every_block_must_start_whole_not_just_the_first():
    # Bugs caught: the "block starts with given tokens" check run only at step 0 (step / steps for
    # step % steps), or blind to a given token at the first generated position (pos > start).
    policy = SemiAR(parse_policy("top_prob:steps=2"), block=4, start=0)
    tokens = torch.full((1, 8), Flat.mask_id)
    tokens[0, 5] = 1  # the second block starts with a given token
    with pytest.raises(UnmaskError, match="^semi_ar: a block starts with given tokens"):
        decode(Flat(), tokens, policy)
    prompt = SemiAR(parse_policy("top_prob:steps=2"), block=3, start=2)
    decode(Flat(), torch.tensor([[0, 1, 2, 2, 2, 2, 2, 2]]), prompt)  # a given prompt before start is fine
    with pytest.raises(UnmaskError, match="^semi_ar: a block starts with given tokens"):
        decode(Flat(), torch.tensor([[0, 1, 0, 2, 2, 2, 2, 2]]), prompt)
