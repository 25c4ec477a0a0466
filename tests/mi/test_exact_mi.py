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


def test_truncation_fills_in_the_skipped_mass():
    # Bug caught: the ε fill-in removed (the kept values' Σ_v P(v)·H(X_j | v) not divided by their
    # mass), which still passes the error bound above. When every value of X_0 leaves X_1 with the
    # same entropy (its conditionals are permutations of one another), the fill-in is exact.
    p0 = torch.tensor([0.6, 0.395, 0.005], dtype=torch.float64)  # value 2 falls under ε = 0.01
    cond = torch.tensor([0.7, 0.2, 0.1], dtype=torch.float64)
    joint = torch.stack([p0[v] * cond.roll(v) for v in range(3)])  # (X_0, X_1)
    oracle = JointDenoiser(joint)
    tokens = torch.full((1, 2), oracle.mask_id)
    cut = exact_mi(oracle, tokens, eps=0.01)
    want = analytic_mi(joint, [2, 2], 2, 0, 1)
    assert want > 0.1 and float(cut.bound[0, 0]) == pytest.approx(0.005 * math.log(3))  # a real cut
    assert float(cut.raw[0, 0, 1]) == pytest.approx(want, abs=1e-10)
    assert cut.passes.tolist() == [1 + 2 + 3]  # X_0's rare value is not probed; all of X_1's are


def test_truncated_rows_match_the_fill_in_formula(make_joint):
    # Bug caught: the same, on a generic joint: row i must equal H(X_j) − Σ_kept P(v)·H(X_j | v) / Σ_kept P(v)
    # computed straight from the joint table (kept: P(X_i = v) ≥ ε, and always the most likely v).
    oracle = make_joint(seq_len=3, vocab=3, seed=3, alpha=0.3)  # P(X_1 = 2) = 0.086 < ε: row 1 is cut
    joint, eps = oracle.joint, 0.1
    res = exact_mi(oracle, torch.full((1, 3), oracle.mask_id), eps=eps)

    def entropy(q):
        q = q[q > 0]
        return float(-(q * q.log()).sum())

    skipped = 0
    for i, j in itertools.permutations(range(3), 2):
        pair = joint.sum(dim=tuple(k for k in range(3) if k not in (i, j)))  # (V, V), axes in order (min, max)
        pair = pair if i < j else pair.T  # (X_i, X_j)
        pi = pair.sum(1)
        kept = [v for v in range(3) if pi[v] >= eps or v == int(pi.argmax())]
        skipped += len(kept) < 3
        mean_h = sum(float(pi[v]) * entropy(pair[v] / pi[v]) for v in kept) / sum(float(pi[v]) for v in kept)
        assert float(res.raw[0, i, j]) == pytest.approx(entropy(pair.sum(0)) - mean_h, abs=1e-10), (i, j)
    assert skipped > 0  # some row really was truncated


def test_symmetrise_averages_computed_pairs_and_mirrors_the_rest():
    # Bugs caught: a pair averaged when only one of its rows was computed (| for &), the average
    # weighted other than ½, or an uncomputed row filled with −I (or with itself) instead of the mirror.
    from unmask.mi.exact import symmetrise

    raw = torch.tensor([[[0.0, 1.0, 2.0], [3.0, 0.0, 4.0], [0.0, 0.0, 0.0]]], dtype=torch.float64)
    rows = torch.tensor([[True, True, False]])  # row 2 not computed: raw[2] is all 0
    want = torch.tensor([[[0.0, 2.0, 2.0], [2.0, 0.0, 4.0], [2.0, 4.0, 0.0]]], dtype=torch.float64)
    assert torch.equal(symmetrise(raw, rows), want)


def asym(raw: list[list[float]], rows: list[bool]) -> float:
    from unmask.mi.exact import ExactMI

    n = len(rows)
    z = torch.zeros(1, n, dtype=torch.float64)
    return ExactMI(torch.tensor([raw], dtype=torch.float64), torch.tensor([rows]), z, z, torch.ones(1)).asymmetry()


