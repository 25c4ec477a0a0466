"""Check that every result table in README.md and the docs matches the committed results file it comes from.

    python benchmarks/tools/check_readme.py            # README.md and docs/**/*.md; exit 1 with one line per mismatched cell
    python benchmarks/tools/check_readme.py docs/results/sudoku.md      # one page
    python benchmarks/tools/check_readme.py --refresh [--write]   # after a benchmark reran: the tables again from their files

Each table that shows measured figures carries a marker comment on the line(s) just above it:

    <!-- results: benchmarks/results/sudoku/sudoku_policies.md -->
    <!-- results: benchmarks/results/mi/12layer/sudoku_mi.md subset -->
    <!-- results: benchmarks/results/maths/maths_policies.md pivot row=policy col="budget T" value="accuracy %" -->
    <!-- results: unmask/models/sudoku/mi_head.json numbers scale=100 -->
    <!-- results: none (why the table has no results file) -->

Modes (the word after the path(s); ``rows`` when none is given):

``rows``
    The README table is the file's table as printed: same columns, same rows in the same order
    (found among the file's Markdown tables by its header). With ``subset`` the README may show
    some of the file's columns (by header name) and some of its rows, each equal to a file row on
    every column shown. (A ``key=C1,C2`` option names the columns that tell the rows apart, for
    ``--refresh``; the check ignores it.)
``pivot row=C col=C value=C``
    A policy × budget view of a file table: a README row whose first cell holds a code span
    (`` `top_prob` ``) is the file rows whose column ``row`` is that name or starts with
    ``name:``; each further README column's header holds a number (``T = 4``) matched against
    column ``col``; the cell must equal that file row's ``value``. Rows without a code span (a
    paper's figures) are checked as ``numbers``.
``numbers [scale=100]``
    For derived tables (several figures in a cell, JSON sources): every number in the table body
    (outside code spans) must be a value of the file(s), as printed — a number with d decimals matches a file value
    that rounds to it at d decimals (``scale=100`` also accepts 100 × a file value, for
    fractions shown as percentages). Markdown (tables and text), JSON and JSONL files are read.

Cells are compared after dropping Markdown emphasis and code backticks; numbers are compared as
numbers at the README's precision (``69.0`` matches a file's ``69``, ``94,640`` matches ``94640``).
Tables in the results part of the README (before ``## How it fits together``) that show numbers
must carry a marker (``none`` for tables that are no measurement, or one quoted from elsewhere).

``--refresh`` lists the rows that a rerun changed (``--write`` rewrites the README, atomically): a
``rows`` table becomes the file's table; in a ``subset`` table each row that is not, cell for cell, a
file row becomes the file row with the same names (its cells that are not numbers, or the marker's
``key=`` columns), compared as text, so one row's figures never land under another's names; a row
whose names match no file row, or several, is left and listed. Cells are compared as text (``100`` is
not kept for a file's ``99.6``); a cell whose text the file repeats keeps its emphasis. ``numbers``
and ``pivot`` tables, and the prose, stay hand edits. Exits 1 when anything is left for one.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from unmask.io import atomic_write

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"<!--\s*results:\s*(.*?)\s*-->")
NUMBER = re.compile(r"(?<![\w.,])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])(?!,\d{3})")
RESULTS_END = "## How it fits together"
MODES = ("rows", "pivot", "numbers")


@dataclass
class Table:
    """A Markdown table: where it starts (1-based line), its header and body cells, its marker."""

    line: int
    header: list[str]
    rows: list[list[str]]
    marker: str | None = None
    marker_line: int = 0

    def name(self) -> str:
        return f"README table at line {self.line} ({' | '.join(self.header)[:60]})"


@dataclass
class Spec:
    """A parsed marker."""

    paths: list[str]
    mode: str = "rows"
    subset: bool = False
    options: dict = field(default_factory=dict)
    none: bool = False
    root: Path = ROOT  # where the paths are relative to (the repository)


def split_row(line: str) -> list[str]:
    """Cells of a ``| a | b |`` line (escaped pipes kept inside cells)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def is_rule(line: str) -> bool:
    return bool(re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", line))


def tables(text: str) -> list[Table]:
    """Every Markdown table of ``text`` (outside code fences), with the marker just above it."""
    lines = text.splitlines()
    out, fence, k = [], False, 0
    while k < len(lines):
        if lines[k].lstrip().startswith("```"):
            fence = not fence
        elif not fence and lines[k].lstrip().startswith("|") and k + 1 < len(lines) and is_rule(lines[k + 1]):
            t = Table(k + 1, split_row(lines[k]), [])
            j = k + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                t.rows.append(split_row(lines[j]))
                j += 1
            up = k - 1
            while up >= 0 and not lines[up].strip():
                up -= 1
            if up >= 0 and (m := MARKER.search(lines[up])):
                t.marker, t.marker_line = m.group(1), up + 1
            out.append(t)
            k = j
            continue
        k += 1
    return out


def parse_marker(marker: str) -> Spec:
    if marker.split()[0].lower().startswith("none"):
        return Spec([], none=True)
    words = shlex.split(marker)
    spec = Spec([])
    for w in words:
        if "=" in w:
            key, value = w.split("=", 1)
            spec.options[key] = value
        elif w in MODES:
            spec.mode = w
        elif w == "subset":
            spec.subset = True
        else:
            spec.paths.append(w)
    if not spec.paths:
        raise ValueError(f"marker {marker!r} names no results file")
    if spec.mode == "pivot" and not {"row", "col", "value"} <= spec.options.keys():
        raise ValueError(f"marker {marker!r}: pivot needs row=, col= and value=")
    return spec


def plain(cell: str) -> str:
    """A cell without Markdown emphasis or code backticks."""
    return re.sub(r"\*\*|(?<!\\)\*|`", "", cell).strip()


def as_number(cell: str) -> tuple[float, int] | None:
    """``(value, decimals)`` if the cell is one number (a trailing % allowed), else None."""
    s = plain(cell).replace("−", "-").rstrip("%").strip()
    m = re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:e([-+]?\d+))?", s)
    if not m:
        return None
    decimals = len(m.group(1) or "") - int(m.group(2) or 0)  # 2e-05: 5 decimals
    return float(s.replace(",", "")), max(decimals, 0)


