"""Pure figure builders: the 3D constellation view and the communities view (plotly figures from frames).

:func:`graph_figure` draws every entry at its :func:`~kbtools.views.layout.layout_3d` position,
coloured by community or kind, the links as faint lines. Given an :class:`~kbtools.Answer` it shows
the answer as the agent reads it inside the whole picture: results, folded pointers, neighbours and
linked entries lit and large (one colour and marker per role), the links between them bright, with
particles travelling along them (animation frames behind a play button); everything else shrinks
to a dim dot. Above ``max_nodes`` entries the figure samples (every answer entry, then the best
linked ones) and says so on the figure.

Traces, in order, are named ``links``, ``entries`` (or one ``entries: <kind>`` per kind), then with an
answer ``answer links``, one trace per role present (``result``, ``folded``, ``neighbor``,
``linked``) and ``particles``; node traces carry entry ids in ``customdata``.

>>> import polars as pl
>>> from kbtools.views.layout import layout_3d
>>> entries = pl.DataFrame({"id": ["a", "b"], "kind": ["fact", "fact"], "title": ["A", "B"],
...                         "summary": ["", ""]})
>>> edges = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["cites"]})
>>> fig = graph_figure(entries, edges, layout_3d(entries, edges), color_by="kind")
>>> [t.name for t in fig.data]
['links', 'entries: fact']
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import polars as pl
from plotly.subplots import make_subplots

from kbtools.errors import ValidationError
from kbtools.views.labels import place_labels, project
from kbtools.views.theme import (BACKGROUND, FOREGROUND, MUTED, ROLE_STYLES, community_color, hover_text, kind_color,
                    short)

__all__ = ["graph_figure", "community_figure", "answer_roles", "COLOR_BY", "PARTICLE_FRAMES"]

#: What the constellation view can colour entries by.
COLOR_BY = ("community", "kind")
#: Animation frames of the particles moving along lit links (few: each one redraws the 3D scene).
PARTICLE_FRAMES = 8


def answer_roles(answer) -> pl.DataFrame:
    """The entries an answer shows, with their role (result, folded, neighbor, linked), the rank of the
    result they hang from, and the entry they were reached from (``parent``; null for results).

    >>> from kbtools.model.answer import Answer, Result, Pointer
    >>> a = Answer("q", [Result("a", 1, related=[Pointer("b", "cites", "out")])])
    >>> answer_roles(a).rows()
    [('a', 'result', 1, None), ('b', 'folded', 1, 'a')]
    """
    rows: list[tuple] = []
    for r in answer.results:
        rows.append((r.id, "result", r.rank, None))
        for p in r.related:
            rows.append((p.id, "folded", r.rank, p.via or r.id))
        for p in r.neighbors:
            rows.append((p.id, "neighbor", r.rank, p.via or r.id))
    for item in answer.linked:
        item_id = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
        via = item.get("via") if isinstance(item, dict) else getattr(item, "via", None)
        if item_id:
            rows.append((item_id, "linked", None, via if isinstance(via, str) else None))
    schema = {"id": pl.String, "role": pl.String, "rank": pl.Int64, "parent": pl.String}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    order = {role: i for i, role in enumerate(ROLE_STYLES)}
    return (frame.with_columns(pl.col("role").replace_strict(order, return_dtype=pl.Int64).alias("_o"))
            .sort("_o", "rank", nulls_last=True).unique("id", keep="first", maintain_order=True).drop("_o"))


def graph_figure(entries: pl.DataFrame, edges: pl.DataFrame, layout: pl.DataFrame, *, answer=None,
                 color_by: str = "community", communities: pl.DataFrame | None = None,
                 max_nodes: int = 10000, seed: int = 0, particles: bool = True) -> go.Figure:
    """The 3D constellation view of a bank (see the module docstring for what is drawn).

    ``entries``: id, kind, title, summary; ``edges``: src, dst (type, note shown on hover when
    present); ``layout``: id, x, y, z; ``communities``: id, community, label (without it, the
    communities of the drawn links are found with Leiden).
    """
    _check_graph(entries, edges, layout, color_by, max_nodes)
    roles = answer_roles(answer) if answer is not None else None
    nodes = _nodes(entries, layout, communities, edges)
    total = nodes.height
    if total > max_nodes:
        nodes = _sample(nodes, roles, max_nodes, seed)
    links = _links(edges, nodes)
    fig = go.Figure()
    lit_ids = set(roles["id"].to_list()) if roles is not None else set()
    lit_links = links.filter(pl.col("src").is_in(lit_ids) & pl.col("dst").is_in(lit_ids)) if lit_ids else links.clear()
    fig.add_trace(_line_trace(links, "links", "rgba(150,170,230,%s)" % ("0.10" if lit_ids else "0.35"), 1.5))
    for trace in _entry_traces(nodes, color_by, dim=bool(lit_ids)):
        fig.add_trace(trace)
    if roles is not None and roles.height:
        segments = _lit_segments(lit_links, roles, nodes)
        fig.add_trace(_line_trace(segments, "answer links", "#ffe08a", 6))
        for trace in _role_traces(nodes, roles, eye=_eye(nodes, roles)):
            fig.add_trace(trace)
        if particles and segments.height:
            _add_particles(fig, segments)
    _style(fig, _title(answer, roles, nodes, links, total), sampled=total > nodes.height,
           shown=nodes.height, total=total, eye=_eye(nodes, roles))
    return fig


def community_figure(communities: pl.DataFrame, centrality: pl.DataFrame, *, entries: pl.DataFrame | None = None,
                     top: int = 20) -> go.Figure:
    """Community sizes with their labels (bars, largest first) beside a table of the hubs.

    ``communities``: id, community, size, label; ``centrality``: id, degree, pagerank, betweenness,
    hub; ``entries`` (optional) gives the hubs' titles.

    >>> import polars as pl
    >>> c = pl.DataFrame({"id": ["a", "b", "c"], "community": [0, 0, -1], "size": [2, 2, 1],
    ...                   "label": ["x", "x", ""]})
    >>> z = pl.DataFrame({"id": ["a", "b", "c"], "degree": [1, 1, 0], "pagerank": [0.4, 0.4, 0.2],
    ...                   "betweenness": [0.0, 0.0, 0.0], "hub": [True, False, False]})
    >>> [t.type for t in community_figure(c, z).data]
    ['bar', 'table']
    """
    for column in ("id", "community", "label"):
        if column not in communities.columns:
            raise ValidationError(column, None, "communities need id, community and label columns")
    sizes = (communities.filter(pl.col("community") >= 0).group_by("community")
             .agg(pl.len().alias("size"), pl.col("label").first()).sort(["size", "community"], descending=[True, False])
             .head(top))
    isolated = communities.filter(pl.col("community") < 0).height
    fig = make_subplots(rows=1, cols=2, column_widths=[0.42, 0.58], horizontal_spacing=0.16,
                        specs=[[{"type": "xy"}, {"type": "table"}]],
                        subplot_titles=(f"Largest {sizes.height} communities", "Hubs"))
    names = [f"#{c} {short(label, 40) or '(no label)'}" for c, label in zip(sizes["community"], sizes["label"])]
    fig.add_trace(go.Bar(x=sizes["size"].to_list(), y=names, orientation="h", name="communities",
                         marker_color=[community_color(c) for c in sizes["community"]],
                         hovertemplate="%{y}: %{x} entries<extra></extra>"), row=1, col=1)
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    hubs = _hubs(centrality, communities, entries, top)
    fig.add_trace(go.Table(
        header={"values": ["entry", "id", "community", "degree", "pagerank", "betweenness"],
                "fill_color": "#1c2541", "font": {"color": FOREGROUND}, "align": "left",
                "line": {"color": "#2a3350"}},
        cells={"values": [hubs["title"].to_list(), hubs["id"].to_list(), hubs["community"].to_list(),
                          hubs["degree"].to_list(), [f"{v:.4f}" for v in hubs["pagerank"]],
                          [f"{v:.1f}" for v in hubs["betweenness"]]],
               "fill_color": "#111831", "font": {"color": FOREGROUND}, "align": "left",
               "line": {"color": "#2a3350"}},
        columnwidth=[3.2, 1.1, 1.1, 0.9, 1.1, 1.2], name="hubs"), row=1, col=2)
    fig.update_layout(
        title=f"{sizes.height} largest of {communities.filter(pl.col('community') >= 0)['community'].n_unique()} "
              f"communities · {isolated:,} entries without links · {hubs.height} hubs",
        paper_bgcolor=BACKGROUND, plot_bgcolor=BACKGROUND, font={"color": FOREGROUND}, showlegend=False,
        height=max(420, 26 * sizes.height + 140), margin={"l": 10, "r": 10, "t": 70, "b": 30})
    fig.update_xaxes(gridcolor="#2a3350", zerolinecolor="#2a3350", title_text="entries", row=1, col=1)
    fig.update_annotations(font={"color": FOREGROUND})
    return fig


# -- graph figure pieces -------------------------------------------------------------------------

def _check_graph(entries, edges, layout, color_by, max_nodes) -> None:
    if color_by not in COLOR_BY:
        raise ValidationError("color_by", color_by, f"must be one of {', '.join(COLOR_BY)}")
    if not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValidationError("max_nodes", max_nodes, "must be a positive whole number")
    for frame, name, columns in ((entries, "entries", ("id",)), (edges, "edges", ("src", "dst")),
                                 (layout, "layout", ("id", "x", "y", "z"))):
        for column in columns:
            if column not in frame.columns:
                raise ValidationError(column, None, f"{name} need columns {', '.join(columns)}")


def _nodes(entries, layout, communities, edges) -> pl.DataFrame:
    """One row per drawn entry: id, kind, title, summary, x, y, z, community, label, degree."""
    base = entries.select(
        "id",
        *(pl.col(c).cast(pl.String) if c in entries.columns else pl.lit(None, pl.String).alias(c)
          for c in ("kind", "title", "summary")))
    nodes = base.join(layout.select("id", "x", "y", "z"), on="id", how="inner")
    ends = pl.concat([edges.select(pl.col("src").alias("id")), edges.select(pl.col("dst").alias("id"))])
    degree = ends.group_by("id").agg(pl.len().cast(pl.Int64).alias("degree"))
    nodes = nodes.join(degree, on="id", how="left").with_columns(pl.col("degree").fill_null(0))
    if communities is None:
        communities = _link_groups(nodes, edges)
    info = communities.select("id", pl.col("community").cast(pl.Int64),
                              (pl.col("label") if "label" in communities.columns else pl.lit("")).alias("label"))
    return nodes.join(info, on="id", how="left").with_columns(pl.col("community").fill_null(-1),
                                                             pl.col("label").fill_null(""))


def _link_groups(nodes: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Communities of the drawn links (Leiden, modularity) when the caller gave none."""
    import igraph as ig

    from kbtools.graph.community import find_communities

    ids = nodes["id"].to_list()
    index = {i: n for n, i in enumerate(ids)}
    pairs = [(index[s], index[d]) for s, d in zip(edges["src"], edges["dst"]) if s in index and d in index and s != d]
    graph = ig.Graph(n=len(ids), edges=pairs)
    graph.vs["name"] = ids
    found = find_communities(graph, entries=nodes.select("id", "title", "summary"))
    return found.select("id", "community", "label") if found.height else pl.DataFrame(
        schema={"id": pl.String, "community": pl.Int64, "label": pl.String})


