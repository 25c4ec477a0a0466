"""MI-guided decoding: the budget rule, its λ = 0 limit, and what the MI term buys on an oracle."""

from __future__ import annotations

import math

import pytest
import torch

from unmask.decode import TokenRule, decode
from unmask.decode.policy import as_selection
from unmask.decode.scores import entropy
from unmask.decode.state import DecodeState, take_top
from unmask.denoiser import DenoiserOutput
from unmask.errors import UnmaskError
from unmask.mi import exact_mi
from unmask.mi.policies import MIPaced, mi_count_greedy, mi_greedy
from unmask.oracle import JointDenoiser
from unmask.policies import attach, parse_policy


def entropy_budget(h: list[float], gamma: float) -> set[int]:
    """Reference: sorted by entropy, keep taking while the running sum fits γ (the first always)."""
    order = sorted(range(len(h)), key=lambda i: (h[i], i))
    taken, spent = {order[0]}, h[order[0]]
    for i in order[1:]:
        if spent + h[i] > gamma:
            break
        taken.add(i)
        spent += h[i]
    return taken


@pytest.mark.parametrize("seed", range(20))
def test_lambda_zero_is_an_entropy_budget(seed):
    g = torch.Generator().manual_seed(seed)
    h = torch.rand(1, 12, generator=g) * 0.4
    masked = torch.rand(1, 12, generator=g) < 0.8
    masked[0, 3] = True
    gamma = float(torch.rand(1, generator=g))
    got = set(mi_greedy(h, masked, None, gamma, 0.0)[0].nonzero().squeeze(1).tolist())
    idx = masked[0].nonzero().squeeze(1).tolist()
    want = {idx[k] for k in entropy_budget([float(h[0, i]) for i in idx], gamma)}
    assert got == want


def test_mi_defers_dependent_positions():
    h = torch.tensor([[0.01, 0.02, 0.03, 0.04]])
    masked = torch.ones(1, 4, dtype=torch.bool)
    mi = torch.zeros(1, 4, 4)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.5  # 1 depends on 0; 2 and 3 are independent of everything
    assert mi_greedy(h, masked, mi, 1.0, 0.0)[0].tolist() == [True] * 4
    assert mi_greedy(h, masked, mi, 1.0, 5.0)[0].tolist() == [True, False, True, True]
    # Every taken token pays its own entropy: γ = 0.05 admits 0 (0.01) + 1 (0.02), not 2 (0.03).
    assert mi_greedy(h, masked, mi, 0.05, 0.0)[0].tolist() == [True, True, False, False]


@pytest.mark.parametrize("lam", [0.0, 1e-9])  # the vectorised λ = 0 prefix and the greedy loop agree
def test_mi_budget_charges_the_least_certain_token_unlike_eb(lam):
    logits = torch.tensor([[[6.0, 0.0], [5.0, 0.0], [4.0, 0.0], [3.0, 0.0]]])  # entropies increase
    state = DecodeState(torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.bool), logits,
                        torch.zeros(1, 4, 1), 0, torch.zeros(1, dtype=torch.long))
    h = -(state.probs * state.log_probs).sum(-1)  # (1, 4)
    gamma = float(h[0, 0] + h[0, 1] + h[0, 2] / 2)
    # EB's Σ H − max H lets the third token in for free; the MI budget charges every token.
    assert as_selection(parse_policy(f"eb:gamma={gamma}").select(state)).reveal[0].tolist() == [True, True, True, False]
    assert mi_greedy(h, state.masked, torch.zeros(1, 4, 4), gamma, lam)[0].tolist() == [True, True, False, False]


def copy_pair_oracle() -> JointDenoiser:
    """X1 = X2 uniform, X3 independent uniform, over 3 values."""
    p = torch.zeros(3, 3, 3, dtype=torch.float64)
    for x in range(3):
        p[x, x, :] = 1 / 9
    return JointDenoiser(p)


@pytest.mark.parametrize("spec", ["exact:gamma=10,lam=10", "exact:gamma=10,lam=20,charge=influence"])
def test_exact_mi_policy_keeps_a_copied_pair_apart(empirical_tv, spec):
    # X1 = X2 uniform, X3 independent uniform: λ = 0 reveals everything at once and breaks the copy.
    # Bug caught (charge=influence): the influence not charged (D = 2/3 here, so λ = 20 > (γ − 2 ln 3) / D).
    oracle = copy_pair_oracle()
    assert empirical_tv(oracle, "mi:gamma=10,lam=0", n=2000) > 0.4
    policy = attach(parse_policy(spec), denoiser=oracle)
    tokens = torch.full((2000, 3), oracle.mask_id)
    out = decode(oracle, tokens, policy, TokenRule(1.0), seeds=torch.arange(2000))
    assert (out.tokens[:, 0] == out.tokens[:, 1]).all()
    assert (out.nfe == 2).all()  # X1 with X3, then X2
    # Step 1: a base pass + 3 positions × 3 values (the scan reaches every row); step 2: the base pass
    # alone (X2, the last masked cell, is taken without a charge, so its row is never probed).
    assert int(out.extra_passes.sum()) == 2000 * ((1 + 3 * 3) + 1)
    assert (out.extra_passes == (1 + 3 * 3) + 1).all()  # per row, not just in total


