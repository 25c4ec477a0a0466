"""Issue 50, "one device check" and "every trainer's numbers validated by its config": a device unmask
does not run on, a number out of its range, MI data with nothing to fit and ``sudoku generate
--standard`` with the flags of a single set are each refused before any work, in one line naming the
value, with nothing written.

Each test names the failure it was written for.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import pytest
import torch

from tests.cli_checks import refused
from unmask.cli import main
from unmask.errors import UnmaskError
from unmask.mi.fit import HeadTrainConfig, fit_head
from unmask.model import ModelConfig, resolve_device
from unmask.order.train import OrderTrainConfig
from unmask.tasks.maths.arith import ArithConfig
from unmask.train import TrainConfig


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` (folders too) with its bytes: what a refused command must leave as it was."""
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


@pytest.fixture
def inputs(sudoku_files, tmp_path, monkeypatch):
    """Small valid inputs of every task, the working directory in ``tmp_path`` (where default outputs land)."""
    model_dir, puzzles = sudoku_files
    problems = tmp_path / "problems.jsonl"
    assert main(["maths", "generate", "--n", "3", "--out", str(problems)]) == 0
    fasta = tmp_path / "proteins.fasta"
    fasta.write_text(">a\nMKTAYIAKQRQISFVKSHFSRQ\n>b\nMKVLAAGIVGLLLAVSSCSSQA\n")
    monkeypatch.chdir(tmp_path)
    return {"MODEL": model_dir, "PUZ": puzzles, "MATHS": problems, "FASTA": fasta, "OUT": tmp_path / "out"}


# --- one device check -----------------------------------------------------------------------------

SHORT = ["--steps", "1", "--warmup", "0"]
DEVICE_COMMANDS = {
    "sudoku eval": ["sudoku", "eval", "--puzzles", "PUZ", "--model", "MODEL", "--out", "OUT"],
    "sudoku demo": ["sudoku", "demo", "--model", "MODEL", "--n", "1"],
    "sudoku train": ["sudoku", "train", "--data", "PUZ", "--out", "OUT", *SHORT],
    "sudoku train-order": ["sudoku", "train-order", "--model", "MODEL", "--data", "PUZ", "--out", "OUT", *SHORT],
    "maths eval": ["maths", "eval", "--problems", "MATHS", "--out", "OUT"],
    "maths demo": ["maths", "demo", "--n", "1"],
    "maths train": ["maths", "train", "--data", "MATHS", "--out", "OUT", *SHORT],
    "maths train-order": ["maths", "train-order", "--data", "MATHS", "--out", "OUT", *SHORT],
    "proteins generate": ["proteins", "generate", "--n", "1", "--reference", "FASTA", "--out", "OUT"],
    "proteins infill": ["proteins", "infill", "--model", "hf:nowhere", "--antibodies", "FASTA", "--out", "OUT"],
    "proteins train": ["proteins", "train", "--data", "FASTA", "--out", "OUT", *SHORT],
}


@pytest.mark.parametrize("device", ["meta", "mps"])
@pytest.mark.parametrize("command", list(DEVICE_COMMANDS))
def test_a_device_unmask_does_not_run_on_is_one_line_before_any_work(inputs, tmp_path, capsys, command, device):
    # Failure: --device mps|xla|meta gave a traceback on every command, and `sudoku train` left an
    # empty run folder behind.
    argv = [inputs.get(a, a) for a in DEVICE_COMMANDS[command]] + ["--device", device]
    before = tree(tmp_path)
    refused(capsys, argv, f"device '{device}' is not supported: unmask runs on cpu, cuda or cuda:N")
    assert tree(tmp_path) == before and not inputs["OUT"].exists()


