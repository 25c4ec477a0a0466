"""A property test over the whole CLI: for every command that reads a file, a spec or a number, random
bytes, truncated and mutated valid files, random specs and numbers end in exit code 0 or 2 with at
most one line on stderr (progress bars and old-spelling notes aside), never an exception (in-process,
an escaping exception is what a user sees as a traceback), and never change a file other than the
named output. The library's ``decode`` gets the same treatment against malformed denoisers: each
either decodes as it should or raises one UnmaskError.

The commands run in-process on small random models, so the whole file stays well under a minute.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
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


def run(argv: list, root: Path, output: Path | None = None) -> int:
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
    return code


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


# --- outputs: special files, links, an output that is an input --------------------------------------

OUTPUT_COMMANDS = {  # each writes --out; the value names the flag of the file it reads (None: reads none)
    "sudoku eval": (["sudoku", "eval", "--policy", "topk:k=20", "--json"], "--puzzles"),
    "sudoku generate": (["sudoku", "generate", "--n", "2"], None),
    "maths generate": (["maths", "generate", "--n", "2"], "--exclude"),
}
SPECIAL = ["device", "fifo", "link to device", "link to fifo"]  # must stay what they are, written in place or refused
REFUSED = ["input", "link to input", "input through ..", "link to folder", "trailing slash", "empty"]  # exit 2, one line
CAN_MKNOD = os.geteuid() == 0  # a character device is made as root only (never the real /dev/null: one made in a temp folder)
OUTPUT_KINDS = SPECIAL + REFUSED + ["link to file", "dangling link"]


def special_output(folder: Path, kind: str, source: Path) -> Path:
    """The ``--out`` path of ``kind`` in ``folder``: ``source`` is the command's input file (a copy)."""
    if kind == "device":
        os.mknod(folder / "dev", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device of our own
        return folder / "dev"
    if kind == "fifo":
        os.mkfifo(folder / "fifo")
        return folder / "fifo"
    if kind.startswith("link to ") and kind != "link to input":
        name = kind.removeprefix("link to ")
        target = {"file": folder / "file", "folder": folder}.get(name) or special_output(folder, name, source)
        if name == "file":
            target.write_bytes(b"old")
        (folder / "link").symlink_to(target)
        return folder / "link"
    if kind == "dangling link":
        (folder / "link").symlink_to(folder / "nowhere")
        return folder / "link"
    if kind == "link to input":
        (folder / "link").symlink_to(source)
        return folder / "link"
    return {"input": source, "input through ..": folder / ".." / folder.name / source.name,
            "trailing slash": folder / "new", "empty": Path("")}[kind]  # (given as "new/" and "": Path drops both)


def every_kind(test):
    """``test`` run on every output kind once (the commands in turn), before the drawn examples."""
    commands = sorted(OUTPUT_COMMANDS)
    for k, kind in enumerate(OUTPUT_KINDS):
        test = example(command=commands[k % len(commands)], kind=kind)(test)
    return test


@settings(FUZZ, max_examples=2)  # (about 0.4 s a run: every kind once, then a few drawn pairs)
@given(command=st.sampled_from(sorted(OUTPUT_COMMANDS)), kind=st.sampled_from(OUTPUT_KINDS))
@every_kind
def test_outputs_never_replace_special_files_or_inputs(world, command, kind):
    # Bugs caught: --out onto a device (or a link to one) replacing it with a regular file (as root, /dev/null
    # broke the machine), a fifo or a link replaced; an output that is the command's input (directly, through
    # a link or ..) overwritten with exit 0; `--out dir/` writing a file `dir`. Each ends in exit 0 with the
    # special file still what it was, or exit 2 with one line, never a traceback.
    if "device" in kind and not CAN_MKNOD:
        return
    argv, reads = OUTPUT_COMMANDS[command]
    if kind in ("input", "link to input", "input through ..") and reads is None:
        kind = "trailing slash"  # (nothing read: nothing to overwrite)
    (world / "inputs").mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=world / "inputs"))
    source = folder / "input"
    source.write_bytes((world / ("puzzles.csv" if reads == "--puzzles" else "problems.jsonl")).read_bytes())
    out = special_output(folder, kind, source)
    argv = argv + ([reads, source] if reads else []) + (["--model", world / "sudoku-model"] if "eval" in command else [])
    reader = os.open(out, os.O_RDWR | os.O_NONBLOCK) if "fifo" in kind else None  # a pipe's write blocks without a reader
    try:
        given = {"empty": "", "trailing slash": f"{out}/"}.get(kind, str(out))
        code = run(argv + ["--out", given], world,
                   output=None if kind in REFUSED else folder)
    finally:
        if reader is not None:
            os.close(reader)
    if kind in REFUSED:
        assert code == 2, (command, kind)
    if kind in SPECIAL:
        assert stat.S_ISCHR(os.stat(out).st_mode) if "device" in kind else stat.S_ISFIFO(os.stat(out).st_mode), kind
    if kind.startswith("link") or kind == "dangling link":
        assert out.is_symlink(), kind  # the link stays a link (what it points to is written, or nothing)
    if kind == "trailing slash":
        assert not (folder / "new").exists()
    shutil.rmtree(folder)


