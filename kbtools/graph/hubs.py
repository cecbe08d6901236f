"""Which entries are hubs: degree, PageRank and betweenness of every entry (seed 000, "Structure").

Degrees count the directed links as stored (``in_degree``: links pointing at the entry, parallel
links of different types each count). PageRank and betweenness use the undirected simplified graph
(:func:`kbtools.graph.community.undirected_simple`): a link associates two entries both ways.

Betweenness is unweighted (hops), unnormalised (as igraph and ``networkx(normalized=False)``). It is
exact up to :data:`EXACT_BETWEENNESS_MAX` entries; above, it is estimated from
:data:`BETWEENNESS_SOURCES` random source entries (seeded), scaled by ``n / sources`` (an unbiased
estimate of the exact value). Exact betweenness grows with the square of the bank (seconds at 10k
entries); one sampled source costs one breadth-first walk.

**Hub rule**: an entry is a hub when its degree is at least ``max(4, mean + 2 * sd)`` of the degrees
(:func:`hub_threshold`): well above the bank's usual connectedness, and never for 3 links or fewer.

>>> import igraph as ig
>>> g = ig.Graph([(0, i) for i in range(1, 9)] + [(1, 2)], directed=True)
>>> g.vs["name"] = list("abcdefghi")
>>> c = centrality_scores(g)
>>> c.filter(pl.col("hub"))["id"].to_list()
['a']
"""

from __future__ import annotations

import igraph as ig
import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.graph.community import undirected_simple

__all__ = ["centrality_scores", "hub_threshold", "EXACT_BETWEENNESS_MAX", "BETWEENNESS_SOURCES"]

#: Exact betweenness up to this many entries (about 1.4 s at 5k on 2 cores).
EXACT_BETWEENNESS_MAX: int = 5000
#: Random source entries for the betweenness estimate above that size (about 6 s at 100k).
BETWEENNESS_SOURCES: int = 200

_SCHEMA = {"id": pl.String, "degree": pl.Int64, "in_degree": pl.Int64, "out_degree": pl.Int64,
           "pagerank": pl.Float64, "betweenness": pl.Float64, "hub": pl.Boolean}


def hub_threshold(degree) -> float:
    """The degree from which an entry counts as a hub: ``max(4, mean + 2 sd)``.

    >>> hub_threshold([1, 1, 1, 1, 2])
    4.0
    """
    d = np.asarray(degree, dtype=np.float64)
    if d.size == 0:
        return 4.0
    return float(max(4.0, d.mean() + 2.0 * d.std()))


def _betweenness(u: ig.Graph, sample: int | None, seed: int) -> np.ndarray:
    n = u.vcount()
    if sample is None:
        sample = n if n <= EXACT_BETWEENNESS_MAX else BETWEENNESS_SOURCES
    if sample >= n:
        return np.asarray(u.betweenness(directed=False), dtype=np.float64)
    sources = np.random.default_rng(seed).choice(n, size=sample, replace=False)
    part = np.asarray(u.betweenness(directed=False, sources=np.sort(sources).tolist()), dtype=np.float64)
    return part * (n / sample)


def centrality_scores(graph: ig.Graph, *, betweenness_sample: int | None = None, damping: float = 0.85,
               seed: int = 0) -> pl.DataFrame:
    """One row per entry: frame (id, degree, in_degree, out_degree, pagerank, betweenness, hub).

    ``betweenness_sample``: None picks exact or sampled by size (see module doc); an int uses that
    many random source entries (exact when it reaches the number of entries); 0 skips betweenness
    (null column). ``pagerank`` is igraph's weighted PageRank on the undirected graph at ``damping``.

    >>> g = ig.Graph([(0, 1), (1, 2)], directed=True); g.vs["name"] = ["a", "b", "c"]
    >>> centrality_scores(g).select("id", "degree", "betweenness").rows()
    [('a', 1, 0.0), ('b', 2, 1.0), ('c', 1, 0.0)]
    """
    if betweenness_sample is not None and betweenness_sample < 0:
        raise ValidationError("betweenness_sample", betweenness_sample, "must be None or >= 0")
    if not 0.0 < damping < 1.0:
        raise ValidationError("damping", damping, "must be between 0 and 1 (exclusive)")
    n = graph.vcount()
    if n == 0:
        return pl.DataFrame(schema=_SCHEMA)
    names = graph.vs["name"] if "name" in graph.vs.attributes() else [str(i) for i in range(n)]
    mode_in, mode_out = ("in", "out") if graph.is_directed() else ("all", "all")
    indeg = np.asarray(graph.degree(mode=mode_in), dtype=np.int64)
    outdeg = np.asarray(graph.degree(mode=mode_out), dtype=np.int64)
    degree = indeg + outdeg if graph.is_directed() else indeg
    u = undirected_simple(graph)
    rank = np.asarray(u.pagerank(directed=False, weights="weight", damping=damping), dtype=np.float64)
    between = (np.full(n, np.nan) if betweenness_sample == 0
               else _betweenness(u, betweenness_sample, seed))
    return pl.DataFrame(
        {"id": names, "degree": degree, "in_degree": indeg, "out_degree": outdeg, "pagerank": rank,
         "betweenness": between, "hub": degree >= hub_threshold(degree)},
        schema=_SCHEMA,
    ).with_columns(pl.col("betweenness").fill_nan(None))
