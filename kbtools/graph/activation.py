"""Spreading activation (personalized PageRank) from retrieved entries, and the links section.

Seed 001, section 6. :func:`spread` walks a small neighbourhood of the seeds over a cached
:class:`~kbtools.graph.build.Adjacency` and runs 20 PageRank iterations on it; :func:`expand` picks the
entries the links bring in; :func:`links_section` writes the "How these memories connect" lines.
:func:`personalized_pagerank` is the same iteration over a whole graph, run to convergence.

Dangling rules (where the mass of an entry without links goes):

- :func:`personalized_pagerank` follows networkx's ``pagerank(personalization=p)``: a dangling
  vertex hands its mass out by the personalization vector, *inside* the damped part
  (``x <- (1-r) (P^T x + dangling(x) p) + r p``), so the two agree to 1e-6.
- :func:`spread` follows seed 001: an entry without links *sends its mass back to the seeds*, and a
  superseded entry passes on only ``superseded_factor`` (30 %) of its mass along its links, the rest
  also going back to the seeds. Both are the same formula with a per-entry leak; the results differ
  from networkx only where the neighbourhood has superseded entries.

>>> import polars as pl
>>> from kbtools.graph.build import Adjacency
>>> entries = pl.DataFrame({"id": ["a", "b", "c"]})
>>> edges = pl.DataFrame({"src": ["b", "c"], "dst": ["a", "b"], "type": ["resolves", "refines"],
...                       "source": ["author", "author"]})
>>> spread({"a": 1.0}, Adjacency.build(entries, edges))["id"].to_list()
['a', 'b', 'c']
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping

import igraph as ig
import numpy as np
import polars as pl
from scipy import sparse

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.graph.build import DEFAULT_HALF_LIFE_DAYS, Adjacency, edge_weights
from kbtools.model.vocab import TRUSTED_SOURCES

__all__ = [
    "SPREAD_DEFAULTS",
    "PROVENANCE_TYPES",
    "spread",
    "expand",
    "personalized_pagerank",
    "power_iteration",
    "links_section",
    "link_text",
]

#: Seed 001, section 6: 2 hops, 8 strongest links per entry, at most 40 entries, links below 0.1 not
#: followed, superseded entries pass on 30 %, restart 0.5, 20 iterations.
SPREAD_DEFAULTS: dict[str, float] = {
    "hops": 2, "fanout": 8, "max_nodes": 40, "min_weight": 0.1,
    "superseded_factor": 0.3, "restart": 0.5, "iterations": 20,
}
#: Link types that say where an entry came from rather than why it matters (listed after relations).
PROVENANCE_TYPES: frozenset[str] = frozenset({"derived_from", "split_from", "cites"})

_VIA = re.compile(r"^(\S+) -(\S+)-> (\S+)$")
_SPREAD_SCHEMA = {"id": pl.String, "activation": pl.Float64, "seed": pl.Boolean, "via": pl.String}


def link_text(src: str, type_: str, dst: str) -> str:
    """A stored link as text, ``src -type-> dst`` (the form of ``via`` and of paths).

    >>> link_text("b2c3d4e5", "corrects", "a1b2c3d4")
    'b2c3d4e5 -corrects-> a1b2c3d4'
    """
    return f"{src} -{type_}-> {dst}"


# --------------------------------------------------------------------------- seeds and checks


def _seed_scores(seeds, index: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Vertex numbers of the seeds with a positive score and their normalised scores, best first.

    Raises KbError subclasses for bad seeds (unknown id, negative or non-finite score, zero sum).
    """
    if isinstance(seeds, pl.DataFrame):
        if "id" not in seeds.columns or "score" not in seeds.columns:
            raise ValidationError("seeds", seeds.columns, "a seed frame needs columns id and score")
        pairs = zip(seeds["id"].to_list(), seeds["score"].to_list())
    elif isinstance(seeds, Mapping):
        pairs = seeds.items()
    else:
        raise ValidationError("seeds", type(seeds).__name__, "must be a dict {id: score} or a frame (id, score)")
    score: dict[int, float] = {}
    count = 0
    for entry_id, value in pairs:
        count += 1
        if value is None or not np.isfinite(value) or value < 0:
            raise ValidationError("score", value, f"seed {entry_id}: scores must be finite and >= 0")
        try:
            i = index[entry_id]
        except (KeyError, TypeError):
            raise EntryNotFound(str(entry_id), "seeds") from None
        score[i] = score.get(i, 0.0) + float(value)
    total = sum(score.values())
    if total <= 0:
        raise ValidationError("seeds", f"{count} scores summing to {total:g}",
                              "seed scores sum to zero: give at least one seed a positive score")
    nodes = np.fromiter((i for i, v in score.items() if v > 0), dtype=np.int64)
    values = np.fromiter((v for v in score.values() if v > 0), dtype=np.float64) / total
    order = np.argsort(-values, kind="stable")
    return nodes[order], values[order]


