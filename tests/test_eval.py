"""Helpers every benchmark shares: Markdown tables and the paths its results record."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from unmask.eval import (
    bootstrap_weights,
    frontier,
    markdown_table,
    mixture_frontier,
    mixture_gap_interval,
    row_gap_interval,
    shown_path,
)


def test_markdown_table_rounds_floats_and_blanks_missing_cells():
    table = markdown_table([{"a": 0.123456, "b": 12345.6}, {"a": None}], ["a", "b"])
    assert table.splitlines() == ["| a | b |", "|---|---|", "| 0.123 | 12346 |", "|  |  |"]


def test_markdown_table_keeps_a_pipe_inside_its_cell():
    # Bug caught: a head named "P(X_i | C)" split its row into one cell too many.
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_readme",
                                                  Path(__file__).parents[1] / "benchmarks" / "tools" / "check_readme.py")
    check_readme = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = check_readme
    spec.loader.exec_module(check_readme)
    table = markdown_table([{"head": "P(X_i | C)", "n": 3}], ["head", "n"])
    (t,) = check_readme.tables(table)
    assert t.rows == [["P(X_i | C)", "3"]]


def test_shown_path_is_relative_inside_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "models" / "m").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "models" / "m") == "models/m"
    assert shown_path("models/m") == "models/m"
    outside = tmp_path.parent / "elsewhere"
    assert shown_path(outside) == str(outside)  # outside: kept as given, never a '../' chain


def rows_of(*points):
    return [{"mean_nfe": x, "accuracy %": y} for x, y in points]


def test_step_and_mixture_frontiers_on_a_hand_made_family():
    rows = rows_of((1.0, 50.0), (2.0, 60.0), (3.0, 90.0), (3.0, 80.0), (4.0, 85.0), (5.0, 95.0))
    assert frontier(rows, 0.9) is None and frontier(rows, 2.5) == 60.0 and frontier(rows, 10) == 95.0
    assert mixture_frontier(rows, 0.9) is None
    # (2, 60) lies under the chord from (1, 50) to (3, 90): a coin flip between those two beats it
    assert mixture_frontier(rows, 2.0) == pytest.approx(70.0)
    assert mixture_frontier(rows, 1.5) == pytest.approx(60.0)
    assert mixture_frontier(rows, 3.0) == pytest.approx(90.0)  # the better of two rows at the same NFE
    assert mixture_frontier(rows, 4.0) == pytest.approx(92.5)  # (4, 85) is dominated by the chord to (5, 95)
    assert mixture_frontier(rows, 7.0) == pytest.approx(95.0)  # flat past the best


points = st.lists(st.tuples(st.floats(1, 20), st.floats(0, 100)), min_size=1, max_size=12)


@given(points, st.floats(0.5, 25))
def test_the_mixture_frontier_is_at_least_the_step_frontier_and_achievable(pts, n):
    rows = rows_of(*pts)
    step, mix = frontier(rows, n), mixture_frontier(rows, n)
    assert (step is None) == (mix is None)
    if mix is not None:
        assert mix >= step - 1e-6  # mixing can only help
        assert mix <= max(y for _, y in pts) + 1e-6
        # achievable: some two rows, one at most n and one at least n (or the best row, past it), mix to it
        below = [(x, y) for x, y in pts if x <= n + 1e-9]
        above = [(x, y) for x, y in pts if x >= n - 1e-9]
        best = max(
            [y0 + (y1 - y0) * (n - x0) / (x1 - x0) if x1 > x0 else max(y0, y1) for x0, y0 in below for x1, y1 in above]
            + [max(y for _, y in below)])
        assert mix == pytest.approx(best, abs=1e-6)


def family(solved: list[list[int]], nfe: list[list[float]]) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(solved, dtype=torch.bool), torch.tensor(nfe)


def test_a_family_against_itself_gains_nothing_in_any_resample():
    # Bug caught: drawing the two families' resamples apart (unpaired) gives nonzero gaps here.
    g = torch.Generator().manual_seed(0)
    base = family(torch.randint(2, (4, 60), generator=g).tolist(), (1 + torch.randint(8, (4, 60), generator=g)).tolist())
    for r in mixture_gap_interval(base, base, [2.0, 4.0, 6.0], resamples=200):
        assert r["gap"] == r["low"] == r["high"] == 0.0 and r["share_ahead"] == 0.0


def test_the_drawn_gap_is_the_difference_of_the_two_mixture_frontiers():
    g = torch.Generator().manual_seed(1)
    base = family(torch.randint(2, (3, 40), generator=g).tolist(), (1 + torch.randint(6, (3, 40), generator=g)).tolist())
    other = family(torch.randint(2, (4, 40), generator=g).tolist(), (1 + torch.randint(6, (4, 40), generator=g)).tolist())

    def rows(f):
        return [{"mean_nfe": float(n.double().mean()), "accuracy %": 100 * float(s.double().mean())} for s, n in zip(*f)]

    out = mixture_gap_interval(base, other, [4.0, 4.5, 6.0], resamples=50)
    assert [r["nfe"] for r in out] == [4.0, 4.5, 6.0]  # (rows cost 3.5 passes on average: all three are read)
    for r in out:
        want = mixture_frontier(rows(other), r["nfe"]) - mixture_frontier(rows(base), r["nfe"])
        assert r["gap"] == pytest.approx(want)
        assert r["low"] <= r["high"]


def explicit_resamples(n: int, resamples: int, seed: int = 0) -> list[list[int]]:
    """The examples of each resample as a list (what :func:`bootstrap_weights` counts), drawn here by hand."""
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(n, (n,), generator=gen).tolist() for _ in range(resamples)]


def rows_on(f, examples: list[int]) -> list[dict]:
    """A family's rows rebuilt on an explicit list of examples (repeats counted again)."""
    return [{"mean_nfe": sum(float(n[e]) for e in examples) / len(examples),
             "accuracy %": 100 * sum(bool(s[e]) for e in examples) / len(examples)} for s, n in zip(*f)]


