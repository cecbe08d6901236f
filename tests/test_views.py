"""The pure parts of the JupyterLab views: 3D layout (and its cache), figure builders, offline HTML."""

from __future__ import annotations

import json
import shutil

import numpy as np
import plotly.graph_objects as go
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import kbtools as kb
from kbtools.errors import ValidationError
from kbtools.views import (bank_layout, community_figure, graph_figure, holes_figure, layout_3d, save_html)
from kbtools.views.figures import answer_roles
from kbtools.views.labels import LABEL_LIMIT, label_box, place_labels, project
from kbtools.views.flows import flow_positions
from kbtools.store.caches import write_cache


@pytest.fixture(scope="module")
def demo_dir():
    from kbtools.demo.banks import DEMO_DIR

    return DEMO_DIR


@pytest.fixture(scope="module")
def eng(demo_dir):
    """The engineering demo bank, read only (nothing here writes)."""
    return kb.open_bank(demo_dir / "engineering")


@pytest.fixture(scope="module")
def biz(demo_dir):
    return kb.open_bank(demo_dir / "business")


@pytest.fixture(scope="module")
def eng_layout(eng):
    return layout_3d(eng.entries, eng.edges)


@pytest.fixture(scope="module")
def truth_answer(eng, demo_dir):
    """A folded answer built without embeddings: the pool is a truth query's relevant entries plus a
    few others, so the answer has results, folded pointers and neighbours."""
    return _answer(eng, demo_dir, 0)


def _answer(bank, demo_dir, index: int):
    query = kb.demo.read_truth(demo_dir / "engineering")["queries"][index]
    linked = pl.concat([bank.edges["src"], bank.edges["dst"]]).unique().sort().to_list()
    ids = list(dict.fromkeys(query["relevant"] + linked[:6]))
    pool = (bank.entries.filter(pl.col("id").is_in(ids)).select("id", "title", "summary")
            .with_columns(pl.col("id").replace_strict({i: 1.0 - n / 100 for n, i in enumerate(ids)},
                                                      return_dtype=pl.Float64).alias("score"))
            .sort("score", descending=True))
    return kb.fold(pool, bank.edges, k=8, entries=bank.entries, query=query["query"])


def _trace(fig: go.Figure, name: str):
    found = [t for t in fig.data if t.name == name]
    return found[0] if found else None


def _ids(fig: go.Figure, prefix: str) -> list[str]:
    return [i for t in fig.data if t.name and t.name.startswith(prefix) and t.customdata is not None
            for i in t.customdata]


# -- layout ------------------------------------------------------------------------------------------

def test_layout_small_hand_example():
    entries = pl.DataFrame({"id": ["a", "b", "c", "d", "e"], "kind": ["fact"] * 5})
    edges = pl.DataFrame({"src": ["a", "b", "a"], "dst": ["b", "c", "zz"]})  # zz: unknown, ignored
    frame = layout_3d(entries, edges, seed=3)
    assert frame["id"].to_list() == ["a", "b", "c", "d", "e"]
    xyz = frame.select("x", "y", "z").to_numpy()
    assert np.isfinite(xyz).all() and np.abs(xyz).max() == pytest.approx(1.0)
    linked, unlinked = np.linalg.norm(xyz[:3], axis=1), np.linalg.norm(xyz[3:], axis=1)
    assert unlinked.min() > linked.max()  # entries without links sit on the outer shell
    a, b, c = xyz[:3]
    assert np.linalg.norm(a - b) < np.linalg.norm(a - xyz[3])  # linked entries sit together


def test_layout_deterministic_per_seed_and_finite(eng, eng_layout):
    again = layout_3d(eng.entries, eng.edges)
    assert_frame_equal(eng_layout, again)
    other = layout_3d(eng.entries, eng.edges, seed=1)
    assert not other.equals(eng_layout)
    assert eng_layout.height == eng.entries.height
    assert np.isfinite(eng_layout.select("x", "y", "z").to_numpy()).all()


