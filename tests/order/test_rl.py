"""Outcome RL of the order network (unmask.order.rl): the estimator is exact at K = 4, the rollouts are
P_ψ's own with the model's tokens, and the KL to the start is zero at the start (planted bugs in docstrings)."""

from __future__ import annotations

import itertools

import pytest
import torch

from unmask.errors import UnmaskError
from unmask.order.net import OrderConfig, OrderNet
from unmask.order.rl import OutcomeRollout, leave_one_out, outcome_loss, outcome_rollout


def test_leave_one_out_by_hand():
    """Bugs caught: a baseline that includes the rollout's own reward (A scaled by (K−1)/K), or one mixing
    the rollouts of different examples."""
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 5.0, 5.0, 5.0, 9.0])
    want = torch.tensor([1 - 1 / 3, -2 / 3, -2 / 3, 1 - 1 / 3, -4 / 3, -4 / 3, -4 / 3, 4.0])
    assert torch.allclose(leave_one_out(r, 4), want)


@pytest.mark.parametrize("step_cost", [0.0, 0.25])
def test_estimator_is_exactly_unbiased_at_four_rollouts(step_cost):
    """The expected gradient of the surrogate over every tuple of K = 4 draws equals −∇E[R] to 1e-6.
    Bugs caught: the own-sample baseline (gives 3/4 of the gradient), a sign error, a step cost that
    enters with the wrong sign or not at all."""
    logits = torch.tensor([0.3, -0.5, 0.9], dtype=torch.float64, requires_grad=True)
    success = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    nfe = torch.tensor([3, 1, 2])
    k = 4
    log_p = logits.log_softmax(0)
    p = log_p.exp().detach()
    expected = torch.zeros(3, dtype=torch.float64)
    for draw in itertools.product(range(3), repeat=k):
        d = torch.tensor(draw)
        roll = OutcomeRollout(log_p[d], torch.zeros(k, dtype=torch.float64), success[d], nfe[d])
        (g,) = torch.autograd.grad(outcome_loss(roll, k, step_cost), logits, retain_graph=True)
        expected += p[d].prod() * g
    reward = success - step_cost * nfe
    (exact,) = torch.autograd.grad(-(log_p.exp() * reward).sum(), logits)
    assert torch.allclose(expected, exact, atol=1e-6), (expected, exact)


@pytest.fixture
def tiny(make_model):
    model = make_model(seq_len=8, vocab=3)
    start = torch.full((3, 8), model.mask_id)
    start[:, :2] = torch.tensor([0, 1])
    net = OrderNet(OrderConfig(d_in=model(start[:1]).hidden.shape[-1], d_hidden=8, tau=0.5, budget=3))
    return model, start, net


def test_rollouts_are_the_policys_own_with_the_models_tokens(tiny):
    """Bugs caught: success read for the wrong examples (index not repeated per rollout), given tokens
    overwritten, log-probabilities cut from ψ's graph, a budget not kept, the K rollouts not sampled apart."""
    model, start, net = tiny
    seen = {}

    def success(tokens, index):
        seen["tokens"], seen["index"] = tokens, index
        return (tokens[:, 2] == 0).float()

    seeds = torch.arange(12) * 7919 + 1
    roll = outcome_rollout(model, start, torch.tensor([5, 6, 7]), net, budget=3, samples=4, seeds=seeds, success=success)
    assert seen["index"].tolist() == [5] * 4 + [6] * 4 + [7] * 4
    assert not (seen["tokens"] == model.mask_id).any() and (seen["tokens"][:, :2] == start[0, :2]).all()
    assert (roll.nfe >= 1).all() and (roll.nfe <= 3).all()
    assert roll.success.tolist() == (seen["tokens"][:, 2] == 0).float().tolist()
    assert roll.log_p.requires_grad and (roll.log_p <= 0).all() and (roll.kl_start == 0).all()
    grads = torch.autograd.grad(roll.log_p.sum(), [net.direct.weight])
    assert grads[0].abs().sum() > 0
    assert (roll.log_p.detach().view(3, 4).std(1) > 0).any()  # the rollouts of an example took other reveal sets


def test_kl_to_the_start_is_zero_at_the_start_and_pulls_back(tiny):
    """Bugs caught: a KL term measured against the wrong network, or one whose gradient pushes away from the start."""
    model, start, net = tiny
    reference = OrderNet(net.cfg)
    reference.load_state_dict(net.state_dict())
    seeds = torch.arange(6) + 11
    same = outcome_rollout(model, start[:2], torch.arange(2), net, 3, 3, seeds, lambda t, i: torch.ones(len(t)), reference)
    assert (same.kl_start.abs() < 1e-3).all()  # only the smooth floor ε separates P from P̃ (unmask.order.elbo)
    with torch.no_grad():
        net.direct.weight[0, 1] = 3.0  # now also prefers high top-prob positions
    moved = outcome_rollout(model, start[:2], torch.arange(2), net, 3, 3, seeds, lambda t, i: torch.ones(len(t)), reference)
    assert (moved.kl_start > 1e-2).any()
    outcome_loss(moved, 3, kl_start=1.0).backward()  # constant success: only the KL term has a gradient
    assert net.direct.weight.grad[0, 1] > 0  # descending it lowers the weight back towards 0


def test_a_check_of_another_shape_is_refused(tiny):
    """Bug caught: a check returning (N, 1) broadcast against (N,) into an (N, N) reward, silently."""
    model, start, net = tiny
    with pytest.raises(UnmaskError, match="one value each"):
        outcome_rollout(model, start[:1], torch.arange(1), net, 3, 2, torch.tensor([1, 2]), lambda t, i: torch.ones(len(t), 1))


def test_the_check_gets_example_numbers_on_the_cpu(tiny):
    """Bug caught: example numbers moved to the model's device, which a numpy-indexed set cannot take."""
    model, start, net = tiny
    seen = []
    outcome_rollout(model, start[:2], torch.tensor([4, 9]), net, 3, 2, torch.arange(4) + 1,
                    lambda t, i: seen.append(i) or torch.zeros(len(t)))
    assert seen[0].device.type == "cpu" and seen[0].tolist() == [4, 4, 9, 9]
