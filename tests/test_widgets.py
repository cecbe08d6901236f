"""The widget layer, driven through widget state: set a control's value, read what is shown."""

from __future__ import annotations

import shutil

import plotly.graph_objects as go
import polars as pl
import pytest

import kbtools as kb
from kbtools.views import community_view, explorer, graph_view, holes_view
from kbtools.views.widgets import HOLE_SORT_KEYS


@pytest.fixture(scope="module")
def demo_dir():
    from kbtools.demo.banks import DEMO_DIR

    return DEMO_DIR


@pytest.fixture(scope="module")
def eng(tmp_path_factory, demo_dir):
    """A private copy of the engineering bank (views write their layout cache into the bank)."""
    root = tmp_path_factory.mktemp("views-eng")
    shutil.copytree(demo_dir / "engineering", root / "engineering")
    return kb.open_bank(root / "engineering")


@pytest.fixture(scope="module")
def biz(tmp_path_factory, demo_dir):
    root = tmp_path_factory.mktemp("views-biz")
    shutil.copytree(demo_dir / "business", root / "business")
    return kb.open_bank(root / "business")


@pytest.fixture(scope="module")
def truth(demo_dir):
    return kb.demo.read_truth(demo_dir / "engineering")["queries"]


@pytest.fixture(scope="module")
def query_fn(eng, truth):
    """Answers without embeddings: the pool of a truth query is its relevant entries, then a few linked
    entries, scored by position; unknown text gets an empty answer."""
    by_text = {q["query"]: q["relevant"] for q in truth}
    linked = pl.concat([eng.edges["src"], eng.edges["dst"]]).unique().sort().to_list()[:12]
    calls = []

    def run(text, *, k, fold, lexical):
        calls.append({"text": text, "k": k, "fold": fold, "lexical": lexical})
        ids = list(dict.fromkeys(by_text.get(text, []) + (linked if text in by_text else [])))
        scores = {i: 1.0 - n / 100 for n, i in enumerate(ids)}
        pool = (eng.entries.filter(pl.col("id").is_in(ids)).select("id", "title", "summary", "kind")
                .with_columns(pl.col("id").replace_strict(scores, return_dtype=pl.Float64, default=0.0).alias("score"))
                .sort("score", descending=True))
        make = kb.fold if fold else kb.retrieval.flat
        return make(pool, eng.edges, k=k, entries=eng.entries, query=text)

    run.calls = calls
    return run


def test_typing_a_query_shows_the_answer(eng, truth, query_fn):
    ex = explorer(eng, query_fn=query_fn)
    assert ex.answer is None
    ex.query_box.value = truth[0]["query"]  # what pressing Enter in the box does
    assert ex.answer is not None and ex.answer.folded
    shown = ex.output_html.value
    assert ex.answer.results[0].title in shown and "<details" in shown
    assert query_fn.calls[-1]["fold"] is True and query_fn.calls[-1]["k"] == 8
    ex.query_box.value = truth[1]["query"]
    assert ex.output_html.value != shown
    assert ex.answer.query == truth[1]["query"]


def test_fold_toggle_changes_the_answer_and_back(eng, truth, query_fn):
    ex = explorer(eng, query_fn=query_fn)
    ex.query_box.value = truth[0]["query"]
    folded_html, folded_ids = ex.output_html.value, ex.answer.ids()
    ex.fold_toggle.value = False
    assert ex.answer.method == "flat" and not ex.answer.folded
    assert ex.output_html.value != folded_html
    assert ex.answer.ids() != folded_ids
    ex.fold_toggle.value = True
    assert ex.output_html.value == folded_html and ex.answer.ids() == folded_ids


def test_k_lexical_and_button(eng, truth, query_fn):
    ex = explorer(eng, query_fn=query_fn)
    ex.query_box.value = truth[0]["query"]
    ex.k_slider.value = 3
    assert len(ex.answer.results) <= 3
    ex.lexical_toggle.value = True
    assert query_fn.calls[-1]["lexical"] is True
    before = len(query_fn.calls)
    ex.ask_button.click()
    assert len(query_fn.calls) == before + 1


def test_compare_mode_shows_flat_beside_folded(eng, truth, query_fn):
    ex = explorer(eng, query_fn=query_fn)
    ex.compare_toggle.value = True
    ex.ask(truth[0]["query"])
    assert ex.flat_answer is not None and ex.flat_answer.method == "flat" and ex.answer.folded
    assert "Flat" in ex.output_html.value and "Folded" in ex.output_html.value
    assert ex.output_html.value.count("kb-answer") == 2


def test_selecting_a_result_shows_its_edges_and_events(eng, truth, query_fn):
    ex = explorer(eng, query_fn=query_fn)
    ex.ask(truth[0]["query"])
    ids = [value for _, value in ex.result_select.options if value]
    assert set(ex.answer.ids()) <= set(ids)
    linked = eng.edges.filter(pl.col("src").is_in(ids) | pl.col("dst").is_in(ids))
    entry = next(i for i in ids if i in set(linked["src"]) | set(linked["dst"]))
    ex.result_select.value = entry
    detail = ex.detail_html.value
    edge = eng.edges.filter((pl.col("src") == entry) | (pl.col("dst") == entry)).row(0, named=True)
    for text in (edge["type"], edge["source"], edge["created_by"]):
        assert text in detail
    if edge["note"]:
        assert edge["note"][:30].replace("'", "&#x27;") in detail
    assert "entry.create" in detail  # its events
    ex.result_select.value = None
    assert ex.detail_html.value == ""


def test_explorer_default_query_with_a_fast_embedder(tmp_path, demo_dir, truth):
    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    bank = kb.open_bank(tmp_path / "eng")
    kb.embed_bank(bank, embedder="hashing")
    bank = kb.open_bank(tmp_path / "eng")
    ex = explorer(bank)
    ex.ask(truth[0]["query"])
    assert len(ex.answer.results) == 8
    assert kb.open_bank(tmp_path / "eng").usage.height == 0  # the explorer never records usage


