"""What the linker reads from a bank grows on append: the content vectors and their neighbour index
gain the new rows alone (no gather of the bank's vectors, no rebuild), and equal a fresh build."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kbtools as kb
from kbtools.demo import synthetic_bank
from kbtools.ops import link_context
from kbtools.ops.interchange import import_frames
from kbtools.store.caches import cached_file_meta, write_cache_file
from kbtools.store.vectors import vector_segments


@pytest.fixture
def bank(tmp_path):
    demo = synthetic_bank(entries=600, seed=5)
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
    kb.embed_bank(bank, embedder="hashing")
    return bank


def _fresh(bank) -> np.ndarray:
    return link_context.linker_vectors(kb.open_bank(bank.path, readonly=True))


def test_linker_vectors_grow_by_the_new_rows_and_equal_a_fresh_build(bank):
    first = link_context.linker_vectors(bank)
    index = link_context.neighbour_index(bank, first)
    for i in range(5):  # with linking: each add plans against the cached vectors and index
        kb.report_learning(bank, content=f"Pump {i} on line 3 keeps faulting with error E-21{i}.", actor="a")
    vectors = link_context.linker_vectors(bank)
    assert len(vectors) == len(first) + 5 and np.shares_memory(vectors, first)  # grown in place, not rebuilt
    assert link_context.neighbour_index(bank, vectors) is index and index.ntotal == len(vectors)
    assert np.array_equal(vectors, _fresh(bank))
    assert np.abs(vectors[-5:]).sum() > 0  # the new entries' vectors, not zero rows
    with pytest.raises(ValueError):
        vectors[0, 0] = 1.0  # callers read it only


def test_a_re_embedded_earlier_entry_rebuilds_the_linker_vectors(bank):
    first = link_context.linker_vectors(bank)
    eid = bank.entries["id"][3]
    kb.update_entry(bank, eid, content="Something else entirely: the kiln on site 9 overheats.", actor="a")
    kb.embed_bank(bank, embedder="hashing")
    vectors = link_context.linker_vectors(bank)
    assert not np.shares_memory(vectors, first)  # rebuilt: the earlier rows changed
    assert np.array_equal(vectors, _fresh(bank))
    assert not np.array_equal(vectors[3], first[3])


def test_entries_added_without_vectors_get_zero_rows_until_embedded(bank):
    link_context.linker_vectors(bank)
    kb.report_learning(bank, content="No vector yet for this one.", actor="a", link=False, embed=False)
    vectors = link_context.linker_vectors(bank)
    assert np.array_equal(vectors, _fresh(bank)) and not vectors[-1].any()


def test_term_stats_grow_on_append_and_survive_a_status_change(bank):
    settings = link_context.linker_settings(bank)
    link_context.term_stats(bank, settings)
    for i in range(3):
        kb.report_learning(bank, content=f"Kiln {i} on site 4 overheats after error K-77{i}.", actor="a", link=False)
    grown = link_context.term_stats(bank, settings)
    fresh = link_context.term_stats(kb.open_bank(bank.path, readonly=True), settings)
    assert grown.vocab == fresh.vocab and grown.ids == fresh.ids
    assert (grown.postings != fresh.postings).nnz == 0 and np.array_equal(grown.w, fresh.w)
    kb.update_entry(bank, bank.entries["id"][0], status="archived", actor="a")  # texts unchanged
    assert link_context.term_stats(bank, settings) is grown


def test_linker_vectors_survive_updates_in_place_and_a_connect_run(bank):
    from kbtools.ops.maintenance import connect_bank

    first = link_context.linker_vectors(bank)
    kb.update_entry(bank, bank.entries["id"][7], status="archived", actor="a")
    connect_bank(bank, limit=50)  # sets linked_at of 50 entries, adds edges
    vectors = link_context.linker_vectors(bank)
    assert np.shares_memory(vectors, first) and len(vectors) == len(first)  # the same rows: nothing gathered again
    assert vectors is first  # the same array: what the linker keeps for it (a connect's lists) holds
    assert np.array_equal(vectors, _fresh(bank))


def test_a_connect_in_parts_links_what_one_plan_over_the_bank_links(bank):
    """The connect job commits in parts of ``chunk`` entries; whether they read the frame's lists is
    decided on the whole job (a quarter of the bank or more), so the parts, each under a quarter,
    plan what one ``plan_connect`` over every entry plans."""
    from kbtools.linker import plan_connect
    from kbtools.ops.maintenance import connect_bank

    settings = link_context.linker_settings(bank)
    vectors = link_context.linker_vectors(bank)
    whole = plan_connect(bank.entries, bank.edges, bank.triples, vectors=vectors, settings=settings,
                         neighbors=link_context.neighbour_index(bank, vectors),
                         stats=link_context.term_stats(bank, settings))
    report = connect_bank(bank, chunk=bank.entries.height // 6)
    key = ["src", "dst", "type"]
    want = whole.add.filter(whole.add["source"] == "auto").select(key).sort(key)
    got = bank.edges.filter(bank.edges["source"] == "auto").select(key).sort(key)
    assert report["entries"] > 500 and want.height > 1000
    assert got.equals(want)


def test_a_linked_add_takes_the_statistics_it_planned_with_after_its_commit(bank, monkeypatch):
    from kbtools.linker import TermStats

    settings = link_context.linker_settings(bank)
    link_context.term_stats(bank, settings)
    extended, extend = [], TermStats.extend
    monkeypatch.setattr(TermStats, "extend", lambda self, entries: extended.append(extend(self, entries)) or extended[-1])
    kb.report_learning(bank, content="Kiln 7 on site 4 overheats after error K-771.", actor="a")
    assert len(extended) == 1  # planned with the bank's statistics extended by the new row
    after = link_context.term_stats(bank, settings)
    assert after is extended[0] and len(extended) == 1  # taken, not extended again
    monkeypatch.undo()
    fresh = link_context.term_stats(kb.open_bank(bank.path, readonly=True), settings)
    assert after.ids == fresh.ids and after.vocab == fresh.vocab
    assert (after.postings != fresh.postings).nnz == 0 and np.array_equal(after.w, fresh.w)
    assert np.array_equal(after.rank, fresh.rank) and np.array_equal(after.session, fresh.session)


def test_a_linked_add_after_unlinked_ones_extends_the_statistics_once(bank, monkeypatch):
    """Writes that did not link (this process's, another's) and a linked one: the statistics kept
    from before them are extended once, to the new row, and are the bank's after the commit."""
    from kbtools.linker import TermStats

    settings = link_context.linker_settings(bank)
    link_context.term_stats(bank, settings)
    extended, extend = [], TermStats.extend
    monkeypatch.setattr(TermStats, "extend", lambda self, entries: extended.append(extend(self, entries)) or extended[-1])
    for round_ in range(3):
        for i in range(2):
            kb.report_learning(bank, content=f"Kiln {i} on site {round_} smokes after error K-{round_}{i}.", actor="b",
                               link=False)
        kb.report_learning(bank, content=f"Kiln 7 on site {round_} overheats after error K-77{round_}.", actor="a")
        assert len(extended) == round_ + 1  # one extension a linked write, over its own row and those before it
        assert link_context.term_stats(bank, settings) is extended[-1]  # taken after the commit
    monkeypatch.undo()
    after = link_context.term_stats(bank, settings)
    fresh = link_context.term_stats(kb.open_bank(bank.path, readonly=True), settings)
    assert after.ids == fresh.ids and after.vocab == fresh.vocab
    assert (after.postings != fresh.postings).nnz == 0 and np.array_equal(after.w, fresh.w)
    assert np.array_equal(after.rank, fresh.rank) and np.array_equal(after.session, fresh.session)


