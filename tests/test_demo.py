"""Tests for kbtools.demo: reproducible, schema-exact, vocabulary-valid demo banks with honest ground truth."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import networkx as nx
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from kbtools.demo import REFERENCE_DATE, business_bank, engineering_bank, synthetic_bank
from kbtools.errors import KbError, ValidationError
from kbtools.model.schema import SCHEMAS
from kbtools.model.vocab import EDGE_TYPES, ENTRY_KINDS, METADATA_LINK_TYPES, TRUSTED_SOURCES

HEX8 = re.compile(r"^[0-9a-f]{8}$")
CITATION = re.compile(r"\b[0-9a-f]{7,8}\b")
TOKEN = re.compile(r"\b[A-Z]{2}-\d{4}-[A-Z]\b")
STOP = {"how", "do", "i", "the", "a", "an", "to", "of", "on", "in", "for", "with", "my", "we"}


@pytest.fixture(scope="module")
def eng():
    return engineering_bank()


@pytest.fixture(scope="module")
def biz():
    return business_bank()


@pytest.fixture(scope="module")
def syn():
    return synthetic_bank(entries=5000)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower())) - STOP


def check_tables(bank) -> None:
    """The invariants every demo bank keeps, whatever its kind."""
    for table in ("entries", "edges", "triples"):
        assert dict(getattr(bank, table).schema) == SCHEMAS[table], table
    e, g = bank.entries, bank.edges
    assert e["id"].n_unique() == e.height
    assert all(HEX8.match(i) for i in e["id"])
    assert set(e["kind"]) <= ENTRY_KINDS
    assert set(e["status"]) <= {"active", "superseded"}
    assert (e["usage_count"] == 0).all() and e["linked_at"].is_null().all() and e["last_used_at"].is_null().all()
    assert (e["updated_at"] >= e["created_at"]).all()
    assert e["created_at"].max() < REFERENCE_DATE
    assert e["created_at"].min() > REFERENCE_DATE - timedelta(days=366)
    assert all(isinstance(json.loads(m), dict) for m in e["metadata"])
    assert not e.select(pl.col("title", "summary", "content", "metadata").is_null().any()).row(0)[0]
    ids = set(e["id"])
    assert set(g["src"]) <= ids and set(g["dst"]) <= ids
    assert (g["src"] != g["dst"]).all()
    assert g.select("src", "dst", "type").is_duplicated().sum() == 0
    assert set(g["type"]) <= EDGE_TYPES and set(g["source"]) <= TRUSTED_SOURCES
    assert (g["weight"] == 1.0).all() and (g["seen_at"] == g["created_at"]).all()
    assert g.is_empty() or g["created_at"].max() < REFERENCE_DATE
    assert all(isinstance(json.loads(v), dict) for v in g["evidence"])
    json.dumps(bank.truth)  # serialisable


def assert_same(a, b) -> None:
    for table in ("entries", "edges", "triples"):
        assert_frame_equal(getattr(a, table), getattr(b, table))
    assert json.dumps(a.truth, sort_keys=True) == json.dumps(b.truth, sort_keys=True)


# --------------------------------------------------------------------------- all banks


def test_tables_are_valid(eng, biz, syn):
    for bank in (eng, biz, syn):
        check_tables(bank)
    assert (eng.name, biz.name, syn.name) == ("engineering", "business", "synthetic")


def test_same_seed_same_bank_other_seed_other_bank(eng, biz):
    assert_same(eng, engineering_bank(seed=7))
    assert_same(biz, business_bank(seed=7))
    assert_same(synthetic_bank(entries=800, seed=3), synthetic_bank(entries=800, seed=3))
    assert not engineering_bank(seed=8).entries.equals(eng.entries)
    assert set(business_bank(seed=8).entries["id"]) != set(biz.entries["id"])
    assert not synthetic_bank(entries=800, seed=4).entries.equals(synthetic_bank(entries=800, seed=3).entries)


def test_bad_sizes_raise():
    with pytest.raises(ValidationError, match="topics"):
        engineering_bank(topics=0)
    with pytest.raises(ValidationError, match="topics"):
        engineering_bank(topics=500)
    with pytest.raises(ValidationError, match="entries"):
        engineering_bank(entries=50)
    with pytest.raises(KbError):
        synthetic_bank(entries=0)


@settings(max_examples=15, deadline=None)
@given(entries=st.integers(1, 2500), seed=st.integers(0, 2**16))
def test_synthetic_invariants_hold_for_any_size(entries, seed):
    bank = synthetic_bank(entries=entries, seed=seed)
    assert bank.entries.height == entries
    check_tables(bank)
    assert walk_holes(bank.entries, bank.edges) == set()


# --------------------------------------------------------------------------- engineering bank


def test_engineering_shape(eng):
    e, g = eng.entries, eng.edges
    assert e.height == 2000
    kinds = e["kind"].value_counts().to_dict(as_series=False)
    assert {"knowledge", "procedure", "playbook", "lesson", "fact", "decision", "event"} <= set(kinds["kind"])
    playbooks = e.filter(pl.col("kind") == "playbook")
    assert (playbooks["steps"].list.len() >= 3).all()
    authored = g.filter(pl.col("source") == "author")
    assert 200 <= authored.height <= 800
    assert all(re.fullmatch(r"agent-\d+", b) for b in authored["created_by"])
    noteless = authored["note"].is_null().mean()
    assert 0.1 <= noteless <= 0.5
    assert {"corrects", "clarifies", "supersedes", "cites", "see_also", "conflicts_with", "part_of", "split_from",
            "derived_from"} <= set(g["type"])
    assert len(set(g["type"]) - {"corrects", "clarifies", "supersedes", "cites", "see_also", "conflicts_with",
                                 "part_of", "split_from", "derived_from"}) >= 3
    assert e.filter(pl.col("status") == "superseded").height > 0


def test_engineering_topics_have_their_own_vocabulary(eng):
    systems = eng.entries["systems"].explode().value_counts()
    assert systems.height >= 16 and systems["count"].max() < 400


def test_citations_are_about_five_percent_and_resolve(eng):
    ids = eng.entries["id"].to_list()
    citing, by_prefix = 0, 0
    for own, content in zip(ids, eng.entries["content"]):
        refs = CITATION.findall(content)
        if not refs:
            continue
        citing += 1
        for ref in refs:
            matches = [i for i in ids if i.startswith(ref)]
            assert len(matches) == 1, ref
            assert matches[0] != own
            by_prefix += len(ref) == 7
    assert 0.04 <= citing / len(ids) <= 0.06
    assert by_prefix > 0


def test_dedup_metadata_is_about_ten_percent(eng):
    ids = set(eng.entries["id"])
    tagged = 0
    for own, text in zip(eng.entries["id"], eng.entries["metadata"]):
        meta = json.loads(text)
        if meta:
            tagged += 1
            ((key, value),) = meta.items()
            assert key in METADATA_LINK_TYPES and value in ids and value != own
    assert 0.08 <= tagged / len(ids) <= 0.12


def test_queries_and_clusters(eng):
    queries = eng.truth["queries"]
    assert len(queries) >= 40
    assert len({q["id"] for q in queries}) == len(queries)
    ids = set(eng.entries["id"])
    g = eng.edges
    for q in queries:
        assert set(q["relevant"]) <= ids and q["query"] and q["topic"]
    # every redundant cluster is one component joined by corrects and clarifies
    clusters = [q for q in queries if "/" in q["topic"] and not q["topic"].startswith(("kanban", "playwright/production"))]
    for q in clusters:
        members = set(q["relevant"])
        inside = g.filter(pl.col("src").is_in(members) & pl.col("dst").is_in(members))
        assert {"corrects", "clarifies"} <= set(inside["type"])
        graph = nx.Graph(list(zip(inside["src"], inside["dst"])))
        assert set(graph.nodes) == members and nx.is_connected(graph)


def text_of_bank(bank) -> list[tuple[str, str]]:
    """(where, text) for every text field of every entry and every edge note."""
    out = []
    for row in bank.entries.iter_rows(named=True):
        for col in ("title", "summary", "content", "useful_for", "metadata", "session_id"):
            out.append((f"{row['id']}:{col}", row[col]))
        out += [(f"{row['id']}:list", " ".join(row["systems"] + row["tasks"] + row["steps"]))]
    out += [(f"note:{s}->{d}", n) for s, d, n in zip(bank.edges["src"], bank.edges["dst"], bank.edges["note"]) if n]
    return out


def test_proof_tokens_live_only_in_b(eng):
    hops = eng.truth["hop_tasks"]
    assert len([h for h in hops if not h["leaky"]]) >= 30
    assert 2 <= sum(h["leaky"] for h in hops) <= 3
    texts = text_of_bank(eng)
    for hop in hops:
        where = {w for w, t in texts if hop["proof"] in t}
        expected = {f"{hop['b']}:content"}
        if hop["leaky"]:
            expected |= {f"note:{hop['a']}->{hop['b']}", f"note:{hop['b']}->{hop['a']}"}
            assert where - {f"{hop['b']}:content"}, "a leaky task must leak into its note"
        assert where <= expected and f"{hop['b']}:content" in where, hop


def test_hop_edges_and_lexical_gap(eng):
    g = eng.edges
    rows = {r["id"]: r for r in eng.entries.iter_rows(named=True)}
    for hop in eng.truth["hop_tasks"]:
        a, b = rows[hop["a"]], rows[hop["b"]]
        edge = g.filter(((pl.col("src") == a["id"]) & (pl.col("dst") == b["id"]))
                        | ((pl.col("src") == b["id"]) & (pl.col("dst") == a["id"])))
        assert edge.height == 1 and edge["type"][0] == hop["relation"]
        assert edge["source"][0] in TRUSTED_SOURCES and edge["note"][0]
        query = words(hop["query"])
        b_text = " ".join([b["title"], b["summary"], b["content"], b["useful_for"]])
        a_text = " ".join([a["title"], a["summary"], a["content"], a["useful_for"]])
        assert not query & words(b_text), (hop["query"], query & words(b_text))
        assert len(query & words(a_text)) >= 2
        assert query & words(edge["note"][0])


def test_worked_examples_are_present(eng):
    e, g = eng.entries, eng.edges
    by_title = dict(zip(e["title"], e["id"]))
    dispatch = [i for t, i in by_title.items() if "dispatch" in t.lower() or "table a card" in t.lower()]
    assert len(dispatch) == 5
    inside = g.filter(pl.col("src").is_in(dispatch) & pl.col("dst").is_in(dispatch))
    assert nx.is_connected(nx.Graph(list(zip(inside["src"], inside["dst"])))) and len(set(inside["src"]) | set(inside["dst"])) == 5
    corrects = inside.filter(pl.col("type") == "corrects")
    assert corrects.height == 1 and "caveat" in corrects["note"][0]
    assert "weekend" not in e.filter(pl.col("id") == corrects["dst"][0])["title"][0].lower()
    login = by_title["Log in to production with Playwright for post-deploy e2e tests"]
    cites = g.filter((pl.col("src") == login) & (pl.col("type") == "cites"))
    assert cites["note"][0].startswith(
        "PROGRAMMATIC API FLOW (no browser): start and stop a session via the admin API.")
    api = e.filter(pl.col("id") == cites["dst"][0]).row(0, named=True)
    assert "playwright" not in (api["title"] + api["content"]).lower()
    clarifies = g.filter((pl.col("type") == "clarifies") & pl.col("note").str.contains("--http1.1", literal=True))
    assert clarifies.height == 1
    neighbour = e.filter(pl.col("id") == clarifies["src"][0]).row(0, named=True)
    verification = e.filter(pl.col("id") == clarifies["dst"][0]).row(0, named=True)
    assert "CSRF" in neighbour["content"] and "verif" in verification["title"].lower()
    assert re.search(r"see [0-9a-f]{8} for the cookie-jar pattern", api["content"])


def test_engineering_parquet_stays_small(eng, tmp_path):
    total = 0
    for table in ("entries", "edges", "triples"):
        path = tmp_path / f"{table}.parquet"
        getattr(eng, table).write_parquet(path)
        total += path.stat().st_size
    assert total < 2_000_000


def test_smaller_engineering_bank(tmp_path):
    bank = engineering_bank(seed=11, entries=500, topics=10)
    check_tables(bank)
    assert bank.entries.height == 500 and len(bank.truth["queries"]) >= 40


# --------------------------------------------------------------------------- business bank


def walk_holes(entries: pl.DataFrame, edges: pl.DataFrame) -> set[tuple[str, str, str]]:
    """An independent walk of BUSINESS.md's hole rules: {(id, flow, hole)} (grouped kinds: the first
    unreachable step only, one no_owner row per flow that nobody owns, first step that runs twice)."""
    rows = {r["id"]: r for r in entries.iter_rows(named=True)}
    meta = {i: json.loads(r["metadata"]) for i, r in rows.items()}
    owned = set(edges.filter(pl.col("type") == "owned_by")["src"])
    holes = set()
    flows: dict[str, list[str]] = {}
    for i, r in rows.items():
        if r["kind"] in ("step", "decision", "artifact") and "flow" in meta[i]:
            flows.setdefault(meta[i]["flow"], []).append(i)
    for flow, members in flows.items():
        steps = [i for i in members if rows[i]["kind"] in ("step", "decision")]
        arts = {i for i in members if rows[i]["kind"] == "artifact"}
        graph = nx.DiGraph()
        graph.add_nodes_from(steps)
        prec = edges.filter((pl.col("type") == "precedes") & pl.col("src").is_in(steps) & pl.col("dst").is_in(steps))
        graph.add_edges_from(zip(prec["src"], prec["dst"]))
        starts = [i for i in steps if meta[i].get("start")] or [i for i in steps if graph.in_degree(i) == 0]
        reached = set(starts).union(*(nx.descendants(graph, s) for s in starts)) if starts else set()
        for i in steps:
            out = graph.out_degree(i)
            normal = [d for d in graph.successors(i) if not meta[d].get("exception")]
            join = rows[i]["kind"] == "decision" and graph.in_degree(i) >= 2 and out <= 1
            if rows[i]["kind"] == "decision" and not join and out < 2:
                holes.add((i, flow, "one_branch"))
            elif not normal and not meta[i].get("end") and (rows[i]["kind"] == "step" or join):
                holes.add((i, flow, "dead_end"))
            if i not in owned and owned & set(steps):
                holes.add((i, flow, "no_owner"))
        lost = graph.subgraph(set(steps) - reached)
        for comp in nx.strongly_connected_components(lost):
            if not any(p not in comp for n in comp for p in lost.predecessors(n)):
                holes.add((min(comp, key=lambda n: rows[n]["title"]), flow, "unreachable"))
        flow_edges = edges.filter(pl.col("src").is_in(steps) & pl.col("dst").is_in(arts))
        produced = set(flow_edges.filter(pl.col("type") == "produces")["dst"])
        required = set(flow_edges.filter(pl.col("type") == "requires")["dst"])
        holes |= {(a, flow, "unproduced_input") for a in required - produced if not meta[a].get("input")}
        holes |= {(a, flow, "unused_output") for a in produced - required if not meta[a].get("output")}
        for comp in nx.strongly_connected_components(graph):
            leaves = any(d not in comp for n in comp for d in graph.successors(n))
            if len(comp) > 1 and not leaves and not any(meta[n].get("end") for n in comp):
                first = min(comp, key=lambda n: rows[n]["title"])
                holes.add((first, flow, "closed_loop"))
        holes |= {(i, flow, h) for i, h in _parallel_holes(graph, meta)}
    return holes


def _parallel_holes(graph: nx.DiGraph, meta: dict) -> set[tuple[str, str]]:
    """runs_twice and deadlock by brute force over the gateway declarations."""
    gate = {n: meta[n].get("gateway") for n in graph}
    joins = {n for n in graph if gate[n] == "parallel" and graph.in_degree(n) >= 2}
    found = set()
    for split in (n for n in graph if gate[n] == "parallel" and graph.out_degree(n) >= 2):
        cut = graph.copy()
        cut.remove_edges_from([(j, d) for j in joins for d in graph.successors(j)])
        cut.remove_node(split)
        seen = [({b} | nx.descendants(cut, b)) - joins for b in graph.successors(split)]
        twice = {n for n in graph if sum(n in s for s in seen) >= 2}
        found |= {(n, "runs_twice") for n in twice if not any(p in twice for p in graph.predecessors(n))}
    for join in joins:
        for split in (n for n in graph if gate[n] in (None, "exclusive") and graph.out_degree(n) >= 2):
            cut = graph.copy()
            cut.remove_edges_from([(join, d) for d in graph.successors(join)])
            cut.remove_node(split)
            arrive = [set(graph.predecessors(join)) & ({b} | nx.descendants(cut, b)) for b in graph.successors(split)]
            union = set().union(*arrive)
            if len(union) >= 2 and any(a and a < union for a in arrive):
                found.add((join, "deadlock"))
    return found


def test_business_holes_are_exactly_the_planted_ones(biz):
    planted = {(h["id"], h["flow"], h["hole"]) for h in biz.truth["holes"]}
    assert walk_holes(biz.entries, biz.edges) == planted
    kinds = [h for _, _, h in planted]
    for hole in ("dead_end", "one_branch", "unproduced_input", "unused_output", "no_owner", "unreachable",
                 "closed_loop"):
        assert kinds.count(hole) >= 2, hole
    assert {"runs_twice", "deadlock"} <= set(kinds)  # every hole kind is shown on the business bank


def test_business_flows_follow_the_conventions(biz):
    e, g = biz.entries, biz.edges
    meta = dict(zip(e["id"], (json.loads(m) for m in e["metadata"])))
    kind = dict(zip(e["id"], e["kind"]))
    flows = {m["flow"] for m in meta.values() if "flow" in m}
    assert len(flows) >= 6
    assert {"order-to-cash", "hiring", "incident-response", "month-end-close", "procure-to-pay",
            "customer-onboarding"} <= flows
    for src, dst, type_ in zip(g["src"], g["dst"], g["type"]):
        if type_ == "precedes":
            assert kind[src] in ("step", "decision") and kind[dst] in ("step", "decision")
            assert meta[src]["flow"] == meta[dst]["flow"]
        elif type_ in ("produces", "requires"):
            assert kind[src] in ("step", "decision") and kind[dst] == "artifact"
        elif type_ == "owned_by":
            assert kind[dst] == "role"
    choices = [i for i, k in kind.items() if k == "decision" and meta[i].get("gateway") in (None, "exclusive")]
    branches = g.filter((pl.col("type") == "precedes") & pl.col("src").is_in(choices))
    branches = branches.filter(pl.col("src").is_in(branches.group_by("src").len().filter(pl.col("len") >= 2)["src"].implode()))
    assert branches["note"].is_not_null().all()  # a choice labels its branches (a parallel split or a join need not)
    process = g.filter(pl.col("type").is_in(["precedes", "produces", "requires", "owned_by"]))
    assert set(process["source"]) <= {"author", "import"}
    policies = e.filter(pl.col("kind") == "knowledge")["id"]
    linked = g.filter(pl.col("src").is_in(policies.to_list()))
    assert linked.height >= len(policies) and set(linked["type"]) <= {"applies_to", "informs", "concerns"}
    assert len(biz.truth["queries"]) >= 10
    assert all(set(q["relevant"]) <= set(e["id"]) for q in biz.truth["queries"])


# --------------------------------------------------------------------------- synthetic bank


def test_synthetic_shape(syn):
    e, g = syn.entries, syn.edges
    assert e.height == 5000
    assert 150 <= syn.truth["topics"] <= 170
    assert 1.8 <= g.height / e.height <= 2.1
    assert {"supersedes", "corrects", "clarifies"} & set(g["type"])
    assert g.filter(pl.col("type") == "precedes").height > 0
    assert walk_holes(e, g) == set()
    assert len(syn.truth["queries"]) == 50
    assert all(len(q["relevant"]) > 0 for q in syn.truth["queries"])
