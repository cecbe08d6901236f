"""kbtools.graph.activation: personalized PageRank, spreading activation, expansion and the links section."""

from __future__ import annotations

import networkx as nx
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from kbtools.graph.activation import expand, links_section, personalized_pagerank, spread
from kbtools.errors import EntryNotFound, KbError, ValidationError
from kbtools.graph.build import Adjacency, to_igraph
from kbtools.model.schema import empty


def _bank(pairs, status=None, n=None, kinds=None, titles=None):
    """Entries 'a'.. and author edges from (src, dst[, type[, source, weight]]) tuples."""
    ids = sorted({x for p in pairs for x in p[:2]}) if n is None else [chr(97 + i) for i in range(n)]
    entries = pl.DataFrame({"id": ids, "kind": kinds or ["event"] * len(ids),
                            "title": titles or [f"Title {i}" for i in ids],
                            "status": [(status or {}).get(i, "active") for i in ids]})
    edges = pl.DataFrame(
        {"src": [p[0] for p in pairs], "dst": [p[1] for p in pairs],
         "type": [p[2] if len(p) > 2 else "see_also" for p in pairs],
         "source": [p[3] if len(p) > 3 else "author" for p in pairs],
         "weight": [p[4] if len(p) > 4 else 1.0 for p in pairs]},
        schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String, "weight": pl.Float64},
    )
    return entries, edges


def _act(frame):
    return dict(frame.select("id", "activation").iter_rows())


# --------------------------------------------------------------------------- whole-graph PPR vs networkx


def _random_digraph(seed, n=30, m=80):
    rng = np.random.default_rng(seed)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (m, 2)) if a != b}
    pairs = sorted(pairs)
    weights = rng.uniform(0.1, 1.0, len(pairs))
    return n, pairs, weights, rng


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("restart", [0.15, 0.5])
def test_personalized_pagerank_matches_networkx_directed(seed, restart):
    n, pairs, weights, rng = _random_digraph(seed)
    ids = [f"v{i:02d}" for i in range(n)]
    entries = pl.DataFrame({"id": ids})
    edges = pl.DataFrame({"src": [ids[a] for a, _ in pairs], "dst": [ids[b] for _, b in pairs],
                          "type": ["see_also"] * len(pairs), "source": ["auto"] * len(pairs),
                          "weight": weights})
    g = to_igraph(entries, edges, trusted_only=False)
    seeds = {ids[i]: float(rng.uniform(0.1, 1)) for i in rng.choice(n, 3, replace=False)}
    ours = _act(personalized_pagerank(g, seeds, restart=restart, iterations=2000, tol=1e-14))
    G = nx.DiGraph()
    G.add_nodes_from(ids)
    G.add_weighted_edges_from((ids[a], ids[b], w) for (a, b), w in zip(pairs, weights))
    ref = nx.pagerank(G, alpha=1 - restart, personalization=seeds, weight="weight", tol=1e-14, max_iter=2000)
    assert max(abs(ours[k] - ref[k]) for k in ids) < 1e-6
    assert any(G.out_degree(v) == 0 for v in ids)  # dangling vertices are exercised


@pytest.mark.parametrize("seed", range(3))
def test_personalized_pagerank_matches_networkx_undirected_adjacency(seed):
    n, pairs, weights, rng = _random_digraph(seed, n=25, m=40)
    ids = [f"v{i:02d}" for i in range(n)]
    und = {}
    for (a, b), w in zip(pairs, weights):
        und.setdefault((min(a, b), max(a, b)), w)
    edges = pl.DataFrame({"src": [ids[a] for a, _ in und], "dst": [ids[b] for _, b in und],
                          "type": ["see_also"] * len(und), "source": ["auto"] * len(und),
                          "weight": list(und.values())})
    adj = Adjacency.build(pl.DataFrame({"id": ids}), edges)
    seeds = {ids[0]: 1.0, ids[5]: 2.0}
    ours = _act(personalized_pagerank(adj, seeds, iterations=2000, tol=1e-14))
    G = nx.Graph()
    G.add_nodes_from(ids)
    G.add_weighted_edges_from((ids[a], ids[b], w) for (a, b), w in und.items())
    ref = nx.pagerank(G, alpha=0.5, personalization=seeds, tol=1e-14, max_iter=2000)
    assert max(abs(ours[k] - ref[k]) for k in ids) < 1e-6


def test_personalized_pagerank_errors_are_kb_errors():
    entries, edges = _bank([("a", "b")])
    g = to_igraph(entries, edges)
    with pytest.raises(EntryNotFound, match="seeds"):
        personalized_pagerank(g, {"zz": 1.0})
    with pytest.raises(ValidationError, match="sum to zero"):
        personalized_pagerank(g, {"a": 0.0})
    with pytest.raises(ValidationError):
        personalized_pagerank(g, {"a": 1.0}, restart=0)


