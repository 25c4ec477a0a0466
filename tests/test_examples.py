"""The runnable examples and the README's Python blocks: they run as written and cannot drift apart."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def _snippet(path: Path, name: str) -> str:
    """The lines of ``path`` between its ``--8<-- [start:name]`` and ``[end:name]`` markers."""
    text = path.read_text(encoding="utf-8")
    return re.search(rf"# --8<-- \[start:{name}\]\n(.*?)# --8<-- \[end:{name}\]\n", text, re.S).group(1)


def _run(*argv: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_readme_quickstart_is_the_example_word_for_word():
    # Bug caught: the README's first Python block edited (or the example) so that what users copy is not what runs.
    assert _python_blocks()[0] == _snippet(EXAMPLES / "quickstart.py", "quickstart")


def test_the_quickstart_runs_and_prints_one_row_per_policy():
    # Bug caught: a public name the quickstart uses (shipped_model, build_policy, evaluate) renamed or broken.
    r = _run("examples/quickstart.py")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [line for line in r.stdout.splitlines() if "accuracy" in line]
    assert [line.split()[0] for line in rows] == ["sequential", "eb:gamma=0.1"]
    sequential_passes = float(rows[0].split()[-1])
    assert sequential_passes > 40 and float(rows[1].split()[-1]) < sequential_passes / 3  # one cell per pass vs parallel


def test_your_own_module_is_a_denoiser():
    # Bug caught: the Denoiser interface growing a member the docs do not list (the example would fail).
    r = _run("examples/own_model.py")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "forward passes: [" in r.stdout


def test_the_readme_own_model_block_runs_as_written(hf_model_dir):
    # Bug caught: the README's "your own model" block out of date with the API. Its Hugging Face line names a
    # folder on the user's disk; here it is a tiny random masked LM made by the fixture.
    (block,) = [b for b in _python_blocks() if "class MyDenoiser" in b]
    assert block.count('"hf:models/esm2_t6_8M_UR50D"') == 1
    code = block.replace('"hf:models/esm2_t6_8M_UR50D"', repr(f"hf:{hf_model_dir}"))
    code += "\nassert result.nfe.tolist() and (result.tokens != 10).all()\nassert esm.denoiser.vocab_size > 0\n"
    r = _run("-c", code)
    assert r.returncode == 0, r.stderr[-3000:]


def test_a_hugging_face_masked_lm_from_a_local_folder():
    # Bug caught: load_denoiser("hf:DIR") or the tokenizer round trip broken for a plain BERT-style MLM.
    pytest.importorskip("transformers")
    r = _run("examples/huggingface.py")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "forward passes: [" in r.stdout