def test_asymmetry_on_hand_made_matrices():
    # Bugs caught: pairs with only one row computed counted (| for &); the diagonal not excluded;
    # |a| − |b| as the scale, × for ÷; pairs of scale exactly 1e-6 kept; NaN (or 1) with no MI at all.
    # Pair (0, 1): |1 − 2| / 3 = 1/3; pair (0, 2) has row 2 uncomputed; the diagonal would add 0s.
    assert asym([[7.0, 1.0, 5.0], [2.0, 9.0, 0.0], [0.0, 0.0, 0.0]], [True, True, False]) == pytest.approx(1 / 3)
    assert asym([[0.0, 1e-6], [0.0, 0.0]], [True, True]) == 0.0  # scale 1e-6 is below the cut-off
    assert asym([[0.0, 0.0], [0.0, 0.0]], [True, True]) == 0.0


def test_joint_equals_raw_on_a_consistent_joint(make_joint):
    # Bug caught: the probe joint's X_j marginal taken from the base pass (J = raw always) or left
    # unnormalised: on one consistent joint the probes' mixture is the base marginal, so J = raw = I.
    oracle = make_joint(seq_len=4, vocab=3, seed=2, alpha=0.3)
    tokens = torch.full((2, 4), oracle.mask_id)
    tokens[1, 2] = 0
    res = exact_mi(oracle, tokens)
    assert torch.allclose(res.joint, res.raw.clamp_min(0), atol=1e-10)
    assert res.joint[0, 0, 1] > 1e-3  # not trivially zero


def test_joint_is_a_true_mi_on_an_inconsistent_model(make_model):
    # Bugs caught: J computed as raw (negative entries, entries above H(X_i)), or the probe's own
    # position left as the model's prediction there instead of the value fixed (J_ii ≠ H_i).
    model = make_model(seq_len=8, vocab=4)
    tokens = torch.full((4, 8), model.mask_id)
    tokens[:, :2] = 1
    res = exact_mi(model, tokens)
    masked = tokens == model.mask_id
    off = masked[:, :, None] & masked[:, None, :] & ~torch.eye(8, dtype=torch.bool)
    assert (res.raw[off] < 0).any()  # this model is far from one joint ...
    assert (res.joint >= 0).all()  # ... but J is a real MI
    assert (res.joint <= res.entropy[:, :, None] + 1e-9).all()  # J(X_i; X_j) ≤ H(X_i)
    diag = res.joint.diagonal(dim1=1, dim2=2)  # J(X_i; X_i) = H(X_i)
    assert torch.allclose(diag[masked], res.entropy[masked], atol=1e-9)
    assert (res.joint[~off & ~torch.eye(8, dtype=torch.bool)] == 0).all()  # given rows and columns


def test_joint_truncation_error_within_its_bound(make_model):
    # Bug caught: the truncated probe joint not renormalised over the kept values (its "marginal"
    # then sums to less than 1 and J drifts by far more than h(m) + m·log V).
    model = make_model(seq_len=6, vocab=5)
    tokens = torch.full((3, 6), model.mask_id)
    full = exact_mi(model, tokens)
    for eps in (0.05, 0.15, 0.3):
        cut = exact_mi(model, tokens, eps=eps)
        m = (cut.bound / math.log(5)).clamp(1e-300, 1 - 1e-12)  # (B, L) skipped mass of each row
        h = -(m * m.log() + (1 - m) * (1 - m).log())
        err = (cut.joint - full.joint).abs().amax(-1)  # (B, L)
        assert (err <= h + m * math.log(5) + 1e-9).all()
    assert (exact_mi(model, tokens, eps=0.3).bound > 0).any()  # some mass really was cut


