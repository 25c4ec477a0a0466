"""Fitting the MI head (mi/fit.py): targets, held-out prompts, the metrics and the structure score."""

from __future__ import annotations

import math

import pytest
import torch

from tests.mi.states import prompts
from unmask.errors import UnmaskError
from unmask.mi.data import MIDataConfig, build_shard
from unmask.mi.estimator import HeadConfig, MIHead
from unmask.mi.fit import MATTERS, HeadTrainConfig, consistency, evaluate_head, fit_head, pair_mask
from unmask.mi.maps import structure_score
from unmask.tasks.sudoku.task import sudoku_peers


def test_fit_learns_a_planted_structure(make_model):
    # Targets: MI 1 between positions of equal parity, 0 otherwise; hidden states reveal parity.
    model = make_model(seq_len=8)
    s = 200
    tokens = torch.full((s, 8), 4)
    parity = torch.arange(8) % 2
    mi = (parity[:, None] == parity[None, :]).float().expand(s, 8, 8).clone()
    data = {"tokens": tokens, "rows": torch.ones(s, 8, dtype=torch.bool), "mi": mi}
    head, metrics = fit_head(model, data, HeadTrainConfig(steps=300, batch_size=16, lr=5e-3), progress=False)
    assert metrics["mse"] < 0.05 and metrics["pearson"] > 0.9
    untrained = MIHead(HeadConfig(model.cfg.d_model))
    hidden = model(tokens[:20])[1]
    assert evaluate_head(untrained, hidden, mi[:20], pair_mask(data, 4)[:20])["mse"] > 0.2


def test_structure_score():
    peers = sudoku_peers()
    assert peers.sum(1).eq(20).all() and torch.equal(peers, peers.T)
    pairs = ~torch.eye(81, dtype=torch.bool)[None]
    on_rules = structure_score(peers.float()[None], pairs, peers)
    assert on_rules["mass"] == 1.0 and on_rules["topk"] == 1.0
    assert abs(on_rules["chance"] - 20 / 80) < 1e-9
    off_rules = structure_score((~peers).float()[None] * pairs, pairs, peers)
    assert off_rules["mass"] == 0.0 and off_rules["topk"] == 0.0


def test_targets_are_symmetrised_and_consistency_is_a_ceiling(make_model, make_joint):
    from unmask.mi import exact_mi
    from unmask.mi.fit import consistency, targets

    oracle = make_joint(seq_len=4, vocab=3, seed=2, alpha=0.5)
    tokens = torch.full((3, 4), oracle.mask_id)
    tokens[2, 0] = 1
    res = exact_mi(oracle, tokens)
    data = {"tokens": tokens, "rows": res.rows, "mi": res.raw.float()}
    t = targets(data)
    assert torch.allclose(t, t.transpose(1, 2))
    c = consistency(data, oracle.mask_id)
    assert c["exact_ij_vs_ji_pearson"] > 0.999  # one consistent joint agrees with itself
    model = make_model(seq_len=8)
    toks = torch.full((4, 8), model.mask_id)
    raw = exact_mi(model, toks)
    c = consistency({"tokens": toks, "rows": raw.rows, "mi": raw.raw.float()}, model.mask_id)
    assert c["exact_ij_vs_ji_pearson"] < 0.999  # a random network is not


def test_pair_mask_on_a_hand_made_state():
    # Bugs caught: pair_mask letting in the diagonal, a given position, or a pair neither of whose
    # rows was computed (any & turned into |), or requiring both rows computed.
    data = {"tokens": torch.tensor([[4, 4, 0, 4]]), "rows": torch.tensor([[True, False, False, False]])}
    want = torch.zeros(1, 4, 4, dtype=torch.bool)
    for i, j in [(0, 1), (1, 0), (0, 3), (3, 0)]:  # masked pairs touching the computed row 0
        want[0, i, j] = True
    assert torch.equal(pair_mask(data, 4), want)


