"""The notebooks: each runs top to bottom on fresh demo banks with no error and shows what its story
promises; they use only ``import kbtools as kb`` and names in ``kb.__all__``; they are committed
without outputs; and running them leaves the committed demo banks untouched.

The kernel is ``python3`` from this environment (nbclient resolves ``python`` in the kernel spec to
the running interpreter). The engineering bank is embedded with MiniLM: about a minute on a machine's
first run, then a second from the text-hash cache.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import kbtools as kb

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
DEMO_DIR = ROOT / "data" / "demo"

#: What a reader must find in each notebook's outputs (text, HTML or a display's mimetype).
EXPECTED = {
    "01_tour.ipynb": ["PROGRAMMATIC API FLOW", "corrects via", "the topic takes 5 of 8 slots",
                      "application/vnd.jupyter.widget-view+json"],
    "02_graph_explorer.ipynb": ["backfill wrote", "communities;", "How these entries connect", "trusted edges",
                                "application/vnd.jupyter.widget-view+json"],
    "03_workflow_holes.ipynb": ["Ask the AR clerk", "workflow-holes.html", "opens offline", "holes: 18 before, 17 after"],
    "04_evaluation.ipynb": ["simulated reader agent, not a model", "Leak check", "relevant flat entries lost",
                            "application/vnd.plotly.v1+json"],
    "05_maintenance.ipynb": ["a second run writes 0", "would be pruned", "'reinforced': 1", "'links': 1",
                             "application/vnd.plotly.v1+json"],
    "06_health.ipynb": ["duplicate candidates", "kb judge PATH --dry-run", "note coverage after", "judge 100%",
                        "duplicate_candidates:", "hidden_hop:"],
}
NOTEBOOKS = [NOTEBOOK_DIR / name for name in EXPECTED]

#: Top-level modules a notebook may import besides kbtools.
ALLOWED_IMPORTS = frozenset({"polars", "plotly"}) | frozenset(sys.stdlib_module_names)
KB_NAME = re.compile(r"(?<![\w.])kb\.([A-Za-z_]\w*)")


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _code_cells(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def _output_text(nb) -> str:
    """Every output of an executed notebook as one string: streams, text and HTML, and mimetypes."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                parts.append(out.text)
            for mime, value in out.get("data", {}).items():
                parts.append(mime)
                if mime.startswith("text/"):
                    parts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(parts)


def _demo_fingerprint() -> list[tuple[str, int, int]]:
    return sorted((str(p.relative_to(DEMO_DIR)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in DEMO_DIR.rglob("*") if p.is_file())


def test_every_notebook_is_listed():
    assert sorted(p.name for p in NOTEBOOK_DIR.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = _read(path)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a code cell has outputs; clear them before committing"
            assert cell.execution_count is None, f"{path.name}: a code cell has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_uses_only_the_public_api(path):
    public = set(kb.__all__)
    for source in _code_cells(_read(path)):
        for name in KB_NAME.findall(source):
            assert name in public, f"{path.name}: kb.{name} is not in kb.__all__"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 and node.module.split(".")[0] != "kbtools", (
                    f"{path.name}: use `import kbtools as kb`, not `from {node.module} import ...`")
                assert node.module.split(".")[0] in ALLOWED_IMPORTS, f"{path.name}: imports {node.module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "kbtools":
                        assert alias.name == "kbtools" and alias.asname == "kb", (
                            f"{path.name}: import kbtools only as `import kbtools as kb`, not {alias.name}")
                    else:
                        assert alias.name.split(".")[0] in ALLOWED_IMPORTS, f"{path.name}: imports {alias.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_tells_its_story_in_markdown(path):
    cells = _read(path).cells
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# "), f"{path.name}: no title"
    markdown = [c for c in cells if c.cell_type == "markdown"]
    code = [c for c in cells if c.cell_type == "code"]
    assert len(markdown) >= 6 and len(markdown) * 2 >= len(code), f"{path.name}: too little prose between cells"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom(path):
    nb = _read(path)
    demo_before = _demo_fingerprint()
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first error
    errors = [out for cell in nb.cells for out in cell.get("outputs", []) if out.output_type == "error"]
    assert not errors
    text = _output_text(nb)
    missing = [expected for expected in EXPECTED[path.name] if expected not in text]
    assert not missing, f"{path.name}: outputs lack {missing}"
    assert _demo_fingerprint() == demo_before, f"{path.name} wrote into {DEMO_DIR}"
