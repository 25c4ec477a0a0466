"""The learned policy's parametrisation and its place in the loop (planted bugs in comments)."""

from __future__ import annotations

import itertools

import pytest
import torch

from unmask.decode import decode
from unmask.decode.state import DecodeState
from unmask.errors import UnmaskError
from unmask.order.net import OrderConfig, OrderNet, load_order_net, reveal_probs, save_order_net
from unmask.order.policy import Learned, bernoulli_log_prob, sample_reveal
from unmask.policies import build_policy


def test_max_normalised_probabilities():
    scores = torch.tensor([[0.0, 2.0, 1.0, 5.0], [3.0, 3.0, -1.0, 0.0]])
    masked = torch.tensor([[True, True, True, False], [True, True, False, True]])
    p = reveal_probs(scores, masked, tau=0.5)
    assert torch.equal(p[:, 3] > 0, torch.tensor([False, True]))  # never an unmasked position (5.0 is given)
    assert p[0, 1] == 1 and p[1, 0] == 1 and p[1, 1] == 1  # the best masked (ties too) is certain
    assert torch.allclose(p[0, 2], torch.exp(torch.tensor(-2.0)))  # exp((1 − 2) / 0.5)
    assert torch.equal(reveal_probs(scores, masked, 0.5, last=True), masked.float())  # the last step takes all


def test_log_prob_sums_to_one_over_every_reveal_set():
    p = torch.tensor([[1.0, 0.3, 0.8, 0.0]])
    masked = torch.tensor([[True, True, True, False]])
    total = 0.0
    for bits in itertools.product([False, True], repeat=3):  # a wrong log-probability does not normalise
        r = torch.tensor([[*bits, False]])
        total += float(bernoulli_log_prob(p, r, masked).exp())
    assert total == pytest.approx(1.0, abs=1e-6)


def test_samples_follow_the_probabilities(make_model):
    model = make_model(seq_len=6)
    tokens = torch.full((20_000, 6), model.mask_id)
    logits, hidden = model(tokens[:1])
    p = torch.tensor([[1.0, 0.5, 0.1, 0.9, 0.0, 0.3]]).expand(20_000, 6)
    state = DecodeState(tokens, tokens == model.mask_id, logits.expand(20_000, -1, -1), hidden.expand(20_000, -1, -1), 0,
                        torch.arange(20_000))
    freq = sample_reveal(p, state).float().mean(0)
    assert torch.allclose(freq, p[0], atol=0.015)  # seeded uniforms, not one shared draw
    assert torch.equal(sample_reveal(p, state, sample=False)[0], p[0] >= 0.5)


@pytest.mark.parametrize("steps", [1, 2, 5])
def test_the_budget_is_never_exceeded_and_every_step_reveals(make_model, masked_batch, steps):
    model = make_model()
    net = OrderNet(OrderConfig(model.cfg.d_model, d_hidden=8, tau=0.05, budget=steps))  # small τ: few per step
    tokens = masked_batch(10, 16, model.vocab_size, seed=3)
    res = decode(model, tokens, Learned(net=net), seeds=torch.arange(10))
    masked = tokens == model.mask_id
    assert (res.nfe <= steps).all() and not (res.tokens == model.mask_id).any()
    assert torch.equal(res.tokens[~masked], tokens[~masked])
    # a budget given at decode time wins over the trained one
    assert (decode(model, tokens, Learned(steps=1, net=net)).nfe <= 1).all()


def test_saved_beside_the_model_and_found_by_the_spec(tmp_path, make_model):
    model = make_model()
    net = OrderNet(OrderConfig(model.cfg.d_model, d_hidden=8, budget=3))
    with torch.no_grad():
        net.out.weight.normal_()
    save_order_net(net, tmp_path)
    again = load_order_net(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), again.state_dict().values()))
    policy = build_policy("learned", model, tmp_path)
    assert policy.budget() == 3 and policy.net is not None
    with pytest.raises(UnmaskError, match="train-order"):
        build_policy("learned", model, tmp_path / "elsewhere")