# --------------------------------------------------------------------------- spread, hand-computed


def test_spread_two_nodes_by_hand():
    entries, edges = _bank([("a", "b")])
    adj = Adjacency.build(entries, edges)
    # p0 = s = (1, 0); p1 = (.5, .5); p2 = (.75, .25); p3 = (.625, .375); limit (2/3, 1/3)
    assert _act(spread({"a": 1.0}, adj, iterations=2)) == pytest.approx({"a": 0.75, "b": 0.25})
    assert _act(spread({"a": 1.0}, adj, iterations=3)) == pytest.approx({"a": 0.625, "b": 0.375})
    assert _act(spread({"a": 1.0}, adj)) == pytest.approx({"a": 2 / 3, "b": 1 / 3}, abs=1e-6)


def test_spread_isolated_seed_keeps_its_mass_and_frame_shape():
    entries, edges = _bank([("a", "b")], n=3)
    out = spread({"c": 5.0}, Adjacency.build(entries, edges))
    assert out.rows() == [("c", 1.0, True, None)]
    assert out.schema == pl.Schema({"id": pl.String, "activation": pl.Float64, "seed": pl.Boolean,
                                    "via": pl.String})


def test_spread_dead_end_mass_returns_to_seeds():
    # seeds a and an isolated d: d sends its mass back to both seeds, a-b pass theirs along.
    entries, edges = _bank([("a", "b")], n=4)
    out = _act(spread({"a": 1.0, "d": 1.0}, Adjacency.build(entries, edges), iterations=200))
    # x = .5 s + .5 (P^T x + x_d s), s = (.5, 0, 0, .5) over (a, b, c, d); solve exactly:
    s = np.array([0.5, 0, 0, 0.5])
    P = np.zeros((4, 4))
    P[0, 1] = P[1, 0] = 1
    leak = np.array([0, 0, 1, 1.0])
    A = np.eye(4) - 0.5 * (P.T + np.outer(s, leak))
    x = np.linalg.solve(A, 0.5 * s)
    assert out == pytest.approx({"a": x[0], "b": x[1], "d": x[3]})
    assert sum(out.values()) == pytest.approx(1.0)


def test_spread_superseded_passes_on_thirty_percent():
    entries, edges = _bank([("a", "b"), ("b", "c")], status={"b": "superseded"})
    adj = Adjacency.build(entries, edges)
    out = _act(spread({"a": 1.0}, adj, iterations=20))
    P = np.array([[0, 1, 0], [0.5, 0, 0.5], [0, 1, 0]], dtype=float)
    P[1] *= 0.3
    leak = 1 - P.sum(axis=1)
    s = np.array([1.0, 0, 0])
    x = s.copy()
    for _ in range(20):
        x = 0.5 * s + 0.5 * (P.T @ x + (leak @ x) * s)
    assert out == pytest.approx(dict(zip("abc", x)))
    plain = _act(spread({"a": 1.0}, Adjacency.build(entries.with_columns(status=pl.lit("active")), edges)))
    assert out["c"] < plain["c"]


def test_spread_hops_fanout_max_nodes_and_min_weight():
    # star: hub h with 12 leaves of decreasing weight; leaf l00 has a tail t1 - t2
    leaves = [f"l{i:02d}" for i in range(12)]
    pairs = [("h", leaf, "see_also", "auto", 1.0 - i * 0.05) for i, leaf in enumerate(leaves)]
    pairs += [("l00", "t1", "see_also", "author"), ("t1", "t2", "see_also", "author"),
              ("h", "weak", "see_also", "auto", 0.05)]
    entries, edges = _bank(pairs)
    adj = Adjacency.build(entries, edges)
    out = spread({"h": 1.0}, adj)
    ids = set(out["id"])
    assert ids == {"h", *leaves[:8], "t1"}  # 8 strongest links; t1 at hop 2; t2 at hop 3; weak < 0.1
    assert set(spread({"h": 1.0}, adj, hops=3)["id"]) >= {"t2"}
    assert spread({"h": 1.0}, adj, max_nodes=4)["id"].to_list()[0] == "h"
    assert set(spread({"h": 1.0}, adj, max_nodes=4)["id"]) == {"h", *leaves[:3]}
    assert "weak" in set(spread({"h": 1.0}, adj, min_weight=0.01, fanout=20)["id"])
    via = dict(out.select("id", "via").iter_rows())
    assert via["h"] is None and via["t1"] == "l00 -see_also-> t1" and via["l03"] == "h -see_also-> l03"


