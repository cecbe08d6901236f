"""The order the linker tries an entry's candidates in, the sections it leaves unlinked and the
candidates of an entry without a session (what ``kb eval links`` measures)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl

from kbtools.linker import LINKER_DEFAULTS, TermStats, explain_pair, plan_connect, plan_links
from kbtools.linker.evidence import rare_sum
from kbtools.model.schema import conform, empty

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def _bank(rows, *, step=dt.timedelta(minutes=1)):
    """entries from (id, text[, metadata]) tuples, all knowledge, no session, ``step`` apart."""
    out = []
    for k, (eid, text, *rest) in enumerate(rows):
        t = T0 + k * step
        out.append({"id": eid, "kind": "knowledge", "content": text, "metadata": rest[0] if rest else "{}",
                    "created_at": t, "updated_at": t, "usage_count": 0})
    return conform(pl.DataFrame(out), "entries")


def _linked(plan) -> set[frozenset]:
    auto = plan.add.filter(pl.col("source") == "auto")
    return {frozenset(p) for p in auto.select("src", "dst").rows()}


def _unit(rows) -> np.ndarray:
    v = np.array(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_the_closest_in_meaning_is_tried_first_though_the_seed_scores_another_higher():
    # both pass the gate; the seed's similarity reads 1 for both (any cosine over 0.3), so its score
    # prefers the one sharing more words; the affinity prefers the far closer meaning
    entries = _bank([
        ("wordy", "pump seal valve gasket flange torque bolt pressure test weekly routine"),
        ("close", "pump seal valve gasket inspection"),
        ("new", "pump seal valve gasket flange torque bolt pressure failure"),
    ])
    vectors = _unit([[0.35, 1.0], [1.0, 0.05], [1.0, 0.0]])
    wordy = explain_pair("new", "wordy", entries, None, None, vectors=vectors)
    close = explain_pair("new", "close", entries, None, None, vectors=vectors)
    assert wordy.linked and close.linked and wordy.score > close.score
    plan = plan_links("new", entries, None, None, vectors=vectors, settings=LINKER_DEFAULTS.with_(max_new=1), now=T0)
    assert _linked(plan) == {frozenset({"new", "close"})}


def test_two_sections_of_one_document_are_not_linked_to_each_other():
    entries = _bank([
        ("doc", "Packaging guide"),
        ("s1", "wheel tags name the interpreter abi and platform of a built wheel"),
        ("s2", "the platform tag of a wheel names the abi and interpreter it was built for"),
        ("other", "wheel platform tags for the abi and interpreter of a built distribution"),
    ])
    edges = conform(pl.DataFrame([
        {"src": s, "dst": "doc", "type": "part_of", "source": "structure", "weight": 1.0,
         "evidence": json.dumps({"why": "a section"}), "created_by": "test", "created_at": T0, "seen_at": T0}
        for s in ("s1", "s2")]), "edges")
    linked = _linked(plan_connect(entries, edges, None, now=T0))
    assert frozenset({"s1", "s2"}) not in linked
    assert {frozenset({"other", "s1"}), frozenset({"other", "s2"})} <= linked
    # without the document they are linked
    assert frozenset({"s1", "s2"}) in _linked(plan_connect(entries, empty("edges"), None, now=T0))


def test_an_entry_without_a_session_sees_the_entries_written_just_before_it():
    # one candidate from each list: the index and the neighbours both name "twin"; the entry
    # written just before it ("prior") comes from the entries written near it
    entries = _bank([
        ("twin", "retry backoff jitter for the upload client timeout errors"),
        *((f"f{k}", f"filler note {k} about gardening tomatoes and basil") for k in range(6)),
        ("prior", "upload client timeout raised to thirty seconds"),
        ("new", "retry backoff jitter for the upload client timeout errors, second try"),
    ], step=dt.timedelta(days=1))
    vectors = _unit([[1.0, 0.0], *([[0.0, 1.0]] * 6), [0.8, 0.6], [1.0, 0.01]])
    narrow = LINKER_DEFAULTS.with_(candidates=1, session_candidates=1)
    plan = plan_links("new", entries, None, None, vectors=vectors, settings=narrow, now=T0)
    assert {frozenset({"new", "twin"}), frozenset({"new", "prior"})} <= _linked(plan)
    assert plan.report["candidates"] == 2


def test_rare_sum_counts_only_terms_few_entries_hold():
    entries = _bank([(f"e{k}", "common words here" + (" zebra" if k < 2 else "")) for k in range(30)])
    stats = TermStats.build(entries)
    got = rare_sum(stats, np.array([0, 2]), np.array([1, 3]))
    assert got[0] > 0 and got[1] == 0.0  # "zebra": 2 entries; the others: all 30


def test_a_connect_links_an_older_entry_to_the_later_one_it_ranks_first():
    # "old" is ranked below six copies in the list of "new" (written after all of them), but "new"
    # is the best entry in the whole bank for "old" (the copies rank each other first): a connect
    # reads both ends' lists and tries that pair first; the newer entry's list alone never reaches it
    text = "encoder cable on line 3 keeps faulting with error E-217 during the night shift"
    entries = _bank([("old", text)] + [(f"copy{i}", text) for i in range(6)] + [("new", text)])
    # dimensions: what all share, what the copies share, one of each copy's own, one of old's own
    copies = [[1.0, 1.0] + [0.0] * i + [0.1] + [0.0] * (6 - i) for i in range(6)]
    vectors = _unit([[0.6] + [0.0] * 7 + [0.8]] + copies + [[1.0] + [0.0] * 8])
    both = _linked(plan_connect(entries, None, None, vectors=vectors, now=T0))
    assert frozenset({"new", "old"}) in both
    one_end = plan_connect(entries, None, None, vectors=vectors, now=T0, settings=LINKER_DEFAULTS.with_(both_ends=False))
    assert frozenset({"new", "old"}) not in _linked(one_end)
    # one entry at a time reads the same lists
    assert _linked(plan_links("new", entries, None, None, vectors=vectors, now=T0)) == {
        p for p in both if "new" in p}


def test_a_small_connect_on_a_big_bank_reads_each_entry_own_lists():
    # linking the newest entry alone (under a quarter of the bank): the frame's lists are not read,
    # so "old" is not reached from the other end; the whole-bank connect reaches it
    text = "encoder cable on line 3 keeps faulting with error E-217 during the night shift"
    entries = _bank([("old", text)] + [(f"copy{i}", text) for i in range(6)] + [("new", text)])
    copies = [[1.0, 1.0] + [0.0] * i + [0.1] + [0.0] * (6 - i) for i in range(6)]
    vectors = _unit([[0.6] + [0.0] * 7 + [0.8]] + copies + [[1.0] + [0.0] * 8])
    small = plan_connect(entries, None, None, ids=["new"], vectors=vectors, now=T0)
    one_end = plan_connect(entries, None, None, ids=["new"], vectors=vectors, now=T0,
                           settings=LINKER_DEFAULTS.with_(both_ends=False))
    assert _linked(small) == _linked(one_end) and frozenset({"new", "old"}) not in _linked(small)


def _parts(pairs):
    return conform(pl.DataFrame([
        {"src": s, "dst": d, "type": "part_of", "source": "structure", "weight": 1.0,
         "evidence": json.dumps({"why": "a section"}), "created_by": "test", "created_at": T0, "seen_at": T0}
        for s, d in pairs]), "edges")


def test_a_link_to_a_section_of_another_document_brings_that_documents_head_along():
    entries = _bank([
        ("guide", "Wheel packaging guide: building and tagging wheels"),
        ("tags", "wheel tags name the interpreter abi and platform of a built wheel"),
        ("other", "gardening notes about tomatoes and basil"),
        ("new", "the platform tag of a wheel names the abi and interpreter it was built for"),
    ])
    edges = _parts([("tags", "guide")])
    vectors = _unit([[0.8, 0.6, 0.0], [1.0, 0.05, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    one = LINKER_DEFAULTS.with_(max_new=1)
    plan = plan_links("new", entries, edges, None, vectors=vectors, settings=one, now=T0)
    # the section it matches best, and the document it is part of, beyond max_new
    assert _linked(plan) == {frozenset({"new", "tags"}), frozenset({"new", "guide"})}
    alone = plan_links("new", entries, edges, None, vectors=vectors, settings=one.with_(document_heads=False), now=T0)
    assert _linked(alone) == {frozenset({"new", "tags"})}
    # a goal's parent is not a document's head
    goals = entries.with_columns(pl.when(pl.col("id").is_in(["guide", "tags"])).then(pl.lit("goal"))
                                 .otherwise(pl.col("kind")).alias("kind"))
    assert _linked(plan_links("new", goals, edges, None, vectors=vectors, settings=one, now=T0)) == {
        frozenset({"new", "tags"})}
