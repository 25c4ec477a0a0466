"""Benchmark scripts end to end on tiny models (they produce README tables; here only that they run and
write consistent files, and that the frontier arithmetic is right)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


def standard_sets_of(puzzles: Path, folder: Path, names=("test-kaggle", "test-hard")) -> Path:
    """A ``--data-dir`` whose standard sets ``names`` are all copies of the CSV ``puzzles``."""
    folder.mkdir()
    for name in names:
        shutil.copy(puzzles, folder / f"{name}.csv")
    return folder


def test_frontier_picks_the_best_accuracy_within_the_passes():
    frontier = load_script("sudoku_frontier")
    rows = [{"mean_nfe": 3.0, "accuracy %": 50.0}, {"mean_nfe": 5.5, "accuracy %": 70.0}, {"mean_nfe": 2.0, "accuracy %": 60.0}]
    assert frontier.frontier(rows, 1) is None
    assert frontier.frontier(rows, 3) == 60.0  # the cheaper, better row counts at n = 3
    assert frontier.frontier(rows, 6) == 70.0
    both = [{"set": "test-kaggle", "family": "entropy budget", **rows[0]},
            {"set": "test-kaggle", "family": "MI head λ=2", "mean_nfe": 2.5, "accuracy %": 55.0}]
    g = {r["nfe_at_most"]: r["gap"] for r in frontier.gaps(both, ["test-kaggle"], ["MI head λ=2"])}
    assert g == {3: 5.0, 4: 5.0, 5: 5.0, 6: 5.0}  # n = 1, 2: the entropy budget has no row that cheap
    # A sweep's spacing flatters the step frontier: an MI row between two entropy-only rows beats the
    # step frontier by 25 points, but a coin flip between those two rows is level with it.
    sweep = [{"set": "test-kaggle", "family": "entropy budget", "mean_nfe": 3.0, "accuracy %": 20.0},
             {"set": "test-kaggle", "family": "entropy budget", "mean_nfe": 5.0, "accuracy %": 90.0},
             {"set": "test-kaggle", "family": "MI head λ=2", "mean_nfe": 4.0, "accuracy %": 55.0}]
    g = {r["nfe_at_most"]: r for r in frontier.gaps(sweep, ["test-kaggle"], ["MI head λ=2"])}
    assert g[4]["gap"] == 35.0 and g[4]["entropy_only mixture %"] == 55.0 and g[4]["mixture gap"] == 0.0
    assert g[5]["mixture gap"] == -35.0  # past its last row the MI family's mixture stays at 55


def test_frontier_script_runs_on_a_tiny_model(tmp_path, sudoku_benchmark_inputs):
    frontier = load_script("sudoku_frontier")
    model_dir, data = sudoku_benchmark_inputs
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "2", "--quick",
                   "--out", str(tmp_path / "out")])
    result = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    families = {r["family"] for r in result["rows"]}
    assert families == (set(frontier.FAMILIES) - set(frontier.INFLUENCE)) | set(frontier.ORACLE)  # no D head given
    assert all(r["n"] == (2 if "(first" in r["set"] else 4) for r in result["rows"])
    assert all(0 <= r["accuracy %"] <= 100 and r["mean_nfe"] >= 1 for r in result["rows"])
    for family in ("exact MI λ=2", "exact joint MI λ=2"):
        assert any("extra_passes" in r for r in result["rows"] if r["family"] == family)
    assert {r["policy"] for r in result["rows"] if r["family"] == "exact joint MI λ=2"} == {
        f"mi_exact:gamma={g},lam=2.0,eps=0.001,joint=True" for g in frontier.EXACT_GAMMAS}
    assert (tmp_path / "out" / "sudoku_frontier.md").is_file() and (tmp_path / "out" / "sudoku_frontier.png").is_file()
    assert not (tmp_path / "out" / "sudoku_frontier.partial.jsonl").exists()  # removed once the results are written

    # --oracle-only measures the first-N rows again and keeps every other row as it was.
    old = result["rows"]
    other = [r for r in old if "(first" not in r["set"]]
    for r in other:
        r["accuracy %"] = -1  # a mark: a kept row is not measured again
    (tmp_path / "out" / "sudoku_frontier.json").write_text(json.dumps({**result, "rows": old}))
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "2", "--oracle-only",
                   "--out", str(tmp_path / "out")])
    again = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    assert [r for r in again["rows"] if "(first" not in r["set"]] == other
    assert {r["family"] for r in again["rows"] if "(first" in r["set"]} == set(frontier.ORACLE)
    assert all(r["accuracy %"] >= 0 for r in again["rows"] if "(first" in r["set"])
    assert [r["measured"] for r in again["runs"]] == ["all rows", list(frontier.ORACLE)]
    assert again["runs"][0] == result["runs"][0] and again["runs"][1]["exact_n"] == 2
    with pytest.raises(SystemExit):  # rows of another number of puzzles are not mixed in
        frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "5", "--exact-n", "2", "--oracle-only",
                       "--out", str(tmp_path / "out")])

    # Naming oracle families measures only theirs and keeps every other row, oracle rows included.
    for r in again["rows"]:
        r["accuracy %"] = -1
    (tmp_path / "out" / "sudoku_frontier.json").write_text(json.dumps(again))
    named = "exact joint MI λ=8"
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "2", "--oracle-only", named,
                   "--out", str(tmp_path / "out")])
    third = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    remeasured = [r for r in third["rows"] if "(first" in r["set"] and r["family"] == named]
    assert len(remeasured) == 2 * len(frontier.EXACT_GAMMAS) and all(r["accuracy %"] >= 0 for r in remeasured)
    assert [r for r in third["rows"] if r not in remeasured] == [r for r in again["rows"] if r["family"] != named or "(first" not in r["set"]]
    for bad in (["--oracle-only", "no such family"], ["--exact-n", "3", "--oracle-only", named]):
        with pytest.raises(SystemExit):  # an unknown family; a new oracle set without its entropy-budget twin
            frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "2", *bad,
                           "--out", str(tmp_path / "out")])

    # A larger oracle on one set goes beside the first one, with its own gap rows.
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "3", "--oracle-sets", "test-hard",
                   "--oracle-only", "entropy budget", named, "--out", str(tmp_path / "out")])
    fourth = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    added = [r for r in fourth["rows"] if r["set"] == "test-hard (first 3)"]
    assert {r["family"] for r in added} == {"entropy budget", named} and all(r["n"] == 3 for r in added)
    assert [r for r in fourth["rows"] if r not in added] == third["rows"]
    assert not any("(first 3)" in r["set"] and "kaggle" in r["set"] for r in fourth["rows"])
    assert [r["measured"] for r in fourth["runs"]][-2:] == [[named], ["entropy budget", named]]
    assert fourth["runs"][-1]["oracle_sets"] == ["test-hard"] and fourth["runs"][-1]["exact_n"] == 3
    with pytest.raises(SystemExit):  # rows measured with another model or head are not mixed in
        frontier.main(["--model", str(model_dir), "--head", str(tmp_path), "--data-dir", str(data), "--n", "4", "--exact-n", "2",
                       "--oracle-only", "--out", str(tmp_path / "out")])

    # --families measures one sweep family's rows again, in their place, and keeps every other row.
    for r in fourth["rows"]:
        r["accuracy %"] = -1
    (tmp_path / "out" / "sudoku_frontier.json").write_text(json.dumps(fourth))
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--families", "demask", "--quick",
                   "--out", str(tmp_path / "out")])
    fifth = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    demask = [r for r in fifth["rows"] if r["family"] == "demask"]
    assert len(demask) == 2 * len(frontier.FAMILIES["demask"][::2]) and all(r["accuracy %"] >= 0 for r in demask)
    assert any("max_entropy=inf" not in r["policy"] for r in demask)  # the entropy cap is swept too
    assert [r for r in fifth["rows"] if r["family"] != "demask"] == [r for r in fourth["rows"] if r["family"] != "demask"]
    order = [r["family"] for r in fifth["rows"] if "(first" not in r["set"]]
    assert order == sorted(order, key=list(frontier.FAMILIES).index)  # back in their place, not appended
    assert fifth["runs"][-1]["measured"] == ["demask"] and "exact_n" not in fifth["runs"][-1]  # it ran no oracle
    for bad in (["--families", "exact MI λ=2"], ["--families", "demask", "--oracle-only"]):
        with pytest.raises(SystemExit):  # an oracle family is not a sweep family; the two flags do not mix
            frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", *bad, "--out", str(tmp_path / "out")])


def test_frontier_decodes_the_d_head_families_with_the_d_head(tmp_path, sudoku_benchmark_inputs):
    from unmask.mi.estimator import HeadConfig, MIHead, save_head

    frontier = load_script("sudoku_frontier")
    model_dir, data = sudoku_benchmark_inputs
    out = ["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--out", str(tmp_path / "out")]
    mi_head = MIHead(HeadConfig(d_in=16, d_hidden=8, rank=4, link="relu"))
    with torch.no_grad():
        mi_head.weight.zero_()  # an MI head charging every pair 0: its rules are the entropy budget's
    save_head(mi_head, model_dir)
    frontier.main([*out, "--exact-n", "0"])
    first = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    assert "influence_head" not in first and not any(r["family"] in frontier.INFLUENCE for r in first["rows"])
    with pytest.raises(SystemExit):  # a D-head family needs the D head
        frontier.main([*out, "--families", "D head λ=8"])

    # A D head charging every pair 100: every D-head rule reveals one cell per pass (the MI head's do not).
    d_head = MIHead(HeadConfig(d_in=16, d_hidden=8, rank=4, link="relu"))
    with torch.no_grad():
        d_head.bias.fill_(100.0)
    save_head(d_head, tmp_path / "d_head")
    frontier.main([*out, "--families", *frontier.INFLUENCE, "--influence-head", str(tmp_path / "d_head")])
    second = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    d_rows = [r for r in second["rows"] if r["family"] in frontier.INFLUENCE]
    assert {r["family"] for r in d_rows} == set(frontier.INFLUENCE)
    assert len(d_rows) == 2 * sum(len(frontier.FAMILIES[f]) for f in frontier.INFLUENCE)
    masked = {r["set"]: r["mean_nfe"] for r in second["rows"] if r["policy"] == "mi:gamma=0.01,lam=0.0"}  # one cell a pass
    assert all(r["mean_nfe"] == masked[r["set"]] for r in d_rows)
    loose = [r for r in second["rows"] if r["family"] == "MI head λ=2" and r["policy"] == "mi:gamma=5.0,lam=2.0"]
    assert loose and all(r["mean_nfe"] < masked[r["set"]] for r in loose)  # the same spec with the MI head
    assert second["influence_head"] == str(tmp_path / "d_head") and second["runs"][-1]["measured"] == frontier.INFLUENCE
    assert [r for r in second["rows"] if r not in d_rows] == first["rows"]
    order = [r["family"] for r in second["rows"]]
    assert order == sorted(order, key=list(frontier.FAMILIES).index)  # the D families in their place, not appended
    with pytest.raises(SystemExit):  # D-head rows measured with another D head are not mixed in
        frontier.main([*out, "--families", "D head λ=2", "--influence-head", str(model_dir)])
    with pytest.raises(SystemExit):  # a full run without the D head would drop its rows
        frontier.main([*out, "--exact-n", "0"])

    # Measuring other families keeps the D head's rows and its name.
    frontier.main([*out, "--families", "topk"])
    third = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    assert third["influence_head"] == second["influence_head"] and "influence_head" not in third["runs"][-1]
    assert [r for r in third["rows"] if r["family"] in frontier.INFLUENCE] == d_rows

    # A full run with both heads: each family decodes with its own head (one cache per head, although
    # "MI head λ=2" and "D head λ=2" share their specs).
    frontier.main([*out, "--exact-n", "0", "--influence-head", str(tmp_path / "d_head")])
    full = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())

    def measured(rows, families):  # (timings aside)
        return [(r["family"], r["set"], r["policy"], r["mean_nfe"], r["accuracy %"]) for r in rows if r["family"] in families]
    assert measured(full["rows"], frontier.INFLUENCE) == measured(d_rows, frontier.INFLUENCE)
    assert measured(full["rows"], ["MI head λ=2"]) == measured(first["rows"], ["MI head λ=2"])


def test_frontier_gaps_compare_each_oracle_set_with_its_own_entropy_twin():
    frontier = load_script("sudoku_frontier")

    def row(s, family, nfe, acc, n=50):
        return {"set": s, "family": family, "mean_nfe": nfe, "accuracy %": acc, "n": n, "nfe": [nfe] * n}

    first50, first150 = "test-hard (first 50)", "test-hard (first 150)"
    rows = [row(first50, "entropy budget", 5.0, 2.0), row(first50, "entropy budget", 9.0, 12.0),
            row(first50, "exact MI λ=2", 6.0, 12.0),
            row(first150, "entropy budget", 5.0, 1.0, 150), row(first150, "entropy budget", 9.0, 10.0, 150),
            row(first150, "exact MI λ=2", 6.0, 4.0, 150)]
    g = {(r["set"], r["nfe_at_most"]): r for r in frontier.gaps(rows, [first50, first150], ["exact MI λ=2"])}
    assert g[first50, 6]["gap"] == 10.0 and g[first150, 6]["gap"] == 3.0  # each set against its own twin
    assert g[first150, 8]["entropy_only %"] == 1.0 and g[first150, 9]["entropy_only %"] == 10.0
    assert (first150, 5) not in g  # no oracle row at ≤ 5 passes: no gap row


def test_learned_order_script_compares_every_learned_point_with_the_heuristics(tmp_path, sudoku_files, cli):
    bench = load_script("learned_order")
    model_dir, puzzles = sudoku_files
    run = tmp_path / "run"
    code, _, err = cli(["sudoku", "train-order", "--model", str(model_dir), "--data", str(puzzles), "--out", str(run),
                        "--budget", "3", "--steps", "2", "--batch-size", "2", "--samples", "2", "--d-hidden", "8",
                        "--eval-every", "2", "--ckpt-every", "2", "--step-cost", "0.5"])
    assert code == 0, err
    for f in ("order_policy.json", "order_policy.safetensors"):
        shutil.copy(run / "model" / f, model_dir / f)
    alone = tmp_path / "alone"  # order_policy.* without the model: the recorded base-model hash vouches for it
    keep = load_script("keep_order_policy")
    keep.main([str(run), str(alone)])
    assert sorted(p.name for p in alone.iterdir()) == ["order_policy.json", "order_policy.safetensors"]
    with pytest.raises(SystemExit) as e:  # a shipped policy from before the record, with nothing to vouch for it
        bare = json.loads((model_dir / "order_policy.json").read_text())
        del bare["source"]
        (model_dir / "order_policy.json").write_text(json.dumps(bare))
        keep.main([str(model_dir), str(tmp_path / "refused")])
    assert e.value.code == 2 and not (tmp_path / "refused").exists()
    keep.main([str(model_dir), str(tmp_path / "vouched"), "--base-model", str(model_dir)])
    vouched = json.loads((tmp_path / "vouched" / "order_policy.json").read_text())["source"]["model_sha256"]
    assert vouched == json.loads((alone / "order_policy.json").read_text())["source"]["model_sha256"]
    out = tmp_path / "out"
    bench.main(["--task", "sudoku", "--model", str(model_dir), "--sets", f"t={puzzles}", "--n", "4", "--budgets", "3",
                "--adaptive", "threshold:tau=0.9", "eb:gamma=1", "--learned", f"c0.5={run / 'model'}", f"same={alone}",
                "--out", str(out)])
    result = json.loads((out / "learned_order.json").read_text())
    learned = [r for r in result["rows"] if bench.family(r["policy"]) == "learned"]
    assert [r["policy"] for r in learned] == ["learned:steps=3,sample=True", "learned:steps=3,sample=False", "learned[c0.5]:steps=3",
                                              "learned[c0.5]:steps=3,sample=False", "learned[same]:steps=3", "learned[same]:steps=3,sample=False"]
    assert result["meta"]["learned"]["c0.5"]["train_config"]["step_cost"] == 0.5
    heur = [r for r in result["rows"] if bench.family(r["policy"]) != "learned"]
    for row in bench.frontier_rows(result["rows"]):  # each gap is the learned point minus the heuristics at its NFE
        mix = bench.mixture_frontier(heur, row["mean_nfe"])
        assert row["gap vs mixture"] == (None if mix is None else round(row["accuracy %"] - mix, 1))
    assert (out / "frontier.md").read_text().count("learned") == 6
    assert not (out / "learned_order.partial.jsonl").exists()  # removed once the results are written
    before = (out / "frontier.md").read_text()
    bench.main(["--task", "sudoku", "--model", str(model_dir), "--out", str(out), "--tables-only"])
    assert (out / "frontier.md").read_text() == before
    other = tmp_path / "other"  # a policy trained for other weights is refused
    shutil.copytree(run / "model", other)
    from unmask.model import load_model, save_model

    m = load_model(other)
    with torch.no_grad():
        next(m.parameters()).add_(1.0)
    save_model(m, other)
    with pytest.raises(SystemExit) as e:
        bench.main(["--task", "sudoku", "--model", str(model_dir), "--sets", f"t={puzzles}", "--learned", f"x={other}",
                    "--out", str(out)])
    assert e.value.code == 2
    wrong = json.loads((alone / "order_policy.json").read_text())  # a policy alone whose record names another model
    wrong["source"]["model_sha256"] = "0" * 16
    (alone / "order_policy.json").write_text(json.dumps(wrong))
    with pytest.raises(SystemExit):
        bench.main(["--task", "sudoku", "--model", str(model_dir), "--sets", f"t={puzzles}", "--learned", f"x={alone}",
                    "--out", str(out)])
    with pytest.raises(SystemExit):  # nor may --base-model overrule a record
        keep.main([str(alone), str(tmp_path / "overruled"), "--base-model", str(model_dir)])
    wrong["train_config"]["finetune"] = True
    (alone / "order_policy.json").write_text(json.dumps(wrong))
    with pytest.raises(SystemExit):  # a finetuned run's policy does not belong with the base model
        keep.main([str(alone), str(tmp_path / "finetuned"), "--base-model", str(model_dir)])
    assert not any((tmp_path / d).exists() for d in ("overruled", "finetuned"))


def test_frontier_rows_compare_each_learned_row_with_its_own_sets_heuristics():
    bench = load_script("learned_order")
    row = lambda s, policy, nfe, acc: {"set": s, "policy": policy, "mean_nfe": nfe, "accuracy %": acc}  # noqa: E731
    rows = [row("a", "learned:steps=4,sample=True", 3.0, 70.0), row("a", "learned-untrained:steps=4", 2.0, 99.0),
            row("a", "threshold:tau=0.5", 2.0, 40.0), row("a", "mi:gamma=0.1,lam=0", 4.0, 80.0),
            row("a", "top_prob:steps=4", 2.5, 30.0),
            row("b", "learned[c1]:steps=4", 3.0, 50.0), row("b", "eb:gamma=1", 1.0, 90.0)]
    got = {(r["set"], r["policy"]): r for r in bench.frontier_rows(rows)}
    assert set(got) == {("a", "learned:steps=4,sample=True"), ("b", "learned[c1]:steps=4")}
    a = got[("a", "learned:steps=4,sample=True")]  # the untrained init (99 %) is not a heuristic; set b's rows are not a's
    assert a["best heuristic at ≤ NFE"] == "threshold:tau=0.5 (40.0)" and a["gap vs step frontier"] == 30.0
    assert a["heuristic mixture %"] == 60.0 and a["gap vs mixture"] == 10.0  # half of (2, 40) and (4, 80)
    b = got[("b", "learned[c1]:steps=4")]
    assert b["gap vs step frontier"] == -40.0 and b["heuristic mixture %"] == 90.0


def test_head_cost_script_times_every_batch(tmp_path, sudoku_files, cli):
    from unmask.mi.estimator import HeadConfig, MIHead, save_head

    model_dir, puzzles = sudoku_files
    code, _, err = cli(["mi", "data", "--task", "sudoku", "--model", str(model_dir), "--examples", str(puzzles),
                        "--out", str(tmp_path / "d"), "--states", "3", "--shard-size", "3"])
    assert code == 0, err
    save_head(MIHead(HeadConfig(d_in=16, d_hidden=8, rank=4, link="relu")), tmp_path / "head")
    load_script("mi_head_cost").main([str(tmp_path / "head"), str(model_dir), "--data", str(tmp_path / "d"),
                                      "--batches", "1", "3", "--repeats", "3", "--out", str(tmp_path / "cost")])
    rows = json.loads((tmp_path / "cost.json").read_text())["rows"]
    assert [r["batch"] for r in rows] == [1, 3]
    assert all(r["head_ms"] > 0 and r["denoiser_ms"] > 0 for r in rows)
    with pytest.raises(SystemExit):  # more states asked than the data holds
        load_script("mi_head_cost").main([str(tmp_path / "head"), str(model_dir), "--data", str(tmp_path / "d"),
                                          "--batches", "10", "--out", str(tmp_path / "cost")])


def test_head_variants_features_leave_the_mask_token_out():
    # A model that predicts its mask id (mask_id < vocab_size): the values' distribution has no mask
    # column, sums to 1 over the others, and the extra blocks' outputs sit beside the final state.
    from unmask.model import ModelConfig, TransformerDenoiser

    variants = load_script("mi_head_variants")
    torch.manual_seed(0)
    model = TransformerDenoiser(ModelConfig(vocab_size=5, mask_id=2, seq_len=6, d_model=8, n_layers=2, n_heads=2, d_ff=16)).eval()
    tokens = torch.tensor([[0, 2, 2, 1, 4, 2], [2, 2, 3, 3, 0, 1], [1, 1, 2, 2, 2, 2]])
    deep, values = variants.features(model, tokens, [0], batch_size=2)
    caught = []
    hook = model.blocks[0].register_forward_hook(lambda mod, inp, out: caught.append(out))
    logits, hidden = model(tokens)
    hook.remove()
    p = logits[..., [0, 1, 3, 4]].double().softmax(-1)
    assert values.shape == (3, 6, 5)  # 4 values + the entropy
    assert torch.allclose(values[..., :-1].double(), p, atol=1e-6)
    assert torch.allclose(values[..., -1].double(), -(p * p.log()).sum(-1), atol=1e-5)
    assert torch.allclose(deep, torch.cat([hidden, caught[0]], -1), atol=1e-5)


def test_coupled_pair_mi_is_the_mi_of_its_joint():
    # Bugs caught in the closed form: a sign, the 1/Z of the A terms, A_ji left out (asymmetric),
    # c = e^θ instead of e^θ − 1 (θ = 0 not independent).
    variants = load_script("mi_head_variants")
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(2, 5, 4, generator=g, dtype=torch.float64), -1)
    theta = 3 * torch.randn(2, 5, 5, generator=g, dtype=torch.float64)
    theta = (theta + theta.transpose(1, 2)) / 2
    got = variants.coupled_pair_mi(probs, theta)
    for b, i, j in [(0, 0, 1), (1, 2, 4), (1, 3, 0), (0, 4, 4)]:
        pair = probs[b, i][:, None] * probs[b, j][None, :] * torch.exp(theta[b, i, j] * torch.eye(4, dtype=torch.float64))
        pair = pair / pair.sum()
        want = (pair * (pair / (pair.sum(1, keepdim=True) * pair.sum(0, keepdim=True))).log()).sum()
        assert float(got[b, i, j]) == pytest.approx(float(want), abs=1e-12)
    assert torch.equal(got, got.transpose(1, 2))
    assert (variants.coupled_pair_mi(probs, torch.zeros_like(theta)) == 0).all()  # θ = 0: independent, charged exactly 0


def test_exclusion_mi_is_the_papers_i_of_exclusion_conditionals():
    # Bugs caught: the renormalisation of P_j without v (a sign, 1 − P_j(v) left out), the weights
    # P_i(v) taken from j, rows and columns swapped.
    variants = load_script("mi_head_variants")
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(2 * torch.randn(2, 4, 5, generator=g, dtype=torch.float64), -1)
    got = variants.exclusion_mi(probs)

    def h(p):
        return -(p * p.log()).sum()

    for b, i, j in [(0, 0, 1), (1, 2, 3), (1, 3, 0)]:
        conds = [torch.cat([probs[b, j][:v], probs[b, j][v + 1 :]]) for v in range(5)]  # X_j ≠ v, renormalised
        want = h(probs[b, j]) - sum(probs[b, i, v] * h(c / c.sum()) for v, c in enumerate(conds))
        assert float(got[b, i, j]) == pytest.approx(float(want), abs=1e-10)
    certain = torch.zeros(1, 2, 5, dtype=torch.float64)
    certain[0, :, 0] = 1  # both sure of value 0: H_j = 0; the contradiction is clamped, never NaN
    assert torch.isfinite(variants.exclusion_mi(certain)).all()


def test_probe_and_exclusion_heads_are_symmetric_non_negative_and_can_charge_zero():
    # Bugs caught: an asymmetric output, negative charges outside training, a head that cannot output 0.
    variants = load_script("mi_head_variants")
    torch.manual_seed(0)
    d, v = 6, 4
    x = torch.cat([torch.randn(3, 5, d), torch.softmax(torch.randn(3, 5, v), -1)], -1)
    x = torch.cat([x, torch.rand(3, 5, 1)], -1)  # the entropy column (not read by these heads' MI)
    for head in (variants.ExclusionHead(d, v, 8, 4), variants.ProbeHead(d, v, 8, 4, 2, top=2)):
        out = head.eval()(x)
        assert out.shape == (3, 5, 5) and torch.allclose(out, out.transpose(1, 2), atol=1e-6) and (out >= 0).all()
        with torch.no_grad():
            head.mlp[-1].weight.zero_()
            head.mlp[-1].bias.zero_()
            if hasattr(head, "bias"):
                head.bias.fill_(-1.0)  # both forms below 0: no gate, no free term
        assert (head(x) == 0).all()  # no shift of j's logits (probes) / every form relu'd away (exclusion): exactly 0


def test_head_variants_script_fits_every_variant_on_the_same_split(tmp_path, sudoku_files, cli):
    # Bugs caught: a variant left out, the first variant not fitted as `unmask mi train` fits (another
    # init, split or schedule), the deeper head reading no extra blocks, the both-directions variant
    # fitted on every pair, a bad --layers taken silently.
    from unmask.mi.data import load_mi_data
    from unmask.mi.fit import HeadTrainConfig, fit_head
    from unmask.model import load_model

    model_dir, puzzles = sudoku_files
    code, _, err = cli(["mi", "data", "--task", "sudoku", "--model", str(model_dir), "--examples", str(puzzles),
                        "--out", str(tmp_path / "d"), "--states", "12", "--shard-size", "6", "--rows", "3"])
    assert code == 0, err
    variants = load_script("mi_head_variants")
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0",
                   "--out", str(tmp_path / "out" / "v")])
    result = json.loads((tmp_path / "out" / "v.json").read_text())
    rows = {r["head"]: r for r in result["rows"]}
    assert len(rows) == 8 and result["train_states"] + result["val_states"] == 12 and result["target"] == "raw"
    first, both_only = rows["mi train's (relu, rank 32)"], rows["same, fitted on both-direction targets only"]
    _, metrics = fit_head(load_model(model_dir), load_mi_data(tmp_path / "d"), HeadTrainConfig(steps=3), progress=False)
    assert first["mse"] == pytest.approx(metrics["mse"], rel=1e-4) and first["spearman"] == pytest.approx(metrics["spearman"], abs=1e-6)
    assert first["parameters"] == both_only["parameters"] and both_only["fitted_pairs"] < first["fitted_pairs"]
    from unmask.mi.fit import evaluate_head, pair_mask, split, targets

    head, _ = fit_head(load_model(model_dir), data := load_mi_data(tmp_path / "d"), HeadTrainConfig(steps=3), progress=False)
    train, val = split(data, HeadTrainConfig().val_fraction)
    seen = train[torch.randperm(len(train), generator=torch.Generator().manual_seed(HeadTrainConfig().seed))[: len(val)]]
    with torch.no_grad():
        hidden = load_model(model_dir)(data["tokens"][seen].long()).hidden
    m = evaluate_head(head, hidden, targets(data)[seen], pair_mask(data, load_model(model_dir).mask_id)[seen])
    assert first["train_spearman"] == pytest.approx(m["spearman"], abs=1e-6) and first["train_spearman"] != first["spearman"]
    assert both_only["mse"] != first["mse"]  # same init and batches, other pairs
    assert rows["mi train's, + blocks 0"]["parameters"] > first["parameters"]  # a wider input
    # the predicted distribution over the values (mask excluded) and its entropy: 9 + 1 more inputs
    assert rows["mi train's, + P(X_i | C) and its entropy"]["parameters"] == first["parameters"] + 10 * (2 + HeadTrainConfig().d_hidden)
    assert rows["MI of a coupled joint of P(X_i | C), P(X_j | C)"]["parameters"] == (
        2 * 16 + 16 * 128 + 128 + 128 * 64 + 64 + 2 * 32 + 2)  # LayerNorm, MLP into two rank-32 forms, their weights and biases
    assert -1 <= result["reference"]["exact_ij_vs_ji_spearman"] <= 1
    assert all(r["relative_cost"] > 0 for r in rows.values())
    # --target joint: every head fitted and scored on the probe joint's MI instead
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--target", "joint",
                   "--out", str(tmp_path / "out" / "j")])
    joint = json.loads((tmp_path / "out" / "j.json").read_text())
    _, metrics = fit_head(load_model(model_dir), load_mi_data(tmp_path / "d"), HeadTrainConfig(steps=3, target="joint"), progress=False)
    assert joint["target"] == "joint" and joint["rows"][0]["mse"] == pytest.approx(metrics["mse"], rel=1e-4)
    assert joint["rows"][0]["mse"] != first["mse"]
    with pytest.raises(SystemExit):
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--layers", "99", "--out", str(tmp_path / "x")])
    # --only: the named heads measured again (here with another seed), every other row kept as it was, in the same order
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--seed", "1",
                   "--only", "exclusion", "relu", "--out", str(tmp_path / "out" / "v")])
    again = json.loads((tmp_path / "out" / "v.json").read_text())
    assert [r["head"] for r in again["rows"]] == [r["head"] for r in result["rows"]]
    changed = {r["head"] for r, old in zip(again["rows"], result["rows"]) if r != old}
    assert changed == {"mi train's (relu, rank 32)", "exclusion MI of P(X | C), gated per pair"}
    assert [run["heads"] for run in again["runs"]][1] == ["mi train's (relu, rank 32)", "exclusion MI of P(X | C), gated per pair"]
    for bad in (["--steps", "4"], ["--target", "joint"]):  # another fit than the kept rows': refused, nothing written
        with pytest.raises(SystemExit):
            variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", *bad,
                           "--only", "probes", "--out", str(tmp_path / "out" / "v")])
    assert json.loads((tmp_path / "out" / "v.json").read_text()) == again
    with pytest.raises(SystemExit):  # no file whose rows to keep
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--only", "relu", "--out", str(tmp_path / "none")])
    # --heads: the named heads alone, in a table of their own (same fit as the full run's rows for them)
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--seed", "1",
                   "--heads", "exclusion", "relu", "--out", str(tmp_path / "out" / "h")])
    alone = json.loads((tmp_path / "out" / "h.json").read_text())
    assert [r["head"] for r in alone["rows"]] == ["mi train's (relu, rank 32)", "exclusion MI of P(X | C), gated per pair"]
    same_fit = {r["head"]: (r["mse"], r["spearman"]) for r in again["rows"]}  # the seed-1 rows of --only above
    assert all((r["mse"], r["spearman"]) == same_fit[r["head"]] for r in alone["rows"]) and "runs" not in alone
    # --train-states: fitted on a seeded subset of the training states, scored on the same held-out ones
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--seed", "1",
                   "--heads", "relu", "--train-states", "2", "--out", str(tmp_path / "out" / "few")])
    few = json.loads((tmp_path / "out" / "few.json").read_text())
    assert few["train_states"] == 2 < alone["train_states"] and few["val_states"] == alone["val_states"]
    assert 0 < few["rows"][0]["fitted_pairs"] < alone["rows"][0]["fitted_pairs"]
    for bad in (["--train-states", "0"], ["--train-states", str(alone["train_states"] + 1)]):
        with pytest.raises(SystemExit):
            variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--heads", "relu", *bad, "--out", str(tmp_path / "x")])
    with pytest.raises(SystemExit):  # --only against rows fitted on all the training states
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--seed", "1",
                       "--only", "relu", "--train-states", "2", "--out", str(tmp_path / "out" / "v")])
    with pytest.raises(SystemExit):  # one or the other
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--only", "relu", "--heads", "relu", "--out", str(tmp_path / "x")])
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0",
                   "--out", str(tmp_path / "out" / "v")])  # the first run again, for the tables below
    md = (tmp_path / "out" / "v.md").read_text()
    (tmp_path / "out" / "v.md").unlink()
    variants.main(["--data", "unused", "--tables-only", "--out", str(tmp_path / "out" / "v")])  # the tables again, from the JSON
    assert (tmp_path / "out" / "v.md").read_text() == md and "P(X_i \\| C)" in md  # the pipe escaped: one cell
    with pytest.raises(SystemExit):
        variants.main(["--data", "unused", "--tables-only", "--out", str(tmp_path / "none")])
    model, tokens = load_model(model_dir), load_mi_data(tmp_path / "d")["tokens"]
    deep, values = variants.features(model, tokens, [0], batch_size=5)  # batches that do not divide the states
    logits, hidden = model(tokens.long())
    p = logits.double().softmax(-1)
    assert torch.allclose(deep[..., : hidden.shape[-1]], hidden, atol=1e-5)
    assert torch.allclose(values[..., :-1].double(), p, atol=1e-6)  # the values' distribution, as the loop sees it
    assert torch.allclose(values[..., -1].double(), -(p * p.clamp_min(1e-300).log()).sum(-1), atol=1e-5)


REPRODUCE = ROOT / "benchmarks" / "reproduce_sudoku.sh"


def reproduce(*args: str, stamps: Path, **env: str):
    """``DRY_RUN=1 reproduce_sudoku.sh ARGS`` with its stamps under ``stamps`` (prints, runs nothing)."""
    import os
    import subprocess

    env = {**os.environ, "STAMPS": str(stamps), "DRY_RUN": "1", **env}
    return subprocess.run(["bash", str(REPRODUCE), *args], env=env, capture_output=True, text=True, timeout=60)


def shipped_hash() -> str:
    from unmask.runs import file_digest

    return file_digest(ROOT / "unmask" / "models" / "sudoku" / "model.safetensors")


def test_reproduce_sudoku_reruns_what_a_new_model_needs_into_folders_of_its_own(tmp_path):
    import re

    r = reproduce("3", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^step (\d)", r.stdout, re.M) == list("13456789")  # the data is always made if missing
    h = shipped_hash()  # the script's hash is the library's file_digest
    assert f"on model {h}" in r.stdout
    # the shipped head is refitted into the model's own folder, with the link it was shipped with
    assert "mi train --task sudoku --model unmask/models/sudoku" in r.stdout
    assert "--link softplus --out unmask/models/sudoku" in r.stdout
    for out in ("data/mi/sudoku", "data/mi/sudoku-seq", "data/mi/sudoku-par", "runs/mi-head-sudoku",
                "runs/order-sudoku-tau0.1-c0.2", "runs/order-sudoku-tau0.1-c1", "runs/order-sudoku-T8"):
        assert re.search(rf"--out {re.escape(out)}-{h}\b", r.stdout), out  # an old model's builds are never resumed
    for kept in ("sudoku-plain", "sudoku-tau0.1-c1", "sudoku-tau0.1-c0.2"):  # every policy the tables read is retrained
        assert re.search(rf"keep_order_policy.py runs/\S+-{h} \S+/{kept}\n", r.stdout), kept
    if not (ROOT / "runs" / f"order-sudoku-T8-{h}" / "checkpoint.pt").exists():  # (a local run past stage 1 skips it)
        assert re.search(rf"--budget 8 --steps 400\n.*--out runs/order-sudoku-T8-{h} .*--budget 8 --steps 1200\n", r.stdout)
    assert not any(tmp_path.iterdir())  # a dry run stamps nothing


def test_reproduce_sudoku_skips_only_the_steps_done_on_this_model(tmp_path):
    h = shipped_hash()
    (tmp_path / h).mkdir()
    (tmp_path / h / "step-4").write_text("done\n")
    (tmp_path / "0123456789abcdef").mkdir()
    (tmp_path / "0123456789abcdef" / "step-5").write_text("done\n")  # another model's stamp
    r = reproduce("3", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"step 4 (shipped_head): done on model {h}, skipped" in r.stdout
    assert "--link softplus" not in r.stdout and "sudoku_mi_stats" not in r.stdout
    assert f"step 5 (mi_tables) on model {h}" in r.stdout
    assert "step 3 (baselines) on model" in r.stdout and "python benchmarks/sudoku_policies.py" in r.stdout


@pytest.mark.parametrize("start", ["0", "10", "x", "3 4"])
def test_reproduce_sudoku_refuses_a_step_that_is_not_one(tmp_path, start):
    r = reproduce(start, stamps=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "FROM must be a step number" in r.stderr
    assert r.stdout == ""


def test_reproduce_sudoku_runs_only_the_steps_asked_for(tmp_path):
    import re

    r = reproduce("3", "4", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^step (\d)", r.stdout, re.M) == list("1349")  # data and the README check always
    r = reproduce("9", stamps=tmp_path)  # the README check alone (TO defaults to the last step)
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^step (\d)", r.stdout, re.M) == list("19")
    r = reproduce("5", "3", stamps=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "TO must be a step number 5-9" in r.stderr


def test_reproduce_sudoku_step_2_grows_the_shipped_model_from_the_6_layer_run(tmp_path):
    # Bugs caught: the 12-layer run not started from the 6-layer one, its shape flag passed on a resume
    # (refused by `unmask sudoku train`), the hard puzzles it trains on not made, the export not the 12-layer run's.
    r = reproduce("1", "2", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [line.strip() for line in r.stdout.splitlines() if line.startswith("  ")]
    six = [c for c in lines if c.startswith("unmask sudoku train") and "--out runs/sudoku " in c + " "]
    twelve = [c for c in lines if c.startswith("unmask sudoku train") and "--out runs/sudoku-stack12" in c]
    assert len(six) == 1 and len(twelve) == 1 and lines.index(six[0]) < lines.index(twelve[0])
    assert "--init runs/sudoku/model" in twelve[0] and "--puzzles data/sudoku/train-hard.csv" in twelve[0]
    assert ("--n-layers 12" in twelve[0]) != ("--resume" in twelve[0])  # the shape on a fresh start only
    if not (ROOT / "data" / "sudoku" / "train-hard.csv").exists():
        assert any("--kind hard --n 20000 --seed 6 --out data/sudoku/train-hard.csv" in c for c in lines)
    assert "cp runs/sudoku-stack12/model/config.json runs/sudoku-stack12/model/model.safetensors unmask/models/sudoku/" in r.stdout


def candidate(tmp_path: Path) -> tuple[str, str]:
    """A candidate's model folder (weights of its own, so a hash of its own) and results folder."""
    model = tmp_path / "cand" / "model"
    model.mkdir(parents=True)
    (model / "model.safetensors").write_bytes(b"candidate weights")
    return str(model), str(tmp_path / "cand" / "results")