class _VertexIndex(Mapping):
    """Vertex number by name through igraph's own name index (no dict of every vertex built)."""

    def __init__(self, graph: ig.Graph):
        self.graph = graph

    def __getitem__(self, name):
        if not isinstance(name, str):
            raise KeyError(name)
        try:
            return self.graph.vs.find(name).index  # a string looks up igraph's name index
        except (ValueError, KeyError):
            raise KeyError(name) from None

    def __iter__(self):
        return iter(self.graph.vs["name"])

    def __len__(self) -> int:
        return self.graph.vcount()


def _sparse_reset(nodes: np.ndarray, values: np.ndarray, n: int) -> list[float]:
    s = np.zeros(n, dtype=np.float64)
    s[nodes] = values
    return s.tolist()


def _seed_vector(seeds, index: Mapping[str, int], n: int) -> np.ndarray:
    """The normalised restart vector over all ``n`` vertices."""
    nodes, values = _seed_scores(seeds, index)
    s = np.zeros(n, dtype=np.float64)
    s[nodes] = values
    return s


def _check_range(name: str, value, lo, hi=None, *, lo_open=False) -> None:
    bad = value is None or (value <= lo if lo_open else value < lo) or (hi is not None and value > hi)
    if bad:
        bound = f"{'>' if lo_open else '>='} {lo}" + (f" and <= {hi}" if hi is not None else "")
        raise ValidationError(name, value, f"must be {bound}")


def _is_empty_seeds(seeds) -> bool:
    return (isinstance(seeds, pl.DataFrame) and seeds.height == 0) or (isinstance(seeds, Mapping) and not seeds)


# --------------------------------------------------------------------------- whole-graph PPR


