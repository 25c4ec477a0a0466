"""benchmarks/sudoku/reproduce_sudoku.sh (dry runs: what it would run, where, and what it refuses) and
benchmarks/sudoku/sudoku_rounds.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmarks.scripts import ROOT, load_script, standard_sets_of

REPRODUCE = ROOT / "benchmarks" / "sudoku" / "reproduce_sudoku.sh"


def reproduce(*args: str, stamps: Path, **env: str):
    """``DRY_RUN=1 reproduce_sudoku.sh ARGS`` with its stamps under ``stamps`` (prints, runs nothing)."""
    import os
    import subprocess

    env = {**os.environ, "STAMPS": str(stamps), "DRY_RUN": "1", **env}
    return subprocess.run(["bash", str(REPRODUCE), *args], env=env, capture_output=True, text=True, timeout=60)


def shipped_hash() -> str:
    from unmask.runs import file_digest

    return file_digest(ROOT / "unmask" / "models" / "sudoku" / "model.safetensors")


def dry_commands(stdout: str) -> list[list[str]]:
    """The commands a dry run prints, as words."""
    import shlex

    return [shlex.split(line) for line in stdout.splitlines() if line.startswith("  ")]


def option(words: list[str], name: str) -> str | None:
    """The value of option ``name`` in a command's words (the last one given wins, as with argparse)."""
    values = [words[i + 1] for i, w in enumerate(words[:-1]) if w == name]
    return values[-1] if values else None


def written(commands: list[list[str]]) -> set[str]:
    """The results files (without suffix) the benchmarks among ``commands`` write: OUT/NAME (NAME: --name or
    the script's own name) for a benchmark writing into a folder, OUT itself for one taking a path prefix;
    and the files ``cp`` puts into a folder (a head kept beside the tables: DIR/mi_head)."""
    out = set()
    for words in commands:
        if words[0] == "python" and words[1].startswith("benchmarks/") and option(words, "--out"):
            folder = option(words, "--out")
            out |= {f"{folder}/{option(words, '--name') or Path(words[1]).stem}", folder}
        elif words[0] == "cp" and words[-1].endswith("/"):
            out |= {f"{words[-1]}{Path(w).stem}" for w in words[1:-1]}
    return out


