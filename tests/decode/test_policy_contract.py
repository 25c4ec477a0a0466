"""The contract every decoding policy obeys, checked on a random transformer and an exact oracle."""

from __future__ import annotations

import pytest
import torch

from unmask.decode import SemiAR, TokenRule, decode
from unmask.mi.estimator import HeadConfig, MIHead
from unmask.order.net import OrderConfig, OrderNet
from unmask.policies import POLICIES, attach, parse_policy, policy_spec

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
    "mi_steps": ["mi_steps:steps=1,lam=0", "mi_steps:steps=3,lam=1", "mi_steps:steps=50,lam=4"],
    "mi_paced": ["mi_paced:gamma=0,lam=1", "mi_paced:gamma=0.5,lam=0", "mi_paced:gamma=2,lam=4"],
    "mi_prefix": ["mi_prefix:gamma=0,lam=1", "mi_prefix:gamma=0.5,lam=0", "mi_prefix:gamma=2,lam=4",
                  "mi_prefix:gamma=100,lam=0.1"],
    "exact": ["exact:gamma=0.5,lam=1", "exact:gamma=3,lam=0.5,eps=0.01", "exact:gamma=0.5,lam=1,charge=influence",
              "exact:gamma=3,lam=0.5,charge=influence,eps=0.01", "exact:gamma=1,lam=2,charge=joint"],
    "exact_steps": ["exact_steps:steps=1,lam=1", "exact_steps:steps=3,lam=0", "exact_steps:steps=4,lam=2,charge=mi",
                    "exact_steps:steps=50,lam=1,charge=joint,eps=0.01"],
    "exact_prefix": ["exact_prefix:gamma=0.5,lam=1", "exact_prefix:gamma=3,lam=0.5,charge=mi,eps=0.01",
                     "exact_prefix:gamma=2,lam=2,charge=joint"],
    "demask": ["demask:delta=0", "demask:delta=0.05", "demask:delta=1000", "demask:delta=0.5,max_entropy=0.5"],
    "learned": ["learned", "learned:steps=2", "learned:steps=6,sample=false"],
}
SPECS = [s for specs in EXAMPLES.values() for s in specs]

# Wrappers around policies, as (id, constructor). ``partial_ok``: the wrapped policy accepts rows with
# givens anywhere (an adaptive inner policy); a fixed per-block budget needs fully masked blocks, so
# those cases run on fully masked rows.
WRAPPERS = {
    "semi_ar(top_prob:steps=2,block=4)": (lambda: SemiAR(parse_policy("top_prob:steps=2"), block=4, start=0), False),
    "semi_ar(random:steps=3,block=5,start=2)": (lambda: SemiAR(parse_policy("random:steps=3"), block=5, start=2), False),
    "semi_ar(threshold:tau=0.9,block=4)": (lambda: SemiAR(parse_policy("threshold:tau=0.9"), 4), True),
    "semi_ar(eb:gamma=0.5,block=3,start=5)": (lambda: SemiAR(parse_policy("eb:gamma=0.5"), 3, start=5), True),
    "semi_ar(mi:gamma=1,lam=2,block=4)": (lambda: SemiAR(parse_policy("mi:gamma=1,lam=2"), 4), True),
    "semi_ar(exact:gamma=0.5,lam=1,block=4)": (lambda: SemiAR(parse_policy("exact:gamma=0.5,lam=1"), 4), True),
    "semi_ar(learned,block=4)": (lambda: SemiAR(parse_policy("learned"), 4), True),
}


def test_every_registered_policy_is_under_contract():
    assert set(EXAMPLES) == set(POLICIES)


def random_order_net(d_hidden: int) -> OrderNet:
    """An order network with random output weights (its scores are not just −entropy), trained for T = 4."""
    net = OrderNet(OrderConfig(d_hidden, d_hidden=8, tau=0.5, budget=4))
    with torch.no_grad():
        net.out.weight.normal_(0, 2.0)
    return net.eval()


def build(policy, denoiser, d_hidden: int):
    """``policy`` (a spec or a policy) with the objects it needs (a random MI head, the denoiser to
    probe, a random order network)."""
    if isinstance(policy, str):
        policy = parse_policy(policy)
    torch.manual_seed(0)
    return attach(policy, denoiser=denoiser, mi_head=MIHead(HeadConfig(d_hidden)), order_policy=random_order_net(d_hidden))


def inputs(masked_batch, b: int, n: int, vocab: int, seed: int, partial_ok: bool = True) -> torch.Tensor:
    """Rows with givens anywhere (mask ratio rising from 0 to 1), or fully masked rows."""
    if partial_ok:
        return masked_batch(b, n, vocab, seed)
    return torch.full((b, n), vocab)


CASES = [pytest.param(spec, True, id=spec) for spec in SPECS] + [
    pytest.param(name, ok, id=name) for name, (_, ok) in WRAPPERS.items()
]