def test_graph_view_colour_dropdown_and_answer(eng, truth, query_fn, tmp_path):
    view = graph_view(eng)
    shown = view.figure
    assert isinstance(shown, go.FigureWidget) and shown is view.box.widget  # the figure on screen
    assert [t.name for t in view.figure.data] == ["links", "entries"]
    view.color_dropdown.value = "kind"
    assert view.figure is shown  # updated in place: the object a user holds is the one on screen
    assert all(t.name.startswith("entries: ") for t in view.figure.data[1:])
    answer = query_fn(truth[0]["query"], k=8, fold=True, lexical=False)
    view.set_answer(answer)
    result = [t for t in view.figure.data if t.name == "result"][0]
    assert list(result.customdata) == answer.ids()
    assert not view.figure.frames  # the widget cannot animate...
    assert view.build_figure().frames and view.static_figure().frames  # ...the saved page has the particles
    view.figure.update_layout(title_text="my title")  # an edit on the displayed figure...
    path = view.save_html(tmp_path / "graph.html")
    text = path.read_text()
    assert "<script src=" not in text and "my title" in text  # ...is what gets saved


def test_holes_view_sort_and_flow(biz, tmp_path):
    view = holes_view(biz)
    holes = kb.workflow_holes(biz)
    assert view.holes.height == holes.height
    assert view.holes["severity"].to_list()[0] == "high"
    assert view.holes["question"][0] in view.table_html.value.replace("&#x27;", "'")
    for key in HOLE_SORT_KEYS:
        view.sort_dropdown.value = key
        column = view.holes[key].to_list()
        if key != "severity":
            assert column == sorted(column)
    view.flow_dropdown.value = "hiring"
    assert set(view.holes["flow"]) == {"hiring"}
    assert {t.name.split(":")[0] for t in view.figure.data if not t.showlegend} == {"hiring"}
    text = view.save_html(tmp_path / "holes.html").read_text()
    assert "question to ask" in text and "<script src=" not in text


def test_community_view_top_slider(eng, tmp_path):
    view = community_view(eng, top=10)
    assert len(view.figure.data[0].y) == 10
    view.top_slider.value = 20
    assert len(view.figure.data[0].y) == 20
    assert "the 20 largest communities" in view._repr_mimebundle_()["text/html"]
    assert view.save_html(tmp_path / "communities.html").exists()


def test_views_display_in_a_notebook_with_a_static_copy(eng, biz, truth, query_fn):
    ex = explorer(eng, query_fn=query_fn)
    for view in (ex, holes_view(biz), community_view(eng), graph_view(eng)):
        bundle = view._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
        static = bundle["text/html"]  # what nbviewer and GitHub show: HTML, no script
        assert "kbtools" in static and "<script" not in static
        assert bundle["text/plain"].startswith("<kbtools ")
    ex.ask(truth[0]["query"])
    assert ex.answer.results[0].title in ex._repr_mimebundle_()["text/html"].replace("&#x27;", "'")
    holes = holes_view(biz)._repr_mimebundle_()["text/html"]
    assert "question to ask" in holes and "18 holes" in holes


def test_views_compose_inside_other_widgets(eng, biz, query_fn):
    import ipywidgets as widgets

    ex, holes = explorer(eng, query_fn=query_fn), holes_view(biz)
    page = widgets.VBox([widgets.HTML("<h3>my dashboard</h3>"), ex, widgets.Tab([holes])])
    assert page.children[1] is ex and ex.widget is ex
    assert isinstance(ex, widgets.VBox) and isinstance(holes, widgets.Box)
    state = widgets.Widget.get_manager_state(drop_defaults=True)["state"]
    assert ex.model_id in state and holes.figure.model_id in state  # the displayed figure is a live widget


def test_a_failing_query_shows_its_kb_error_inside_the_explorer(eng, truth, query_fn):
    from kbtools.errors import BankLocked, ValidationError

    def locked(text, *, k, fold, lexical):
        if text == "locked":
            raise BankLocked(eng.path, 2.0, "pid 4242 (kb connect)")
        raise ValidationError("text", text, "a query is a non-empty string")

    ex = explorer(eng, query_fn=locked)
    assert ex.error_html.layout.display == "none"
    ex.query_box.value = "locked"  # what pressing Enter does: the callback must not raise into the log
    assert isinstance(ex.error, BankLocked)
    assert "BankLocked: " in ex.error_html.value and str(ex.error)[:40] in ex.error_html.value
    assert ex.error_html.layout.display is None  # visible
    ex.ask_button.click()
    assert isinstance(ex.error, BankLocked)
    with pytest.raises(ValidationError):  # a call from code raises, and the view shows it too
        ex.ask("   x")
    assert "a query is a non-empty string" in ex.error_html.value
    ok = explorer(eng, query_fn=query_fn)
    ok.query_box.value = "locked"  # unknown text: an empty answer, no error
    assert ok.error is None and ok.error_html.value == ""
    ok.query_fn = locked
    ok.ask_button.click()
    assert ok.error is not None
    ok.query_fn = query_fn
    ok.ask(truth[0]["query"])  # a good query clears the error
    assert ok.error is None and ok.error_html.layout.display == "none"


def test_an_unexpected_error_in_a_callback_is_shown_as_a_bug(eng):
    def broken(text, *, k, fold, lexical):
        raise RuntimeError("boom")

    ex = explorer(eng, query_fn=broken)
    ex.query_box.value = "anything"
    assert "RuntimeError: boom" in ex.error_html.value and "unexpected" in ex.error_html.value