# --- the library: decode against malformed denoisers ------------------------------------------------

DECODE_SPECS = ["sequential", "topk:k=3", "random:steps=2", "top_prob:steps=2", "margin:steps=3", "eb:gamma=0.5",
                "threshold:tau=0.9"]
REFUSED_OUTPUTS = {"extra_col", "missing_col", "drop_row", "drop_pos", "int_logits", "hidden_rank", "hidden_rows", "single"}


class BentDenoiser:
    """A small denoiser (a fixed table plus the context's mean token embedding) with its output bent by ``fault``."""

    def __init__(self, v: int, n: int, mask_inside: bool, seed: int, fault: str, p: int, j: int, ruled: torch.Tensor) -> None:
        g = torch.Generator().manual_seed(seed)
        self.vocab_size, self.mask_id, self.device = v, v - 1 if mask_inside else v, torch.device("cpu")
        self.table = 3 * torch.randn(n, v, generator=g)  # (L, V)
        self.embed = torch.randn(v + 1, v, generator=g)  # (V + 1, V): an id outside [0, V] raises IndexError here
        self.fault, self.p, self.j, self.ruled = fault, p, j, ruled

    def __call__(self, tokens: torch.Tensor):
        logits = self.table + self.embed[tokens].mean(1, keepdim=True)  # (B, L, V)
        hidden = torch.nn.functional.one_hot(tokens, self.vocab_size + 1).float()  # (B, L, V + 1)
        f, p, j = self.fault, self.p, self.j
        if f in ("nan", "posinf", "neginf_pos"):
            value = {"nan": float("nan"), "posinf": float("inf"), "neginf_pos": float("-inf")}[f]
            logits[:, p, j if f != "neginf_pos" else slice(None)] = value
        elif f == "neginf_entries":
            logits = logits.masked_fill(self.ruled, float("-inf"))
        bent = {"extra_col": lambda: (torch.cat([logits, logits[..., :1]], -1), hidden),
                "missing_col": lambda: (logits[..., 1:], hidden), "drop_row": lambda: (logits[1:], hidden[1:]),
                "drop_pos": lambda: (logits[:, 1:], hidden), "int_logits": lambda: (logits.long(), hidden),
                "hidden_rank": lambda: (logits, hidden[..., 0]), "hidden_rows": lambda: (logits, hidden[1:]),
                "single": lambda: logits}
        return bent[f]() if f in bent else (logits, hidden)


@pytest.mark.parametrize("fault", ["none", "nan", "posinf", "neginf_pos", "neginf_entries", *sorted(REFUSED_OUTPUTS)])
@settings(FUZZ, max_examples=15)
@given(data=st.data(), v=st.integers(2, 5), n=st.integers(1, 6), b=st.integers(1, 4), mask_inside=st.booleans(),
       bad_input=st.sampled_from([None] * 9 + ["ids above", "ids negative", "ids float", "ids 1d", "seeds short",
                                               "seeds long", "seeds float"]),
       seeds=st.sampled_from([None, "ok"]),
       spec=st.sampled_from(DECODE_SPECS), temperature=st.sampled_from([0.0, 1.0]))