def test_consistency_on_a_hand_made_state():
    # Bugs caught: consistency comparing pairs with an uncomputed row, refusing exactly two values,
    # or reporting under other names. Only (0, 1) has both rows computed: I_01 = 0.3 against I_10 = 0.5.
    from unmask.mi.fit import consistency

    mi = torch.tensor([[[0.0, 0.3, 0.7], [0.5, 0.0, 0.9], [0.0, 0.0, 0.0]]])
    data = {"tokens": torch.full((1, 3), 4), "rows": torch.tensor([[True, True, False]]), "mi": mi}
    assert consistency(data, 4) == {"exact_ij_vs_ji_pearson": pytest.approx(-1.0), "exact_ij_vs_ji_spearman": pytest.approx(-1.0),
                                    "exact_ij_vs_ji_spearman_matters": pytest.approx(-1.0)}
    # (both entries of the one pair share one symmetric part: no reference against one direction)
    data["mi"] = mi / 50  # ½(I_01 + I_10) = 0.008: no pair matters, so no Spearman over them
    assert set(consistency(data, 4)) == {"exact_ij_vs_ji_pearson", "exact_ij_vs_ji_spearman"}
    data["rows"] = torch.tensor([[True, False, False]])
    assert consistency(data, 4) == {}  # no pair with both rows: nothing to compare


def test_ranks_average_ties_and_pearson_is_pearson():
    # Bugs caught: tied values not sharing their average rank (Spearman off); the correlation not
    # centred-and-normalised (e.g. a / b for a · b).
    from unmask.mi.fit import _pearson, _ranks

    assert _ranks(torch.tensor([3.0, 1.0, 3.0, 2.0], dtype=torch.float64)).tolist() == [2.5, 0.0, 2.5, 1.0]
    a, b = torch.tensor([1.0, 2.0, 3.0, 5.0]), torch.tensor([2.0, 4.0, 7.0, 8.0])
    assert _pearson(a, b) == pytest.approx(float(torch.corrcoef(torch.stack([a, b]))[0, 1]), rel=1e-6)


def test_topk_recall_on_hand_made_states():
    # Bugs caught: top-k recall counting each pair twice (both triangles) or skipping pairs (triu(2)),
    # masking the wrong triangle, a union for the intersection, k' not capped at a state's pair count,
    # the mean over states a product, or states without pairs not skipped.
    from unmask.mi.fit import topk_recall

    def sym(v01, v02, v12):
        return torch.tensor([[0.0, v01, v02], [v01, 0.0, v12], [v02, v12, 0.0]])

    target = torch.stack([sym(0.9, 0.1, 0.5), sym(0.9, 0.1, 0.5), sym(1.0, 1.0, 1.0)])
    est = torch.stack([sym(0.8, 0.6, 0.1), sym(0.1, 0.6, 0.8), sym(1.0, 1.0, 1.0)])
    pairs = ~torch.eye(3, dtype=torch.bool).expand(3, 3, 3).clone()
    pairs[2] = False  # state 2 has no pairs: skipped
    # State 0: top-2 by target {01, 12}, by estimate {01, 02}: 1 of 2. State 1: {12, 02}: 1 of 2.
    assert topk_recall(est, target, pairs, 2) == pytest.approx(0.5)
    assert topk_recall(est, target, pairs, 5) == pytest.approx(1.0)  # k' = 3: every pair
    assert topk_recall(est[:1], target[:1], pairs[:1], 1) == 1.0 and topk_recall(est[1:2], target[1:2], pairs[1:2], 1) == 0.0
    assert math.isnan(topk_recall(est[2:], target[2:], pairs[2:], 2))