def test_reproduce_sudoku_measures_a_candidate_without_touching_what_is_shipped(tmp_path):
    # Bugs caught: any command of steps 3-8 reading the shipped model (a command left without
    # --model uses it by default) or writing where shipped files are (a benchmark left without --out
    # writes into benchmarks/results), the stamps left in runs/ (lost between sessions).
    import re

    model, results = candidate(tmp_path)
    r = reproduce("3", stamps=tmp_path / "unused", MODEL=model, RESULTS=results, STAMPS="")
    assert r.returncode == 0, r.stderr
    commands = [line.strip() for line in r.stdout.splitlines() if line.startswith("  ") and "check_readme" not in line]
    assert len(commands) > 20
    for line in commands:  # nothing shipped is named: every path is the candidate's, or a build
        assert "unmask/models" not in line and "benchmarks/results" not in line, line
        for path in re.findall(r"(?:--out|--model|--head|--old) (\S+)", line):
            assert path.startswith((model, results, "runs/", "data/")), line
    reads_a_model = re.compile(r"benchmarks/(sudoku_policies|sudoku_mi_stats|sudoku_mi|exact_mi_scaling|sudoku_frontier|"
                               r"learned_order|mi_head_variants)\.py|unmask (mi (data|train|map)|sudoku train-order)")
    readers = [c for c in commands if reads_a_model.search(c)]
    assert len(readers) >= 15 and all(f"--model {model}" in c for c in readers), [c for c in readers if model not in c]
    for c in commands:  # every benchmark writes under the candidate's results (or a run folder)
        if c.startswith("python benchmarks/"):
            out = re.search(r"--out (\S+)", c) or re.search(r"keep_order_policy\.py \S+ (\S+)", c)
            assert out and out.group(1).startswith((results, "runs/")), c
    assert f"--link softplus --out {model}\n" in r.stdout  # the shipped head goes beside the candidate
    assert f"order_policy.safetensors {model}/\n" in r.stdout
    assert not (tmp_path / "unused").exists()
    import hashlib

    h = hashlib.sha256(b"candidate weights").hexdigest()[:16]
    (Path(results) / "stamps" / h).mkdir(parents=True)
    (Path(results) / "stamps" / h / "step-3").write_text("done\n")  # stamps default to RESULTS/stamps
    r = reproduce("3", "3", stamps=tmp_path / "unused", MODEL=model, RESULTS=results, STAMPS="")
    assert f"step 3 (baselines): done on model {h}, skipped" in r.stdout


