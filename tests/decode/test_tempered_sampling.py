"""The token rule samples from softmax(logits / T): empirical frequencies over many seeds.

Each test names the planted bug it is there to catch. Seeds are fixed, so every count is
deterministic; the tolerances only have to cover the sampling noise of those fixed draws.
"""

from __future__ import annotations

import pytest
import torch

from unmask.decode import TokenRule, decode, parse_policy
from unmask.denoiser import DenoiserOutput

LOGITS = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.5, 3.0]])  # (L=2, V=3): different favourites per position


class FixedLogits:
    """A denoiser that returns the same logits whatever it is given."""

    vocab_size, mask_id, device = 3, 3, torch.device("cpu")

    def __call__(self, tokens):
        b, n = tokens.shape
        return DenoiserOutput(LOGITS.expand(b, n, 3), torch.zeros(b, n, 1))


def frequencies(temperature: float, n: int = 6000) -> torch.Tensor:
    """``(L, V)`` share of each value at each position over ``n`` seeded decodes revealing all at once."""
    tokens = torch.full((n, 2), FixedLogits.mask_id)
    out = decode(FixedLogits(), tokens, parse_policy("topk:k=2"), TokenRule(temperature), seeds=torch.arange(n)).tokens
    return torch.stack([torch.bincount(out[:, j], minlength=3).double() / n for j in range(2)])


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_sampling_matches_the_tempered_distribution(temperature):
    # Bugs caught: the token rule ignoring its temperature (sampling softmax(logits) at every T), or
    # multiplying by T instead of dividing; the inverse CDF off by one value (the last cdf ≤ u
    # instead of the first cdf > u).
    want = torch.softmax(LOGITS.double() / temperature, -1)
    got = frequencies(temperature)
    # 6000 draws: the standard error of a share is ≤ 0.0065, so 0.025 is ~4 sigma.
    assert (got - want).abs().max() < 0.025, (got, want)


def test_temperature_changes_the_distribution():
    # Bug caught: the same as above seen directly: T = 0.5 and T = 2 must give clearly different
    # samples (softmax([2, 1, 0] / T) puts 0.87 on the first value at T = 0.5 and 0.51 at T = 2).
    cold, hot = frequencies(0.5), frequencies(2.0)
    assert float(cold[0, 0] - hot[0, 0]) > 0.3 and float(cold[1, 2] - hot[1, 2]) > 0.2


def test_positions_of_a_row_draw_independently():
    # Bug caught: one uniform per row reused for every position (the two positions' samples would be
    # perfectly rank-correlated); their joint frequencies must be the product of the marginals.
    n = 6000
    tokens = torch.full((n, 2), FixedLogits.mask_id)
    out = decode(FixedLogits(), tokens, parse_policy("topk:k=2"), TokenRule(1.0), seeds=torch.arange(n)).tokens
    joint = torch.bincount(out[:, 0] * 3 + out[:, 1], minlength=9).double().view(3, 3) / n
    p = torch.softmax(LOGITS.double(), -1)
    assert (joint - p[0][:, None] * p[1][None, :]).abs().max() < 0.025


def test_the_smallest_normal_float32_temperature_is_accepted():
    # Bug caught: the range check refusing float32's smallest normal number (≤ tiny for < tiny); only
    # temperatures that round to 0 or to a subnormal are refused.
    TokenRule(torch.finfo(torch.float32).tiny)