def numbers_in(text: str) -> list[tuple[float, int]]:
    return [v for m in NUMBER.finditer(text) if (v := as_number(m.group(0))) is not None]


def shown_as(value: float, printed: tuple[float, int]) -> bool:
    """Whether ``value`` prints as ``printed`` (value, decimals) at that precision."""
    target, decimals = printed
    return abs(round(value, decimals) - target) <= 1e-9 * max(1.0, abs(target))


def same_cell(readme: str, file: str) -> bool:
    a, b = as_number(readme), as_number(file)
    if a is not None and b is not None:
        return shown_as(b[0], a)
    return plain(readme) == plain(file)


def file_values(path: Path) -> tuple[list[float], str]:
    """Every number a results file holds: JSON/JSONL leaves (and numbers in their strings), or Markdown text."""
    text = path.read_text()
    if path.suffix == ".md":
        return [v for v, _ in numbers_in(text)], text
    docs = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" else [json.loads(text)]
    values: list[float] = []

    def walk(x) -> None:
        if isinstance(x, bool):
            return
        if isinstance(x, (int, float)):
            values.append(float(x))
        elif isinstance(x, str):
            values.extend(v for v, _ in numbers_in(x))
        elif isinstance(x, dict):
            for key, v in x.items():
                walk(key)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(docs)
    return values, text


def check_numbers(t: Table, spec: Spec, rows: list[list[str]], where: str) -> list[str]:
    values = [v for p in spec.paths for v in file_values(spec.root / p)[0]]
    scale = float(spec.options.get("scale", 1))
    values += [v * scale for v in values] if scale != 1 else []
    errors = []
    for r in rows:
        for c, cell in enumerate(r):
            for m in NUMBER.finditer(plain(re.sub(r"`[^`]*`", "", cell))):  # code spans are names, not figures
                printed = as_number(m.group(0))
                if printed and not any(shown_as(v, printed) for v in values):
                    col = t.header[c] if c < len(t.header) else f"column {c + 1}"
                    errors.append(f"{t.name()}: row '{' | '.join(r)[:70]}', column '{col}': {m.group(0)} is not in {where}")
    return errors


