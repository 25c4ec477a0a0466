"""MkDocs hook: serve the benchmark figures from where the benchmarks write them.

Results pages show PNGs that live in ``benchmarks/results/<subject>/`` beside their tables; copying them
into ``docs/`` would let the two drift. This hook adds every PNG under ``benchmarks/results`` to the
site at the same relative path, so a page links it as ``../benchmarks/results/<subject>/NAME.png``.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def on_files(files, config):
    for png in sorted((ROOT / "benchmarks" / "results").rglob("*.png")):
        files.append(File(str(png.relative_to(ROOT)), src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
