"""The one evaluator: results never depend on batch size or on how many processes share the set.

Each test names the planted bug it is there to catch.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed

from unmask.decode import TokenRule, parse_policy
from unmask.eval import decode_all, evaluate

ROOT = Path(__file__).resolve().parent.parent
FIELDS = ("tokens", "nfe", "reveal_step", "extra_passes")


def _same(a, b) -> None:
    for name in FIELDS:
        assert torch.equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("spec,temperature", [
    ("sequential", 0.0), ("topk:k=3", 1.0), ("random:steps=4", 0.0), ("random:steps=4", 1.0), ("eb:gamma=0.5", 1.0),
])
def test_results_do_not_depend_on_batch_size(make_model, masked_batch, spec, temperature):
    # Bugs caught: seeds taken as arange(batch) inside each batch instead of seed + k for sequence k;
    # results of batches concatenated out of order; the seed offset ignored.
    model = make_model()
    tokens = masked_batch(7, 16, 4, seed=5)
    policy, rule = parse_policy(spec), TokenRule(temperature)
    runs = [decode_all(model, tokens, policy, rule, batch_size=bs, seed=3).result for bs in (1, 3, 100)]
    for other in runs[1:]:
        _same(runs[0], other)
    assert not (runs[0].tokens == model.mask_id).any()
    shifted = decode_all(model, tokens, policy, rule, batch_size=100, seed=4).result
    if temperature > 0 or spec.startswith("random"):
        assert not torch.equal(shifted.tokens, runs[0].tokens) or not torch.equal(shifted.reveal_step, runs[0].reveal_step)


def test_an_empty_set(make_model):
    # Bug caught: decode_all crashing on zero sequences (torch.cat of nothing).
    model = make_model()
    run = decode_all(model, torch.zeros(0, 16, dtype=torch.long), parse_policy("sequential"))
    assert run.result.tokens.shape == (0, 16) and run.result.nfe.shape == (0,)


SCRIPT = textwrap.dedent('''
    import sys
    import torch
    torch.set_num_threads(1)
    from unmask.decode import TokenRule, parse_policy
    from unmask.dist import rank_world
    from unmask.eval import decode_all
    from unmask.model import load_model

    model_dir, tokens_path, out_path = sys.argv[1:4]
    model = load_model(model_dir)
    tokens = torch.load(tokens_path)
    out = {}
    for spec, temperature in [("random:steps=4", 1.0), ("sequential", 0.0)]:
        res = decode_all(model, tokens, parse_policy(spec), TokenRule(temperature), batch_size=2, seed=7).result
        out[spec] = {k: getattr(res, k) for k in ("tokens", "nfe", "reveal_step", "extra_passes")}
    rank, world = rank_world()
    out["world"] = world
    if rank == 0:
        torch.save(out, out_path)
''')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available in this torch build")
def test_two_processes_give_the_single_process_result(make_model, masked_batch, tmp_path):
    # Bugs caught: a rank decoding every sequence (or the wrong share); shards merged in rank order
    # instead of sequence order; rank-local seeds (k within the shard instead of the sequence index).
    from unmask.model import save_model

    model = make_model()
    save_model(model, tmp_path / "model")
    tokens = masked_batch(7, 16, 4, seed=6)  # 7 sequences: ranks get 4 and 3
    torch.save(tokens, tmp_path / "tokens.pt")
    script = tmp_path / "shard.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), str(script), str(tmp_path / "model"), str(tmp_path / "tokens.pt"),
           str(tmp_path / "out.pt")]
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    got = torch.load(tmp_path / "out.pt")
    assert got["world"] == 2
    loaded = type(model)(model.cfg)  # the in-process reference uses the very weights the script loaded
    loaded.load_state_dict(model.state_dict())
    for spec, temperature in [("random:steps=4", 1.0), ("sequential", 0.0)]:
        want = decode_all(loaded.eval(), tokens, parse_policy(spec), TokenRule(temperature), batch_size=100, seed=7).result
        for name in FIELDS:
            assert torch.equal(got[spec][name], getattr(want, name)), (spec, name)


def _sudoku_set(blanks: int = 4):
    from unmask.tasks.sudoku.data import SudokuSet
    from unmask.tasks.sudoku.generate import generate

    full = generate("kaggle", 3, seed=11, progress=False)
    quizzes = full.solutions.copy()
    rng = np.random.default_rng(0)
    for q in quizzes:
        q[rng.choice(81, blanks, replace=False)] = 0
    return SudokuSet(quizzes, full.solutions)


@pytest.mark.parametrize("spec", ["sequential", "exact:gamma=5"])  # (γ = 5: cells fit beside the first, so rows are probed)
def test_evaluate_reports_the_documented_keys(make_sudoku_model, spec):
    # Bugs caught: a key renamed or dropped from the report; extra_passes reported for policies that
    # spend none (or missing for exact); accuracy not a fraction; max_nfe counting the wrong thing.
    from unmask.policies import build_policy
    from unmask.tasks.sudoku.task import SudokuTask

    model = make_sudoku_model()
    data = _sudoku_set()
    policy = build_policy(spec, model)
    out = evaluate(SudokuTask(), model, data, policy, batch_size=2)
    keys = {"n", "accuracy", "mean_nfe", "min_nfe", "max_nfe", "seconds", "examples_per_s"}
    assert set(out) == keys | ({"extra_passes"} if spec.startswith("exact") else set())
    assert out["n"] == 3
    assert 0.0 <= out["accuracy"] <= 1.0
    assert 1 <= out["min_nfe"] <= out["mean_nfe"] <= out["max_nfe"] <= 4
    assert isinstance(out["max_nfe"], int) and out["seconds"] >= 0 and out["examples_per_s"] >= 0
    if spec.startswith("exact"):
        assert out["extra_passes"] > out["mean_nfe"]  # a base pass and probes per step
    shown = evaluate(SudokuTask(), model, data, policy, show=2)
    assert len(shown["examples"]) == 2 and set(shown["examples"][0]) == {"puzzle", "output", "correct", "nfe"}
