"""What is connected to an entry, and how two entries are connected (seed 001, section 6: related, trace).

Paths are written link by link from the starting entry, each link in its stored direction:
``a -corrects-> b`` where the link reads "a corrects b", ``b <-cites- c`` where it reads "c cites b".

>>> import polars as pl
>>> from kbtools.graph.build import Adjacency
>>> entries = pl.DataFrame({"id": ["a", "b", "c"], "title": ["A", "B", "C"]})
>>> edges = pl.DataFrame({"src": ["a", "c"], "dst": ["b", "b"], "type": ["corrects", "cites"],
...                       "source": ["author", "author"]})
>>> adj = Adjacency.build(entries, edges)
>>> related_entries(adj, "a", entries)["path"].to_list()
['a -corrects-> b', 'a -corrects-> b <-cites- c']
>>> shortest_trace(adj, "a", "c")["type"].to_list()
['corrects', 'cites']
"""

from __future__ import annotations

import warnings

import igraph as ig
import numpy as np
import polars as pl

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.graph.activation import (
    SPREAD_DEFAULTS,
    check_spread_options,
    spread_arrays,
    strongest_links,
)
from kbtools.graph.build import Adjacency

__all__ = ["related_entries", "shortest_trace", "TRACE_SCHEMA"]

#: Columns of :func:`shortest_trace`: one row per link of the chain, in its stored direction.
TRACE_SCHEMA: dict[str, pl.DataType] = {
    "step": pl.Int64, "src": pl.String, "dst": pl.String, "type": pl.String,
    "source": pl.String, "note": pl.String,
}
_RELATED_SCHEMA = {"id": pl.String, "title": pl.String, "score": pl.Float64, "path": pl.String}


def _path_text(adj: Adjacency, chain: list[tuple[int, int, int]]) -> str:
    """Render (from vertex, to vertex, link row) steps as ``a -type-> b <-type- c``."""
    src, types, _ = adj.link_ends
    parts = [str(adj.ids[chain[0][0]])] if chain else []
    for u, v, k in chain:
        type_ = types[k]
        arrow = f" -{type_}-> " if src[k] == adj.ids[u] else f" <-{type_}- "
        parts.append(arrow + str(adj.ids[v]))
    return "".join(parts)


def _chain(v: int, parent: dict[int, int], via: dict[int, int]) -> list[tuple[int, int, int]]:
    steps = []
    while parent.get(v, -1) >= 0:
        steps.append((parent[v], v, via[v]))
        v = parent[v]
    return steps[::-1]


def related_entries(adjacency: Adjacency, entry_id: str, entries: pl.DataFrame | None = None, *, depth: int = 2,
            limit: int = 10, **spread_options) -> pl.DataFrame:
    """Entries related to one entry, best first: frame (id, title, score, path).

    Spreading activation from ``entry_id`` alone (:func:`kbtools.graph.activation.spread`, ``depth`` hops,
    the other options as there); ``score`` is activation relative to the entry's own; ``path`` is the
    chain of links that reached it. Superseded entries are included (they are history, reachable).

    >>> import polars as pl
    >>> from kbtools.graph.build import Adjacency
    >>> adj = Adjacency.build(pl.DataFrame({"id": ["a", "b"]}), pl.DataFrame(
    ...     {"src": ["b"], "dst": ["a"], "type": ["resolves"], "source": ["author"]}))
    >>> related_entries(adj, "a").select("id", "path").rows()
    [('b', 'a <-resolves- b')]
    """
    _check_range_limit(limit)
    options = {**SPREAD_DEFAULTS, **spread_options, "hops": depth}
    check_spread_options(**{k: options[k] for k in ("hops", "fanout", "max_nodes", "superseded_factor",
                                                    "restart", "iterations")})
    adjacency.position(entry_id, "related")
    nodes, parent, via, s, x = spread_arrays({entry_id: 1.0}, adjacency, **options)
    parents = dict(zip(nodes.tolist(), parent.tolist()))
    vias = dict(zip(nodes.tolist(), via.tolist()))
    own = x[0]
    order = [i for i in np.argsort(-x, kind="stable").tolist() if s[i] == 0][:limit]
    ids = adjacency.ids[nodes[order]].tolist()
    titles = _titles(entries, ids)
    return pl.DataFrame(
        {"id": ids, "title": titles, "score": (x[order] / own).tolist(),
         "path": [_path_text(adjacency, _chain(int(nodes[i]), parents, vias)) for i in order]},
        schema=_RELATED_SCHEMA,
    )