def test_reproduce_sudoku_keeps_a_candidate_path_with_spaces_whole(tmp_path):
    # Bug caught: an unquoted $MODEL or $RESULTS splits into several words (the model hash turns into
    # "none", a command reads or writes "my" and "cand/...").
    import hashlib
    import shlex

    model, results = candidate(tmp_path / "my cand")
    r = reproduce("3", stamps=tmp_path / "unused", MODEL=model, RESULTS=results, STAMPS="")
    assert r.returncode == 0, r.stderr
    assert f"on model {hashlib.sha256(b'candidate weights').hexdigest()[:16]}" in r.stdout
    commands = [shlex.split(line) for line in r.stdout.splitlines() if line.startswith("  ")]
    paths = [c[i + 1] for c in commands for i, a in enumerate(c[:-1]) if a in ("--model", "--out", "--head", "--old")]
    assert len(paths) > 20
    assert all(p.startswith((model, results, "runs/", "data/")) for p in paths), paths
    assert sum(p.startswith(model) for p in paths) >= 15 and sum(p.startswith(results) for p in paths) >= 10
    words = [w for c in commands for w in c if str(tmp_path) in w]  # positional paths and NAME=DIR too
    assert len(words) > 40 and all(str(tmp_path / "my cand") in w for w in words), [w for w in words if "my cand" not in w]


