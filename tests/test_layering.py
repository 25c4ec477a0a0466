"""The import graph of the package: lower layers never import higher ones, no cycles, small modules.

Every import of ``unmask.*`` is read with ``ast`` from the source (module level and inside
functions alike), so a lazy import cannot hide a layering violation.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "unmask"
BENCHMARKS = ROOT / "benchmarks"
MAX_LINES = 400

# Layers, low to high. A module may import its own layer or lower ones; the most specific prefix wins.
LAYERS: list[set[str]] = [
    {"errors", "checks", "io", "denoiser", "artifacts", "dist", "optim", "oracle", "runs"},
    {"model", "decode", "decode.*"},
    {"adapters", "adapters.*"},
    {"mi", "mi.*", "order", "order.*"},
    {"policies"},
    {"train", "eval", "tasks.base", "tasks"},
    {"tasks.*", "plots"},  # the concrete tasks (tasks.sudoku, tasks.maths, ...), plots
    {"commands", "commands.*"},
    {"cli", "__main__"},
]

# The one sanctioned upward edge: the task registry builds a concrete task (or a task's adapter for a
# pretrained model) lazily, inside a factory function (never at module level), so that
# ``import unmask.tasks`` stays light. The check below still sees it only inside functions.
REGISTERED = (".task", ".antibody", ".plm")  # the concrete-task modules the registry's factories import


def _registry_lazy(module: str, target: str) -> bool:
    return module == "unmask.tasks" and target.startswith("unmask.tasks.") and target.endswith(REGISTERED)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


MODULES = _modules()


def _resolve(base: str, name: str) -> str:
    """``from base import name``: the submodule ``base.name`` if there is one, else ``base``."""
    return f"{base}.{name}" if f"{base}.{name}" in MODULES else base


def _imports(path: Path, module: str) -> list[tuple[str, bool]]:
    """``(imported unmask module, at module level?)`` for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    # Imports directly at module level, or inside module-level if/try blocks, count as module level.
    level_nodes = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        level_nodes.add(id(node))
        if isinstance(node, (ast.If, ast.Try)):
            stack += (node.body + node.orelse + getattr(node, "finalbody", [])
                      + [s for h in getattr(node, "handlers", []) for s in h.body])
    out = []
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        at_top = id(node) in level_nodes
        if isinstance(node, ast.Import):
            out += [(a.name, at_top) for a in node.names if a.name == "unmask" or a.name.startswith("unmask.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against this module's package
                pkg = module.split(".") if is_pkg else module.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base == "unmask" or base.startswith("unmask."):
                out += [(_resolve(base, a.name), at_top) for a in node.names]
    return out


GRAPH = {m: _imports(p, m) for m, p in MODULES.items()}


def _rank(module: str) -> int | None:
    """The layer of ``unmask.X``: an exact name wins, else the longest ``prefix.*`` that matches."""
    rel = module.removeprefix("unmask").removeprefix(".")
    best = None  # ((exact?, prefix length), rank)
    for rank, patterns in enumerate(LAYERS):
        for pat in patterns:
            if pat.endswith(".*"):
                prefix = pat[:-2]
                ok, key = rel.startswith(prefix + "."), (0, len(prefix))
            else:
                ok, key = rel == pat, (1, len(pat))
            if ok and (best is None or key > best[0]):
                best = (key, rank)
    return None if best is None else best[1]


def test_every_module_has_a_layer():
    # Bug caught: a new module (say unmask/foo.py) added without deciding where it sits in the layers.
    unranked = sorted(m for m in MODULES if m != "unmask" and _rank(m) is None)
    assert not unranked, f"modules without a layer (add them to LAYERS): {unranked}"


def _type_checking_only(path: Path) -> list[str]:
    """Imports of ``unmask.*`` in ``path`` that run (anything outside an ``if TYPE_CHECKING:`` block)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = {id(n) for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
              for n in ast.walk(node)}
    return [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in hidden
            and "unmask" in ast.unparse(n)]


def test_the_package_front_door_imports_nothing_until_used():
    # Bug caught: unmask/__init__.py importing a submodule (and so torch) at import time, which would make
    # `import unmask` and `unmask --version` pay for every layer; its names load lazily (__getattr__).
    assert not _type_checking_only(PKG / "__init__.py")
    code = ("import sys, unmask\n"
            "assert unmask.__version__\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('unmask.') or m == 'torch')\n"
            "assert not loaded, loaded\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_every_public_name_resolves_to_its_module():
    # Bug caught: a name listed in unmask.__all__ whose module moved or was renamed (an AttributeError for users).
    code = ("import unmask\n"
            "assert sorted(unmask.__all__) == sorted(['__version__', *unmask._EXPORTS])\n"
            "missing = [n for n in unmask.__all__ if not hasattr(unmask, n)]\n"
            "assert not missing, missing\n"
            "assert unmask.parse_policy('mi:gamma=1,lam=1').spec_name == 'mi'\n"
            # unmask.decode stays callable as the loop whatever imported the subpackage first (it is the subpackage)
            "import sys, inspect, unmask.eval, unmask.decode.loop as loop\n"
            "assert unmask.decode is sys.modules['unmask.decode'] and callable(unmask.decode)\n"
            "assert list(inspect.signature(unmask.decode).parameters)[:3] == ['denoiser', 'tokens', 'policy']\n"
            "assert loop.decode is unmask.decode.decode\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_rank_table_matches_the_design():
    # Bug caught: a typo in LAYERS that would let e.g. decode sit above mi and hide violations.
    expect = {
        "unmask.errors": 0, "unmask.artifacts": 0, "unmask.oracle": 0, "unmask.optim": 0, "unmask.dist": 0,
        "unmask.model": 1, "unmask.decode": 1, "unmask.decode.loop": 1, "unmask.decode.semi_ar": 1,
        "unmask.adapters": 2, "unmask.adapters.hf": 2, "unmask.mi": 3, "unmask.mi.policies": 3, "unmask.order.x": 3,
        "unmask.policies": 4, "unmask.eval": 5, "unmask.train": 5, "unmask.tasks": 5, "unmask.tasks.base": 5,
        "unmask.tasks.sudoku": 6, "unmask.tasks.sudoku.task": 6, "unmask.tasks.maths.gsm8k": 6, "unmask.plots": 6,
        "unmask.commands": 7, "unmask.commands.mi": 7, "unmask.cli": 8, "unmask.__main__": 8,
    }
    assert {m: _rank(m) for m in expect} == expect


def test_lower_layers_never_import_higher_ones():
    # Bug caught: e.g. unmask.decode.loop importing unmask.mi (or unmask.eval importing unmask.tasks.sudoku,
    # or a function-level `from unmask.policies import ...` inside unmask.decode).
    bad = []
    for mod, edges in GRAPH.items():
        r = _rank(mod)
        if r is None:
            continue
        for target, at_top in edges:
            t = _rank(target)
            if t is None or t <= r:
                continue
            if _registry_lazy(mod, target) and not at_top:
                continue
            bad.append(f"{mod} (layer {r}) imports {target} (layer {t}){'' if at_top else ' inside a function'}")
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_task_registry_imports_concrete_tasks_only_lazily():
    # Bug caught: unmask/tasks/__init__.py importing unmask.tasks.sudoku.task at module level, which makes
    # every `import unmask.eval` (through unmask.tasks.base) pull in every task.
    eager = [t for t, at_top in GRAPH["unmask.tasks"] if at_top and _rank(t) > _rank("unmask.tasks")]
    assert not eager, f"unmask.tasks imports {eager} at module level"


def test_decode_knows_nothing_of_mi_order_tasks_adapters():
    # Bug caught: the decode package reaching (directly or through a chain) into mi/order/tasks/adapters.
    seen, stack = set(), [m for m in MODULES if m == "unmask.decode" or m.startswith("unmask.decode.")]
    while stack:
        m = stack.pop()
        if m in seen:
            continue
        seen.add(m)
        stack += [t for t, _ in GRAPH.get(m, []) if t in MODULES]
    forbidden = ("unmask.mi", "unmask.order", "unmask.tasks", "unmask.adapters", "unmask.policies", "unmask.commands",
                 "unmask.cli")
    reached = sorted(m for m in seen if m.startswith(forbidden))
    assert not reached, f"unmask.decode reaches {reached}"


def test_no_import_cycles():
    # Bug caught: two modules of one layer importing each other (e.g. decode.policy <-> decode.semi_ar).
    graph = {m: {t for t, _ in edges if t in MODULES and t != m} for m, edges in GRAPH.items()}
    # A package importing its own submodules is how packages work; a submodule importing its package
    # back would be a cycle, so those edges stay in.
    color: dict[str, int] = {}
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        color[m] = 1
        for t in sorted(graph[m]):
            if color.get(t) == 1:
                cycles.append(path[path.index(t):] + [t] if t in path else [m, t])
            elif t not in color:
                visit(t, path + [t])
        color[m] = 2

    for m in sorted(graph):
        if m not in color:
            visit(m, [m])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_importing_decode_loads_only_the_bottom_layers():
    # Bug caught: unmask.decode importing unmask.mi (e.g. to register mi policies) at import time, or
    # pulling in tasks/adapters/commands through some other module.
    code = (
        "import sys, unmask.decode\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('unmask.mi', 'unmask.tasks', 'unmask.order', "
        "'unmask.adapters', 'unmask.commands', 'unmask.cli', 'unmask.policies', 'unmask.eval', 'unmask.train')))\n"
        "assert not bad, bad\n"
        "assert 'transformers' not in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_small(module):
    # Bug caught: a module growing past 400 lines (split it).
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{MODULES[module].relative_to(ROOT)} has {n} lines (limit {MAX_LINES})"


BENCH_FILES = sorted(BENCHMARKS.glob("*/*.py"))  # benchmarks/<subject>/<script>.py


def test_benchmarks_are_filed_by_subject():
    # Bug caught: a script dropped loose at the top of benchmarks/ (each belongs to a subject's folder,
    # writing benchmarks/results/<subject>/).
    loose = sorted(p.name for p in BENCHMARKS.iterdir() if p.is_file() and p.name != "README.md")
    assert not loose, f"loose files at the top of benchmarks/: {loose}"
    assert len(BENCH_FILES) >= 20


@pytest.mark.parametrize("path", BENCH_FILES, ids=[f"{p.parent.name}/{p.name}" for p in BENCH_FILES])
def test_benchmarks_use_the_library_not_the_cli(path):
    # Bug caught: a benchmark importing unmask.cli / unmask.commands.* (CLI plumbing, not library API),
    # or importing another benchmark script (they must each stand alone).
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    siblings = {p.stem for p in BENCH_FILES}
    bad = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            bad.append(f"relative import from {node.module}")
        for name in names:
            if name in ("unmask.cli", "unmask.commands") or name.startswith(("unmask.cli.", "unmask.commands.")):
                bad.append(name)
            if name.split(".")[0] in siblings or name.startswith("benchmarks"):
                bad.append(f"{name} (another benchmark)")
    assert not bad, f"{path.name} imports {sorted(set(bad))}"
