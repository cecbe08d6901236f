"""The store stays in parts: ``Bank`` keeps a short public surface (open, reload, tables, apply;
vectors, caches, usage and compaction live in modules of their own), and no kbtools module imports
another module's private (``_name``) names: what one module needs from another is public."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kbtools as kb
from kbtools.store.bank import Bank

PACKAGE = Path(__file__).resolve().parents[1] / "kbtools"
MOST_PUBLIC = 20
#: data attributes every open bank carries (set in ``__init__``, not methods or properties)
INSTANCE_ATTRIBUTES = {"path", "readonly", "lock_timeout", "id_set_counts"}

#: private imports allowed for now: (module, imported from) without ``kbtools.`` -> the names. None
#: is left: what one module needs from another is public where it lives
KNOWN: dict[tuple[str, str], str] = {}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(path: Path) -> set[tuple[str, str, str]]:
    """``(module, imported from, name)`` for every ``from <kbtools module> import _name`` in the
    file at ``path`` (relative imports resolved; function-level imports count)."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] != "kbtools" or target == module:
            continue
        found |= {(module, target, a.name) for a in node.names if _private(a.name)}
    return found


FOUND = {hit for path in sorted(PACKAGE.rglob("*.py")) for hit in private_imports(path)}


def test_bank_has_at_most_twenty_public_methods_and_properties():
    public = sorted(name for name in vars(Bank) if not name.startswith("_"))
    assert len(public) <= MOST_PUBLIC, f"Bank has {len(public)} public members: {public}"


def test_an_open_bank_carries_only_its_few_public_data_attributes(tmp_path):
    bank = kb.create_bank(tmp_path / "b")
    assert {name for name in vars(bank) if not name.startswith("_")} <= INSTANCE_ATTRIBUTES


def test_the_scan_finds_a_private_import(tmp_path):
    folder = tmp_path / "kbtools" / "x"
    folder.mkdir(parents=True)
    (folder / "a.py").write_text("from kbtools.y.b import _hidden, public\nfrom .c import __version__, _one\n")
    global PACKAGE
    package, PACKAGE = PACKAGE, tmp_path / "kbtools"
    try:
        assert private_imports(folder / "a.py") == {("kbtools.x.a", "kbtools.y.b", "_hidden"),
                                                    ("kbtools.x.a", "kbtools.x.c", "_one")}
    finally:
        PACKAGE = package


@pytest.mark.parametrize("module", sorted({_module(p) for p in PACKAGE.rglob("*.py")}))
def test_no_module_imports_another_modules_private_names(module):
    hits = sorted(f"{name} from {target}" for m, target, name in FOUND if m == module and name not in _known(m, target))
    assert not hits, f"{module} imports private names: {', '.join(hits)} (make them public where they live)"


def _known(module: str, target: str) -> set[str]:
    return set(KNOWN.get((module.removeprefix("kbtools."), target.removeprefix("kbtools.")), "").split())


def test_the_known_private_imports_only_shrink():
    still = {(m.removeprefix("kbtools."), t.removeprefix("kbtools."), n) for m, t, n in FOUND}
    gone = sorted((m, t, n) for (m, t), names in KNOWN.items() for n in names.split() if (m, t, n) not in still)
    assert not gone, f"no longer private imports, drop them from KNOWN: {gone}"


def test_the_store_imports_no_private_name_at_all():
    assert not sorted(hit for hit in FOUND if hit[0].startswith("kbtools.store"))
