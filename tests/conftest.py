"""Shared test helpers, as fixtures (no test imports another test file, nor this one).

Factories rather than objects where tests need several variants: ``make_model(seq_len, vocab, seed)``,
``make_joint(seq_len, vocab, seed, alpha)``, ``make_sudoku_model()``, ``masked_batch(b, n, vocab, seed)``,
``sudoku_files`` (a saved small Sudoku model and a puzzle file),
``empirical_tv(oracle, spec, n)``, ``cli(argv) -> (exit code, stdout, stderr)`` (the CLI in-process).
"""

from __future__ import annotations

import pytest
import torch

from unmask.model import ModelConfig, TransformerDenoiser
from unmask.oracle import JointDenoiser

# Fixtures kept in modules of their own (one conftest.py only: several would all be imported as ``conftest``,
# and a worker process could not unpickle this one's functions).
pytest_plugins = ["tests.fixtures.seq_models", "tests.fixtures.protein_models"]

torch.set_num_threads(1)


def _tiny_model(seq_len: int = 16, vocab: int = 4, seed: int = 0) -> TransformerDenoiser:
    """A randomly initialised 2-layer transformer with sharpened logits (varied confidences)."""
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab, mask_id=vocab, seq_len=seq_len, d_model=32, n_layers=2, n_heads=2, d_ff=64)
    model = TransformerDenoiser(cfg).eval()
    with torch.no_grad():
        model.head.weight.mul_(200.0)  # random init gives near-uniform outputs; spread them out
    return model


def _random_joint(seq_len: int = 4, vocab: int = 3, seed: int = 0, alpha: float = 0.3) -> JointDenoiser:
    """An oracle over a random peaked joint distribution (Dirichlet-like)."""
    g = torch.Generator().manual_seed(seed)
    p = torch.rand((vocab,) * seq_len, generator=g, dtype=torch.float64) ** (1 / alpha)
    return JointDenoiser(p / p.sum())


def _small_sudoku_model() -> TransformerDenoiser:
    """A 1-layer, width-16 model of the Sudoku shape (random weights: fast CLI tests)."""
    from unmask.tasks.sudoku.data import POSITION_FEATURES
    from unmask.tasks.sudoku.task import default_model_config

    cfg = default_model_config()
    cfg.d_model, cfg.n_layers, cfg.d_ff, cfg.n_heads = 16, 1, 32, 2
    torch.manual_seed(0)
    return TransformerDenoiser(cfg, POSITION_FEATURES).eval()


def _masked_batch(b: int, n: int, vocab: int, seed: int = 0) -> torch.Tensor:
    """Random ids with a mask ratio rising from 0 (first row fully given) to 1 (last row fully masked)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(vocab, (b, n), generator=g)
    ratio = torch.linspace(0, 1, b)[:, None]
    mask = torch.rand(b, n, generator=g) < ratio
    mask[-1] = True
    return torch.where(mask, torch.full_like(tokens, vocab), tokens)


def _empirical_tv(oracle: JointDenoiser, spec: str, n: int = 3000) -> float:
    """Total variation between sequences decoded at temperature 1 by ``spec`` and the oracle's joint."""
    from unmask.decode import TokenRule, decode
    from unmask.policies import parse_policy

    tokens = torch.full((n, oracle.seq_len), oracle.mask_id)
    out = decode(oracle, tokens, parse_policy(spec), TokenRule(1.0), seeds=torch.arange(n)).tokens
    v = oracle.vocab_size
    index = (out * v ** torch.arange(oracle.seq_len - 1, -1, -1)).sum(1)
    freq = torch.bincount(index, minlength=v**oracle.seq_len).double() / n
    return 0.5 * float((freq - oracle.joint.reshape(-1)).abs().sum())


@pytest.fixture
def make_model():
    return _tiny_model


@pytest.fixture
def make_joint():
    return _random_joint


@pytest.fixture
def make_sudoku_model():
    return _small_sudoku_model


@pytest.fixture
def sudoku_files(tmp_path):
    """``(model_dir, puzzles)``: the small random Sudoku model saved, and 6 generated puzzles (CLI tests)."""
    from unmask.cli import main
    from unmask.model import save_model

    model_dir = tmp_path / "model"
    save_model(_small_sudoku_model(), model_dir)
    puzzles = tmp_path / "p.csv"
    assert main(["sudoku", "generate", "--n", "6", "--seed", "3", "--out", str(puzzles)]) == 0
    return model_dir, puzzles


@pytest.fixture
def sudoku_benchmark_inputs(tmp_path, sudoku_files):
    """``(model_dir, data_dir)``: the small Sudoku model with a random relu MI head beside it, and a
    ``--data-dir`` whose ``test-kaggle`` and ``test-hard`` sets are the 6 puzzles (benchmark scripts)."""
    import shutil

    from unmask.mi.estimator import HeadConfig, MIHead, save_head

    model_dir, puzzles = sudoku_files
    data = tmp_path / "sudoku"
    data.mkdir()
    for name in ("test-kaggle", "test-hard"):
        shutil.copy(puzzles, data / f"{name}.csv")
    torch.manual_seed(0)
    save_head(MIHead(HeadConfig(d_in=16, d_hidden=8, rank=4, link="relu")), model_dir)
    return model_dir, data


@pytest.fixture
def sudoku_few_blanks_inputs(sudoku_benchmark_inputs):
    """As ``sudoku_benchmark_inputs``, but every puzzle keeps only its first 12 blanks (the others filled
    from its solution): for scripts that decode with the exact-MI oracle, whose passes grow with the
    square of the blanks (1 + N·|V| a step, N steps)."""
    model_dir, data = sudoku_benchmark_inputs
    for name in ("test-kaggle", "test-hard"):
        path = data / f"{name}.csv"
        header, *rows = path.read_text().splitlines()
        out = [header]
        for row in rows:
            quiz, solution = row.split(",")
            blanks = [i for i, c in enumerate(quiz) if c == "0"][12:]  # the blanks to fill
            out.append("".join(solution[i] if i in blanks else c for i, c in enumerate(quiz)) + "," + solution)
        path.write_text("\n".join(out) + "\n")
    return model_dir, data


@pytest.fixture
def masked_batch():
    return _masked_batch


@pytest.fixture
def empirical_tv():
    return _empirical_tv


@pytest.fixture
def model() -> TransformerDenoiser:
    return _tiny_model()


@pytest.fixture
def oracle() -> JointDenoiser:
    return _random_joint()


@pytest.fixture(scope="session")
def hf_model_dir(tmp_path_factory):
    """A tiny random BertForMaskedLM + word-level tokenizer saved as a local Hugging Face directory."""
    transformers = pytest.importorskip("transformers")
    d = tmp_path_factory.mktemp("tiny-mdm")
    words = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("0123456789+-*=.#:?")
             + ["question", "answer", "has", "how", "many"])
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)])
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=core, pad_token="[PAD]", unk_token="[UNK]",
                                               mask_token="[MASK]", eos_token="[SEP]")
    tok.save_pretrained(d)
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=512)
    transformers.BertForMaskedLM(cfg).save_pretrained(d)
    return d


@pytest.fixture
def cli(capsys):
    """Run ``unmask ARGV`` in-process: ``cli(argv) -> (exit code, stdout, stderr)``."""
    from unmask.cli import main

    def run(argv) -> tuple[int, str, str]:
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