def test_decode_refuses_malformed_denoisers_or_decodes_right(data, v, n, b, mask_inside, fault, bad_input, seeds, spec,
                                                             temperature):
    # Each draw either raises UnmaskError or decodes as the well-formed denoiser would (or, with ruled-out
    # tokens, never chooses one): never another exception, never silent garbage.
    from unmask.decode import TokenRule, decode, parse_policy
    from unmask.errors import UnmaskError

    mask_id = v - 1 if mask_inside else v
    values = [x for x in range(v) if x != mask_id] + [mask_id] * 2  # about 1 position in 2 masked
    tokens = torch.tensor(data.draw(st.lists(st.sampled_from(values), min_size=b * n, max_size=b * n))).reshape(b, n)
    p, j = data.draw(st.integers(0, n - 1)), data.draw(st.integers(0, v - 1))
    ruled = torch.tensor(data.draw(st.lists(st.booleans(), min_size=n * v, max_size=n * v))).reshape(n, v)
    masked = tokens == mask_id  # (B, L)
    dead = (ruled | (torch.arange(v) == mask_id)).all(1)  # (L,) positions left without a possible token
    runs = bool(masked.any())  # a forward pass happens at all
    refuse = runs and (fault in REFUSED_OUTPUTS or (fault in ("nan", "posinf") and j != mask_id)
                       or (fault == "neginf_pos" and bool(masked[:, p].any()))
                       or (fault == "neginf_entries" and bool((masked & dead).any())))
    given = {"ids above": lambda: tokens.index_put((torch.tensor(0), torch.tensor(p)), torch.tensor(v + 1 + j)),
             "ids negative": lambda: tokens.index_put((torch.tensor(0), torch.tensor(p)), torch.tensor(-1 - j)),
             "ids float": lambda: tokens.float(), "ids 1d": lambda: tokens.flatten()}.get(bad_input, lambda: tokens)()
    seeds = {"seeds short": "short", "seeds long": "long", "seeds float": "float"}.get(bad_input, seeds)
    seed_tensor = {None: None, "ok": torch.arange(b) + 7, "short": torch.arange(b - 1), "long": torch.arange(b + 1),
                   "float": torch.arange(b).float()}[seeds]
    refuse |= bad_input is not None  # an id past the model's inputs, ids of another rank or type, seeds not (B,) ints
    denoiser = BentDenoiser(v, n, mask_inside, 0, fault, p, j, ruled)
    policy, rule = parse_policy(spec), TokenRule(temperature)
    try:
        out = decode(denoiser, given, policy, rule, seed_tensor)
    except UnmaskError as e:
        assert refuse, (fault, bad_input, str(e))
        assert "\n" not in str(e)
        return
    assert not refuse, (fault, bad_input, "decoded without a word")
    assert torch.equal(out.tokens[~masked], tokens[~masked])
    assert ((out.tokens >= 0) & (out.tokens < v) & (out.tokens != mask_id))[masked].all()
    assert torch.equal(out.nfe == 0, ~masked.any(1)) and (out.nfe <= masked.sum(1)).all()
    if fault == "neginf_entries":
        pos = torch.arange(n).expand(b, n)
        assert not ruled[pos[masked], out.tokens[masked]].any()  # a ruled-out token is never chosen
    elif fault != "neginf_pos":  # the poison was never seen (no pass, or the mask column): the clean decode
        clean = decode(BentDenoiser(v, n, mask_inside, 0, "none", p, j, ruled), tokens, policy, rule, seed_tensor)
        assert torch.equal(out.tokens, clean.tokens) and torch.equal(out.nfe, clean.nfe)


def test_the_shipped_models_are_untouched_by_the_fuzzing(world):
    # Runs after the fuzz tests above (file order): none of them may have written into unmask/models.
    assert SHIPPED_BEFORE and digest(SHIPPED_MODELS) == SHIPPED_BEFORE
