"""Add-ons (MI heads, order policies) live in folders of their own and are tied to their base model by
the digest of its weights (unmask.artifacts.model_digest / check_base): used with another model they
are refused in one line, never used silently; training one never writes into the model's folder."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch

from unmask import artifacts
from unmask.errors import UnmaskError

SHIPPED = Path(__file__).resolve().parent.parent / "unmask" / "models"


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the SHA-256 of its bytes (to show nothing was written there)."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_model_digest_reads_the_weights_and_nothing_else(tmp_path):
    # Bugs caught: a digest of the folder's add-ons (a head saved beside a model would change its
    # model's identity), of one file only when a model is sharded, a digest that ignores the bytes.
    d = tmp_path / "m"
    d.mkdir()
    (d / "model.safetensors").write_bytes(b"abc")
    one = artifacts.model_digest(d)
    assert one == hashlib.sha256(b"abc").hexdigest()[:16] == artifacts.model_digest(d / "model.safetensors")
    (d / "mi_head.safetensors").write_bytes(b"head")
    (d / "order_policy.safetensors").write_bytes(b"order")
    (d / "config.json").write_text("{}")
    for other in ("checkpoint.pt", "optimizer.pt", "training_args.bin", "rng_state.pth"):  # a trainer's state
        (d / other).write_bytes(b"state")
    assert artifacts.model_digest(d) == one  # add-ons, configs and training state are not the model
    (d / "model-00002.safetensors").write_bytes(b"def")  # a second shard
    two = artifacts.model_digest(d)
    assert two != one
    (d / "model-00002.safetensors").write_bytes(b"deg")
    assert artifacts.model_digest(d) != two
    with pytest.raises(UnmaskError, match="no model weights"):
        artifacts.model_digest(tmp_path / "empty")
    hf = tmp_path / "hf"  # a folder of the older format: pytorch_model.bin
    hf.mkdir()
    (hf / "pytorch_model.bin").write_bytes(b"abc")
    (hf / "training_args.bin").write_bytes(b"args")
    assert artifacts.model_digest(hf) == one


@pytest.mark.parametrize("recorded", [{"base_model_sha256": "0" * 16}, {"source": {"model_sha256": "0" * 16}}])
def test_check_base_refuses_another_model_in_one_line(tmp_path, recorded):
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    with pytest.raises(UnmaskError, match="trained for another model") as e:
        artifacts.check_base(recorded, "H", artifacts.MI_HEAD, tmp_path)
    assert "\n" not in str(e.value) and "unmask mi train" in str(e.value)
    artifacts.check_base({"base_model_sha256": artifacts.model_digest(tmp_path)}, "H", artifacts.MI_HEAD, tmp_path)
    artifacts.check_base({}, "H", artifacts.MI_HEAD, tmp_path)  # files saved before digests were recorded
    artifacts.check_base(recorded, "H", artifacts.MI_HEAD, None)  # nothing to compare with


def test_shipped_add_ons_name_the_model_beside_them():
    for folder, kinds in {
        "sudoku": artifacts.ADDONS,
        "protein": [artifacts.MI_HEAD],
        "maths-3step": [artifacts.ORDER_POLICY],
    }.items():
        for kind in kinds:
            meta = artifacts.read_meta(SHIPPED / folder, kind)
            assert artifacts.recorded_base(meta) == artifacts.model_digest(SHIPPED / folder), (folder, kind.name)


def other_model(model_dir: Path, out: Path) -> Path:
    """A model of the same shape and width as ``model_dir``'s with other weights (a head reads it without error)."""
    from unmask.model import load_model, save_model

    model = load_model(model_dir)
    with torch.no_grad():
        next(model.parameters()).add_(0.01)
    save_model(model, out)
    return out


