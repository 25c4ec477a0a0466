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
    head, metrics = fit_head(make_model(), data, HeadTrainConfig(steps=2, batch_size=4, d_hidden=4, rank=2, target="joint"),
                             progress=False)
    assert metrics["target"] == "joint"
    from unmask.mi.fit import hidden_states, split
    _, va = split(data, 0.1)
    want = evaluate_head(head, hidden_states(make_model(), data["tokens"])[va], targets(data, "joint")[va],
                         pair_mask(data, make_model().mask_id)[va])
    assert metrics["mse"] == pytest.approx(want["mse"])


def test_an_unknown_link_or_target_is_refused_in_one_line():
    # Bugs caught: the refusal of an unknown link lost (no message), garbled (another separator) or
    # crashing with a TypeError instead.
    with pytest.raises(UnmaskError, match=r"^link must be one of relu, softplus, got 'tanh'$"):
        HeadTrainConfig(link="tanh")


def tiny_fit_data(s: int = 10, seq_len: int = 4) -> dict[str, torch.Tensor]:
    """Every position masked (id 4) and computed, two different random targets, one prompt."""
    g = torch.Generator().manual_seed(0)
    return {"tokens": torch.full((s, seq_len), 4), "rows": torch.ones(s, seq_len, dtype=torch.bool),
            "mi": torch.rand(s, seq_len, seq_len, generator=g), "joint": torch.rand(s, seq_len, seq_len, generator=g),
            "prompt": torch.zeros(s, dtype=torch.long)}


def test_the_progress_bar_is_shown_only_when_asked(capsys, make_model):
    # Bugs caught: the "mi head" bar shown with progress=False (the flag not passed on, or disable= dropped
    # or inverted), hidden with progress=True (None passed, or disable=None: hidden off a terminal), hidden
    # by default (the CLI relies on it), or shown without its label or under another one.
    from unmask.mi.fit import fit_pairs

    model, data, cfg = make_model(seq_len=4), tiny_fit_data(), HeadTrainConfig(steps=2, batch_size=2, d_hidden=4, rank=2)
    fit_head(model, data, cfg, progress=False)
    assert capsys.readouterr().err == ""
    for kwargs in ({"progress": True}, {}):
        fit_head(model, data, cfg, **kwargs)
        assert "mi head: 100%" in capsys.readouterr().err
    head = MIHead(HeadConfig(6, 4, 2))
    fit_pairs(head, torch.randn(3, 4, 6), torch.rand(3, 4, 4), torch.ones(3, 4, 4, dtype=torch.bool), torch.arange(3), cfg)
    assert "mi head: 100%" in capsys.readouterr().err  # fit_pairs too shows it by default


def test_fit_pairs_draws_its_batches_from_its_own_seed():
    # Bug caught: fit_pairs drawing batches from the global RNG (generator dropped): a fit is then not
    # reproducible from cfg.seed alone.
    import copy

    from unmask.mi.fit import fit_pairs

    g = torch.Generator().manual_seed(0)
    x, target = torch.randn(8, 4, 6, generator=g), torch.rand(8, 4, 4, generator=g)
    pairs, train = torch.ones(8, 4, 4, dtype=torch.bool), torch.arange(8)
    torch.manual_seed(0)
    start = MIHead(HeadConfig(6, 4, 2))

    def fitted(global_seed, seed=0):
        head = copy.deepcopy(start)
        torch.manual_seed(global_seed)
        cfg = HeadTrainConfig(steps=3, batch_size=2, lr=0.1, seed=seed)
        return torch.cat([p.detach().flatten()
                          for p in fit_pairs(head, x, target, pairs, train, cfg, progress=False).parameters()])

    assert torch.equal(fitted(1), fitted(2))
    assert not torch.equal(fitted(1), fitted(1, seed=1))  # (the batches do matter)


def test_fit_pairs_follows_a_warm_up_free_cosine_to_a_tenth(monkeypatch):
    # Bug caught: the head's learning-rate schedule given a warm-up step or another floor.
    import unmask.mi.fit as fit

    seen = []
    real = fit.set_lr

    def spy(opt, lr):
        seen.append(lr)
        real(opt, lr)

    monkeypatch.setattr(fit, "set_lr", spy)
    cfg = HeadTrainConfig(steps=4, batch_size=2, lr=2.0)
    fit.fit_pairs(MIHead(HeadConfig(6, 4, 2)), torch.randn(3, 4, 6), torch.rand(3, 4, 4), torch.ones(3, 4, 4, dtype=torch.bool),
                  torch.arange(3), cfg, progress=False)
    assert seen == pytest.approx([2.0 * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / 4))) for s in range(4)])


