"""RowCache: what a long benchmark keeps so that a rerun after an interruption resumes."""

from __future__ import annotations

import json

from unmask.runs import RowCache


def test_a_stored_value_is_found_again_in_its_own_context_only(tmp_path):
    path = tmp_path / "bench.partial.jsonl"
    RowCache(path, {"model": "a", "n": 4}).put({"set": "s", "policy": "p"}, {"accuracy": 0.5, "mean_nfe": 3.25})
    assert RowCache(path, {"model": "a", "n": 4}).get({"set": "s", "policy": "p"}) == {"accuracy": 0.5, "mean_nfe": 3.25}
    assert RowCache(path, {"n": 4, "model": "a"}).get({"policy": "p", "set": "s"}) is not None  # order of keys does not matter
    assert RowCache(path, {"model": "b", "n": 4}).get({"set": "s", "policy": "p"}) is None  # another model
    assert RowCache(path, {"model": "a", "n": 5}).get({"set": "s", "policy": "p"}) is None  # another setting
    assert RowCache(path, {"model": "a", "n": 4}).get({"set": "s", "policy": "q"}) is None
    RowCache(path, {"n": 200}).put({"n": 250}, "x")
    assert RowCache(path, {"n": 999}).get({"n": 250}) is None  # a key never stands in for the context


def test_values_come_back_as_copies(tmp_path):
    cache = RowCache(tmp_path / "c.jsonl", {})
    cache.put({"k": 1}, {"a": [1]})
    cache.get({"k": 1})["a"].append(2)  # a caller changing what it got
    assert cache.get({"k": 1}) == {"a": [1]} and cache.hits == 2


def test_a_line_cut_by_a_kill_is_dropped_and_the_next_value_still_kept(tmp_path):
    path = tmp_path / "bench.partial.jsonl"
    RowCache(path, {}).put({"k": 1}, 1.0)
    with open(path, "a") as f:
        f.write('{"key": "{\\"k\\": 2}", "val')  # killed halfway through a line
    cache = RowCache(path, {})
    assert cache.get({"k": 1}) == 1.0 and cache.get({"k": 2}) is None
    cache.put({"k": 3}, [1, 2])
    again = RowCache(path, {})
    assert again.get({"k": 1}) == 1.0 and again.get({"k": 3}) == [1, 2]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_done_removes_the_file(tmp_path):
    cache = RowCache(tmp_path / "sub" / "bench.partial.jsonl", {})
    cache.put({"k": 1}, 1)
    assert cache.path.is_file()
    cache.done()
    assert not cache.path.exists()
    cache.done()  # twice is harmless
