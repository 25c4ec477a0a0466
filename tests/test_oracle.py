"""The exact denoisers: a joint by its support (SupportDenoiser) equals the dense table's (JointDenoiser),
refuses or, with ``nearest``, answers a context of probability 0, and does not depend on its chunking."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

import unmask.oracle as oracle_module
from unmask.errors import UnmaskError
from unmask.oracle import SupportDenoiser


def brute_conditional(seqs: torch.Tensor, w: torch.Tensor, context: list[int], mask: int, pos: int, vocab: int) -> list[float]:
    """P(x_pos = v | context) by summing the support in plain Python."""
    mass = [0.0] * vocab
    for s, p in zip(seqs.tolist(), w.tolist()):
        if all(c == mask or c == x for c, x in zip(context, s)):
            mass[s[pos]] += p
    total = sum(mass)
    return [m / total for m in mass]


def test_support_equals_the_dense_joint_and_brute_force(make_joint):
    joint = make_joint(seq_len=4, vocab=3, seed=5)
    table = joint.joint.reshape(-1)
    seqs = torch.tensor(list(itertools.product(range(3), repeat=4)))
    keep = table > 1e-4  # a sparser joint: renormalised on part of the table
    support = SupportDenoiser(seqs[keep], table[keep] / table[keep].sum(), 3)
    full = SupportDenoiser(seqs, table, 3)
    contexts = torch.tensor([[3, 3, 3, 3], [0, 3, 3, 3], [3, 1, 3, 2], [2, 3, 0, 3]])
    # The dense joint through the support class is the same joint.
    assert torch.allclose(full(contexts).logits, joint(contexts).logits, atol=1e-12)
    got = support(contexts).logits.exp()  # (4, 4, 3)
    for b, context in enumerate(contexts.tolist()):
        if not (support.mass(contexts[b : b + 1]) > 0).any():
            continue
        for pos in range(4):
            want = brute_conditional(seqs[keep], table[keep] / table[keep].sum(), context, 3, pos, 3)
            assert got[b, pos].tolist() == pytest.approx(want, abs=1e-12)


def test_a_context_of_probability_zero_is_refused_or_answered_by_the_nearest_sequences():
    seqs = torch.tensor([[0, 1, 2], [1, 0, 2], [2, 2, 2]])
    w = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)
    broken = torch.tensor([[0, 0, 3]])  # no support sequence starts 0, 0
    with pytest.raises(UnmaskError, match="probability 0"):
        SupportDenoiser(seqs, w, 3)(broken)
    # Nearest: [0, 1, 2] and [1, 0, 2] each disagree with one token, [2, 2, 2] with two: 2/3 and 1/3.
    p = SupportDenoiser(seqs, w, 3, nearest=True)(broken).logits.exp()[0]  # (3, 3)
    assert p[0].tolist() == pytest.approx([2 / 3, 1 / 3, 0]) and p[1].tolist() == pytest.approx([1 / 3, 2 / 3, 0])
    assert p[2].tolist() == pytest.approx([0, 0, 1])
    # A sequence of weight 0 is no support: never anyone's nearest (here it would agree with every token).
    zero = SupportDenoiser(torch.cat([seqs, torch.tensor([[0, 0, 0]])]), torch.cat([w, torch.zeros(1, dtype=torch.float64)]), 3,
                           nearest=True)
    assert torch.equal(zero(broken).logits, SupportDenoiser(seqs, w, 3, nearest=True)(broken).logits)
    # A context the joint allows gets its exact conditional either way.
    fine = torch.tensor([[3, 3, 2]])
    assert torch.equal(SupportDenoiser(seqs, w, 3, nearest=True)(fine).logits, SupportDenoiser(seqs, w, 3)(fine).logits)
    assert SupportDenoiser(seqs, w, 3)(fine).logits.exp()[0, 0].tolist() == pytest.approx([0.5, 0.25, 0.25])


def test_results_do_not_depend_on_the_chunk_size(monkeypatch, make_joint):
    joint = make_joint(seq_len=4, vocab=3, seed=2)
    contexts = torch.tensor([[3, 3, 3, 3], [0, 3, 3, 3], [3, 1, 3, 2], [2, 3, 0, 3], [1, 1, 3, 3]])
    want = joint(contexts).logits
    monkeypatch.setattr(oracle_module, "_CHUNK", 1)  # one context at a time
    assert torch.equal(joint(contexts).logits, want)
    assert joint(contexts[:0]).logits.shape == (0, 4, 3)


@pytest.mark.parametrize("seqs, w, vocab, match", [
    (torch.zeros(0, 3, dtype=torch.long), torch.zeros(0), 2, "S >= 1"),
    (torch.tensor([[0, 2]]), torch.tensor([1.0]), 2, "range"),
    (torch.tensor([[0, 1]]), torch.tensor([0.5]), 2, "sum to 1"),
    (torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.5, -0.5]), 2, "non-negative"),
    (torch.tensor([[0, 1]]), torch.tensor([0.5, 0.5]), 2, "weights"),
])
def test_bad_supports_are_refused(seqs, w, vocab, match):
    with pytest.raises(UnmaskError, match=match):
        SupportDenoiser(seqs, w, vocab)


def test_exact_mi_of_a_support_is_the_analytic_value():
    """Two bits copied (x1 = x0) and an independent third: I(0;1) = log 2, I(0;2) = 0."""
    from unmask.mi.exact import exact_mi

    seqs = torch.tensor([[a, a, c] for a in range(2) for c in range(2)])
    oracle = SupportDenoiser(seqs, torch.full((4,), 0.25, dtype=torch.float64), 2)
    res = exact_mi(oracle, torch.tensor([[2, 2, 2]]), eps=0.0)
    mi = res.symmetric[0]
    assert mi[0, 1].item() == pytest.approx(math.log(2), abs=1e-9) and mi[0, 2].item() == pytest.approx(0, abs=1e-9)
