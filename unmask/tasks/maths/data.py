"""Maths problem files (GSM8K JSONL schema) and the gsm_symbolic word problems of reasoning-gym.

A file holds one JSON object per line with ``question`` and ``answer``, where ``answer`` is the
worked solution ending in ``#### <number>`` — the schema of GSM8K itself, so a user's GSM8K copy
loads unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from unmask.errors import UnmaskError
from unmask.io import atomic_write, dumps_strict, read_text
from unmask.tasks.maths.answer import extract_answer
from unmask.tasks.maths.arith import ArithConfig, Problem, generate

# Characters of reasoning-gym's worked solutions outside printable ASCII, and their ASCII forms.
ASCII_FORMS = {"×": "*", "÷": "/", "•": "-", "−": "-", "–": "-", "—": "-", "’": "'", "‘": "'", "“": '"', "”": '"',
               "…": "...", "\u00a0": " ", "£": "$", "€": "$", "°": " degrees"}
SUFFIX = " Give the result as your final answer. Do not include units."


def to_ascii(text: str) -> str:
    """Replace the known non-ASCII symbols by their ASCII forms (others are left, and refused later)."""
    return "".join(ASCII_FORMS.get(c, c) for c in text)


def write_problems(path: str | os.PathLike, problems: list[Problem]) -> None:
    """Write GSM8K-style JSONL atomically."""
    text = "".join(dumps_strict({"question": p.question, "answer": p.solution}) + "\n" for p in problems)
    atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def read_problems(path: str | os.PathLike) -> list[Problem]:
    """Read GSM8K-style JSONL; UnmaskError naming the file and line for any problem."""
    content = read_text(path)  # (before Path, which turns '' into '.')
    path = Path(path)
    out = []
    for line, text in enumerate(content.splitlines(), start=1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise UnmaskError(f"{path}:{line}: not JSON ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not isinstance(row.get("answer"), str):
            raise UnmaskError(f"{path}:{line}: needs string fields 'question' and 'answer'")
        markers = row["answer"].count("####")
        if markers > 1:  # GSM8K's convention is one; which one a score should read is not for us to guess
            raise UnmaskError(f"{path}:{line}: the answer has {markers} '####' final answers; give one")
        value = extract_answer(row["answer"])
        if value is None:
            raise UnmaskError(f"{path}:{line}: the answer has no '#### <number>' final answer")
        out.append(Problem(row["question"], row["answer"], value))
    if not out:
        raise UnmaskError(f"{path}: no problems")
    return out


def gsm_symbolic(n: int, seed: int, test: bool, test_every: int = 5) -> list[Problem]:
    """``n`` gsm_symbolic problems (reasoning-gym), split by template so test templates are unseen.

    Templates whose number is a multiple of ``test_every`` form the test split; the others train.
    Needs ``pip install 'unmask[gsm]'`` (reasoning-gym runs offline).
    """
    if n < 1:
        raise UnmaskError(f"need n >= 1, got n={n}")
    out = []
    for _, entry in gsm_entries(seed, test, test_every):
        meta = entry["metadata"]
        solution = to_ascii(meta.get("answer_cot") or "").strip()
        if "####" not in solution:
            solution = f"{solution}\n#### {entry['answer']}".strip()
        value = extract_answer(solution)
        question = to_ascii(entry["question"].replace(SUFFIX, ""))
        if value is not None and (question + solution).isascii():  # skip the rare exotic symbol
            out.append(Problem(question, solution, value))
        if len(out) == n:
            return out
    raise AssertionError("unreachable: gsm_entries never ends")


def gsm_entries(seed: int, test: bool, test_every: int = 5):
    """(template number, reasoning-gym entry) pairs of one split's templates, endless, in dataset order.

    reasoning-gym draws item ``idx``'s template as ``task_indices[idx]`` (its ``source_index`` is only
    the position), so the split reads the template from there and builds only the entries it keeps.
    """
    if seed < 0 or not 2 <= test_every <= 20:
        raise UnmaskError(f"need seed >= 0 and 2 <= test_every <= 20, got seed={seed}, test_every={test_every}")
    try:
        import reasoning_gym
    except ImportError:
        raise UnmaskError("gsm_symbolic problems need reasoning-gym: pip install 'unmask[gsm]'") from None
    start, size, templates = 0, 1024, []
    while True:  # a dataset of twice the size draws the same items first: go on where the last one ended
        ds = reasoning_gym.create_dataset("gsm_symbolic", size=size, seed=seed)
        if list(ds.task_indices[:start]) != templates:
            raise UnmaskError("this reasoning-gym version draws gsm_symbolic templates differently; pin reasoning-gym")
        templates = list(ds.task_indices)
        kept = [idx for idx in range(start, size) if (templates[idx] % test_every == 0) == test]
        if start == 0 and not kept:
            raise UnmaskError(f"no gsm_symbolic template is in the {'test' if test else 'train'} split "
                              f"of test_every={test_every}")
        for idx in kept:
            yield templates[idx], ds[idx]
        start, size = size, 2 * size


# The project's standard synthetic sets: name → (problems, seed). Questions seen in an earlier set are dropped.
STANDARD_SETS = {"train": (50_000, 1), "val": (500, 2), "test": (1_000, 3)}
STANDARD_SHAPE = (144, 48)  # question and answer positions of a model for the standard sets (ArithConfig())


def standard_sets(cfg: ArithConfig) -> dict[str, list[Problem]]:
    """The standard train/val/test problems of ``cfg``, later sets without questions seen before."""
    seen: set[str] = set()
    sets = {}
    for name, (n, seed) in STANDARD_SETS.items():
        sets[name] = [p for p in generate(cfg, n, seed) if p.question not in seen]
        seen |= {p.question for p in sets[name]}
    return sets


def problems_or_standard(path: str | os.PathLike | None, split: str, shape: tuple[int, int] = STANDARD_SHAPE) -> list[Problem]:
    """The problems of a JSONL file, or, without one, the standard ``split`` regenerated (seeded).

    ``shape`` is the model's (question, answer) positions: a model of another shape was trained on
    other problems (e.g. ``--operations 3``), so it must be given its file rather than silently scored here.
    """
    if path:
        return read_problems(path)
    if tuple(shape) != STANDARD_SHAPE:
        raise UnmaskError(f"a model with {shape[0]} + {shape[1]} positions was not made for the standard "
                          f"{split} split ({STANDARD_SHAPE[0]} + {STANDARD_SHAPE[1]}); pass --problems FILE")
    return standard_sets(ArithConfig())[split]