def test_fit_head_reports_the_consistency_of_its_own_target(make_model):
    # Bug caught: fit_head reporting the I_ij vs I_ji consistency of the paper's I ("mi") whatever target it fits.
    from unmask.mi.fit import split

    data = tiny_fit_data()
    _, metrics = fit_head(make_model(seq_len=4), data, HeadTrainConfig(steps=1, batch_size=2, target="joint"), progress=False)
    _, va = split(data, 0.1)
    held = {k: v[va] for k, v in data.items()}
    want, other = consistency(held, 4, "joint"), consistency(held, 4, "mi")
    assert want["exact_ij_vs_ji_pearson"] != pytest.approx(other["exact_ij_vs_ji_pearson"])
    assert metrics["exact_ij_vs_ji_pearson"] == pytest.approx(want["exact_ij_vs_ji_pearson"])


def test_consistency_boundaries_on_hand_made_states():
    # Bugs caught: the pairs that matter chosen by ⅓(I_ij + I_ji), or with ½(I_ij + I_ji) = MATTERS let
    # in (>= for >); one-direction entries with I_ij = MATTERS let in; the one-direction reference
    # refused over exactly two symmetric parts.
    def state(values):
        mi = torch.zeros(1, 3, 3, dtype=torch.float64)
        for (i, j), (ij, ji) in values.items():
            mi[0, i, j], mi[0, j, i] = ij, ji
        return {"tokens": torch.full((1, 3), 4), "rows": torch.ones(1, 3, dtype=torch.bool), "mi": mi}

    base = {"exact_ij_vs_ji_pearson", "exact_ij_vs_ji_spearman"}
    matters = base | {"exact_ij_vs_ji_spearman_matters"}
    assert MATTERS == 0.01
    assert set(consistency(state({(0, 1): (0.012, 0.014)}), 4)) == matters  # ½ · 0.026 = 0.013 matters
    assert set(consistency(state({(0, 1): (0.01, 0.01)}), 4)) == base  # exactly MATTERS: does not matter
    # I_01 = MATTERS exactly does not matter alone: one symmetric part (0.5) is left, nothing to rank
    assert set(consistency(state({(0, 1): (0.01, 0.005), (0, 2): (0.5, 0.5)}), 4)) == matters
    # two symmetric parts (0.375 and 0.5) among the one-direction entries: ranked
    c = consistency(state({(0, 1): (0.5, 0.25), (0, 2): (0.125, 0.875)}), 4)
    assert c["symmetric_vs_one_direction_spearman_matters"] == pytest.approx(
        spearman_by_hand([0.375, 0.375, 0.5, 0.5], [0.5, 0.25, 0.125, 0.875]))


def test_the_held_out_prompts_are_pinned():
    # Bugs caught: the hash of the held-out split changed (multiplier, modulus, < for <=, or its
    # threshold), which silently moves states between the training and held-out sides.
    from unmask.mi.fit import split

    prompt = torch.tensor([*range(40), 100])  # prompt 100 hashes to exactly 100 = 1000 · 0.1: not held out
    data = {"tokens": torch.zeros(41, 2), "prompt": prompt}
    tr, va = split(data, 0.1)
    assert va.tolist() == [0, 4, 8, 25, 29] and tr.tolist() == [i for i in range(41) if i not in (0, 4, 8, 25, 29)]


def test_calibration_bins_are_half_open_and_named():
    # Bugs caught: a value on a bin edge counted in the bin below (<= hi) or in none (> lo), the columns
    # renamed, or the share of pairs predicted zero counting the non-zero ones.
    from unmask.mi.fit import calibration

    exact = torch.tensor([0.005, 0.01, 0.5, 0.6], dtype=torch.float64)  # 0.01: exactly an edge
    est = torch.tensor([0.2, 0.0, 0.0, 0.4], dtype=torch.float64)
    assert calibration(est, exact, edges=(0.0, 1e-3, 0.01, 1.0)) == [
        {"exact_from": 1e-3, "exact_to": 0.01, "pairs": 1, "mean_exact": pytest.approx(0.005),
         "mean_predicted": pytest.approx(0.2), "share_predicted_zero": 0.0},
        {"exact_from": 0.01, "exact_to": 1.0, "pairs": 3, "mean_exact": pytest.approx(0.37),
         "mean_predicted": pytest.approx(0.4 / 3), "share_predicted_zero": pytest.approx(2 / 3)},
    ]