def test_layout_contract_empty_and_input_unchanged(eng):
    entries, edges = eng.entries.clone(), eng.edges.clone()
    layout_3d(entries, edges, refine=2)
    assert_frame_equal(entries, eng.entries)
    assert_frame_equal(edges, eng.edges)
    empty = layout_3d(pl.DataFrame(schema={"id": pl.String}), pl.DataFrame(schema={"src": pl.String, "dst": pl.String}))
    assert empty.height == 0 and empty.columns == ["id", "x", "y", "z"]


def test_layout_uses_vectors_for_unlinked_entries():
    ids = [f"e{i}" for i in range(8)]
    entries = pl.DataFrame({"id": ids})
    edges = pl.DataFrame(schema={"src": pl.String, "dst": pl.String})
    vectors = np.zeros((8, 4, 3), dtype=np.float32)
    vectors[:4, :, 0] = 1.0  # two topics along opposite directions
    vectors[4:, :, 0] = -1.0
    vectors += np.random.default_rng(0).normal(scale=0.01, size=vectors.shape)
    xyz = layout_3d(entries, edges, vectors=(np.array(ids), vectors)).select("x", "y", "z").to_numpy()
    same = np.linalg.norm(xyz[0] - xyz[1])
    across = np.linalg.norm(xyz[0] - xyz[5])
    assert same < across


def test_layout_rejects_bad_input():
    with pytest.raises(ValidationError, match="refine"):
        layout_3d(pl.DataFrame({"id": ["a"]}), pl.DataFrame({"src": [], "dst": []}), refine=-1)
    with pytest.raises(ValidationError, match="unique"):
        layout_3d(pl.DataFrame({"id": ["a", "a"]}), pl.DataFrame({"src": [], "dst": []}))
    with pytest.raises(ValidationError, match="src"):
        layout_3d(pl.DataFrame({"id": ["a"]}), pl.DataFrame({"from": []}))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 30), pairs=st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29)), max_size=60),
       seed=st.integers(0, 5))
def test_layout_property_every_entry_once_finite(n, pairs, seed):
    ids = [f"n{i}" for i in range(n)]
    edges = pl.DataFrame({"src": [f"n{a}" for a, _ in pairs], "dst": [f"n{b}" for _, b in pairs]},
                         schema={"src": pl.String, "dst": pl.String})
    frame = layout_3d(pl.DataFrame({"id": ids}), edges, seed=seed, refine=5)
    assert sorted(frame["id"].to_list()) == sorted(ids)
    assert np.isfinite(frame.select("x", "y", "z").to_numpy()).all()


def test_bank_layout_cached_per_version(tmp_path, demo_dir):
    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    bank = kb.open_bank(tmp_path / "eng")
    first = bank_layout(bank)
    assert (tmp_path / "eng" / "cache" / "layout_3d.parquet").exists()
    assert bank_layout(bank) is first  # in-memory hit for the same snapshot
    # A fresh snapshot reads the disk cache: plant a recognisable frame under the same fingerprint.
    meta = json.loads((tmp_path / "eng" / "cache" / "layout_3d.parquet.json").read_text())
    planted = first.with_columns(pl.lit(0.25).alias("x"))
    import io
    buffer = io.BytesIO()
    planted.write_parquet(buffer)
    write_cache(bank, "layout_3d.parquet", meta["fingerprint"], buffer.getvalue())
    assert_frame_equal(bank_layout(kb.open_bank(tmp_path / "eng")), planted)
    # A new bank version rebuilds (the planted cache no longer matches).
    a, b = bank.entries["id"][0], bank.entries["id"][1]
    kb.link(bank, a, b, "see_also", actor="test", note="for the layout cache test")
    fresh = kb.open_bank(tmp_path / "eng")
    rebuilt = bank_layout(fresh)
    assert fresh.version != bank.version or fresh.version > 0
    assert not rebuilt.equals(planted)
    assert rebuilt["x"].n_unique() > 1