def test_structure_score_on_hand_made_maps():
    # Bugs caught: the default k not 20, k' capped by a per-row count instead of per-state pairs,
    # only the single top pair used, MI mass normalised by a floor above 1e-12, chance computed with
    # a floor of 2 pairs, and states without pairs crashing instead of giving NaN.
    n = 6
    off = ~torch.eye(n, dtype=torch.bool)
    mi = torch.zeros(n, n)
    mi[off] = torch.arange(30, 0, -1).float() / 100  # 30 distinct values, highest first (0.30 … 0.01)
    related = torch.zeros(n, n, dtype=torch.bool)
    idx = off.nonzero()
    for r in [*range(10), *range(15, 25)]:  # ranks 1-10 and 16-25 are related
        related[tuple(idx[r])] = True
    out = structure_score(mi[None], off[None], related)
    assert out["topk"] == pytest.approx(15 / 20)  # default k = 20
    assert structure_score(mi[None], off[None], related, k=2)["topk"] == 1.0
    assert structure_score(mi[None], off[None], ~related & off, k=2)["topk"] == 0.0
    assert out["mass"] == pytest.approx(float(mi[related].sum() / mi.sum()))  # Σ MI = 4.65, not above a floor
    assert out["chance"] == pytest.approx(20 / 30)
    small = structure_score(torch.tensor([[[0.0, 0.2], [0.0, 0.0]]]), torch.tensor([[[False, True], [False, False]]]),
                            torch.tensor([[False, True], [False, False]]))
    assert small == {"mass": pytest.approx(1.0), "topk": 1.0, "chance": 1.0}  # one pair: 1 / 1, not 1 / 2
    none = structure_score(torch.zeros(1, 2, 2), torch.zeros(1, 2, 2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool))
    assert none["mass"] == 0.0 and none["chance"] == 0.0 and math.isnan(none["topk"])


def spearman_by_hand(x: list[float], y: list[float]) -> float:
    """Spearman's correlation, ties sharing their average rank (a slow reference)."""
    def ranks(v):
        return [sum(w < u for w in v) + (sum(w == u for w in v) - 1) / 2 for u in v]
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((p - mx) * (q - my) for p, q in zip(rx, ry))
    return cov / math.sqrt(sum((p - mx) ** 2 for p in rx) * sum((q - my) ** 2 for q in ry))


def test_the_symmetric_part_against_one_direction_on_a_hand_made_state():
    # Bugs caught: the reference taken against the symmetric part itself (always 1), over pairs whose
    # I_ij does not matter (or chosen by their symmetric part), or over pairs with a row not computed.
    # Rows 0, 1, 2, 4 computed, row 3 not (its entries must not count); values exact in binary.
    mi = torch.zeros(1, 5, 5)
    for (i, j), (ij, ji) in {(0, 1): (0.25, 0.5), (0, 2): (0.625, 0.125), (1, 2): (0.875, 0.75),
                             (0, 4): (0.0078125, 0.9375), (0, 3): (2.0, 0.0)}.items():
        mi[0, i, j], mi[0, j, i] = ij, ji
    data = {"tokens": torch.full((1, 5), 4), "rows": torch.tensor([[True, True, True, False, True]]), "mi": mi}
    entries = [(i, j) for i in (0, 1, 2, 4) for j in (0, 1, 2, 4) if i != j and float(mi[0, i, j]) > MATTERS]
    assert (0, 4) not in entries and (4, 0) in entries  # I_04 does not matter, I_40 does
    sym = [float(mi[0, i, j] + mi[0, j, i]) / 2 for i, j in entries]
    want = spearman_by_hand(sym, [float(mi[0, i, j]) for i, j in entries])
    assert 0.3 < want < 0.99
    assert consistency(data, 4)["symmetric_vs_one_direction_spearman_matters"] == pytest.approx(want)


class FixedHead:
    """Stands in for an MIHead: returns one fixed estimate."""

    def __init__(self, est):
        self.est = est

    def __call__(self, hidden):
        return self.est

    def num_parameters(self):
        return 0


