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


def _docs_blocks() -> dict[tuple[str, int], str]:
    """Every ```python block of the docs (but the ones included from examples/), by (page, index on the page)."""
    blocks = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        found = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        for k, code in enumerate(found):
            if not code.startswith("--8<--"):
                blocks[(page.relative_to(ROOT / "docs").as_posix(), k)] = code
    return blocks


# Blocks that show a shape rather than a program (a protocol's members, a class's outline) or read a file the
# user makes (data/sudoku/test-kaggle.csv); every other block of the docs must run.
ILLUSTRATIONS = {("concepts.md", 0), ("concepts.md", 1), ("how-to/your-model.md", 1)}

# What the one-line blocks of the policy pages take as given (each page says so), and what the decoding
# snippet of "your own model" takes: the example model, its sequences, the positions to fill.
PRELUDE = '''
import torch
import unmask
from unmask.decode import SemiAR
from unmask.tasks.sudoku import SudokuTask, generate

loaded = unmask.load_denoiser(unmask.shipped_model("sudoku"))
prompt_len = 0
puzzle = SudokuTask().encode(generate("kaggle", 1, seed=0))
'''
AFTER_POLICY = '''
if not isinstance(policy, SemiAR):  # (the semi-AR wrapper has no spec of its own)
    assert unmask.policy_spec(unmask.parse_policy(unmask.policy_spec(policy))) == unmask.policy_spec(policy)
tokens = torch.full_like(puzzle, loaded.denoiser.mask_id) if isinstance(policy, SemiAR) else puzzle  # (blocks: all masked)
if not unmask.policy_spec(policy).startswith("exact"):  # (an oracle's probes are slow on the 24-layer model)
    assert unmask.decode(loaded.denoiser, tokens, policy).nfe.item() >= 1
'''


def test_every_python_block_of_the_docs_runs():
    # Bug caught: a docs page showing a spec, a flag or a call the library no longer takes (the policy pages'
    # one-liners, the decoding snippet of "your own model", the custom policy of the policies overview).
    blocks = _docs_blocks()
    assert ILLUSTRATIONS <= set(blocks), "an illustration listed here is gone from the docs: update ILLUSTRATIONS"
    one_liners = {key: code for key, code in blocks.items() if key[0].startswith("policies/") and "policy = " in code
                  and "class " not in code}
    assert len(one_liners) >= 10
    own = (EXAMPLES / "own_model.py").read_text(encoding="utf-8").split("# --8<-- [end:own-model]")[0]
    script = PRELUDE + "".join(code + AFTER_POLICY for code in one_liners.values())
    script += own + ("my_sequences = torch.randint(10, (3, 16))\nto_fill = torch.rand(3, 16) < 0.5\n"
                     + blocks[("how-to/your-model.md", 2)] + "assert (result.tokens != model.mask_id).all()\n")
    r = _run("-c", script)
    assert r.returncode == 0, r.stderr[-3000:]
    rest = [code for key, code in blocks.items() if key not in one_liners and key not in ILLUSTRATIONS
            and key != ("how-to/your-model.md", 2)]
    assert rest, "the custom policy of the policies overview is no longer checked"
    for code in rest:  # whole programs, each in a process of its own (a custom policy registers a name)
        r = _run("-c", code)
        assert r.returncode == 0, r.stderr[-3000:]
