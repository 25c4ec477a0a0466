"""Each policy's own rule on hand-made distributions, and exact decoding against an oracle joint."""

from __future__ import annotations

import math

import pytest
import torch

from unmask.decode import DecodeState, TokenRule, decode, parse_policy
from unmask.decode.policy import as_selection
from unmask.decode.scores import entropy
from unmask.denoiser import DenoiserOutput
from unmask.oracle import JointDenoiser


def state_from_probs(probs: torch.Tensor, masked: torch.Tensor | None = None) -> DecodeState:
    """A one-row decode state whose distributions are ``probs`` ``(L, V)``."""
    n, v = probs.shape
    masked = torch.ones(1, n, dtype=torch.bool) if masked is None else masked[None]
    return DecodeState(
        tokens=torch.where(masked, v, 0), masked=masked, logits=probs.log()[None],
        hidden=torch.zeros(1, n, 1), step=0, seeds=torch.zeros(1, dtype=torch.long),
    )


# Four positions over 3 values: confident, two-way split, almost uniform, peaked with a runner-up.
PROBS = torch.tensor([[0.90, 0.05, 0.05], [0.50, 0.50, 0.00001], [0.34, 0.33, 0.33], [0.70, 0.29, 0.01]])
PROBS = PROBS / PROBS.sum(1, keepdim=True)


def chosen(spec: str, probs=PROBS, masked=None) -> list[int]:
    return as_selection(parse_policy(spec).select(state_from_probs(probs, masked))).reveal[0].nonzero().squeeze(1).tolist()


def test_sequential_metrics_pick_their_own_best():
    assert chosen("sequential:metric=entropy") == [0]
    assert chosen("sequential:metric=top_prob") == [0]
    # Margin: position 0 has 0.85, position 3 has 0.41, position 1 ~0.
    assert chosen("sequential:metric=margin") == [0]
    masked = torch.tensor([False, True, True, True])
    assert chosen("sequential:metric=entropy", masked=masked) == [3]
    assert chosen("sequential:metric=margin", masked=masked) == [3]
    # Among 1..3, position 3 (0.70, 0.29, 0.01) beats the 50/50 split on every metric.
    assert chosen("sequential:metric=top_prob", masked=masked) == [3]


def test_topk_takes_k_most_confident():
    assert chosen("topk:k=2") == [0, 3]
    assert chosen("topk:k=9") == [0, 1, 2, 3]


def test_threshold_takes_all_above_tau_or_the_best():
    assert chosen("threshold:tau=0.55") == [0, 3]
    assert chosen("threshold:tau=0.95") == [0]
    assert chosen("threshold:tau=0.95", masked=torch.tensor([False, True, True, False])) == [1]


def test_eb_prefix_rule():
    h = entropy(PROBS).tolist()  # order by entropy: 0, 3, 1, 2
    order = sorted(range(4), key=lambda i: h[i])
    for gamma in (0.0, h[order[0]] - 1e-6, h[order[0]] + 1e-6, h[order[0]] + h[order[1]] + 1e-6, 100.0):
        # Prefix of size m+1 is admitted iff the m lowest entropies sum to ≤ γ.
        m = max(k for k in range(4) if sum(h[i] for i in order[:k]) <= gamma)
        assert chosen(f"eb:gamma={gamma}") == sorted(order[: m + 1]), gamma


def test_budget_policies_choose_by_their_score():
    # 4 masked, 2 steps: reveal ⌈4/2⌉ = 2 now.
    assert chosen("top_prob:steps=2") == [0, 3]
    assert chosen("margin:steps=2") == [0, 3]
    assert len(chosen("random:steps=2")) == 2


class Fixed:
    """A denoiser that always returns the same per-position distributions."""

    def __init__(self, probs: torch.Tensor) -> None:
        self.probs, self.vocab_size, self.mask_id = probs, probs.shape[1], probs.shape[1]

    def __call__(self, tokens):
        b = tokens.shape[0]
        return DenoiserOutput(self.probs.log().expand(b, -1, -1), torch.zeros(b, tokens.shape[1], 1))


def test_mask_id_inside_the_vocabulary_is_never_produced():
    probs = torch.tensor([[0.1, 0.9], [0.2, 0.8]])  # mask id 1 is the likeliest "token"
    model = Fixed(probs)
    model.mask_id = 1
    out = decode(model, torch.ones(3, 2, dtype=torch.long), parse_policy("topk:k=2"), TokenRule(1.0))
    assert (out.tokens == 0).all()


def test_sequential_recovers_a_deterministic_joint():
    p = torch.zeros((3,) * 4, dtype=torch.float64)
    p[2, 0, 1, 2] = 1.0
    oracle = JointDenoiser(p)
    tokens = torch.full((2, 4), oracle.mask_id)
    for spec in ("sequential", "topk:k=4", "random:steps=2", "eb:gamma=0.1"):
        assert decode(oracle, tokens, parse_policy(spec)).tokens.tolist() == [[2, 0, 1, 2]] * 2


@pytest.mark.parametrize("spec", ["sequential", "random:steps=3", "sequential:metric=margin"])
def test_one_at_a_time_sampling_is_exact(spec: str, make_joint, empirical_tv):
    oracle = make_joint(seq_len=3, vocab=3, seed=3, alpha=1.0)
    # 27 outcomes, 3000 draws: sampling noise gives TV ≈ 0.04; a wrong sampler gives far more.
    assert empirical_tv(oracle, spec) < 0.07


def test_parallel_sampling_breaks_dependencies(empirical_tv):
    # X1 = X2, uniform over 3 values: revealing both at once samples the product of marginals.
    p = torch.zeros(3, 3, dtype=torch.float64)
    p[range(3), range(3)] = 1 / 3
    oracle = JointDenoiser(p)
    assert empirical_tv(oracle, "topk:k=2") == pytest.approx(2 / 3, abs=0.05)
    assert empirical_tv(oracle, "sequential") < 0.05
    assert math.isclose(float(oracle.joint.sum()), 1.0)
