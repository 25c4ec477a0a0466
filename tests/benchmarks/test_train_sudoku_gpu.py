"""benchmarks/sudoku/train_sudoku_gpu.sh on the CPU with tiny sizes: a fresh stacked run, its hand-back, a resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.benchmarks.scripts import ROOT

SCRIPT = ROOT / "benchmarks" / "sudoku" / "train_sudoku_gpu.sh"


def setup(tmp_path: Path) -> Path:
    """A working folder with the five CSVs the script reads and a 1-layer model to stack from."""
    from unmask.model import ModelConfig, TransformerDenoiser, save_model
    from unmask.tasks.sudoku.data import POSITION_FEATURES, write_puzzles
    from unmask.tasks.sudoku.generate import generate
    from unmask.tasks.sudoku.task import default_model_config

    work = tmp_path / "work"
    for k, name in enumerate(["train", "val-kaggle", "val-hard", "train-hard", "train-hard-b"]):
        write_puzzles(work / "data" / "sudoku" / f"{name}.csv", generate("kaggle", 4, 900 + k, progress=False))
    cfg = default_model_config()
    tiny = ModelConfig(**{**cfg.__dict__, "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32})
    save_model(TransformerDenoiser(tiny, POSITION_FEATURES), work / "init")
    return work


def run(work: Path, seconds: str = "60", **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "DEVICE": "cpu",
           "BATCH": "4", "VAL_N": "1", "INIT": "init", "LAYERS": "2", "RUN": "run", "OMP_NUM_THREADS": "1", **env}
    return subprocess.run(["bash", str(SCRIPT), seconds, "out"], cwd=work, env=env, capture_output=True, text=True, timeout=300)


def test_a_fresh_run_stacks_trains_hands_the_model_back_and_resumes_with_its_warm_up(tmp_path):
    # Bugs caught: the model not stacked to LAYERS, the pieces not adding up to the weights, a resume
    # refused because the warm-up was recomputed from the new STEPS (40 // 20 = 2, 60 // 20 = 3), a
    # resume starting over.
    work = setup(tmp_path)
    r = run(work, STEPS="40")
    assert r.returncode == 0, r.stderr[-2000:]
    out = work / "out"
    weights = b"".join(p.read_bytes() for p in sorted(out.glob("model.safetensors.part-*")))
    assert weights == (work / "run" / "model" / "model.safetensors").read_bytes()
    assert json.loads((out / "config.json").read_text())["config"]["n_layers"] == 2
    assert [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()] == list(range(4, 41, 4))
    r = run(work, STEPS="60")
    assert r.returncode == 0, r.stderr[-2000:]
    steps = [json.loads(line)["step"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert steps == list(range(4, 41, 4)) + [42, 48, 54, 60]  # continued from 40, validating at multiples of 60 // 10


def test_refusals_are_one_line(tmp_path):
    work = setup(tmp_path)
    (work / "run").mkdir()
    r = run(work, STEPS="2")
    assert r.returncode == 2 and r.stderr.strip() == "train_sudoku_gpu.sh: run exists and holds no checkpoint; choose another RUN"
    (work / "run" / "checkpoint.pt").write_bytes(b"")
    r = run(work)
    assert r.returncode == 2 and r.stderr.strip() == "train_sudoku_gpu.sh: run holds a run; give STEPS to continue it"
    (work / "data" / "sudoku" / "train-hard-b.csv").unlink()
    r = run(work, STEPS="2", RUN="other")
    assert r.returncode == 2 and "data/sudoku/train-hard-b.csv is missing" in r.stderr