def _check_range_limit(limit: int) -> None:
    if limit is None or limit < 0:
        raise ValidationError("limit", limit, "must be >= 0")


def _titles(entries: pl.DataFrame | None, ids: list[str]) -> list[str | None]:
    if entries is None or "title" not in entries.columns or not ids:
        return [None] * len(ids)
    found = dict(entries.filter(pl.col("id").is_in(ids)).select("id", "title").iter_rows())
    return [found.get(i) for i in ids]


def _bfs_adjacency(adj: Adjacency, a: int, b: int, max_depth: int) -> list[int]:
    """Link rows of a shortest chain a..b (either direction, every link), [] if none within max_depth."""
    parent, via = {a: -1}, {a: -1}
    frontier = np.array([a], dtype=np.int64)
    for _ in range(max_depth):
        if b in parent or len(frontier) == 0:
            break
        owner, nbr, _, link = strongest_links(adj, frontier, np.iinfo(np.int64).max, -np.inf)
        new = []
        for u, v, k in zip(owner.tolist(), nbr.tolist(), link.tolist()):
            if v not in parent:
                parent[v], via[v] = u, k
                new.append(v)
        frontier = np.array(new, dtype=np.int64)
    if b not in parent:
        return []
    return [k for _, _, k in _chain(b, parent, via)]


def shortest_trace(adjacency_or_graph, a: str, b: str, *, max_depth: int = 4) -> pl.DataFrame:
    """The shortest chain of links from entry ``a`` to entry ``b``: frame (step, src, dst, type, source, note).

    Breadth first over links in either direction (every link, whatever its weight; superseded
    entries included). Each row is a link as stored (``src <type> dst``), ``step`` counts from 1.
    Empty when ``b`` is not within ``max_depth`` links (or ``a == b``). Takes an
    :class:`~kbtools.graph.build.Adjacency` (one link per pair, the strongest) or an ``igraph.Graph`` from
    :func:`kbtools.graph.build.to_igraph` (any of the parallel links).

    >>> import polars as pl
    >>> from kbtools.graph.build import to_igraph
    >>> g = to_igraph(pl.DataFrame({"id": ["a", "b", "c"]}), pl.DataFrame(
    ...     {"src": ["b", "b"], "dst": ["a", "c"], "type": ["corrects", "cites"], "source": ["author"] * 2}))
    >>> shortest_trace(g, "a", "c").select("step", "src", "dst").rows()
    [(1, 'b', 'a'), (2, 'b', 'c')]
    """
    if max_depth is None or max_depth < 0:
        raise ValidationError("max_depth", max_depth, "must be >= 0")
    if isinstance(adjacency_or_graph, Adjacency):
        adj = adjacency_or_graph
        ia, ib = adj.position(a, "trace"), adj.position(b, "trace")
        rows = _bfs_adjacency(adj, ia, ib, max_depth) if ia != ib else []
        chain = adj.links[rows].select("src", "dst", "type", "source", "note") if rows else None
    elif isinstance(adjacency_or_graph, ig.Graph):
        chain = _trace_igraph(adjacency_or_graph, a, b, max_depth)
    else:
        raise ValidationError("graph", type(adjacency_or_graph).__name__,
                              "must be an Adjacency or an igraph.Graph")
    if chain is None or chain.height == 0:
        return pl.DataFrame(schema=TRACE_SCHEMA)
    return chain.select(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("step"),
                        *[pl.col(c).cast(TRACE_SCHEMA[c]) for c in ("src", "dst", "type", "source", "note")])


def _trace_igraph(graph: ig.Graph, a: str, b: str, max_depth: int) -> pl.DataFrame | None:
    names = graph.vs["name"] if "name" in graph.vs.attributes() else []
    index = {v: i for i, v in enumerate(names)}
    for entry_id in (a, b):
        if entry_id not in index:
            raise EntryNotFound(str(entry_id), "trace")
    if a == b:
        return None
    with warnings.catch_warnings():  # igraph warns when b is unreachable; an empty chain says it
        warnings.simplefilter("ignore", RuntimeWarning)
        epath = graph.get_shortest_path(index[a], index[b], mode="all", output="epath")
    if not epath or len(epath) > max_depth:
        return None
    attrs = graph.es.attributes()
    pick = lambda name: [graph.es[e][name] if name in attrs else None for e in epath]  # noqa: E731
    return pl.DataFrame(
        {"src": [names[graph.es[e].source] for e in epath], "dst": [names[graph.es[e].target] for e in epath],
         "type": pick("type"), "source": pick("source"), "note": pick("note")},
        schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String, "note": pl.String},
    )