def test_planned_statistics_are_not_taken_for_other_rows(bank):
    from datetime import datetime, timezone

    import polars as pl

    settings = link_context.linker_settings(bank)
    base = link_context.term_stats(bank, settings)
    extra = bank.entries.tail(1).with_columns(pl.lit("ffff0001").alias("id"), pl.lit("Kiln 9 smokes.").alias("content"))
    link_context.plan_new_entry_links(bank, extra, bank.edges.clear(), None, now=datetime.now(timezone.utc))  # planned, not written
    assert link_context.term_stats(bank, settings) is base  # nothing committed: the bank's own statistics
    other = extra.with_columns(pl.lit("Kiln 9 is fine.").alias("content"))
    import_frames(bank, entries=other, guard=False)  # the same id committed with other words
    after = link_context.term_stats(bank, settings)
    fresh = link_context.term_stats(kb.open_bank(bank.path, readonly=True), settings)
    assert after.ids == fresh.ids and after.vocab == fresh.vocab
    assert (after.postings != fresh.postings).nnz == 0 and np.array_equal(after.w, fresh.w)


# -- the neighbour index kept in the bank's cache


@pytest.fixture
def hnsw_bank(bank, monkeypatch):
    """The 600-entry bank with its neighbour index built as HNSW (the kind kept on disk), counting
    the indexes built from scratch."""
    monkeypatch.setattr(link_context, "NEIGHBOURS_FLAT_BELOW", 100)
    built = []
    real = link_context.new_neighbour_index
    monkeypatch.setattr(link_context, "new_neighbour_index", lambda vecs: built.append(len(vecs)) or real(vecs))
    return bank, built