@pytest.mark.parametrize("charge", ["influence", "mi", "joint"])
def test_exact_steps_keeps_a_copied_pair_apart_at_the_same_passes(charge):
    # X1 = X2 uniform, X3 independent uniform; 2 passes, so the first reveals 2 of the 3. Entropy order
    # (λ = 0) takes X1 and X2 together (ties go to the lower position) and breaks the copy; the exact
    # charge takes X3 beside X1 instead. Bugs caught: the charge not applied, applied to the wrong
    # pair, or the pace changed (the passes stay exactly 2 either way).
    oracle = copy_pair_oracle()
    tokens = torch.full((300, 3), oracle.mask_id)
    logits, hidden = oracle(tokens[:1])
    state = DecodeState(tokens[:1], tokens[:1] == oracle.mask_id, logits, hidden, 0, torch.zeros(1, dtype=torch.long))
    base = as_selection(attach(parse_policy("exact_steps:steps=2,lam=0"), denoiser=oracle).select(state))
    assert base.reveal[0].tolist() == [True, True, False] and base.extra_passes is None  # λ = 0 probes nothing
    policy = attach(parse_policy(f"exact_steps:steps=2,lam=1,charge={charge}"), denoiser=oracle)
    out = decode(oracle, tokens, policy, TokenRule(1.0), seeds=torch.arange(300))
    assert (out.nfe == 2).all() and (out.tokens[:, 0] == out.tokens[:, 1]).all()
    # Per row, the first pass's probes only: the second takes the last masked cell, so nothing is probed.
    assert (out.extra_passes == 1 + 3 * 3).all()


def test_exact_steps_probes_only_rows_with_a_choice_left():
    # Row 0 has all 3 cells masked, row 1 only X3: at 2 passes row 1's first step takes its one cell, so it
    # is never probed, while row 0 is probed at its first pass only. Bugs caught: probing every row (or
    # none), charging row 1 with row 0's probes, or results that depend on the batch.
    oracle = copy_pair_oracle()
    tokens = torch.full((2, 3), oracle.mask_id)
    tokens[1, :2] = torch.tensor([1, 1])
    policy = attach(parse_policy("exact_steps:steps=2,lam=1,charge=mi"), denoiser=oracle)
    out = decode(oracle, tokens, policy, TokenRule(1.0), seeds=torch.arange(2))
    assert out.extra_passes.tolist() == [1 + 3 * 3, 0] and out.nfe.tolist() == [2, 1]
    alone = decode(oracle, tokens[:1], policy, TokenRule(1.0), seeds=torch.arange(1))
    assert torch.equal(alone.tokens[0], out.tokens[0]) and int(alone.extra_passes[0]) == 1 + 3 * 3


def test_exact_steps_refuses_an_unknown_charge():
    with pytest.raises(UnmaskError, match="exact_steps: charge must be one of mi, joint, influence"):
        parse_policy("exact_steps:charge=entropy")


def test_mi_needs_its_head(model):
    with pytest.raises(UnmaskError, match="^mi: lam > 0 needs an MI estimator head"):
        decode(model, torch.full((1, 16), model.mask_id), parse_policy("mi:gamma=1,lam=1"))
    decode(model, torch.full((1, 16), model.mask_id), parse_policy("mi:gamma=1,lam=0"))  # λ = 0 needs none


class Contrarian:
    """Confident about every position while all are masked, uniform once any is given: an inconsistent
    model whose exact MI is negative (fixing X_i *raises* the entropy of X_j)."""

    vocab_size, mask_id, device = 2, 2, torch.device("cpu")

    def __call__(self, tokens):
        b, n = tokens.shape
        sure = torch.tensor([4.0, -4.0]).expand(b, n, 2)  # P = 0.9997, H ≈ 0.003 nats
        logits = torch.where((tokens == self.mask_id).all(1)[:, None, None], sure, torch.zeros(b, n, 2))
        return DenoiserOutput(logits, torch.zeros(b, n, 1))


def test_exact_mi_policy_clamps_negative_mi():
    # Bug caught: exact (charge=mi) without its clamp of negative MI at 0: a negative charge refills the budget,
    # so a large λ would let in positions whose own entropy does not fit (here the third).
    model = Contrarian()
    tokens = torch.full((1, 3), model.mask_id)
    mi = exact_mi(model, tokens).symmetric
    assert float(mi[0, 0, 1]) < -0.5  # the fixture really is negative: ≈ 0.003 − log 2
    logits, hidden = model(tokens)
    state = DecodeState(tokens, tokens == model.mask_id, logits, hidden, 0, torch.zeros(1, dtype=torch.long))
    h = float(-(state.probs * state.log_probs).sum(-1)[0, 0])
    unclamped = mi_greedy(entropy(state.probs), state.masked, mi.float(), 2.5 * h, 10.0)
    assert unclamped[0].tolist() == [True, True, True]  # the fixture does refill the budget
    policy = attach(parse_policy(f"exact:gamma={2.5 * h},lam=10,eps=0"), denoiser=model)
    sel = as_selection(policy.select(state))
    assert sel.reveal[0].tolist() == [True, True, False]  # 3·H > γ: two fit, as with MI = 0
    assert sel.extra_passes.tolist() == [1 + 2 * 2]  # the rows of the first two (the third's H alone does not fit)