# -- graph figure ------------------------------------------------------------------------------------

def test_graph_figure_whole_bank(eng, eng_layout):
    fig = graph_figure(eng.entries, eng.edges, eng_layout, communities=kb.communities(eng))
    names = [t.name for t in fig.data]
    assert names == ["links", "entries"]
    entries = _trace(fig, "entries")
    assert len(entries.x) == eng.entries.height
    links = _trace(fig, "links")
    assert np.isnan(np.asarray(links.x, dtype=float)).sum() == eng.edges.height  # one gap per segment
    assert "constellations" in fig.layout.title.text
    hover = entries.hovertext[0]
    assert "<b>" in hover  # title in bold, then summary


def test_graph_figure_lights_the_answer(eng, eng_layout, truth_answer):
    fig = graph_figure(eng.entries, eng.edges, eng_layout, answer=truth_answer, communities=kb.communities(eng))
    roles = answer_roles(truth_answer)
    lit = {i for t in fig.data if t.name in ("result", "folded pointer", "neighbour", "linked (activation)")
           for i in t.customdata}
    assert lit == set(roles["id"].to_list())
    assert list(_trace(fig, "result").customdata) == truth_answer.ids()
    assert {"folded pointer", "neighbour"} <= {t.name for t in fig.data}
    dim = np.asarray(_trace(fig, "entries").marker.size).max()
    assert _trace(fig, "result").marker.size > 4 * dim  # lit and large, the rest are dots
    assert _trace(fig, "entries").marker.opacity < _trace(fig, "result").marker.opacity
    assert len(_trace(fig, "answer links").x) > 0
    particles = _trace(fig, "particles")
    assert particles is not None and 1 < len(fig.frames) <= 12
    assert fig.layout.updatemenus[0].buttons[0].method == "animate"
    assert "results lit" in fig.layout.title.text


def test_graph_figure_colour_by_kind_has_a_legend(eng, eng_layout):
    fig = graph_figure(eng.entries, eng.edges, eng_layout, color_by="kind")
    kinds = sorted(eng.entries["kind"].unique().to_list())
    assert [t.name for t in fig.data[1:]] == [f"entries: {k}" for k in kinds]
    assert sum(len(t.x) for t in fig.data[1:]) == eng.entries.height
    with pytest.raises(ValidationError, match="color_by"):
        graph_figure(eng.entries, eng.edges, eng_layout, color_by="mood")


def test_graph_figure_samples_above_max_nodes(eng, eng_layout, truth_answer):
    fig = graph_figure(eng.entries, eng.edges, eng_layout, answer=truth_answer, max_nodes=300)
    drawn = _ids(fig, "entries") + _ids(fig, "result") + _ids(fig, "folded") + _ids(fig, "neighbour")
    assert len(set(drawn)) == 300
    assert set(answer_roles(truth_answer)["id"].to_list()) <= set(drawn)
    notes = [a.text for a in fig.layout.annotations]
    assert any("showing 300 of 2,000" in n for n in notes)
    whole = graph_figure(eng.entries, eng.edges, eng_layout)
    assert not whole.layout.annotations


def test_graph_figure_contract_empty_and_unchanged(eng, eng_layout, truth_answer):
    entries, edges, layout = eng.entries.clone(), eng.edges.clone(), eng_layout.clone()
    graph_figure(entries, edges, layout, answer=truth_answer)
    assert_frame_equal(entries, eng.entries) and assert_frame_equal(layout, eng_layout)
    empty = graph_figure(eng.entries.clear(), eng.edges.clear(), eng_layout.clear())
    assert len(_trace(empty, "entries").x) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-200, 200), st.floats(-200, 200)), max_size=14),
       st.integers(20, 160), st.integers(1, 12))
