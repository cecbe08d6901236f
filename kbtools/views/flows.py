"""The workflow-hole figure: each process flow drawn left to right with its holes marked and explained.

A flow's steps and decisions are laid out by depth (the longest path along ``precedes`` from the
flow's sources; a cycle is collapsed to one level, its members spread over consecutive levels) and
spread vertically within a level, ordered by their predecessors. Decisions are diamonds, steps
circles, artifacts squares in a band below the steps (placed after the step that produces them,
else before the step that requires them). ``precedes`` edges are arrows (a decision's branch label
on the arrow), ``produces`` and ``requires`` dotted lines; owners appear in the hover. Every hole
gets a red ring with the hole, its explanation and the question to ask on hover. One subplot row
per flow (or just ``flow``). Flows inferred from ``precedes`` edges alone are drawn too. A
gateway's diamond carries its BPMN mark (:data:`GATEWAY_MARKS`: exclusive ×, parallel +), in a
``<flow>: gateway marks`` trace.

Traces are named ``<flow>: steps`` and so on; the red rings are ``<flow>: holes`` with the hole
ids in ``customdata``.

>>> import polars as pl, json
>>> meta = json.dumps({"flow": "f"})
>>> entries = pl.DataFrame({"id": ["a", "b"], "kind": ["step", "step"], "title": ["A", "B"],
...                         "metadata": [meta, meta]})
>>> edges = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["precedes"], "note": [None]})
>>> holes = pl.DataFrame({"id": ["b"], "flow": ["f"], "hole": ["dead_end"], "severity": ["high"],
...                       "explanation": ["B leads nowhere"], "question": ["What comes after B?"]})
>>> fig = holes_figure(entries, edges, holes)
>>> [t.name for t in fig.data]
['f: links', 'f: steps', 'f: holes']
"""

from __future__ import annotations

import html
import textwrap

import igraph as ig
import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from kbtools.errors import ValidationError
from kbtools.graph.flows import flow_nodes
from kbtools.views.theme import BACKGROUND, FOREGROUND, HOLE_COLOR, hover_text

__all__ = ["holes_figure", "flow_positions", "GATEWAY_MARKS"]

_STEP_KINDS = ("step", "decision")
_SHAPES = {"step": ("circle", "#4cc9f0", 18), "decision": ("diamond", "#ffb703", 22),
           "artifact": ("square", "#e9c46a", 14)}
#: The mark drawn inside a gateway's diamond, as in BPMN (exclusive ×, parallel +, inclusive ○,
#: event-based ⬠, complex ✱).
GATEWAY_MARKS: dict[str, str] = {"exclusive": "×", "parallel": "+", "inclusive": "○", "event_based": "⬠",
                                 "complex": "✱"}