def test_spread_seed_frame_and_errors():
    entries, edges = _bank([("a", "b"), ("b", "c")])
    adj = Adjacency.build(entries, edges)
    by_frame = spread(pl.DataFrame({"id": ["a", "c"], "score": [2.0, 1.0]}), adj)
    by_dict = spread({"a": 2.0, "c": 1.0}, adj)
    assert_frame_equal(by_frame, by_dict)
    with pytest.raises(EntryNotFound):
        spread({"nope": 1.0}, adj)
    with pytest.raises(ValidationError, match="sum to zero"):
        spread({"a": 0.0, "b": 0.0}, adj)
    for bad in ({"a": -1.0}, {"a": float("nan")}):
        with pytest.raises(ValidationError):
            spread(bad, adj)
    with pytest.raises(KbError):
        spread({"a": 1.0}, adj, restart=1.5)
    with pytest.raises(KbError):
        spread(["a"], adj)


def test_spread_empty_input_and_inputs_unchanged():
    adj = Adjacency.build(empty("entries"), empty("edges"))
    assert spread({}, adj).height == 0
    assert expand({}, adj, empty("entries")).height == 0
    assert personalized_pagerank(adj, {}).height == 0
    assert links_section([], None, empty("edges"), empty("entries")) == []
    entries, edges = _bank([("a", "b")])
    before_e, before_d = entries.clone(), edges.clone()
    adj = Adjacency.build(entries, edges)
    seeds = pl.DataFrame({"id": ["a"], "score": [1.0]})
    spread(seeds, adj)
    brought = expand(seeds, adj, entries)
    links_section(["a"], brought, edges, entries)
    assert_frame_equal(entries, before_e)
    assert_frame_equal(edges, before_d)
    assert_frame_equal(seeds, pl.DataFrame({"id": ["a"], "score": [1.0]}))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14), st.floats(0.0, 1.0)), max_size=50),
       st.dictionaries(st.integers(0, 14), st.floats(0.01, 5.0), min_size=1, max_size=4),
       st.sets(st.integers(0, 14), max_size=4))
def test_spread_invariants(pairs, seeds, superseded):
    ids = [f"e{i:02d}" for i in range(15)]
    entries = pl.DataFrame({"id": ids, "status": ["superseded" if i in superseded else "active" for i in range(15)]})
    edges = pl.DataFrame({"src": [ids[a] for a, _, _ in pairs], "dst": [ids[b] for _, b, _ in pairs],
                          "type": ["see_also"] * len(pairs), "source": ["auto"] * len(pairs),
                          "weight": [w for _, _, w in pairs]},
                         schema={"src": pl.String, "dst": pl.String, "type": pl.String, "source": pl.String,
                                 "weight": pl.Float64})
    adj = Adjacency.build(entries, edges)
    out = spread({ids[k]: v for k, v in seeds.items()}, adj, max_nodes=8)
    assert out["activation"].sum() == pytest.approx(1.0)  # mass is conserved
    assert out["id"].n_unique() == out.height <= max(8, len(seeds))
    assert set(out.filter(pl.col("seed"))["id"]) == {ids[k] for k in seeds}
    assert (out["activation"] >= 0).all()
    assert out.filter(~pl.col("seed"))["via"].null_count() == 0


# --------------------------------------------------------------------------- expand and the links section


def test_expand_relative_activation_filters_and_limit():
    pairs = [("b", "a", "resolves"), ("c", "a", "supersedes"), ("d", "a", "see_also", "auto", 0.5),
             ("e", "a", "informs", "auto", 0.9)]
    entries, edges = _bank(pairs, status={"c": "superseded"})
    adj = Adjacency.build(entries, edges)
    full = spread({"a": 1.0}, adj)
    out = expand({"a": 1.0}, adj, entries, links=2)
    assert out["id"].to_list() == ["b", "e"]
    top_seed = full.filter(pl.col("seed"))["activation"].max()
    assert out["activation"].to_list() == pytest.approx(
        [_act(full)["b"] / top_seed, _act(full)["e"] / top_seed])
    assert out["via"].to_list() == ["b -resolves-> a", "e -informs-> a"]
    assert expand({"a": 1.0}, adj, entries, links=0).height == 0
    assert "c" not in expand({"a": 1.0}, adj, None, links=10)["id"].to_list()


SEED_TITLES = {
    "les": "For clearing conveyor jams: reset the drive before reopening the guard",
    "pro": "Clear a conveyor jam on line 3",
    "fix": "Found it: the encoder cable on line 3 was loose",
    "flt": "Line 3 keeps faulting with error E-217",
    "jam": "The line 3 conveyor jammed twice this morning",
}


