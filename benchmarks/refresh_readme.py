"""Rewrite the README's marked result tables from their results files, after a benchmark reran.

    python benchmarks/refresh_readme.py            # list what would change, write nothing
    python benchmarks/refresh_readme.py --write    # rewrite README.md (atomically), then list what is left

What it rewrites (the markers are those of ``benchmarks/check_readme.py``):
- a ``rows`` table: its body becomes the results file's table with the same header;
- a ``subset`` table: each row not in the file becomes the file row with the same names, on the
  columns shown. The names are the row's cells that are not numbers (set, policy), or the columns
  a ``key=`` option of the marker lists (``key=set,eps``). A row whose names match no file row, or
  several, is left as it is and listed.
A cell that already shows the file's value keeps its formatting (emphasis, precision). ``numbers``
and ``pivot`` tables, and the README's prose, are left for a hand edit: rerun ``check_readme.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_readme as cr  # noqa: E402  (the markers, the tables and the cell comparison)

ROOT = cr.ROOT


def _cells(readme_row: list[str], file_row: list[str]) -> list[str]:
    """The file's cells, except where the README already shows the same value its own way."""
    out = []
    for k, b in enumerate(file_row):
        a = readme_row[k] if k < len(readme_row) else None
        out.append(a if a is not None and cr.same_cell(a, b) else b)
    return out


def refreshed_rows(t, spec, file_tables: list, where: str) -> tuple[list[list[str]], list[str]]:
    """The table's new body, and a line for each row it could not refresh."""
    want = [cr.plain(h) for h in t.header]
    f = cr.source_table(t, spec, file_tables)
    if f is None:
        return t.rows, [f"{t.name()}: no table in {where} has the columns {want}"]
    fh = [cr.plain(h) for h in f.header]
    if not spec.subset:
        if want != fh:
            return t.rows, [f"{t.name()}: columns {want} differ from {where}'s {fh}"]
        names = lambda r: tuple(cr.plain(c) for c in r if cr.as_number(c) is None)  # noqa: E731
        body = []
        for fr in f.rows:  # the README's own formatting kept where its row of the same names shows the value
            same = [r for r in t.rows if names(r) == names(fr)]
            body.append(_cells(same[0], fr) if len(same) == 1 else fr)
        return body, []
    idx = [fh.index(h) for h in want]
    named = spec.options["key"].split(",") if "key" in spec.options else None
    if named and not set(named) <= set(want):
        return t.rows, [f"{t.name()}: key columns {sorted(set(named) - set(want))} are not shown"]
    cell = lambda fr, i: fr[i] if i < len(fr) else ""  # noqa: E731
    body, left = [], []
    for r in t.rows:
        if any(all(cr.same_cell(a, cell(fr, i)) for a, i in zip(r, idx)) for fr in f.rows):
            body.append(r)  # already the file's
            continue
        keys = [(a, i) for a, i, h in zip(r, idx, want) if (h in named if named else cr.as_number(a) is None and cr.plain(a))]
        match = [fr for fr in f.rows if all(cr.same_cell(a, cell(fr, i)) for a, i in keys)]
        if len(match) == 1:
            body.append(_cells(r, [cell(match[0], i) for i in idx]))
        else:
            body.append(r)
            by = f"its {'key' if named else 'name'} columns"
            left.append(f"{t.name()}: row '{' | '.join(r)[:70]}' matches {len(match)} rows of {where} by {by}; edit it by hand")
    return body, left


def refresh(text: str, root: Path = ROOT) -> tuple[str, int, list[str]]:
    """``text`` with every ``rows``/``subset`` table rewritten from its file; how many tables changed;
    a line for each table or row left for a hand edit."""
    lines = text.splitlines(keepends=True)
    changed, left = 0, []
    for t in reversed(cr.tables(text)):  # from the end, so earlier line numbers stay valid
        if t.marker is None:
            continue
        try:
            spec = cr.parse_marker(t.marker)
        except ValueError as e:
            left.append(f"{t.name()}: {e}")
            continue
        if spec.none:
            continue
        where = " + ".join(spec.paths)
        missing = [p for p in spec.paths if not (root / p).is_file()]
        if missing:
            left.append(f"{t.name()}: results file {', '.join(missing)} does not exist")
            continue
        if spec.mode != "rows" or not all(p.endswith(".md") for p in spec.paths):
            if errors := cr.check_table(t, root):
                left.append(f"{t.name()}: a {spec.mode} table with {len(errors)} mismatches; edit it by hand")
            continue
        file_tables = [ft for p in spec.paths for ft in cr.tables((root / p).read_text())]
        body, bad = refreshed_rows(t, spec, file_tables, where)
        left += bad
        if body != t.rows:
            start = t.line + 1  # 0-based index of the first body line (header at t.line - 1, rule after it)
            lines[start:start + len(t.rows)] = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n" for r in body]
            changed += 1
    return "".join(lines), changed, left[::-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("readme", nargs="?", default=str(ROOT / "README.md"), type=Path)
    p.add_argument("--write", action="store_true", help="rewrite the README (else only list what would change)")
    args = p.parse_args()
    if not args.readme.is_file():
        sys.exit(print(f"refresh_readme.py: {args.readme}: no such file", file=sys.stderr) or 2)
    text = args.readme.read_text()
    new, changed, left = refresh(text, ROOT)
    if args.write and new != text:
        tmp = args.readme.with_name(args.readme.name + ".tmp")
        tmp.write_text(new)
        tmp.replace(args.readme)
    for line in left:
        print(line)
    print(f"{changed} tables {'rewritten' if args.write else 'to rewrite'}, {len(left)} left for a hand edit", file=sys.stderr)


if __name__ == "__main__":
    main()
