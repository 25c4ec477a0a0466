"""The first paper's method and the second's on a pretrained model nobody here trained: a tiny random ESM-2
(made in the test) through `mi data` -> `mi train` -> decode with `--head`, and `proteins train-order` ->
decode with `--order`, from the command line; the model's folder is never written."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")

from tests.fixtures.protein_models import HEAVY  # noqa: E402
from tests.test_addons import snapshot  # noqa: E402
from unmask import artifacts  # noqa: E402
from unmask.mi.data import shard_path  # noqa: E402


@pytest.mark.parametrize("family", ["esm2", "esmc"])
def test_mi_head_for_a_pretrained_model_end_to_end(family, request, tmp_path, cli):
    # Bugs caught: mi data/train refusing hf: models, a head saved into (or beside a copy of) the
    # pretrained model, a head without the model's digest, a resumed build that differs from a whole one.
    folder = request.getfixturevalue(f"{family}_dir")  # ESM-2 (EsmForMaskedLM) or ESM-C (EsmcForMaskedLM)
    model = f"hf:{folder}"
    before = snapshot(folder)
    data = ["mi", "data", "--task", "proteins", "--model", model, "--examples", HEAVY, "--states", "4", "--shard-size", "2",
            "--rows", "2", "--probe-batch", "7"]
    code, _, err = cli([*data, "--out", tmp_path / "d"])
    assert code == 0, err
    assert "at most 1 + 2 rows x 20 values = 41 probe passes" in err and "probe passes in all" in err
    # an interrupted build: one shard lost, rebuilt by the same command, byte-identical
    whole = shard_path(tmp_path / "d", 1).read_bytes()
    shard_path(tmp_path / "d", 1).unlink()
    code, _, err = cli([*data, "--out", tmp_path / "d", "--probe-batch", "1000"])
    assert code == 2 and "built with other ['probe_batch'] (it was built with --probe-batch 7)" in err  # last bits
    code, _, err = cli([*data, "--out", tmp_path / "d"])
    assert code == 0 and "1 shards built, 1 already there" in err
    assert shard_path(tmp_path / "d", 1).read_bytes() == whole
    code, _, err = cli(["mi", "train", "--task", "proteins", "--model", model, "--data", tmp_path / "d", "--steps", "3",
                        "--out", tmp_path / "h"])
    assert code == 0, err
    meta = json.loads((tmp_path / "h" / "mi_head.json").read_text())
    assert meta["base_model"] == model and meta["base_model_sha256"] == artifacts.model_digest(folder)
    code, _, err = cli(["proteins", "generate", "--model", model, "--head", tmp_path / "h", "--policy", "mi:gamma=1,lam=1",
                        "--n", "3", "--length", "8:12", "--reference", "", "--out", tmp_path / "g.fasta"])
    assert code == 0, err
    assert (tmp_path / "g.fasta").read_text().count(">") == 3
    assert snapshot(folder) == before  # nothing written into the user's model folder

    other = tmp_path / "other"  # the same model with other weights: the head is refused in one line
    shutil.copytree(folder, other)
    (other / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes()[:-4] + b"\0\0\0\0")
    code, _, err = cli(["proteins", "generate", "--model", f"hf:{other}", "--head", tmp_path / "h", "--policy", "mi:lam=1",
                        "--n", "2", "--length", "8:12", "--reference", "", "--out", tmp_path / "g2.fasta"])
    assert code == 2 and "trained for another model" in err and not (tmp_path / "g2.fasta").exists()


def test_learned_order_for_a_pretrained_model_end_to_end(esm2_dir, tmp_path, cli):
    model = f"hf:{esm2_dir}"
    before = snapshot(esm2_dir)
    run = tmp_path / "run"
    code, _, err = cli(["proteins", "train-order", "--model", model, "--data", HEAVY, "--out", run, "--steps", "2",
                        "--batch-size", "2", "--samples", "2", "--budget", "3", "--warmup", "1", "--eval-every", "2",
                        "--ckpt-every", "2"])
    assert code == 0, err
    assert json.loads((run / "order_policy.json").read_text())["base_model_sha256"] == artifacts.model_digest(esm2_dir)
    code, _, err = cli(["proteins", "generate", "--model", model, "--order", run, "--policy", "learned", "--n", "3",
                        "--length", "8:12", "--reference", "", "--out", tmp_path / "g.fasta"])
    assert code == 0, err
    nfe = [int(line.split("nfe=")[1].split()[0]) for line in (tmp_path / "g.fasta").read_text().splitlines() if line[0] == ">"]
    assert len(nfe) == 3 and max(nfe) <= 3  # the budget the order was trained for
    assert snapshot(esm2_dir) == before
    code, _, err = cli(["proteins", "train-order", "--model", model, "--data", HEAVY, "--out", tmp_path / "ft", "--finetune"])
    assert code == 2 and "not a pretrained model" in err and not (tmp_path / "ft").exists()  # before any load
