"""The step API: :func:`unmask.decode.decode_steps` is the loop, :func:`decode` only drives it.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn as nn

from unmask.decode import DecodeState, Selection, TokenRule, decode, decode_steps, parse_policy
from unmask.decode.state import take_top

SPECS = ["sequential", "topk:k=3", "threshold:tau=0.9", "top_prob:steps=3", "random:steps=4", "eb:gamma=0.5", "margin:steps=2"]


def run_steps(denoiser, tokens, policy, rule=TokenRule(), seeds=None):
    """Every Step and the DecodeResult the generator returns."""
    gen = decode_steps(denoiser, tokens, policy, rule, seeds)
    steps = []
    while True:
        try:
            steps.append(next(gen))
        except StopIteration as done:
            return steps, done.value


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("spec", SPECS)
def test_consuming_the_steps_gives_exactly_decode(make_model, masked_batch, spec, temperature):
    # Bug caught: decode and decode_steps drifting apart (e.g. decode keeping its own copy of the loop,
    # or the generator returning a result before the last step's bookkeeping).
    model = make_model()
    tokens = masked_batch(6, 16, 4, seed=1)
    seeds = torch.arange(10, 16)
    policy, rule = parse_policy(spec), TokenRule(temperature)
    want = decode(model, tokens, policy, rule, seeds=seeds)
    with torch.no_grad():
        _, got = run_steps(model, tokens, policy, rule, seeds)
    for name in ("tokens", "nfe", "reveal_step", "extra_passes"):
        assert torch.equal(getattr(got, name), getattr(want, name)), name


@pytest.mark.parametrize("spec", SPECS)
def test_each_step_is_consistent(make_model, masked_batch, spec):
    # Bugs caught: reveal not intersected with state.masked; a step revealing nothing in a row;
    # values overwriting non-revealed tokens; state.rows naming the wrong rows (e.g. finished ones, or
    # positions within the running subset instead of indices into the batch); nfe not counting steps;
    # reveal_step not matching the step at which a position was revealed.
    model = make_model()
    tokens = masked_batch(7, 16, 4, seed=2)
    mask_id = model.mask_id
    with torch.no_grad():
        steps, res = run_steps(model, tokens, parse_policy(spec), TokenRule(1.0))
    current = tokens.clone()
    count = torch.zeros(len(tokens), dtype=torch.long)
    for k, step in enumerate(steps):
        st = step.state
        assert st.step == k
        running = (current == mask_id).any(1).nonzero().squeeze(1)
        assert torch.equal(st.rows, running)  # exactly the rows still running, as batch indices
        assert torch.equal(st.tokens, current[st.rows])
        assert torch.equal(st.masked, current[st.rows] == mask_id)
        assert st.logits.shape[:2] == st.tokens.shape and st.hidden.shape[:2] == st.tokens.shape
        assert not (step.reveal & ~st.masked).any()  # reveal ⊆ masked
        assert step.reveal.any(1).all()  # at least one per running row
        assert torch.equal(step.values[~step.reveal], st.tokens[~step.reveal])  # the rest is kept
        assert not (step.values[step.reveal] == mask_id).any()  # revealed positions get a real token
        assert torch.equal(res.reveal_step[st.rows][step.reveal], torch.full((int(step.reveal.sum()),), k))
        assert step.log_prob is None  # none of these policies samples its reveal set with a log-probability
        current[st.rows] = step.values
        count[st.rows] += 1
    assert torch.equal(current, res.tokens)
    assert torch.equal(count, res.nfe)
    assert not (res.tokens == mask_id).any()
    assert (res.nfe[0] == 0) and (res.reveal_step[0] == -1).all()  # the fully given row never runs


LEARNED_SALT = 0x1EA


@dataclass(frozen=True)
class LearnedOrder:
    """A tiny learned order policy: per-position Bernoulli reveal probabilities from the hidden states."""

    net: nn.Linear

    def select(self, state: DecodeState) -> Selection:
        p = torch.sigmoid(self.net(state.hidden.float()).squeeze(-1))  # (R, L)
        p = p.masked_fill(~state.masked, 0.0)
        p = p / p.max(1, keepdim=True).values  # the best masked position has p = 1: never an empty set
        reveal = state.masked & (state.uniform(LEARNED_SALT) < p)
        q = p.clamp(1e-6, 1 - 1e-6)
        logp = torch.where(reveal, q.log(), (1 - q).log())
        log_prob = (logp * state.masked).sum(1)  # (R,)
        return Selection(reveal, log_prob=log_prob)


def test_a_learned_policy_trains_by_reinforce_through_the_steps(make_model, masked_batch):
    # Bugs caught: decode_steps running under no_grad (or detaching the log-probability), Step dropping
    # Selection.log_prob, or gradients leaking into the frozen denoiser.
    model = make_model().requires_grad_(False)
    torch.manual_seed(0)
    net = nn.Linear(model.cfg.d_model, 1)
    policy = LearnedOrder(net)
    tokens = masked_batch(5, 16, 4, seed=3)
    with torch.enable_grad():
        steps, res = run_steps(model, tokens, policy)
        assert steps and all(s.log_prob is not None and s.log_prob.requires_grad for s in steps)
        assert all(s.log_prob.shape == (len(s.state.rows),) for s in steps)
        total = torch.zeros(len(tokens))
        for s in steps:
            total = total.index_add(0, s.state.rows, s.log_prob)
        reward = -res.nfe.float()  # fewer passes is better
        loss = -((reward - reward.mean()) * total).sum()
        loss.backward()
    assert net.weight.grad is not None and net.weight.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.parameters())
    assert not (res.tokens == model.mask_id).any()


def test_decode_itself_runs_without_gradients(make_model, masked_batch):
    # Bug caught: decode losing its no_grad, so that every step would build an autograd graph.
    seen = []

    @dataclass(frozen=True)
    class Spy:
        def select(self, state):
            seen.append(torch.is_grad_enabled())
            return take_top(-state.masked.float(), state.masked, torch.ones_like(state.remaining))

    with torch.enable_grad():
        decode(make_model(), masked_batch(3, 16, 4), Spy())
    assert seen and not any(seen)


@dataclass(frozen=True)
class Probing:
    """Sequential order, reporting ``cost`` extra passes per row and step (as exact-MI probes would)."""

    cost: int = 3

    def select(self, state: DecodeState) -> Selection:
        score = -torch.arange(state.masked.shape[1], dtype=torch.float32).expand_as(state.masked)
        reveal = take_top(score, state.masked, torch.ones_like(state.remaining))
        return Selection(reveal, extra_passes=torch.full((len(state.tokens),), self.cost))


def test_extra_passes_accumulate_per_row(make_model, masked_batch):
    # Bugs caught: extra passes added to every row instead of the running ones, overwritten instead of
    # summed, or folded into nfe.
    model = make_model()
    tokens = masked_batch(6, 16, 4, seed=4)
    res = decode(model, tokens, Probing(3))
    assert torch.equal(res.nfe, (tokens == model.mask_id).sum(1))  # one position per pass
    assert torch.equal(res.extra_passes, 3 * res.nfe)
    assert res.extra_passes[0] == 0  # the fully given row
    plain = decode(model, tokens, parse_policy("sequential"))
    assert (plain.extra_passes == 0).all()


@pytest.mark.parametrize("kind", ["nothing", "only_given", "one_row_empty"])
def test_a_policy_that_reveals_nothing_is_refused(make_model, masked_batch, kind):
    # Bug caught: the loop spinning forever (or silently finishing) when a policy reveals nothing, or
    # counting a reveal of an already-given position as progress.
    @dataclass(frozen=True)
    class Lazy:
        def select(self, state):
            if kind == "nothing":
                return torch.zeros_like(state.masked)
            if kind == "only_given":
                return ~state.masked
            out = take_top(torch.zeros(state.masked.shape), state.masked, torch.ones_like(state.remaining))
            out[-1] = False
            return out

    with pytest.raises(RuntimeError, match="revealed nothing"):
        decode(make_model(), masked_batch(4, 16, 4), Lazy())


def test_reveals_outside_the_masked_positions_are_dropped(make_model, masked_batch):
    # Bug caught: the loop trusting a policy's reveal set without intersecting it with state.masked,
    # so that a policy answering "everything" overwrites given tokens.
    @dataclass(frozen=True)
    class Greedy:
        def select(self, state):
            return torch.ones_like(state.masked)

    model = make_model()
    tokens = masked_batch(5, 16, 4, seed=8)
    with torch.no_grad():
        steps, res = run_steps(model, tokens, Greedy())
    assert len(steps) == 1
    assert torch.equal(steps[0].reveal, steps[0].state.masked)
    given = tokens != model.mask_id
    assert torch.equal(res.tokens[given], tokens[given])
    assert torch.equal(res.reveal_step == 0, ~given)


def test_revealing_only_given_positions_is_no_progress(make_model, masked_batch):
    # Bug caught: counting a reveal of already-given positions as progress (the loop would then spin
    # forever on the same masks); the steps are driven by hand so a regression fails instead of hanging.
    @dataclass(frozen=True)
    class OnlyGiven:
        def select(self, state):
            return ~state.masked

    tokens = masked_batch(4, 16, 4, seed=9)
    tokens[:, 0] = 1  # every row has a given token to "reveal"
    gen = decode_steps(make_model(), tokens, OnlyGiven())
    with pytest.raises(RuntimeError, match="revealed nothing"), torch.no_grad():
        for _ in range(50):
            next(gen)


@pytest.mark.parametrize("spec", ["random:steps=4", "topk:k=2"])
def test_default_seeds_are_the_row_indices(make_model, masked_batch, spec):
    # Bugs caught: default seeds all equal (every row drawing the same numbers); a row's draws depending
    # on the rest of the batch rather than on its own seed.
    model = make_model()
    tokens = masked_batch(5, 16, 4, seed=10)
    rule = TokenRule(1.0)
    default = decode(model, tokens, parse_policy(spec), rule)
    explicit = decode(model, tokens, parse_policy(spec), rule, seeds=torch.arange(5))
    assert torch.equal(default.tokens, explicit.tokens) and torch.equal(default.reveal_step, explicit.reveal_step)
    same = decode(model, tokens[-1:].expand(5, -1), parse_policy(spec), rule)
    assert len({tuple(r) for r in same.tokens.tolist()} | {tuple(r) for r in same.reveal_step.tolist()}) > 2
    for i in range(5):
        alone = decode(model, tokens[i : i + 1], parse_policy(spec), rule, seeds=torch.tensor([i]))
        assert torch.equal(alone.tokens[0], default.tokens[i]) and torch.equal(alone.reveal_step[0], default.reveal_step[i])
