"""kb.query on the embedded demo bank: the seed's worked examples, usage, exact search, caches."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.retrieval.index import combine
from kbtools.store.caches import write_cache
from kbtools.store.segments import segment_files
from kbtools.store.vectors import entry_vectors

LOGIN = "how do I log in to production with playwright"
DISPATCH = "owner ruling says table this card for N days: dated dispatch label or hold-until label?"


def _id(bank, title_part: str) -> str:
    return bank.entries.filter(pl.col("title").str.contains(title_part, literal=True))["id"][0]


def test_login_recipe_hands_over_the_programmatic_flow_neighbour(eng):
    ans = kb.query(eng, LOGIN, k=8, record_usage=False)
    first = ans.results[0]
    assert first.id == _id(eng, "Log in to production with Playwright")
    api = _id(eng, "Admin API session flow")
    flat = kb.query(eng, LOGIN, k=8, fold=False, record_usage=False)
    assert api not in flat.ids()  # not a match for "log in with Playwright"
    nb = [p for p in first.neighbors if p.id == api]
    assert nb and nb[0].relation == "cites" and nb[0].note.startswith("PROGRAMMATIC API FLOW (no browser)")
    assert "PROGRAMMATIC API FLOW" in ans.text()


def test_dated_dispatch_entries_fold_and_the_stale_one_is_flagged(eng):
    flat = kb.query(eng, DISPATCH, k=8, fold=False, record_usage=False)
    ans = kb.query(eng, DISPATCH, k=8, record_usage=False)
    dispatch = set(eng.entries.filter(pl.col("systems").list.contains("kanban"))["id"])
    flat_slots = sum(1 for i in flat.ids() if i in dispatch)
    folded_slots = sum(1 for i in ans.ids() if i in dispatch)
    assert flat_slots >= 4 and folded_slots < flat_slots  # redundancy stops spending slots
    pointers = [p for r in ans.results for p in r.related]
    stale = [p for p in pointers if p.relation == "corrects"]
    assert stale and "stale" in stale[0].note
    # every entry of the flat answer is still visible: as a result or as a pointer
    shown = set(ans.ids()) | {p.id for p in pointers}
    assert set(flat.ids()) - shown <= set(flat.ids()[6:])  # only refill candidates may differ


def test_a_query_folds_over_the_sources_it_names(eng):
    # the dispatch entries fold over their authors' edges; naming a source that holds none of
    # them (or a set without the authors') answers flat for them, and never raises
    ans = kb.query(eng, DISPATCH, k=8, record_usage=False)
    only_backfill = kb.query(eng, DISPATCH, k=8, record_usage=False, sources=["citation_backfill"])
    pointers = lambda a: {p.id for r in a.results for p in r.related}  # noqa: E731
    assert pointers(ans) and not pointers(only_backfill)
    assert kb.query(eng, DISPATCH, k=8, record_usage=False, sources=["author"]).ids() == ans.ids()
    with_auto = kb.query(eng, DISPATCH, k=8, record_usage=False, sources=[*TRUSTED_SOURCES, "auto"])
    assert len(with_auto.ids()) == 8


def test_folded_answer_has_k_distinct_results_and_no_repeats(eng):
    for q in [LOGIN, DISPATCH, "why does the nightly e2e suite flake", "rotate the staging signing key"]:
        ans = kb.query(eng, q, k=8, record_usage=False)
        ids = ans.ids()
        assert len(ids) == 8 and len(set(ids)) == 8
        pointers = [p.id for r in ans.results for p in r.related + r.neighbors]
        assert not set(pointers) & set(ids)
        assert len(pointers) == len(set(pointers))


def test_usage_counts_only_returned_results(eng_copy):
    before = eng_copy.entries.select("id", "usage_count")
    ans = kb.query(eng_copy, LOGIN, k=8)
    after = eng_copy.entries.select("id", "usage_count").join(before, on="id", suffix="_before")
    bumped = set(after.filter(pl.col("usage_count") > pl.col("usage_count_before"))["id"])
    assert bumped == set(ans.ids())
    assert len(segment_files(eng_copy)["entries"]) == 1  # the entries table was not rewritten
    kb.query(eng_copy, LOGIN, k=8, record_usage=False)
    assert eng_copy.usage.height == 8


def test_exact_search_agrees_with_numpy_brute_force(eng):
    ids, data = entry_vectors(eng)
    active = set(eng.entries.filter(pl.col("status") == "active")["id"])
    mask = np.array([i in active for i in ids])
    combined = combine(np.asarray(data)[mask])
    q = kb.retrieval.get_embedder("minilm-int8").encode([LOGIN])[0]
    brute = np.argsort(-(combined @ q), kind="stable")[:20]
    pool = kb.retrieval.ranked_pool(eng, LOGIN, pool=20, query_vector=q)
    assert pool["id"].to_list() == list(ids[mask][brute])
    assert np.allclose(pool["score"].to_numpy(), (combined @ q)[brute], atol=1e-5)


def test_custom_weights_and_lexical_arm(eng):
    pool = kb.retrieval.ranked_pool(eng, "E-217 --http1.1", pool=20, lexical=True)
    assert _id(eng, "Session-create POST needs --http1.1") in pool["id"].to_list()[:3]
    sys_only = kb.retrieval.ranked_pool(eng, "kanban", pool=5, weights={"systems": 1.0})
    assert all("kanban" in s for s in eng.entries.filter(pl.col("id").is_in(sys_only["id"].implode()))["systems"].to_list())
    with pytest.raises(kb.ValidationError, match="search dimension"):
        kb.retrieval.ranked_pool(eng, "x", weights={"colour": 1.0})


def test_another_embedder_is_refused_with_how_to_reembed(eng):
    with pytest.raises(kb.EmbedderMismatch, match="kb embed .* --embedder hashing-char --rebuild"):
        kb.query(eng, LOGIN, embedder="hashing-char")


def test_new_entries_are_embedded_incrementally(eng_copy):
    new = kb.report_learning(eng_copy, content="The staging signing key rotates with `vault rotate staging-sign`.", actor="a", link=False)
    ans = kb.query(eng_copy, "rotate the staging signing key with vault", record_usage=False)
    assert new in ans.ids()
    assert len(entry_vectors(eng_copy)[0]) == eng_copy.entries.height


def test_stale_index_cache_is_never_used(eng_copy):
    kb.query(eng_copy, LOGIN, record_usage=False)
    write_cache(eng_copy, "index-flat.faiss", "stale-fingerprint", b"garbage")
    fresh = kb.open_bank(eng_copy.path)
    assert kb.query(fresh, LOGIN, record_usage=False).ids() == kb.query(eng_copy, LOGIN, record_usage=False).ids()


def test_answer_frame_and_json(eng):
    ans = kb.query(eng, LOGIN, record_usage=False)
    frame = ans.to_frame()
    assert set(frame["kind"]) >= {"result", "neighbor"}
    assert frame.filter(pl.col("kind") == "result").height == 8
    json.dumps(ans.to_dict())
    assert "<" in ans._repr_html_()


def test_query_rejects_bad_input(eng):
    with pytest.raises(kb.ValidationError):
        kb.query(eng, "", record_usage=False)
    with pytest.raises(kb.ValidationError):
        kb.query(eng, LOGIN, k=0, record_usage=False)
    with pytest.raises(kb.ValidationError, match="edge source"):
        kb.query(eng, LOGIN, sources=["rumour"], record_usage=False)


def test_index_grows_incrementally_and_masks_an_entry_that_leaves(eng_copy):
    from kbtools.retrieval.search import bank_index

    first = bank_index(eng_copy)
    size = first.size
    kb.report_learning(eng_copy, content="Rotate the staging signing key with vault rotate.", actor="a", link=False)
    kb.embed_bank(eng_copy)
    grown = bank_index(eng_copy)
    assert grown is first and grown.size == size + 1  # added, not rebuilt
    gone = eng_copy.entries["id"][0]
    kb.delete_entry(eng_copy, gone, reason="test", actor="judge")
    masked = bank_index(eng_copy)
    assert masked is first and masked.size == size  # removed in place, not rebuilt
    assert gone not in masked.search(np.ones((1, masked.dim), np.float32), masked.size)[1][0].tolist()


def test_index_survives_the_automatic_merge_of_small_segments(eng_copy):
    from kbtools.retrieval.search import bank_index
    from kbtools.store.compaction import TAIL_SEGMENTS

    first = bank_index(eng_copy)
    size = first.size
    for i in range(TAIL_SEGMENTS + 2):  # enough writes for a tail merge of the entries table
        kb.report_learning(eng_copy, content=f"Cache warmer note number {i} for the CDN.", actor="a", link=False)
    kb.embed_bank(eng_copy)
    assert len(segment_files(eng_copy)["entries"]) <= TAIL_SEGMENTS + 1
    after = bank_index(eng_copy)
    assert after is first and after.size == size + TAIL_SEGMENTS + 2  # grown in place, never rebuilt


def test_the_query_caches_grow_through_merges_of_vector_segments(eng_copy):
    from kbtools.ops.link_context import linker_vectors
    from kbtools.retrieval.index import VectorIndex
    from kbtools.retrieval.search import bank_index
    from kbtools.store.compaction import TAIL_SEGMENTS
    from kbtools.store.vectors import vector_segments

    first, reader = bank_index(eng_copy), kb.open_bank(eng_copy.path, readonly=True)
    seen, size = bank_index(reader), first.size
    builds = VectorIndex.builds
    services = ("billing", "search", "mailer", "backup", "ledger", "payroll")
    faults = ("drops webhooks after midnight", "leaks file handles under load", "needs a restart after deploys",
              "times out on large exports", "double-sends receipts on retry", "loses its cursor when paused")
    notes = [f"The {s} service {f}." for f in faults for s in services][: 2 * TAIL_SEGMENTS + 2]
    for i, note in enumerate(notes):  # every write embeds its entry: a vector segment each
        new = kb.report_learning(eng_copy, content=note, actor="a", link=False)
        assert new in kb.query(eng_copy, note, fold=False).ids()
        linked = linker_vectors(eng_copy)  # the linker's vectors grow through the merges too
        if i % 7 == 6:  # a reader in another process moves on every few writes
            reader.reload()
            assert new in kb.query(reader, note, fold=False).ids()
    assert len(vector_segments(eng_copy)) <= TAIL_SEGMENTS + 1
    assert any(seg.get("holds") for seg in vector_segments(eng_copy))
    reader.reload()
    assert bank_index(eng_copy) is first and first.size == size + len(notes)  # grown, never rebuilt
    assert bank_index(reader) is seen and seen.size == first.size
    assert VectorIndex.builds == builds
    fresh = kb.open_bank(eng_copy.path, readonly=True)  # the same answers as an index built anew
    assert np.array_equal(linker_vectors(eng_copy), linker_vectors(fresh)) and len(linked) == eng_copy.entries.height
    for text in (LOGIN, notes[5]):
        assert kb.query(fresh, text, index="flat").ids() == kb.query(reader, text, index="flat").ids()


def test_a_query_appends_its_usage_without_reading_the_logs_again(tmp_path):
    from kbtools.store.usage import UsageLogs

    logs = UsageLogs(tmp_path)
    for i in range(40):
        assert logs.append([f"a{i:07d}", "b0000000"], query=f"q{i}", merged=[], readonly=False) == 2
    assert logs.reads <= 1  # the logs were read once at most, not once per query
    assert logs.pending.height == 80
    assert logs.pending.filter(pl.col("id") == "b0000000").height == 40
    # what this process appended is what a fresh reader of the same folder reads
    again = UsageLogs(tmp_path)
    again.refresh([])
    assert again.pending.sort("id", "at").equals(logs.pending.sort("id", "at"))
    # another process's log is seen at the next refresh (a reload of the bank)
    (tmp_path / "usage" / "otherhost-1.log").write_text("2026-01-01T00:00:00+00:00\tc0000000\tqh\n")
    logs.append(["d0000000"], query="q", merged=[], readonly=False)
    logs.refresh([])
    assert set(logs.pending["id"]) >= {"c0000000", "d0000000"} and logs.pending.height == 82


def test_usage_counts_stay_right_over_many_queries(eng_copy):
    before = dict(eng_copy.entries.select("id", "usage_count").iter_rows())
    returned: dict[str, int] = {}
    for i in range(25):
        for id_ in kb.query(eng_copy, f"{LOGIN} {i}", k=4).ids():
            returned[id_] = returned.get(id_, 0) + 1
    after = dict(eng_copy.entries.select("id", "usage_count").iter_rows())
    assert {i: after[i] - before[i] for i in after if after[i] != before[i]} == returned
    reopened = kb.open_bank(eng_copy.path, readonly=True)
    assert dict(reopened.entries.select("id", "usage_count").iter_rows()) == after


def test_a_compaction_counts_the_usage_logged_since_the_last_write_once(tmp_path):
    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char", settings={"auto_link": False})
    kiln = kb.report_learning(bank, content="The kiln fires at noon.", actor="t")
    kb.query(bank, "kiln fires at noon", k=1)
    kb.report_learning(bank, content="Another fact about the glaze.", actor="t")  # merges that usage
    kb.query(bank, "kiln fires at noon", k=1)  # logged, not merged yet

    def count(b):
        return b.entries.filter(pl.col("id") == kiln)["usage_count"][0]

    assert count(kb.open_bank(bank.path)) == 2
    bank.compact()
    assert count(kb.open_bank(bank.path)) == count(bank) == 2 and not list((bank.path / "usage").glob("*.log"))


def test_a_write_merges_the_usage_logs_only_once_they_are_big(tmp_path, monkeypatch):
    from kbtools.store import usage
    from kbtools.store.segments import segment_files

    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char", settings={"auto_link": False})
    kiln = kb.report_learning(bank, content="The kiln fires at noon.", actor="t")
    for i in range(3):
        kb.query(bank, "kiln fires at noon", k=1)
        kb.report_learning(bank, content=f"Glaze fact number {i}.", actor="t")
    assert segment_files(bank)["usage"] == []  # a few queries' usage: no usage segment per write
    assert bank.entries.filter(pl.col("id") == kiln)["usage_count"][0] == 3  # counted from the log
    monkeypatch.setattr(usage, "MERGE_BYTES", 1)
    kb.report_learning(bank, content="A write that merges them.", actor="t")
    assert len(segment_files(bank)["usage"]) == 1 and not list((bank.path / "usage").glob("*.log"))
    for reader in (bank, kb.open_bank(bank.path)):
        assert reader.entries.filter(pl.col("id") == kiln)["usage_count"][0] == 3


def test_entries_read_between_writes_count_usage_as_a_fresh_open_does(eng_copy):
    kb.query(eng_copy, LOGIN, k=4)  # usage pending in the log
    assert eng_copy.entries.height  # read once: the writes below grow what was read
    for i in range(3):
        kb.report_learning(eng_copy, content=f"The staging login needs VPN profile {i} first.", actor="t", link=False)
        grown = eng_copy.entries
        if i == 1:
            kb.query(eng_copy, "staging login VPN profile", k=4)  # the usage changes between two writes
    fresh = kb.open_bank(eng_copy.path, readonly=True).entries
    assert grown.height == fresh.height and grown.sort("id").equals(fresh.sort("id"))
    assert grown["usage_count"].sum() > 0
