"""One on-disk format (unmask.artifacts): round trips, one-line refusals, legacy files, the shipped model.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from unmask import artifacts
from unmask.errors import UnmaskError
from unmask.mi.estimator import HeadConfig, MIHead, load_head, save_head
from unmask.model import load_model, save_model

SHIPPED = Path(__file__).resolve().parent.parent / "unmask" / "models" / "sudoku"


def _head(d_in: int = 32) -> MIHead:
    torch.manual_seed(1)
    head = MIHead(HeadConfig(d_in=d_in, d_hidden=8, rank=4))
    with torch.no_grad():
        head.bias.fill_(-1.5)
        head.weight.mul_(2.0)
    return head


@pytest.fixture
def saved(tmp_path, make_model):
    """A model directory holding a tiny model and an MI head."""
    model = make_model()
    save_model(model, tmp_path / "m", extra={"train": {"step": 3}})
    save_head(_head(), tmp_path / "m", extra={"metrics": {"mse": 0.5}})
    return tmp_path / "m", model


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert msg and "\n" not in msg, f"refusal is not one line: {msg!r}"
    assert exc.value.__cause__ is None or exc.value.__suppress_context__, "refusal leaks a traceback chain"
    return msg


def test_model_round_trip(saved, masked_batch):
    # Bugs caught: a tensor left out of the saved state, a config field not restored, non-eval mode.
    d, model = saved
    back = load_model(d)
    assert back.cfg == model.cfg and not back.training
    assert set(back.state_dict()) == set(model.state_dict())
    for k, v in model.state_dict().items():
        assert torch.equal(back.state_dict()[k], v), k
    tokens = masked_batch(3, 16, 4)
    with torch.no_grad():
        assert torch.equal(back(tokens).logits, model(tokens).logits)
    meta = json.loads((d / "config.json").read_text())
    assert meta["format_version"] == artifacts.FORMAT_VERSION and meta["kind"] == "model" and meta["train"] == {"step": 3}


def test_head_round_trip(saved):
    # Bugs caught: the bare Parameters (weight, bias) not saved; the head config lost; wrong kind recorded.
    d, _ = saved
    head = _head()
    back = load_head(d)
    assert back.cfg == head.cfg and not back.training
    for k, v in head.state_dict().items():
        assert torch.equal(back.state_dict()[k], v), k
    meta = json.loads((d / "mi_head.json").read_text())
    assert meta["kind"] == "mi_head" and meta["format_version"] == artifacts.FORMAT_VERSION and meta["metrics"] == {"mse": 0.5}
    assert load_head(d.parent / "nowhere", required=False) is None


def test_missing_directory_or_json(tmp_path, saved):
    # Bugs caught: a raw FileNotFoundError instead of an UnmaskError; the hint naming the wrong command.
    with pytest.raises(UnmaskError) as e:
        load_model(tmp_path / "nowhere")
    assert "not a model directory" in _one_line(e)
    d, _ = saved
    (d / "mi_head.json").unlink()
    with pytest.raises(UnmaskError) as e:
        load_head(d)
    assert "unmask mi train" in _one_line(e)
    (d / "model.safetensors").unlink()
    with pytest.raises(UnmaskError) as e:
        load_model(d)
    assert "model.safetensors" in _one_line(e)


@pytest.mark.parametrize("text", ["{not json", "", "\xff\xfe garbage", "[1, 2]", '{"format_version": 1}'])
def test_corrupt_json(saved, text):
    # Bug caught: json.JSONDecodeError / KeyError escaping as a traceback.
    d, _ = saved
    (d / "config.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(UnmaskError) as e:
        load_model(d)
    assert "config.json" in _one_line(e)


def _edit(path: Path, **changes) -> None:
    meta = json.loads(path.read_text())
    for k, v in changes.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize("file,changes", [
    ("config.json", {"format_version": 2}),
    ("config.json", {"format_version": "1"}),
    ("config.json", {"kind": "mi_head"}),
    ("mi_head.json", {"format_version": 0}),
    ("mi_head.json", {"kind": "model"}),
])
def test_wrong_version_or_kind(saved, file, changes):
    # Bugs caught: the format version not checked; an MI head JSON that says it is a model (or the
    # reverse) being loaded anyway.
    d, _ = saved
    _edit(d / file, **changes)
    load = load_model if file == "config.json" else load_head
    with pytest.raises(UnmaskError) as e:
        load(d)
    msg = _one_line(e)
    assert file in msg and "format" in msg


@pytest.mark.parametrize("load,file", [(load_model, "config.json"), (load_head, "mi_head.json")])
def test_unknown_or_missing_config_keys(saved, load, file):
    # Bugs caught: unknown config keys silently ignored (a typo'd field would train one shape and load
    # another); a missing required key escaping as a TypeError.
    d, _ = saved
    meta = json.loads((d / file).read_text())
    (d / file).write_text(json.dumps({**meta, "config": {**meta["config"], "d_modle": 64}}))
    with pytest.raises(UnmaskError) as e:
        load(d)
    assert "d_modle" in _one_line(e)
    config = dict(meta["config"])
    config.pop(next(iter(config)))  # vocab_size / d_in: no default
    (d / file).write_text(json.dumps({**meta, "config": config}))
    with pytest.raises(UnmaskError) as e:
        load(d)
    _one_line(e)
    (d / file).write_text(json.dumps({**meta, "config": [1, 2]}))
    with pytest.raises(UnmaskError) as e:
        load(d)
    _one_line(e)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
@pytest.mark.parametrize("load,file", [(load_model, "model.safetensors"), (load_head, "mi_head.safetensors")])
def test_corrupt_weights(saved, load, file, damage):
    # Bug caught: a safetensors error (or a segfault-prone partial read) escaping instead of one line.
    d, _ = saved
    path = d / file
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00\x01garbage" * 50, "empty": b""}[damage])
    with pytest.raises(UnmaskError) as e:
        load(d)
    assert file in _one_line(e)


def test_tensors_of_the_wrong_shape(saved, tmp_path, make_model):
    # Bug caught: load_state_dict's multi-line RuntimeError escaping, or strict=False loading a
    # partial model when the weights belong to another shape than the config.
    from safetensors.torch import save_file

    d, _ = saved
    other = make_model(vocab=5)  # same length, other embedding and head shapes
    save_file({k: v.contiguous() for k, v in other.state_dict().items()}, str(d / "model.safetensors"))
    with pytest.raises(UnmaskError) as e:
        load_model(d)
    assert "do not match" in _one_line(e)
    other = make_model(seq_len=8)  # other positions: refused (by the model's own position_ids check)
    save_file({k: v.contiguous() for k, v in other.state_dict().items()}, str(d / "model.safetensors"))
    with pytest.raises(UnmaskError) as e:
        load_model(d)
    _one_line(e)
    state = _head().state_dict()
    state["weight"] = torch.ones(5)
    save_file(state, str(d / "mi_head.safetensors"))
    with pytest.raises(UnmaskError) as e:
        load_head(d)
    assert "do not match" in _one_line(e)
    state = _head().state_dict()
    state.pop("bias")
    save_file(state, str(d / "mi_head.safetensors"))
    with pytest.raises(UnmaskError):
        load_head(d)


def test_legacy_files_still_load(saved):
    # Bug caught: requiring "kind" (model files of format 1 had none) or "format_version" on MI heads
    # (they had neither) and so refusing every model shipped before kinds were recorded.
    d, model = saved
    _edit(d / "config.json", kind=None)
    _edit(d / "mi_head.json", kind=None, format_version=None)
    assert load_model(d).cfg == model.cfg
    assert load_head(d).cfg == _head().cfg
    _edit(d / "config.json", format_version=None)  # a model never lacked its version: that is not ours
    with pytest.raises(UnmaskError):
        load_model(d)


def test_the_shipped_sudoku_model_loads_with_its_head(tmp_path):
    # Bug caught: a format change that strands the shipped model or its MI head.
    model = load_model(SHIPPED, task="sudoku")
    head = load_head(SHIPPED)
    assert model.cfg.vocab_size == 9 and model.mask_id == 9 and model.cfg.seq_len == 81
    assert head.cfg.d_in == model.cfg.d_model
    tokens = torch.full((1, 81), 9)
    with torch.no_grad():
        mi = head(model(tokens).hidden)
    assert mi.shape == (1, 81, 81) and (mi >= 0).all()
    with pytest.raises(UnmaskError, match="maths"):
        load_model(SHIPPED, task="maths")
    # Saved again, it is written in the current format and still loads.
    copy = tmp_path / "copy"
    shutil.copytree(SHIPPED, copy)
    save_head(head, copy)
    assert json.loads((copy / "mi_head.json").read_text())["kind"] == "mi_head"
    assert load_head(copy).cfg == head.cfg


def test_save_refuses_a_file_in_the_way(tmp_path, make_model):
    # Bug caught: saving into a path that is a file crashing with NotADirectoryError.
    (tmp_path / "f").write_text("x")
    with pytest.raises(UnmaskError) as e:
        save_model(make_model(), tmp_path / "f")
    _one_line(e)