def make_policy(case: str):
    return WRAPPERS[case][0]() if case in WRAPPERS else parse_policy(case)


@pytest.mark.parametrize("case, partial_ok", CASES)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_contract_on_transformer(case: str, partial_ok: bool, temperature: float, make_model, masked_batch):
    model = make_model()
    tokens = inputs(masked_batch, 12, 16, model.vocab_size, 0, partial_ok)
    policy = build(make_policy(case), model, model.cfg.d_model)
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
    # Extra passes are per row and only spent on rows that ran.
    assert res.extra_passes.shape == (12,) and (res.extra_passes >= 0).all()
    assert (res.extra_passes[res.nfe == 0] == 0).all()
    # Batch-invariant: each row decoded alone with its own seed gives the same result.
    for row in (0, 5, 11):
        alone = decode(model, tokens[row : row + 1], policy, rule, seeds=torch.tensor([row + 7]))
        assert torch.equal(alone.tokens[0], res.tokens[row])
        assert torch.equal(alone.reveal_step[0], res.reveal_step[row])
        assert torch.equal(alone.extra_passes[0], res.extra_passes[row])
    # Seeded reproducibility.
    again = decode(model, tokens, policy, rule, seeds=torch.arange(12) + 7)
    assert torch.equal(again.tokens, res.tokens) and torch.equal(again.nfe, res.nfe)
    assert torch.equal(again.extra_passes, res.extra_passes)


@pytest.mark.parametrize("case, partial_ok", CASES)
def test_contract_on_oracle(case: str, partial_ok: bool, oracle, masked_batch):
    tokens = inputs(masked_batch, 20, oracle.seq_len, oracle.vocab_size, 1, partial_ok)
    policy = build(make_policy(case), oracle, oracle.vocab_size + 1)
    res = decode(oracle, tokens, policy)
    masked = tokens == oracle.mask_id
    assert not (res.tokens == oracle.mask_id).any()
    assert torch.equal(res.tokens[~masked], tokens[~masked])
    assert torch.equal(res.reveal_step >= 0, masked)
    assert (res.nfe <= masked.sum(1)).all() and (res.nfe >= masked.any(1).long()).all()
    for row in range(20):
        steps = res.reveal_step[row][masked[row]]
        assert torch.equal(steps.unique(), torch.arange(int(res.nfe[row])))
    # Batch-invariant and reproducible on the oracle too.
    for row in (0, 10, 19):
        alone = decode(oracle, tokens[row : row + 1], policy, seeds=torch.tensor([row]))
        assert torch.equal(alone.tokens[0], res.tokens[row])
        assert torch.equal(alone.reveal_step[0], res.reveal_step[row])
    again = decode(oracle, tokens, policy)
    assert torch.equal(again.tokens, res.tokens) and torch.equal(again.nfe, res.nfe)


@pytest.mark.parametrize("spec", SPECS)
def test_spec_round_trip(spec: str):
    policy = parse_policy(spec)
    assert parse_policy(policy_spec(policy)) == policy


def test_step_counts_of_fixed_policies(make_model):
    model = make_model()
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


def test_step_counts_of_semi_ar_with_a_fixed_budget(make_model):
    # A per-block budget: 16 positions in blocks of 4, 2 passes per block -> 8 passes, 2 reveals each.
    model = make_model()
    tokens = torch.full((2, 16), model.mask_id)
    res = decode(model, tokens, SemiAR(parse_policy("top_prob:steps=2"), block=4, start=0))
    assert res.nfe.tolist() == [8, 8]
    assert (torch.bincount(res.reveal_step[0], minlength=8) == 2).all()
    # Blocks go left to right: every position of block k is revealed before any of block k + 1.
    blocks = res.reveal_step[0].view(4, 4)
    assert (blocks.max(1).values[:-1] < blocks.min(1).values[1:]).all()


def test_budget_policies_reveal_ceil_of_remaining_over_steps_left(make_model):
    model = make_model()
    tokens = torch.full((1, 16), model.mask_id)
    res = decode(model, tokens, parse_policy("random:steps=5"))
    per_step = torch.bincount(res.reveal_step[0], minlength=5).tolist()
    assert per_step == [4, 3, 3, 3, 3]  # ⌈16/5⌉, ⌈12/4⌉, ⌈9/3⌉, ⌈6/2⌉, 3


def test_random_order_depends_on_seed(make_model):
    model = make_model()
    tokens = torch.full((1, 16), model.mask_id)
    orders = {tuple(decode(model, tokens, parse_policy("random:steps=16"), seeds=torch.tensor([s])).reveal_step[0].tolist())
              for s in range(5)}
    assert len(orders) == 5


def test_finished_rows_stop_counting(make_model):
    model = make_model()
    tokens = torch.full((2, 16), model.mask_id)
    tokens[0, 1:] = 2  # one masked position: finishes after 1 pass
    res = decode(model, tokens, parse_policy("sequential"))
    assert res.nfe.tolist() == [1, 16]
