"""MI training data (mi/data.py): resumable shards, one build per model, loading one or several folders."""

from __future__ import annotations

from functools import partial

import pytest

from tests.mi.states import prompts
from unmask.errors import UnmaskError
from unmask.mi.data import MIDataConfig, build_mi_data, load_mi_data, shard_path
from unmask.mi.estimator import HeadConfig, MIHead, save_head


def test_resumed_build_equals_uninterrupted(tmp_path, make_model):
    cfg = MIDataConfig(states=10, shard_size=4, rows=3, eps=0.01, policy="topk:k=2", seed=1)
    load = partial(make_model)
    assert build_mi_data(load, prompts(), cfg, tmp_path / "a", progress=False) == 3
    # "Killed" after shard 1: shards 0 and 2 missing, then resumed.
    build_mi_data(load, prompts(), cfg, tmp_path / "b", progress=False)
    for k in (0, 2):
        shard_path(tmp_path / "b", k).unlink()
    with pytest.raises(UnmaskError, match="2 of 3 MI data shards missing"):
        load_mi_data(tmp_path / "b")  # never a silent subset
    assert build_mi_data(load, prompts(), cfg, tmp_path / "b", progress=False) == 2
    for k in range(3):
        assert shard_path(tmp_path / "a", k).read_bytes() == shard_path(tmp_path / "b", k).read_bytes()
    data = load_mi_data(tmp_path / "a")
    assert data["tokens"].shape == (10, 16)
    assert (data["rows"].sum(1) <= 3).all() and data["rows"].any()
    assert (data["rows"] <= (data["tokens"] == 4)).all()  # rows are masked positions
    assert (data["mi"][~data["rows"]] == 0).all()


def test_refuses_to_mix_builds(tmp_path, make_model):
    cfg = MIDataConfig(states=2, shard_size=2, rows=2, seed=1)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path, progress=False)
    with pytest.raises(UnmaskError, match=r"other \['config'\]"):
        build_mi_data(partial(make_model), prompts(), MIDataConfig(states=2, shard_size=2, rows=2, seed=2), tmp_path,
                      progress=False)
    with pytest.raises(UnmaskError, match="prompts_sha256"):
        build_mi_data(partial(make_model), prompts(13), cfg, tmp_path, progress=False)


def test_two_workers_build_the_same_shards(tmp_path, make_model):
    cfg = MIDataConfig(states=4, shard_size=2, rows=2, policy="sequential", seed=3)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path / "one", progress=False)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path / "two", workers=2, progress=False)
    for k in range(2):
        assert shard_path(tmp_path / "one", k).read_bytes() == shard_path(tmp_path / "two", k).read_bytes()


def test_head_keeps_its_metrics_and_data_loads_from_one_shard(tmp_path, make_model):
    # Bugs caught: save_head dropping the ``extra`` metadata (the fit metrics shown by `unmask mi`);
    # load_mi_data reading keys from a second shard (a one-shard build fails to load), or losing
    # the message that says how to build missing data.
    from unmask import artifacts

    save_head(MIHead(HeadConfig(d_in=8, d_hidden=4, rank=2)), tmp_path / "head", {"metrics": {"spearman": 0.5}})
    assert artifacts.read_meta(tmp_path / "head", artifacts.MI_HEAD)["metrics"] == {"spearman": 0.5}
    with pytest.raises(UnmaskError, match="no MI data"):
        load_mi_data(tmp_path / "empty")
    cfg = MIDataConfig(states=2, shard_size=4, rows=1, policy="topk:k=4", seed=0)
    build_mi_data(partial(make_model), prompts(), cfg, tmp_path / "one", progress=False)
    assert load_mi_data(tmp_path / "one")["tokens"].shape == (2, 16)


def test_several_data_directories_load_as_one_only_from_one_model(tmp_path, make_model):
    from unmask.mi.data import load_mi_datasets

    cfg = MIDataConfig(states=3, shard_size=3, rows=1, seed=0)
    for name, sha in (("a", "m1"), ("b", "m1"), ("c", "m2")):
        build_mi_data(partial(make_model), prompts(), cfg, tmp_path / name, progress=False, source={"model_sha256": sha})
    both = load_mi_datasets([tmp_path / "a", tmp_path / "b"])
    assert both["tokens"].shape == (6, 16)
    with pytest.raises(UnmaskError, match="different models"):
        load_mi_datasets([tmp_path / "a", tmp_path / "c"])
    assert len(load_mi_datasets([tmp_path / "a", tmp_path / "b"], model_sha256="m1")["tokens"]) == 6
    with pytest.raises(UnmaskError, match="another model than the one given"):
        load_mi_datasets([tmp_path / "c"], model_sha256="m1")


def test_data_built_before_a_target_was_stored_loads_without_it(tmp_path, make_model):
    # Bug caught: a KeyError traceback (or a refusal as "another shape") when shards of an older build,
    # without the influence array, are loaded beside newer ones; fitting on it must say what is missing.
    import numpy as np

    from unmask.mi.data import load_mi_datasets
    from unmask.mi.fit import targets

    cfg = MIDataConfig(states=8, shard_size=4, rows=3, eps=0.01, policy="topk:k=2", seed=1)
    for name in ("old", "new"):
        build_mi_data(partial(make_model), prompts(), cfg, tmp_path / name, progress=False)
    older = shard_path(tmp_path / "old", 1)  # an old shard: everything but the influence
    arrays = {k: v for k, v in np.load(older).items() if k != "influence"}
    np.savez_compressed(older, **arrays)
    assert "influence" not in load_mi_data(tmp_path / "old") and "influence" in load_mi_data(tmp_path / "new")
    both = load_mi_datasets([tmp_path / "new", tmp_path / "old"])
    assert "influence" not in both and both["tokens"].shape == (16, 16) and "joint" in both
    with pytest.raises(UnmaskError, match="no 'influence' targets"):
        targets(both, "influence")


def test_mixed_data_directories_are_refused_in_one_line_naming_them(tmp_path, make_model):
    # Bugs caught: the refusals of load_mi_datasets garbled (folders joined by another separator, the
    # advice dropped or shouted, no message at all, the wrong folder named), or the shape check skipping
    # the second folder (wrong zip slices) or comparing it with itself instead of the first.
    import re
    import shutil

    import numpy as np

    from unmask.mi.data import load_mi_datasets

    cfg = MIDataConfig(states=3, shard_size=3, rows=1, seed=0)
    for name, sha in (("a", "m1"), ("c", "m2")):
        build_mi_data(partial(make_model), prompts(), cfg, tmp_path / name, progress=False, source={"model_sha256": sha})
    a, b, c, d = (tmp_path / n for n in "abcd")
    shutil.copytree(c, d)  # another folder from model m2
    with pytest.raises(UnmaskError, match=re.escape(f"{a}, {c}: MI data built from different models; fit one head per model")):
        load_mi_datasets([a, c])
    with pytest.raises(UnmaskError, match=re.escape(f"{c}, {d}: MI data built with another model than the one given; "
                                                    "build it with this model (unmask mi data --model)")):
        load_mi_datasets([c, d], model_sha256="m1")
    shutil.copytree(a, b)  # same model, but states of another length
    arrays = dict(np.load(shard_path(b, 0)))
    arrays["tokens"] = arrays["tokens"][:, :8]
    np.savez_compressed(shard_path(b, 0), **arrays)
    with pytest.raises(UnmaskError, match=re.escape(f"{b}: MI data of another shape than {a}")):
        load_mi_datasets([a, b])
