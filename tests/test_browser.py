"""A real browser: the standalone HTML of the graph view (an answer lit) and of the holes view open in
headless Chromium from file://, render without console errors, and are screenshotted (tests/artifacts/, or docs/img with KB_UPDATE_SCREENSHOTS=1)
(the README shows those screenshots); and a notebook with the explorer, the holes view and views
composed in a VBox, run in a real kernel and exported by nbconvert, shows the views' static copies.

Chromium is Debian's package (``apt-get install -y chromium``), driven by Playwright's Python
package with ``executable_path``; no browser is ever downloaded by a test tool. WebGL runs on
SwiftShader (software), so the 3D view renders without a GPU.
"""

from __future__ import annotations

import shutil
import os
from pathlib import Path

import pytest

import kbtools as kb
from kbtools.views import graph_view, holes_view

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
# Screenshots go to tests/artifacts/ (ignored by git); KB_UPDATE_SCREENSHOTS=1 refreshes the README's.
DOCS_IMG = (Path(__file__).resolve().parent.parent / "docs" / "img" if os.environ.get("KB_UPDATE_SCREENSHOTS")
            else Path(__file__).resolve().parent / "artifacts")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]
QUERY = "why do we get memory limit partial writes during deploy on k8s"
MAX_PNG_BYTES = 500_000

