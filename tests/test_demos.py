"""``unmask sudoku demo`` and ``unmask maths demo``: the defaults their help states (a size that runs in
about a minute on 2 CPU cores), and one table row per set and default policy, at smoke size."""

from __future__ import annotations

from pathlib import Path

import pytest

from unmask.commands import maths, sudoku
from unmask.commands.common import DEMO_COLUMNS
from unmask.tasks.sudoku.task import DEMO_POLICIES as SUDOKU_POLICIES

SIX_LAYER = Path(__file__).parent / "data" / "sudoku-6layer"  # small enough for a smoke run, with an MI head for `mi:lam=2`

DEMOS = [("sudoku", sudoku, SUDOKU_POLICIES), ("maths", maths, maths.DEMO_POLICIES)]


@pytest.mark.parametrize("task,module,policies", DEMOS)
def test_help_states_the_default_size_time_and_policies(cli, monkeypatch, task, module, policies):
    # Bug caught: a demo that took 10-20 minutes on 2 cores (100 examples a set) while the README
    # promised about a minute; the help now states the size, the time and every default policy.
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = cli([task, "demo", "--help"])
    text = " ".join(out.split())
    assert code == 0
    assert f"about {module.DEMO_SECONDS} seconds on 2 CPU cores" in text and "--n widens" in text
    assert f"(default: {module.DEMO_N})" in text
    assert f"(default: {' '.join(policies)})" in text


@pytest.mark.parametrize("task,module", [("sudoku", sudoku), ("maths", maths)])
def test_default_n_is_the_stated_one(task, module):
    from unmask.cli import build_parser

    args = build_parser().parse_args([task, "demo"])
    assert args.n == module.DEMO_N and args.policies is None  # None: the DEMO_POLICIES the help lists
    assert args.device == "cpu"


def test_sudoku_demo_prints_one_row_per_set_and_default_policy(cli):
    code, out, err = cli(["sudoku", "demo", "--n", "1", "--model", SIX_LAYER])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "| " + " | ".join(DEMO_COLUMNS) + " |"
    rows = [line.split(" | ") for line in lines[2:]]
    assert len(rows) == 2 * len(SUDOKU_POLICIES)
    assert [r[0].strip("| ") for r in rows] == ["kaggle (1)"] * len(SUDOKU_POLICIES) + ["hard (1)"] * len(SUDOKU_POLICIES)
    assert all(float(r[2]) >= 1 and float(r[3]) in (0, 100) and float(r[4]) >= 0 for r in rows)  # passes, accuracy %, seconds
    assert "total " in err and " s wall on " in err


def test_maths_demo_prints_one_row_per_default_policy(cli):
    code, out, err = cli(["maths", "demo", "--n", "2"])
    assert code == 0, err
    rows = [line.split(" | ") for line in out.strip().splitlines()[2:]]
    assert [r[1] for r in rows][:1] == ["random:steps=4"] and len(rows) == len(maths.DEMO_POLICIES)
    sequential = next(r for r in rows if r[1].startswith("sequential"))
    assert float(sequential[2]) == 48  # one answer position per pass: the answer region's length
    assert "total " in err