def _index_of(path, **kw):
    bank = kb.open_bank(path, **kw)
    return bank, link_context.neighbour_index(bank, link_context.linker_vectors(bank))


def _top(index, queries, k=10):
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)[1]


def test_the_neighbour_index_is_read_from_the_cache_by_a_new_process(hnsw_bank):
    bank, built = hnsw_bank
    first = link_context.neighbour_index(bank, link_context.linker_vectors(bank))
    assert built == [600] and (bank.path / "cache" / link_context.NEIGHBOURS_FILE).exists()
    again, index = _index_of(bank.path)
    assert built == [600] and index is not first and index.ntotal == 600  # read, not built
    queries = link_context.linker_vectors(again)[:50]
    assert np.array_equal(_top(index, queries), _top(first, queries))  # the same graph
    assert hasattr(index, "hnsw") and index.hnsw.efSearch == first.hnsw.efSearch  # searched as built


def test_the_cached_neighbour_index_grows_by_the_entries_appended_since(hnsw_bank):
    bank, built = hnsw_bank
    link_context.neighbour_index(bank, link_context.linker_vectors(bank))
    for i in range(4):
        kb.report_learning(bank, content=f"Press {i} on line 8 jams with error P-40{i}.", actor="a", link=False)
    again, index = _index_of(bank.path)
    vectors = link_context.linker_vectors(again)
    assert built == [600] and index.ntotal == 604 == len(vectors)
    assert _top(index, vectors[-4:], k=1)[:, 0].tolist() == [600, 601, 602, 603]  # found as themselves
    meta = cached_file_meta(again, link_context.NEIGHBOURS_FILE)[2]
    assert meta["rows"] == 600  # 4 rows are under 5 % of 600: not written again
    for i in range(30):
        kb.report_learning(bank, content=f"Valve {i} on line 2 sticks (ticket V-9{i}).", actor="a", link=False, embed=False)
    kb.embed_bank(bank, embedder="hashing")
    again, index = _index_of(bank.path)
    assert built == [600] and index.ntotal == 634
    assert cached_file_meta(again, link_context.NEIGHBOURS_FILE)[2]["rows"] == 634  # grown by 5 %: written


@pytest.mark.parametrize("change", ["re-embedded", "deleted", "damaged", "other embedder", "older format"])
def test_a_stale_or_damaged_cached_neighbour_index_is_rebuilt(hnsw_bank, change):
    bank, built = hnsw_bank
    link_context.neighbour_index(bank, link_context.linker_vectors(bank))
    eid = bank.entries["id"][3]
    if change == "re-embedded":
        kb.update_entry(bank, eid, content="Something else entirely: the kiln on site 9 overheats.", actor="a")
        kb.embed_bank(bank, embedder="hashing")
    elif change == "deleted":
        kb.delete_entry(bank, eid, reason="test", actor="a")
    elif change == "damaged":
        path = bank.path / "cache" / link_context.NEIGHBOURS_FILE
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif change == "older format":  # as kept by an earlier kbtools (another kind of codes)
        path, fingerprint, meta = cached_file_meta(bank, link_context.NEIGHBOURS_FILE)
        data = path.read_bytes()
        write_cache_file(bank, link_context.NEIGHBOURS_FILE, fingerprint, lambda p: p.write_bytes(data),
                         meta={**meta, "format": meta["format"] - 1})
    else:
        kb.embed_bank(bank, embedder="hashing-char", rebuild=True)
    again, index = _index_of(bank.path)
    vectors = link_context.linker_vectors(again)
    assert built == [600, len(vectors)] and index.ntotal == len(vectors)
    assert _top(index, vectors[:20], k=1)[:, 0].tolist() == list(range(20))


