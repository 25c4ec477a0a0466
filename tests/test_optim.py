"""The one optimiser and schedule (unmask.optim): what is decayed, and the learning-rate curve.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import math

import pytest
import torch.nn as nn

from unmask.mi.estimator import HeadConfig, MIHead
from unmask.optim import adamw, param_groups, set_lr, warmup_cosine


def _names(module: nn.Module, group: dict) -> list[str]:
    by_id = {id(p): n for n, p in module.named_parameters()}
    return [by_id[id(p)] for p in group["params"]]


def test_transformer_decays_exactly_the_linear_weights(make_model):
    # Bugs caught: decaying by ndim >= 2 (which would decay embeddings and the pos parameter); decaying
    # LayerNorm weights or biases; a parameter in both groups or in none; groups out of
    # named_parameters order (breaks optimizer-state loading across versions).
    model = make_model()
    decay, rest = param_groups(model, 0.1)
    assert decay["weight_decay"] == 0.1 and rest["weight_decay"] == 0.0
    linear = {f"{m}.weight" for m, mod in model.named_modules() if isinstance(mod, nn.Linear)}
    d, r = _names(model, decay), _names(model, rest)
    assert set(d) == linear and linear
    for name in r:
        assert (name == "pos" or name.startswith(("tok.", "feats.")) or name.endswith(".bias") or ".ln" in name
                or name.startswith("ln_f.")), name
    assert "pos" in r and "tok.weight" in r and "ln_f.weight" in r and "head.bias" in r and "head.weight" in d
    assert any(".ln1.weight" in n for n in r)
    order = [n for n, p in model.named_parameters() if p.requires_grad]
    assert sorted(d + r) == sorted(order) and len(d + r) == len(order)  # every one exactly once
    assert d == [n for n in order if n in set(d)] and r == [n for n in order if n in set(r)]


def test_position_feature_embeddings_are_not_decayed(make_sudoku_model):
    # Bug caught: the task position-feature embeddings (feats.*) treated as weight matrices.
    model = make_sudoku_model()
    _, rest = param_groups(model, 0.1)
    feats = [n for n, _ in model.named_parameters() if n.startswith("feats.")]
    assert feats and set(feats) <= set(_names(model, rest))


def test_frozen_parameters_are_left_out(make_model):
    # Bug caught: frozen (requires_grad=False) parameters handed to the optimiser.
    model = make_model()
    model.tok.requires_grad_(False)
    model.blocks[0].requires_grad_(False)
    decay, rest = param_groups(model, 0.1)
    names = _names(model, decay) + _names(model, rest)
    assert "tok.weight" not in names and not any(n.startswith("blocks.0.") for n in names)
    assert len(names) == sum(p.requires_grad for p in model.parameters())


def test_mi_head_bare_parameters_are_not_decayed():
    # Bug caught: the head's free Parameters weight (r,) and bias () decayed as if they were Linear weights.
    head = MIHead(HeadConfig(d_in=8, d_hidden=6, rank=3))
    decay, rest = param_groups(head, 0.01)
    d, r = _names(head, decay), _names(head, rest)
    assert "weight" in r and "bias" in r
    assert d == ["mlp.1.weight", "mlp.3.weight"]
    assert set(r) == {"weight", "bias", "mlp.0.weight", "mlp.0.bias", "mlp.1.bias", "mlp.3.bias"}


def test_adamw_and_set_lr(make_model):
    # Bug caught: adamw dropping the groups (decaying everything) or set_lr missing a group.
    opt = adamw(make_model(), lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95))
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    assert opt.defaults["betas"] == (0.9, 0.95)
    set_lr(opt, 0.5)
    assert all(g["lr"] == 0.5 for g in opt.param_groups)


@pytest.mark.parametrize("warmup", [1, 5, 20])
def test_warmup_is_linear_and_reaches_peak(warmup):
    # Bugs caught: warm-up starting at 0 (a wasted step) or an off-by-one that never reaches the peak;
    # a jump at the end of warm-up.
    peak, total = 3e-3, 100
    lrs = [warmup_cosine(s, total, peak, warmup) for s in range(warmup + 1)]
    assert lrs[0] == pytest.approx(peak / warmup)
    for s in range(warmup):
        assert lrs[s] == pytest.approx(peak * (s + 1) / warmup)
    assert lrs[warmup - 1] == pytest.approx(peak)
    assert lrs[warmup] == pytest.approx(peak)  # the cosine starts at the peak
    assert all(b > a for a, b in zip(lrs[: warmup - 1], lrs[1:warmup]))


@pytest.mark.parametrize("warmup,min_ratio", [(0, 0.1), (10, 0.1), (10, 0.0), (30, 0.25)])
def test_cosine_decays_monotonically_to_the_floor(warmup, min_ratio):
    # Bugs caught: decay to 0 instead of min_ratio·peak; the cosine measured from step 0 rather than the
    # end of warm-up; a rise after total; a non-monotone curve.
    peak, total = 1.0, 120
    after = [warmup_cosine(s, total, peak, warmup, min_ratio) for s in range(warmup, total + 5)]
    assert after[0] == pytest.approx(peak)
    assert all(b <= a + 1e-12 for a, b in zip(after, after[1:]))
    assert warmup_cosine(total, total, peak, warmup, min_ratio) == pytest.approx(min_ratio * peak)
    assert warmup_cosine(total + 50, total, peak, warmup, min_ratio) == pytest.approx(min_ratio * peak)
    mid = warmup + (total - warmup) // 2
    if (total - warmup) % 2 == 0:
        assert warmup_cosine(mid, total, peak, warmup, min_ratio) == pytest.approx(peak * (min_ratio + (1 - min_ratio) / 2))


def test_no_warmup_is_the_plain_cosine():
    # Bug caught: a default floor other than 0.1, or a warm-up of one step when warmup=0.
    peak, total = 2e-3, 37
    for s in range(total + 1):
        want = peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / total)))
        assert warmup_cosine(s, total, peak) == pytest.approx(want, rel=1e-12)
