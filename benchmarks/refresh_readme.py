"""Rewrite the README's marked result tables from their results files, after a benchmark reran.

    python benchmarks/refresh_readme.py            # list the rows that would change, write nothing
    python benchmarks/refresh_readme.py --write    # rewrite README.md (atomically) and list them

What it rewrites (the markers are those of ``benchmarks/check_readme.py``):
- a ``rows`` table: its body becomes the results file's table with the same header;
- a ``subset`` table: each row that is not, cell for cell, a file row becomes the file row with the
  same names, on the columns shown. The names are the row's cells that are not numbers (set,
  policy), or the columns a ``key=`` option of the marker lists (``key=set,eps``), compared as text.
  A row whose names match no file row, or several, is left as it is and listed.
Cells are compared as text (``100`` is not kept for a file's ``99.6``); a README cell whose text
the file repeats keeps its emphasis. ``numbers`` and ``pivot`` tables, and the prose, are left for a
hand edit: rerun ``check_readme.py``. Exits 1 when anything is left for a hand edit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_readme as cr  # noqa: E402  (the markers, the tables and the cell comparison)

from unmask.io import atomic_write  # noqa: E402

ROOT = cr.ROOT


def _text(cell: str) -> str:
    return cr.plain(cell)


def _cells(readme_row: list[str] | None, file_row: list[str]) -> list[str]:
    """The file's cells, except where the README's cell has the same text (its emphasis kept)."""
    readme_row = readme_row or []
    return [readme_row[k] if k < len(readme_row) and _text(readme_row[k]) == _text(b) else b for k, b in enumerate(file_row)]


def _names(row: list[str], columns: list[int]) -> tuple[str, ...]:
    return tuple(_text(row[i]) if i < len(row) else "" for i in columns)


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
        body = []
        for fr in f.rows:  # the README's emphasis kept from its one row of the same names
            cols = [i for i, c in enumerate(fr) if cr.as_number(c) is None]
            same = [r for r in t.rows if _names(r, cols) == _names(fr, cols)]
            body.append(_cells(same[0] if len(same) == 1 else None, fr))
        return body, []
    idx = [fh.index(h) for h in want]
    named = spec.options["key"].split(",") if "key" in spec.options else None
    if named and not set(named) <= set(want):
        return t.rows, [f"{t.name()}: key columns {sorted(set(named) - set(want))} are not shown"]
    shown = lambda fr: [fr[i] if i < len(fr) else "" for i in idx]  # noqa: E731  a file row on the columns shown
    body, left = [], []
    for r in t.rows:
        if any([_text(c) for c in r] == [_text(c) for c in shown(fr)] for fr in f.rows):
            body.append(r)  # already the file's
            continue
        keys = [c for c, (a, h) in enumerate(zip(r, want)) if (h in named if named else cr.as_number(a) is None and _text(a))]
        match = [fr for fr in f.rows if _names(r, keys) == _names(shown(fr), keys)]
        if len(match) == 1:
            body.append(_cells(r, shown(match[0])))
        else:
            body.append(r)
            by = f"its {'key' if named else 'name'} columns"
            left.append(f"{t.name()}: row '{' | '.join(r)[:70]}' matches {len(match)} rows of {where} by {by}; edit it by hand")
    return body, left


def refresh(text: str, root: Path = ROOT) -> tuple[str, list[str], list[str]]:
    """``text`` with every ``rows``/``subset`` table rewritten from its file; a line for each row
    changed; a line for each table or row left for a hand edit (both in the README's order)."""
    lines = text.splitlines(keepends=True)
    changes, left = [], []
    for t in reversed(cr.tables(text)):  # from the end, so earlier line numbers stay valid
        if t.marker is None:
            continue
        here_left, here_changes = [], []
        try:
            spec = cr.parse_marker(t.marker)
        except ValueError as e:
            spec, here_left = None, [f"{t.name()}: {e}"]
        if spec is None or spec.none:
            left[:0] = here_left
            continue
        where = " + ".join(spec.paths)
        missing = [p for p in spec.paths if not (root / p).is_file()]
        if missing:
            here_left.append(f"{t.name()}: results file {', '.join(missing)} does not exist")
        elif spec.mode != "rows" or not all(p.endswith(".md") for p in spec.paths):
            if errors := cr.check_table(t, root):
                here_left.append(f"{t.name()}: {len(errors)} mismatches in a table rewritten by hand ({spec.mode}); edit it")
        else:
            file_tables = [ft for p in spec.paths for ft in cr.tables((root / p).read_text())]
            body, bad = refreshed_rows(t, spec, file_tables, where)
            here_left += bad
            if body != t.rows:
                old = {tuple(r) for r in t.rows}
                here_changes = [f"{t.name()}: now '{' | '.join(r)[:90]}'" for r in body if tuple(r) not in old]
                here_changes += [f"{t.name()}: gone '{' | '.join(r)[:90]}'" for r in t.rows if r not in body]
                start = t.line + 1  # 0-based index of the first body line (header at t.line - 1, rule after it)
                indent = lines[t.line - 1][: len(lines[t.line - 1]) - len(lines[t.line - 1].lstrip())]
                lines[start:start + len(t.rows)] = [indent + "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n"
                                                    for r in body]
        left[:0] = here_left
        changes[:0] = here_changes
    return "".join(lines), changes, left


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("readme", nargs="?", default=str(ROOT / "README.md"), type=Path)
    p.add_argument("--write", action="store_true", help="rewrite the README (else only list what would change)")
    args = p.parse_args()
    if not args.readme.is_file():
        sys.exit(print(f"refresh_readme.py: {args.readme}: no such file", file=sys.stderr) or 2)
    text = args.readme.read_text()
    new, changes, left = refresh(text, ROOT)
    if args.write and new != text:
        atomic_write(args.readme, lambda tmp: Path(tmp).write_text(new))
    for line in changes + left:
        print(line)
    tables = len({c.split(": ", 1)[0] for c in changes})
    print(f"{len(changes)} row changes in {tables} tables {'written' if args.write else 'to write'}, "
          f"{len(left)} left for a hand edit", file=sys.stderr)
    sys.exit(1 if left else 0)


if __name__ == "__main__":
    main()