@pytest.mark.parametrize("which", ["model only", "results only", "step 2", "no model"])
def test_reproduce_sudoku_refuses_a_half_candidate(tmp_path, which):
    model, results = candidate(tmp_path)
    env, args = {"MODEL": model, "RESULTS": results}, ["3"]
    if which == "model only":
        del env["RESULTS"]  # would overwrite the shipped tables
    elif which == "results only":
        del env["MODEL"]  # would refit the shipped model's head
    elif which == "step 2":
        args = ["1", "4"]  # step 2 trains the shipped model
    else:
        env["MODEL"] = str(tmp_path / "missing")
    r = reproduce(*args, stamps=tmp_path, **env)
    assert r.returncode == 2 and r.stdout == "", r.stdout  # refused before any work, data included
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("reproduce_sudoku.sh: ")


def test_rounds_script_counts_every_puzzle_once(tmp_path, sudoku_files):
    from unmask.tasks.sudoku.data import read_puzzles
    from unmask.tasks.sudoku.grid import singles_rounds

    rounds_script = load_script("sudoku_rounds")
    _, puzzles = sudoku_files
    data = standard_sets_of(puzzles, tmp_path / "sudoku", ["test-kaggle"])
    rounds_script.main(["--data-dir", str(data), "--sets", "test-kaggle", "--out", str(tmp_path / "out")])
    result = json.loads((tmp_path / "out" / "sudoku_rounds.json").read_text())
    expected = [singles_rounds(q.tolist()) for q in read_puzzles(puzzles).quizzes]
    (row,) = result["rows"]
    assert row["puzzles"] == 6 and sum(result["rounds_histogram"]["test-kaggle"].values()) == 6
    assert row["singles solve %"] == round(100 * sum(r is not None for r in expected) / 6, 1)
    cumulative = [row[f"≤{k} %"] for k in range(1, rounds_script.MAX_SHOWN + 1)]
    assert cumulative == [round(100 * sum(r is not None and r <= k for r in expected) / 6, 1)
                          for k in range(1, rounds_script.MAX_SHOWN + 1)]
    solved = [r for r in expected if r is not None]
    assert row["mean rounds"] == round(sum(solved) / len(solved), 2) and row["max rounds"] == max(solved)
    assert (tmp_path / "out" / "sudoku_rounds.md").read_text().startswith("| set | puzzles |")


