"""benchmarks/proteins/antibody_generation.py end to end on a tiny random ESM-2 (tests/fixtures/protein_models.py),
with an MI head and an order policy trained for it in a few steps and a fake real set of six short chains given by
--real. The judges run for real: ANARCI (skipped where it or Debian's HMMER is absent) and the PLL."""

from __future__ import annotations

import importlib.util
import json

import pytest

pytest.importorskip("transformers")

from tests.benchmarks.scripts import load_script  # noqa: E402
from tests.fixtures.protein_models import HEAVY  # noqa: E402
from unmask.tasks.proteins.fasta import AMINO_ACIDS, Record, read_fasta, write_fasta  # noqa: E402
from unmask.tasks.proteins.judges import numbering  # noqa: E402

needs_anarci = pytest.mark.skipif(
    importlib.util.find_spec("anarci") is None or not (numbering.HMMER_BIN / "hmmscan").exists(),
    reason="the judges need ANARCI (pip install anarci==2026.2.13.2) and Debian HMMER (apt-get install hmmer)")


def fake_real(path):
    """Six real heavy chains cut to 8..13 residues: six distinct lengths to draw from."""
    write_fasta(path, [Record(r.name, r.sequence[: 8 + k]) for k, r in enumerate(read_fasta(HEAVY)[:6])])
    return path


def run_cli(argv) -> None:
    from unmask.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    assert code in (0, None), argv


@pytest.fixture(scope="module")
def addons(esm2_dir, tmp_path_factory):
    """An MI head and an order policy (budget 3) for the tiny ESM-2, trained for a few steps on the fake real set."""
    d = tmp_path_factory.mktemp("addons")
    real, model = fake_real(d / "real.fasta"), f"hf:{esm2_dir}"
    run_cli(["mi", "data", "--task", "proteins", "--model", model, "--examples", real, "--states", "4", "--shard-size", "2",
             "--rows", "2", "--out", d / "data"])
    run_cli(["mi", "train", "--task", "proteins", "--model", model, "--data", d / "data", "--steps", "3", "--out", d / "head"])
    run_cli(["proteins", "train-order", "--model", model, "--data", real, "--out", d / "order", "--steps", "2", "--batch-size",
             "2", "--samples", "2", "--budget", "3", "--warmup", "1", "--eval-every", "2", "--ckpt-every", "2"])
    return d / "head", d / "order"


def test_bootstrap_resamples_chains_for_every_figure():
    """Bugs caught: the intervals resampled over residues or positions instead of chains (a chain set that is all one
    value would still vary), or an interval that does not hold the mean it belongs to."""
    bench = load_script("antibody_generation")
    real = ["ACDEFGHIKL", "MNPQRSTVWY"]
    same = bench.bootstrap(["ACDEFGHIKL"] * 8, real, {"pll": [-1.0] * 8}, resamples=200)
    assert same["pll_95"] == [-1.0, -1.0] and same["jsd_aa_95"][0] == same["jsd_aa_95"][1] > 0
    mixed = bench.bootstrap(["ACDEFGHIKL", "MNPQRSTVWY"] * 4, real, {"pll": [-1.0, -3.0] * 4}, resamples=200)
    lo, hi = mixed["pll_95"]
    assert -3 < lo < -2 < hi < -1  # the mean of the chains, -2, inside; far from a single chain's value
    assert mixed["jsd_aa_95"][0] >= 0 and mixed["jsd_aa_95"][1] > 0.01  # a resample can miss one half


