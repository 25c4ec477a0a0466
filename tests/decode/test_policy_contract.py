"""The contract every decoding policy obeys, checked on a random transformer and an exact oracle."""

from __future__ import annotations

import pytest
import torch

from unmask.decode import POLICIES, TokenRule, attach, decode, parse_policy
from unmask.mi.estimator import HeadConfig, MIHead
from unmask.decode.registry import policy_spec

from conftest import random_joint, tiny_model

# Every registered policy, with settings that exercise both single and multiple reveals.
EXAMPLES = {
    "sequential": ["sequential", "sequential:metric=top_prob", "sequential:metric=margin"],
    "topk": ["topk:k=1", "topk:k=3", "topk:k=5,metric=margin"],
    "random": ["random:steps=1", "random:steps=4", "random:steps=50"],
    "top_prob": ["top_prob:steps=3", "top_prob:steps=7"],
    "margin": ["margin:steps=2", "margin:steps=6"],
    "eb": ["eb:gamma=0", "eb:gamma=0.5", "eb:gamma=2,metric=top_prob"],
    "threshold": ["threshold:tau=0.9", "threshold:tau=0.5", "threshold:tau=1"],
    "mi": ["mi:gamma=0,lam=0", "mi:gamma=0.5,lam=0", "mi:gamma=1,lam=2", "mi:gamma=100,lam=0.1"],
    "mi_exact": ["mi_exact:gamma=0.5,lam=1", "mi_exact:gamma=3,lam=0.5,eps=0.01"],
}
SPECS = [s for specs in EXAMPLES.values() for s in specs]


def test_every_registered_policy_is_under_contract():
    assert set(EXAMPLES) == set(POLICIES)


def build(spec: str, denoiser, d_hidden: int):
    """The policy of ``spec`` with the objects it needs (a random MI head, the denoiser to probe)."""
    torch.manual_seed(0)
    return attach(parse_policy(spec), denoiser=denoiser, head=MIHead(HeadConfig(d_hidden)))


def masked_batch(b: int, n: int, vocab: int, seed: int = 0) -> torch.Tensor:
    """Random ids with a random mask ratio per row (some rows fully masked, one fully given)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(vocab, (b, n), generator=g)
    ratio = torch.linspace(0, 1, b)[:, None]
    mask = torch.rand(b, n, generator=g) < ratio
    mask[-1] = True
    return torch.where(mask, torch.full_like(tokens, vocab), tokens)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_contract_on_transformer(spec: str, temperature: float):
    model = tiny_model()
    tokens = masked_batch(12, 16, model.vocab_size)
    policy = build(spec, model, model.cfg.d_model)
    rule = TokenRule(temperature)
    res = decode(model, tokens, policy, rule, seeds=torch.arange(12) + 7)
    masked = tokens == model.mask_id

    # Terminates with nothing masked; givens never change; only masked positions get a step.
    assert not (res.tokens == model.mask_id).any()
    assert torch.equal(res.tokens[~masked], tokens[~masked])
    assert torch.equal(res.reveal_step >= 0, masked)
    # NFE = passes spent on the row = number of steps at which it revealed something, each step ≥ 1.
    for row in range(12):
        steps = res.reveal_step[row][masked[row]]
        assert res.nfe[row] == (int(steps.max()) + 1 if steps.numel() else 0)
        assert torch.equal(steps.unique(), torch.arange(int(res.nfe[row])))
    # Batch-invariant: each row decoded alone with its own seed gives the same result.
    for row in (0, 5, 11):
        alone = decode(model, tokens[row : row + 1], policy, rule, seeds=torch.tensor([row + 7]))
        assert torch.equal(alone.tokens[0], res.tokens[row])
        assert torch.equal(alone.reveal_step[0], res.reveal_step[row])
    # Seeded reproducibility.
    again = decode(model, tokens, policy, rule, seeds=torch.arange(12) + 7)
    assert torch.equal(again.tokens, res.tokens) and torch.equal(again.nfe, res.nfe)


@pytest.mark.parametrize("spec", SPECS)
def test_contract_on_oracle(spec: str, oracle):
    tokens = masked_batch(20, oracle.seq_len, oracle.vocab_size, seed=1)
    res = decode(oracle, tokens, build(spec, oracle, oracle.vocab_size + 1))
    masked = tokens == oracle.mask_id
    assert not (res.tokens == oracle.mask_id).any()
    assert torch.equal(res.tokens[~masked], tokens[~masked])
    assert (res.nfe <= masked.sum(1)).all() and (res.nfe >= masked.any(1).long()).all()


@pytest.mark.parametrize("spec", SPECS)
def test_spec_round_trip(spec: str):
    policy = parse_policy(spec)
    assert parse_policy(policy_spec(policy)) == policy


def test_step_counts_of_fixed_policies():
    model = tiny_model()
    tokens = torch.full((3, 16), model.mask_id)
    tokens[1, :5] = 0  # 11 masked
    tokens[2, :14] = 1  # 2 masked
    m = (tokens == model.mask_id).sum(1)
    assert torch.equal(decode(model, tokens, parse_policy("sequential")).nfe, m)
    assert torch.equal(decode(model, tokens, parse_policy("topk:k=3")).nfe, (m + 2) // 3)
    for name in ("random", "top_prob", "margin"):
        nfe = decode(model, tokens, parse_policy(f"{name}:steps=4")).nfe
        assert torch.equal(nfe, torch.minimum(m, torch.tensor(4))), name
    assert torch.equal(decode(model, tokens, parse_policy("threshold:tau=0.0001")).nfe, torch.ones(3, dtype=torch.long))
    assert torch.equal(decode(model, tokens, parse_policy("eb:gamma=1e9")).nfe, torch.ones(3, dtype=torch.long))


def test_budget_policies_reveal_ceil_of_remaining_over_steps_left():
    model = tiny_model()
    tokens = torch.full((1, 16), model.mask_id)
    res = decode(model, tokens, parse_policy("random:steps=5"))
    per_step = torch.bincount(res.reveal_step[0], minlength=5).tolist()
    assert per_step == [4, 3, 3, 3, 3]  # ⌈16/5⌉, ⌈12/4⌉, ⌈9/3⌉, ⌈6/2⌉, 3


def test_random_order_depends_on_seed():
    model = tiny_model()
    tokens = torch.full((1, 16), model.mask_id)
    orders = {tuple(decode(model, tokens, parse_policy("random:steps=16"), seeds=torch.tensor([s])).reveal_step[0].tolist()) for s in range(5)}
    assert len(orders) == 5


def test_finished_rows_stop_counting():
    model = tiny_model()
    tokens = torch.full((2, 16), model.mask_id)
    tokens[0, 1:] = 2  # one masked position: finishes after 1 pass
    res = decode(model, tokens, parse_policy("sequential"))
    assert res.nfe.tolist() == [1, 16]