def test_bootstrap_weights_count_each_draw_and_start_with_the_examples_as_they_are():
    w = bootstrap_weights(7, 5, seed=3)
    assert w.shape == (6, 7) and w[0].tolist() == [1.0] * 7 and (w.sum(1) == 7).all()
    for row, draw in zip(w[1:], explicit_resamples(7, 5, seed=3)):
        assert row.tolist() == [float(draw.count(k)) for k in range(7)]


def test_the_interval_is_the_percentiles_of_the_gaps_rebuilt_from_explicit_resamples():
    # An independent recomputation: each resample's examples listed, both families' rows rebuilt on them
    # (costs too), mixture_frontier read off them, numpy-style linear percentiles at 2.5 and 97.5.
    # Bugs caught: costs left unresampled, the wrong percentile levels, the drawn gap mixed into the
    # resamples, resamples not paired.
    g = torch.Generator().manual_seed(4)
    base = family(torch.randint(2, (3, 30), generator=g).tolist(), (1 + torch.randint(6, (3, 30), generator=g)).tolist())
    other = family(torch.randint(2, (2, 30), generator=g).tolist(), (1 + torch.randint(6, (2, 30), generator=g)).tolist())
    (got,) = mixture_gap_interval(base, other, [4.0], resamples=80, seed=2)
    gaps = []
    for draw in explicit_resamples(30, 80, seed=2):
        b, o = mixture_frontier(rows_on(base, draw), 4.0), mixture_frontier(rows_on(other, draw), 4.0)
        if b is not None and o is not None:
            gaps.append(o - b)
    want = torch.quantile(torch.tensor(gaps, dtype=torch.float64), torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
    assert (got["low"], got["high"]) == pytest.approx(want)
    assert got["share_ahead"] == pytest.approx(sum(x > 0 for x in gaps) / len(gaps))
    assert got["defined"] == pytest.approx(len(gaps) / 80)


def test_a_row_gap_is_the_row_against_the_base_hull_at_its_own_cost_in_every_draw():
    g = torch.Generator().manual_seed(5)
    base = family(torch.randint(2, (4, 25), generator=g).tolist(), (2 + torch.randint(6, (4, 25), generator=g)).tolist())
    other = family(torch.randint(2, (2, 25), generator=g).tolist(), (4 + torch.randint(4, (2, 25), generator=g)).tolist())
    got = row_gap_interval(base, other, resamples=60, seed=1)
    assert [r["row"] for r in got] == [0, 1]
    for r in got:
        mine = rows_on(other, list(range(25)))[r["row"]]
        assert (r["nfe"], r["accuracy %"]) == pytest.approx((mine["mean_nfe"], mine["accuracy %"]))
        assert r["gap"] == pytest.approx(mine["accuracy %"] - mixture_frontier(rows_on(base, list(range(25))), mine["mean_nfe"]))
        gaps = []
        for draw in explicit_resamples(25, 60, seed=1):
            row = rows_on(other, draw)[r["row"]]
            b = mixture_frontier(rows_on(base, draw), row["mean_nfe"])
            if b is not None:
                gaps.append(row["accuracy %"] - b)
        want = torch.quantile(torch.tensor(gaps, dtype=torch.float64), torch.tensor([0.025, 0.975], dtype=torch.float64)).tolist()
        assert (r["low"], r["high"]) == pytest.approx(want)


def test_one_more_example_solved_at_the_same_cost_is_a_gap_of_one_example_everywhere():
    # Bug caught: accuracies scaled by the resample's size wrongly (or not in points).
    base = family([[1, 0, 0, 1, 0], [1, 1, 0, 1, 0]], [[1, 1, 1, 1, 1], [3, 3, 3, 3, 3]])
    other = family([[1, 0, 1, 1, 0], [1, 1, 1, 1, 0]], [[1, 1, 1, 1, 1], [3, 3, 3, 3, 3]])
    out = mixture_gap_interval(base, other, [1.0, 2.0, 3.0, 5.0], resamples=300)
    assert [r["gap"] for r in out] == pytest.approx([20.0] * 4)
    assert all(r["low"] >= 0 for r in out)  # in no resample is it behind
    assert all(0 < r["share_ahead"] < 1 for r in out)  # the example it gains is missing from some resamples


def test_points_below_either_familys_cheapest_row_are_left_out_and_examples_must_match():
    base = family([[1, 0], [1, 1]], [[2, 2], [4, 4]])
    other = family([[1, 1]], [[3, 3]])
    assert [r["nfe"] for r in mixture_gap_interval(base, other, [1.0, 2.5, 3.0], resamples=20)] == [3.0]
    with pytest.raises(ValueError, match="examples"):
        mixture_gap_interval(base, family([[1, 1, 0]], [[3, 3, 3]]), [3.0])


def test_compare_takes_measured_rows_from_its_cache_and_measures_the_rest(tmp_path, monkeypatch):
    import unmask.eval as ev
    from unmask.runs import RowCache

    measured = []

    def fake_evaluate(task, denoiser, examples, policy, batch_size=250):
        measured.append((examples, ev.policy_spec(policy)))
        return {"accuracy": len(measured) / 10, "mean_nfe": 1.0}

    monkeypatch.setattr(ev, "evaluate", fake_evaluate)
    sets = {"a": "A", "b": "B"}
    path = tmp_path / "c.partial.jsonl"
    first = ev.compare(None, None, sets, ["sequential", "topk:k=2"], progress=False, cache=RowCache(path, {"model": "m"}))
    assert len(measured) == 4
    again = ev.compare(None, None, sets, ["sequential", "topk:k=2", "topk:k=3"], progress=False,
                       cache=RowCache(path, {"model": "m"}))
    assert again[:2] == first[:2] and again[3] == first[2]  # taken from the cache, in the order asked
    k3 = ev.policy_spec(ev.parse_policy("topk:k=3"))
    assert measured[4:] == [("A", k3), ("B", k3)]  # only the new policy is measured
    ev.compare(None, None, sets, ["sequential"], progress=False, cache=RowCache(path, {"model": "other"}))
    assert len(measured) == 8  # another model: measured afresh


def test_results_cache_misses_when_the_examples_a_head_or_the_settings_change(tmp_path):
    # Bugs caught: a context that leaves out the example files, a missing file, what else the model
    # folder holds (an MI head a policy loads), or the settings.
    from unmask.eval import results_cache

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"w")
    (model / "notes.txt").write_text("not an artifact")
    data = tmp_path / "set.csv"
    data.write_text("a")
    out = tmp_path / "out"

    def cache(**settings):
        return results_cache(out, "bench", model, [data, tmp_path / "absent.csv"], **settings)

    cache(n=4).put({"row": 1}, {"v": 1})
    assert cache(n=4).get({"row": 1}) == {"v": 1}
    assert cache(n=5).get({"row": 1}) is None
    (model / "notes.txt").write_text("edited")  # not something a policy loads
    assert cache(n=4).get({"row": 1}) == {"v": 1}
    assert results_cache(out, "bench", model, [data], n=4).get({"row": 1}) is None  # a missing file still counts
    (tmp_path / "absent.csv").write_text("now here")
    assert cache(n=4).get({"row": 1}) is None
    (tmp_path / "absent.csv").unlink()
    data.write_text("b")
    assert cache(n=4).get({"row": 1}) is None
    data.write_text("a")
    (model / "mi_head.safetensors").write_bytes(b"h")
    assert cache(n=4).get({"row": 1}) is None
    assert (out / "bench.partial.jsonl").is_file()


def test_compare_refuses_to_cache_a_wrapping_policy(tmp_path):
    # Bug caught: a wrapper keyed by its own spec, which does not name the policy it wraps (two
    # block-wise decodes of different inner policies would share one cached row).
    import unmask.eval as ev
    from unmask.decode import SemiAR
    from unmask.runs import RowCache

    wrapped = SemiAR(ev.parse_policy("sequential"), 4, 0)
    with pytest.raises(ValueError, match="cannot be cached"):
        ev.compare(None, None, {"a": "A"}, [wrapped], progress=False, cache=RowCache(tmp_path / "c.jsonl", {}))
