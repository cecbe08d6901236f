"""kbtools.graph.paths: related (activation from one entry, with paths) and trace (shortest chain)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from kbtools.graph.activation import spread
from kbtools.errors import EntryNotFound, ValidationError
from kbtools.graph.build import Adjacency, to_igraph
from kbtools.graph.paths import TRACE_SCHEMA, related_entries, shortest_trace
from kbtools.model.schema import empty


def _bank(rows, ids=None):
    ids = ids or sorted({x for r in rows for x in r[:2]})
    entries = pl.DataFrame({"id": ids, "title": [f"Title {i}" for i in ids], "status": ["active"] * len(ids)})
    edges = pl.DataFrame(
        {"src": [r[0] for r in rows], "dst": [r[1] for r in rows], "type": [r[2] for r in rows],
         "source": ["author"] * len(rows), "note": [r[3] if len(r) > 3 else None for r in rows]},
        schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String, "note": pl.String},
    )
    return entries, edges


def test_related_scores_paths_and_limit():
    entries, edges = _bank([("a", "b", "corrects"), ("c", "b", "cites"), ("c", "d", "refines"),
                            ("e", "a", "see_also")])
    adj = Adjacency.build(entries, edges)
    out = related_entries(adj, "a", entries)
    paths = dict(out.select("id", "path").iter_rows())
    assert paths == {"b": "a -corrects-> b", "e": "a <-see_also- e", "c": "a -corrects-> b <-cites- c"}
    act = dict(spread({"a": 1.0}, adj).select("id", "activation").iter_rows())
    assert dict(out.select("id", "score").iter_rows()) == pytest.approx(
        {k: act[k] / act["a"] for k in ("b", "c", "e")})
    assert out["score"].is_sorted(descending=True)
    assert out.filter(pl.col("id") == "b")["title"].item() == "Title b"
    assert "d" in related_entries(adj, "a", entries, depth=3)["id"].to_list()
    assert related_entries(adj, "a", entries, limit=1).height == 1
    assert related_entries(adj, "a", None)["title"].null_count() == 3


def test_related_errors_and_isolated_entry():
    entries, edges = _bank([("a", "b", "cites")], ids=["a", "b", "z"])
    adj = Adjacency.build(entries, edges)
    assert related_entries(adj, "z", entries).height == 0
    with pytest.raises(EntryNotFound):
        related_entries(adj, "nope", entries)
    with pytest.raises(ValidationError):
        related_entries(adj, "a", entries, limit=-1)


def test_trace_chain_directions_and_notes():
    entries, edges = _bank([("b", "a", "corrects", "which env"), ("b", "c", "cites"), ("c", "d", "refines"),
                            ("a", "d", "see_also")])
    adj = Adjacency.build(entries, edges)
    out = shortest_trace(adj, "a", "c")
    assert out.rows() == [(1, "b", "a", "corrects", "author", "which env"), (2, "b", "c", "cites", "author", None)]
    assert out.schema == pl.Schema(TRACE_SCHEMA)
    g = to_igraph(entries, edges)
    assert shortest_trace(g, "a", "c").height == 2
    assert shortest_trace(adj, "a", "d")["type"].to_list() == ["see_also"]


def test_trace_none_within_depth_same_entry_and_unknown():
    entries, edges = _bank([("a", "b", "cites"), ("b", "c", "cites"), ("c", "d", "cites")], ids=list("abcdz"))
    adj, g = Adjacency.build(entries, edges), to_igraph(entries, edges)
    for graph in (adj, g):
        assert shortest_trace(graph, "a", "d", max_depth=2).height == 0
        assert shortest_trace(graph, "a", "d", max_depth=3).height == 3
        assert shortest_trace(graph, "a", "z").height == 0
        assert shortest_trace(graph, "a", "a").height == 0
        with pytest.raises(EntryNotFound):
            shortest_trace(graph, "a", "nope")
    with pytest.raises(ValidationError):
        shortest_trace(adj, "a", "b", max_depth=-1)
    with pytest.raises(ValidationError):
        shortest_trace("not a graph", "a", "b")


@pytest.mark.parametrize("seed", range(6))
def test_trace_length_matches_networkx(seed):
    rng = np.random.default_rng(seed)
    n = 60
    ids = [f"v{i:02d}" for i in range(n)]
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, n, (70, 2)) if a != b})
    entries = pl.DataFrame({"id": ids})
    edges = pl.DataFrame({"src": [ids[a] for a, _ in pairs], "dst": [ids[b] for _, b in pairs],
                          "type": ["see_also"] * len(pairs), "source": ["author"] * len(pairs)})
    adj, g = Adjacency.build(entries, edges), to_igraph(entries, edges)
    G = nx.Graph()
    G.add_nodes_from(ids)
    G.add_edges_from((ids[a], ids[b]) for a, b in pairs)
    for a, b in rng.integers(0, n, (25, 2)):
        a, b = ids[a], ids[b]
        try:
            want = nx.shortest_path_length(G, a, b)
        except nx.NetworkXNoPath:
            want = None
        for graph in (adj, g):
            got = shortest_trace(graph, a, b, max_depth=n)
            if want is None or want == 0:
                assert got.height == 0
                continue
            assert got.height == want
            # consecutive links share an end: the chain really goes from a to b
            at = a
            for src, dst in got.select("src", "dst").iter_rows():
                assert at in (src, dst)
                at = dst if at == src else src
            assert at == b
            assert shortest_trace(graph, a, b, max_depth=want - 1).height == 0


def test_empty_input_and_inputs_unchanged():
    adj = Adjacency.build(empty("entries"), empty("edges"))
    with pytest.raises(EntryNotFound):
        related_entries(adj, "a", empty("entries"))
    entries, edges = _bank([("a", "b", "cites")])
    before_e, before_d = entries.clone(), edges.clone()
    adj = Adjacency.build(entries, edges)
    related_entries(adj, "a", entries)
    shortest_trace(adj, "a", "b")
    shortest_trace(to_igraph(entries, edges), "a", "b")
    assert_frame_equal(entries, before_e)
    assert_frame_equal(edges, before_d)