@needs_anarci
def test_end_to_end_resumes_and_rebuilds(esm2_dir, addons, tmp_path, monkeypatch):
    """Bugs caught: chains of another length than drawn from the real set, residues outside the 20 standard ones, one
    NFE per batch instead of per chain (sequential must take exactly each chain's length), a chain's sample that
    depends on the batch it fell in, a PLL summed instead of averaged per residue, the judge scoring other tokens
    than the writer (same model here: the same PLL), a resume after an interruption that re-measures a finished row,
    a finished run that re-measures on a rerun, and --tables-only writing other tables than the run."""
    bench = load_script("antibody_generation")
    head, order = addons
    real = fake_real(tmp_path / "real.fasta")
    out = tmp_path / "out"
    policies = ["sequential", "topk:k=4", "mi:gamma=1,lam=1", "learned"]
    argv = ["--model", f"hf:{esm2_dir}", "--head", head, "--order", order, "--real", real, "--n", "3", "--batch-size", "2",
            "--judge", f"hf:{esm2_dir}", "--resamples", "50", "--out", out, "--policies", *policies]
    argv = [str(a) for a in argv]
    measure, calls = bench.measure, []

    def interrupted(spec, *rest):
        calls.append(spec)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed while measuring the second policy
        return measure(spec, *rest)

    monkeypatch.setattr(bench, "measure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bench.main(argv)
    calls.clear()
    monkeypatch.setattr(bench, "measure", lambda spec, *rest: calls.append(spec) or measure(spec, *rest))
    bench.main(argv)
    assert calls == policies[1:]  # the first row came from the cache
    result = json.loads((out / "antibody_generation.json").read_text())
    rows = {r["policy"].split(":")[0]: r for r in result["rows"]}
    assert [r["policy"] for r in result["rows"]] == ["sequential:metric=entropy", "topk:k=4,metric=entropy",
                                                      "mi:gamma=1.0,lam=1.0", "learned:steps=0,sample=True"]
    lengths = result["meta"]["lengths"]
    assert len(lengths) == 3 and set(lengths) <= {8, 9, 10, 11, 12, 13} and len(set(lengths)) > 1
    assert rows["sequential"]["nfe"] == lengths and max(rows["learned"]["nfe"]) <= 3
    judge = esm2_dir.name
    for name, r in rows.items():
        fasta = read_fasta(bench.fasta_path(out, r["policy"]))
        assert [len(f.sequence) for f in fasta] == lengths and all(set(f.sequence) <= set(AMINO_ACIDS) for f in fasta)
        assert [int(f.name.split("nfe=")[1].split()[0]) for f in fasta] == r["nfe"], name
        assert all(-4 < v < -2 for v in r["pll_writer_chains"]) and r["pll_writer_chains"] == r[f"pll_{judge}_chains"]
        assert r["n"] == 3 and 0 <= r["heavy_share"] <= 1 and r["jsd_aa_95"][0] <= r["jsd_aa_95"][1]
    assert result["reference"]["n"] == 6 and result["reference"]["pll_writer"] < 0
    md = (out / "antibody_generation.md").read_text()
    assert "| naive top-k, k = 4 | 19.1 | 0.185 | topk:k=4,metric=entropy |" in md and "ESM-C 300M" in md
    assert (out / "jsd_vs_nfe.png").is_file() and (out / "pll_vs_nfe.png").is_file()

    alone = tmp_path / "alone"  # topk alone, one chain per batch: the same chains
    bench.main([*argv[: argv.index("--out")], "--out", str(alone), "--batch-size", "1", "--policies", "topk:k=4"])
    topk = "topk:k=4,metric=entropy"
    assert bench.fasta_path(alone, topk).read_text() == bench.fasta_path(out, topk).read_text()

    calls.clear()
    bench.main(argv)  # a finished run: nothing measured again
    again = json.loads((out / "antibody_generation.json").read_text())
    assert calls == [] and again["rows"] == result["rows"] and again["meta"]["reused_rows"] == 5
    (out / "antibody_generation.md").unlink()
    (out / "jsd_vs_nfe.png").unlink()
    bench.main(["--out", str(out), "--tables-only"])
    assert (out / "antibody_generation.md").read_text() == md and (out / "jsd_vs_nfe.png").is_file()


def test_bad_input_is_one_line(esm2_dir, tmp_path, capsys):
    """Bugs caught: a mistyped spec, an MI-guided policy without its head or a missing results file ending in a traceback
    (or after minutes of work) instead of one argparse error line."""
    bench = load_script("antibody_generation")
    common = ["--model", f"hf:{esm2_dir}", "--real", str(fake_real(tmp_path / "r.fasta")), "--out", str(tmp_path / "o")]
    for extra, said in ((["--policies", "nonsense:k=1"], "nonsense"), (["--policies", "mi:gamma=1,lam=1"], "needs --head"),
                        (["--n", "1"], "--n must be"), (["--tables-only"], "antibody_generation.json")):
        with pytest.raises(SystemExit) as e:
            bench.main([*common, *extra] if extra != ["--tables-only"] else ["--out", str(tmp_path / "none"), *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert e.value.code == 2 and "error:" in err[-1] and said in err[-1], err
    assert not (tmp_path / "o").exists()  # refused before any work


def test_two_judges_of_one_name_are_refused(esm2_dir, tmp_path):
    """Bug caught: judges named by their folder, so hf:a/model and hf:b/model (or a folder called `writer`) silently
    overwrote each other's PLL columns."""
    bench = load_script("antibody_generation")
    with pytest.raises(bench.UnmaskError, match="a second judge named"):
        bench.load_judges([f"hf:{esm2_dir}", f"hf:{esm2_dir}"], tmp_path, "cpu")