def test_truncated_joint_is_the_kept_values_joint(make_joint):
    # Bug caught: the probe mixture not renormalised by the kept mass (within the loose bound above):
    # on a consistent joint, truncated J must be exactly the MI of the pair table restricted to the
    # kept values of X_i (P(X_i = v) ≥ ε, and always the most likely v), renormalised.
    oracle = make_joint(seq_len=3, vocab=3, seed=3, alpha=0.3)
    joint, eps = oracle.joint, 0.1
    res = exact_mi(oracle, torch.full((1, 3), oracle.mask_id), eps=eps)
    cut = 0
    for i, j in itertools.permutations(range(3), 2):
        pair = joint.sum(dim=tuple(k for k in range(3) if k not in (i, j)))
        pair = pair if i < j else pair.T  # (X_i, X_j)
        pi = pair.sum(1)
        kept = [v for v in range(3) if pi[v] >= eps or v == int(pi.argmax())]
        cut += len(kept) < 3
        sub = pair[kept] / pair[kept].sum()
        a, b = sub.sum(1, keepdim=True), sub.sum(0, keepdim=True)
        nz = sub > 0
        want = float((sub[nz] * (sub[nz] / (a * b).expand_as(sub)[nz]).log()).sum())
        assert float(res.joint[0, i, j]) == pytest.approx(want, abs=1e-10), (i, j)
    assert cut > 0


def analytic_influence(joint: torch.Tensor, i: int, j: int) -> float:
    """D(i → j) = Σ_v P(X_i = v) · TV(P(X_j | X_i = v), P(X_j)) straight from a fully masked joint table."""
    axes = tuple(k for k in range(joint.dim()) if k not in (i, j))
    pair = joint.sum(dim=axes) if axes else joint  # (V, V), axes in order (min, max)
    pair = pair if i < j else pair.T  # (X_i, X_j)
    p_i, p_j = pair.sum(1), pair.sum(0)
    cond = pair / p_i[:, None].clamp_min(1e-300)  # (V, V) P(X_j | X_i = v)
    return float((p_i * 0.5 * (cond - p_j).abs().sum(1)).sum())


def test_influence_matches_the_total_variation_of_the_joint(make_joint):
    # Bug caught: TV taken against the wrong base (the probe's own row), without the ½, or unweighted by
    # P(X_i = v): every off-diagonal entry must equal the analytic expected TV of the joint table.
    oracle = make_joint(seq_len=4, vocab=3, seed=4, alpha=0.3)
    res = exact_mi(oracle, torch.full((1, 4), oracle.mask_id))
    for i, j in itertools.permutations(range(4), 2):
        assert float(res.influence[0, i, j]) == pytest.approx(analytic_influence(oracle.joint, i, j), abs=1e-9)
    assert (res.influence[0][~torch.eye(4, dtype=torch.bool)] > 1e-3).all()  # a dependent joint: not trivially 0
    assert torch.allclose(res.symmetric_influence[0], 0.5 * (res.influence[0] + res.influence[0].T))


def test_influence_is_zero_for_independent_positions_and_masks_given_ones():
    a, b = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64), torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    q = torch.zeros(3, 3, 3, dtype=torch.float64)
    for x in range(3):
        q[x, x] = a[x] * b  # X1 = X0; X2 independent of both
    oracle = JointDenoiser(q)
    res = exact_mi(oracle, torch.full((1, 3), oracle.mask_id))
    assert float(res.influence[0, 0, 1]) == pytest.approx(float((a * (1 - a)).sum()), abs=1e-10)  # a copy moves all of it
    assert res.influence[0, 0, 2].abs() < 1e-12 and res.influence[0, 2, 1].abs() < 1e-12
    given = exact_mi(oracle, torch.tensor([[0, oracle.mask_id, oracle.mask_id]]))
    assert (given.influence[0, 0] == 0).all() and (given.influence[0, :, 0] == 0).all()  # X0 is known: no row, no column


