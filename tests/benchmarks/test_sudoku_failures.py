"""benchmarks/mi/sudoku_failures.py: each failure cause on hand-made decodes of a scripted denoiser, and
the script end to end on a tiny model."""

from __future__ import annotations

import json

import pytest
import torch

from tests.benchmarks.scripts import load_script
from unmask.decode.loop import DecodeResult
from unmask.denoiser import DenoiserOutput

MASK = 4  # a mask id outside the 4 predictable digits 0..3
PEERS = torch.tensor([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], dtype=torch.bool)  # cells 0-1 and 2-3 are peers


class Scripted:
    """A denoiser whose argmax at each cell is ``rule(tokens)``; logits put 5 on that digit."""

    vocab_size, mask_id, device = 4, MASK, torch.device("cpu")

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, tokens: torch.Tensor) -> DenoiserOutput:
        choice = torch.stack([self.rule(t) for t in tokens])  # (B, L)
        return DenoiserOutput(5.0 * torch.nn.functional.one_hot(choice, 4).float(), torch.zeros(*tokens.shape, 2))


def result(tokens, steps) -> DecodeResult:
    tokens, steps = torch.tensor([tokens]), torch.tensor([steps])
    return DecodeResult(tokens, steps.amax(1) + 1, steps, torch.zeros(1, dtype=torch.long))


def causes(rule, tokens, steps, target):
    failures = load_script("sudoku_failures")
    out = failures.failure_causes(Scripted(rule), result(tokens, steps), torch.tensor([target]), PEERS)
    return {k: bool(v[0]) for k, v in out.causes.items()}


def test_a_correct_decode_has_no_cause():
    c = causes(lambda t: t.clamp_max(3), [0, 1, 2, 3], [0, 0, 1, 1], [0, 1, 2, 3])
    assert c["correct"] and not any(c[k] for k in ("clash", "fixed", "pairwise", "dependency", "own"))


def test_a_wrong_cell_fixed_by_its_right_step_mate_is_a_dependency_failure():
    # Pass 0 placed cells 2 (right, 2) and 3 (wrong, 0); the model gets cell 3 right once cell 2 is known.
    def rule(t):
        return torch.tensor([0, 1, 2, 3 if t[2] == 2 else 0])
    c = causes(rule, [0, 1, 2, 0], [-1, -1, 0, 0], [0, 1, 2, 3])
    assert c["fixed"] and c["pairwise"] and c["dependency"] and c["replayed"]
    assert not c["own"] and not c["clash"] and not c["correct"]


def test_a_wrong_cell_no_step_mate_fixes_is_an_own_error():
    c = causes(lambda t: torch.tensor([0, 1, 2, 0]), [0, 1, 2, 0], [-1, -1, 0, 0], [0, 1, 2, 3])
    assert c["own"] and c["replayed"] and not (c["fixed"] or c["pairwise"] or c["clash"] or c["dependency"])


def test_two_peers_placed_together_with_one_digit_clash():
    # Cells 2 and 3 are peers and both got 2 in pass 0; the rule never fixes anything.
    c = causes(lambda t: torch.tensor([0, 1, 2, 2]), [0, 1, 2, 2], [-1, -1, 0, 0], [0, 1, 2, 3])
    assert c["clash"] and c["dependency"] and not c["own"] and not c["fixed"]
    # The same digits in cells that are not peers (0 and 2) do not clash.
    c = causes(lambda t: torch.tensor([2, 1, 2, 3]), [2, 1, 2, 3], [0, -1, 0, -1], [0, 1, 2, 3])
    assert not c["clash"] and c["own"]


def test_only_the_first_wrong_pass_counts():
    # Pass 0 placed cell 2 right; pass 1 placed cell 3 wrong and alone: it has no step-mate to fix it.
    def rule(t):
        return torch.tensor([0, 1, 2, 0])
    c = causes(rule, [0, 1, 2, 0], [-1, -1, 0, 1], [0, 1, 2, 3])
    assert c["own"] and not c["dependency"]


def test_the_first_wrong_pass_decides_not_a_later_one():
    # Bug caught: the last wrong pass taken instead of the first. Pass 0 placed cell 0 wrong and alone (an
    # own error); pass 1 placed cell 3 wrong beside cell 2, which would fix it (a dependency failure).
    def rule(t):
        return torch.tensor([3, 1, 2, 3 if t[2] == 2 else 0])
    c = causes(rule, [3, 1, 2, 0], [0, 1, 1, 1], [0, 1, 2, 3])
    assert c["own"] and not (c["dependency"] or c["fixed"] or c["pairwise"]) and c["replayed"]


def test_a_digit_repeating_a_given_peer_is_no_clash():
    # Bug caught: clashes counted against given or earlier cells, not only cells of the same pass.
    # Cell 1 repeats given cell 0's digit; its step-mates 2 and 3 are no peers of it.
    c = causes(lambda t: torch.tensor([2, 2, 0, 3]), [2, 2, 0, 3], [-1, 0, 0, 0], [2, 1, 0, 3])
    assert not c["clash"] and c["own"]


