"""The MI head: symmetric, non-negative, can charge exactly 0, saves and loads, and its calibration."""

from __future__ import annotations

import math

import pytest
import torch

from unmask.errors import UnmaskError
from unmask.mi.data import MIDataConfig, build_mi_data, load_mi_data
from unmask.mi.estimator import HeadConfig, MIHead, load_head, predicted_values, save_head
from unmask.mi.fit import HeadTrainConfig, fit_head


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


def test_head_forward_is_the_documented_bilinear_form():
    # Bug caught: the per-rank weights dividing instead of multiplying (invisible at their init of 1).
    torch.manual_seed(0)
    head = MIHead(HeadConfig(d_in=6, d_hidden=5, rank=3))
    with torch.no_grad():
        head.weight.copy_(torch.tensor([2.0, -1.0, 0.5]))
    x = torch.randn(2, 4, 6)
    e = head.mlp(x)
    want = torch.nn.functional.softplus(torch.einsum("bik,k,bjk->bij", e, head.weight, e) / math.sqrt(3) + head.bias)
    assert torch.allclose(head(x), want, atol=1e-6)


def test_bad_head_files_are_named_in_the_error(tmp_path):
    # Bug caught: load_head's errors not naming the file at fault (its JSON config or its weights).
    import json

    save_head(MIHead(HeadConfig(d_in=8, d_hidden=4, rank=2)), tmp_path)
    meta_path = tmp_path / "mi_head.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["d_in"] = 9  # the weights no longer fit the config
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(UnmaskError, match=r"mi_head\.safetensors: weights do not match"):
        load_head(tmp_path)
    meta["config"]["colour"] = 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(UnmaskError, match=r"mi_head\.json: unknown config keys \['colour'\]"):
        load_head(tmp_path)


def test_relu_head_is_symmetric_non_negative_and_can_charge_exactly_zero():
    # Bug caught: a link that cannot reach 0 (softplus) charging every independent pair something.
    torch.manual_seed(0)
    head = MIHead(HeadConfig(d_in=24, d_hidden=16, rank=8, link="relu"))
    est = head(torch.randn(3, 10, 24) * 5)
    assert torch.equal(est, est.transpose(1, 2)) and (est >= 0).all()
    assert (est == 0).any() and (est > 0).any()
    with torch.no_grad():
        head.bias.fill_(-1e3)
    assert (head(torch.randn(2, 6, 24)) == 0).all()


def test_a_head_saved_before_the_link_was_a_choice_loads_as_softplus(tmp_path):
    import json

    head = MIHead(HeadConfig(d_in=8, d_hidden=4, rank=2))
    save_head(head, tmp_path)
    meta_path = tmp_path / "mi_head.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"]["link"]
    meta_path.write_text(json.dumps(meta))
    x = torch.randn(1, 5, 8)
    assert load_head(tmp_path).cfg.link == "softplus" and torch.equal(load_head(tmp_path)(x), head(x))
    meta["config"]["link"] = "sigmoid"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(UnmaskError, match="link must be one of"):
        load_head(tmp_path)


class PositionedOracle:
    """An exact oracle whose hidden states also say which position they are (the head needs that)."""

    def __init__(self, joint):
        self.joint = joint
        self.vocab_size, self.mask_id, self.device = joint.vocab_size, joint.mask_id, joint.device

    def __call__(self, tokens):
        out = self.joint(tokens)
        pos = torch.eye(tokens.shape[1]).expand(len(tokens), -1, -1)
        return out._replace(hidden=torch.cat([out.hidden, pos], -1))


@pytest.mark.parametrize("values", [False, True])
def test_calibration_on_a_joint_with_known_mi(tmp_path, values):
    """x0 and x1 are equal with probability 0.95; x2 and x3 are independent of everything. A calibrated
    head charges every pair with x2 or x3 (exact MI 0) nothing, and the dependent pair its MI."""
    from unmask.oracle import JointDenoiser

    pair = torch.tensor([[0.475, 0.025], [0.025, 0.475]], dtype=torch.float64)
    joint = JointDenoiser(torch.einsum("ab,c,d->abcd", pair, torch.full((2,), 0.5, dtype=torch.float64),
                                       torch.tensor([0.3, 0.7], dtype=torch.float64)))
    oracle = PositionedOracle(joint)
    prompts = torch.full((40, 4), joint.mask_id)
    cfg = MIDataConfig(states=400, shard_size=100, eps=0.0, policy="random:steps=4", seed=1)
    build_mi_data(lambda: oracle, prompts, cfg, tmp_path / "d", progress=False)
    data = load_mi_data(tmp_path / "d")
    head, metrics = fit_head(oracle, data, HeadTrainConfig(steps=400, batch_size=32, lr=1e-2, d_hidden=16, rank=4, values=values),
                             progress=False)
    assert head.cfg.n_values == (2 if values else 0)  # (a head reading P(X | C) too: the same calibration)
    with torch.no_grad():
        logits, hidden = oracle(torch.full((1, 4), joint.mask_id))  # everything masked
        est = head(hidden, predicted_values(logits, joint.mask_id))[0]
    dependent = math.log(2) + 0.95 * math.log(0.95) + 0.05 * math.log(0.05)  # I(x0; x1) = ln 2 − H(0.95)
    assert est[0, 1] == pytest.approx(dependent, abs=0.05)
    independent = [est[i, j] for i in range(4) for j in range(4) if i != j and {i, j} != {0, 1}]
    assert max(independent) < 0.01 and metrics["independent_mean_charge"] < 0.01
    rows = metrics["calibration"]
    assert rows[0]["exact_to"] == 1e-3 and rows[0]["mean_predicted"] < 0.01  # the zero bin is charged ~0