@pytest.mark.parametrize("name,message", [
    ("xla", "device 'xla' is not supported"),
    ("cpu:0", "device 'cpu:0' is not supported"),
    ("gpu0", "unknown device 'gpu0'"),
    ("", "unknown device ''"),
    ("cuda:x", "unknown device 'cuda:x'"),
])
def test_resolve_device_takes_cpu_cuda_and_cuda_n_only(name, message):
    with pytest.raises(UnmaskError, match=f"^{message}"):
        resolve_device(name)
    assert resolve_device("cpu") == torch.device("cpu") == resolve_device(torch.device("cpu"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusals of a machine without CUDA")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:7"])
def test_cuda_without_cuda_is_one_line(name):
    with pytest.raises(UnmaskError, match=f"^device '{name}': no CUDA device is available here$"):
        resolve_device(name)


def test_cuda_index_beyond_the_machine_is_one_line(monkeypatch):
    # Failure: cuda:N with N past the machine's devices was left to fail at the first tensor moved.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(UnmaskError, match=r"^device 'cuda:2': this machine has 2 CUDA devices \(cuda:0..cuda:1\)$"):
        resolve_device("cuda:2")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)


# --- every number validated by its config, the refusal naming the field and the value ------------

NAN, INF = math.nan, math.inf
BAD_NUMBERS = [  # (config, field, bad value): each alone, the other fields at their defaults
    *[(HeadTrainConfig, "lr", v) for v in (NAN, -1.0, 0.0, INF)],
    *[(HeadTrainConfig, "val_fraction", v) for v in (1.0, 1.5, NAN, -0.5, 0.0)],
    *[(HeadTrainConfig, "batch_size", v) for v in (-3, 0)],
    *[(HeadTrainConfig, "steps", v) for v in (0, -1)],
    (HeadTrainConfig, "rank", 0),
    (HeadTrainConfig, "d_hidden", 0),
    (HeadTrainConfig, "steps", 2.5),
    *[(TrainConfig, "lr", v) for v in (NAN, 0.0, INF)],
    (TrainConfig, "grad_clip", 0.0),
    (TrainConfig, "weight_decay", NAN),
    (TrainConfig, "weight_decay", -0.1),
    (TrainConfig, "min_lr_ratio", 1.5),
    (TrainConfig, "mask_min", NAN),
    (TrainConfig, "mask_max", 0.0),
    (TrainConfig, "suffix_prob", 2.0),
    (TrainConfig, "warmup", -1),
    (TrainConfig, "eval_every", 0),
    (TrainConfig, "batch_size", 0),
    (OrderTrainConfig, "lr", NAN),
    (OrderTrainConfig, "finetune_lr", INF),
    (OrderTrainConfig, "tau", 0.0),
    (OrderTrainConfig, "grad_clip", -1.0),
    (OrderTrainConfig, "min_lr_ratio", NAN),
    (OrderTrainConfig, "d_hidden", 0),
    (OrderTrainConfig, "budget", 0),
    (OrderTrainConfig, "samples", 1),
    (OrderTrainConfig, "step_cost", INF),
    (OrderTrainConfig, "step_cost", NAN),
    (ArithConfig, "digits", 7),
    (ArithConfig, "operations", 0),
    (ArithConfig, "max_factor", 1),
]


@pytest.mark.parametrize("cls,field,value", BAD_NUMBERS, ids=[f"{c.__name__}-{f}={v}" for c, f, v in BAD_NUMBERS])
def test_a_bad_number_is_refused_naming_its_field_and_value(cls, field, value):
    # Failure: trainer errors listed every bound without naming the wrong value (or took it: NaN
    # learning rates, an empty validation share), and ArithConfig printed its whole repr.
    with pytest.raises(UnmaskError) as e:
        cls(**{field: value})
    message = str(e.value)
    assert message.startswith(f"{field} must be ") and message.endswith(f"got {value}") and "\n" not in message
    assert cls.__name__ not in message


def test_warmup_longer_than_the_run_is_refused():
    # Failure: `sudoku train --warmup 100 --steps 2` trained two steps at 1 % and 2 % of the learning rate.
    for cls in (TrainConfig, OrderTrainConfig):
        with pytest.raises(UnmaskError, match=r"^warmup must be <= steps .*got warmup 100 > steps 2$"):
            cls(steps=2, warmup=100)
        assert cls(steps=2, warmup=2).warmup == 2  # a warm-up as long as the run is allowed