@pytest.mark.parametrize("lam", [0.0, 1e-9])  # the vectorised prefix and the greedy loop
def test_a_token_that_exactly_fills_the_budget_is_taken(lam):
    # Bug caught: the budget test made strict (cost < γ instead of ≤ γ) in either branch. Dyadic
    # entropies, so the sums are exact: 0.25 + 0.25 = γ.
    h = torch.tensor([[0.25, 0.25, 0.5]])
    masked = torch.ones(1, 3, dtype=torch.bool)
    assert mi_greedy(h, masked, torch.zeros(1, 3, 3), 0.5, lam)[0].tolist() == [True, True, False]


def test_lambda_one_still_charges_mi():
    # Bug caught: a branch keyed on λ = 1 instead of λ = 0 (the prefix shortcut taken, or the MI term
    # skipped, at λ = 1): with λ = 1 the MI of 0.5 with the first token must keep the second out.
    h = torch.tensor([[0.01, 0.02, 0.03]])
    mi = torch.zeros(1, 3, 3)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.5
    got = mi_greedy(h, torch.ones(1, 3, dtype=torch.bool), mi, 0.2, 1.0)
    assert got[0].tolist() == [True, False, True]


@pytest.mark.parametrize("spec", ["mi:gamma=-1", "mi:lam=-1", "exact:gamma=-0.5", "exact:lam=-2", "mi_paced:gamma=-1",
                                  "mi_paced:lam=-1", "exact:lam=-1,charge=influence"])
def test_negative_gamma_or_lambda_is_refused(spec):
    # Bug caught: the check requiring both to be negative before refusing (or losing its message).
    with pytest.raises(UnmaskError, match="gamma and lam must be >= 0"):
        parse_policy(spec)


def test_exact_mi_policy_needs_its_denoiser_and_passes_eps_on(make_joint):
    # Bugs caught: exact not refusing to run without a model to probe; its ``eps`` not handed to
    # exact_mi (every value probed: more passes than the spec asks for).
    oracle = make_joint(seq_len=4, vocab=3, seed=5, alpha=0.2)
    tokens = torch.full((2, 4), oracle.mask_id)
    logits, hidden = oracle(tokens)
    state = DecodeState(tokens, tokens == oracle.mask_id, logits, hidden, 0, torch.arange(2))
    with pytest.raises(UnmaskError, match="^exact needs the denoiser to probe$"):
        parse_policy("exact").select(state)
    sel = as_selection(attach(parse_policy("exact:gamma=100,eps=0.2"), denoiser=oracle).select(state))  # every row reached
    assert torch.equal(sel.extra_passes, exact_mi(oracle, tokens, eps=0.2).passes)
    assert (sel.extra_passes < exact_mi(oracle, tokens).passes).all()


def test_the_greedy_loop_breaks_entropy_ties_by_position():
    # Bug caught: the greedy loop's argsort without stable=True (torch's CPU sort is not stable from
    # 17 elements on): with 20 equal entropies it must take the lowest positions, as the λ = 0 prefix does.
    h = torch.full((1, 20), 0.25)
    masked = torch.ones(1, 20, dtype=torch.bool)
    for lam in (0.0, 1e-9):
        assert mi_greedy(h, masked, torch.zeros(1, 20, 20), 0.75, lam)[0].nonzero().squeeze(1).tolist() == [0, 1, 2]


def test_dependency_bound_on_a_hand_made_state():
    # DEMASK's rule: entropy order 2, 0, 3, 1; dependency 0.3 between 2 and 0, 0.02 between 3 and each
    # of 2 and 0, nothing else. δ = 0.1: 2 is taken, 0 would add 0.3 (too much), 3 adds 0.02, 1 adds 0.
    from unmask.mi.policies import dependency_greedy

    h = torch.tensor([[0.2, 0.9, 0.1, 0.5]])
    masked = torch.ones(1, 4, dtype=torch.bool)
    dep = torch.zeros(1, 4, 4)
    dep[0, 0, 2] = dep[0, 2, 0] = 0.3
    dep[0, 3, [0, 2]] = dep[0, [0, 2], 3] = 0.02
    assert dependency_greedy(h, masked, dep, 0.1).tolist() == [[False, True, True, True]]
    assert dependency_greedy(h, masked, dep, 0.3).tolist() == [[True, True, True, False]]  # 0.3 fits, then 3 adds 0.04
    assert dependency_greedy(h, masked, dep, 0.01).tolist() == [[False, True, True, False]]
    assert dependency_greedy(h, masked, dep, 0.1, max_entropy=0.6).tolist() == [[False, False, True, True]]
    # the most certain masked position is always taken, even above max_entropy; given ones never
    masked2 = torch.tensor([[True, True, False, True]])
    assert dependency_greedy(h, masked2, dep, 0.0, max_entropy=0.0).tolist() == [[True, False, False, False]]


def test_dependency_bound_edges():
    # Bugs caught: ties in entropy not going to the lower position (an unstable sort), a cell exactly at
    # max_entropy left out (< for <=).
    from unmask.mi.policies import dependency_greedy

    n = 200
    dep = torch.zeros(1, n, n)
    dep[0, 0, 1:] = dep[0, 1:, 0] = 1.0  # 0 clashes with every other cell, the others with nothing
    tied = dependency_greedy(torch.full((1, n), 0.5), torch.ones(1, n, dtype=torch.bool), dep, 0.5)
    assert tied[0].nonzero().squeeze(1).tolist() == [0]  # all tied: 0 comes first and keeps out the rest
    h = torch.tensor([[0.1, 0.5, 0.7]])
    at_cap = dependency_greedy(h, torch.ones(1, 3, dtype=torch.bool), torch.zeros(1, 3, 3), 1.0, max_entropy=0.5)
    assert at_cap.tolist() == [[True, True, False]]