def test_exact_mi_scaling_script_keeps_each_error_within_its_bound(tmp_path, sudoku_files):
    scaling = load_script("exact_mi_scaling")
    model_dir, puzzles = sudoku_files
    data = standard_sets_of(puzzles, tmp_path / "sudoku")
    scaling.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "2", "--eps", "0.01", "0.1",
                  "--skip", "0.5", "--skip-eps", "0.01", "0.1", "--out", str(tmp_path / "out")])
    rows = json.loads((tmp_path / "out" / "exact_mi_scaling.json").read_text())["rows"]
    assert len(rows) == 2 * 2 * 5  # sets × kinds × (ε = 0, two ε, one row skip at two ε)
    by = {(r["set"], r["states_from"], r["eps"], r["skip_rows_below"]): r for r in rows}
    for r in rows:
        assert 1 <= r["mean_passes"] <= r["full_passes"]
        if r["eps"] == 0:
            assert r["saving_x"] == 1 and r["max_error"] == 0 and r["max_error_joint"] == 0
            assert 0 <= r["negative_share"] <= 1 and -1 <= r["exact_ij_vs_ji_spearman"] <= 1
            assert r["above_min_entropy_share_matters"] is None or 0 <= r["above_min_entropy_share_matters"] <= 1
            assert -1 <= r["exact_ij_vs_ji_spearman_joint"] <= 1
        elif r["skip_rows_below"] == 0:  # ε-truncation alone: the stored bound covers the real error
            assert r["max_error"] <= r["max_bound"] + 1e-9
        else:  # a skipped row's probe-joint MI is at most H(X_i) < the skip level; the other rows err as without skipping
            alone = by[(r["set"], r["states_from"], r["eps"], 0.0)]
            assert r["max_error_joint"] <= max(r["skip_rows_below"], alone["max_error_joint"]) + 1e-9
            assert r["mean_passes"] <= alone["mean_passes"]
    eps_rows = [r for r in rows if r["eps"] > 0 and r["skip_rows_below"] == 0]
    assert any(r["saving_x"] > 1 for r in eps_rows)  # truncation skips some probes even on a random model
    with pytest.raises(SystemExit):  # ε = 0 would look like the reference rows
        scaling.main(["--model", str(model_dir), "--data-dir", str(data), "--eps", "0", "--out", str(tmp_path / "x")])


