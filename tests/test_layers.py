"""The folder map is the architecture: every module imports only from its own layer and the ones
below it, never from the package face (faces excepted), and no two modules import each other in a
circle. Function-level imports count too: the test walks every module's whole AST. A package's
``__init__`` is a module of its own: a submodule that takes a sibling through its package face
(``from kbtools.linker import terms``) closes a circle with the ``__init__`` that imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kbtools"

#: layer of each folder (and top-level module); a module may import its own folder and lower layers.
LAYERS = {
    "errors": 0, "progress": 1, "words": 1,
    "model": 1,
    "store": 2,
    "retrieval": 3, "linker": 3, "judging": 3, "graph": 3,
    "ops": 4,
    "demo": 5,
    "evaluate": 6,
    "cli": 7, "views": 7, "mcp": 7, "fleet": 7, "__init__": 7, "__main__": 7,
}
#: same-layer folders that may use each other (pure algorithm folders stay independent otherwise)
FACES = {"cli", "views", "mcp", "fleet", "__init__", "__main__"}


def _module_name(path: Path) -> str:
    """``kbtools/linker/terms.py`` -> ``kbtools.linker.terms``; a package's ``__init__`` is a module of
    its own (``kbtools.linker.__init__``), so that a submodule importing names through its package
    face is seen as the circle it is."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(dotted: str) -> str | None:
    """The module a dotted import target names: a ``.py`` file, or a package's ``__init__``."""
    where = PACKAGE.parent / dotted.replace(".", "/")
    if where.with_suffix(".py").exists():
        return dotted
    if (where / "__init__.py").exists():
        return dotted + ".__init__"
    return None


def _imports(path: Path, module: str) -> set[str]:
    """The kbtools modules ``path`` imports. ``from pkg import sub`` imports both ``sub`` and the
    package's ``__init__`` (it runs it and reads names from it): import a sibling as ``from pkg.sub
    import name``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):  # imports for type checkers only are not imports at run time
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
    found = set()
    parts = module.split(".")
    package = parts[:-1]  # the package a relative import starts from (an __init__'s is its own folder)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "kbtools"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "kbtools":
                continue
            found.add(target)
            found |= {f"{target}.{a.name}" for a in node.names if _resolve(f"{target}.{a.name}")}
    return {r for r in map(_resolve, found) if r}


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
GRAPH = {m: _imports(p, m) for m, p in MODULES.items()}


def test_every_folder_has_a_layer():
    assert {_folder(m) for m in MODULES} <= set(LAYERS)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    here = _folder(module)
    bad = []
    for target in sorted(GRAPH[module]):
        there = _folder(target)
        if target == "kbtools.__init__" and here not in FACES:
            bad.append(f"{target} (the package face; only cli, views, mcp, notebooks and jobs import it)")
        elif there == here:
            continue
        elif LAYERS[there] > LAYERS[here]:
            bad.append(f"{target} (layer {there} is above {here})")
        elif LAYERS[there] == LAYERS[here] and here not in FACES:
            bad.append(f"{target} ({there} and {here} are sibling layers and stay independent)")
    assert not bad, f"{module} imports upwards: " + "; ".join(bad)


def test_no_import_circles():
    modules = set(MODULES)
    edges = {m: {t for t in GRAPH[m] if t in modules and t != m} for m in modules}
    index, low, stack, on_stack, circles, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for m in sorted(modules):
        if m not in index:
            strong(m)
    assert not circles, f"import circles: {circles}"


TESTS = Path(__file__).resolve().parent


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(path: Path) -> set[tuple[str, str]]:
    """Every ``_private`` kbtools name (or module) the file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "kbtools" and not node.level:
            for alias in node.names:
                if _private(alias.name) or any(_private(p) for p in node.module.split(".")):
                    found.add((path.name, f"{node.module}.{alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "kbtools" and any(_private(p) for p in parts):
                    found.add((path.name, alias.name))
    return found


def test_no_test_imports_a_private_kbtools_name():
    """Tests state behaviour through public names: no test file imports a ``_private`` name."""
    found = set().union(*(_private_imports(p) for p in sorted(TESTS.rglob("*.py"))))
    assert not found, sorted(found)


def test_the_test_command_runs_the_slow_tests():
    """Slow loops are marked ``slow`` so that a quick run can leave them out, never so that the
    test command does: neither ``scripts/test.sh`` nor pytest's configured options deselect them."""
    root = PACKAGE.parent
    command = (root / "scripts" / "test.sh").read_text()
    config = (root / "pyproject.toml").read_text()
    addopts = next(line for line in config.splitlines() if line.startswith("addopts"))
    pytest_line = next(line for line in command.splitlines() if "-m pytest" in line)
    assert "slow" not in pytest_line and " -k " not in pytest_line and "--deselect" not in pytest_line
    assert "slow" not in addopts and " -m " not in addopts
    marked = [p.name for p in sorted(TESTS.glob("test_*.py")) if "@pytest.mark.slow" in p.read_text()]
    assert len(marked) >= 3, marked