def test_demask_select_passes_its_bound_and_cap_and_clamps_the_head():
    # Bugs caught: select handing max_entropy in place of δ, dropping max_entropy, clamping the head's
    # output to 1 instead of 0; max_entropy = 0 refused.
    from unmask.mi.policies import Demask, dependency_greedy

    state, head = paced_state(3)
    h = entropy(state.probs)
    for delta, cap in ((0.0, float("inf")), (0.3, 0.5), (2.0, 1.0), (0.1, 0.0)):
        got = attach(Demask(delta=delta, max_entropy=cap), mi_head=head).select(state)
        assert torch.equal(got, dependency_greedy(h, state.masked, head(None, None), delta, cap))
    zero = attach(Demask(delta=0.5), mi_head=lambda hid, probs: torch.zeros_like(head(hid, probs)))
    assert torch.equal(zero.select(state), state.masked)  # no dependency anywhere: every masked cell at once
    negative = attach(Demask(delta=0.0), mi_head=lambda hid, probs: -head(hid, probs))
    assert torch.equal(negative.select(state), state.masked)  # negative estimates charge nothing
    assert parse_policy("demask:delta=0.1,max_entropy=0").max_entropy == 0.0


def test_demask_needs_its_head():
    with pytest.raises(UnmaskError, match=r"^demask needs an MI \(dependency\) head \(train one with `unmask mi train`\)$"):
        parse_policy("demask").select(DecodeState(torch.full((1, 3), 5), torch.ones(1, 3, dtype=torch.bool),
                                                   torch.zeros(1, 3, 4), torch.zeros(1, 3, 2), 0,
                                                   torch.zeros(1, dtype=torch.long)))
    with pytest.raises(UnmaskError, match="delta"):
        parse_policy("demask:delta=-1")


class Forgetful:
    """Unsure of every position while all are masked; once any is given, sure the rest are 1 whatever
    it is: fixing X_i removes X_j's uncertainty (the paper's I = log 2) without X_j depending on X_i
    (the probe joint's MI is 0)."""

    vocab_size, mask_id, device = 2, 2, torch.device("cpu")

    def __call__(self, tokens):
        b, n = tokens.shape
        sure = torch.tensor([-9.0, 9.0]).expand(b, n, 2)
        logits = torch.where((tokens == self.mask_id).all(1)[:, None, None], torch.zeros(b, n, 2), sure)
        return DenoiserOutput(logits, torch.zeros(b, n, 1))


def test_exact_mi_policy_charges_the_probe_joint_when_asked():
    # Bug caught: exact's charge=joint ignored (the paper's I charged either way), or the joint not
    # symmetrised over the computed rows before it is charged.
    model = Forgetful()
    tokens = torch.full((1, 3), model.mask_id)
    res = exact_mi(model, tokens)
    assert float(res.symmetric[0, 0, 1]) == pytest.approx(math.log(2), abs=1e-6) and float(res.joint[0, 0, 1]) < 1e-6
    logits, hidden = model(tokens)
    state = DecodeState(tokens, tokens == model.mask_id, logits, hidden, 0, torch.zeros(1, dtype=torch.long))
    gamma = 3 * math.log(2) + 0.01  # every entropy fits; the MI term decides
    paper = as_selection(attach(parse_policy(f"exact:gamma={gamma},lam=10,eps=0"), denoiser=model).select(state))
    joint = as_selection(attach(parse_policy(f"exact:gamma={gamma},lam=10,charge=joint,eps=0"), denoiser=model).select(state))
    assert paper.reveal[0].tolist() == [True, False, False]
    assert joint.reveal[0].tolist() == [True, True, True]
    assert torch.equal(paper.extra_passes, joint.extra_passes)  # the same probes


def count_greedy_reference(h: list[float], mi: list[list[float]], lam: float, count: int) -> set[int]:
    """Reference: ``count`` times, take the untaken position of least h_i + λ Σ_{j taken} mi[j][i] (ties: lower i)."""
    taken: list[int] = []
    for _ in range(count):
        left = [i for i in range(len(h)) if i not in taken]
        taken.append(min(left, key=lambda i: (h[i] + lam * sum(mi[j][i] for j in taken), i)))
    return set(taken)


@pytest.mark.parametrize("seed", range(20))
def test_mi_count_greedy_matches_the_reference(seed):
    g = torch.Generator().manual_seed(seed)
    b, n = 3, 10
    h = torch.rand(b, n, generator=g)
    masked = torch.rand(b, n, generator=g) < 0.7
    masked[:, 0] = True
    mi = torch.rand(b, n, n, generator=g) * (torch.rand(b, n, n, generator=g) < 0.3)  # sparse, not symmetric
    count = torch.stack([torch.randint(1, int(m.sum()) + 1, (), generator=g) for m in masked])
    lam = float(torch.rand(1, generator=g)) * 4
    got = mi_count_greedy(h, masked, mi, lam, count)
    for r in range(b):
        idx = masked[r].nonzero().squeeze(1).tolist()
        sub = [[float(mi[r, i, j]) for j in idx] for i in idx]  # sub[a][c]: charge to idx[c] once idx[a] is taken
        want = {idx[k] for k in count_greedy_reference([float(h[r, i]) for i in idx], sub, lam, int(count[r]))}
        assert set(got[r].nonzero().squeeze(1).tolist()) == want


