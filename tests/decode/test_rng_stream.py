"""The counter-based random stream is pinned: every seeded decode (and tests/data/recorded_decodes)
depends on these exact numbers, on every device and in every version.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import torch

from unmask.decode.rng import uniform

# uniform(seeds, step, length, salt) · 2**24 (each draw is a 24-bit integer over 2**24), as drawn by
# the code that reproduces the recorded decodes. The seeds cover the high 32 bits too.
SEEDS = torch.tensor([0, 1, 12345, 2**40 + 7])
PINNED = [[8824163, 1560095, 2622985, 13909624], [9180641, 6590484, 15774121, 3253852],
          [4178968, 10146143, 784142, 3814663], [4474940, 5269775, 9273971, 15526621]]


def test_the_stream_is_pinned():
    # Bugs caught: any change to the hash (a shift, a multiplier, + for ^, the seed's high half, the
    # step or salt term, the position term), which silently changes every seeded result.
    u = uniform(SEEDS, 3, 4, 0x70C)
    assert (u * 2**24).round().long().tolist() == PINNED
    assert (uniform(torch.tensor([5]), 0, 3, 0x0D3) * 2**24).round().long().tolist() == [[8201807, 14705421, 4688914]]


def test_draws_are_float32_in_the_unit_interval_and_depend_on_every_input():
    # Bugs caught: float64 draws (the token rule's comparisons change precision); step, salt, seed or
    # position ignored (e.g. x & h for x ^ h, which leaves draws that no longer change with the step).
    u = uniform(SEEDS, 3, 4, 0x70C)
    assert u.dtype == torch.float32 and ((u >= 0) & (u < 1)).all()
    for other in (uniform(SEEDS, 4, 4, 0x70C), uniform(SEEDS, 3, 4, 0x0D3), uniform(SEEDS + 1, 3, 4, 0x70C)):
        assert (other != u).all()
    assert len(set(u.flatten().tolist())) == 16