def test_median_time_is_the_median_of_the_measured_calls(monkeypatch):
    # Bugs caught: median_time returning another order statistic (len // 3), a sum for the duration,
    # or not timing each call. The clock is fake: each call of fn takes the next of 5, 1, 4, 2, 3 s.
    import time

    from unmask.mi.fit import median_time

    clock, durations = [0.0], iter([5.0, 1.0, 4.0, 2.0, 3.0])
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def fn():
        clock[0] += next(durations)

    assert median_time(fn, 5) == 3.0


class ConstantHead(torch.nn.Module):
    """One learnt charge c ≥ 0 for every pair: a head whose MSE optimum is known in closed form."""

    def __init__(self) -> None:
        super().__init__()
        self.c = torch.nn.Parameter(torch.tensor(0.3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c.abs().expand(x.shape[0], x.shape[1], x.shape[1])


@pytest.mark.parametrize("scale", [0.0, 0.01])
def test_fit_pairs_fits_on_the_scale_asked(scale):
    # Bugs caught: HeadTrainConfig.scale ignored by fit_pairs (plain MSE either way), the compression
    # applied to the head's output alone or to the target alone, negative exact MI not taken as 0.
    from unmask.mi.fit import compress, fit_pairs

    target = torch.tensor([0.01] * 8 + [1.0, -0.2]).reshape(1, 10, 1).expand(1, 10, 10)  # (1, 10, 10): row i's pairs all at t_i
    pairs = ~torch.eye(10, dtype=torch.bool)[None]
    cfg = HeadTrainConfig(steps=600, batch_size=1, lr=0.02, scale=scale)
    head = fit_pairs(ConstantHead(), torch.zeros(1, 10, 3), target.contiguous(), pairs, torch.arange(1), cfg, progress=False)
    t = torch.tensor([0.01] * 8 + [1.0, -0.2])
    if scale == 0:
        want = float(t.mean())  # plain MSE: the mean, pulled up by the one pair at 1 nat
    else:  # the mean on the compressed scale, mapped back; -0.2 counts as 0
        want = float(scale * torch.expm1(torch.log1p(t.clamp_min(0) / scale).mean()))
    assert float(head.c.detach().abs()) == pytest.approx(want, rel=0.02)
    assert torch.equal(compress(torch.tensor([-1.0, 0.0, 0.5]), 0.0), torch.tensor([-1.0, 0.0, 0.5]))  # scale 0: the MI itself
    assert compress(torch.tensor([-1.0, 0.0]), 0.1).tolist() == [0.0, 0.0]


def test_a_negative_scale_is_refused_in_one_line():
    for bad in (-0.01, float("nan"), float("inf")):
        with pytest.raises(UnmaskError, match=r"^scale must be >= 0 nats, got "):
            HeadTrainConfig(scale=bad)


def test_mi_train_with_values_and_a_scale_records_them_and_decodes(tmp_path, sudoku_files, cli):
    # Bugs caught: --values not reaching the head (n_values 0), how a head was fitted lost from its
    # metrics, a values head that the CLI's decode or MI map cannot call.
    import json

    model_dir, puzzles = sudoku_files
    code, _, err = cli(["mi", "data", "--task", "sudoku", "--model", str(model_dir), "--examples", str(puzzles),
                        "--out", str(tmp_path / "d"), "--states", "6", "--shard-size", "6", "--rows", "2"])
    assert code == 0, err
    code, _, err = cli(["mi", "train", "--task", "sudoku", "--model", str(model_dir), "--data", str(tmp_path / "d"),
                        "--values", "--scale", "0.01", "--steps", "2", "--out", str(tmp_path / "h")])
    assert code == 0, err
    meta = json.loads((tmp_path / "h" / "mi_head.json").read_text())
    assert meta["config"]["n_values"] > 0 and meta["metrics"]["values"] is True and meta["metrics"]["scale"] == 0.01
    for spec in ("mi:gamma=1,lam=1", "demask:delta=0.5"):
        code, _, err = cli(["sudoku", "eval", "--puzzles", str(puzzles), "--model", str(model_dir), "--head", str(tmp_path / "h"),
                            f"--policy={spec}", "--json"])
        assert code == 0, err
    code, _, err = cli(["mi", "map", "--task", "sudoku", "--model", str(model_dir), "--head", str(tmp_path / "h"),
                        "--examples", str(puzzles), "--out", str(tmp_path / "map.png")])
    assert code == 0 and (tmp_path / "map.png").is_file(), err
