"""kbtools.graph.hubs: degrees, PageRank, betweenness (exact and sampled), hubs."""

from __future__ import annotations

import igraph as ig
import networkx as nx
import numpy as np
import polars as pl
import pytest

from kbtools.graph.hubs import centrality_scores, hub_threshold
from kbtools.errors import ValidationError
from kbtools.graph.build import to_igraph
from kbtools.model.schema import empty


def _random(n=80, m=160, seed=0):
    rng = np.random.default_rng(seed)
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, n, (m, 2)) if a != b})
    g = ig.Graph(n=n, edges=pairs, directed=True)
    g.vs["name"] = [f"v{i:02d}" for i in range(n)]
    g.es["weight"] = rng.uniform(0.1, 1.0, len(pairs)).tolist()
    return g


def _nx_undirected(g):
    G = nx.Graph()
    G.add_nodes_from(range(g.vcount()))
    for e in g.es:
        a, b = e.source, e.target
        w = G[a][b]["weight"] + e["weight"] if G.has_edge(a, b) else e["weight"]
        G.add_edge(a, b, weight=w)
    return G


def test_degrees_by_hand():
    g = ig.Graph([(0, 1), (0, 2), (1, 2), (2, 0)], directed=True)
    g.vs["name"] = ["a", "b", "c"]
    out = centrality_scores(g)
    assert out.select("id", "degree", "in_degree", "out_degree").rows() == [
        ("a", 3, 1, 2), ("b", 2, 1, 1), ("c", 3, 2, 1)]
    assert out.schema == pl.Schema({"id": pl.String, "degree": pl.Int64, "in_degree": pl.Int64,
                                    "out_degree": pl.Int64, "pagerank": pl.Float64,
                                    "betweenness": pl.Float64, "hub": pl.Boolean})


@pytest.mark.parametrize("seed", range(3))
def test_pagerank_and_exact_betweenness_match_networkx(seed):
    g = _random(seed=seed)
    out = centrality_scores(g)
    G = _nx_undirected(g)
    pr = nx.pagerank(G, alpha=0.85, weight="weight", tol=1e-12, max_iter=1000)
    assert np.allclose(out["pagerank"].to_numpy(), [pr[i] for i in range(g.vcount())], atol=1e-6)
    bc = nx.betweenness_centrality(G, normalized=False, weight=None)
    assert np.allclose(out["betweenness"].to_numpy(), [bc[i] for i in range(g.vcount())])


def test_sampled_betweenness_is_scaled_estimate():
    g = _random(n=300, m=600, seed=4)
    exact = centrality_scores(g)["betweenness"].to_numpy()
    assert np.allclose(centrality_scores(g, betweenness_sample=300)["betweenness"].to_numpy(), exact)
    runs = np.array([centrality_scores(g, betweenness_sample=60, seed=s)["betweenness"].to_numpy() for s in range(30)])
    assert runs.mean(axis=0).sum() == pytest.approx(exact.sum(), rel=0.05)  # unbiased: n / sources
    assert np.corrcoef(runs.mean(axis=0), exact)[0, 1] > 0.95
    again = centrality_scores(g, betweenness_sample=60, seed=0)["betweenness"].to_numpy()
    assert np.array_equal(again, runs[0])  # reproducible with the seed
    assert centrality_scores(g, betweenness_sample=0)["betweenness"].null_count() == g.vcount()


def test_hub_rule():
    assert hub_threshold([1, 1, 1, 1, 2]) == 4.0
    assert hub_threshold([]) == 4.0
    d = [2] * 50 + [30]
    assert hub_threshold(d) == pytest.approx(np.mean(d) + 2 * np.std(d))
    star = ig.Graph([(0, i) for i in range(1, 12)] + [(1, 2), (3, 4)], directed=True)
    star.vs["name"] = [f"n{i}" for i in range(12)]
    assert centrality_scores(star).filter(pl.col("hub"))["id"].to_list() == ["n0"]
    triangle = ig.Graph([(0, 1), (1, 2), (2, 0)], directed=True)
    assert not centrality_scores(triangle)["hub"].any()  # never a hub with three links or fewer


def test_errors_empty_and_input_unchanged():
    assert centrality_scores(to_igraph(empty("entries"), empty("edges"))).height == 0
    g = _random(n=10, m=20)
    with pytest.raises(ValidationError):
        centrality_scores(g, betweenness_sample=-1)
    with pytest.raises(ValidationError):
        centrality_scores(g, damping=1.0)
    before = (g.get_edgelist(), list(g.es["weight"]), g.vs["name"])
    centrality_scores(g)
    assert (g.get_edgelist(), list(g.es["weight"]), g.vs["name"]) == before