# Draws the plot (3D scene included) through Plotly.toImage into a 2D canvas and counts the pixels
# that differ from the background: a blank WebGL canvas counts 0.
COUNT_DRAWN = """async () => {
  const gd = document.querySelector('.plotly-graph-div');
  const url = await Plotly.toImage(gd, {format: 'png', width: 600, height: 400});
  const img = new Image(); img.src = url; await img.decode();
  const c = document.createElement('canvas'); c.width = 600; c.height = 400;
  const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, 600, 400).data;
  const [r0, g0, b0] = [d[0], d[1], d[2]];
  let drawn = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (Math.abs(d[i] - r0) + Math.abs(d[i + 1] - g0) + Math.abs(d[i + 2] - b0) > 60) drawn++;
  }
  return drawn;
}"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's browser with "
                    "`sudo apt-get update && sudo apt-get install -y chromium` (the browser test needs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is missing: "
                                   "pip install -e '.[dev]'")
    with sync_api.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield instance
        instance.close()


def _open(browser, path: Path, *, height: int = 760):
    page = browser.new_page(viewport={"width": 1200, "height": height})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.resolve().as_uri())
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=60_000)
    return page, errors


def test_graph_view_renders_in_chromium(browser, eng, tmp_path):
    shutil.copytree(eng.path, tmp_path / "eng")  # the demo bank, embedded with MiniLM (cached)
    bank = kb.open_bank(tmp_path / "eng")
    kb.backfill(bank)
    kb.connect(bank)  # the graph as a maintained bank has it
    answer = kb.recall(bank, QUERY, record_usage=False)
    html = graph_view(bank, answer).save_html(tmp_path / "graph.html")

    page, errors = _open(browser, html)
    page.wait_for_selector(".gl-container canvas", timeout=60_000)
    size = page.evaluate("(() => { const c = document.querySelector('.gl-container canvas');"
                         " return [c.width, c.height]; })()")
    assert size[0] > 0 and size[1] > 0
    page.wait_for_timeout(1500)
    assert page.evaluate(COUNT_DRAWN) > 2000  # points, links and labels were drawn
    legend = page.evaluate("document.querySelector('.legend').textContent")
    assert "result" in legend and "folded pointer" in legend
    page.click("text=follow the links")  # particles start travelling along the lit links
    page.wait_for_timeout(700)
    shot = DOCS_IMG / "graph_view.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))
    assert not errors, errors
    assert 0 < shot.stat().st_size < MAX_PNG_BYTES
    page.close()


def test_holes_view_renders_in_chromium(browser, demo_dir, tmp_path):
    shutil.copytree(demo_dir / "business", tmp_path / "biz")
    bank = kb.open_bank(tmp_path / "biz")
    html = holes_view(bank).save_html(tmp_path / "holes.html")

    page, errors = _open(browser, html, height=900)
    points = page.locator(".main-svg .scatterlayer path.point").count()
    assert points >= bank.entries.filter(kb_kinds()).height  # every step, decision and artifact
    holes = kb.workflow_holes(bank)
    assert page.locator("text=question to ask").count() == 1  # the table below the diagram
    assert page.locator(".main-svg .annotation").count() >= holes["flow"].n_unique()
    page.wait_for_timeout(500)
    shot = DOCS_IMG / "holes_view.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.locator(".plotly-graph-div").screenshot(path=str(shot))
    assert not errors, errors
    assert 0 < shot.stat().st_size < MAX_PNG_BYTES
    page.close()


def kb_kinds():
    import polars as pl

    return pl.col("kind").is_in(["step", "decision", "artifact"])


NOTEBOOK_CELLS = [
    "import ipywidgets as widgets\nimport kbtools as kb\nbank = kb.open_bank({eng!r})\nbiz = kb.open_bank({biz!r})",
    "ex = kb.explorer(bank)\nex.ask({query!r})\nex",
    "kb.holes_view(biz)",
    "page = widgets.VBox([widgets.HTML('<b>dashboard</b>'), kb.explorer(bank), widgets.Tab([kb.views.community_view(bank)])])\n"
    "assert page.children[1].children  # a view composes like any widget\npage",
    "kb.check_bank(biz)",
    "kb.bank_stats(biz)",
]


def test_a_saved_notebook_with_views_renders_its_static_copy(browser, demo_dir, tmp_path):
    """A notebook with the explorer, the holes view and views composed in a VBox runs in a real kernel;
    saved without widget state (JupyterLab's default) and exported by nbconvert (what nbviewer does),
    it shows each view's static text/html copy in Chromium with no console error."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    shutil.copytree(demo_dir / "business", tmp_path / "biz")
    kb.embed_bank(kb.open_bank(tmp_path / "eng"), embedder="hashing")
    values = {"eng": str(tmp_path / "eng"), "biz": str(tmp_path / "biz"), "query": QUERY}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c.format(**values)) for c in NOTEBOOK_CELLS])
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    bundles = [o.get("data", {}) for cell in nb.cells for o in cell.get("outputs", [])]
    views = [b for b in bundles if "application/vnd.jupyter.widget-view+json" in b]
    assert len(views) == 3 and all("text/html" in b for b in views[:2])  # the views carry a static copy
    nb.metadata.pop("widgets", None)  # saved without widget state, as JupyterLab does by default
    (tmp_path / "stub.js").write_text("")  # nbconvert's own CDN scripts (MathJax, require.js), offline here
    stub = (tmp_path / "stub.js").as_uri()
    body, _ = nbconvert.HTMLExporter(mathjax_url=stub, require_js_url=stub).from_notebook_node(nb)
    assert "unpkg.com" not in body  # no widget manager fetched from a CDN
    page_path = tmp_path / "notebook.html"
    page_path.write_text(body, encoding="utf-8")

    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(page_path.resolve().as_uri())
    page.wait_for_selector(".kb-static", timeout=30_000)
    assert page.locator(".kb-static").count() == 2  # explorer and holes view
    assert page.locator(".kb-static .kb-answer li").count() >= 8  # the answer, as the agent reads it
    assert page.locator("text=question to ask").count() == 1
    assert page.locator("text=The bank is sound").count() == 1  # check_bank's repr
    assert page.locator(".kb-stats table").count() >= 3  # bank_stats' tables
    page.locator(".kb-static details summary").first.click()  # pointers expand
    page.wait_for_timeout(300)
    assert not errors, errors
    assert all(url.startswith(("file:", "data:")) for url in fetched), fetched  # nothing from the network


def test_ingested_bpmn_holes_render_in_chromium(browser, tmp_path):
    """bpmn-js (the modeler that reads the coloured export) is not available offline, so the browser
    opens the holes view of the ingested BPMN process instead, and the export is checked as XML."""
    bank = kb.create_bank(tmp_path / "bpmn")
    data = Path(__file__).resolve().parent / "data" / "bpmn"
    kb.ops.ingest_bpmn(bank, data / "order_to_cash.bpmn")
    exported = kb.ops.export_bpmn_holes(bank, tmp_path / "order_to_cash.holes.bpmn")[0]
    assert exported.read_text().count('bioc:stroke="#c62828"') == 2
    html = holes_view(bank, flow="Order to cash").save_html(tmp_path / "bpmn-holes.html")
    page, errors = _open(browser, html, height=900)
    assert page.locator("text=question to ask").count() == 1
    assert page.locator(".main-svg .textpoint", has_text="×").count() >= 3  # exclusive gateways marked
    assert page.locator("text=Hand over to collections").count() >= 1
    shot = DOCS_IMG / "bpmn_holes_view.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.locator(".plotly-graph-div").screenshot(path=str(shot))
    assert not errors, errors
    assert 0 < shot.stat().st_size < MAX_PNG_BYTES
    page.close()
