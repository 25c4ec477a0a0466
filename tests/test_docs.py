"""The front door: the docs site builds with warnings as errors, results pages open with their summary,
the README stays short, the code passes the linter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(not _has("mkdocs") or not _has("mkdocstrings"),
                    reason="the docs extra is not installed: pip install -e '.[docs]'")
def test_the_docs_site_builds_without_a_warning(tmp_path):
    # Bugs caught: a page left out of the nav or a nav entry without its page, a link to a page or anchor
    # that does not exist, a figure whose file is gone, a docstring mkdocstrings cannot render, an API
    # reference naming a module that moved (mkdocs.yml sets strict: every warning fails the build).
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    assert (tmp_path / "site" / "results" / "sudoku" / "index.html").is_file()
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "build_policy" in api and "decode_steps" in api  # the reference is generated from the docstrings


def test_every_results_page_opens_with_its_summary():
    # Bug caught: a results page that opens with a table or a diary instead of what was found.
    pages = sorted((ROOT / "docs" / "results").glob("*.md"))
    assert len(pages) >= 6
    for page in pages:
        if page.name == "index.md":
            continue
        headings = re.findall(r"^##? .*$", page.read_text(encoding="utf-8"), re.M)
        assert headings[:2] and headings[0].startswith("# ") and headings[1] == "## In short", page.name


def test_the_readme_is_a_front_door():
    # Bug caught: the README growing back into a lab notebook, or losing its two commands or its Python block.
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    blocks = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    assert [lang for lang, _ in blocks[:2]] == ["bash", "bash"]
    assert "unmask sudoku demo" in blocks[0][1] and "pytest" in blocks[1][1]
    assert any(lang == "python" for lang, _ in blocks)


@pytest.mark.skipif(shutil.which("ruff") is None and not _has("ruff"), reason="ruff is not installed: pip install -e '.[dev]'")
def test_the_code_passes_ruff():
    # Bug caught: an unused import, an undefined name, unsorted imports or an over-long line (pyproject's [tool.ruff]).
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "unmask", "tests", "benchmarks", "examples"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_the_version_is_one_number_everywhere_and_answered_without_torch():
    # Bugs caught: `unmask --version` importing every command (and torch) first, or reporting another version
    # than the package, pyproject (dynamic) and CITATION.cff.
    code = ("import sys\nfrom unmask.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import unmask

    assert r.stdout.strip() == f"unmask {unmask.__version__}"
    assert f'version: "{unmask.__version__}"' in (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert f"## {unmask.__version__} " in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_the_readme_lists_exactly_the_stable_policies():
    # Bug caught: a policy promoted, demoted or renamed in the registry while the README's table stays as it was.
    from unmask.decode.registry import Tier, policies_in_tier
    from unmask.policies import POLICIES

    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Policies"):text.index("## Documentation")]
    listed = re.findall(r"^\| `(\w+)[:`]", section, re.M)
    assert sorted(listed) == sorted(policies_in_tier(Tier.STABLE))
    assert all(name in POLICIES for name in listed)