def _sample(nodes: pl.DataFrame, roles, max_nodes: int, seed: int) -> pl.DataFrame:
    """Every answer entry, then the best-linked ones (ties broken by a seeded shuffle)."""
    must = set(roles["id"].to_list()) if roles is not None else set()
    rng = np.random.default_rng(seed)
    ranked = (nodes.with_columns(pl.col("id").is_in(must).alias("_must"), pl.Series("_tie", rng.random(nodes.height)))
              .sort(["_must", "degree", "_tie"], descending=[True, True, False]))
    return ranked.head(max(max_nodes, len(must))).drop("_must", "_tie")


def _links(edges: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """Edges between drawn entries, with both ends' positions."""
    pos = nodes.select("id", "x", "y", "z")
    extra = [c for c in ("type", "note") if c in edges.columns]
    return (edges.select("src", "dst", *extra).filter(pl.col("src") != pl.col("dst"))
            .join(pos.rename({"id": "src", "x": "x0", "y": "y0", "z": "z0"}), on="src", how="inner")
            .join(pos.rename({"id": "dst", "x": "x1", "y": "y1", "z": "z1"}), on="dst", how="inner"))


def _segments_xyz(links: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, y, z arrays of line segments separated by gaps (NaN), one segment per row."""
    gap = np.full(links.height, np.nan)
    return tuple(np.column_stack([links[f"{a}0"].to_numpy(), links[f"{a}1"].to_numpy(), gap]).ravel()
                 for a in "xyz")


def _line_trace(links: pl.DataFrame, name: str, color: str, width: float) -> go.Scatter3d:
    x, y, z = _segments_xyz(links)
    return go.Scatter3d(x=x, y=y, z=z, mode="lines", name=name, hoverinfo="skip", showlegend=name != "links",
                        line={"color": color, "width": width})


def _entry_traces(nodes: pl.DataFrame, color_by: str, *, dim: bool) -> list[go.Scatter3d]:
    """The entries: one trace coloured by community, or one trace per kind (with a legend)."""
    if color_by == "kind":
        groups = [(f"entries: {kind}", nodes.filter(pl.col("kind").eq_missing(kind)), [kind_color(kind)])
                  for kind in sorted(nodes["kind"].unique().to_list(), key=lambda k: (k is None, k or ""))]
    else:
        groups = [("entries", nodes, [community_color(c) for c in nodes["community"]])]
    traces = []
    for name, part, colors in groups:
        size = np.where(part["degree"].to_numpy() > 0, 2.6 if dim else 4.5, 2.0 if dim else 2.8)
        traces.append(go.Scatter3d(
            x=part["x"].to_numpy(), y=part["y"].to_numpy(), z=part["z"].to_numpy(), mode="markers", name=name,
            customdata=part["id"].to_list(), hovertext=_hovers(part), hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": size, "color": colors if len(colors) != 1 else colors[0], "line": {"width": 0},
                    "opacity": 0.5 if dim else 0.9},
            showlegend=color_by == "kind"))
    return traces


def _hovers(part: pl.DataFrame) -> list[str]:
    return [hover_text(t or i, s, f"{k or 'entry'} · {i}" + (f" · community {c}: {lab}" if c >= 0 and lab else ""))
            for i, t, s, k, c, lab in zip(part["id"], part["title"], part["summary"], part["kind"],
                                          part["community"], part["label"])]


def _lit_segments(lit_links: pl.DataFrame, roles: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """Links among answer entries, plus each pointer's own line (parent to pointer) when no stored
    link between the two is drawn; one row per unordered pair, oriented from the parent."""
    pos = nodes.select("id", "x", "y", "z")
    pointers = (roles.filter(pl.col("parent").is_not_null()).select(pl.col("parent").alias("src"), pl.col("id").alias("dst"))
                .join(pos.rename({"id": "src", "x": "x0", "y": "y0", "z": "z0"}), on="src", how="inner")
                .join(pos.rename({"id": "dst", "x": "x1", "y": "y1", "z": "z1"}), on="dst", how="inner"))
    columns = ["src", "dst", "x0", "y0", "z0", "x1", "y1", "z1"]
    both = pl.concat([pointers.select(columns), lit_links.select(columns)])
    key = pl.concat_str(pl.min_horizontal("src", "dst"), pl.max_horizontal("src", "dst"), separator="|")
    return both.with_columns(key.alias("_pair")).unique("_pair", keep="first", maintain_order=True).drop("_pair")


def _result_labels(part: pl.DataFrame, nodes: pl.DataFrame, eye: dict) -> tuple[list[str], list[str]]:
    """Label texts and places of the lit results: no two overlap on the opening view; past
    :data:`LABEL_LIMIT`, or where no place is free, the label is left to the hover."""
    texts = [f"{r}. {short(t or i, 28)}" for r, t, i in zip(part["rank"], part["title"], part["id"])]
    xy = project(part.select("x", "y", "z").to_numpy(), eye, bounds=nodes.select("x", "y", "z").to_numpy())
    places = place_labels(xy, [6.4 * len(t) for t in texts])
    return ([t if p else "" for t, p in zip(texts, places)], [p or "top center" for p in places])


def _role_traces(nodes: pl.DataFrame, roles: pl.DataFrame, *, eye: dict) -> list[go.Scatter3d]:
    lit = roles.join(nodes, on="id", how="inner", maintain_order="left")
    traces = []
    for role, style in ROLE_STYLES.items():
        part = lit.filter(pl.col("role") == role)
        if part.height == 0:
            continue
        text, places = _result_labels(part, nodes, eye) if role == "result" else (None, None)
        traces.append(go.Scatter3d(
            x=part["x"].to_numpy(), y=part["y"].to_numpy(), z=part["z"].to_numpy(),
            mode="markers+text" if text else "markers", name=style["label"], text=text,
            textposition=places, textfont={"color": FOREGROUND, "size": 11},
            customdata=part["id"].to_list(), hovertext=_hovers(part), hovertemplate="%{hovertext}<extra></extra>",
            marker={"size": style["size"], "color": style["color"], "symbol": style["symbol"], "opacity": 1.0,
                    "line": {"color": "#ffffff", "width": 1}}))
        traces[-1].meta = {"role": role}
    return traces


def _particle_xyz(segments: pl.DataFrame, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(segments[f"{a}0"].to_numpy() * (1 - t) + segments[f"{a}1"].to_numpy() * t for a in "xyz")


def _add_particles(fig: go.Figure, segments: pl.DataFrame) -> None:
    """Small markers travelling from each parent along the lit links: one frame per step, a play button."""
    marker = {"size": 4, "color": "#fffbe6", "opacity": 1.0}
    x, y, z = _particle_xyz(segments, 0.5)
    fig.add_trace(go.Scatter3d(x=x, y=y, z=z, mode="markers", name="particles", hoverinfo="skip",
                               marker=marker, showlegend=False))
    index = len(fig.data) - 1
    frames = []
    for step in range(PARTICLE_FRAMES):
        x, y, z = _particle_xyz(segments, (step + 0.5) / PARTICLE_FRAMES)
        frames.append(go.Frame(name=str(step), traces=[index],
                               data=[go.Scatter3d(x=x, y=y, z=z, mode="markers", marker=marker)]))
    fig.frames = frames
    play = {"frame": {"duration": 140, "redraw": True}, "transition": {"duration": 0}, "fromcurrent": True,
            "mode": "immediate"}
    fig.update_layout(updatemenus=[{
        "type": "buttons", "showactive": False, "x": 0.0, "y": 0.0, "xanchor": "left", "yanchor": "bottom",
        "bgcolor": "#1c2541", "font": {"color": FOREGROUND}, "bordercolor": MUTED,
        "buttons": [{"label": "▶ follow the links", "method": "animate", "args": [None, play]}]}])


def _title(answer, roles, nodes, links, total) -> str:
    if roles is None:
        groups = nodes.filter(pl.col("community") >= 0)["community"].n_unique()
        return f"Knowledge bank · {total:,} entries · {links.height:,} links · {groups:,} constellations"
    counts = roles.group_by("role").len()
    count = dict(zip(counts["role"], counts["len"]))
    words = {"folded": ("folded pointer", "folded pointers"), "neighbor": ("neighbour", "neighbours"),
             "linked": ("entry brought in by links", "entries brought in by links")}
    extra = ", ".join(f"{count[r]} {words[r][count[r] > 1]}" for r in ("folded", "neighbor", "linked") if count.get(r))
    query = f"“{short(answer.query, 70)}” · " if answer.query else ""
    return f"{query}{count.get('result', 0)} results lit{' + ' + extra if extra else ''} among {total:,} entries"


def _eye(nodes: pl.DataFrame, roles) -> dict:
    """The camera: from the side of the answer (so nothing hides it), else a three-quarter view."""
    eye = np.array([0.8, 0.8, 0.45])
    if roles is not None and roles.height:
        lit = nodes.filter(pl.col("id").is_in(roles["id"].to_list())).select("x", "y", "z").to_numpy()
        centre = lit.mean(axis=0) if len(lit) else np.zeros(3)
        norm = float(np.linalg.norm(centre))
        if norm > 0.05:
            eye = centre / norm * 1.15 + np.array([0.0, 0.0, 0.2])
    return {"x": float(eye[0]), "y": float(eye[1]), "z": float(eye[2])}


def _style(fig: go.Figure, title: str, *, sampled: bool, shown: int, total: int, eye: dict) -> None:
    axis = {"visible": False, "showbackground": False, "showgrid": False, "zeroline": False}
    fig.update_layout(
        title={"text": title, "x": 0.01, "font": {"size": 15}}, paper_bgcolor=BACKGROUND,
        font={"color": FOREGROUND}, margin={"l": 0, "r": 0, "t": 46, "b": 0}, height=720,
        scene={"xaxis": axis, "yaxis": axis, "zaxis": axis, "bgcolor": BACKGROUND, "aspectmode": "data",
               "camera": {"eye": eye}},
        legend={"x": 0.01, "y": 0.94, "bgcolor": "rgba(11,16,32,0.6)", "font": {"size": 11}},
        hoverlabel={"bgcolor": "#1c2541", "font": {"color": FOREGROUND}})
    if sampled:
        fig.add_annotation(text=f"Sampled: showing {shown:,} of {total:,} entries (every answer entry, then the "
                                f"best-linked ones)", x=0.99, y=0.01, xref="paper", yref="paper", showarrow=False,
                           xanchor="right", yanchor="bottom", font={"color": "#ffd166", "size": 12}, name="sampled")


def _hubs(centrality: pl.DataFrame, communities: pl.DataFrame, entries, top: int) -> pl.DataFrame:
    frame = centrality.filter(pl.col("hub")) if "hub" in centrality.columns else centrality
    if frame.height == 0:
        frame = centrality
    frame = frame.sort(["pagerank", "id"], descending=[True, False]).head(top)
    frame = frame.join(communities.select("id", "community"), on="id", how="left")
    titles = entries.select("id", "title") if entries is not None and "title" in entries.columns else None
    if titles is not None:
        frame = frame.join(titles, on="id", how="left")
    else:
        frame = frame.with_columns(pl.lit(None, pl.String).alias("title"))
    return frame.with_columns(pl.coalesce(pl.col("title").map_elements(lambda t: short(t, 60), return_dtype=pl.String),
                                          pl.col("id")).alias("title"))