def test_a_compaction_keeps_the_cached_neighbour_index(hnsw_bank):
    """A full compaction folds the vector segments into one holding the same vectors: the index
    built over them is sealed as built over that one and read by the next process, not rebuilt."""
    bank, built = hnsw_bank
    for i in range(3):
        kb.report_learning(bank, content=f"Press {i} on line 8 jams with error P-40{i}.", actor="a", link=False)
    assert len(vector_segments(bank)) > 1
    first = link_context.neighbour_index(bank, link_context.linker_vectors(bank))
    assert built == [603]
    report = kb.open_bank(bank.path).compact()
    assert report["vectors"]["segments"] == 1 and report["vectors"]["caches_kept"] >= 1
    again, index = _index_of(bank.path)
    assert len(vector_segments(again)) == 1 and built == [603] and index.ntotal == 603  # read, not built
    queries = link_context.linker_vectors(again)[:50]
    assert np.array_equal(_top(index, queries), _top(first, queries))
    kb.report_learning(again, content="Valve 4 on line 2 sticks (ticket V-94).", actor="a", link=False)
    _, index = _index_of(bank.path)
    assert built == [603] and index.ntotal == 604  # and grown after it as before


def test_a_compaction_keeps_an_index_built_before_the_last_segments_to_grow_it(hnsw_bank):
    """An index built over the first of the folded segments is carried with the ids of the later
    ones: entries appended since are added to it; an early entry re-embedded since makes it stale."""
    bank, built = hnsw_bank
    link_context.neighbour_index(bank, link_context.linker_vectors(bank))
    for i in range(3):
        kb.report_learning(bank, content=f"Press {i} on line 8 jams with error P-40{i}.", actor="a", link=False)
    assert kb.open_bank(bank.path).compact()["vectors"]["caches_kept"] >= 1
    again, index = _index_of(bank.path)
    assert built == [600] and index.ntotal == 603  # read and grown by the 3 appended
    vectors = link_context.linker_vectors(again)
    assert _top(index, vectors[-3:], k=1)[:, 0].tolist() == [600, 601, 602]
    kb.update_entry(bank, bank.entries["id"][3], content="The kiln on site 9 overheats after error K-990.", actor="a")
    kb.embed_bank(bank, embedder="hashing")  # a new segment re-embeds an early entry
    assert kb.open_bank(bank.path).compact()["vectors"]["caches_kept"] >= 1
    again, index = _index_of(bank.path)
    assert built == [600, 603] and index.ntotal == 603  # carried, seen stale, rebuilt
    assert _top(index, link_context.linker_vectors(again)[:20], k=1)[:, 0].tolist() == list(range(20))


def test_a_read_only_bank_keeps_its_neighbour_index_in_memory(hnsw_bank):
    bank, built = hnsw_bank
    _index_of(bank.path, readonly=True)
    assert built == [600] and not (bank.path / "cache" / link_context.NEIGHBOURS_FILE).exists()


# -- the anchors kept in the bank's cache


def _same_stats(a, b) -> bool:
    return (a.ids == b.ids and a.vocab == b.vocab and a.anchors == b.anchors and (a.postings != b.postings).nnz == 0
            and np.array_equal(a.w, b.w) and np.array_equal(a.hub, b.hub))


@pytest.fixture
def anchors_read(monkeypatch):
    """How many texts ``anchors_of`` read, call by call (the real function runs)."""
    from kbtools.linker import terms

    calls = []
    real = terms.anchors_of
    monkeypatch.setattr(terms, "anchors_of", lambda texts, *a, **k: calls.append(len(texts)) or real(texts, *a, **k))
    return calls


def _stats_of(path, **kw):
    bank = kb.open_bank(path, **kw)
    return link_context.term_stats(bank, link_context.linker_settings(bank))


def _fresh_stats(path):
    from kbtools.linker import TermStats

    bank = kb.open_bank(path, readonly=True)
    known = tuple(sorted(set(bank.triples["subject"].to_list()) | set(bank.triples["object"].to_list())))
    return TermStats.build(bank.entries, known_entities=known, settings=link_context.linker_settings(bank))