def test_fixed_needs_all_step_mates_pairwise_needs_one():
    # Pass 0 placed cell 0 wrong beside cells 1 and 2, both right; cell 0 comes right only when both are known.
    def rule(t):
        return torch.tensor([0 if (t[1] == 1 and t[2] == 2) else 3, 1, 2, 3])
    c = causes(rule, [3, 1, 2, 3], [0, 0, 0, -1], [0, 1, 2, 3])
    assert c["fixed"] and not c["pairwise"] and c["dependency"]


def test_replay_flags_a_decode_the_model_would_not_make():
    c = causes(lambda t: torch.tensor([0, 1, 2, 1]), [0, 1, 2, 0], [-1, -1, -1, 0], [0, 1, 2, 3])
    assert not c["replayed"] and c["own"]


def test_failures_script_runs_on_a_tiny_model(tmp_path, sudoku_benchmark_inputs):
    failures = load_script("sudoku_failures")
    model_dir, data = sudoku_benchmark_inputs
    failures.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--out", str(tmp_path / "out")])
    rows = json.loads((tmp_path / "out" / "sudoku_failures.json").read_text())["rows"]
    assert len(rows) == 2 * sum(len(s) for s in failures.FAMILIES.values())
    for r in rows:
        assert r["accuracy %"] + r["dependency %"] + r["own %"] == 100.0
        assert r["replayed %"] == 100.0  # argmax decoding: the analysis's premise holds on a real model
    assert (tmp_path / "out" / "sudoku_failures.md").is_file() and (tmp_path / "out" / "sudoku_failures.png").is_file()


def test_culprit_pairs_are_ranked_among_their_states_pairs():
    # All four cells placed in pass 0; cell 3 is wrong, and right once cell 2 (right) is known.
    def rule(t):
        return torch.tensor([0, 1, 2, 3 if t[2] == 2 else 0])
    failures = load_script("sudoku_failures")
    found = failures.failure_causes(Scripted(rule), result([0, 1, 2, 0], [0, 0, 0, 0]), torch.tensor([[0, 1, 2, 3]]), PEERS)
    assert found.culprits.tolist() == [[0, 3, 2]] and (found.before == MASK).all()

    def head(hidden, probs):  # scores pair (2, 3) above the other five
        s = torch.zeros(4, 4)
        s[2, 3] = s[3, 2] = 1.0
        return s.expand(len(hidden), 4, 4)
    ranks = failures.culprit_ranks(Scripted(rule), head, found)
    assert ranks["head"].tolist() == [1.0]  # every other pair is below it
    # Knowing cell 2 moves cell 3's prediction but not its entropy: the paper's I is 0 for every pair (a
    # tie with all five others: the middle rank), while the probe joint's MI J sees the dependency.
    assert ranks["exact I"].tolist() == [0.5] and ranks["exact I zero"].tolist() == [True]
    assert ranks["exact J"].tolist() == [1.0] and ranks["exact J zero"].tolist() == [False]
    assert ranks["exact D"].tolist() == [1.0]  # revealing cell 2 moves cell 3's argmax: the largest influence
    ranks = failures.culprit_ranks(Scripted(rule), lambda hidden, probs: 1 - head(hidden, probs), found)
    assert ranks["head"].tolist() == [0.0]  # every other pair is above it


def test_failures_script_ranks_culprits_only_for_the_families_asked(tmp_path, sudoku_benchmark_inputs):
    failures = load_script("sudoku_failures")
    model_dir, data = sudoku_benchmark_inputs
    failures.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "3", "--culprits", "topk",
                   "--out", str(tmp_path / "out")])
    result = json.loads((tmp_path / "out" / "sudoku_failures.json").read_text())
    topk = [r["policy"] for r in result["rows"] if r["family"] == "topk"]
    assert [r["policy"] for r in result["culprits"]] == topk
    by_policy = {r["policy"]: r for r in result["rows"] if r["set"] == "test-kaggle"}
    for r in result["culprits"][: len(topk)]:  # a puzzle fixed by a single step-mate gives culprit pairs, and only then
        assert (r["culprit pairs"] > 0) == (by_policy[r["policy"]]["pairwise %"] > 0)


def test_failures_script_measures_only_the_families_named(tmp_path, sudoku_benchmark_inputs, capsys):
    failures = load_script("sudoku_failures")
    model_dir, data = sudoku_benchmark_inputs
    fixed = ["entropy order, fixed passes", "MI head λ=1, fixed passes"]
    failures.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "3", "--families", *fixed, "--culprits",
                   "--out", str(tmp_path / "out"), "--name", "fixed"])
    result = json.loads((tmp_path / "out" / "fixed.json").read_text())
    assert [(r["set"], r["family"]) for r in result["rows"]] == [
        (s, f) for s in failures.SETS for f in fixed for _ in failures.FIXED_PASSES]
    for r in result["rows"]:  # each takes exactly its S passes
        assert r["mean_nfe"] == int(r["policy"].split("steps=")[1].split(",")[0])
    assert result["families"] == fixed and result["culprits"] == []
    with pytest.raises(SystemExit) as e:  # culprits of a family not measured: refused, not silently empty
        failures.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "3", "--families", *fixed,
                       "--out", str(tmp_path / "out")])
    assert e.value.code == 2 and "--culprits entropy budget: not among --families" in capsys.readouterr().err