def source_table(t: Table, spec: Spec, file_tables: list[Table]) -> Table | None:
    """The results file's table a README table shows: the first with all its columns (or ``table=K``)."""
    want = {plain(h) for h in t.header}
    if "table" in spec.options:
        k = int(spec.options["table"]) if spec.options["table"].isdigit() else 0
        chosen = file_tables[k - 1 : k] if k >= 1 else []
        return chosen[0] if chosen and want <= {plain(h) for h in chosen[0].header} else None
    return next((f for f in file_tables if want <= {plain(h) for h in f.header}), None)


def check_rows(t: Table, spec: Spec, file_tables: list[Table], where: str) -> list[str]:
    want = [plain(h) for h in t.header]
    f = source_table(t, spec, file_tables)
    if f is None:
        return [f"{t.name()}: no table in {where} has the columns {want}"]
    fh = [plain(h) for h in f.header]
    errors = []
    if not spec.subset:
        if want != fh:
            return [f"{t.name()}: columns {want} differ from {where}'s {fh} (mark it 'subset' to show some)"]
        if len(t.rows) != len(f.rows):
            errors.append(f"{t.name()}: {len(t.rows)} rows, {where} has {len(f.rows)} (mark it 'subset' to show some)")
            same = lambda r, fr: len(r) == len(fr) and all(same_cell(a, b) for a, b in zip(r, fr))  # noqa: E731
            errors += [f"{t.name()}: row '{' | '.join(r)[:70]}' is not in {where}"
                       for r in t.rows if not any(same(r, fr) for fr in f.rows)]
            errors += [f"{t.name()}: {where}'s row '{' | '.join(fr)[:70]}' is missing"
                       for fr in f.rows if not any(same(r, fr) for r in t.rows)]
            return errors
        for k, (r, fr) in enumerate(zip(t.rows, f.rows)):
            for c, (a, b) in enumerate(zip(r, fr)):
                if not same_cell(a, b):
                    errors.append(f"{t.name()}: row {k + 1} '{' | '.join(r)[:70]}', column '{want[c]}': "
                                  f"README {a!r}, {where} {b!r}")
        return errors
    idx = [fh.index(h) for h in want]
    for r in t.rows:
        if any(all(same_cell(a, fr[i] if i < len(fr) else "") for a, i in zip(r, idx)) for fr in f.rows):
            continue
        keys = [(a, i) for a, i in zip(r, idx) if as_number(a) is None and plain(a)]
        near = [fr for fr in f.rows if all(same_cell(a, fr[i] if i < len(fr) else "") for a, i in keys)]
        if near:
            fr = near[0]
            bad = [(want[c], a, fr[i]) for c, (a, i) in enumerate(zip(r, idx)) if not same_cell(a, fr[i])]
            errors += [f"{t.name()}: row '{' | '.join(r)[:70]}', column '{h}': README {a!r}, {where} {b!r}" for h, a, b in bad]
        else:
            errors.append(f"{t.name()}: row '{' | '.join(r)[:70]}' is not in {where}")
    return errors


