"""MI head shape properties, data shards (resumable), fitting and the structure score."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from unmask.errors import UnmaskError
from unmask.mi.data import MIDataConfig, build_mi_data, load_mi_data, shard_path
from unmask.mi.estimator import HeadConfig, MIHead, load_head, save_head
from unmask.mi.fit import HeadTrainConfig, evaluate_head, fit_head, pair_mask
from unmask.mi.maps import structure_score
from unmask.tasks.sudoku.task import sudoku_peers


def test_head_is_symmetric_and_non_negative():
    torch.manual_seed(0)
    head = MIHead(HeadConfig(d_in=24, d_hidden=16, rank=8))
    est = head(torch.randn(3, 10, 24) * 5)
    assert est.shape == (3, 10, 10)
    assert torch.equal(est, est.transpose(1, 2))
    assert (est >= 0).all()


def test_head_round_trip(tmp_path):
    head = MIHead(HeadConfig(d_in=8, d_hidden=4, rank=2))
    save_head(head, tmp_path, {"metrics": {"spearman": 0.5}})
    x = torch.randn(1, 5, 8)
    assert torch.equal(load_head(tmp_path)(x), head(x))
    assert load_head(tmp_path / "nothing", required=False) is None
    with pytest.raises(UnmaskError, match="no mi head"):
        load_head(tmp_path / "nothing")


def prompts(n: int = 12) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    t = torch.randint(4, (n, 16), generator=g)
    return torch.where(torch.rand(n, 16, generator=g) < 0.6, 4, t)


def test_resumed_build_equals_uninterrupted(tmp_path, make_model):
    cfg = MIDataConfig(states=10, shard_size=4, rows=3, eps=0.01, policy="topk:k=2", seed=1)
    load = partial(make_model)
    assert build_mi_data(load, prompts(), cfg, tmp_path / "a", progress=False) == 3
    # "Killed" after shard 1: shards 0 and 2 missing, then resumed.
    build_mi_data(load, prompts(), cfg, tmp_path / "b", progress=False)
    for k in (0, 2):
        shard_path(tmp_path / "b", k).unlink()
    with pytest.raises(UnmaskError, match="2 of 3 MI data shards missing"):
        load_mi_data(tmp_path / "b")  # never a silent subset
    assert build_mi_data(load, prompts(), cfg, tmp_path / "b", progress=False) == 2
    for k in range(3):
        assert shard_path(tmp_path / "a", k).read_bytes() == shard_path(tmp_path / "b", k).read_bytes()
    data = load_mi_data(tmp_path / "a")
    assert data["tokens"].shape == (10, 16)
    assert (data["rows"].sum(1) <= 3).all() and data["rows"].any()
    assert (data["rows"] <= (data["tokens"] == 4)).all()  # rows are masked positions
    assert (data["mi"][~data["rows"]] == 0).all()


def test_refuses_to_mix_builds(tmp_path, make_model):
    cfg = MIDataConfig(states=2, shard_size=2, rows=2, seed=1)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path, progress=False)
    with pytest.raises(UnmaskError, match=r"other \['config'\]"):
        build_mi_data(partial(make_model), prompts(), MIDataConfig(states=2, shard_size=2, rows=2, seed=2), tmp_path, progress=False)
    with pytest.raises(UnmaskError, match="prompts_sha256"):
        build_mi_data(partial(make_model), prompts(13), cfg, tmp_path, progress=False)


def test_two_workers_build_the_same_shards(tmp_path, make_model):
    cfg = MIDataConfig(states=4, shard_size=2, rows=2, policy="sequential", seed=3)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path / "one", progress=False)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path / "two", workers=2, progress=False)
    for k in range(2):
        assert shard_path(tmp_path / "one", k).read_bytes() == shard_path(tmp_path / "two", k).read_bytes()


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
