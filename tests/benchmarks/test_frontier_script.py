"""benchmarks/mi/sudoku_frontier.py and benchmarks/order/learned_order.py end to end on tiny models, and their frontier
arithmetic."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tests.benchmarks.scripts import load_script


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


def test_frontier_script_runs_on_a_tiny_model(tmp_path, sudoku_few_blanks_inputs):
    frontier = load_script("sudoku_frontier")
    model_dir, data = sudoku_few_blanks_inputs
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
        f"exact:gamma={g},lam=2.0,charge=joint,eps=0.001" for g in frontier.EXACT_GAMMAS}
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
    assert ([r for r in third["rows"] if r not in remeasured]
            == [r for r in again["rows"] if r["family"] != named or "(first" not in r["set"]])
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
    # --exact-gammas sets the oracle's γ and its entropy-only twin's, which must run beside it.
    with pytest.raises(SystemExit):
        frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "3",
                       "--oracle-sets", "test-hard", "--oracle-only", named, "--exact-gammas", "0.5",
                       "--out", str(tmp_path / "out")])
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "3", "--oracle-sets", "test-hard",
                   "--oracle-only", "entropy budget", named, "--exact-gammas", "0.5", "2", "--out", str(tmp_path / "out")])
    gammas = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    first3 = [r for r in gammas["rows"] if r["set"] == "test-hard (first 3)"]
    assert [r for r in first3 if r in added] == added  # the rows at the other γ are kept as they were
    assert {r["policy"] for r in first3 if r not in added} == {
        "mi:gamma=0.5,lam=0.0", "mi:gamma=2.0,lam=0.0",
        "exact:gamma=0.5,lam=8.0,charge=joint,eps=0.001", "exact:gamma=2.0,lam=8.0,charge=joint,eps=0.001"}
    assert gammas["runs"][-1]["exact_gammas"] == [0.5, 2.0]
    # With twins at every γ kept, the oracle family alone is measured at a γ it lacks (bug caught: the
    # family's rows at the other γ dropped, or the entropy budget demanded again).
    frontier.main(["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--exact-n", "3", "--oracle-sets", "test-hard",
                   "--oracle-only", "exact MI λ=2", "--exact-gammas", "0.5", "--out", str(tmp_path / "out")])
    more = json.loads((tmp_path / "out" / "sudoku_frontier.json").read_text())
    assert [r for r in more["rows"] if r in gammas["rows"]] == gammas["rows"]
    assert [r["policy"] for r in more["rows"] if r not in gammas["rows"]] == ["exact:gamma=0.5,lam=2.0,charge=mi,eps=0.001"]
    (tmp_path / "out" / "sudoku_frontier.json").write_text(json.dumps(fourth))  # back to the file the checks below expect
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

    # --families under a new --name starts that file with those families alone, the entropy budget among them.
    new = ["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--name", "alone", "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit):  # without the entropy budget no gap has its base
        frontier.main([*new, "--families", "demask", "--quick"])
    assert not (tmp_path / "out" / "alone.json").exists()
    frontier.main([*new, "--families", "entropy budget", "demask", "--quick"])
    alone = json.loads((tmp_path / "out" / "alone.json").read_text())
    assert {r["family"] for r in alone["rows"]} == {"entropy budget", "demask"} and len(alone["runs"]) == 1
    assert [r["accuracy %"] for r in alone["rows"] if r["family"] == "demask"] == [r["accuracy %"] for r in demask]
    assert (tmp_path / "out" / "alone.md").is_file()


def test_frontier_decodes_the_d_head_families_with_the_d_head(tmp_path, sudoku_few_blanks_inputs):
    from unmask.mi.estimator import HeadConfig, MIHead, save_head

    frontier = load_script("sudoku_frontier")
    model_dir, data = sudoku_few_blanks_inputs
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
    assert all(r["mean_nfe"] == masked[r["set"]] for r in d_rows if r["family"] in frontier.D_RULES)
    # At the budget's pace the uniform charge changes nothing: every paced row is its entropy-budget twin.
    budget = {(r["set"], r["policy"].split(",")[0]): r for r in second["rows"] if r["family"] == "entropy budget"}
    paced = [r for r in d_rows if r["family"] in frontier.D_PACED]

    def twin(r):  # the entropy-budget row at a paced row's γ
        return budget[r["set"], r["policy"].split(",")[0].replace("mi_paced", "mi")]
    assert paced and all((r["mean_nfe"], r["accuracy %"]) == (twin(r)["mean_nfe"], twin(r)["accuracy %"]) for r in paced)
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
                        "--budget", "3", "--steps", "2", "--warmup", "1", "--batch-size", "2", "--samples", "2",
                        "--d-hidden", "8", "--eval-every", "2", "--ckpt-every", "2", "--step-cost", "0.5"])
    assert code == 0, err
    for f in ("order_policy.json", "order_policy.safetensors"):
        shutil.copy(run / f, model_dir / f)
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
                "--adaptive", "threshold:tau=0.9", "eb:gamma=1", "--learned", f"c0.5={run}", f"same={alone}",
                "--out", str(out)])
    result = json.loads((out / "learned_order.json").read_text())
    learned = [r for r in result["rows"] if bench.family(r["policy"]) == "learned"]
    assert [r["policy"] for r in learned] == ["learned:steps=3,sample=True", "learned:steps=3,sample=False",
                                              "learned[c0.5]:steps=3", "learned[c0.5]:steps=3,sample=False",
                                              "learned[same]:steps=3", "learned[same]:steps=3,sample=False"]
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
    shutil.copytree(model_dir, other)  # the model with the order trained for it, then other weights
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


def test_frontier_extend_measures_only_the_points_a_file_lacks(tmp_path, sudoku_benchmark_inputs):
    frontier = load_script("sudoku_frontier")
    model_dir, data = sudoku_benchmark_inputs
    args = ["--model", str(model_dir), "--data-dir", str(data), "--n", "4", "--name", "ext", "--out", str(tmp_path), "--quick"]
    frontier.main([*args, "--families", "entropy budget"])
    path = tmp_path / "ext.json"
    first = json.loads(path.read_text())
    specs = [r["policy"] for r in first["rows"] if r["set"] == "test-kaggle"]
    assert len(specs) == len(frontier.FAMILIES["entropy budget"][::2]) >= 3
    gone, half = specs[0], specs[-1]  # a point missing on both sets, and one on test-hard only
    for r in first["rows"]:
        r["accuracy %"] = -1  # a mark: a kept row keeps it, a measured one cannot
    first["rows"] = [r for r in first["rows"] if r["policy"] != gone and not (r["policy"] == half and r["set"] == "test-hard")]
    path.write_text(json.dumps(first))
    frontier.main([*args, "--families", "entropy budget", "--extend"])
    rows = json.loads(path.read_text())["rows"]
    assert sorted((r["set"], r["policy"]) for r in rows) == sorted((s, p) for s in frontier.REGIME for p in specs)  # no duplicate
    fresh = {r["policy"] for r in rows if r["accuracy %"] >= 0}
    assert fresh == {gone, half}  # the missing point and the half-kept one, on both sets; nothing else measured again
    assert json.loads(path.read_text())["runs"][-1]["extended"] is True
    with pytest.raises(SystemExit):  # --extend widens named families only
        frontier.main([*args, "--extend"])
