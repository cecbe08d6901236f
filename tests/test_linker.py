"""The write-time linker against seed 001's worked examples, its rules and its invariants."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from kbtools.errors import EntryNotFound, ValidationError
from kbtools.linker import (
    LINKER_DEFAULTS, LINKER_LEXICAL, LinkPlan, TermStats, anchor, apply_links, explain_pair, plan_connect, plan_links,
)
from kbtools.linker.evidence import noisy_or
from kbtools.linker.planning import triple_entities
from kbtools.model.schema import conform, empty
from tests.seed_memories import ID, SEED_COSINE, T0, seed_bank, synthetic_bank

NOW = T0 + dt.timedelta(days=13)


def _explain(a, b):
    entries, edges, triples = seed_bank()
    return explain_pair(ID[a], ID[b], entries, edges, triples, cosine=SEED_COSINE, settings=LINKER_LEXICAL)


def _bank(rows, *, start=T0):
    """entries from (id, kind, text[, session, metadata, status]) tuples, a minute apart."""
    out = []
    for k, row in enumerate(rows):
        eid, kind, text, *rest = row
        session = rest[0] if len(rest) > 0 else None
        meta = rest[1] if len(rest) > 1 else "{}"
        status = rest[2] if len(rest) > 2 else "active"
        t = start + dt.timedelta(minutes=k)
        out.append({"id": eid, "kind": kind, "content": text, "session_id": session, "metadata": meta,
                    "status": status, "created_at": t, "updated_at": t, "usage_count": 0})
    return conform(pl.DataFrame(out), "entries")


def _edge(src, dst, type_, source, weight=1.0, seen=T0, evidence=None):
    return {"src": src, "dst": dst, "type": type_, "source": source, "weight": weight,
            "evidence": evidence or json.dumps({"why": "test"}), "created_by": "test", "created_at": seen, "seen_at": seen}


def _edges(rows):
    return conform(pl.DataFrame(rows), "edges") if rows else empty("edges")


# ---------------------------------------------------------------- seed 001, section 4


def test_fix_and_fault_term_weights_match_the_seed():
    s = _explain("fix", "fault")
    fix = {k: round(v, 2) for k, v in s.weights["a"].items()}
    fault = {k: round(v, 2) for k, v in s.weights["b"].items()}
    assert fix == {"e:line 3": 2.85, "found": 3.0, "encoder": 3.0, "cable": 3.0, "line": 1.9, "loose": 3.0}
    assert fault == {"e:e-217": 4.49, "e:line 3": 2.85, "line": 1.9, "faulting": 3.0, "error": 3.0}
    # the seed adds the rounded weights
    assert round(sum(fix.values()), 2) == 16.75 and round(sum(fault.values()), 2) == 15.24
    assert s.weights["W_a"] == pytest.approx(16.75, abs=0.03) and s.weights["W_b"] == pytest.approx(15.24, abs=0.02)


def test_fix_resolves_fault_with_the_seeds_numbers():
    s = _explain("fix", "fault")
    assert round(s.overlap, 2) == 0.31  # the seed prints 0.312 from rounded weights (4.75 / 15.24)
    assert round(s.signals["share"], 3) == 0.156
    assert s.signals["sem"] == 1.0 and s.signals["time"] == 1.0 and s.signals["cue"] == 1.0
    assert round(s.raw, 3) == 0.787 and round(s.score, 3) == 0.669
    assert s.linked and s.type == "resolves" and (s.source, s.target) == (ID["fix"], ID["fault"])
    assert s.why == "shared: line 3; similar meaning (0.30); a problem and its fix; same session, 0 min apart"


def test_decision_serves_goal_via_the_triple():
    s = _explain("decision", "goal")
    assert s.signals == {"share": 0.0, "sem": 0.0, "bridge": 1.0, "time": 0.0, "cue": 0.0}
    assert round(s.raw, 2) == 0.6 and round(s.score, 2) == 0.60 and s.prior == 1.0
    assert s.linked and s.type == "serves" and s.source == ID["decision"]
    assert s.why == "via Kioko uses pgvector"


def test_lesson_refines_procedure():
    s = _explain("lesson", "procedure")
    assert round(s.signals["share"], 3) == 0.487
    assert round(s.raw, 3) == 0.542 and round(s.score, 3) == 0.542
    assert s.linked and s.type == "refines" and s.source == ID["lesson"]


def test_green_tea_and_plc_subnet_are_not_linked():
    s = _explain("tea", "plc")
    assert s.raw == 0.0 and s.score == 0.0 and not s.linked


def test_connect_gives_the_links_section_of_section_1():
    entries, edges, triples = seed_bank()
    plan = plan_connect(entries, edges, triples, cosine=SEED_COSINE, settings=LINKER_LEXICAL, now=NOW)
    name = {v: k for k, v in ID.items()}
    got = {(name[s], t, name[d]): round(w, 3) for s, t, d, w in plan.add.select("src", "type", "dst", "weight").rows()}
    assert got == {
        ("decision", "serves", "goal"): 0.6,
        ("fix", "resolves", "fault"): 0.669,
        ("lesson", "refines", "procedure"): 0.542,
        ("fix", "resolves", "jam"): 0.632,
        ("procedure", "applies_to", "jam"): 0.72,
        ("fault", "follows", "jam"): 0.413,
    }
    assert set(plan.add["source"]) == {"auto"}
    ev = json.loads(plan.add.filter(pl.col("type") == "serves")["evidence"][0])
    assert ev["why"] == "via Kioko uses pgvector" and set(ev["signals"]) == {"share", "sem", "bridge", "time", "cue"}
    assert plan.entry_updates.height == 9 and plan.entry_updates["linked_at"].null_count() == 0


# ---------------------------------------------------------------- anchor


def test_anchor_entities():
    a = anchor("Rockwell Automation ships FactoryTalk Optix to press 12 and cell 4B; INC-4521, S7-1500, server 2, 10.20.0.0/16")
    assert set(a.entities) == {"press 12", "cell 4b", "inc-4521", "s7-1500", "server 2", "10.20.0.0/16"}
    assert anchor("Goal: Ship the Kioko memory layer by December 15.").entities == ()  # a name alone is a word
    assert anchor("Goal: Ship the Kioko memory layer.", known_entities=["kioko"]).entities == ("kioko",)
    assert anchor("New York, and new york", known_entities=["New York", "york"]).entities == ("new york", "york")
    assert anchor("User likes green tea.").entities == ()
    assert anchor("we moved to pgvector", known_entities=["PGVector"]).entities == ("pgvector",)
    assert "t:keep" not in anchor("The fault keeps coming back").terms  # light verbs and stop words go


def test_a_known_entity_is_a_whole_token_whatever_the_text_holds():
    keys = ["c++", "x", "c#", ".net", "os.path", "PEP"]
    text = "Use C++ and os.path/ here, not x-y, c# or .NET; xx then x (pep 8)."
    # an ASCII text is read in lower case, one with another character token by token: the same keys
    assert anchor(text, known_entities=keys).entities == ("c++", "os.path", "x", "pep")
    assert anchor(text + " \u00e9", known_entities=keys).entities == ("c++", "os.path", "x", "pep")


def test_an_asset_is_a_noun_then_a_whole_number_or_one_capital_letter():
    assets = lambda text: [e for e in anchor(text).entities if e.split(" ")[0] in ("line", "server", "bay", "cell", "press")]
    assert assets("Line B stopped; the crew moved to bay C and press No. 12, then cell 4b") == [
        "line b", "bay c", "press 12", "cell 4b"]
    # an ordinary word after the noun is no asset ("line i", "server o" on the PEP bank)
    assert assets("The line is long and the server on duty restarts; line a is not one either") == []
    # a number is taken whole or not at all: never "line 1" out of "line 12)" or "line 12.5"
    assert assets("see (line 12) and line 12.5, then line 3.") == ["line 3"]


# ---------------------------------------------------------------- statistics, hubs, caps


def test_idf_zero_for_a_term_in_most_of_a_grown_bank():
    rows = [(f"{k:08x}", "fact", f"widget gadget {k} about topic{chr(97 + k % 26)}") for k in range(30)]
    stats = TermStats.build(_bank(rows))
    assert stats.n == 30
    assert stats.weights(["t:widget"])[0] == 0.0
    assert stats.weights(["t:gadget"])[0] == 0.0 and stats.weights(["t:topica"])[0] > 0


def test_hub_terms_halve_the_share():
    rows = [("00000001", "event", "Line 3 stopped"), ("00000002", "event", "Line 3 restarted"),
            ("00000003", "event", "Line 3 alarm"), ("00000004", "event", "Line 3 inspected")]
    s = explain_pair("00000002", "00000001", _bank(rows), None, None)
    assert s.signals["share"] == pytest.approx(s.overlap / 2)


def test_posting_cap_terms_nominate_nothing():
    # "gizmo" is in 60 entries (> max(50, 0.2 n)): the new entry shares only that word with them
    rows = [(f"{k:08x}", "knowledge", f"gizmo z{'abcdefghij'[k % 10]}{'abcdefghij'[k // 10]} lorem") for k in range(60)]
    rows.append(("ffffffff", "knowledge", "gizmo"))
    entries = _bank(rows)
    # no session: without session candidates, the entries written near it are not read either
    plan = plan_links("ffffffff", entries, None, None, settings=LINKER_DEFAULTS.with_(session_candidates=0), now=NOW)
    assert plan.report["candidates"] == 0 and plan.add.height == 0


# ---------------------------------------------------------------- selection rules


def _jam_bank(extra_edges=()):
    rows = [("00000001", "event", "Line 7 conveyor jammed with error E-555 at the encoder"),
            ("00000002", "event", "Found it: the encoder on line 7 was loose, error E-555 is gone")]
    return _bank(rows), _edges(list(extra_edges))


def test_no_auto_link_where_a_trusted_edge_joins_the_pair():
    entries, _ = _jam_bank()
    assert plan_links("00000002", entries, None, None, now=NOW).add.height == 1
    edges = _edges([_edge("00000001", "00000002", "cites", "author")])
    assert plan_links("00000002", entries, edges, None, now=NOW).add.height == 0


def test_at_most_one_automatic_link_per_pair():
    entries, _ = _jam_bank()
    edges = _edges([_edge("00000001", "00000002", "see_also", "auto", 0.5)])
    plan = plan_links("00000002", entries, edges, None, now=NOW)
    assert plan.add.height == 0 and plan.remove.height == 0
    relinked = entries.with_columns(pl.lit(NOW).cast(pl.Datetime("us", "UTC")).alias("linked_at"))
    plan = plan_links("00000002", relinked, edges, None, now=NOW)  # a linked entry is re-derived
    assert plan.remove.height == 1 and plan.add["type"].to_list() == ["resolves"]


def test_degree_cap_evicts_the_weakest_faded_link():
    hub = ("00000000", "knowledge", "Atlas kafka broker tuning E-999")
    others = [(f"0000010{k:x}", "knowledge", f"Atlas kafka broker E-999 note {chr(97 + k)}") for k in range(12)]
    new = ("000001ff", "knowledge", "Atlas kafka broker tuning E-999 again")
    entries = _bank([hub, *others, new])
    old = [_edge(o[0], hub[0], "see_also", "auto", 0.9, seen=NOW - dt.timedelta(days=30 * (k + 1)))
           for k, o in enumerate(others)]
    plan = plan_links(new[0], entries, _edges(old), None, now=NOW)
    assert (hub[0] in plan.add["dst"].to_list()) or (hub[0] in plan.add["src"].to_list())
    # the oldest (most faded) link of the hub gives way
    assert others[-1][0] in plan.remove["src"].to_list()
    _, after = apply_links(entries, _edges(old), plan)
    auto = after.filter(pl.col("source") == "auto")
    degree = pl.concat([auto["src"], auto["dst"]]).value_counts()
    assert degree["count"].max() <= LINKER_DEFAULTS.max_degree


def test_degree_cap_keeps_the_closer_pair_whatever_the_kinds_prior():
    """A full end gives way by how close the pairs are (the order that chose them), not by the
    score, whose similarity saturates and whose kind prior favours a loosely related procedure."""
    hub = ("00000000", "lesson", "Gotcha: Atlas kafka broker E-999 silent resets during rebalance on zone 7")
    steps = [(f"0000010{k:x}", "procedure", f"Steps to tune Atlas {w} for kafka")
             for k, w in enumerate(["retention", "compaction", "quotas", "acls", "listeners", "logs"])]
    twin = ("000001ff", "knowledge", "Atlas kafka broker E-999 silent resets during rebalance: the zone 7 variant")
    entries = _bank([hub, *steps, twin])
    held = [_edge(s[0], hub[0], "refines", "auto", 0.95, seen=NOW) for s in steps]
    settings = LINKER_DEFAULTS.with_(max_degree=len(steps))
    plan = plan_links(twin[0], entries, _edges(held), None, now=NOW, settings=settings)
    joined = set(zip(plan.add["src"].to_list(), plan.add["dst"].to_list()))
    assert (twin[0], hub[0]) in joined or (hub[0], twin[0]) in joined
    assert plan.remove.height == 1 and plan.remove["dst"].to_list() == [hub[0]]


def test_superseded_decision_is_never_a_candidate():
    rows = [("00000001", "decision", "Decision: use Redis for the Atlas cache", None, "{}", "superseded"),
            ("00000002", "knowledge", "Redis cache for Atlas evicts keys under load")]
    plan = plan_links("00000002", _bank(rows), None, None, now=NOW)
    assert plan.add.height == 0


# ---------------------------------------------------------------- structure (section 5)


def test_structural_links_and_takeover():
    rows = [
        ("000000a1", "goal", "Goal: Ship Atlas v2"),
        ("000000a2", "goal", "Goal: Finish the Atlas schema", None, json.dumps({"parent": "000000a1"})),
        ("000000b1", "decision", "Decision: use Redis for the Atlas cache"),
        ("000000c1", "knowledge", "Atlas cache benchmarks"),
        ("000000b2", "decision", "Decision: use Memcached for the Atlas cache", None, json.dumps({"supersedes": "000000b1"})),
        ("000000d1", "insight", "Atlas caching keeps changing", None, json.dumps({"evidence": ["000000b1", "000000c1"]})),
    ]
    entries = _bank(rows)
    edges = _edges([_edge("000000b1", "000000a1", "serves", "auto", 0.8, seen=NOW),
                    _edge("000000c1", "000000b1", "informs", "manual")])
    plan = plan_links("000000a2", entries, edges, None, now=NOW)
    assert ("000000a2", "000000a1", "part_of", "structure", 1.0) in plan.add.select("src", "dst", "type", "source", "weight").rows()

    plan = plan_links("000000b2", entries, edges, None, now=NOW)
    add = {(s, d, t): (src, w, json.loads(e)) for s, d, t, src, w, e in
           plan.add.select("src", "dst", "type", "source", "weight", "evidence").rows()}
    assert add[("000000b2", "000000b1", "supersedes")][:2] == ("structure", 1.0)
    src, w, ev = add[("000000b2", "000000a1", "serves")]
    assert src == "auto" and w == pytest.approx(0.72) and ev["from"] == "000000b1"
    assert ev["why"] == "taken over from the decision it replaced (000000b1)"
    assert add[("000000c1", "000000b2", "informs")][0] == "manual"  # copied; the old one keeps it
    assert plan.remove.select("src", "dst", "type").rows() == [("000000b1", "000000a1", "serves")]
    assert plan.entry_updates.filter(pl.col("id") == "000000b1")["status"].to_list() == ["superseded"]

    plan = plan_links("000000d1", entries, edges, None, now=NOW)
    derived = plan.add.filter(pl.col("type") == "derived_from").select("dst", "source").rows()
    assert sorted(derived) == [("000000b1", "structure"), ("000000c1", "structure")]


def test_a_plan_that_supersedes_leaves_what_is_kept_for_the_next_call_as_it_was():
    """A decision that supersedes leaves the edge index kept on the statistics (its replaced-by
    map) as it was: linking it again plans the same."""
    rows = [
        ("000000b0", "decision", "Decision: use Memcached 1.4 for the Atlas cache", None, "{}", "superseded"),
        ("000000b1", "decision", "Decision: use Redis for the Atlas cache", None, json.dumps({"supersedes": "000000b0"})),
        ("000000c1", "knowledge", "Atlas cache benchmarks for Redis and Memcached"),
        ("000000b2", "decision", "Decision: use Memcached for the Atlas cache", None, json.dumps({"supersedes": "000000b1"})),
    ]
    entries = _bank(rows)
    edges = _edges([_edge("000000b1", "000000b0", "supersedes", "structure"),
                    _edge("000000c1", "000000b1", "informs", "manual")])
    stats = TermStats.build(entries)
    plans = [plan_links("000000b2", entries, edges, None, stats=stats, now=NOW) for _ in range(3)]
    index, row = stats._cache["edges"][1], stats.row_of
    assert index.replaced_by == {row["000000b0"]: row["000000b1"]}
    assert ("000000b2", "000000b1", "supersedes") in plans[0].add.select("src", "dst", "type").rows()
    for plan in plans[1:]:
        assert plan.add.equals(plans[0].add) and plan.remove.equals(plans[0].remove)
        assert plan.entry_updates.equals(plans[0].entry_updates) and plan.report == plans[0].report


# ---------------------------------------------------------------- connect invariants
# (connect == one by one, on every path: tests/test_linker_paths.py)


def _norm(edges):
    return edges.select("src", "dst", "type", "source", "weight", "evidence", "seen_at").sort("src", "dst", "type")


@hsettings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), max_degree=st.integers(1, 6))
def test_connect_invariants(seed, n, max_degree):
    entries, edges, triples, vectors = synthetic_bank(n, seed=seed, linked_share=0.0, edges_share=0.0)
    plan = plan_connect(entries, edges, triples, vectors=vectors, settings=LINKER_DEFAULTS.with_(max_degree=max_degree), now=NOW)
    _, after = apply_links(entries, edges, plan)
    pairs = after.select(pl.min_horizontal("src", "dst").alias("a"), pl.max_horizontal("src", "dst").alias("b"))
    assert pairs.is_duplicated().sum() == 0  # at most one link per pair
    auto = after.filter(pl.col("source") == "auto")
    if auto.height:
        assert pl.concat([auto["src"], auto["dst"]]).value_counts()["count"].max() <= max_degree
        # a link taken over loses a tenth at each decision of a chain that replaced its entry
        takeovers = max(1, _longest_chain(after.filter(pl.col("type") == "supersedes")))
        assert auto["weight"].min() >= LINKER_DEFAULTS.threshold * LINKER_DEFAULTS.takeover**takeovers - 1e-9
    assert (after["src"] != after["dst"]).all()


def _longest_chain(supersedes: pl.DataFrame) -> int:
    """The most supersedes edges one after another (decision C replaced B, which replaced A: 2)."""
    replaced = dict(zip(supersedes["src"].to_list(), supersedes["dst"].to_list()))
    longest = 0
    for start in replaced:
        seen, at = {start}, start
        while at in replaced and replaced[at] not in seen:
            at = replaced[at]
            seen.add(at)
        longest = max(longest, len(seen) - 1)
    return longest


def test_connect_invariants_at_a_chain_of_two_replaced_decisions():
    """Hypothesis found it: a link of a decision replaced twice in one connect is taken over twice
    (0.3886 x 0.9 x 0.9 = 0.3148, under the threshold times one takeover)."""
    test_connect_invariants.hypothesis.inner_test(seed=142, n=32, max_degree=5)


def test_noisy_or_is_bounded_and_monotone():
    x = np.linspace(0, 1, 5)
    raw = noisy_or(x, x, x, x, x, omega=0.5)
    assert raw[0] == 0.0 and (np.diff(raw) > 0).all() and raw[-1] <= 1.0


# ---------------------------------------------------------------- contract


def test_empty_bank_and_inputs_unchanged():
    entries, edges, triples = seed_bank()
    before = (entries.clone(), edges.clone(), triples.clone())
    plan_connect(entries, edges, triples, now=NOW)
    plan_links(ID["fix"], entries, edges, triples, now=NOW)
    assert entries.equals(before[0]) and edges.equals(before[1]) and triples.equals(before[2])
    nothing = plan_connect(empty("entries"), empty("edges"), empty("triples"), now=NOW)
    assert isinstance(nothing, LinkPlan) and nothing.add.height == 0 and nothing.report["entries"] == 0


def test_errors_name_the_problem():
    entries, edges, triples = seed_bank()
    with pytest.raises(EntryNotFound):
        plan_links("deadbeef", entries, edges, triples, now=NOW)
    with pytest.raises(ValidationError, match="vectors"):
        plan_links(ID["fix"], entries, edges, triples, vectors=np.zeros((3, 2)), now=NOW)
    stats = TermStats.build(entries.head(3))
    with pytest.raises(ValidationError, match="another entries frame"):
        plan_links(ID["fix"], entries, edges, triples, stats=stats, now=NOW)
    for total in (-1, 2.5, True, "9"):
        with pytest.raises(ValidationError, match="total"):
            plan_connect(entries, edges, triples, now=NOW, total=total)


# ---------------------------------------------------------------- incremental statistics, cached indexes


def _same_stats(a, b):
    assert a.ids == b.ids and a.vocab == b.vocab and a.n == b.n
    for name in ("df", "idf", "w", "hub", "capped", "total", "kind", "rank", "time_us", "fix", "problem", "progress",
                 "strong_flag"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.postings != b.postings).nnz == 0 and (a.postings_t != b.postings_t).nnz == 0
    same = a.session[:, None] == a.session[None, :]
    assert np.array_equal(same, b.session[:, None] == b.session[None, :])


@pytest.mark.parametrize("seed,k", [(0, 1), (1, 17), (2, 0)])
def test_extend_equals_build(seed, k):
    entries, edges, triples, vectors = synthetic_bank(120, seed=seed)
    known = triple_entities(triples)
    base = TermStats.build(entries.head(entries.height - k), known_entities=known)
    grown = base.extend(entries)
    _same_stats(grown, TermStats.build(entries, known_entities=known))
    eid = entries["id"][-1]
    got = plan_links(eid, entries, edges, triples, vectors=vectors, stats=grown, now=NOW)
    want = plan_links(eid, entries, edges, triples, vectors=vectors, now=NOW)
    assert got.add.equals(want.add) and got.remove.equals(want.remove)


def test_extend_needs_the_old_rows_first():
    entries, _, _, _ = synthetic_bank(30, seed=3)
    stats = TermStats.build(entries.head(20))
    with pytest.raises(ValidationError, match="must start with"):
        stats.extend(entries.reverse())
    before = entries.clone()
    stats.extend(entries)
    assert entries.equals(before) and len(stats.ids) == 20


def test_plan_links_same_with_and_without_the_cached_edge_index():
    entries, edges, triples, vectors = synthetic_bank(150, seed=4)
    stats = TermStats.build(entries, known_entities=triple_entities(triples))
    for eid in entries.sort("created_at")["id"].tail(12).to_list():
        fresh = plan_links(eid, entries, edges.clone(), triples, vectors=vectors, stats=stats, now=NOW)  # a new frame
        plan_links(eid, entries, edges, triples, vectors=vectors, stats=stats, now=NOW)
        cached = plan_links(eid, entries, edges, triples, vectors=vectors, stats=stats, now=NOW)  # seen: full index
        assert fresh.add.equals(cached.add) and fresh.remove.equals(cached.remove)
        assert fresh.entry_updates.equals(cached.entry_updates) and fresh.report == cached.report


# ---------------------------------------------------------------- nearest neighbours from an index


def _flat(vectors):
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def _weak_hnsw(vectors):
    """A deliberately poor HNSW graph (M 4, efSearch 8): approximate lists, many fallbacks."""
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.IndexHNSWFlat(vectors.shape[1], 4, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction, index.hnsw.efSearch = 16, 8
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


class _Scrambled:
    """A neighbour index that returns a fixed pseudo-random subset of rows with their true scores."""

    def __init__(self, vectors, keep=0.5):
        self.vectors, self.ntotal = np.asarray(vectors, np.float32), len(vectors)
        self.allowed = np.flatnonzero(np.random.default_rng(5).random(len(vectors)) < keep)

    def search(self, x, k):
        scores = x @ self.vectors[self.allowed].T
        top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        rows = np.full((len(x), k), -1, np.int64)
        out = np.full((len(x), k), -np.inf, np.float32)
        rows[:, : top.shape[1]] = self.allowed[top]
        out[:, : top.shape[1]] = np.take_along_axis(scores, top, axis=1)
        return out, rows


@pytest.mark.parametrize("in_time_order", [True, False])
def test_votes_cut_at_the_first_unseen_entry_are_the_votes_seen(in_time_order):
    """A chunk's votes leave out the entries after the last one any of its rows can see
    (``_first_unseen``): the votes for the entries they can see are the same, bit for bit, with
    entries linked already (seen by all) and rows in time order or shuffled."""
    from kbtools.linker import evidence
    from kbtools.linker.evidence import relations
    from kbtools.linker.planning import PlanContext

    entries, edges, triples, _ = synthetic_bank(600, seed=3)
    if not in_time_order:
        entries = entries.sample(fraction=1.0, shuffle=True, seed=1)
    stats = TermStats.build(entries, known_entities=triple_entities(triples))
    ctx = PlanContext.open(entries, edges, triples, stats, LINKER_DEFAULTS, NOW, None, None)
    assert ctx.linked.any() and not ctx.linked.all()
    chosen = np.flatnonzero(~ctx.linked & (stats.kind >= 0))
    chosen = chosen[np.argsort(stats.rank[chosen], kind="stable")]
    rel = relations(stats, triples)
    dropped = total = 0
    for lo in range(0, len(chosen), 50):
        rows = chosen[lo : lo + 50]
        cut = evidence._first_unseen(stats, rows, ctx.open_, ctx.linked)
        got = []
        for c in (None, cut):
            r, e, v = evidence._votes(stats, rows, rel, LINKER_DEFAULTS, cut=c)
            seen = (v > 0) & evidence._visible_pairs(stats, rows, r, e, ctx.open_, ctx.linked)
            got.append((sorted(zip(r[seen].tolist(), e[seen].tolist(), v[seen].tolist())), len(v)))
        assert got[0][0] == got[1][0] and got[1][1] <= got[0][1]
        dropped, total = dropped + got[0][1] - got[1][1], total + got[0][1]
    if in_time_order:  # the entries after a chunk: a good share of its votes
        assert dropped > 0.2 * total


def test_an_hnsw_graph_is_searched_from_each_rows_own_node():
    """``index_search`` walks an HNSW graph's ground level from each row's own node: the hits of
    faiss' search from the top but a few, best first, the row itself left out (its place missing),
    one row alone as in a batch; another index is searched as such."""
    import faiss

    from kbtools.linker.evidence import index_search

    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(4)
    vectors = rng.normal(size=(3000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexHNSWFlat(32, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = 40
    index.add(vectors)
    rows = np.arange(0, 3000, 7)
    fetch = 61
    scores, found = index_search(index, vectors[rows], rows, fetch)
    assert found.shape == scores.shape == (len(rows), fetch) and (found[:, -1] == -1).all()
    assert not (found == rows[:, None]).any() and (found[:, :-1] >= 0).all()
    assert np.all(np.diff(scores[:, :-1], axis=1) <= 1e-6)
    np.testing.assert_allclose(scores[:, :-1], np.take_along_axis(vectors[rows] @ vectors.T, found[:, :-1], axis=1), atol=1e-5)
    _, top = index.search(vectors[rows], fetch)  # the row itself among them
    same = [len(set(a[:-1]) & (set(b) - {r})) / (fetch - 1) for a, b, r in zip(found, top, rows)]
    assert np.mean(same) > 0.97
    alone = index_search(index, vectors[rows[5:6]], rows[5:6], fetch)
    assert np.array_equal(alone[1], found[5:6]) and np.array_equal(alone[0], scores[5:6])
    flat = _flat(vectors)
    assert np.array_equal(index_search(flat, vectors[rows], rows, fetch)[1], flat.search(vectors[rows], fetch)[1])


def test_a_search_from_a_rows_own_node_has_a_narrower_beam_and_finds_the_exact_top():
    """From its own node a row's search keeps ``_OWN_NODE_BEAM`` of the index's efSearch: fewer
    distances than the whole beam from the same start, the exact top 10 found as often but a few,
    and the index's efSearch (what a search from the top reads) left as it was."""
    import faiss

    from kbtools.linker import evidence
    from kbtools.linker.evidence import index_search

    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(30, 32))
    vectors = (centres[rng.integers(0, 30, 4000)] + 1.5 * rng.normal(size=(4000, 32))).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexHNSWFlat(32, 16, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efSearch = 40
    index.add(vectors)
    rows = np.arange(0, 4000, 5)
    exact = vectors[rows] @ vectors.T
    exact[np.arange(len(rows)), rows] = -np.inf
    truth = np.argsort(-exact, axis=1)[:, :10]

    def searched(share):
        faiss.cvar.hnsw_stats.reset()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(evidence, "_OWN_NODE_BEAM", share)
            found = index_search(index, vectors[rows], rows, 25)[1]
        recall = np.mean([len(set(t) & set(f)) / 10 for t, f in zip(truth, found)])
        return faiss.cvar.hnsw_stats.ndis / len(rows), recall

    narrow, whole = searched(evidence._OWN_NODE_BEAM), searched(1.0)
    assert evidence._OWN_NODE_BEAM < 1.0 and index.hnsw.efSearch == 40
    assert narrow[0] < 0.9 * whole[0]  # fewer distances
    assert narrow[1] > 0.97 and narrow[1] > whole[1] - 0.01  # the exact top 10 as often but a few


@pytest.mark.parametrize("seed,max_degree,ties", [(0, 12, False), (2, 3, False), (6, 12, True)])
def test_flat_index_gives_the_links_of_the_exact_scan_where_every_entry_sees_the_bank(seed, max_degree, ties):
    """A relink of a bank linked before: every entry sees the whole index, whose exact hits are the scan's."""
    entries, edges, triples, vectors = synthetic_bank(200, seed=seed)
    entries = entries.with_columns(pl.lit(NOW).cast(pl.Datetime("us", "UTC")).alias("linked_at"))
    ids = entries["id"].to_list()
    if ties:  # twenty distinct vectors: ties everywhere, broken by the newer entry like the scan does
        vectors = vectors[np.random.default_rng(seed).integers(0, 20, len(vectors))]
    settings = LINKER_DEFAULTS.with_(max_degree=max_degree)
    stats = TermStats.build(entries, known_entities=triple_entities(triples))
    index = _flat(vectors)
    scan = plan_connect(entries, edges, triples, ids=ids, vectors=vectors, stats=stats, settings=settings, now=NOW,
                        chunk=23)
    got = plan_connect(entries, edges, triples, ids=ids, vectors=vectors, neighbors=index, stats=stats,
                       settings=settings, now=NOW, chunk=23)
    assert scan.report["links"] > 100
    assert _norm(apply_links(entries, edges, scan)[1]).equals(_norm(apply_links(entries, edges, got)[1]))
    for eid in entries.sort("created_at")["id"].tail(8).to_list():
        one = plan_links(eid, entries, edges, triples, vectors=vectors, neighbors=index, stats=stats, now=NOW)
        want = plan_links(eid, entries, edges, triples, vectors=vectors, stats=stats, now=NOW)
        assert one.add.drop("created_at", "seen_at").equals(want.add.drop("created_at", "seen_at"))


def _ivf_sq8(vectors):
    """The linker's index of a million-entry bank, small: 8-bit codes (approximate scores), 3 of 30 lists visited."""
    from kbtools.ops.link_context import ivf_neighbour_index

    index = ivf_neighbour_index(vectors, nlist=30)
    index.nprobe = 3  # a poor list choice: many fallbacks to the exact scan
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


@pytest.mark.parametrize("seed,max_degree,make", [(0, 12, _weak_hnsw), (2, 3, _weak_hnsw), (1, 6, _Scrambled),
                                                  (4, 5, _ivf_sq8)])
def test_connect_equals_one_by_one_with_an_approximate_index(seed, max_degree, make):
    entries, edges, triples, vectors = synthetic_bank(200, seed=seed)
    settings = LINKER_DEFAULTS.with_(max_degree=max_degree)
    stats = TermStats.build(entries, known_entities=triple_entities(triples))
    index = make(vectors)
    order = entries.filter(pl.col("linked_at").is_null()).sort("created_at", "id")["id"].to_list()
    e1, g1 = entries, edges
    for entry_id in order:
        plan = plan_links(entry_id, e1, g1, triples, vectors=vectors, neighbors=index, stats=stats, settings=settings, now=NOW)
        e1, g1 = apply_links(e1, g1, plan)
    plan = plan_connect(entries, edges, triples, vectors=vectors, neighbors=index, stats=stats, settings=settings,
                        now=NOW, chunk=23)
    e2, g2 = apply_links(entries, edges, plan)
    assert plan.report["links"] > 100
    assert _norm(g1).equals(_norm(g2))
    assert e1.select("id", "status", "linked_at").sort("id").equals(e2.select("id", "status", "linked_at").sort("id"))



@pytest.mark.parametrize("make", [_flat, _weak_hnsw, _ivf_sq8])
def test_candidates_carry_the_exact_cosines_the_evidence_would_compute(make):
    """The index's hits are re-scored exactly once: the candidates carry those cosines (NaN for the
    pairs no index search returned), and the evidence read from them equals the evidence that
    gathers every pair's vectors again, bit for bit. (A row's own candidates, as a write reads them;
    a connect's come from the frame's lists, which read the same search.)"""
    from kbtools.linker.evidence import candidate_pairs, pair_cosine, pair_evidence
    from kbtools.linker.planning import PlanContext

    entries, edges, triples, vectors = synthetic_bank(200, seed=7)
    index = make(vectors)
    ctx = PlanContext.open(entries, edges, triples, None, LINKER_DEFAULTS, NOW, vectors, None, index)
    rows = np.flatnonzero(ctx.stats.kind >= 0)
    own = LINKER_DEFAULTS.with_(both_ends=False)
    for chunk in (rows[-1:], rows[-60:]):
        pairs = candidate_pairs(ctx.stats, chunk, rel=ctx.rel, open_=ctx.open_, linked=ctx.linked,
                                settings=own, vectors=vectors, neighbors=index, eligible=ctx.eligible())
        known = np.flatnonzero(~np.isnan(pairs["cos"]))
        assert 0 < len(known) < len(pairs["c"])  # some from the index, some only lexical or same-session
        assert np.array_equal(pairs["cos"][known], pair_cosine(pairs["m"][known], pairs["c"][known], vectors=vectors))
        plain = pair_evidence(ctx.stats, pairs["m"], pairs["c"], rel=ctx.rel, settings=own, vectors=vectors)
        carried = pair_evidence(ctx.stats, pairs["m"], pairs["c"], rel=ctx.rel, settings=own,
                                vectors=vectors, known_cos=pairs["cos"])
        assert plain.keys() == carried.keys()
        assert all(np.array_equal(plain[k], carried[k]) for k in plain)

def test_index_neighbours_respect_visibility():
    rows = [("00000001", "decision", "Decision: use Redis for the Atlas cache", None, "{}", "superseded"),
            ("00000003", "knowledge", "Redis cache for Atlas keeps sessions warm", None, "{}", "archived"),
            ("00000002", "knowledge", "Redis cache for Atlas evicts keys under load")]
    vectors = np.tile(np.array([[1.0, 0.0]], np.float32), (3, 1))
    plan = plan_links("00000002", _bank(rows), None, None, vectors=vectors, neighbors=_flat(vectors), now=NOW)
    assert plan.add.height == 0
    newer = [("00000002", "knowledge", "Redis cache for Atlas evicts keys under load"),
             ("00000004", "knowledge", "Redis cache for Atlas evicts keys under heavy load")]
    plan = plan_links("00000002", _bank(newer), None, None, vectors=vectors[:2], neighbors=_flat(vectors[:2]), now=NOW)
    assert plan.add.height == 0  # a newer entry that was never linked is not a candidate
    active = [r[:3] for r in rows]
    assert plan_links("00000002", _bank(active), None, None, vectors=vectors, neighbors=_flat(vectors), now=NOW).add.height == 2
    older = _bank(newer[::-1])
    assert plan_links("00000002", older, None, None, vectors=vectors[:2], neighbors=_flat(vectors[:2]), now=NOW).add.height == 1


def test_neighbour_index_errors():
    entries, edges, triples, vectors = synthetic_bank(20, seed=1)
    eid = entries["id"][-1]
    with pytest.raises(ValidationError, match="neighbors"):
        plan_links(eid, entries, edges, triples, neighbors=_flat(vectors), now=NOW)
    with pytest.raises(ValidationError, match="neighbors"):
        plan_links(eid, entries, edges, triples, vectors=vectors, neighbors=_flat(vectors[:10]), now=NOW)
    with pytest.raises(ValidationError, match="neighbors"):
        plan_connect(entries, edges, triples, vectors=vectors, neighbors=object(), now=NOW)


def test_a_rows_voting_terms_come_in_the_order_of_the_five_keys():
    """``voting_terms`` sorts a chunk's terms by one key per term (``_vote_order``, made once): the
    order of (row; held by others first; higher IDF; heavier; lower term), ties included (terms
    of one IDF and weight), so the same terms vote."""
    from kbtools.linker.evidence import voting_terms, relations
    from kbtools.linker.terms import row_positions

    entries, _, triples, _ = synthetic_bank(300, seed=4)
    stats = TermStats.build(entries, known_entities=triple_entities(triples))
    rows = np.arange(len(stats.ids))
    r, pos = row_positions(stats.postings.indptr, rows)
    t = stats.postings.indices[pos].astype(np.int64)
    order = np.lexsort((t, -stats.w[t], -stats.idf[t], stats.df[t] <= 1, r))
    r, t = r[order], t[order]
    place = np.arange(len(r)) - np.searchsorted(r, np.arange(len(rows)))[r]
    keep = (place < LINKER_DEFAULTS.query_terms) & ~stats.capped[t]
    want = np.lexsort((t[keep], r[keep]))
    got_r, got_t = voting_terms(stats, rows, relations(stats, None), LINKER_DEFAULTS)
    assert np.array_equal(got_r, r[keep][want]) and np.array_equal(got_t, t[keep][want])
    assert len(np.unique(stats.idf[t])) < len(np.unique(t))  # terms of equal IDF: the later keys decide
    assert (place >= LINKER_DEFAULTS.query_terms).any()  # rows with more terms than vote