def test_a_head_of_another_model_in_its_folder_is_refused(tmp_path, sudoku_files, cli):
    # The case the reliability audit found: the protein head copied into a Sudoku model's folder was
    # used without a check (mean NFE 2.23 -> 13.7).
    _, puzzles = sudoku_files
    folder = tmp_path / "sudoku"
    shutil.copytree(SHIPPED / "sudoku", folder)
    for name in (artifacts.MI_HEAD.meta, artifacts.MI_HEAD.weights):
        shutil.copy(SHIPPED / "protein" / name, folder / name)
    code, _, err = cli(["sudoku", "eval", "--model", folder, "--puzzles", puzzles, "--policy", "mi:lam=1"])
    assert code == 2 and err.count("\n") == 1 and "trained for another model" in err and "unmask mi train" in err


def test_a_head_of_another_width_is_refused_in_one_line(tmp_path, sudoku_files, cli):
    from unmask.mi.estimator import HeadConfig, MIHead, save_head

    model_dir, puzzles = sudoku_files
    save_head(MIHead(HeadConfig(d_in=64)), model_dir)  # beside the model, no digest recorded: the width still tells
    code, _, err = cli(["sudoku", "eval", "--model", model_dir, "--puzzles", puzzles, "--policy", "mi:lam=1"])
    last = err.strip().splitlines()[-1]  # (after the decode's progress bar: the width shows at the first forward pass)
    assert code == 2 and "Traceback" not in err and last.startswith("unmask: error: this MI head reads hidden states of width 64")


def test_an_add_on_named_on_its_own_must_name_its_model(tmp_path, sudoku_files, cli):
    # Bugs caught: a head saved before digests were recorded (or by save_head without base=) used through
    # --head with any model of its width, unchecked; the library skipping the check when base is not given.
    from unmask.mi.estimator import HeadConfig, MIHead, save_head
    from unmask.model import load_model
    from unmask.policies import build_policy

    model_dir, puzzles = sudoku_files
    save_head(MIHead(HeadConfig(d_in=16)), tmp_path / "bare")
    code, _, err = cli(["sudoku", "eval", "--model", model_dir, "--puzzles", puzzles, "--policy", "mi:lam=1",
                        "--head", tmp_path / "bare"])
    assert code == 2 and err.count("\n") == 1 and "records no base model" in err
    save_head(MIHead(HeadConfig(d_in=16)), tmp_path / "tied", base=model_dir)  # the library records it with base=
    model = load_model(model_dir)
    assert build_policy("mi:lam=1", model, head_dir=tmp_path / "tied", base=model_dir).head is not None
    with pytest.raises(UnmaskError, match="give base= too"):
        build_policy("mi:lam=1", model, head_dir=tmp_path / "tied")


def test_an_order_exported_beside_its_finetuned_model_still_belongs_to_it(tmp_path, sudoku_files):
    # Bug caught: orders exported by --finetune runs before base digests were recorded name the model they
    # started from (source.model_sha256), so the fine-tuned model they were saved beside was refused.
    from unmask.model import load_model
    from unmask.order.net import OrderConfig, OrderNet, save_order_net
    from unmask.policies import build_policy

    model_dir, _ = sudoku_files
    folder = other_model(model_dir, tmp_path / "finetuned")
    save_order_net(OrderNet(OrderConfig(d_in=16)), folder, {"source": {"model_sha256": artifacts.model_digest(model_dir)},
                                                            "train_config": {"finetune": True}})
    assert build_policy("learned", load_model(folder), folder).net is not None