@pytest.fixture
def from_parts(monkeypatch):
    """How many rows each statistics made from kept parts held (the real method runs)."""
    from kbtools.linker import TermStats

    calls = []
    real = TermStats.from_parts.__func__
    monkeypatch.setattr(TermStats, "from_parts",
                        classmethod(lambda cls, entries, *a, **k: calls.append(entries.height) or real(cls, entries, *a, **k)))
    return calls


def test_term_statistics_of_a_new_process_are_read_from_the_cache(bank, anchors_read, from_parts):
    first = _stats_of(bank.path)
    assert anchors_read == [600] and from_parts == []
    assert (bank.path / "cache" / link_context.ANCHORS_FILE).exists()
    assert (bank.path / "cache" / link_context.STATS_FILE).exists()
    again = _stats_of(bank.path)
    assert anchors_read == [600] and from_parts == [600]  # no text read again
    assert _same_stats(first, again) and _same_stats(again, _fresh_stats(bank.path))


def test_statistics_from_the_cache_make_only_the_anchors_read(bank, anchors_read, from_parts):
    """Taken from the cache, the anchors stay in their frames until an entry is read (a new process
    linking a few entries does not make one per entry of the bank); read, they are the build's."""
    import pickle

    from kbtools.linker.anchors import AnchorRows

    _stats_of(bank.path)
    stats = _stats_of(bank.path)
    assert from_parts == [600] and isinstance(stats.anchors, AnchorRows)
    assert len(stats.anchors._made) == 0
    a, b = bank.entries["id"][10], bank.entries["id"][11]
    kb.explain(kb.open_bank(bank.path), a, b)  # a pair scored and worded
    fresh = _fresh_stats(bank.path)
    assert stats.anchors[10] == fresh.anchors[10] and stats.anchors[-1] == fresh.anchors[-1]
    assert 0 < len(stats.anchors._made) <= 4
    again = pickle.loads(pickle.dumps(stats.anchors))  # statistics may go to a process pool
    assert len(again) == 600 and again == fresh.anchors


def test_entries_appended_since_are_added_to_the_kept_statistics(bank, anchors_read, from_parts):
    _stats_of(bank.path)
    for i in range(3):
        kb.report_learning(bank, content=f"Kiln {i} on site 4 overheats after error K-77{i}.", actor="a", link=False)
    got = _stats_of(bank.path)
    assert anchors_read == [600, 3] and from_parts == [600]  # the 600 kept, the 3 new read
    assert _same_stats(got, _fresh_stats(bank.path))


def test_only_the_changed_entries_anchors_are_read_again(bank, anchors_read, from_parts):
    _stats_of(bank.path)
    eid = bank.entries["id"][5]
    kb.update_entry(bank, eid, content="The kiln on site 9 overheats after error K-990.", actor="a")
    got = _stats_of(bank.path)
    assert anchors_read == [600, 1] and from_parts == []  # the parts kept no longer hold row 5
    assert _same_stats(got, _fresh_stats(bank.path)) and "e:k-990" in got.anchors[got.row_of[eid]].terms
    _stats_of(bank.path)
    assert anchors_read == [600, 1, 600, 1] and from_parts == [600]  # (a fresh build read 600) the parts kept anew, one anchor read again


def test_a_metadata_change_keeps_the_anchors_but_not_the_parts(bank, anchors_read, from_parts):
    _stats_of(bank.path)
    eid = bank.entries["id"][9]
    kb.update_entry(bank, eid, metadata={"Author": "Ada Lovelace"}, actor="a")  # an author: the bags change
    got = _stats_of(bank.path)
    assert anchors_read == [600, 0] and from_parts == []
    assert _same_stats(got, _fresh_stats(bank.path)) and "ada lovelace" in got.bag_index["author"]


def test_kept_anchors_of_other_known_entities_or_damaged_are_not_used(bank, anchors_read, from_parts):
    _stats_of(bank.path)
    path = bank.path / "cache" / link_context.ANCHORS_FILE
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF
    path.write_bytes(bytes(data))
    _stats_of(bank.path)
    assert anchors_read == [600, 600] and from_parts == []  # damaged: every text read again (and kept anew)
    _stats_of(bank.path)
    assert anchors_read == [600, 600] and from_parts == [600]  # kept anew
    kb.ops.add_triple(bank, "Line 3", "part_of", "Plant North", actor="a")
    got = _stats_of(bank.path)
    assert anchors_read == [600, 600, 600] and from_parts == [600]  # other known entities: other anchors
    assert _same_stats(got, _fresh_stats(bank.path))


