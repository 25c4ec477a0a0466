"""A property test over the whole CLI: for every command that reads a file, a spec or a number, random
bytes, truncated and mutated valid files, random specs and numbers end in exit code 0 or 2 with at
most one line on stderr (progress bars and old-spelling notes aside), never an exception (in-process,
an escaping exception is what a user sees as a traceback), and never change a file other than the
named output.

The commands run in-process on small random models, so the whole file stays well under a minute.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unmask.cli import main
from unmask.decode.registry import POLICIES
from unmask.model import TransformerDenoiser, save_model
from unmask.policies import build_policy  # noqa: F401  (registers every policy family in POLICIES)
from unmask.tasks.maths.arith import ArithConfig, generate
from unmask.tasks.maths.data import write_problems
from unmask.tasks.maths.task import default_model_config
from unmask.tasks.sudoku.task import DEFAULT_MODEL as SHIPPED_SUDOKU

SHIPPED_MODELS = SHIPPED_SUDOKU.parent  # every shipped model folder
SHIPPED_BEFORE: dict[str, str] = {}  # their files' digests when the module's fixtures were made

FUZZ = settings(max_examples=25, deadline=None, derandomize=True,  # the same examples on every run: CI never flakes
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
TINY_SHAPE = ["--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "32", "--batch-size", "2", "--warmup", "1"]


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def world(tmp_path_factory, make_sudoku_model_module):
    """Small models and valid files for every command (made once for the module)."""
    root = tmp_path_factory.mktemp("fuzz")
    save_model(make_sudoku_model_module(), root / "sudoku-model")
    cfg = default_model_config(prompt_len=144, answer_len=48)
    cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_heads = 16, 1, 32, 2
    torch.manual_seed(0)
    save_model(TransformerDenoiser(cfg).eval(), root / "maths-model")
    assert main(["sudoku", "generate", "--n", "3", "--seed", "1", "--out", str(root / "puzzles.csv")]) == 0
    write_problems(root / "problems.jsonl", generate(ArithConfig(), 3, seed=1))
    SHIPPED_BEFORE.update(digest(SHIPPED_MODELS))
    return root


@pytest.fixture(scope="module")
def make_sudoku_model_module():
    from unmask.tasks.sudoku.data import POSITION_FEATURES
    from unmask.tasks.sudoku.task import default_model_config as sudoku_config

    def make() -> TransformerDenoiser:
        cfg = sudoku_config()
        cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_heads = 16, 1, 32, 2
        torch.manual_seed(0)
        return TransformerDenoiser(cfg, POSITION_FEATURES).eval()

    return make


def run(argv: list, root: Path, output: Path | None = None) -> None:
    """Run ``unmask argv``; check the exit code, stderr and that nothing but ``output`` changed."""
    before = digest(root)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:  # argparse's own errors
            code = e.code
    lines = [line for line in err.getvalue().replace("\r", "\n").splitlines() if line.strip() and "%|" not in line
             and not line.startswith("unmask: note:")]  # progress bars and old-spelling notes aside
    assert code in (0, 2), (argv, err.getvalue())
    assert len(lines) <= 1, (argv, err.getvalue())
    after = digest(root)
    skip = "" if output is None else str(output.relative_to(root))
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k) and not k.startswith(skip or "\0")}
    assert not changed, (argv, changed)


def mutated(valid: bytes) -> st.SearchStrategy[bytes]:
    """Random bytes, or ``valid`` truncated, with bytes replaced, inserted or deleted."""
    n = len(valid)
    edit = st.tuples(st.integers(0, max(n - 1, 0)), st.sampled_from(["set", "insert", "delete"]),
                     st.binary(min_size=1, max_size=3))

    def apply(edits, cut) -> bytes:
        out = bytearray(valid[:cut])
        for pos, kind, b in edits:
            pos = min(pos, len(out))
            if kind == "set":
                out[pos : pos + len(b)] = b
            elif kind == "insert":
                out[pos:pos] = b
            else:
                del out[pos : pos + len(b)]
        return bytes(out)

    return st.one_of(st.binary(max_size=300), st.builds(apply, st.lists(edit, max_size=4), st.integers(0, n)))


def spec_text() -> st.SearchStrategy[str]:
    """Policy specs: a known name with random keys and values, or any text."""
    value = st.one_of(st.integers(-10, 10**20).map(str), st.floats(allow_nan=True).map(str), st.text(max_size=4))
    key = st.one_of(st.sampled_from(["k", "steps", "gamma", "lam", "tau", "metric", "eps", "sample"]), st.text(max_size=3))
    pairs = st.lists(st.tuples(key, value).map("=".join), max_size=3).map(",".join)
    known = st.tuples(st.sampled_from(sorted(POLICIES)), pairs).map(lambda t: f"{t[0]}:{t[1]}" if t[1] else t[0])
    return st.one_of(known, st.text(max_size=12))


NUMBER = st.one_of(st.integers(-(2**70), 2**70).map(str), st.floats(allow_nan=True, allow_infinity=True).map(str),
                   st.sampled_from(["", "0", "-1", "1e-45", "0x10", "1_000", " 3", "nan", "2147483648", str(2**64), "1e308"]))
VALID_SPECS = ["sequential", "topk:k=3", "random", "top_prob", "margin", "eb:gamma=0.5", "threshold:tau=0.9", "mi:gamma=1",
               "exact:gamma=1"]


def put(root: Path, name: str, content: bytes) -> Path:
    path = root / "inputs" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    return path


def sample_puzzles(root: Path) -> bytes:
    return (root / "puzzles.csv").read_bytes()


@FUZZ
@given(data=st.data())
def test_sudoku_eval_files(world, data):
    content = data.draw(mutated(sample_puzzles(world)))
    path = put(world, "puzzles.csv", content)
    run(["sudoku", "eval", "--puzzles", path, "--model", world / "sudoku-model", "--policy", "topk:k=20", "--json"], world,
        output=path)


@FUZZ
@given(spec=spec_text(), budget=st.one_of(st.none(), NUMBER), temperature=NUMBER, seed=NUMBER)
def test_sudoku_eval_specs_and_numbers(world, spec, budget, temperature, seed):
    argv = ["sudoku", "eval", "--puzzles", world / "puzzles.csv", "--model", world / "sudoku-model", "--json",
            f"--policy={spec}", f"--temperature={temperature}", f"--seed={seed}"]
    run(argv + ([] if budget is None else [f"--budget={budget}"]), world)


@settings(FUZZ, max_examples=60)
@given(spec=st.sampled_from(VALID_SPECS), flag=st.sampled_from(["--budget", "--temperature", "--seed", "--batch-size"]),
       value=NUMBER)
def test_sudoku_eval_numbers(world, spec, flag, value):
    # one number at a time, the others valid, so that each reaches the code that uses it
    run(["sudoku", "eval", "--puzzles", world / "puzzles.csv", "--model", world / "sudoku-model", "--json",
         f"--policy={spec}", f"{flag}={value}"], world)


@settings(FUZZ, max_examples=15)
@given(command=st.sampled_from(["sudoku generate --n 2", "maths generate --n 2", "sudoku train --steps 1", "mi data --states 2"]),
       flag=st.sampled_from(["--seed", "--n", "--steps", "--operations", "--states", "--rows", "--eval-every", "--lr"]),
       value=NUMBER)
def test_numbers_of_other_commands(world, command, flag, value):
    out = world / "inputs" / "numbers-out"
    argv = command.split() + [f"{flag}={value}", "--out", out]
    if "train" in command or "mi data" in command:
        argv += ["--data" if "train" in command else "--puzzles", world / "puzzles.csv"]
        argv += TINY_SHAPE if "train" in command else ["--model", world / "sudoku-model", "--shard-size", "2", "--rows", "1"]
    run(argv, world, output=world / "inputs")
    import shutil

    shutil.rmtree(out, ignore_errors=True) if out.is_dir() else out.unlink(missing_ok=True)


@FUZZ
@given(data=st.data())
def test_maths_eval_files(world, data):
    content = data.draw(mutated((world / "problems.jsonl").read_bytes()))
    path = put(world, "problems.jsonl", content)
    run(["maths", "eval", "--problems", path, "--model", world / "maths-model", "--policy", "topk:k=24", "--json"], world,
        output=path)


@FUZZ
@given(data=st.data(), cell=st.one_of(st.none(), st.text(max_size=6)), index=NUMBER, eps=NUMBER)
def test_mi_map_inputs(world, data, cell, index, eps):
    content = data.draw(mutated(sample_puzzles(world)))
    path = put(world, "map.csv", content)
    out = world / "inputs" / "map.png"
    argv = ["mi", "map", "--puzzle", path, "--model", world / "sudoku-model", "--exact", f"--index={index}",
            f"--eps={eps}", "--out", out]
    run(argv + ([] if cell is None else [f"--cell={cell}"]), world, output=world / "inputs")


@FUZZ
@given(data=st.data(), which=st.sampled_from(["--generated", "--reference"]))
def test_protein_eval_files(world, data, which):
    valid = b">p1 a protein\nMKVLAAGICLLWSS\nPQRT\n>p2\nACDEFGHIKLMNPQRSTVWY\n"
    good = put(world, "good.fasta", valid)
    bad = put(world, "bad.fasta", data.draw(mutated(valid)))
    other = "--reference" if which == "--generated" else "--generated"
    run(["proteins", "eval", which, bad, other, good, "--json"], world, output=world / "inputs")


@settings(FUZZ, max_examples=10)
@given(data=st.data(), task=st.sampled_from(["sudoku", "maths"]))
def test_train_data_files(world, data, task):
    valid = sample_puzzles(world) if task == "sudoku" else (world / "problems.jsonl").read_bytes()
    path = put(world, "train.data", data.draw(mutated(valid)))
    out = world / "inputs" / "run"
    argv = [task, "train", "--data", path, "--out", out, "--steps", "1", *TINY_SHAPE]
    if task == "maths":
        argv += ["--prompt-len", "144", "--answer-len", "48"]
    run(argv, world, output=world / "inputs")
    import shutil

    shutil.rmtree(out, ignore_errors=True)


@settings(FUZZ, max_examples=15)
@given(data=st.data(), which=st.sampled_from(["config.json", "model.safetensors"]))
def test_broken_model_files(world, data, which):
    model = world / "inputs" / "model"
    model.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        (model / name).write_bytes((world / "sudoku-model" / name).read_bytes())
    original = (model / which).read_bytes()
    (model / which).write_bytes(data.draw(mutated(original[:400] if which == "model.safetensors" else original)))
    run(["sudoku", "eval", "--puzzles", world / "puzzles.csv", "--model", model, "--json"], world, output=world / "inputs")


def test_the_shipped_models_are_untouched_by_the_fuzzing(world):
    # Runs after the fuzz tests above (file order): none of them may have written into unmask/models.
    assert SHIPPED_BEFORE and digest(SHIPPED_MODELS) == SHIPPED_BEFORE