def transition_matrix(graph_or_adjacency) -> tuple[sparse.csr_array, list[str]]:
    """Weighted adjacency matrix (parallel edges summed, an undirected edge both ways) and vertex names
    of an igraph or an Adjacency: the matrix :func:`personalized_pagerank` walks."""
    if isinstance(graph_or_adjacency, Adjacency):
        return graph_or_adjacency.to_scipy(), graph_or_adjacency.ids.tolist()
    if not isinstance(graph_or_adjacency, ig.Graph):
        raise ValidationError("graph", type(graph_or_adjacency).__name__, "must be an igraph.Graph or an Adjacency")
    g = graph_or_adjacency
    n, m = g.vcount(), g.ecount()
    el = np.asarray(g.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    w = np.asarray(g.es["weight"], dtype=np.float64) if "weight" in g.es.attributes() else np.ones(m)
    rows, cols = el[:, 0], el[:, 1]
    if not g.is_directed():
        rows, cols, w = np.concatenate([rows, cols]), np.concatenate([cols, rows]), np.concatenate([w, w])
    a = sparse.csr_array((w, (rows, cols)), shape=(n, n))  # duplicates summed
    names = g.vs["name"] if "name" in g.vs.attributes() else [str(i) for i in range(n)]
    return a, names


def personalized_pagerank(graph_or_adjacency, seeds, *, restart: float = 0.5, iterations: int = 200,
                          tol: float = 1e-12) -> pl.DataFrame:
    """Personalized PageRank over a whole graph, to convergence: frame (id, activation, seed), best first.

    ``x <- (1 - restart) (P^T x + dangling(x) s) + restart s`` with ``P(u->v) = w(u,v) / sum_x w(u,x)``,
    ``s`` the normalised seed scores; dangling vertices give their mass out by ``s`` (as networkx's
    ``pagerank(G, alpha=1-restart, personalization=s)``). A directed igraph walks along edge
    direction (parallel edges summed); an :class:`Adjacency` is symmetric. Stops when the L1 change
    falls below ``tol`` or after ``iterations`` steps.

    >>> import igraph as ig
    >>> g = ig.Graph([(0, 1), (1, 2), (2, 0)], directed=True); g.vs["name"] = ["a", "b", "c"]
    >>> personalized_pagerank(g, {"a": 1.0})["activation"].round(4).to_list()
    [0.5714, 0.2857, 0.1429]
    """
    _check_range("restart", restart, 0.0, 1.0, lo_open=True)
    _check_range("iterations", iterations, 1)
    if isinstance(graph_or_adjacency, ig.Graph) and graph_or_adjacency.vcount():
        g = graph_or_adjacency
        named = "name" in g.vs.attributes()
        nodes, values = _seed_scores(seeds, _VertexIndex(g) if named else {str(i): i for i in range(g.vcount())})
        # igraph's PRPACK solves the same system directly: faster than iterating (kb bench --only serve)
        x = np.asarray(g.personalized_pagerank(
            directed=True, damping=1.0 - restart, reset=_sparse_reset(nodes, values, g.vcount()), implementation="prpack",
            weights="weight" if "weight" in g.es.attributes() else None))
        names = g.vs["name"] if named else [str(i) for i in range(g.vcount())]
        s = np.zeros(g.vcount())
        s[nodes] = values
        return _ranked(names, x, s)
    a, names = transition_matrix(graph_or_adjacency)
    n = len(names)
    if n == 0 and _is_empty_seeds(seeds):
        return pl.DataFrame(schema={"id": pl.String, "activation": pl.Float64, "seed": pl.Boolean})
    s = _seed_vector(seeds, {v: i for i, v in enumerate(names)}, n)
    return _ranked(names, power_iteration(a, s, restart=restart, iterations=iterations, tol=tol), s)


def power_iteration(a: sparse.csr_array, s: np.ndarray, *, restart: float = 0.5, iterations: int = 200,
                    tol: float = 1e-12) -> np.ndarray:
    """kbtools' own PPR kernel: ``x <- (1 - restart)(P^T x + dangling(x) s) + restart s`` over a
    weighted adjacency ``a`` until the L1 change is below ``tol``. :func:`personalized_pagerank`
    uses igraph's PRPACK for an igraph graph instead (faster on the same graphs: ``kb bench
    --only serve``) and this kernel for an :class:`Adjacency`.

    >>> a = sparse.csr_array(np.array([[0, 1.0], [1.0, 0]]))
    >>> power_iteration(a, np.array([1.0, 0.0])).round(4).tolist()
    [0.6667, 0.3333]
    """
    out = np.asarray(a.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.divide(1.0, out, out=np.zeros_like(out), where=~dangling)
    pt = (sparse.diags_array(inv) @ a).T.tocsr()  # P^T
    x = s.copy()
    damp = 1.0 - restart
    for _ in range(iterations):
        new = damp * (pt @ x + x[dangling].sum() * s) + restart * s
        done = np.abs(new - x).sum() < tol
        x = new
        if done:
            break
    return x


def _ranked(names: list[str], x: np.ndarray, s: np.ndarray) -> pl.DataFrame:
    return (
        pl.DataFrame({"id": names, "activation": x, "seed": s > 0},
                     schema={"id": pl.String, "activation": pl.Float64, "seed": pl.Boolean})
        .with_row_index("_v")
        .sort(["activation", "_v"], descending=[True, False])
        .drop("_v")
    )


# --------------------------------------------------------------------------- local spreading


def strongest_links(adj: Adjacency, nodes: np.ndarray, fanout: int, min_weight: float):
    """(owner, neighbour, weight, link) arrays of the ``fanout`` strongest links of each vertex number in
    ``nodes`` whose weight reaches ``min_weight`` (the steps a spread or a trace may take)."""
    starts = adj.indptr[nodes]
    counts = np.minimum(adj.indptr[nodes + 1] - starts, fanout)
    total = int(counts.sum())
    if total == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), empty
    owner = np.repeat(nodes, counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    pos = np.repeat(starts, counts) + offsets
    w = adj.weights[pos]
    keep = w >= min_weight
    return owner[keep], adj.indices[pos][keep], w[keep], adj.link[pos][keep]


def _neighbourhood(adj: Adjacency, seeds: np.ndarray, *, hops: int, fanout: int, max_nodes: int,
                   min_weight: float):
    """Breadth-first from the seeds: vertex numbers, parent vertex and link that brought each in."""
    nodes = [seeds]
    parent = [np.full(len(seeds), -1, dtype=np.int64)]
    via = [np.full(len(seeds), -1, dtype=np.int64)]
    seen = set(seeds.tolist())
    frontier, room = seeds, max_nodes - len(seeds)
    for _ in range(hops):
        if room <= 0 or len(frontier) == 0:
            break
        owner, nbr, w, link = strongest_links(adj, frontier, fanout, min_weight)
        new = np.fromiter((v not in seen for v in nbr.tolist()), dtype=bool, count=len(nbr))
        owner, nbr, w, link = owner[new], nbr[new], w[new], link[new]
        order = np.argsort(-w, kind="stable")  # strongest link first; ties keep frontier order
        owner, nbr, link = owner[order], nbr[order], link[order]
        _, first = np.unique(nbr, return_index=True)
        first = np.sort(first)[:room]
        frontier = nbr[first]
        nodes.append(frontier)
        parent.append(owner[first])
        via.append(link[first])
        seen.update(frontier.tolist())
        room -= len(frontier)
    return np.concatenate(nodes), np.concatenate(parent), np.concatenate(via)


def _local_ppr(adj: Adjacency, nodes: np.ndarray, s: np.ndarray, *, fanout: int, min_weight: float,
               superseded_factor: float, restart: float, iterations: int) -> np.ndarray:
    """20 PageRank steps on the neighbourhood; unpassed mass (no links, superseded) returns to the seeds."""
    k = len(nodes)
    by_number = np.argsort(nodes)
    sorted_nodes = nodes[by_number]
    owner, nbr, w, _ = strongest_links(adj, nodes, fanout, min_weight)
    at = np.minimum(np.searchsorted(sorted_nodes, nbr), k - 1)
    inside = sorted_nodes[at] == nbr
    li = by_number[np.searchsorted(sorted_nodes, owner[inside])]
    lj = by_number[at[inside]]
    a = np.zeros((k, k))
    a[li, lj] = w[inside]
    a[lj, li] = w[inside]  # symmetric: a link followed from either end
    out = a.sum(axis=1)
    p = np.divide(a, out[:, None], out=np.zeros_like(a), where=out[:, None] > 0)
    p *= np.where(adj.superseded[nodes], superseded_factor, 1.0)[:, None]
    leak = 1.0 - p.sum(axis=1)
    x = s.copy()
    for _ in range(iterations):
        x = restart * s + (1.0 - restart) * (p.T @ x + (leak @ x) * s)
    return x


def check_spread_options(*, hops, fanout, max_nodes, superseded_factor, restart, iterations) -> None:
    """Raise :class:`~kbtools.errors.ValidationError` for a spread option out of its range (the
    checks :func:`spread` and ``related_entries`` make before they touch the graph)."""
    _check_range("hops", hops, 0)
    _check_range("fanout", fanout, 1)
    _check_range("max_nodes", max_nodes, 1)
    _check_range("superseded_factor", superseded_factor, 0.0, 1.0)
    _check_range("restart", restart, 0.0, 1.0, lo_open=True)
    _check_range("iterations", iterations, 1)


def spread_arrays(seeds, adj: Adjacency, *, hops: int, fanout: int, max_nodes: int, min_weight: float,
                  superseded_factor: float, restart: float, iterations: int):
    """Vertex numbers, parents, links that brought them in, seed mass and activation of a spread."""
    seed_nodes, seed_values = _seed_scores(seeds, adj.index)
    nodes, parent, via = _neighbourhood(adj, seed_nodes, hops=hops, fanout=fanout,
                                        max_nodes=max_nodes, min_weight=min_weight)
    s = np.zeros(len(nodes))
    s[: len(seed_nodes)] = seed_values  # the neighbourhood starts with the seeds, in this order
    x = _local_ppr(adj, nodes, s, fanout=fanout, min_weight=min_weight,
                   superseded_factor=superseded_factor, restart=restart, iterations=iterations)
    return nodes, parent, via, s, x


def spread(seeds, adjacency: Adjacency, *, hops: int = 2, fanout: int = 8, max_nodes: int = 40,
           min_weight: float = 0.1, superseded_factor: float = 0.3, restart: float = 0.5,
           iterations: int = 20) -> pl.DataFrame:
    """Spreading activation from seed entries: frame (id, activation, seed, via), strongest first.

    Breadth first from the seeds, ``hops`` hops over the ``fanout`` strongest links of each entry
    (links with faded weight below ``min_weight`` are not followed), at most ``max_nodes`` entries
    (the seeds always count; new entries come in strongest link first). On that neighbourhood,
    ``a(u,v)`` = link weight (symmetric), ``P(u->v) = a / sum a``, and ``iterations`` steps of
    ``p <- restart s + (1 - restart) P^T p`` from ``p = s``. An entry without links sends its mass back
    to the seeds; a superseded entry passes on ``superseded_factor`` of its mass (the rest returns to
    the seeds). ``via`` is the link that brought an entry in (``src -type-> dst``), null for seeds.
    Empty seeds give an empty frame; seeds that sum to zero or name unknown ids raise.

    >>> import polars as pl
    >>> from kbtools.graph.build import Adjacency
    >>> adj = Adjacency.build(pl.DataFrame({"id": ["a", "b"]}), pl.DataFrame(
    ...     {"src": ["b"], "dst": ["a"], "type": ["resolves"], "source": ["author"]}))
    >>> spread({"a": 2.0}, adj).select("id", "seed", "via").rows()
    [('a', True, None), ('b', False, 'b -resolves-> a')]
    """
    check_spread_options(hops=hops, fanout=fanout, max_nodes=max_nodes,
                         superseded_factor=superseded_factor, restart=restart, iterations=iterations)
    if _is_empty_seeds(seeds):
        return pl.DataFrame(schema=_SPREAD_SCHEMA)
    nodes, _, via, s, x = spread_arrays(
        seeds, adjacency, hops=hops, fanout=fanout, max_nodes=max_nodes, min_weight=min_weight,
        superseded_factor=superseded_factor, restart=restart, iterations=iterations)
    order = np.argsort(-x, kind="stable")
    nodes, via = nodes[order], via[order]
    src, type_, dst = adjacency.link_ends
    via_text = [None if k < 0 else link_text(src[k], type_[k], dst[k]) for k in via.tolist()]
    return pl.DataFrame({"id": adjacency.ids[nodes].tolist(), "activation": x[order], "seed": s[order] > 0,
                         "via": via_text}, schema=_SPREAD_SCHEMA)


def expand(answer_ids_scores, adjacency: Adjacency, entries: pl.DataFrame | None = None, *,
           links: int = 3, **spread_options) -> pl.DataFrame:
    """The entries the links bring in: frame (id, activation, via), best first, at most ``links``.

    Spreads from the answer (seeds = retrieved ids and their scores, a dict or a frame (id, score)),
    then keeps the non-seed entries that retrieval could show: status ``active`` (or null) in
    ``entries`` (the adjacency's status when ``entries`` is None). ``activation`` is relative to the
    strongest seed (seed 001: ``signals["linked"]``). ``links=0`` brings nothing in.

    >>> import polars as pl
    >>> from kbtools.graph.build import Adjacency
    >>> entries = pl.DataFrame({"id": ["a", "b", "c"], "status": ["active", "active", "superseded"]})
    >>> edges = pl.DataFrame({"src": ["b", "c"], "dst": ["a", "a"], "type": ["resolves", "supersedes"],
    ...                       "source": ["author", "author"]})
    >>> expand({"a": 0.9}, Adjacency.build(entries, edges), entries)["id"].to_list()
    ['b']
    """
    _check_range("links", links, 0)
    schema = {"id": pl.String, "activation": pl.Float64, "via": pl.String}
    if links == 0 or _is_empty_seeds(answer_ids_scores):
        return pl.DataFrame(schema=schema)
    act = spread(answer_ids_scores, adjacency, **spread_options)
    top_seed = act.filter(pl.col("seed"))["activation"].max()
    found = act.filter(~pl.col("seed"))
    if entries is not None and "status" in entries.columns:
        hidden = entries.filter(pl.col("status").is_not_null() & (pl.col("status") != "active"))["id"]
    else:
        hidden = pl.Series(adjacency.ids[adjacency.superseded].tolist(), dtype=pl.String)
    return (
        found.filter(~pl.col("id").is_in(hidden.implode()))
        .head(links)
        .select("id", (pl.col("activation") / top_seed).alias("activation"), "via")
    )


# --------------------------------------------------------------------------- links section


def _short(title: str | None, limit: int = 60) -> str:
    title = " ".join((title or "").split())
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


def _brought_links(brought_in) -> set[tuple[str, str, str]]:
    if brought_in is None or "via" not in getattr(brought_in, "columns", []):
        return set()
    found = set()
    for text in brought_in["via"].drop_nulls().to_list():
        match = _VIA.match(text)
        if match:
            src, type_, dst = match.groups()
            found.add((src, type_, dst))
    return found


def _pick_lines(rows: list[dict], max_lines: int, max_per_entry: int) -> list[dict]:
    """Take rows in order; a row whose entry already has ``max_per_entry`` lines waits until the end."""
    taken, waiting, count = [], [], {}
    for row in rows:
        if len(taken) >= max_lines:
            break
        if count.get(row["src"], 0) < max_per_entry and count.get(row["dst"], 0) < max_per_entry:
            taken.append(row)
            for end in (row["src"], row["dst"]):
                count[end] = count.get(end, 0) + 1
        else:
            waiting.append(row)
    chosen = taken + waiting[: max_lines - len(taken)]
    order = {id(r): i for i, r in enumerate(rows)}
    return sorted(chosen, key=lambda r: order[id(r)])


def links_section(ids_in_context: Iterable[str], brought_in: pl.DataFrame | None, edges: pl.DataFrame,
                  entries: pl.DataFrame, *, max_lines: int = 6, max_per_entry: int = 2,
                  always: Iterable[str] = (), min_weight: float = 0.1, now: dt.datetime | None = None,
                  half_life_days: float = DEFAULT_HALF_LIFE_DAYS) -> list[str]:
    """The "How these memories connect" lines: links among the context that touch a shown entry.

    Considers links with both ends in the context (``ids_in_context`` plus ``brought_in["id"]``) and
    at least one end retrieved or brought in (not only in ``always``: open goals, pins), faded weight
    at least ``min_weight``, one line per pair. Order: the links that brought an entry in
    (``brought_in["via"]``, as returned by :func:`expand`), then relations before provenance
    (:data:`PROVENANCE_TYPES`), then structural, feedback and manual (trusted) links before automatic
    ones, then by weight. At most ``max_lines`` lines; no entry takes more than ``max_per_entry``
    lines while other links wait.

    >>> import polars as pl
    >>> entries = pl.DataFrame({"id": ["f", "p"], "kind": ["event", "event"],
    ...     "title": ["Found it: the encoder cable on line 3 was loose", "Line 3 keeps faulting with error E-217"]})
    >>> edges = pl.DataFrame({"src": ["f"], "dst": ["p"], "type": ["resolves"], "source": ["auto"],
    ...                       "weight": [0.67]})
    >>> links_section(["f", "p"], None, edges, entries)
    ['event "Found it: the encoder cable on line 3 was loose" resolves event "Line 3 keeps faulting with error E-217"']
    """
    _check_range("max_lines", max_lines, 0)
    _check_range("max_per_entry", max_per_entry, 1)
    context = set(ids_in_context)
    if brought_in is not None and brought_in.height:
        context |= set(brought_in["id"].to_list())
    shown = context - set(always)
    if not shown or edges.height == 0 or max_lines == 0:
        return []
    brought = _brought_links(brought_in)
    ctx = pl.Series(sorted(context), dtype=pl.String).implode()
    shown_s = pl.Series(sorted(shown), dtype=pl.String).implode()
    cand = (
        edges.with_columns(weight=edge_weights(edges, now=now, half_life_days=half_life_days))
        .filter(pl.col("src").is_in(ctx) & pl.col("dst").is_in(ctx) & (pl.col("src") != pl.col("dst")))
        .filter(pl.col("src").is_in(shown_s) | pl.col("dst").is_in(shown_s))
        .filter(pl.col("weight") >= min_weight)
        .select("src", "dst", "type", "source", "weight")
    )
    rows = cand.to_dicts()
    for row in rows:
        row["_key"] = (
            (row["src"], row["type"], row["dst"]) not in brought,
            row["type"] in PROVENANCE_TYPES,
            not (row["source"] in TRUSTED_SOURCES or row["source"] == "feedback"),
            -row["weight"], row["src"], row["dst"], row["type"],
        )
    rows.sort(key=lambda r: r["_key"])
    seen_pairs, unique_rows = set(), []
    for row in rows:
        pair = frozenset((row["src"], row["dst"]))
        if pair not in seen_pairs:
            seen_pairs.add(pair)
            unique_rows.append(row)
    info = {r["id"]: r for r in entries.select(
        "id",
        (pl.col("kind") if "kind" in entries.columns else pl.lit("entry")).fill_null("entry").alias("kind"),
        pl.coalesce([pl.col(c) for c in ("title", "summary") if c in entries.columns] + [pl.col("id")])
        .alias("title"),
    ).filter(pl.col("id").is_in(ctx)).to_dicts()}

    def side(entry_id: str) -> str:
        entry = info.get(entry_id, {"kind": "entry", "title": entry_id})
        return f'{entry["kind"]} "{_short(entry["title"])}"'

    return [f'{side(r["src"])} {r["type"].replace("_", " ")} {side(r["dst"])}'
            for r in _pick_lines(unique_rows, max_lines, max_per_entry)]
