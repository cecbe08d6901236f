"""The folder map is the architecture: every module imports only from its own layer and the ones
below it, never from the package face (faces excepted), and no two modules import each other in a
circle. Function-level imports count too: the test walks every module's whole AST."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kbtools"

#: layer of each folder (and top-level module); a module may import its own folder and lower layers.
LAYERS = {
    "errors": 0, "progress": 1,
    "model": 1,
    "store": 2,
    "retrieval": 3, "linker": 3, "graph": 3,
    "ops": 4,
    "demo": 5,
    "evaluate": 6,
    "cli": 7, "views": 7, "mcp": 7, "__init__": 7, "__main__": 7,
}
#: same-layer folders that may use each other (pure algorithm folders stay independent otherwise)
FACES = {"cli", "views", "mcp", "__init__", "__main__"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 2:
        parts = parts[:-1]
    return ".".join(parts)


def _folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):  # imports for type checkers only are not imports at run time
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "kbtools"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "kbtools":
                continue
            found.add(target)
            for alias in node.names:  # `from kbtools.x import y` where y is a module
                if (PACKAGE.parent / (target + "." + alias.name).replace(".", "/")).with_suffix(".py").exists() or \
                        (PACKAGE.parent / (target + "." + alias.name).replace(".", "/") / "__init__.py").exists():
                    found.add(f"{target}.{alias.name}")
    return found


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
        if target == "kbtools" and here not in FACES:
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
    # a package's __init__ re-exporting its submodules is not a circle with them
    for m in modules:
        edges[m] = {t for t in edges[m] if not (t.startswith(m + ".") and MODULES[m].name == "__init__.py")}
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
