"""kbtools.graph.build: igraph view, faded weights and the CSR adjacency."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.graph.build import Adjacency, edge_weights, to_igraph
from kbtools.model.schema import empty

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


def _entries(ids, status=None):
    return pl.DataFrame({"id": ids, "kind": ["event"] * len(ids), "title": [f"T {i}" for i in ids],
                         "status": status or ["active"] * len(ids)})


def _edges(rows):
    """rows: (src, dst, type, source, weight, days since seen)."""
    return pl.DataFrame(
        {"src": [r[0] for r in rows], "dst": [r[1] for r in rows], "type": [r[2] for r in rows],
         "source": [r[3] for r in rows], "weight": [r[4] for r in rows],
         "seen_at": [NOW - dt.timedelta(days=r[5]) for r in rows], "note": [None] * len(rows)},
        schema_overrides={"seen_at": pl.Datetime("us", "UTC"), "note": pl.String},
    )


def test_edge_weights_trusted_are_one_and_fading_halves_per_half_life():
    e = _edges([("a", "b", "cites", "author", 0.2, 400), ("a", "c", "see_also", "auto", 0.8, 360),
                ("b", "c", "resolves", "feedback", 0.8, 0)])
    assert edge_weights(e, now=NOW).to_list() == pytest.approx([1.0, 0.2, 0.8])


def test_edge_weights_falls_back_to_created_at_and_rejects_bad_half_life():
    e = pl.DataFrame({"source": ["auto"], "weight": [1.0], "seen_at": [None],
                      "created_at": [NOW - dt.timedelta(days=90)]},
                     schema_overrides={"seen_at": pl.Datetime("us", "UTC")})
    assert edge_weights(e, now=NOW, half_life_days=90).to_list() == pytest.approx([0.5])
    with pytest.raises(ValidationError):
        edge_weights(e, half_life_days=0)


def test_to_igraph_attributes_and_skips():
    entries = _entries(["a", "b", "c"])
    edges = _edges([("a", "b", "cites", "author", None, 1), ("b", "c", "see_also", "auto", 0.8, 180),
                    ("a", "zz", "cites", "author", 1.0, 1), ("c", "c", "cites", "author", 1.0, 1)])
    g = to_igraph(entries, edges, now=NOW)
    assert g.is_directed() and g.vcount() == 3
    assert g.vs["name"] == ["a", "b", "c"] and g.vs["kind"] == ["event"] * 3
    assert [(g.vs[e.source]["name"], g.vs[e.target]["name"]) for e in g.es] == [("a", "b")]
    g2 = to_igraph(entries, edges, trusted_only=False, now=NOW)
    assert g2.es["type"] == ["cites", "see_also"]
    assert g2.es["weight"] == pytest.approx([1.0, 0.4])
    assert set(g2.es.attributes()) >= {"type", "source", "weight", "note"}


def test_adjacency_keeps_strongest_link_per_pair_rows_sorted():
    entries = _entries(["a", "b", "c", "d"], ["active", "superseded", "active", "active"])
    edges = _edges([("a", "b", "see_also", "auto", 0.3, 0), ("b", "a", "corrects", "author", 1.0, 0),
                    ("a", "c", "see_also", "auto", 0.6, 0), ("d", "a", "see_also", "auto", 0.9, 0)])
    adj = Adjacency.build(entries, edges, now=NOW)
    assert adj.n_links == 3
    assert adj.neighbors("a") == ["b", "d", "c"]
    assert adj.neighbors("a", min_weight=0.7) == ["b", "d"]
    row = adj.links.row(int(adj.link[adj.indptr[0]]), named=True)
    assert (row["src"], row["dst"], row["type"]) == ("b", "a", "corrects")
    assert adj.superseded.tolist() == [False, True, False, False]
    m = adj.to_scipy().toarray()
    assert np.allclose(m, m.T) and m[0, 3] == pytest.approx(0.9)


def test_adjacency_trusted_only_and_unknown_id():
    entries = _entries(["a", "b"])
    edges = _edges([("a", "b", "see_also", "auto", 0.5, 0)])
    assert Adjacency.build(entries, edges, trusted_only=True, now=NOW).n_links == 0
    with pytest.raises(EntryNotFound):
        Adjacency.build(entries, edges).position("nope")


def test_adjacency_from_graph_matches_build():
    entries = _entries(["a", "b", "c"])
    edges = _edges([("a", "b", "cites", "author", 1.0, 0), ("c", "b", "see_also", "auto", 0.5, 0)])
    built = Adjacency.build(entries, edges, now=NOW)
    via_graph = Adjacency.from_graph(to_igraph(entries, edges, trusted_only=False, now=NOW))
    assert np.array_equal(built.indptr, via_graph.indptr)
    assert np.array_equal(built.indices, via_graph.indices)
    assert np.allclose(built.weights, via_graph.weights)


def test_duplicate_entry_ids_rejected():
    with pytest.raises(ValidationError, match="unique"):
        to_igraph(_entries(["a", "a"]), empty("edges"))


def test_empty_input_and_inputs_unchanged():
    entries, edges = empty("entries"), empty("edges")
    assert to_igraph(entries, edges).vcount() == 0
    adj = Adjacency.build(entries, edges)
    assert adj.size == 0 and adj.n_links == 0 and adj.indptr.tolist() == [0]
    full_e = _entries(["a", "b"])
    full_d = _edges([("a", "b", "cites", "author", 1.0, 0)])
    before_e, before_d = full_e.clone(), full_d.clone()
    to_igraph(full_e, full_d)
    Adjacency.build(full_e, full_d)
    assert_frame_equal(full_e, before_e)
    assert_frame_equal(full_d, before_d)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.floats(0.01, 1.0)), max_size=40))
def test_adjacency_is_symmetric_csr(pairs):
    ids = [f"{i:02d}" for i in range(10)]
    edges = pl.DataFrame({"src": [ids[a] for a, _, _ in pairs], "dst": [ids[b] for _, b, _ in pairs],
                          "type": ["see_also"] * len(pairs), "source": ["auto"] * len(pairs),
                          "weight": [w for _, _, w in pairs]},
                         schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String,
                                 "weight": pl.Float64})
    adj = Adjacency.build(pl.DataFrame({"id": ids}), edges)
    m = adj.to_scipy().toarray()
    assert np.allclose(m, m.T)
    assert np.all(np.diag(m) == 0)
    for i in range(10):
        row = adj.weights[adj.indptr[i]:adj.indptr[i + 1]]
        assert np.all(np.diff(row) <= 0)
    assert adj.indptr[-1] == 2 * adj.n_links
