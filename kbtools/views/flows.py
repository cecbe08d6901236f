"""The workflow-hole figure: each process flow drawn left to right with its holes marked and explained.

A flow's steps and decisions are laid out by depth (the longest path along ``precedes`` from the
flow's sources; a cycle is collapsed to one level, its members spread over consecutive levels) and
spread vertically within a level, ordered by their predecessors. Decisions are diamonds, steps
circles, artifacts squares in a band below the steps (placed after the step that produces them,
else before the step that requires them). ``precedes`` edges are arrows (a decision's branch label
on the arrow), ``produces`` and ``requires`` dotted lines. A step or decision takes the colour of
its **lane** (the role that owns it; grey when none does), so a flow's hand-offs between roles show
at a glance. Every hole gets a ring in its **severity**'s colour (:data:`SEVERITY_COLORS`) and a
label naming its **kind** (``dead end``, ``one branch``, ...) above the entry; the hover adds its
explanation and the question to ask. One subplot row per flow (or just ``flow``). Flows inferred
from ``precedes`` edges alone are drawn too. A gateway's diamond carries its BPMN mark
(:data:`GATEWAY_MARKS`: exclusive ×, parallel +), in a ``<flow>: gateway marks`` trace.

Traces are named ``<flow>: steps`` and so on; the rings are ``<flow>: holes`` with the hole ids in
``customdata`` and each ring's severity in ``meta``; the kind labels are annotations named
``<flow>: hole <id>``. The legend (the only traces with ``showlegend``, in legend groups
``shapes``, ``lanes`` and ``holes``) reads: the shapes of steps, decisions and artifacts, each lane
drawn, and the ring colour of each severity.

>>> import polars as pl, json
>>> meta = json.dumps({"flow": "f"})
>>> entries = pl.DataFrame({"id": ["a", "b"], "kind": ["step", "step"], "title": ["A", "B"],
...                         "metadata": [meta, meta]})
>>> edges = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["precedes"], "note": [None]})
>>> holes = pl.DataFrame({"id": ["b"], "flow": ["f"], "hole": ["dead_end"], "severity": ["high"],
...                       "explanation": ["B leads nowhere"], "question": ["What comes after B?"]})
>>> fig = holes_figure(entries, edges, holes)
>>> [t.name for t in fig.data if not t.showlegend]
['f: links', 'f: steps', 'f: holes']
>>> [t.name for t in fig.data if t.showlegend]
['step', 'no lane', 'high severity', 'medium severity', 'low severity']
>>> [a.text for a in fig.layout.annotations if a.name == "f: hole b"]
['dead end']
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
from kbtools.views.theme import BACKGROUND, COMMUNITY_PALETTE, FOREGROUND, HOLE_COLOR, MUTED, hover_text

__all__ = ["holes_figure", "flow_positions", "GATEWAY_MARKS", "SEVERITY_COLORS", "NO_LANE_COLOR"]

_STEP_KINDS = ("step", "decision")
_SHAPES = {"step": ("circle", "#4cc9f0", 18), "decision": ("diamond", "#ffb703", 22),
           "artifact": ("square", "#e9c46a", 14)}
#: The mark drawn inside a gateway's diamond, as in BPMN (exclusive ×, parallel +, inclusive ○,
#: event-based ⬠, complex ✱).
GATEWAY_MARKS: dict[str, str] = {"exclusive": "×", "parallel": "+", "inclusive": "○", "event_based": "⬠",
                                 "complex": "✱"}
#: The ring colour of a hole of each severity.
SEVERITY_COLORS: dict[str, str] = {"high": HOLE_COLOR, "medium": "#f77f00", "low": "#c77dff"}
#: The colour of a step or decision no role owns.
NO_LANE_COLOR: str = MUTED


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
    lanes = _lane_colors(positions.filter(pl.col("flow").is_in(flows)))
    titles = [f"{f}  ·  {hole_rows.filter(pl.col('flow') == f).height} holes" for f in flows]
    spans = [1.0 + float(np.ptp(positions.filter(pl.col("flow") == f)["y"].to_numpy())) for f in flows] or [1.0]
    fig = make_subplots(rows=max(1, len(flows)), cols=1, subplot_titles=titles or ["no process flows"],
                        vertical_spacing=0.18 / max(1, len(flows)) ** 0.5, row_heights=spans)
    for row, name in enumerate(flows, 1):
        part = positions.filter(pl.col("flow") == name)
        _draw_flow(fig, row, name, part, edges, hole_rows.filter(pl.col("flow") == name), lanes)
        if part.height:  # room for the labels above the top row and below the artifacts
            fig.update_yaxes(range=[float(part["y"].min()) - 0.8, float(part["y"].max()) + 0.9], row=row, col=1)
    if flows:
        _add_legend(fig, positions.filter(pl.col("flow").is_in(flows)), lanes)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(
        title={"text": f"Workflow holes · {len(flows)} flow{'s' if len(flows) != 1 else ''} · "
                       f"{hole_rows.filter(pl.col('flow').is_in(flows)).height} holes (rings, by severity)", "x": 0.01},
        paper_bgcolor=BACKGROUND, plot_bgcolor=BACKGROUND, font={"color": FOREGROUND}, showlegend=bool(flows),
        legend={"bgcolor": "rgba(0,0,0,0)", "font": {"color": FOREGROUND, "size": 11}, "groupclick": "toggleitem"},
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

_SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}


def _hole_text(holes: pl.DataFrame) -> pl.DataFrame:
    """One row per hole entry: id, flow, the hover text of all its holes, their kinds as a label
    (``dead end · unused output``) and the most severe of their severities."""
    schema = {"id": pl.String, "flow": pl.String, "text": pl.String, "kinds": pl.String, "severity": pl.String}
    if holes.height == 0:
        return pl.DataFrame(schema=schema)
    color = pl.col("severity").replace_strict(SEVERITY_COLORS, default=HOLE_COLOR, return_dtype=pl.String)
    rank = pl.col("severity").replace_strict(_SEVERITY_RANK, default=3, return_dtype=pl.Int64)
    lines = holes.with_columns(
        pl.format("<b style='color:{}'>{}</b> ({})<br>{}<br><b>Ask:</b> {}", color,
                  "hole", "severity", pl.col("explanation").map_elements(_wrap, return_dtype=pl.String),
                  pl.col("question").map_elements(_wrap, return_dtype=pl.String)).alias("text"),
        pl.col("hole").str.replace_all("_", " ").alias("kinds"), rank.alias("_rank"))
    return (lines.group_by("id", "flow", maintain_order=True)
            .agg(pl.col("text").str.join("<br>"), pl.col("kinds").unique(maintain_order=True).str.join(" · "),
                 pl.col("severity").sort_by("_rank").first())
            .select(list(schema)))


def _lane_colors(positions: pl.DataFrame) -> dict[str, str]:
    """A colour per lane (owner) of the steps and decisions drawn, in title order."""
    owners = positions.filter(pl.col("kind").is_in(_STEP_KINDS))["owner"].drop_nulls().unique().sort().to_list()
    return {lane: COMMUNITY_PALETTE[i % len(COMMUNITY_PALETTE)] for i, lane in enumerate(owners)}


def _add_legend(fig: go.Figure, positions: pl.DataFrame, lanes: dict[str, str]) -> None:
    """The key: one legend-only trace per shape, per lane drawn and per severity."""
    def key(name: str, group: str, title: str, marker: dict) -> None:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, legendgroup=group,
                                 legendgrouptitle={"text": title}, showlegend=True, hoverinfo="skip", marker=marker))

    kinds = set(positions["kind"].to_list())
    for kind, (symbol, color, size) in _SHAPES.items():
        if kind in kinds:
            key(kind, "shapes", "shapes", {"symbol": symbol, "color": color if kind == "artifact" else MUTED, "size": 11})
    for lane, color in lanes.items():
        key(lane, "lanes", "lanes (owner)", {"symbol": "square", "color": color, "size": 11})
    unowned = positions.filter(pl.col("kind").is_in(_STEP_KINDS) & pl.col("owner").is_null())
    if unowned.height:
        key("no lane", "lanes", "lanes (owner)", {"symbol": "square", "color": NO_LANE_COLOR, "size": 11})
    for severity, color in SEVERITY_COLORS.items():
        key(f"{severity} severity", "holes", "holes (ring)",
            {"symbol": "circle-open", "color": color, "size": 14, "line": {"width": 2.5, "color": color}})


def _wrap(text: str | None) -> str:
    return "<br>".join(html.escape(line) for line in textwrap.wrap(text or "", 70))


def _draw_flow(fig, row: int, name: str, pos: pl.DataFrame, edges: pl.DataFrame, holes: pl.DataFrame,
               lanes: dict[str, str]) -> None:
    where = {i: (x, y) for i, x, y in zip(pos["id"], pos["x"], pos["y"])}
    kinds = dict(zip(pos["id"], pos["kind"]))
    flow_edges = edges.filter(pl.col("src").is_in(list(where)) & pl.col("dst").is_in(list(where)))
    dotted = flow_edges.filter(pl.col("type").is_in(["produces", "requires"]))
    xs, ys = [], []
    for s, d in zip(dotted["src"], dotted["dst"]):
        xs += [where[s][0], where[d][0], None]
        ys += [where[s][1], where[d][1], None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"{name}: links", hoverinfo="skip", showlegend=False,
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
        colors = ([color] * part.height if kind == "artifact" else
                  [lanes.get((o or "").split(", ")[0], NO_LANE_COLOR) if o else NO_LANE_COLOR for o in part["owner"]])
        fig.add_trace(go.Scatter(
            x=part["x"].to_list(), y=part["y"].to_list(), mode="markers+text", name=f"{name}: {kind}s", showlegend=False,
            text=["<br>".join(textwrap.wrap(t or "", 16)) for t in part["title"]], textposition=_label_sides(part, pos),
            textfont={"size": 10, "color": FOREGROUND}, customdata=part["id"].to_list(), cliponaxis=False,
            hovertext=[hover_text(t, None, f"{k}{f' ({g} gateway)' if g else ''} · {i}", f"owner: {o}" if o else "no owner")
                       for t, k, i, o, g in zip(part["title"], part["kind"], part["id"], part["owner"], part["gateway"])],
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"symbol": symbol, "color": colors, "size": size, "line": {"color": BACKGROUND, "width": 1}}),
            row=row, col=1)
    gates = pos.filter(pl.col("gateway").is_not_null())
    if gates.height:
        fig.add_trace(go.Scatter(
            x=gates["x"].to_list(), y=gates["y"].to_list(), mode="text", name=f"{name}: gateway marks", showlegend=False,
            text=[GATEWAY_MARKS.get(g, "") for g in gates["gateway"]], customdata=gates["gateway"].to_list(),
            textfont={"size": 13, "color": BACKGROUND}, hoverinfo="skip"), row=row, col=1)
    marked = holes.join(pos.select("id", "x", "y", "title"), on="id", how="inner")
    if marked.height:
        rings = [SEVERITY_COLORS.get(v, HOLE_COLOR) for v in marked["severity"]]
        fig.add_trace(go.Scatter(
            x=marked["x"].to_list(), y=marked["y"].to_list(), mode="markers", name=f"{name}: holes", showlegend=False,
            customdata=marked["id"].to_list(), meta=marked["severity"].to_list(),
            hovertext=[f"<b>{html.escape(t)}</b><br>{h}" for t, h in zip(marked["title"], marked["text"])],
            hovertemplate="%{hovertext}<extra></extra>",
            marker={"symbol": "circle-open", "size": 34, "color": rings, "line": {"width": 3, "color": rings}}),
            row=row, col=1)
        for i, x, y, kinds, color in zip(marked["id"], marked["x"], marked["y"], marked["kinds"], rings):
            fig.add_annotation(x=x, y=y, text=html.escape(kinds), name=f"{name}: hole {i}", xref=f"x{axis}",
                               yref=f"y{axis}", showarrow=False, yshift=24, font={"size": 10, "color": color},
                               bgcolor=BACKGROUND)
    if pos.height:
        fig.update_xaxes(range=[pos["x"].min() - 0.6, pos["x"].max() + 0.6], row=row, col=1)
        fig.update_yaxes(range=[pos["y"].min() - 0.9, pos["y"].max() + 0.6], row=row, col=1)