def test_the_fit_on_pairs_with_both_directions_is_reported_apart():
    # Bugs caught: the both-rows Spearman taken over every pair, over pairs that do not matter, or
    # left out when asked for. The estimate ranks the both-rows pairs perfectly, the others backwards.
    target = torch.tensor([[[0, 0.1, 0.2, 0.3], [0.1, 0, 0.4, 0.005], [0.2, 0.4, 0, 0.6], [0.3, 0.005, 0.6, 0]]])
    est = target.clone()
    est[0, 0, 3] = est[0, 3, 0] = 0.9  # one-direction pairs ranked wrongly
    est[0, 2, 3] = est[0, 3, 2] = 0.05
    pairs = ~torch.eye(4, dtype=torch.bool)[None]
    both = torch.zeros_like(pairs)
    both[0, :3, :3] = pairs[0, :3, :3]  # rows 0-2 computed: pairs among them have both directions
    both[0, 1, 3] = both[0, 3, 1] = True  # a both-rows pair that does not matter (0.005), ranked wrongly
    est[0, 1, 3] = est[0, 3, 1] = 0.95
    m = evaluate_head(FixedHead(est), None, target, pairs, both=both)
    assert m["spearman_matters_both_rows"] == pytest.approx(1.0)
    assert m["spearman_matters"] < 0.9
    assert "spearman_matters_both_rows" not in evaluate_head(FixedHead(est), None, target, pairs)


def fit_val_states(monkeypatch, model, data, cfg):
    """Fit for ``cfg`` and return the ids of the held-out states (each state's MI target is its id)."""
    import unmask.mi.fit as fit

    seen = {}
    real = fit.evaluate_head

    def spy(head, hidden, target, pairs, k=10, both=None):
        seen["val"] = target[:, 0, 1].round().long().tolist()
        return real(head, hidden, target, pairs, k, both=both)

    monkeypatch.setattr(fit, "evaluate_head", spy)
    head, metrics = fit.fit_head(model, data, cfg, progress=False)
    return head, metrics, seen["val"]


def test_fit_holds_out_whole_prompts(monkeypatch, make_model):
    # Bugs caught: the held-out split ignoring the prompt ids (a puzzle decoded twice on both sides),
    # its hash broken (nearly none or all held out, which falls back to an index split), the fallback
    # taken whenever anything is held out, training on the held-out states, the head built with other
    # widths than asked, and the state counts reported wrongly or under other names.
    model = make_model(seq_len=4)
    s = 400
    prompt = torch.arange(s) % 200  # states s and s + 200 come from one prompt
    mi = torch.arange(s).float()[:, None, None].expand(s, 4, 4).clone()
    data = {"tokens": torch.full((s, 4), 4), "rows": torch.ones(s, 4, dtype=torch.bool), "mi": mi, "prompt": prompt}
    cfg = HeadTrainConfig(steps=1, batch_size=4, d_hidden=12, rank=5)
    head, metrics, val = fit_val_states(monkeypatch, model, data, cfg)
    held_prompts = {int(prompt[v]) for v in val}
    assert set(val) == {v for v in range(s) if int(prompt[v]) in held_prompts}  # whole prompts
    assert 0.05 < len(held_prompts) / 200 < 0.15  # about val_fraction = 0.1 of the prompts
    assert metrics["val_states"] == len(val) and metrics["train_states"] == s - len(val)
    assert (head.cfg.d_hidden, head.cfg.rank) == (12, 5)


@pytest.mark.parametrize("s, want", [(5, [4]), (30, [27, 28, 29])])
def test_fit_falls_back_to_the_last_states(monkeypatch, make_model, s, want):
    # Bugs caught: the fallback split (every state from one prompt: the hash holds out all or none)
    # off by one, holding out nothing, more than max(1, ⌊S · val_fraction⌋) states, or never taken.
    model = make_model(seq_len=4)
    mi = torch.arange(s).float()[:, None, None].expand(s, 4, 4).clone()
    data = {"tokens": torch.full((s, 4), 4), "rows": torch.ones(s, 4, dtype=torch.bool), "mi": mi,
            "prompt": torch.zeros(s, dtype=torch.long)}  # prompt 0 hashes to 0 < 100: all held out
    _, metrics, val = fit_val_states(monkeypatch, model, data, HeadTrainConfig(steps=1, batch_size=4))
    assert val == want and metrics["train_states"] == s - len(want)