def test_model_shape_refusal_names_the_field():
    with pytest.raises(UnmaskError, match=r"^d_ff must be an integer >= 1, got 0$"):
        ModelConfig(vocab_size=4, mask_id=4, seq_len=8, d_ff=0)


@pytest.mark.parametrize("flags,message", [
    (["--lr", "nan"], "lr must be a finite number > 0, got nan"),
    (["--lr", "-1"], "lr must be a finite number > 0, got -1.0"),
    (["--lr", "0"], "lr must be a finite number > 0, got 0.0"),
    (["--lr", "inf"], "lr must be a finite number > 0, got inf"),
    (["--val-fraction", "1"], "val_fraction must be in (0, 1), got 1.0"),
    (["--val-fraction", "1.5"], "val_fraction must be in (0, 1), got 1.5"),
    (["--val-fraction", "nan"], "val_fraction must be in (0, 1), got nan"),
    (["--val-fraction", "-0.5"], "val_fraction must be in (0, 1), got -0.5"),
    (["--batch-size", "-3"], "batch_size must be an integer >= 1, got -3"),
    (["--batch-size", "0"], "batch_size must be an integer >= 1, got 0"),
    (["--steps", "0"], "steps must be an integer >= 1, got 0"),
    (["--steps", "-1"], "steps must be an integer >= 1, got -1"),
    (["--rank", "0"], "rank must be an integer >= 1, got 0"),
    (["--d-hidden", "0"], "d_hidden must be an integer >= 1, got 0"),
])
def test_mi_train_refuses_bad_numbers_before_any_work(inputs, tmp_path, capsys, flags, message):
    # Failure: tracebacks (--lr nan|-1, --val-fraction 1|1.5|nan, --batch-size -3) or heads saved with
    # NaN predictions (--steps 0|-1, --batch-size 0, --lr 0|inf, --val-fraction -0.5, --rank 0, --d-hidden 0).
    before = tree(tmp_path)
    refused(capsys, ["mi", "train", "--model", inputs["MODEL"], "--data", tmp_path / "nowhere", *flags], message)
    assert tree(tmp_path) == before  # no runs/mi-head-sudoku, no head


@pytest.mark.parametrize("argv,message", [
    (["sudoku", "train", "--data", "PUZ", "--out", "OUT", "--warmup", "100", "--steps", "2"], "got warmup 100 > steps 2"),
    (["sudoku", "train", "--data", "PUZ", "--out", "OUT", "--lr", "nan", *SHORT], "lr must be a finite number > 0, got nan"),
    (["sudoku", "train", "--data", "PUZ", "--out", "OUT", "--d-model", "0", *SHORT], "d_model must be an integer >= 1, got 0"),
    (["maths", "train", "--data", "MATHS", "--out", "OUT", "--mask-max", "0", *SHORT], "mask_max must be in (0, 1], got 0.0"),
    (["sudoku", "train-order", "--model", "MODEL", "--data", "PUZ", "--out", "OUT", "--d-hidden", "0", *SHORT],
     "d_hidden must be an integer >= 1, got 0"),
    (["maths", "train-order", "--data", "MATHS", "--out", "OUT", "--min-lr-ratio", "2", *SHORT],
     "min_lr_ratio must be in [0, 1], got 2.0"),
    (["maths", "generate", "--digits", "7", "--out", "OUT"], "digits must be an integer in 1..6, got 7"),
    (["maths", "generate", "--max-factor", "100", "--out", "OUT"], "max_factor must be an integer in 2..99, got 100"),
])
def test_trainers_and_generators_refuse_bad_numbers_in_one_line(inputs, tmp_path, capsys, argv, message):
    # Failures: `sudoku train --warmup 100 --steps 2` accepted; range errors printed an ArithConfig(...) repr.
    before = tree(tmp_path)
    line = refused(capsys, [inputs.get(a, a) for a in argv], message)
    assert "Config(" not in line
    assert tree(tmp_path) == before and not inputs["OUT"].exists()


