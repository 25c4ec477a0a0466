"""Mutation testing of the decode loop and policies, the MI code and the MDM loss (mutmut 3).

Runs ``mutmut run`` from scratch (``mutants/`` is deleted first), reads mutmut's per-file results
and writes ``benchmarks/results/tools/mutation.md`` and ``.json``: killed / survived / timeout counts per
file, the kill rate over all mutants and over the non-equivalent ones, every survivor with its diff
and its classification, the exact command, the date and the wall time.

Survivors are classified in ``benchmarks/tools/mutation_equivalent.txt``, one per line::

    <mutant name>  <hash of the function it mutates>  <class>  <one-line reason>

where class is ``equivalent`` (no test can tell: the same behaviour, e.g. a device argument on a
CPU-only run), ``unreachable`` (code mutmut cannot activate or observe: it runs while the package is
imported, before a mutant is selected, or only in a worker process) or ``not-worth-it`` (a real
change no test is worth writing for). The non-equivalent kill rate leaves out the first two. The hash
ties an entry to the function's text: mutmut numbers mutants per function, so an entry whose function
changed is reported stale, never applied to whatever mutant now has its number. ``--template`` prints
entries for unclassified survivors.

Usage (from the repository root, dev extra installed):
    python benchmarks/tools/mutation.py [--max-children 1]     # run mutmut, then write the report
    python benchmarks/tools/mutation.py --report-only          # re-read the last run in mutants/
    python benchmarks/tools/mutation.py --report-only --template
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "tools"
CLASSIFIED = ROOT / "benchmarks" / "tools" / "mutation_equivalent.txt"
LAST_RUN = ROOT / "mutants" / "benchmark-run.json"  # the command and wall time of the last run

# What is mutated: every function of unmask/decode and unmask/mi, and the MDM loss with its forward
# process in unmask/train.py (the rest of the trainer is not in scope). Which tests run is set in
# pyproject.toml ([tool.mutmut]).
SCOPE = ["unmask.decode.*", "unmask.mi.*", "unmask.train.x_mdm_loss__mutmut_*", "unmask.train.x_mask_batch__mutmut_*"]
CLASSES = ("equivalent", "unreachable", "not-worth-it")
# mutmut's exit codes (mutmut.stats.status_by_exit_code); anything else is "suspicious".
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout",
          -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "caught by type check",
          -11: "segfault", -9: "segfault", None: "not checked"}
CAUGHT = ("killed", "timeout", "caught by type check", "segfault")  # a test (or the runtime) noticed


def run_mutmut(max_children: int) -> dict:
    """A fresh ``mutmut run`` over SCOPE; returns the command and wall time."""
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *SCOPE]
    # One thread per process: the trainer otherwise takes every core, and an OpenMP pool inherited
    # through mutmut's fork can hang a child (a hang reads as a "timeout" kill).
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.time() - start
    tail = proc.stdout.replace("\r", "\n").splitlines()[-20:]
    if proc.returncode != 0:
        sys.exit(f"mutmut run failed ({proc.returncode}):\n" + "\n".join(tail))
    shown = ["OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1", "mutmut", *cmd[3:]]
    info = {"command": " ".join(f"'{c}'" if "*" in c else c for c in shown), "wall_s": round(wall, 1),
            "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"), "mutmut_tail": tail}
    LAST_RUN.write_text(json.dumps(info, indent=1))
    return info


def mangled(name: str) -> str:
    """``unmask.decode.loop.x_decode_steps__mutmut_3`` → ``x_decode_steps`` (mutmut's function key)."""
    return name.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[1]


def collect() -> list[dict]:
    """Every in-scope mutant: name, file, status and the hash of the function it mutates."""
    rows = []
    for meta in sorted((ROOT / "mutants" / "unmask").rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        source = str(meta.relative_to(ROOT / "mutants"))[: -len(".meta")]
        for name, code in data["exit_code_by_key"].items():
            if any(fnmatch.fnmatchcase(name, p) for p in SCOPE):
                status = STATUS.get(code, "suspicious")
                rows.append({"name": name, "file": source, "status": status,
                             "hash": data["hash_by_function_name"].get(mangled(name), "")})
    return rows


def read_classified() -> dict[str, dict]:
    entries = {}
    for line in CLASSIFIED.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, fhash, cls, reason = re.split(r"\s+", line.strip(), maxsplit=3)
        if cls not in CLASSES:
            sys.exit(f"{CLASSIFIED.name}: unknown class {cls!r} for {name} (use one of {CLASSES})")
        entries[name] = {"hash": fhash, "class": cls, "reason": reason}
    return entries


def diff_of(name: str) -> str:
    out = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=ROOT, capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if line[:1] in "-+" and not line.startswith(("---", "+++")))


def report(info: dict, template: bool) -> None:
    rows = collect()
    if not rows:
        sys.exit("no mutmut results in mutants/: run without --report-only first")
    classified = read_classified()
    per_file: dict[str, Counter] = {}
    survivors, stale = [], []
    for r in rows:
        per_file.setdefault(r["file"], Counter())[r["status"]] += 1
        entry = classified.get(r["name"])
        if r["status"] in CAUGHT:
            if entry:
                stale.append({"name": r["name"], "why": f"now {r['status']}"})
            continue
        if entry and entry["hash"] != r["hash"]:
            stale.append({"name": r["name"], "why": f"function changed ({entry['hash']} → {r['hash']})"})
            entry = None
        survivors.append({**r, "class": entry["class"] if entry else "unclassified",
                          "reason": entry["reason"] if entry else "", "diff": diff_of(r["name"])})
    names = {r["name"] for r in rows}
    stale += [{"name": n, "why": "no such mutant"} for n in classified if n not in names]

    total = len(rows)
    caught = sum(r["status"] in CAUGHT for r in rows)
    excluded = sum(s["class"] in ("equivalent", "unreachable") for s in survivors)
    worth = sum(s["class"] == "not-worth-it" for s in survivors)
    summary = {
        "mutants": total, "caught": caught, "killed": sum(r["status"] == "killed" for r in rows),
        "timeout": sum(r["status"] == "timeout" for r in rows), "not_caught": total - caught,
        "equivalent_or_unreachable": excluded, "not_worth_it": worth,
        "unclassified": sum(s["class"] == "unclassified" for s in survivors),
        "kill_rate": round(caught / total, 4),
        "kill_rate_non_equivalent": round(caught / max(total - excluded, 1), 4),
    }
    out = {"tool": f"mutmut {_mutmut_version()}", "scope": SCOPE, "pytest": _pytest_selection(), **info,
           "summary": summary, "per_file": {f: dict(c) for f, c in sorted(per_file.items())},
           "survivors": survivors, "stale_classifications": stale}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mutation.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    (RESULTS / "mutation.md").write_text(_markdown(out), encoding="utf-8")
    print(json.dumps(summary, indent=1))
    print(f"wrote {RESULTS / 'mutation.md'} and mutation.json")
    if template:
        for s in survivors:
            if s["class"] == "unclassified":
                print(f"{s['name']}  {s['hash']}  equivalent  TODO  # {s['diff'].splitlines()[-1] if s['diff'] else ''}")


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


def _pytest_selection() -> dict:
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    return {"tests": cfg.get("pytest_add_cli_args_test_selection", []), "extra_args": cfg.get("pytest_add_cli_args", [])}


def _markdown(out: dict) -> str:
    s = out["summary"]
    cols = ["killed", "timeout", "survived", "no tests", "suspicious", "not checked"]
    lines = [
        "# Mutation testing",
        "",
        f"Generated by `benchmarks/tools/mutation.py` ({out['tool']}) on {out.get('date', '?')}; "
        f"wall time of the mutmut run {out.get('wall_s', 0) / 60:.1f} min.",
        "",
        f"Command: `{out.get('command', '?')}`",
        "",
        "Scope: every function of `unmask/decode/` and `unmask/mi/`; of `unmask/train.py` only the MDM loss "
        "(`mdm_loss`) and its forward process (`mask_batch`).",
        "",
        f"Tests run against each mutant (those of `{' '.join(out['pytest']['tests'])}` that reach the mutated "
        f"function; extra pytest arguments `{' '.join(out['pytest']['extra_args'])}`).",
        "",
        f"**Kill rate: {s['caught']} / {s['mutants']} = {100 * s['kill_rate']:.1f} % of all mutants; "
        f"{s['caught']} / {s['mutants'] - s['equivalent_or_unreachable']} = {100 * s['kill_rate_non_equivalent']:.1f} % "
        f"of the non-equivalent ones** ({s['equivalent_or_unreachable']} survivors classified equivalent or "
        f"unreachable, {s['not_worth_it']} not worth a test, {s['unclassified']} unclassified). A timeout counts "
        "as caught.",
        "",
        "| file | mutants | " + " | ".join(cols) + " | caught |",
        "|---|---:|" + "---:|" * (len(cols) + 1),
    ]
    for f, c in out["per_file"].items():
        n = sum(c.values())
        got = sum(c.get(k, 0) for k in CAUGHT)
        lines.append(f"| {f} | {n} | " + " | ".join(str(c.get(k, 0)) for k in cols) + f" | {100 * got / n:.0f} % |")
    lines += ["", "## Survivors", "", "Classes: see the docstring of `benchmarks/tools/mutation.py`; reasons from "
              "`benchmarks/tools/mutation_equivalent.txt`.", ""]
    for cls in ("unclassified", "not-worth-it", "equivalent", "unreachable"):
        group = [v for v in out["survivors"] if v["class"] == cls]
        if not group:
            continue
        lines += [f"### {cls} ({len(group)})", ""]
        for v in group:
            lines.append(f"- `{v['name']}` ({v['status']}){': ' + v['reason'] if v['reason'] else ''}")
            lines += ["  ```diff", *("  " + d for d in v["diff"].splitlines()), "  ```"]
        lines.append("")
    if out["stale_classifications"]:
        lines += ["## Stale classifications", ""] + [f"- `{x['name']}`: {x['why']}" for x in out["stale_classifications"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-children", type=int, default=1, help="mutants tested at once (default 1)")
    p.add_argument("--report-only", action="store_true", help="do not run mutmut; report the run in mutants/")
    p.add_argument("--template", action="store_true", help="print classification lines for unclassified survivors")
    args = p.parse_args()
    if args.report_only:
        info = json.loads(LAST_RUN.read_text()) if LAST_RUN.exists() else {}
    else:
        info = run_mutmut(args.max_children)
    report(info, args.template)


if __name__ == "__main__":
    main()