def test_fit_reports_the_both_rows_fit_over_the_held_out_pairs_with_both_rows(monkeypatch, make_model):
    # Bugs caught: fit_head passing every supervised pair (or the training states') as "both rows".
    import unmask.mi.fit as fit

    model = make_model(seq_len=4)
    s = 30
    rows = torch.zeros(s, 4, dtype=torch.bool)
    rows[:, :2] = True  # rows 0 and 1 computed: only the pair (0, 1) has both directions
    data = {"tokens": torch.full((s, 4), 4), "rows": rows, "mi": torch.rand(s, 4, 4), "prompt": torch.zeros(s, dtype=torch.long)}
    seen = {}
    real = fit.evaluate_head

    def spy(head, hidden, target, pairs, k=10, both=None):
        seen["pairs"], seen["both"] = pairs, both
        return real(head, hidden, target, pairs, k, both=both)

    monkeypatch.setattr(fit, "evaluate_head", spy)
    fit.fit_head(model, data, HeadTrainConfig(steps=1, batch_size=4), progress=False)
    want = torch.zeros(4, 4, dtype=torch.bool)
    want[0, 1] = want[1, 0] = True
    assert len(seen["both"]) == len(seen["pairs"]) == 3  # the held-out states (the last 10 %)
    assert torch.equal(seen["both"], want.expand(3, 4, 4)) and not torch.equal(seen["pairs"], seen["both"])


def test_targets_read_the_chosen_exact_mi(make_model):
    # Bugs caught: --target joint still fitting the paper's I (the "mi" array), the joint targets not
    # symmetrised, or MI data built before the joint was stored failing with a KeyError traceback.
    from unmask.mi.exact import symmetrise
    from unmask.mi.fit import targets

    cfg = MIDataConfig(states=4, shard_size=4, rows=3, eps=0.0, policy="topk:k=2", seed=1)
    data = {k: v for k, v in build_shard(make_model(), prompts(), cfg, 0).items()}
    data = {k: torch.from_numpy(v) for k, v in data.items()}
    assert not torch.equal(data["joint"], data["mi"])  # a random network: the two differ
    assert (data["joint"] >= 0).all() and (data["joint"] <= data["entropy"][:, :, None] + 1e-5).all()
    assert torch.equal(targets(data, "joint"), symmetrise(data["joint"].float(), data["rows"]))
    assert torch.equal(targets(data), symmetrise(data["mi"].float(), data["rows"]))
    assert (data["influence"] >= 0).all() and (data["influence"] <= 1 + 1e-6).all()  # a total variation
    assert torch.equal(targets(data, "influence"), symmetrise(data["influence"].float(), data["rows"]))
    del data["joint"]
    with pytest.raises(UnmaskError, match="no 'joint' targets"):
        targets(data, "joint")
    with pytest.raises(UnmaskError, match="target must be one of raw, joint, influence"):
        HeadTrainConfig(target="both")


def test_fit_head_fits_and_records_its_target(make_model):
    # Bug caught: fit_head ignoring cfg.target (its metrics then score the head on the paper's I).
    import numpy as np

    from unmask.mi.fit import targets

    cfg = MIDataConfig(states=8, shard_size=8, rows=4, eps=0.0, policy="topk:k=2", seed=2)
    data = {k: torch.from_numpy(np.asarray(v)) for k, v in build_shard(make_model(), prompts(), cfg, 0).items()}
    head, metrics = fit_head(make_model(), data, HeadTrainConfig(steps=2, batch_size=4, d_hidden=4, rank=2, target="joint"), progress=False)
    assert metrics["target"] == "joint"
    from unmask.mi.fit import hidden_states, split
    _, va = split(data, 0.1)
    want = evaluate_head(head, hidden_states(make_model(), data["tokens"])[va], targets(data, "joint")[va], pair_mask(data, make_model().mask_id)[va])
    assert metrics["mse"] == pytest.approx(want["mse"])