# --- MI data with nothing to fit ---------------------------------------------------------------------


def test_mi_train_refuses_data_without_pairs(inputs, tmp_path, capsys):
    # Failure: `mi train` on MI data without a pair of masked positions saved an untrained head (exit 0).
    from unmask.tasks.sudoku.data import SudokuSet, read_puzzles, write_puzzles

    solved = read_puzzles(inputs["PUZ"])
    one_blank = solved.solutions.copy()
    one_blank[:, 0] = 0  # a single masked position per state: no pair
    write_puzzles(tmp_path / "one-blank.csv", SudokuSet(one_blank, solved.solutions))
    data = tmp_path / "mi-data"
    assert main(["mi", "data", "--puzzles", str(tmp_path / "one-blank.csv"), "--model", str(inputs["MODEL"]),
                 "--out", str(data), "--states", "4", "--shard-size", "4"]) == 0
    capsys.readouterr()
    before = tree(tmp_path)
    refused(capsys, ["mi", "train", "--model", inputs["MODEL"], "--data", data, "--steps", "2", "--out", tmp_path / "head"],
            "the MI data has no supervised pair")
    assert tree(tmp_path) == before


def test_fit_head_refuses_data_without_pairs_before_the_hidden_states(make_model):
    model = make_model(seq_len=4)
    tokens = torch.full((5, 4), model.mask_id)
    data = {"tokens": tokens, "rows": torch.zeros(5, 4, dtype=torch.bool), "mi": torch.zeros(5, 4, 4)}  # no computed row

    def no_forward(*_):
        raise AssertionError("the hidden states were computed before the refusal")

    with pytest.raises(UnmaskError, match=r"^the MI data has no supervised pair .* among its 3 training states"):
        fit_head(no_forward_model(model, no_forward), data, HeadTrainConfig(steps=1, batch_size=2), progress=False)
    data["rows"][:, 0] = True  # pairs now: the same data fits
    _, metrics = fit_head(model, data, HeadTrainConfig(steps=1, batch_size=2, d_hidden=4, rank=2), progress=False)
    assert metrics["train_states"] == 3


def no_forward_model(model, forward):
    """``model``'s mask id with a forward pass that must not run."""

    class Stub:
        mask_id = model.mask_id
        __call__ = staticmethod(forward)

    return Stub()


# --- sudoku generate --standard --------------------------------------------------------------------


@pytest.mark.parametrize("flags", [["--n", "5"], ["--seed", "1"], ["--kind", "hard"], ["--kind", "kaggle", "--n", "5"]])
def test_standard_sets_refuse_the_flags_of_a_single_set(tmp_path, capsys, monkeypatch, flags):
    # Failure: `sudoku generate --standard --n 5` ignored --n and spent minutes on 100,000 puzzles.
    monkeypatch.chdir(tmp_path)
    generator = importlib.import_module("unmask.tasks.sudoku.generate")  # (the package exports a function of that name)
    monkeypatch.setattr(generator, "generate", lambda *a, **k: pytest.fail("puzzles generated"))  # a regression fails fast
    given = ", ".join(f for f in flags if f.startswith("--"))
    refused(capsys, ["sudoku", "generate", "--standard", *flags, "--out", tmp_path / "std"],
            f"{given}: the --standard sets have fixed kinds, sizes and seeds")
    assert tree(tmp_path) == {}


def test_a_single_set_keeps_its_defaults(tmp_path):
    from unmask.tasks.sudoku.data import read_puzzles
    from unmask.tasks.sudoku.generate import generate

    assert main(["sudoku", "generate", "--n", "3", "--out", str(tmp_path / "p.csv")]) == 0
    expected = generate("kaggle", 3, 0, progress=False)  # --kind kaggle --seed 0 when not given
    assert (read_puzzles(tmp_path / "p.csv").quizzes == expected.quizzes).all()
