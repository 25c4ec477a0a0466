"""Transformer denoiser: interface, save/load round trip, refusal of mismatched or corrupt files."""

from __future__ import annotations

import json

import pytest
import torch

from unmask.denoiser import Denoiser
from unmask.errors import UnmaskError
from unmask.model import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    ModelConfig,
    TransformerDenoiser,
    apply_rope,
    attention,
    load_model,
    rope_tables,
    save_model,
    warm_start,
)
from unmask.tasks.sudoku.data import POSITION_FEATURES


def test_interface_shapes(make_sudoku_model):
    model = make_sudoku_model()
    assert isinstance(model, Denoiser)
    out = model(torch.full((3, 81), model.mask_id))
    assert out.logits.shape == (3, 81, 9) and out.hidden.shape == (3, 81, 16)
    assert model.device == torch.device("cpu")  # the protocol's device: where inputs go


def test_position_features_matter(make_sudoku_model):
    model = make_sudoku_model()
    x = torch.full((1, 81), model.mask_id)
    base = model(x).logits
    with torch.no_grad():
        model.feats[2].weight.add_(1.0)  # change the box embeddings only
    assert not torch.allclose(base, model(x).logits)


def test_rope_scores_depend_only_on_the_offset():
    cos, sin = rope_tables(12, 8)
    q, k = torch.randn(8), torch.randn(8)
    rot = lambda v: apply_rope(v.expand(1, 1, 12, 8), cos, sin)[0, 0]  # noqa: E731 — v at every position (12, 8)
    scores = rot(q) @ rot(k).T  # (12, 12): q at position i against k at position j
    for off in range(-3, 4):
        diag = torch.diagonal(scores, off)
        assert torch.allclose(diag, diag[0].expand_as(diag), atol=1e-5)
    assert not torch.allclose(torch.diagonal(scores, 0)[0], torch.diagonal(scores, 1)[0])
    assert torch.allclose(rot(q).norm(dim=-1), q.norm().expand(12), atol=1e-5)  # rotations keep norms


def test_rope_model_round_trips_without_saving_tables(tmp_path):
    cfg = ModelConfig(vocab_size=7, mask_id=7, seq_len=10, d_model=16, n_layers=1, n_heads=2, d_ff=32, rope=True)
    torch.manual_seed(0)
    model = TransformerDenoiser(cfg).eval()
    save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    x = torch.randint(0, 8, (3, 10))
    assert torch.equal(model(x).logits, loaded(x).logits)
    plain = TransformerDenoiser(ModelConfig(**{**cfg.__dict__, "rope": False})).eval()
    plain.load_state_dict(model.state_dict())  # same weights: rotation is the only difference
    assert not torch.allclose(plain(x).logits, model(x).logits)
    with pytest.raises(UnmaskError, match="even head width"):
        ModelConfig(vocab_size=7, mask_id=7, seq_len=10, d_model=6, n_heads=2, rope=True)


def test_round_trip(tmp_path, make_sudoku_model):
    model = make_sudoku_model()
    save_model(model, tmp_path / "m", {"note": "x"})
    loaded = load_model(tmp_path / "m", task="sudoku")
    x = torch.randint(0, 10, (4, 81))
    assert torch.equal(model(x).logits, loaded(x).logits)
    assert loaded.cfg == model.cfg
    assert torch.equal(loaded.position_ids, POSITION_FEATURES)


