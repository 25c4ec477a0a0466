"""Exact MI from model conditionals equals the analytic conditional MI of an oracle joint."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from unmask.mi import exact_mi
from unmask.oracle import JointDenoiser


def analytic_mi(joint: torch.Tensor, tokens: list[int], mask_id: int, i: int, j: int) -> float:
    """I(X_i; X_j | C) straight from the joint table (C = the unmasked entries of ``tokens``)."""
    n, v = joint.dim(), joint.shape[0]
    pair = torch.zeros(v, v, dtype=torch.float64)
    for seq in itertools.product(range(v), repeat=n):
        if all(t == mask_id or t == s for t, s in zip(tokens, seq)):
            pair[seq[i], seq[j]] += joint[seq]
    pair /= pair.sum()
    pi, pj = pair.sum(1, keepdim=True), pair.sum(0, keepdim=True)
    nz = pair > 0
    return float((pair[nz] * (pair[nz] / (pi * pj).expand_as(pair)[nz]).log()).sum())


def markov_chain(n: int = 4, v: int = 3, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    init = torch.rand(v, generator=g, dtype=torch.float64)
    trans = torch.rand(v, v, generator=g, dtype=torch.float64) ** 3
    init, trans = init / init.sum(), trans / trans.sum(1, keepdim=True)
    joint = torch.zeros((v,) * n, dtype=torch.float64)
    for seq in itertools.product(range(v), repeat=n):
        p = init[seq[0]]
        for a, b in zip(seq, seq[1:]):
            p = p * trans[a, b]
        joint[seq] = p
    return joint


def test_independent_gives_zero():
    a, b, c = torch.tensor([0.2, 0.5, 0.3]), torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.1, 0.1, 0.8])
    oracle = JointDenoiser(torch.einsum("i,j,k->ijk", a, b, c).double())
    res = exact_mi(oracle, torch.full((1, 3), oracle.mask_id))
    off = res.raw[0][~torch.eye(3, dtype=torch.bool)]
    assert off.abs().max() < 1e-12
    assert torch.allclose(res.raw[0].diagonal(), res.entropy[0])


def test_copy_gives_entropy():
    # X1 = X2 uniform over 3 values; X3 an independent fair coin (its third value impossible).
    q = torch.zeros(3, 3, 3, dtype=torch.float64)
    for x in range(3):
        q[x, x, :2] = 1 / 6
    oracle = JointDenoiser(q)
    res = exact_mi(oracle, torch.full((1, 3), oracle.mask_id))
    assert res.raw[0, 0, 1] == pytest.approx(math.log(3), abs=1e-10)
    assert res.raw[0, 1, 0] == pytest.approx(math.log(3), abs=1e-10)
    assert res.raw[0, 0, 2] == pytest.approx(0, abs=1e-10)
    assert res.passes.tolist() == [1 + 3 + 3 + 2]  # the impossible value of X3 is never probed


@pytest.mark.parametrize("context", [[3, 3, 3, 3], [3, 1, 3, 3], [3, 3, 0, 3], [2, 3, 3, 3]])
def test_markov_chain_matches_analytic(context):
    joint = markov_chain()
    oracle = JointDenoiser(joint)
    tokens = torch.tensor([context])
    res = exact_mi(oracle, tokens)
    masked = [k for k, t in enumerate(context) if t == 3]
    for i in masked:
        for j in masked:
            if i != j:
                assert float(res.raw[0, i, j]) == pytest.approx(analytic_mi(joint, context, 3, i, j), abs=1e-5)
    assert res.asymmetry() < 1e-6  # one consistent joint: I(i;j) = I(j;i)
    given = [k for k in range(4) if k not in masked]
    assert (res.raw[0][:, given] == 0).all() and (res.raw[0][given] == 0).all()


def test_chain_conditional_independence():
    # X1 ⟂ X3 | X2 in a Markov chain: fixing X2 kills their MI, leaving it unfixed does not.
    oracle = JointDenoiser(markov_chain(seed=1))
    free = exact_mi(oracle, torch.tensor([[3, 3, 3, 3]])).raw[0, 0, 2]
    fixed = exact_mi(oracle, torch.tensor([[3, 1, 3, 3]])).raw[0, 0, 2]
    assert free > 1e-3 and abs(float(fixed)) < 1e-12


def test_truncation_within_bound_and_cheaper(make_joint):
    oracle = make_joint(seq_len=4, vocab=3, seed=5, alpha=0.2)
    tokens = torch.full((2, 4), oracle.mask_id)
    tokens[1, 0] = 1
    full = exact_mi(oracle, tokens)
    for eps in (0.01, 0.05, 0.2):
        cut = exact_mi(oracle, tokens, eps=eps)
        err = (cut.raw - full.raw).abs().amax(-1)  # (B, L) worst error in each row
        assert (err <= cut.bound + 1e-12).all()
        assert (cut.passes <= full.passes).all()
    assert (exact_mi(oracle, tokens, eps=0.2).passes < full.passes).any()


def test_row_subset_and_pass_count(make_model):
    model = make_model(seq_len=10, vocab=4)
    tokens = torch.full((3, 10), model.mask_id)
    tokens[:, :4] = 1
    rows = torch.zeros(3, 10, dtype=torch.bool)
    rows[0, [5, 7]] = True
    rows[1, 2] = True  # given: ignored
    res = exact_mi(model, tokens, rows=rows, batch_size=5)
    assert res.passes.tolist() == [1 + 2 * 4, 1, 1]
    assert (res.raw[0, [0, 1, 2, 3, 4, 6, 8, 9]] == 0).all() and (res.raw[1:] == 0).all()
    full = exact_mi(model, tokens)
    assert torch.allclose(res.raw[0, [5, 7]], full.raw[0, [5, 7]], atol=1e-6)
    sym = full.symmetric
    assert torch.allclose(sym, sym.transpose(1, 2))
    assert full.asymmetry() > 0  # a real network is not one consistent joint