def test_calibration_bins_by_exact_mi():
    from unmask.mi.fit import calibration

    exact = torch.tensor([-0.2, 0.0, 0.002, 0.5, 0.6])
    est = torch.tensor([0.0, 0.1, 0.0, 0.4, 0.8])
    rows = calibration(est, exact, edges=(0.0, 1e-3, 0.01, 1.0))
    assert [r["pairs"] for r in rows] == [2, 1, 2]  # the negative entry falls in the first bin
    assert rows[0]["mean_predicted"] == pytest.approx(0.05) and rows[0]["share_predicted_zero"] == 0.5
    assert rows[2]["mean_exact"] == pytest.approx(0.55) and rows[2]["mean_predicted"] == pytest.approx(0.6)


def test_an_unknown_link_is_refused_by_name():
    # Bug caught: the refusal of an unknown link listing the known ones garbled (another separator).
    with pytest.raises(ValueError, match=r"^link must be one of relu, softplus, got 'tanh'$"):
        HeadConfig(d_in=4, link="tanh")


def test_a_head_reading_the_predicted_values_uses_them_and_refuses_to_go_without(tmp_path):
    # Bugs caught: P(X | C) or its entropy left out of the input (the output would not move with them),
    # the values read only on one side of the pair (asymmetric), a head reading values called without
    # them running on garbage or failing with a shape error, n_values lost on saving.
    torch.manual_seed(0)
    head = MIHead(HeadConfig(d_in=6, d_hidden=8, rank=4, link="relu", n_values=3))
    hidden = torch.randn(2, 5, 6)
    probs = torch.softmax(3 * torch.randn(2, 5, 3), -1)  # (2, 5, 3)
    est = head(hidden, probs)
    assert est.shape == (2, 5, 5) and torch.equal(est, est.transpose(1, 2)) and (est >= 0).all()
    x = torch.cat([hidden, probs, -(probs * probs.log()).sum(-1, keepdim=True)], -1)  # the documented input
    e = head.mlp(x)
    want = torch.relu(torch.einsum("bik,k,bjk->bij", e, head.weight, e) / 2 + head.bias)
    assert torch.allclose(est, want, atol=1e-6)
    assert not torch.allclose(head(hidden, probs.flip(-1)), est)  # the values are read
    for bad, says in ((None, "got none"), (probs[..., :2], r"got shape \(2, 5, 2\) for hidden states \(2, 5, 6\)"),
                      (probs[:1], r"got shape \(1, 5, 3\) for hidden states \(2, 5, 6\)")):
        with pytest.raises(UnmaskError,
                           match=rf"^this MI head reads P\(X \| C\) over 3 values beside the hidden states, {says}$"):
            head(hidden, bad)
    save_head(head, tmp_path)
    loaded = load_head(tmp_path)
    assert loaded.cfg.n_values == 3 and torch.equal(loaded(hidden, probs), est)
    plain = MIHead(HeadConfig(d_in=6, d_hidden=8, rank=4))
    assert torch.equal(plain(hidden, probs), plain(hidden))  # a head without values ignores them
    assert torch.equal(head(hidden, probs.double()), est)  # values in another dtype are read as the hidden states'
    for bad in (-1, True, 2.0):
        with pytest.raises(ValueError, match=r"^n_values must be an integer >= 0, got "):
            HeadConfig(d_in=6, n_values=bad)


def test_predicted_values_are_what_the_decode_loop_sees():
    # Bug caught: the head reading the raw softmax, with mass on the mask token, where the decode state
    # gives it none (a head fitted on one and used on the other).
    logits = torch.randn(2, 3, 5)
    p = predicted_values(logits, mask_id=4)
    assert torch.all(p[..., 4] == 0) and torch.allclose(p.sum(-1), torch.ones(2, 3))
    assert torch.allclose(p[..., :4], torch.softmax(logits[..., :4], -1))
    assert torch.allclose(predicted_values(logits, mask_id=5), torch.softmax(logits, -1))  # mask id outside the logits