def test_refuses_bad_directories(tmp_path, make_sudoku_model):
    model = make_sudoku_model()
    d = tmp_path / "m"
    save_model(model, d)
    with pytest.raises(UnmaskError, match="not a model directory"):
        load_model(tmp_path / "nothing")
    with pytest.raises(UnmaskError, match="trained for task 'sudoku'"):
        load_model(d, task="maths")

    weights = (d / WEIGHTS_FILE).read_bytes()
    (d / WEIGHTS_FILE).write_bytes(weights[: len(weights) // 2])
    with pytest.raises(UnmaskError, match="corrupt weights"):
        load_model(d)
    (d / WEIGHTS_FILE).write_bytes(weights)

    meta = json.loads((d / CONFIG_FILE).read_text())
    meta["config"]["d_model"] = 32
    (d / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(UnmaskError, match="do not match"):
        load_model(d)

    meta["config"]["d_model"] = 16
    meta["config"]["colour"] = "red"
    (d / CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(UnmaskError, match="unknown config keys"):
        load_model(d)

    (d / CONFIG_FILE).write_text("{not json")
    with pytest.raises(UnmaskError, match="corrupt JSON"):
        load_model(d)


def test_config_validation():
    with pytest.raises(UnmaskError, match="divisible"):
        ModelConfig(vocab_size=4, mask_id=4, seq_len=8, d_model=30, n_heads=4)
    for dropout in (2.0, -0.5, 1.0, float("nan")):  # torch's ValueError (a traceback) otherwise, at the first forward
        with pytest.raises(UnmaskError, match="dropout must be in"):
            ModelConfig(vocab_size=4, mask_id=4, seq_len=8, dropout=dropout)
    model = TransformerDenoiser(ModelConfig(vocab_size=4, mask_id=4, seq_len=8, d_model=16, n_heads=2))
    with pytest.raises(UnmaskError, match="length 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


# --- warm start ----------------------------------------------------------------------------------

def _tiny(n_layers: int, **kw) -> TransformerDenoiser:
    cfg = ModelConfig(vocab_size=5, mask_id=5, seq_len=6, d_model=16, n_layers=n_layers, n_heads=2, d_ff=32, **kw)
    return TransformerDenoiser(cfg)


def test_warm_start_copies_a_model_of_the_same_shape():
    torch.manual_seed(0)
    source, target = _tiny(2), _tiny(2, dropout=0.1, task="other")
    warm_start(target, source)
    x = torch.tensor([[0, 5, 1, 5, 2, 3]])
    assert torch.equal(target.eval()(x).logits, source.eval()(x).logits)


def test_warm_start_stacks_a_deeper_model_block_k_from_block_k_mod_n():
    torch.manual_seed(1)
    source, target = _tiny(2), _tiny(6)
    warm_start(target, source)
    for k, block in enumerate(target.blocks):
        for (name, p), q in zip(block.state_dict().items(), source.blocks[k % 2].state_dict().values()):
            assert torch.equal(p, q), (k, name)
    outside = {k: v for k, v in source.state_dict().items() if not k.startswith("blocks.")}
    assert outside and all(torch.equal(target.state_dict()[k], v) for k, v in outside.items())


@pytest.mark.parametrize("change, message", [
    (dict(n_layers=3), "multiple"),
    (dict(n_layers=2, d_ff=64), "d_ff"),
    (dict(n_layers=2, seq_len=7), "seq_len"),
])
def test_warm_start_refuses_other_shapes(change, message):
    cfg = dict(vocab_size=5, mask_id=5, seq_len=6, d_model=16, n_heads=2, d_ff=32) | change
    with pytest.raises(UnmaskError, match=message):
        warm_start(TransformerDenoiser(ModelConfig(**cfg)), _tiny(2))


def test_warm_start_refuses_another_layout_of_position_features():
    cfg = ModelConfig(vocab_size=5, mask_id=5, seq_len=6, d_model=16, n_layers=1, n_heads=2, d_ff=32, position_features=[3])
    source = TransformerDenoiser(cfg, torch.tensor([[0], [1], [2], [0], [1], [2]]))
    with pytest.raises(UnmaskError, match="laid out differently"):
        warm_start(TransformerDenoiser(cfg, torch.tensor([[0], [0], [1], [1], [2], [2]])), source)
    same = TransformerDenoiser(cfg, torch.tensor([[0], [1], [2], [0], [1], [2]]))
    warm_start(same, source)
    assert torch.equal(same.feats[0].weight, source.feats[0].weight)


def _qkv(seed: int, shape=(2, 3, 7, 8)) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(shape, generator=g) for _ in range(3))


def test_attention_in_fp32_is_the_fused_kernel_exactly():
    q, k, v = _qkv(0)
    assert torch.equal(attention(q, k, v), torch.nn.functional.scaled_dot_product_attention(q, k, v))


def test_attention_in_bfloat16_on_cpu_matches_fp32_attention_and_its_gradients():
    # The written-out bfloat16 path (scale, key transpose, softmax axis) against fp32 SDPA, values and
    # the gradients a training step takes through it, to bfloat16's precision.
    q, k, v = (t.requires_grad_() for t in _qkv(1))
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    ref_grads = torch.autograd.grad(ref.square().sum(), (q, k, v))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        q16, k16, v16 = (t.to(torch.bfloat16) for t in (q, k, v))
        out = attention(q16, k16, v16)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=3e-2, rtol=3e-2)
    grads = torch.autograd.grad(out.float().square().sum(), (q, k, v))
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, atol=6e-2, rtol=6e-2)


def test_attention_dropout_in_bfloat16_drops_weights_and_rescales():
    q, k, v = (t.to(torch.bfloat16) for t in _qkv(2))
    torch.manual_seed(0)
    dropped = attention(q, k, v, dropout_p=0.5).float()
    assert not torch.allclose(dropped, attention(q, k, v).float(), atol=1e-2)
    # With the values all ones each output is the sum of the kept, rescaled weights: 0 or 2 per key.
    ones = torch.ones_like(v)
    torch.manual_seed(0)
    sums = attention(q, k, ones, dropout_p=0.5).float()[..., 0]
    assert sums.mean().item() == pytest.approx(1.0, abs=0.15)


def test_bfloat16_autocast_forward_of_the_model_matches_fp32(make_sudoku_model):
    model = make_sudoku_model().eval()
    x = torch.randint(0, model.mask_id + 1, (3, model.cfg.seq_len), generator=torch.Generator().manual_seed(3))
    ref = model(x).logits
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x).logits.float()
    torch.testing.assert_close(out, ref, atol=5e-2, rtol=5e-2)