def check_pivot(t: Table, spec: Spec, file_tables: list[Table], where: str) -> list[str]:
    o = spec.options
    f = next((f for f in file_tables if {o["row"], o["col"], o["value"]} <= {plain(h) for h in f.header}), None)
    if f is None:
        return [f"{t.name()}: no table in {where} has the columns {o['row']!r}, {o['col']!r}, {o['value']!r}"]
    fh = [plain(h) for h in f.header]
    ri, ci, vi = fh.index(o["row"]), fh.index(o["col"]), fh.index(o["value"])
    errors, loose = [], []
    for r in t.rows:
        code = re.search(r"`([^`]+)`", r[0])
        if not code:
            loose.append(r)
            continue
        name = code.group(1)
        for c, cell in enumerate(r[1:], 1):
            if not plain(cell):
                continue
            budget = numbers_in(t.header[c])
            if not budget:
                errors.append(f"{t.name()}: column '{t.header[c]}' names no {o['col']}")
                continue
            match = [fr for fr in f.rows if (plain(fr[ri]) == name or plain(fr[ri]).startswith(name + ":"))
                     and as_number(fr[ci]) is not None and shown_as(as_number(fr[ci])[0], budget[0])]
            if not match:
                errors.append(f"{t.name()}: row '{r[0]}', column '{t.header[c]}': no row of {where} "
                              f"with {o['row']} {name} and {o['col']} {budget[0][0]:g}")
            elif not same_cell(cell, match[0][vi]):
                errors.append(f"{t.name()}: row '{r[0]}', column '{t.header[c]}': README {cell!r}, {where} {match[0][vi]!r}")
    return errors + (check_numbers(t, spec, loose, where) if loose else [])


def check_table(t: Table, root: Path = ROOT) -> list[str]:
    try:
        spec = parse_marker(t.marker)
    except ValueError as e:
        return [f"{t.name()}: {e}"]
    if spec.none:
        return []
    spec.root = root
    missing = [p for p in spec.paths if not (root / p).is_file()]
    if missing:
        return [f"{t.name()}: results file {', '.join(missing)} does not exist"]
    where = " + ".join(spec.paths)
    if spec.mode == "numbers":
        return check_numbers(t, spec, t.rows, where)
    md = [p for p in spec.paths if p.endswith(".md")]
    if len(md) != len(spec.paths):
        return [f"{t.name()}: mode {spec.mode} needs Markdown results files, got {where}"]
    file_tables = [ft for p in md for ft in tables((root / p).read_text())]
    return (check_pivot if spec.mode == "pivot" else check_rows)(t, spec, file_tables, where)


def check(text: str, root: Path = ROOT, require: bool = True) -> list[str]:
    """Every mismatch between the marked tables of a README text and their results files (paths
    relative to ``root``), one line each; and, with ``require``, every table of the results part that
    shows numbers but has no marker."""
    errors = []
    end = text.find(RESULTS_END)
    end_line = text[:end].count("\n") + 1 if end >= 0 else 10**9
    for t in tables(text):
        if t.marker is None:
            body = " ".join(re.sub(r"`[^`]*`", "", c) for r in t.rows for c in r)
            if require and t.line < end_line and numbers_in(body):
                errors.append(f"{t.name()}: shows numbers but has no '<!-- results: FILE -->' marker above it")
            continue
        errors += check_table(t, root)
    return errors


def _cells(readme_row: list[str] | None, file_row: list[str]) -> list[str]:
    """The file's cells, except where the README's cell has the same text (its emphasis kept)."""
    readme_row = readme_row or []
    return [readme_row[k] if k < len(readme_row) and plain(readme_row[k]) == plain(b) else b for k, b in enumerate(file_row)]


def _names(row: list[str], columns: list[int]) -> tuple[str, ...]:
    return tuple(plain(row[i]) if i < len(row) else "" for i in columns)


