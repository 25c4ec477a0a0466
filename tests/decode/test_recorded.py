"""Today's loop reproduces, bit for bit, what the loop decoded before the 'one house' refactor.

``tests/data/recorded_decodes.json.gz`` holds the tokens, NFE and reveal steps of every policy family
(and exact-MI probe passes) on the Sudoku and 3-step maths models shipped then, recorded at commit
0a702c9 by ``tests/data/record_decodes.py``. The Sudoku model of that time, the 6-layer one with its
MI head, is kept in ``tests/data/sudoku-6layer`` (the same files git already holds), so the check
stands whatever model ships. A change to ranking, tie-breaking, randomness, the
token rule, the MI budget or the accounting shows up here as a difference.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from unmask.decode import SemiAR, TokenRule, decode
from unmask.model import load_model
from unmask.policies import build_policy
from unmask.tasks.maths.arith import Problem
from unmask.tasks.maths.task import MathsTask
from unmask.tasks.base import MODELS
from unmask.tasks.sudoku.task import SudokuTask

RECORD = json.loads(gzip.open(Path(__file__).parents[1] / "data" / "recorded_decodes.json.gz", "rt").read())
SUDOKU = Path(__file__).parents[1] / "data" / "sudoku-6layer"  # the Sudoku model the decodes were recorded on
MATHS3 = MODELS / "maths-3step"


def check(res, rec) -> None:
    assert res.tokens.tolist() == rec["tokens"]
    assert res.nfe.tolist() == rec["nfe"]
    assert res.reveal_step.tolist() == rec["reveal_step"]


@pytest.fixture(scope="module")
def sudoku():
    model = load_model(SUDOKU)
    return model, SudokuTask().encode(np.array(RECORD["sudoku_quizzes"], dtype=np.int8))


@pytest.mark.parametrize("rec", RECORD["sudoku"], ids=lambda r: f"{r['spec']}@T{r['temperature']}")
def test_sudoku_decodes_as_recorded(rec, sudoku):
    model, tokens = sudoku
    policy = build_policy(rec["spec"], model, SUDOKU)
    res = decode(model, tokens, policy, TokenRule(rec["temperature"]), seeds=torch.arange(8) + 5)
    check(res, rec)
    assert int(res.extra_passes.sum()) == rec.get("probe_passes", 0)


@pytest.fixture(scope="module")
def maths3():
    model = load_model(MATHS3)
    problems = [Problem(q, s, "") for q, s in zip(RECORD["maths3_questions"], RECORD["maths3_solutions"])]
    return model, MathsTask.for_model(model.cfg).encode(problems)


@pytest.mark.parametrize("rec", RECORD["maths3"], ids=lambda r: f"{r['spec']}@T{r['temperature']}")
def test_maths_decodes_as_recorded(rec, maths3):
    model, tokens = maths3
    spec = rec["spec"].removeprefix("semi_ar24:")
    policy = build_policy(spec, model, MATHS3)
    if rec["spec"].startswith("semi_ar24:"):
        policy = SemiAR(policy, 24, model.cfg.prompt_len)
    check(decode(model, tokens, policy, TokenRule(rec["temperature"]), seeds=torch.arange(4) + 3), rec)