def test_mi_count_greedy_swaps_a_dependent_position_for_an_independent_one():
    h = torch.tensor([[0.01, 0.02, 0.03, 0.04]])
    masked = torch.ones(1, 4, dtype=torch.bool)
    mi = torch.zeros(1, 4, 4)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.5  # 1 depends on 0
    two = torch.tensor([2])
    assert mi_count_greedy(h, masked, mi, 0.0, two)[0].tolist() == [True, True, False, False]
    assert mi_count_greedy(h, masked, mi, 1.0, two)[0].tolist() == [True, False, True, False]
    # The count is kept whatever the charge: with every pair dependent, the least certain still come in.
    assert mi_count_greedy(h, masked, torch.ones(1, 4, 4), 100.0, torch.tensor([4]))[0].all()
    # λ → 0 through the greedy loop gives the entropy prefix, ties to the lower position.
    tied = torch.tensor([[0.5, 0.1, 0.5, 0.1]])
    for lam in (0.0, 1e-12):
        assert mi_count_greedy(tied, masked, mi, lam, two)[0].tolist() == [False, True, False, True]


def test_mi_steps_takes_exactly_its_passes_and_needs_its_head():
    joint = torch.rand(*(3,) * 5, generator=torch.Generator().manual_seed(1))
    oracle = JointDenoiser(joint / joint.sum())
    for steps in (1, 2, 5):
        policy = attach(parse_policy(f"mi_steps:steps={steps},lam=2"),
                        mi_head=lambda hid, probs: torch.ones(*hid.shape[:2], hid.shape[1]))
        res = decode(oracle, torch.full((4, 5), oracle.mask_id), policy, TokenRule())
        assert res.nfe.tolist() == [steps] * 4
    with pytest.raises(UnmaskError, match="MI estimator head"):
        parse_policy("mi_steps:steps=2,lam=1").select(DecodeState(torch.full((1, 3), 5), torch.ones(1, 3, dtype=torch.bool),
                                                                  torch.zeros(1, 3, 4), torch.zeros(1, 3, 2), 0,
                                                                  torch.zeros(1, dtype=torch.long)))
    for bad in ("mi_steps:lam=-1", "mi_steps:steps=0"):
        with pytest.raises(UnmaskError):
            parse_policy(bad)