def refreshed_rows(t, spec, file_tables: list, where: str) -> tuple[list[list[str]], list[str]]:
    """The table's new body, and a line for each row it could not refresh."""
    want = [plain(h) for h in t.header]
    f = source_table(t, spec, file_tables)
    if f is None:
        return t.rows, [f"{t.name()}: no table in {where} has the columns {want}"]
    fh = [plain(h) for h in f.header]
    if not spec.subset:
        if want != fh:
            return t.rows, [f"{t.name()}: columns {want} differ from {where}'s {fh}"]
        body = []
        for fr in f.rows:  # the README's emphasis kept from its one row of the same names
            cols = [i for i, c in enumerate(fr) if as_number(c) is None]
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
        if any([plain(c) for c in r] == [plain(c) for c in shown(fr)] for fr in f.rows):
            body.append(r)  # already the file's
            continue
        keys = [c for c, (a, h) in enumerate(zip(r, want)) if (h in named if named else as_number(a) is None and plain(a))]
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
    found = []  # (changes, left) of each marked table, from the last
    for t in reversed(tables(text)):  # from the end, so earlier line numbers stay valid
        changes, left = [], []
        found.append((changes, left))
        if t.marker is None:
            continue
        try:
            spec = parse_marker(t.marker)
        except ValueError as e:
            left.append(f"{t.name()}: {e}")
            continue
        if spec.none:
            continue
        where = " + ".join(spec.paths)
        missing = [p for p in spec.paths if not (root / p).is_file()]
        if missing:
            left.append(f"{t.name()}: results file {', '.join(missing)} does not exist")
        elif spec.mode != "rows" or not all(p.endswith(".md") for p in spec.paths):
            if errors := check_table(t, root):
                left.append(f"{t.name()}: {len(errors)} mismatches in a table rewritten by hand ({spec.mode}); edit it")
        else:
            file_tables = [ft for p in spec.paths for ft in tables((root / p).read_text())]
            body, bad = refreshed_rows(t, spec, file_tables, where)
            left += bad
            if body != t.rows:
                old = {tuple(r) for r in t.rows}
                changes += [f"{t.name()}: now '{' | '.join(r)[:90]}'" for r in body if tuple(r) not in old]
                changes += [f"{t.name()}: gone '{' | '.join(r)[:90]}'" for r in t.rows if r not in body]
                start = t.line + 1  # 0-based index of the first body line (header at t.line - 1, rule after it)
                indent = lines[t.line - 1][: len(lines[t.line - 1]) - len(lines[t.line - 1].lstrip())]
                lines[start:start + len(t.rows)] = [indent + "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n"
                                                    for r in body]
    found.reverse()
    return "".join(lines), [c for ch, _ in found for c in ch], [x for _, lf in found for x in lf]


def pages() -> list[Path]:
    """The pages whose tables are held to results files: the README and every page of the docs site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def requires_markers(path: Path) -> bool:
    """Must every table of numbers on this page name its results file? The README's results part and the
    docs' results and reproduce pages: yes; other pages (a policy's defaults, say) show no measurements."""
    parts = Path(shown(path)).parts  # (inside the repository; a page outside it has none of these folders)
    return path.name == "README.md" or ("docs" in parts and ("results" in parts or "reproduce" in parts))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pages", nargs="*", help="Markdown pages to check (default: README.md and every page under docs/)")
    p.add_argument("--refresh", action="store_true", help="list the rows the results files changed (see --write)")
    p.add_argument("--write", action="store_true", help="with --refresh: rewrite the pages with them")
    args = p.parse_args()
    paths = [Path(x) for x in args.pages] or pages()
    for path in paths:
        if not path.is_file():
            sys.exit(print(f"check_readme.py: {path}: no such file", file=sys.stderr) or 2)
    if args.refresh:
        sys.exit(max(refresh_main(args, path) for path in paths))
    n_errors = n_checked = n_none = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        errors = check(text, require=requires_markers(path))
        marked = [t for t in tables(text) if t.marker]
        for e in errors:
            print(f"{shown(path)}: {e}")
        checked = sum(not t.marker.lower().startswith("none") for t in marked)
        n_errors, n_checked, n_none = n_errors + len(errors), n_checked + checked, n_none + len(marked) - checked
    print(f"{len(paths)} pages, {n_checked} tables checked against results files, {n_none} marked none: "
          f"{'OK' if not n_errors else f'{n_errors} mismatches'}", file=sys.stderr)
    sys.exit(1 if n_errors else 0)


def shown(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def refresh_main(args, path: Path) -> int:
    """``--refresh [--write]`` on one page; 1 if anything is left for a hand edit."""
    text = path.read_text(encoding="utf-8")
    new, changes, left = refresh(text, ROOT)
    if args.write and new != text:
        atomic_write(path, lambda tmp: Path(tmp).write_text(new, encoding="utf-8"))
    for line in changes + left:
        print(f"{shown(path)}: {line}")
    n_tables = len({c.split(": ", 1)[0] for c in changes})
    print(f"{shown(path)}: {len(changes)} row changes in {n_tables} tables {'written' if args.write else 'to write'}, "
          f"{len(left)} left for a hand edit", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    main()