def test_place_labels_property_no_two_labels_overlap(points, width, limit):
    xy = np.array(points, dtype=float).reshape(-1, 2)
    widths = [width + 7 * (n % 3) for n in range(len(xy))]
    places = place_labels(xy, widths, limit=limit)
    assert len(places) == len(xy)
    assert all(p is None for p in places[limit:])  # past the limit: hover only
    boxes = [label_box(x, y, w, p) for (x, y), w, p in zip(xy, widths, places) if p]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
        for x, y in xy:  # and no label covers a lit point (its own included; touching is fine)
            eps = 1e-6
            assert not (a[0] < x + 8 - eps and x - 8 + eps < a[2] and a[1] < y + 8 - eps and y - 8 + eps < a[3])


def test_result_labels_do_not_overlap_on_the_opening_view(eng, eng_layout, demo_dir):
    for index in range(4):
        answer = _answer(eng, demo_dir, index)
        fig = graph_figure(eng.entries, eng.edges, eng_layout, answer=answer)
        result = _trace(fig, "result")
        shown = [t for t in result.text if t]
        assert shown and result.text[0]  # the top result always keeps its label
        assert len(shown) <= LABEL_LIMIT
        ids = list(result.customdata)
        xyz = eng_layout.filter(pl.col("id").is_in(ids)).sort(pl.col("id").replace_strict(
            {i: n for n, i in enumerate(ids)}, return_dtype=pl.Int64)).select("x", "y", "z").to_numpy()
        eye = fig.layout.scene.camera.eye
        xy = project(xyz, {"x": eye.x, "y": eye.y, "z": eye.z}, bounds=eng_layout.select("x", "y", "z").to_numpy())
        boxes = [label_box(x, y, 6.4 * len(t), p) for (x, y), t, p in zip(xy, result.text, result.textposition) if t]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3])
        hidden = [h for t, h in zip(result.text, result.hovertext) if not t]
        assert all("<b>" in h for h in hidden)  # a label left out still reads on hover


def test_answer_roles_prefers_the_strongest_role():
    from kbtools.model.answer import Answer, Pointer, Result

    answer = Answer("q", [Result("a", 1, neighbors=[Pointer("b", "cites", "out", kind="neighbor")]),
                          Result("b", 2, related=[Pointer("c", "cites", "out", via="x")])])
    assert answer_roles(answer).rows() == [("a", "result", 1, None), ("b", "result", 2, None),
                                           ("c", "folded", 2, "x")]


# -- holes and communities ---------------------------------------------------------------------------

def test_holes_figure_marks_every_hole(biz):
    holes = kb.workflow_holes(biz)
    fig = holes_figure(biz.entries, biz.edges, holes)
    assert set(_ids(fig, "")) >= set(holes["id"].to_list())
    marked = [i for t in fig.data if t.name.endswith(": holes") for i in t.customdata]
    assert sorted(marked) == sorted(holes["id"].unique().to_list())
    flows = kb.process_flows(biz)["flow"].to_list()
    assert len(fig.layout.annotations) >= len(flows)
    hover = " ".join(h for t in fig.data if t.name.endswith(": holes") for h in t.hovertext)
    assert "Ask" in hover and holes["hole"][0] in hover
    one = holes_figure(biz.entries, biz.edges, holes, flow="hiring")
    assert {t.name.split(":")[0] for t in one.data if not t.showlegend} == {"hiring"}
    with pytest.raises(ValidationError, match="flow"):
        holes_figure(biz.entries, biz.edges, holes, flow="nope")


