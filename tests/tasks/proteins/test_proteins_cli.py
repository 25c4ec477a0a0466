"""``unmask proteins generate|eval|train`` end to end on a tiny random protein model."""

from __future__ import annotations

import json

import pytest
import torch

from unmask.model import TransformerDenoiser, load_model, save_model
from unmask.tasks.proteins.fasta import Record, read_fasta, write_fasta
from unmask.tasks.proteins.task import default_model_config


@pytest.fixture
def setup(tmp_path):
    cfg = default_model_config(max_len=40)
    cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_heads = 16, 1, 32, 2
    torch.manual_seed(0)
    save_model(TransformerDenoiser(cfg).eval(), tmp_path / "model")
    ref = [Record(f"r{k}", "ACDEFGHIKLMNPQRSTVWY"[k:] + "MKV" * k) for k in range(8)]  # lengths 20, 22, …, 34
    write_fasta(tmp_path / "ref.fasta", ref)
    return tmp_path, ref



def test_generate_then_eval(setup, cli):
    # Bugs caught: lengths not drawn from the reference (or outside --length), residues past the
    # length, NFE not recorded, eval not reading it back, batch size changing the proteins.
    tmp, ref = setup
    out = tmp / "gen.fasta"
    base = ["proteins", "generate", "--model", tmp / "model", "--reference", tmp / "ref.fasta", "--n", "12",
            "--length", "22:30", "--policy", "topk:k=4", "--json"]
    code, stdout, _ = cli([*base, "--out", out])
    assert code == 0
    summary = json.loads(stdout)
    gen = read_fasta(out)
    pool = {len(r.sequence) for r in ref if 22 <= len(r.sequence) <= 30}
    assert len(gen) == 12 and {len(r.sequence) for r in gen} <= pool
    nfe = [int(t.split("=")[1]) for r in gen for t in r.name.split() if t.startswith("nfe=")]
    assert nfe == [-(-len(r.sequence) // 4) for r in gen] and summary["mean_nfe"] == sum(nfe) / 12
    code, _, _ = cli([*base, "--out", tmp / "again.fasta", "--batch-size", "5"])
    assert code == 0 and read_fasta(tmp / "again.fasta") == gen
    code, stdout, _ = cli(["proteins", "eval", "--generated", out, "--reference", tmp / "ref.fasta", "--json"])
    m = json.loads(stdout)
    assert code == 0 and m["n"] == 12 and m["mean_nfe"] == summary["mean_nfe"] and 0 < m["jsd_aa"] < 0.7
    code, stdout, _ = cli(["proteins", "eval", "--generated", tmp / "ref.fasta", "--reference", tmp / "ref.fasta", "--json"])
    assert json.loads(stdout)["jsd_aa"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("extra,message", [
    (["--length", "0:5"], "need 1 <= LO <= HI"),
    (["--length", "30:41"], "the model holds 40 residues"),
    (["--length", "36:40"], "no reference sequence has a length in 36:40"),
    (["--temperature", "-1"], "must be a finite number >= 0, got -1"),
])
def test_generate_refuses_in_one_line(setup, cli, extra, message):
    tmp, _ = setup
    code, _, err = cli(["proteins", "generate", "--model", tmp / "model", "--reference", tmp / "ref.fasta", "--out",
                        tmp / "g.fasta", *extra])
    lines = [line for line in err.splitlines() if "%|" not in line and line.strip()]
    assert code == 2 and len(lines) == 1 and message in lines[0], err
    assert not (tmp / "g.fasta").exists()


def test_train_a_few_steps_and_resume(setup, cli):
    tmp, _ = setup
    common = ["proteins", "train", "--data", tmp / "ref.fasta", "--val", tmp / "ref.fasta", "--out", tmp / "run",
              "--batch-size", "4", "--eval-every", "2", "--ckpt-every", "2", "--warmup", "1"]
    shape = ["--max-len", "40", "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "32"]
    assert cli([*common, *shape, "--steps", "2"])[0] == 0
    log = [json.loads(line) for line in (tmp / "run" / "log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 2 and 1 < log[-1]["val_ppl"] < 40  # a perplexity over 20 residues, not a NaN
    assert cli([*common, "--steps", "3", "--resume"])[0] == 0  # the shape comes from the checkpoint
    code, stdout, _ = cli(["proteins", "generate", "--model", tmp / "run" / "model", "--reference", tmp / "ref.fasta",
                           "--n", "3", "--length", "20:34", "--out", tmp / "g.fasta", "--json"])
    assert code == 0 and json.loads(stdout)["mean_nfe"] > 20  # sequential: one residue per pass
    start = ["proteins", "train", "--data", tmp / "ref.fasta", "--batch-size", "2", "--steps", "1", "--warmup", "0",
             "--init", tmp / "run" / "model"]
    assert cli([*start, "--out", tmp / "from-init"])[0] == 0  # the length comes from the init model
    assert load_model(tmp / "from-init" / "model").cfg.seq_len == 40
    code, _, err = cli([*start, "--out", tmp / "from-init-2", "--max-len", "60"])
    assert code == 2 and "keeps that model's length" in err
