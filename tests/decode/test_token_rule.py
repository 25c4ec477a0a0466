"""The token rule at the edges of its temperature range.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import pytest
import torch

from unmask.decode import TokenRule, decode, parse_policy
from unmask.errors import UnmaskError


@pytest.mark.parametrize("temperature", [1e-30, 1e-37])
def test_tiny_temperature_is_argmax_not_nan(make_model, masked_batch, temperature):
    # Bug caught: softmax(logits / T) overflowing to inf/inf = NaN for a tiny T (the issue saw
    # --temperature 1e-45 give 0 % accuracy without a word); the limit T -> 0 is argmax.
    model = make_model()
    tokens = masked_batch(6, 16, 4, seed=3)
    policy = parse_policy("topk:k=2")
    want = decode(model, tokens, policy, TokenRule(0.0), seeds=torch.arange(6))
    got = decode(model, tokens, policy, TokenRule(temperature), seeds=torch.arange(6))
    assert torch.equal(got.tokens, want.tokens)


@pytest.mark.parametrize("temperature", [1e-45, 1e-300, 5e-324])
def test_temperature_below_float32_is_refused(temperature):
    # Bug caught: a temperature that float32 rounds to 0 (or to a subnormal) accepted and silently
    # turned into NaN probabilities.
    with pytest.raises(UnmaskError, match="below float32"):
        TokenRule(temperature)


@pytest.mark.parametrize("temperature", [-1.0, float("nan"), float("-inf")])
def test_negative_or_nan_temperature_is_refused(temperature):
    with pytest.raises(UnmaskError, match="temperature must be >= 0"):
        TokenRule(temperature)