def test_holes_figure_shows_lanes_hole_kinds_and_severity_with_a_legend(biz):
    from kbtools.views.flows import NO_LANE_COLOR, SEVERITY_COLORS

    holes = kb.workflow_holes(biz)
    fig = holes_figure(biz.entries, biz.edges, holes, flow="hiring")
    mine = holes.filter(pl.col("flow") == "hiring")
    legend = {t.legendgroup: [] for t in fig.data if t.showlegend}
    for t in fig.data:
        if t.showlegend:
            legend[t.legendgroup].append(t.name)
    assert fig.layout.showlegend and legend["holes"] == ["high severity", "medium severity", "low severity"]
    assert {"step", "decision"} <= set(legend["shapes"])
    owners = kb.views.flows.flow_positions(biz.entries, biz.edges).filter(
        (pl.col("flow") == "hiring") & pl.col("kind").is_in(["step", "decision"]))["owner"]
    lanes = sorted(owners.drop_nulls().unique().to_list())
    assert legend["lanes"] == lanes + (["no lane"] if owners.null_count() else [])
    # a step is drawn in its lane's colour, the same as its legend key
    key = {t.name: t.marker.color for t in fig.data if t.showlegend and t.legendgroup == "lanes"}
    steps = next(t for t in fig.data if t.name == "hiring: steps")
    owner_of = dict(zip(*kb.views.flows.flow_positions(biz.entries, biz.edges).select("id", "owner")))
    for entry_id, color in zip(steps.customdata, steps.marker.color):
        lane = owner_of[entry_id]
        assert color == (key[lane.split(", ")[0]] if lane else NO_LANE_COLOR)
    # each ring in its severity's colour, each holed entry labelled with its hole kind(s)
    rings = next(t for t in fig.data if t.name == "hiring: holes")
    worst = {i: min(g, key=["high", "medium", "low"].index)
             for i, g in mine.group_by("id").agg(pl.col("severity")).iter_rows()}
    assert list(rings.meta) == [worst[i] for i in rings.customdata]
    assert list(rings.marker.line.color) == [SEVERITY_COLORS[worst[i]] for i in rings.customdata]
    labels = {a.name: a.text for a in fig.layout.annotations if a.name}
    for entry_id, hole in mine.select("id", "hole").iter_rows():
        assert hole.replace("_", " ") in labels[f"hiring: hole {entry_id}"]


def test_holes_figure_draws_an_ingested_bpmn_flow_with_gateway_marks(tmp_path):
    from kbtools.views.flows import GATEWAY_MARKS

    bank = kb.create_bank(tmp_path / "bpmn")
    kb.ops.ingest_bpmn(bank, "tests/data/bpmn/order_to_cash.bpmn")
    holes = kb.workflow_holes(bank)
    fig = holes_figure(bank.entries, bank.edges, holes, flow="Order to cash")
    marks = next(t for t in fig.data if t.name == "Order to cash: gateway marks")
    assert set(zip(marks.customdata, marks.text)) == {("exclusive", "×"), ("event_based", GATEWAY_MARKS["event_based"])}
    sub = holes_figure(bank.entries, bank.edges, holes, flow="Order to cash / Ship order")
    assert list(next(t for t in sub.data if t.name.endswith("gateway marks")).text) == ["+", "+"]
    ringed = next(t for t in fig.data if t.name == "Order to cash: holes")
    assert sorted(ringed.customdata) == sorted(holes["id"].to_list())
    hover = " ".join(next(t for t in fig.data if t.name == "Order to cash: decisions").hovertext)
    assert "(exclusive gateway)" in hover


def test_holes_figure_draws_inferred_flows(biz):
    bare = biz.entries.with_columns(pl.col("metadata").str.replace(r'"flow": "[^"]*",? ?', ""))
    fig = holes_figure(bare, biz.edges, kb.workflow_holes(biz))
    names = {t.name.split(":")[0] for t in fig.data}
    assert "Receive customer purchase order" in names and "order-to-cash" not in names


def test_flow_positions_left_to_right(biz):
    pos = flow_positions(biz.entries, biz.edges)
    steps = pos.filter(pl.col("kind").is_in(["step", "decision"]))
    x = dict(zip(steps["id"], steps["x"]))
    order = biz.edges.filter(pl.col("type") == "precedes")
    forward = sum(x[s] < x[d] for s, d in zip(order["src"], order["dst"]) if s in x and d in x)
    assert forward >= 0.85 * order.height  # only loop-backs point left
    starts = kb.process_flows(biz)["start_steps"].explode().to_list()
    titles = dict(zip(steps["title"], steps["x"]))
    assert all(titles[t] == 0 for t in starts if t in titles)