def paced_state(seed: int, b: int = 4, n: int = 12):
    """A random state (entropies spread over 0–1.5 nats, a random share masked) and a random sparse
    non-negative MI head over it."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(b, n, 5, generator=g) * torch.rand(b, n, 1, generator=g) * 4
    masked = torch.rand(b, n, generator=g) < 0.8
    masked[:, 0] = True
    tokens = torch.where(masked, 5, torch.randint(5, (b, n), generator=g))
    mi = torch.rand(b, n, n, generator=g) * (torch.rand(b, n, n, generator=g) < 0.4)
    state = DecodeState(tokens, masked, logits, torch.zeros(b, n, 2), 0, torch.zeros(b, dtype=torch.long))
    return state, (lambda hidden, probs: mi)


@pytest.mark.parametrize("seed", range(10))
def test_mi_paced_keeps_the_entropy_budgets_pace_and_chooses_by_the_charge(seed):
    # Bugs caught: the count taken from the charged rule (mi) instead of the entropy budget; the charge
    # ignored (entropy prefix for every λ); negative head outputs not clamped; λ = 0 not the budget itself.
    state, head = paced_state(seed)
    h = entropy(state.probs)
    for gamma in (0.0, 0.3, 1.0, 3.0):
        budget = mi_greedy(h, state.masked, None, gamma, 0.0)
        assert torch.equal(MIPaced(gamma=gamma, lam=0.0).select(state), budget)  # λ = 0: the entropy budget
        for lam in (0.5, 4.0):
            got = attach(MIPaced(gamma=gamma, lam=lam), mi_head=head).select(state)
            assert torch.equal(got.sum(1), budget.sum(1))  # the budget's pace, whatever the charge
            assert torch.equal(got, mi_count_greedy(h, state.masked, head(None, None), lam, budget.sum(1)))
            assert not (got & ~state.masked).any()
            flipped = attach(MIPaced(gamma=gamma, lam=lam), mi_head=lambda hid, probs: -head(hid, probs)).select(state)
            assert torch.equal(flipped, budget)  # negative estimates charge nothing


def test_mi_paced_swaps_a_dependent_position_where_mi_would_reveal_fewer():
    # Four cells, each less certain than the one before; 1 depends on 0. γ just above H_0 + H_1: the
    # budget takes {0, 1}; the charged rule (mi) takes {0} alone; mi_paced takes as many, swapping 1 for 2.
    logits = torch.zeros(1, 4, 9)
    logits[0, :, 0] = torch.tensor([8.0, 7.0, 6.0, 5.0])
    state = DecodeState(torch.full((1, 4), 9), torch.ones(1, 4, dtype=torch.bool), logits, torch.zeros(1, 4, 2), 0,
                        torch.zeros(1, dtype=torch.long))
    h = entropy(state.probs)
    gamma = float(h[0, 0] + h[0, 1]) + 0.1 * float(h[0, 2] - h[0, 1])
    mi = torch.zeros(1, 4, 4)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.5
    assert MIPaced(gamma=gamma, lam=0.0).select(state)[0].tolist() == [True, True, False, False]
    assert mi_greedy(h, state.masked, mi, gamma, 1.0)[0].tolist() == [True, False, False, False]
    assert (attach(MIPaced(gamma=gamma, lam=1.0), mi_head=lambda hid, probs: mi).select(state)[0].tolist()
            == [True, False, True, False])
    with pytest.raises(UnmaskError, match="mi_paced: lam > 0 needs an MI estimator head"):
        MIPaced(gamma=1.0, lam=1.0).select(state)


@pytest.mark.parametrize("seed", range(5))
def test_mi_steps_charges_its_head_at_the_fixed_pace(seed):
    # Bugs caught: mi_steps calling its head but deciding with λ = 0 (a uniform head cannot tell), the
    # pace not ⌈remaining / steps left⌉, negative head outputs not clamped to 0 (or clamped to more).
    from unmask.decode.state import budget_count
    from unmask.mi.policies import MISteps

    state, head = paced_state(seed)
    h = entropy(state.probs)
    for steps, lam in ((2, 0.5), (3, 4.0), (50, 1.0)):
        got = attach(MISteps(steps=steps, lam=lam), mi_head=head).select(state)
        assert torch.equal(got, mi_count_greedy(h, state.masked, head(None, None), lam, budget_count(state, steps)))
        flipped = attach(MISteps(steps=steps, lam=lam), mi_head=lambda hid, probs: -head(hid, probs)).select(state)
        assert torch.equal(flipped, take_top(-h, state.masked, budget_count(state, steps)))  # charged 0: entropy order
    with pytest.raises(UnmaskError, match=r"mi_steps: lam must be >= 0, got -1"):
        MISteps(steps=2, lam=-1.0)


def test_prefix_stops_at_the_first_position_that_does_not_fit():
    # Bug caught: prefix passing over a position that does not fit (as the default rule does).
    h = torch.tensor([[0.01, 0.02, 0.03, 0.04]])
    masked = torch.ones(1, 4, dtype=torch.bool)
    mi = torch.zeros(1, 4, 4)
    mi[0, 0, 1] = mi[0, 1, 0] = 0.5  # 1 depends on 0; 2 and 3 are independent of everything
    assert mi_greedy(h, masked, mi, 1.0, 5.0)[0].tolist() == [True, False, True, True]
    assert mi_greedy(h, masked, mi, 1.0, 5.0, prefix=True)[0].tolist() == [True, False, False, False]
    assert mi_greedy(h, masked, mi, 1.0, 0.1, prefix=True)[0].tolist() == [True] * 4  # 0.05 charge fits


@pytest.mark.parametrize("seed", range(20))
def test_prefix_is_a_prefix_of_entropy_order_no_longer_than_the_budget(seed):
    # Bugs caught: a prefix row going on after it stopped (not a prefix), or one row's stop leaking
    # into another row of the batch (each row is checked against itself alone).
    g = torch.Generator().manual_seed(seed)
    b, n = 4, 10
    h = torch.rand(b, n, generator=g) * 0.5
    masked = torch.rand(b, n, generator=g) < 0.8
    masked[:, 0] = True
    masked[-1] = False  # a finished row takes nothing
    mi = torch.rand(b, n, n, generator=g) * (torch.rand(b, n, n, generator=g) < 0.3)
    mi = (mi + mi.transpose(1, 2)) / 2
    gamma, lam = float(torch.rand(1, generator=g) * 2), float(torch.rand(1, generator=g) * 4)
    got = mi_greedy(h, masked, mi, gamma, lam, prefix=True)
    budget = mi_greedy(h, masked, None, gamma, 0.0)
    # no charge: the budget itself
    assert torch.equal(mi_greedy(h, masked, torch.zeros_like(mi), gamma, lam, prefix=True), budget)
    for r in range(b):
        alone = mi_greedy(h[r:r + 1], masked[r:r + 1], mi[r:r + 1], gamma, lam, prefix=True)
        assert torch.equal(alone[0], got[r])
        order = [i for i in h[r].argsort(stable=True).tolist() if masked[r, i]]
        flags = [bool(got[r, i]) for i in order]
        k = sum(flags)
        assert flags == [True] * k + [False] * (len(order) - k) and min(1, len(order)) <= k <= int(budget[r].sum())


def test_mi_prefix_policy_stops_where_mi_passes_over():
    # Bug caught: mi_prefix not stopping at the first misfit (the prefix flag not passed on).
    policy = parse_policy("mi_prefix:gamma=1,lam=5")
    def head(hidden, probs):
        return torch.tensor([[[0, .5, 0, 0], [.5, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0.]]])

    policy = attach(policy, mi_head=head)
    logits = torch.tensor([[[6.0, 0.0], [5.0, 0.0], [4.0, 0.0], [3.0, 0.0]]])
    state = DecodeState(torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 4, dtype=torch.bool), logits,
                        torch.zeros(1, 4, 1), 0, torch.zeros(1, dtype=torch.long))
    assert as_selection(policy.select(state)).reveal[0].tolist() == [True, False, False, False]
    skip = attach(parse_policy("mi:gamma=1,lam=5"), mi_head=head)
    assert as_selection(skip.select(state)).reveal[0].tolist() == [True, False, True, True]


def copy_pair_state():
    """:func:`copy_pair_oracle` and its all-masked state (equal entropies: entropy order X1, X2, X3)."""
    oracle = copy_pair_oracle()
    tokens = torch.full((1, 3), oracle.mask_id)
    logits, hidden = oracle(tokens)
    return oracle, DecodeState(tokens, tokens == oracle.mask_id, logits, hidden, 0, torch.zeros(1, dtype=torch.long))


@pytest.mark.parametrize("charge", ["mi", "influence"])
def test_exact_prefix_stops_where_the_exact_rule_skips(charge):
    # The skipping rule takes X1, passes over X2 (charged for the copy) and takes X3; the prefix rule
    # stops at X2, so it reveals X1 alone. Bug caught: exact_prefix decoding as the skipping rule
    # (prefix not passed on, or passed as False).
    oracle, state = copy_pair_state()
    spec = "exact:gamma=10,lam=10" if charge == "mi" else "exact:gamma=10,lam=20,charge=influence"
    skip = as_selection(attach(parse_policy(spec), denoiser=oracle).select(state))
    prefix = as_selection(attach(parse_policy(f"exact_prefix:gamma=10,lam=20,charge={charge}"), denoiser=oracle).select(state))
    assert skip.reveal[0].tolist() == [True, False, True]
    assert prefix.reveal[0].tolist() == [True, False, False]
    assert int(prefix.extra_passes[0]) == 1 + 2 * 3  # its probes, apart from NFE: X3's row is never reached
    assert int(skip.extra_passes[0]) == 1 + 3 * 3


def test_exact_policies_probe_at_their_own_eps(monkeypatch):
    # Bug caught: eps not handed to exact_mi (its default used instead).
    import unmask.mi.policies as pol

    seen = []
    real, probes = pol.exact_mi, pol.RowProbes
    monkeypatch.setattr(pol, "exact_mi", lambda *a, **k: seen.append(k.get("eps")) or real(*a, **k))
    monkeypatch.setattr(pol, "RowProbes", lambda *a, **k: seen.append(k.get("eps")) or probes(*a, **k))
    oracle, state = copy_pair_state()
    for spec in ("exact_prefix:gamma=10,lam=2,charge=mi,eps=0.05", "exact_steps:steps=2,lam=1,charge=mi,eps=0.05"):
        attach(parse_policy(spec), denoiser=oracle).select(state)
    assert seen == [0.05, 0.05]


def test_exact_policies_name_what_is_wrong():
    with pytest.raises(UnmaskError, match="^exact_prefix: charge must be one of mi, joint, influence, got 'entropy'$"):
        parse_policy("exact_prefix:charge=entropy")
    with pytest.raises(UnmaskError, match="^exact_steps: lam must be >= 0, got -1.0$"):
        parse_policy("exact_steps:lam=-1")
    _, state = copy_pair_state()
    with pytest.raises(UnmaskError, match="^exact_steps needs the denoiser to probe$"):
        parse_policy("exact_steps:steps=2,lam=1").select(state)


@pytest.mark.parametrize("spec", ["mi:gamma=1,lam=2", "mi_steps:steps=3,lam=2", "mi_paced:gamma=1,lam=2",
                                  "mi_prefix:gamma=1,lam=2", "demask:delta=0.5"])
def test_every_head_rule_hands_the_head_the_states_hidden_states_and_predicted_values(spec):
    # Bug caught: a rule calling its head with the hidden states alone, so a head fitted to read
    # P(X | C) beside them (HeadConfig.n_values) fails or reads something else while decoding.
    state, head = paced_state(0)
    seen = []

    def recording(hidden, probs):
        seen.append((hidden, probs))
        return head(hidden, probs)

    attach(parse_policy(spec), mi_head=recording).select(state)
    assert seen and all(torch.equal(h, state.hidden.float()) and torch.equal(p, state.probs) for h, p in seen)


def reached_rows(h: list[float], masked: list[bool], charge: torch.Tensor, gamma: float, lam: float, prefix: bool) -> set[int]:
    """Reference, one state in plain Python: the rows an exact budget rule must probe — at each
    position its scan reaches whose own entropy still fits, that position's row and the taken ones'."""
    order = sorted((i for i in range(len(h)) if masked[i]), key=lambda i: (h[i], i))
    taken, budget, reached = [order[0]], gamma - h[order[0]], set()
    for i in order[1:]:
        if h[i] > budget:
            if prefix:
                break
            continue
        reached |= {i, *taken}
        cost = h[i] + lam * sum(float(charge[i, j]) for j in taken)
        if cost <= budget:
            taken.append(i)
            budget -= cost
        elif prefix:
            break
    return reached


CHARGES = {"exact:gamma={g},lam={lam},eps=0": lambda r: r.symmetric.clamp_min(0),
           "exact:gamma={g},lam={lam},charge=joint,eps=0": lambda r: r.symmetric_joint,
           "exact:gamma={g},lam={lam},charge=influence,eps=0": lambda r: r.symmetric_influence,
           "exact_prefix:gamma={g},lam={lam},charge=mi,eps=0": lambda r: r.symmetric.clamp_min(0)}


@pytest.mark.parametrize("seed", range(12))
def test_exact_rules_probe_only_the_rows_their_scan_needs_and_choose_as_with_every_row(make_joint, seed):
    # The oracle rules probe a row only when their scan reaches it with its entropy still fitting.
    # Bugs caught: a choice that differs from the rule on the full matrix (a row missing when its
    # charge is read, a pair charged from one direction only), rows probed the scan never needs, or
    # their passes miscounted (each state: the base pass + every value of every reached row).
    g = torch.Generator().manual_seed(seed)
    oracle = make_joint(seq_len=6, vocab=3, seed=seed, alpha=0.3)
    tokens = torch.where(torch.rand(4, 6, generator=g) < 0.7, oracle.mask_id, torch.randint(3, (4, 6), generator=g))
    tokens[:, 0] = oracle.mask_id  # every state has a masked cell
    logits, hidden = oracle(tokens)
    state = DecodeState(tokens, tokens == oracle.mask_id, logits, hidden, 0, torch.arange(4))
    h = entropy(state.probs)  # (B, L)
    full = exact_mi(oracle, tokens)
    fewer = False
    for spec, charge in CHARGES.items():
        for gamma in (0.3, 1.0, 2.5):
            for lam in (0.5, 4.0):
                prefix = spec.startswith("exact_prefix")
                sel = as_selection(attach(parse_policy(spec.format(g=gamma, lam=lam)), denoiser=oracle).select(state))
                want = mi_greedy(h, state.masked, charge(full).float(), gamma, lam, prefix)
                assert torch.equal(sel.reveal, want), (spec, gamma, lam)
                for b in range(4):
                    rows = reached_rows(h[b].tolist(), state.masked[b].tolist(), charge(full)[b], gamma, lam, prefix)
                    assert int(sel.extra_passes[b]) == 1 + int((state.probs[b, sorted(rows)] > 0).sum()), (spec, gamma, lam, b)
                fewer |= bool((sel.extra_passes < full.passes).any())
    assert fewer  # some state needs fewer probes than every row's


def test_a_cell_that_exactly_fits_is_probed_and_charged():
    # Entropies 0.25, 0.5, 1 (exact in float32), γ = 0.75: after the first, the second's entropy fills
    # the budget exactly, so its charge decides. Bug caught: the scan asking for a row only where the
    # entropy fits strictly (h < budget), so an exactly fitting cell is taken uncharged.
    h = torch.tensor([[0.25, 0.5, 1.0]])
    masked = torch.ones(1, 3, dtype=torch.bool)
    charge = torch.ones(1, 3, 3)  # every pair charged
    asked = []
    lazy = mi_greedy(h, masked, lambda rows: asked.append(rows.clone()) or charge, 0.75, 1.0)
    assert lazy[0].tolist() == mi_greedy(h, masked, charge, 0.75, 1.0)[0].tolist() == [True, False, False]
    assert [r[0].tolist() for r in asked] == [[True, True, False]]  # the second's row and the first's, never the third's


def test_an_exact_rule_refuses_a_negative_charge():
    # The pruning is exact only for charges >= 0 (an unprobed cell is one whose entropy alone does not
    # fit). Bug caught: a future charge without its clamp silently choosing differently from the full matrix.
    from unmask.mi.policies import exact_budget

    model = Contrarian()
    tokens = torch.full((1, 3), model.mask_id)
    logits, hidden = model(tokens)
    state = DecodeState(tokens, tokens == model.mask_id, logits, hidden, 0, torch.zeros(1, dtype=torch.long))
    policy = attach(parse_policy("exact:gamma=10,lam=10,eps=0"), denoiser=model)
    with pytest.raises(UnmaskError, match="^exact: an exact charge must be >= 0 \\(clamp it\\), got -0"):
        exact_budget(policy, state, lambda res: res.symmetric)  # the paper's I unclamped: negative here
    assert as_selection(exact_budget(policy, state, lambda res: res.symmetric.clamp_min(0))).reveal.any()


@pytest.mark.parametrize("old,new", [("mi_exact:gamma=1,lam=2,eps=0.01", "exact:gamma=1,lam=2,eps=0.01"),
                                     ("mi_exact:gamma=1,lam=2,joint=1", "exact:gamma=1,lam=2,charge=joint"),
                                     ("influence_exact:gamma=1,lam=4", "exact:gamma=1,lam=4,charge=influence")])
def test_old_oracle_names_decode_as_the_new_one(make_joint, old, new):
    # Bugs caught: an old spelling of the exact rule decoding otherwise than its new name (another
    # charge, a lost clamp, another default), or noting the rename more than once per parse.
    from unmask.errors import SpecRenamed

    oracle = make_joint(seq_len=5, vocab=3, seed=3, alpha=0.3)
    tokens = torch.full((16, 5), oracle.mask_id)
    tokens[::2, 1] = 0  # some rows with a given cell
    with pytest.warns(SpecRenamed) as notes:
        was = attach(parse_policy(old), denoiser=oracle)
    assert len(notes) == 1 and str(notes[0].message).startswith(f"policy spec {old!r} is now 'exact:")
    now = attach(parse_policy(new), denoiser=oracle)
    a, b = (decode(oracle, tokens, p, TokenRule(1.0), seeds=torch.arange(16)) for p in (was, now))
    for field in ("tokens", "nfe", "reveal_step", "extra_passes"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    assert int(a.extra_passes.sum()) > 0  # the rows were probed