def flow_positions(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Diagram positions of every step, decision and artifact of every flow:
    id, kind, title, flow (declared or inferred), owner, gateway, x (depth), y.

    >>> import polars as pl, json
    >>> m = json.dumps({"flow": "f"})
    >>> e = pl.DataFrame({"id": ["a", "b", "c"], "kind": ["step"] * 3, "title": list("ABC"), "metadata": [m] * 3})
    >>> g = pl.DataFrame({"src": ["a", "a"], "dst": ["b", "c"], "type": ["precedes"] * 2, "note": [None, None]})
    >>> flow_positions(e, g).select("id", "x", "y").rows()
    [('a', 0.0, 0.0), ('b', 1.0, -0.5), ('c', 1.0, 0.5)]
    """
    nodes = _flow_nodes(entries, edges)
    parts = [_place_flow(nodes.filter(pl.col("flow") == flow), edges) for flow in sorted(nodes["flow"].unique())]
    schema = {"id": pl.String, "kind": pl.String, "title": pl.String, "flow": pl.String, "owner": pl.String,
              "gateway": pl.String, "x": pl.Float64, "y": pl.Float64}
    return pl.concat(parts).select(list(schema)) if parts else pl.DataFrame(schema=schema)


def holes_figure(entries: pl.DataFrame, edges: pl.DataFrame, holes: pl.DataFrame, *, flow: str | None = None) -> go.Figure:
    """The process flows as left-to-right diagrams (longest-path levels, barycentre sweeps against crossings) with their holes marked (see the module docstring).

    ``entries``: id, kind, title, metadata (JSON with ``flow``); ``edges``: src, dst, type, note;
    ``holes``: the frame of :func:`kbtools.workflow_holes`.
    """
    for column in ("id", "kind", "title", "metadata"):
        if column not in entries.columns:
            raise ValidationError(column, None, "entries need id, kind, title and metadata columns")
    positions = flow_positions(entries, edges)
    flows = sorted(positions["flow"].unique().to_list())
    if flow is not None:
        if flow not in flows:
            raise ValidationError("flow", flow, f"must be one of the bank's flows: {', '.join(flows) or '(none)'}")
        flows = [flow]
    hole_rows = _hole_text(holes)
    titles = [f"{f}  ·  {hole_rows.filter(pl.col('flow') == f).height} holes" for f in flows]
    spans = [1.0 + float(np.ptp(positions.filter(pl.col("flow") == f)["y"].to_numpy())) for f in flows] or [1.0]
    fig = make_subplots(rows=max(1, len(flows)), cols=1, subplot_titles=titles or ["no process flows"],
                        vertical_spacing=0.18 / max(1, len(flows)) ** 0.5, row_heights=spans)
    for row, name in enumerate(flows, 1):
        part = positions.filter(pl.col("flow") == name)
        _draw_flow(fig, row, name, part, edges, hole_rows.filter(pl.col("flow") == name))
        if part.height:  # room for the labels above the top row and below the artifacts
            fig.update_yaxes(range=[float(part["y"].min()) - 0.8, float(part["y"].max()) + 0.9], row=row, col=1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(
        title={"text": f"Workflow holes · {len(flows)} flow{'s' if len(flows) != 1 else ''} · "
                       f"{hole_rows.filter(pl.col('flow').is_in(flows)).height} holes (red rings)", "x": 0.01},
        paper_bgcolor=BACKGROUND, plot_bgcolor=BACKGROUND, font={"color": FOREGROUND}, showlegend=False,
        height=int(110 + sum(120 + 70 * span for span in spans)), margin={"l": 20, "r": 20, "t": 80, "b": 20},
        hoverlabel={"bgcolor": "#1c2541", "font": {"color": FOREGROUND}, "align": "left"})
    fig.update_annotations(font={"color": FOREGROUND})
    return fig


# -- positions -----------------------------------------------------------------------------------

def _flow_nodes(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    source = "source" in edges.columns
    nodes = flow_nodes(entries, edges if source else edges.with_columns(source=pl.lit("author"))).select(
        "id", "kind", "title", "flow", "gateway")
    roles = entries.filter(pl.col("kind") == "role").select(pl.col("id").alias("dst"), pl.col("title").alias("owner"))
    owners = (edges.filter(pl.col("type") == "owned_by").select(pl.col("src").alias("id"), "dst")
              .join(roles, on="dst", how="inner").group_by("id").agg(pl.col("owner").sort().str.join(", ")))
    return nodes.join(owners, on="id", how="left").sort("flow", "title", "id")


def _place_flow(nodes: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    steps = nodes.filter(pl.col("kind").is_in(_STEP_KINDS))
    ids = steps["id"].to_list()
    index = {i: n for n, i in enumerate(ids)}
    order = _typed(edges, "precedes", index, index)
    depth = _depths(len(ids), order)
    y = _spread(depth, order, steps["title"].to_list())
    placed = steps.with_columns(pl.Series("x", depth, dtype=pl.Float64), pl.Series("y", y, dtype=pl.Float64))
    return pl.concat([placed, _place_artifacts(nodes, edges, placed)])


def _typed(edges: pl.DataFrame, type_: str, src_index: dict, dst_index: dict) -> np.ndarray:
    part = edges.filter(pl.col("type") == type_)
    pairs = [(src_index[s], dst_index[d]) for s, d in zip(part["src"], part["dst"]) if s in src_index and d in dst_index]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def _depths(count: int, order: np.ndarray) -> np.ndarray:
    """Longest-path depth from the sources over the condensation (cycles collapsed), members of a
    cycle spread over consecutive levels."""
    graph = ig.Graph(n=count, edges=order.tolist(), directed=True)
    strong = graph.connected_components(mode="strong")
    membership = np.asarray(strong.membership)
    dag = strong.cluster_graph(combine_edges=False).simplify()
    level = np.zeros(dag.vcount())
    span = np.bincount(membership, minlength=dag.vcount())
    for v in dag.topological_sorting():
        for w in dag.successors(v):
            level[w] = max(level[w], level[v] + span[v])
    depth = level[membership].astype(float)
    for c in np.flatnonzero(span > 1):
        members = np.flatnonzero(membership == c)
        depth[members] += np.arange(len(members))
    return depth


def _spread(depth: np.ndarray, order: np.ndarray, titles: list[str], sweeps: int = 8) -> np.ndarray:
    """Vertical positions within each level, as Sugiyama's method orders them: barycentre sweeps
    down and up the levels (each node placed at the mean position of its neighbours on the levels
    before, then after) reduce edge crossings; ties keep the title order. Centred on 0.

    igraph's ``layout_sugiyama`` does the same, but crashed the interpreter (a segmentation fault)
    on one of the test models, so the sweeps are written here over the flow's small graph."""
    if len(depth) == 0:
        return np.zeros(0)
    levels = sorted(np.unique(depth).tolist())
    members = {lv: sorted(np.flatnonzero(depth == lv).tolist(), key=lambda m: (titles[m] or "", m)) for lv in levels}
    preds: dict[int, list[int]] = {}
    succs: dict[int, list[int]] = {}
    for a, b in order.tolist():
        if depth[a] < depth[b]:
            succs.setdefault(a, []).append(b)
            preds.setdefault(b, []).append(a)
    pos = np.zeros(len(depth))
    for lv in levels:
        pos[members[lv]] = np.arange(len(members[lv]))
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        for lv in (levels[1:] if down else levels[-2::-1]):
            near = preds if down else succs
            key = {m: (float(np.mean(pos[near[m]])) if near.get(m) else pos[m], pos[m]) for m in members[lv]}
            members[lv] = sorted(members[lv], key=key.__getitem__)
            pos[members[lv]] = np.arange(len(members[lv]))
    y = np.zeros(len(depth))
    for lv in levels:
        y[members[lv]] = pos[members[lv]] - (len(members[lv]) - 1) / 2
    return y


def _label_sides(part: pl.DataFrame, pos: pl.DataFrame) -> list[str]:
    """Each label under its node unless another node sits just below it in the same column: then
    above, so that two neighbours' labels never stack on each other."""
    xs, ys = pos["x"].to_numpy(), pos["y"].to_numpy()
    sides = []
    for x, y in zip(part["x"].to_list(), part["y"].to_list()):
        below = (np.abs(xs - x) < 0.35) & (ys < y) & (ys > y - 1.05)
        sides.append("top center" if below.any() else "bottom center")
    return sides


def _place_artifacts(nodes: pl.DataFrame, edges: pl.DataFrame, placed: pl.DataFrame) -> pl.DataFrame:
    artifacts = nodes.filter(pl.col("kind") == "artifact")
    at = placed.select(pl.col("id").alias("src"), "x")
    made = edges.filter(pl.col("type") == "produces").join(at, on="src").group_by("dst").agg((pl.col("x").max() + 0.5).alias("made"))
    used = edges.filter(pl.col("type") == "requires").join(at, on="src").group_by("dst").agg((pl.col("x").min() - 0.5).alias("used"))
    bottom = (placed["y"].min() if placed.height else 0.0) - 1.3
    artifacts = (artifacts.join(made.rename({"dst": "id"}), on="id", how="left")
                 .join(used.rename({"dst": "id"}), on="id", how="left")
                 .with_columns(pl.coalesce("made", "used", pl.lit(0.0)).alias("x")).sort("x", "title"))
    stack = artifacts.with_columns(pl.col("x").cum_count().over("x").alias("_n"))
    return stack.with_columns((bottom - 0.9 * (pl.col("_n") - 1) - 0.45 * (pl.col("x") * 2 % 2)).alias("y")).drop(
        "made", "used", "_n")


# -- drawing -------------------------------------------------------------------------------------

def _hole_text(holes: pl.DataFrame) -> pl.DataFrame:
    """One row per hole entry: id, flow, and the hover text of all its holes."""
    if holes.height == 0:
        return pl.DataFrame(schema={"id": pl.String, "flow": pl.String, "text": pl.String})
    lines = holes.with_columns(pl.format("<b style='color:{}'>{}</b> ({})<br>{}<br><b>Ask:</b> {}", pl.lit(HOLE_COLOR),
                                         "hole", "severity", pl.col("explanation").map_elements(_wrap, return_dtype=pl.String),
                                         pl.col("question").map_elements(_wrap, return_dtype=pl.String)).alias("text"))
    return lines.group_by("id", "flow", maintain_order=True).agg(pl.col("text").str.join("<br>"))


def _wrap(text: str | None) -> str:
    return "<br>".join(html.escape(line) for line in textwrap.wrap(text or "", 70))


def _draw_flow(fig, row: int, name: str, pos: pl.DataFrame, edges: pl.DataFrame, holes: pl.DataFrame) -> None:
    where = {i: (x, y) for i, x, y in zip(pos["id"], pos["x"], pos["y"])}
    kinds = dict(zip(pos["id"], pos["kind"]))
    flow_edges = edges.filter(pl.col("src").is_in(list(where)) & pl.col("dst").is_in(list(where)))
    dotted = flow_edges.filter(pl.col("type").is_in(["produces", "requires"]))
    xs, ys = [], []
    for s, d in zip(dotted["src"], dotted["dst"]):
        xs += [where[s][0], where[d][0], None]
        ys += [where[s][1], where[d][1], None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"{name}: links", hoverinfo="skip",
                             line={"color": "rgba(233,196,106,0.45)", "width": 1.2, "dash": "dot"}), row=row, col=1)
    axis = "" if row == 1 else str(row)
    for s, d, note in zip(*(flow_edges.filter(pl.col("type") == "precedes")[c] for c in ("src", "dst", "note"))):
        label = note if kinds.get(s) == "decision" and note else ""
        fig.add_annotation(x=where[d][0], y=where[d][1], ax=where[s][0], ay=where[s][1], xref=f"x{axis}", yref=f"y{axis}",
                           axref=f"x{axis}", ayref=f"y{axis}", showarrow=True, arrowhead=3, arrowsize=1.1, arrowwidth=1.4,
                           arrowcolor="#9fb3d9", standoff=12, startstandoff=12, text="")
        if label:
            fig.add_annotation(x=(where[s][0] + where[d][0]) / 2, y=(where[s][1] + where[d][1]) / 2, text=html.escape(label),
                               xref=f"x{axis}", yref=f"y{axis}", showarrow=False, font={"size": 10, "color": "#ffd166"},
                               bgcolor=BACKGROUND)
    for kind, (symbol, color, size) in _SHAPES.items():
        part = pos.filter(pl.col("kind") == kind)
        if part.height == 0:
            continue
        fig.add_trace(go.Scatter(
            x=part["x"].to_list(), y=part["y"].to_list(), mode="markers+text", name=f"{name}: {kind}s",
            text=["<br>".join(textwrap.wrap(t or "", 16)) for t in part["title"]], textposition=_label_sides(part, pos),
            textfont={"size": 10, "color": FOREGROUND}, customdata=part["id"].to_list(), cliponaxis=False,
            hovertext=[hover_text(t, None, f"{k}{f' ({g} gateway)' if g else ''} · {i}", f"owner: {o}" if o else "no owner")
                       for t, k, i, o, g in zip(part["title"], part["kind"], part["id"], part["owner"], part["gateway"])],
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"symbol": symbol, "color": color, "size": size, "line": {"color": BACKGROUND, "width": 1}}),
            row=row, col=1)
    gates = pos.filter(pl.col("gateway").is_not_null())
    if gates.height:
        fig.add_trace(go.Scatter(
            x=gates["x"].to_list(), y=gates["y"].to_list(), mode="text", name=f"{name}: gateway marks",
            text=[GATEWAY_MARKS.get(g, "") for g in gates["gateway"]], customdata=gates["gateway"].to_list(),
            textfont={"size": 13, "color": BACKGROUND}, hoverinfo="skip"), row=row, col=1)
    marked = holes.join(pos.select("id", "x", "y", "title"), on="id", how="inner")
    if marked.height:
        fig.add_trace(go.Scatter(
            x=marked["x"].to_list(), y=marked["y"].to_list(), mode="markers", name=f"{name}: holes",
            customdata=marked["id"].to_list(),
            hovertext=[f"<b>{html.escape(t)}</b><br>{h}" for t, h in zip(marked["title"], marked["text"])],
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"symbol": "circle-open", "size": 34, "color": HOLE_COLOR, "line": {"width": 3, "color": HOLE_COLOR}}),
            row=row, col=1)
    if pos.height:
        fig.update_xaxes(range=[pos["x"].min() - 0.6, pos["x"].max() + 0.6], row=row, col=1)
        fig.update_yaxes(range=[pos["y"].min() - 0.9, pos["y"].max() + 0.6], row=row, col=1)