def test_reproduce_sudoku_reruns_what_a_new_model_needs_into_folders_of_its_own(tmp_path):
    import re

    r = reproduce("3", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    assert re.findall(r"^step (\d)", r.stdout, re.M) == list("13456789")  # the data is always made if missing
    h = shipped_hash()  # the script's hash is the library's file_digest
    assert f"on model {h}" in r.stdout
    # the shipped head is refitted into the model's own folder, on sequential and parallel states
    assert "mi train --task sudoku --model unmask/models/sudoku" in r.stdout
    builds = ["data/mi/sudoku-head-seq", "data/mi/sudoku-head-par", "data/mi/sudoku-head-seq3", "data/mi/sudoku-head-par4"]
    data = "".join(rf"--data {b}-{h} " for b in builds)  # 10,000 states, half of them along parallel trajectories
    assert re.search(rf"{data}--steps 12000 --out unmask/models/sudoku\n", r.stdout)
    # the D head, same states
    assert re.search(rf"{data}--out runs/mi-head-influence-{h} --steps 3000 --target influence\n", r.stdout)
    keep = "benchmarks/models"  # the heads and order policies the 24-layer model's tables read
    first = "".join(rf"--data {b}-{h} " for b in builds[:2])  # the 3,000-state head shipped before: the first two builds
    assert re.search(rf"--model unmask/models/sudoku {first}--steps 3000 --out runs/mi-head-3k-{h}\n", r.stdout)
    assert re.search(rf"{data}--steps 3000 --out runs/mi-head-10k-{h}\n", r.stdout)  # the same data, 3,000 steps
    mi = "benchmarks/results/mi"  # the 24-layer model's MI tables (mi/12layer: the 12-layer model's)
    for run, kept in (("3k", "sudoku24-3k"), ("10k", "sudoku24-10k"), ("influence", "sudoku24-influence-10k")):
        assert (f"cp runs/mi-head-{run}-{h}/mi_head.json runs/mi-head-{run}-{h}/mi_head.safetensors {keep}/heads/{kept}/\n"
                in r.stdout)
    assert re.search(rf"cp unmask/models/sudoku/mi_head.json unmask/models/sudoku/mi_head.safetensors "
                     rf"{keep}/heads/sudoku24-relu/\n", r.stdout)
    assert (f"mi_head_calibration.py {keep}/heads/sudoku24-relu --old {keep}/heads/sudoku24-3k "
            f"--out {mi}/sudoku_head_calibration\n" in r.stdout)  # the shipped head's copy against the one before it
    # its cost on the states the statistics run of step 4 built (a folder named after the model)
    assert f"--states-dir runs/sudoku_mi_stats-{h} --out {mi}\n" in r.stdout
    assert f"mi_head_cost.py unmask/models/sudoku unmask/models/sudoku --data runs/sudoku_mi_stats-{h} " in r.stdout
    assert r.stdout.index("sudoku_mi_stats.py --model") < r.stdout.index("mi_head_cost.py")
    states = {int(n) for n in re.findall(r"--states (\d+) --shard-size 100 --rows 16 --policy mi:gamma=1\\,lam=0", r.stdout)}
    assert states == {1500, 3500}
    for out in (*builds, "runs/order-sudoku-tau0.1-c0.2"):
        assert re.search(rf"--out {re.escape(out)}-{h}\b", r.stdout), out  # an old model's builds are never resumed
    # the policy the tables read is retrained (the 12-layer model's plain-ELBO and c = 1 policies are history)
    assert re.findall(r"keep_order_policy.py runs/(\S+) (\S+)\n", r.stdout) == [
        (f"order-sudoku-tau0.1-c0.2-{h}", f"{keep}/orders/sudoku24-tau0.1-c0.2")]
    assert not any(tmp_path.iterdir())  # a dry run stamps nothing


def test_reproduce_sudoku_makes_every_table_the_readme_reports_on_the_shipped_model(tmp_path):
    # Bugs caught: a default results folder other than the 24-layer model's (the docs' tables of the
    # 24-layer model would not be remade, or the 12-layer model's history in benchmarks/results/mi/12layer
    # overwritten), a README table no step makes, a frontier run of its own file missing, a step reading a
    # head folder no earlier step makes, the fixed-pass tables left beside the 150-puzzle frontier.
    import re

    r = reproduce("3", "8", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    commands = dry_commands(r.stdout)
    made = written(commands)
    pages = "".join(p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])
    tables = ("benchmarks/results/mi/", "benchmarks/results/sudoku/low_nfe/", "benchmarks/results/order/sudoku-24layer/")
    marked = {w.removesuffix(Path(w).suffix) for m in re.findall(r"<!--\s*results:\s*(.*?)\s*-->", pages)
              for w in m.split() if w.startswith(tables) and not w.startswith("benchmarks/results/mi/12layer/")}
    assert len(marked) >= 12  # (every table of the 24-layer model's sections)
    assert sorted(marked - made) == []
    assert "benchmarks/results/sudoku/sudoku_policies" in made  # the policy table, read by step 5's --baselines
    gpu = "benchmarks/results/mi"
    keep = "benchmarks/models/heads"
    benchmarks = [w for w in commands if w[0] == "python" and w[1].startswith("benchmarks/") and option(w, "--out")]
    for words in benchmarks:  # nothing of the 12-layer history is rewritten: each subject's current folder
        out = option(words, "--out")
        subject = words[1].split("/")[1]
        assert "12layer" not in out and "history" not in out, words
        assert out.startswith(f"benchmarks/results/{subject}") \
            or (subject == "tools" and out.startswith("benchmarks/results/sudoku/")) \
            or (subject == "order" and out.startswith("benchmarks/results/order/sudoku-24layer/")), words
    frontier = [w for w in commands if w[1:2] == ["benchmarks/mi/sudoku_frontier.py"]]
    f = ["--model", "unmask/models/sudoku", "--n", "150", "--threads", "2", "--out", gpu]  # the README's $F
    assert len(frontier) == 24 and all(w[2:10] == f for w in frontier)
    assert sum(option(w, "--name") == "sudoku_frontier_300" and option(w, "--n") == "300" for w in frontier) == 6
    for name in ("sudoku_frontier", "sudoku_frontier_300"):  # each file starts afresh, with a full or entropy-budget run
        runs = [i for i, w in enumerate(commands)
                if w[1:2] == ["benchmarks/mi/sudoku_frontier.py"] and (option(w, "--name") or "sudoku_frontier") == name]
        assert commands[runs[0] - 1] == ["rm", "-f", f"{gpu}/{name}.json"]
    heads = {option(w, "--influence-head") for w in commands} | {option(w, "--head") for w in commands} | {
        option(w, "--old") for w in commands}
    assert heads - {None} == {f"{keep}/sudoku24-influence-10k", f"{keep}/sudoku24-relu", f"{keep}/sudoku24-3k",
                              f"{keep}/sudoku24-values-10k", f"{keep}/sudoku24-wide"}
    for head in heads - {None}:  # copied into place (by step 6, or step 7 for the widened puzzles' head) before it is read
        copied = [i for i, w in enumerate(commands) if w[0] == "cp" and w[-1] == f"{head}/"]
        read = [i for i, w in enumerate(commands) if head in w and w[0] != "cp" and w[:2] != ["mkdir", "-p"]]
        assert copied and copied[0] < min(read), head
    fixed = [w for w in commands if w[1:2] == ["benchmarks/mi/sudoku_fixed_steps.py"]]
    assert [option(w, "--exact-n") for w in fixed] == [None, "100", None]
    assert "--tables-only" in fixed[-1] and option(fixed[-1], "--frontier") == "sudoku_frontier_300"
    assert all(option(w, "--influence-head") == f"{keep}/sudoku24-influence-10k" for w in fixed)
    mi = [w for w in commands if w[1:2] == ["benchmarks/mi/sudoku_mi.py"]]
    assert option(mi[-1], "--baselines") == "benchmarks/results/sudoku/sudoku_policies.json"


def test_reproduce_sudoku_skips_only_the_steps_done_on_this_model(tmp_path):
    h = shipped_hash()
    (tmp_path / h).mkdir()
    (tmp_path / h / "step-4").write_text("done\n")
    (tmp_path / "0123456789abcdef").mkdir()
    (tmp_path / "0123456789abcdef" / "step-5").write_text("done\n")  # another model's stamp
    r = reproduce("3", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"step 4 (shipped_head): done on model {h}, skipped" in r.stdout
    builds = [line for line in r.stdout.splitlines() if "unmask mi data" in line]  # step 4's data is not built again
    assert builds and all("train-wide-3k.csv" in line for line in builds)  # (step 7 builds the widened puzzles' own)
    assert "sudoku_mi_stats.py" not in r.stdout  # (step 6 reads step 4's data)
    assert f"step 5 (mi_tables) on model {h}" in r.stdout
    assert "step 3 (baselines) on model" in r.stdout and "python benchmarks/sudoku/sudoku_policies.py" in r.stdout


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
    # (refused by `unmask sudoku train`), the hard puzzles it trains on not made, a GPU phase not started
    # from the model before it (or not repeating its steps), the export not the last phase's.
    import re

    r = reproduce("1", "2", stamps=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [line.strip() for line in r.stdout.splitlines() if line.startswith("  ")]
    six = [c for c in lines if c.startswith("unmask sudoku train") and "--out runs/sudoku " in c + " "]
    twelve = [c for c in lines if c.startswith("unmask sudoku train") and "--out runs/sudoku-stack12" in c]
    gpu = [c for c in lines if "benchmarks/sudoku/train_sudoku_gpu.sh" in c]
    assert len(six) == 1 and len(twelve) == 1 and len(gpu) == 2
    assert lines.index(six[0]) < lines.index(twelve[0]) < lines.index(gpu[0]) < lines.index(gpu[1])
    assert "--init runs/sudoku/model" in twelve[0] and "--puzzles data/sudoku/train-hard.csv" in twelve[0]
    assert ("--n-layers 12" in twelve[0]) != ("--resume" in twelve[0])  # the shape on a fresh start only
    assert "INIT=runs/sudoku-stack12/model RUN=runs/sudoku-gpu24 STEPS=6603 " in gpu[0]
    assert "INIT=runs/sudoku-gpu24/model RUN=runs/sudoku-gpu24b LR=4e-4 SEED=25 STEPS=2400 " in gpu[1]
    for kind, seed, name in (("hard", 6, "train-hard"), ("hard", 7, "train-hard-b")):
        if not (ROOT / "data" / "sudoku" / f"{name}.csv").exists():
            made = [c for c in lines if f"--kind {kind} --n 20000 --seed {seed} --out data/sudoku/{name}.csv" in c]
            assert made and lines.index(made[0]) < lines.index(gpu[0])
    assert re.search(r"cp runs/sudoku-gpu24b/model/config.json runs/sudoku-gpu24b/model/model.safetensors "
                     r"unmask/models/sudoku/\n", r.stdout)
    assert "cp runs/sudoku-gpu24/log.jsonl benchmarks/results/sudoku/runs/phase1.jsonl" in r.stdout
    assert "cp runs/sudoku-gpu24b/log.jsonl benchmarks/results/sudoku/runs/phase2.jsonl" in r.stdout
    assert ("learning_curve.py benchmarks/results/sudoku/runs/phase1.jsonl benchmarks/results/sudoku/runs/phase2.jsonl "
            "--out benchmarks/results/sudoku/sudoku_learning_curve") in r.stdout


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
        assert "unmask/models" not in line and "benchmarks/results" not in line and "benchmarks/models" not in line, line
        for path in re.findall(r"(?:--out|--model|--head|--old) (\S+)", line):
            assert path.startswith((model, results, "runs/", "data/")), line
    reads_a_model = re.compile(r"benchmarks/\w+/(sudoku_policies|sudoku_mi_stats|sudoku_mi|exact_mi_scaling|sudoku_frontier|"
                               r"sudoku_fixed_steps|learned_order|mi_head_variants)\.py|"
                               r"unmask (mi (data|train|map)|sudoku train-order)")
    readers = [c for c in commands if reads_a_model.search(c)]
    assert len(readers) >= 15 and all(f"--model {model}" in c for c in readers), [c for c in readers if model not in c]
    for c in commands:  # every benchmark writes under the candidate's results (or a run folder)
        if c.startswith("python benchmarks/"):
            out = re.search(r"--out (\S+)", c) or re.search(r"keep_order_policy\.py \S+ (\S+)", c)
            assert out and out.group(1).startswith((results, "runs/")), c
    assert f"--steps 12000 --out {model}\n" in r.stdout  # the shipped head goes beside the candidate
    assert f"order_policy.safetensors {model}/\n" in r.stdout
    assert f"--baselines {results}/sudoku_policies.json" in r.stdout  # the candidate's own policy table
    # its own states
    assert re.search(rf"--data runs/sudoku_mi_stats-[0-9a-f]{{16}} --out {re.escape(results)}/mi_head_cost\n", r.stdout)
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