def test_exact_mi_scaling_resumes_after_an_interruption_with_the_same_rows(tmp_path, sudoku_files, monkeypatch):
    scaling = load_script("exact_mi_scaling")
    model_dir, puzzles = sudoku_files
    data = standard_sets_of(puzzles, tmp_path / "sudoku")
    args = ["--model", str(model_dir), "--data-dir", str(data), "--n", "2", "--eps", "0.1", "--skip", "0.5"]
    scaling.main([*args, "--out", str(tmp_path / "clean")])
    clean = json.loads((tmp_path / "clean" / "exact_mi_scaling.json").read_text())["rows"]
    assert not (tmp_path / "clean" / "exact_mi_scaling.partial.jsonl").exists()  # removed once the results are written

    measure, calls = scaling.measure, []

    def killed_after_one(*a):
        if calls:
            raise KeyboardInterrupt
        calls.append(a[2:4])
        return measure(*a)

    monkeypatch.setattr(scaling, "measure", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        scaling.main([*args, "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "exact_mi_scaling.partial.jsonl").is_file()

    def counted(*a):
        calls.append(a[2:4])
        return measure(*a)

    monkeypatch.setattr(scaling, "measure", counted)
    scaling.main([*args, "--out", str(tmp_path / "out")])
    assert calls == [("test-kaggle", "sequential"), ("test-kaggle", "parallel"), ("test-hard", "sequential"), ("test-hard", "parallel")]
    assert json.loads((tmp_path / "out" / "exact_mi_scaling.json").read_text())["rows"] == clean


def test_head_calibration_names_the_quantity_its_head_was_fitted_to(tmp_path):
    calibration = load_script("mi_head_calibration")
    bins = [{"exact_from": 0.0, "exact_to": 0.01, "pairs": 5, "mean_exact": 0.002, "mean_predicted": 0.004, "share_predicted_zero": 0.5},
            {"exact_from": 0.01, "exact_to": 1.0, "pairs": 3, "mean_exact": 0.3, "mean_predicted": 0.2, "share_predicted_zero": 0.0}]
    for target, name in ((None, "exact MI"), ("influence", "exact influence D")):  # (no target: a head fitted before targets were a choice)
        head = tmp_path / str(target)
        head.mkdir()
        metrics = {"calibration": bins, "spearman": 0.5, **({"target": target} if target else {})}
        (head / "mi_head.json").write_text(json.dumps({"config": {"link": "relu"}, "metrics": metrics}))
        calibration.main([str(head), "--out", str(tmp_path / f"cal-{target}")])
        md = (tmp_path / f"cal-{target}.md").read_text()
        assert f"| {name} from |" in md and f"(relu) | {name} |" in md and f"bins of the {name})" in md and (tmp_path / f"cal-{target}.png").is_file()
    # Beside an older head, each row names its own head's target.
    calibration.main([str(tmp_path / "influence"), "--old", str(tmp_path / "None"), "--out", str(tmp_path / "both")])
    md = (tmp_path / "both.md").read_text()
    assert "influence (relu) | exact influence D |" in md and "None (relu) | exact MI |" in md
