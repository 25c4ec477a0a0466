"""The MI benchmark scripts (head cost, head variants, exact-MI scaling, head calibration) end to end on tiny models."""

from __future__ import annotations

import json

import pytest
import torch

from tests.benchmarks.scripts import load_script, standard_sets_of


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
    assert len(rows) == 10 and result["train_states"] + result["val_states"] == 12 and result["target"] == "raw"
    first, both_only = rows["mi train's (relu, rank 32)"], rows["same, fitted on both-direction targets only"]
    _, metrics = fit_head(load_model(model_dir), load_mi_data(tmp_path / "d"), HeadTrainConfig(steps=3), progress=False)
    assert (first["mse"] == pytest.approx(metrics["mse"], rel=1e-4)
            and first["spearman"] == pytest.approx(metrics["spearman"], abs=1e-6))
    assert first["parameters"] == both_only["parameters"] and both_only["fitted_pairs"] < first["fitted_pairs"]
    scaled = rows["mi train's, fitted on log(1 + I/0.01)"]  # mi train's fit with --scale 0.01
    _, on_scale = fit_head(load_model(model_dir), load_mi_data(tmp_path / "d"), HeadTrainConfig(steps=3, scale=0.01),
                           progress=False)
    assert scaled["mse"] == pytest.approx(on_scale["mse"], rel=1e-4) and scaled["mse"] != first["mse"]
    assert (rows["mi train's, + P(X_i | C) and its entropy, fitted on log(1 + I/0.01)"]["mse"]
            != rows["mi train's, + P(X_i | C) and its entropy"]["mse"])
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
    assert rows["mi train's, + P(X_i | C) and its entropy"]["parameters"] == (
        first["parameters"] + 10 * (2 + HeadTrainConfig().d_hidden))
    assert rows["MI of a coupled joint of P(X_i | C), P(X_j | C)"]["parameters"] == (
        2 * 16 + 16 * 128 + 128 + 128 * 64 + 64 + 2 * 32 + 2)  # LayerNorm, MLP into two rank-32 forms, their weights and biases
    assert -1 <= result["reference"]["exact_ij_vs_ji_spearman"] <= 1
    assert all(r["relative_cost"] > 0 for r in rows.values())
    # --target joint: every head fitted and scored on the probe joint's MI instead
    variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--target", "joint",
                   "--out", str(tmp_path / "out" / "j")])
    joint = json.loads((tmp_path / "out" / "j.json").read_text())
    _, metrics = fit_head(load_model(model_dir), load_mi_data(tmp_path / "d"), HeadTrainConfig(steps=3, target="joint"),
                          progress=False)
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
    assert [run["heads"] for run in again["runs"]][1] == ["mi train's (relu, rank 32)",
                                                          "exclusion MI of P(X | C), gated per pair"]
    for bad in (["--steps", "4"], ["--target", "joint"]):  # another fit than the kept rows': refused, nothing written
        with pytest.raises(SystemExit):
            variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", *bad,
                           "--only", "probes", "--out", str(tmp_path / "out" / "v")])
    assert json.loads((tmp_path / "out" / "v.json").read_text()) == again
    with pytest.raises(SystemExit):  # no file whose rows to keep
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--only", "relu",
                       "--out", str(tmp_path / "none")])
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
            variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--heads", "relu", *bad,
                           "--out", str(tmp_path / "x")])
    with pytest.raises(SystemExit):  # --only against rows fitted on all the training states
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--steps", "3", "--layers", "0", "--seed", "1",
                       "--only", "relu", "--train-states", "2", "--out", str(tmp_path / "out" / "v")])
    with pytest.raises(SystemExit):  # one or the other
        variants.main(["--model", str(model_dir), "--data", str(tmp_path / "d"), "--only", "relu", "--heads", "relu",
                       "--out", str(tmp_path / "x")])
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
    assert calls == [("test-kaggle", "sequential"), ("test-kaggle", "parallel"),
                     ("test-hard", "sequential"), ("test-hard", "parallel")]
    assert json.loads((tmp_path / "out" / "exact_mi_scaling.json").read_text())["rows"] == clean


def test_head_calibration_names_the_quantity_its_head_was_fitted_to(tmp_path):
    calibration = load_script("mi_head_calibration")
    bins = [{"exact_from": 0.0, "exact_to": 0.01, "pairs": 5, "mean_exact": 0.002, "mean_predicted": 0.004,
             "share_predicted_zero": 0.5},
            {"exact_from": 0.01, "exact_to": 1.0, "pairs": 3, "mean_exact": 0.3, "mean_predicted": 0.2,
             "share_predicted_zero": 0.0}]
    # (no target: a head fitted before targets were a choice)
    for target, name in ((None, "exact MI"), ("influence", "exact influence D")):
        head = tmp_path / str(target)
        head.mkdir()
        metrics = {"calibration": bins, "spearman": 0.5, **({"target": target} if target else {})}
        (head / "mi_head.json").write_text(json.dumps({"config": {"link": "relu"}, "metrics": metrics}))
        calibration.main([str(head), "--out", str(tmp_path / f"cal-{target}")])
        md = (tmp_path / f"cal-{target}.md").read_text()
        assert (f"| {name} from |" in md and f"(relu) | {name} |" in md and f"bins of the {name})" in md
                and (tmp_path / f"cal-{target}.png").is_file())
    # Beside an older head, each row names its own head's target.
    calibration.main([str(tmp_path / "influence"), "--old", str(tmp_path / "None"), "--out", str(tmp_path / "both")])
    md = (tmp_path / "both.md").read_text()
    assert "influence (relu) | exact influence D |" in md and "None (relu) | exact MI |" in md
