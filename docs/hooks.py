"""MkDocs hooks: serve the benchmark figures from where the benchmarks write them.

Results pages show PNGs that live in ``benchmarks/results/<subject>/`` beside their tables; copying them
into ``docs/`` would let the two drift. A page links a figure by its path in the repository, relative to
the page's own file (``docs/results/x.md`` writes ``../../benchmarks/results/<subject>/NAME.png``), which
is what GitHub shows. The site publishes every PNG under ``benchmarks/results`` at the same path below
its root, one folder up from the page's file, and rewrites those links to match.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def on_files(files, config):
    for png in sorted((ROOT / "benchmarks" / "results").rglob("*.png")):
        files.append(File(str(png.relative_to(ROOT)), src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    depth = page.file.src_uri.count("/")  # folders between docs/ and the page
    repo = "../" * (depth + 1) + "benchmarks/"  # the figure's path from the page's file in the repository
    return re.sub(r"\]\(" + re.escape(repo), "](" + "../" * depth + "benchmarks/", markdown)