def test_mi_head_trained_in_its_own_folder_and_used_with_head(tmp_path, sudoku_files, cli):
    # Bugs caught: a head written into (or beside a copy of) the model, a head without its base
    # model's digest, --head not reaching the policy, a head used with another model of the same width.
    model_dir, puzzles = sudoku_files
    before = snapshot(model_dir)
    code, _, err = cli(
        [
            "mi",
            "data",
            "--task",
            "sudoku",
            "--model",
            model_dir,
            "--examples",
            puzzles,
            "--out",
            tmp_path / "d",
            "--states",
            "4",
            "--shard-size",
            "2",
            "--rows",
            "2",
        ]
    )
    assert code == 0, err
    assert "at most" in err and "probe passes" in err  # the cost, said up front, and what was spent
    code, _, err = cli(
        [
            "mi",
            "train",
            "--task",
            "sudoku",
            "--model",
            model_dir,
            "--data",
            tmp_path / "d",
            "--steps",
            "2",
            "--out",
            tmp_path / "h",
        ]
    )
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "h").iterdir()) == ["mi_head.json", "mi_head.safetensors"]
    assert json.loads((tmp_path / "h" / "mi_head.json").read_text())["base_model_sha256"] == artifacts.model_digest(model_dir)
    assert snapshot(model_dir) == before
    code, out, err = cli(
        ["sudoku", "eval", "--model", model_dir, "--puzzles", puzzles, "--policy", "mi:lam=1", "--head", tmp_path / "h", "--json"]
    )
    assert code == 0, err
    assert json.loads(out)["policy"].startswith("mi")
    other = other_model(model_dir, tmp_path / "other")
    code, _, err = cli(
        ["sudoku", "eval", "--model", other, "--puzzles", puzzles, "--policy", "mi:lam=1", "--head", tmp_path / "h"]
    )
    assert code == 2 and err.count("\n") == 1 and "trained for another model" in err
    code, _, err = cli(
        [
            "mi",
            "map",
            "--task",
            "sudoku",
            "--model",
            other,
            "--examples",
            puzzles,
            "--head",
            tmp_path / "h",
            "--out",
            tmp_path / "m.png",
        ]
    )
    assert code == 2 and "trained for another model" in err and not (tmp_path / "m.png").exists()
    code, _, err = cli(
        ["sudoku", "eval", "--model", model_dir, "--puzzles", puzzles, "--policy", "topk:k=3", "--head", tmp_path / "h"]
    )
    assert code == 2 and "does not read it" in err  # a flag that does not apply is refused, not ignored
    before = snapshot(tmp_path / "h")  # the default --out holds this head: another model's training must not replace it
    code, _, err = cli(["mi", "train", "--task", "sudoku", "--model", other, "--data", tmp_path / "d", "--steps", "2",
                        "--out", tmp_path / "h"])
    assert code == 2 and "holds an MI head of another model" in err and snapshot(tmp_path / "h") == before


def test_order_policy_trained_in_its_run_folder_and_used_with_order(tmp_path, sudoku_files, cli):
    model_dir, puzzles = sudoku_files
    before = snapshot(model_dir)
    run = tmp_path / "run"
    code, _, err = cli(
        [
            "sudoku",
            "train-order",
            "--model",
            model_dir,
            "--data",
            puzzles,
            "--out",
            run,
            "--steps",
            "2",
            "--batch-size",
            "2",
            "--samples",
            "2",
            "--budget",
            "3",
            "--eval-every",
            "2",
            "--ckpt-every",
            "2",
            "--warmup",
            "1",
        ]
    )
    assert code == 0, err
    assert f"--order {run}" in err and not (run / "model").exists()
    assert snapshot(model_dir) == before
    code, out, err = cli(
        ["sudoku", "eval", "--model", model_dir, "--puzzles", puzzles, "--policy", "learned", "--order", run, "--json"]
    )
    assert code == 0, err
    assert json.loads(out)["max_nfe"] <= 3  # the budget the policy was trained for
    other = other_model(model_dir, tmp_path / "other")
    code, _, err = cli(["sudoku", "eval", "--model", other, "--puzzles", puzzles, "--policy", "learned", "--order", run])
    assert code == 2 and err.count("\n") == 1 and "order policy was trained for another model" in err
    code, _, err = cli(["sudoku", "eval", "--model", model_dir, "--puzzles", puzzles, "--policy", "mi:lam=1", "--order", run])
    assert code == 2 and "does not read it" in err