def test_holes_figure_contract_empty(biz):
    fig = holes_figure(biz.entries.clear(), biz.edges.clear(), kb.workflow_holes(biz).clear())
    assert len(fig.data) == 0


def test_community_figure(eng):
    fig = community_figure(kb.communities(eng), kb.centrality(eng), entries=eng.entries, top=10)
    bar, table = fig.data
    assert bar.type == "bar" and len(bar.y) == 10
    assert list(bar.x) == sorted(bar.x, reverse=True)
    assert table.type == "table" and len(table.cells.values[0]) > 0


# -- offline HTML ------------------------------------------------------------------------------------

def test_save_html_is_standalone(tmp_path, eng, eng_layout, truth_answer):
    fig = graph_figure(eng.entries, eng.edges, eng_layout, answer=truth_answer)
    path = save_html(fig, tmp_path / "out" / "graph.html", extra_html="<p>shared</p>")
    text = path.read_text()
    assert "<script src=" not in text and 'src="https://cdn.plot.ly' not in text
    assert "Plotly.newPlot" in text and len(text) > 3_000_000  # plotly.js itself is embedded
    assert "<p>shared</p>" in text


def test_the_views_bench_section_adds_measured_rows():
    from kbtools.evaluate.bench import BenchRows
    from kbtools.views.measure import bench_views

    rows = BenchRows(log=lambda m: None)
    bench_views(rows, sizes=(300,))
    assert [r["metric"] for r in rows.rows] == ["3D layout (cached per bank version afterwards)", "graph figure build", "figure to JSON"]
    assert all(r["value"] >= 0 for r in rows.rows)


def _crossings(positions: pl.DataFrame, edges: pl.DataFrame) -> int:
    """Pairs of edges between the same two levels of one flow that cross."""
    count = 0
    for flow in positions["flow"].unique().to_list():
        part = positions.filter(pl.col("flow") == flow)
        at = {r["id"]: (r["x"], r["y"]) for r in part.iter_rows(named=True)}
        links = [(at[s], at[d]) for s, d in zip(edges["src"], edges["dst"]) if s in at and d in at]
        for i, (a0, a1) in enumerate(links):
            for b0, b1 in links[i + 1:]:
                if a0[0] == b0[0] and a1[0] == b1[0] and (a0[1] - b0[1]) * (a1[1] - b1[1]) < 0:
                    count += 1
    return count


def test_flows_are_laid_out_without_needless_crossings():
    """Two parallel lanes whose second level is listed crosswise: the Sugiyama layout uncrosses them."""
    import json as _json

    ids = ["s", "a", "b", "a2", "b2", "end"]
    titles = ["start", "zeta first", "alpha second", "follows zeta", "follows alpha", "end"]
    meta = _json.dumps({"flow": "f"})
    entries = pl.DataFrame({"id": ids, "kind": ["step"] * 6, "title": titles, "metadata": [meta] * 6})
    pairs = [("s", "a"), ("s", "b"), ("a", "b2"), ("b", "a2"), ("a2", "end"), ("b2", "end")]
    edges = pl.DataFrame({"src": [p[0] for p in pairs], "dst": [p[1] for p in pairs], "type": ["precedes"] * 6,
                          "note": [None] * 6})
    positions = kb.views.flows.flow_positions(entries, edges)
    assert _crossings(positions, edges) == 0
    assert positions.group_by("x").agg(pl.col("y").n_unique() == pl.len())["y"].all()  # no two share a spot


def test_the_demo_holes_view_has_few_crossings(biz):
    positions = kb.views.flows.flow_positions(biz.entries, biz.edges)
    precedes = biz.edges.filter(pl.col("type") == "precedes")
    assert _crossings(positions, precedes) == 0
    assert positions.group_by("flow", "x").agg(pl.col("y").n_unique() == pl.len())["y"].all()