@pytest.mark.parametrize("name", [link_context.STATS_FILE, link_context.ANCHORS_FILE, link_context.ANCHORS_FILE + ".terms"])
def test_a_kept_file_changed_in_its_middle_is_not_used(bank, anchors_read, from_parts, name):
    """The statistics and anchors are read from their files (never held whole); a kept file changed
    in place, its size and time kept, is not used (at scale its seal hashes every byte: test_store)."""
    _stats_of(bank.path)
    path = bank.path / "cache" / name
    stamp = path.stat().st_mtime_ns
    with open(path, "r+b") as f:
        f.seek(path.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(stamp, stamp))
    got = _stats_of(bank.path)
    assert from_parts == []  # not from the parts kept
    assert anchors_read == ([600, 0] if name == link_context.STATS_FILE else [600, 600])
    assert _same_stats(got, _fresh_stats(bank.path))


def test_a_read_only_bank_keeps_no_anchors(bank, anchors_read):
    _stats_of(bank.path, readonly=True)
    assert not (bank.path / "cache" / link_context.ANCHORS_FILE).exists()
    assert not (bank.path / "cache" / link_context.STATS_FILE).exists()


def test_anchor_keys_follow_what_anchors_are_read_from():
    import polars as pl

    from kbtools.linker.terms import anchor_keys

    frame = pl.DataFrame({"id": ["a", "b", "c", "d"], "kind": ["fact", "fact", "fact", "event"],
                          "content": ["Line 3 is down", "Line 3 is down", "Line 4 is down", "Line 3 is down"],
                          "systems": [["atlas"], ["atlas"], ["atlas"], ["atlas"]]})
    keys = anchor_keys(frame)
    assert keys.shape == (4, 2) and (keys[0] == keys[1]).all()
    assert not (keys[0] == keys[2]).all() and not (keys[0] == keys[3]).all()  # text, kind
    other = anchor_keys(frame.with_columns(pl.Series("systems", [["orion"]] * 4)))
    assert not (other[0] == keys[0]).all()  # systems are known entities of their entry


@pytest.mark.parametrize("block", [1, 2, 3, 65_536])
def test_anchors_read_back_in_blocks_equal_the_anchors(block):
    from kbtools.linker.anchors import AnchorRows, anchor_frame, anchors_of

    texts = ["Line 3 keeps faulting with error E-217.", "", "Pump 4 at Plant North stops (ticket OPS-12).", "x"]
    made = anchors_of(texts, [()] * 4)
    got = AnchorRows(anchor_frame(made), [3, 0, None, 2, 1, 0]).to_list(block=block)
    assert got == [made[3], made[0], None, made[2], made[1], made[0]]
    with pytest.raises(ValueError):
        per_row, flat = anchor_frame(made)
        AnchorRows((per_row, flat.head(1)), [0])


def test_anchor_rows_written_back_as_frames_equal_their_anchors():
    """Statistics from the cache write their anchors back (kept anew) without making every anchor:
    the frames of the kept rows, entries read again from their texts and rows appended since."""
    import random

    from kbtools.linker.anchors import AnchorRows, anchor_frame, anchors_of

    texts = [f"Pump {i} at Plant North stops with error E-{i}{i}; the valve on line {i % 5} sticks." for i in range(40)]
    made = anchors_of(texts + ["", "Green tea."], [()] * 42)
    rng = random.Random(7)
    for _ in range(30):
        rows = [rng.choice([None, *range(42)]) for _ in range(rng.randint(0, 25))]
        lazy = AnchorRows(anchor_frame(made), rows)
        filled = {i: made[rng.randrange(42)] for i in lazy.missing().tolist()}
        lazy = lazy.filled(filled) + tuple(made[rng.randrange(42)] for _ in range(rng.randint(0, 3)))
        if rows and rng.random() < 0.5:
            lazy[rng.randrange(len(rows))]  # some anchors made already
        back = AnchorRows(lazy.frames(), list(range(len(lazy)))).to_list()
        assert back == list(lazy) and None not in back
        assert all(a.equals(b) for a, b in zip(lazy.frames(), anchor_frame(list(lazy))))