def test_truncated_influence_is_the_kept_values_average(make_joint):
    # Bug caught: the truncated influence not renormalised by the kept mass (it would shrink by it).
    oracle = make_joint(seq_len=3, vocab=3, seed=3, alpha=0.3)  # P(X_1 = 2) = 0.086 < ε: row 1 is cut
    joint, eps = oracle.joint, 0.1
    res = exact_mi(oracle, torch.full((1, 3), oracle.mask_id), eps=eps)
    for i, j in itertools.permutations(range(3), 2):
        pair = joint.sum(dim=3 - i - j)  # (V, V), axes in order (min, max)
        pair = pair if i < j else pair.T  # (X_i, X_j)
        p_i, p_j = pair.sum(1), pair.sum(0)
        kept = (p_i >= eps) | (p_i == p_i.max())
        tv = 0.5 * (pair / p_i[:, None] - p_j).abs().sum(1)  # (V,) TV(P(X_j | X_i = v), P(X_j))
        want = float((p_i * tv)[kept].sum() / p_i[kept].sum())
        assert float(res.influence[0, i, j]) == pytest.approx(want, abs=1e-9)
    assert not bool(((joint.sum(dim=(0, 2)) >= eps)).all())  # some value really was cut


def test_rows_probed_on_demand_equal_rows_probed_at_once(make_model):
    # Bugs caught: a row probed twice (its passes counted again, or its sums doubled), a later probe
    # overwriting or shifting the rows already computed, an earlier result changed by a later probe,
    # the base pass counted again, or eps ignored on demand.
    from unmask.mi.exact import RowProbes

    model = make_model(seq_len=6, vocab=3)
    tokens = torch.tensor([[3, 3, 0, 3, 3, 1], [3, 1, 3, 3, 2, 3]])
    first = torch.tensor([[1, 0, 0, 1, 0, 0], [0, 0, 1, 0, 0, 1]], dtype=torch.bool)
    second = torch.tensor([[1, 1, 1, 0, 1, 0], [0, 0, 1, 1, 0, 0]], dtype=torch.bool)  # overlaps the first; 3 of its cells given
    probes = RowProbes(model, tokens, eps=0.05)
    assert probes.result.passes.tolist() == [1, 1] and not probes.result.rows.any()  # the base pass alone
    early = probes.probe(first)
    snapshot = {k: getattr(early, k).clone() for k in ("raw", "joint", "influence", "rows", "bound", "passes")}
    late = probes.probe(second)
    assert probes.probe(second) is late  # nothing new: no pass run, the same result
    whole = exact_mi(model, tokens, rows=first | second, eps=0.05)
    for k in ("raw", "joint", "influence", "rows", "bound", "passes", "entropy"):
        assert torch.allclose(getattr(late, k).double(), getattr(whole, k).double(), rtol=0, atol=1e-12), k
        if k in snapshot:
            assert torch.equal(getattr(early, k), snapshot[k]), k  # the earlier result is never changed
    assert torch.equal(early.rows, first & (tokens == model.cfg.mask_id))
    assert (late.passes < exact_mi(model, tokens, rows=first | second).passes).all()  # eps applies on demand


def test_rows_split_into_groups_for_memory_give_the_same_numbers(make_model, monkeypatch):
    # Bug caught: rows of one group mixed up with another's when a large vocabulary splits them (a
    # wrong offset, a row probed twice or left out); the split must change memory, never numbers.
    from unmask.mi import exact as exact_module

    model = make_model(seq_len=8, vocab=4)
    tokens = torch.tensor([[4, 4, 1, 4, 4, 0, 4, 4], [4, 2, 4, 4, 3, 4, 4, 4]])
    whole = exact_mi(model, tokens, eps=0.01)
    monkeypatch.setattr(exact_module, "ROW_MEMORY", 3 * 8 * 4 * 8 * 2)  # two rows a group
    split = exact_mi(model, tokens, eps=0.01)
    for name in ("raw", "rows", "entropy", "bound", "passes", "joint", "influence"):
        assert torch.equal(getattr(whole, name), getattr(split, name)), name
    assert int(whole.rows.sum()) == 12  # every masked row, in six groups of two