def _seed_bank():
    ids = list(SEED_TITLES)
    entries = pl.DataFrame({"id": ids, "kind": ["lesson", "procedure", "event", "event", "event"],
                            "title": [SEED_TITLES[i] for i in ids], "status": ["active"] * 5})
    pairs = [("les", "pro", "refines", "auto", 0.54), ("fix", "flt", "resolves", "auto", 0.67),
             ("fix", "jam", "resolves", "auto", 0.6), ("pro", "jam", "applies_to", "auto", 0.5),
             ("flt", "jam", "follows", "auto", 0.45)]
    _, edges = _bank(pairs)
    return entries, edges


def test_links_section_reproduces_seed_example():
    entries, edges = _seed_bank()
    brought = pl.DataFrame({"id": ["les"], "activation": [0.3], "via": ["les -refines-> pro"]})
    lines = links_section(["flt", "fix", "jam", "pro"], brought, edges, entries)
    assert lines == [
        'lesson "For clearing conveyor jams: reset the drive before reopenin…" refines procedure '
        '"Clear a conveyor jam on line 3"',
        'event "Found it: the encoder cable on line 3 was loose" resolves event '
        '"Line 3 keeps faulting with error E-217"',
        'event "Found it: the encoder cable on line 3 was loose" resolves event '
        '"The line 3 conveyor jammed twice this morning"',
        'procedure "Clear a conveyor jam on line 3" applies to event "The line 3 conveyor jammed twice this morning"',
        'event "Line 3 keeps faulting with error E-217" follows event "The line 3 conveyor jammed twice this morning"',
    ]


def test_links_section_order_provenance_trusted_and_weight():
    ids = ["a", "b", "c", "d", "e"]
    entries = pl.DataFrame({"id": ids, "kind": ["fact"] * 5, "title": ids})
    _, edges = _bank([("a", "b", "derived_from"), ("a", "c", "see_also", "auto", 0.9),
                      ("a", "d", "informs", "manual"), ("a", "e", "see_also", "auto", 0.95)])
    lines = links_section(ids, None, edges, entries, max_per_entry=10)
    assert [ln.split()[-1] for ln in lines] == ['"d"', '"e"', '"c"', '"b"']


def test_links_section_caps_lines_and_per_entry_while_others_wait():
    hub = [("h", f"x{i}", "see_also", "auto", 0.9 - i * 0.01) for i in range(5)]
    pair = [("p", "q", "see_also", "auto", 0.2), ("q", "r", "see_also", "auto", 0.15)]
    ids = ["h", "p", "q", "r"] + [f"x{i}" for i in range(5)]
    entries = pl.DataFrame({"id": ids, "kind": ["fact"] * len(ids), "title": ids})
    _, edges = _bank(hub + pair)
    lines = links_section(ids, None, edges, entries)
    assert len(lines) == 6
    assert sum(ln.startswith('fact "h"') for ln in lines) == 4  # 2, then 2 more once nothing else waits
    assert lines[:2] == ['fact "h" see also fact "x0"', 'fact "h" see also fact "x1"']
    assert 'fact "p" see also fact "q"' in lines and 'fact "q" see also fact "r"' in lines
    assert len(links_section(ids, None, edges, entries, max_lines=3)) == 3


def test_links_section_always_present_and_outside_context_and_weak_links():
    entries = pl.DataFrame({"id": ["g1", "g2", "r", "out"], "kind": ["goal", "goal", "decision", "fact"],
                            "title": ["Ship", "Sub-goal", "Use pgvector", "Far"]})
    _, edges = _bank([("g2", "g1", "part_of", "structure"), ("r", "g1", "serves", "auto", 0.6),
                      ("r", "out", "see_also", "manual"), ("r", "g2", "serves", "auto", 0.05)])
    lines = links_section(["r", "g1", "g2"], None, edges, entries, always=["g1", "g2"])
    assert lines == ['decision "Use pgvector" serves goal "Ship"']


def test_personalized_pagerank_with_dangling_vertex_parallel_edges_and_weights_matches_networkx():
    import igraph as ig

    import networkx as nx

    g = ig.Graph([(0, 1), (0, 1), (1, 2), (2, 0), (2, 3), (4, 0)], directed=True)  # d dangles, a->b twice
    g.vs["name"] = list("abcde")
    g.es["weight"] = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0]
    ours = personalized_pagerank(g, {"a": 1.0, "e": 0.5}, restart=0.3)
    ref = nx.MultiDiGraph()
    ref.add_nodes_from("abcde")
    for (u, v), w in zip(g.get_edgelist(), g.es["weight"]):
        ref.add_edge("abcde"[u], "abcde"[v], weight=w)
    want = nx.pagerank(ref, alpha=0.7, personalization={"a": 1.0, "e": 0.5}, weight="weight", tol=1e-14, max_iter=5000)
    got = dict(zip(ours["id"].to_list(), ours["activation"].to_list()))
    assert got == pytest.approx(want, abs=1e-6)
