"""The store: create/open, snapshots and reload, segments, compaction, caches, vectors, write cost."""

from __future__ import annotations

import json
import os

import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.model.schema import SCHEMAS
from kbtools.store import caches
from kbtools.store.compaction import TAIL_SEGMENTS
from kbtools.store.caches import cache_file, cached_file_meta, read_cache, write_cache, write_cache_file
from kbtools.store.segments import segment_files
from kbtools.store.vectors import embedder_name, entry_vectors, vector_blocks, vector_segments


def test_create_then_open(tmp_path):
    bank = kb.create_bank(tmp_path / "eng")
    again = kb.open_bank(tmp_path / "eng")
    assert again.version == 0
    for name, schema in SCHEMAS.items():
        assert dict(again.table(name).schema) == schema


def test_create_refuses_existing_bank(tmp_path):
    kb.create_bank(tmp_path / "eng")
    with pytest.raises(kb.BankExists, match="already there"):
        kb.create_bank(tmp_path / "eng")


def test_create_refuses_non_empty_folder(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("hi")
    with pytest.raises(kb.BankExists, match="not an empty folder"):
        kb.create_bank(tmp_path / "x")


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "no bank.json"),
        (lambda p: p.write_text("x"), "a file, not a folder"),
        (lambda p: (p.mkdir(), (p / "bank.json").write_text("{not json")), "unreadable"),
        (lambda p: (p.mkdir(), (p / "bank.json").write_text('{"format": "other"}')), "format='other'"),
    ],
)
def test_open_names_the_path_when_not_a_bank(tmp_path, make, why):
    path = tmp_path / "nb"
    make(path)
    with pytest.raises(kb.NotABank) as err:
        kb.open_bank(path)
    assert str(path) in str(err.value) and why in str(err.value)


def test_snapshot_until_reload(tmp_path):
    writer = kb.create_bank(tmp_path / "b")
    reader = kb.open_bank(tmp_path / "b")
    kb.report_learning(writer, content="Fact one.", actor="a")
    assert reader.entries.height == 0
    assert reader.reload().entries.height == 1


def test_each_write_adds_segments_not_rewrites(small_bank):
    files = segment_files(small_bank)
    assert len(files["entries"]) == 3  # one small segment per write
    first = small_bank.path / files["entries"][0]
    before = first.stat().st_mtime_ns
    kb.report_learning(small_bank, content="Another fact.", actor="a")
    assert (small_bank.path / files["entries"][0]).stat().st_mtime_ns == before
    assert segment_files(small_bank)["entries"][:3] == files["entries"]


def test_compaction_keeps_content_and_makes_plain_parquet(small_bank):
    before = {t: small_bank.table(t).sort(small_bank.table(t).columns[0]) for t in ("entries", "edges")}
    kb.delete_entry(small_bank, small_bank.ids[2], reason="test", actor="judge")
    report = small_bank.compact()
    assert report["tables"]["entries"]["segments_after"] == 1
    again = kb.open_bank(small_bank.path)
    assert again.entries.height == before["entries"].height - 1
    # a compacted table is one Parquet file any reader opens as the table
    raw = pl.read_parquet(small_bank.path / segment_files(again)["entries"][0])
    assert raw.height == again.entries.height
    assert set(SCHEMAS["entries"]) <= set(raw.columns)


def test_tail_segments_merge_automatically(bank):
    for i in range(TAIL_SEGMENTS + 3):
        kb.report_learning(bank, content=f"Fact number {i}.", actor="a")
    assert len(segment_files(bank)["entries"]) <= TAIL_SEGMENTS + 1
    assert kb.open_bank(bank.path).entries.height == TAIL_SEGMENTS + 3
    assert kb.check_bank(bank.path) == []


def test_a_tail_merge_reads_back_no_segment_its_process_wrote(tmp_path, monkeypatch):
    from kbtools.store import compaction, segments

    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char", settings={"auto_link": False})
    kb.report_learning(bank, content="The first fact.", actor="a")
    reads = []
    for module in (segments, compaction):
        monkeypatch.setattr(module, "read_segment", lambda *a, _read=segments.read_segment: reads.append(a) or _read(*a))
    for i in range(3 * TAIL_SEGMENTS):
        kb.report_learning(bank, content=f"Fact number {i} of the burst.", actor="a")
    assert len(segment_files(bank)["events"]) <= TAIL_SEGMENTS + 1  # merged, from the rows held in memory
    assert reads == []
    again = kb.open_bank(bank.path)  # what the merges wrote is what was written
    assert again.entries.height == 3 * TAIL_SEGMENTS + 1 and again.events.height == bank.events.height
    assert kb.check_bank(bank.path) == []


def test_vector_segments_merge_automatically_and_keep_every_vector(tmp_path):
    bank = kb.create_bank(tmp_path / "v", embedder="hashing-char", settings={"auto_link": False})
    written = {}  # each id's vector as read right after the write that gave it
    ids = []
    for i in range(3 * TAIL_SEGMENTS):
        ids.append(kb.report_learning(bank, content=f"Vector fact number {i} about shard {i * 7}.", actor="a"))
        if i % 9 == 4:  # a later vector of an earlier entry
            kb.update_entry(bank, ids[i // 2], actor="a", content=f"Vector fact {i // 2}, rewritten at {i}.")
        got, data = entry_vectors(bank)
        for eid in {ids[-1], ids[i // 2]}:
            written[eid] = np.asarray(data[[got.tolist().index(eid)]])[0]
    segs = vector_segments(bank)
    assert len(segs) <= TAIL_SEGMENTS + 1  # one per write otherwise
    assert any(seg.get("holds") for seg in segs)
    for reader in (bank, kb.open_bank(bank.path)):  # this process, and a fresh one reading the files
        got, data = entry_vectors(reader)
        assert sorted(got.tolist()) == sorted(ids)
        for eid, row in zip(got.tolist(), np.asarray(data)):
            assert np.array_equal(row, written[eid]), eid
    assert kb.check_bank(bank.path) == []
    bank.compact(sweep_age=0)
    assert len(vector_segments(bank)) == 1 and kb.check_bank(bank.path) == []


def test_a_compacted_bank_stores_each_distinct_vector_once(tmp_path):
    from kbtools.store.vectors import CodedVectors, load_npy, segment_data

    bank = kb.create_bank(tmp_path / "c", embedder="hashing-char", settings={"auto_link": False})
    kb.ops.import_frames(bank, entries=kb.demo.synthetic_bank(entries=300, seed=3).entries, actor="t", guard=False)
    for i in range(5):  # entries whose useful_for, systems and tasks are empty: one vector each, shared
        kb.report_learning(bank, content=f"A bare fact number {i} about the night shift.", actor="t")
    ids, data = entry_vectors(bank)
    before = dict(zip(ids.tolist(), np.asarray(data)))
    meta = json.loads((bank.path / "bank.json").read_text())  # a bank an older kbtools made
    (bank.path / "bank.json").write_text(json.dumps({**meta, "version": 1}))
    bank.compact(sweep_age=0)
    (seg,) = vector_segments(bank)
    assert seg.get("codes") and isinstance(segment_data(bank, seg), CodedVectors)
    distinct = load_npy(bank.path, seg, "data")
    assert len(distinct) < 4 * len(ids)  # the repeated dimensions are stored once
    for reader in (bank, kb.open_bank(bank.path, readonly=True)):
        got, vectors = entry_vectors(reader)
        assert sorted(got.tolist()) == sorted(before)
        for eid, row in zip(got.tolist(), np.asarray(vectors)):
            assert np.array_equal(row, before[eid]), eid
        blocks = vector_blocks(reader, block=97)
        assert np.array_equal(np.concatenate([b for _, b in blocks]), np.asarray(vectors))
    assert json.loads((bank.path / "bank.json").read_text())["version"] == 2  # what it now needs to be read
    assert kb.check_bank(bank.path) == []
    assert kb.query(bank, "a bare fact number 3 about the night shift", fold=False).ids()
    codes = load_npy(bank.path, seg, "codes")  # damage: a code past the distinct vectors
    codes = np.array(codes)
    codes[0, 0] = len(distinct) + 5
    np.save(bank.path / seg["codes"], codes)
    with pytest.raises(kb.BankDamaged, match="codes"):
        entry_vectors(kb.open_bank(bank.path, readonly=True))
    (bank.path / seg["codes"]).unlink()  # a missing codes file is named, by a read and by kb check
    assert any(p.value == seg["codes"] for p in kb.check_bank(bank.path))
    with pytest.raises(kb.BankDamaged, match="missing"), pytest.warns(UserWarning, match="moved to the newest"):
        entry_vectors(kb.open_bank(bank.path, readonly=True))  # (first taken for a sweep, then named)


def test_vectors_that_differ_only_in_the_sign_of_zeros_are_stored_apart():
    from kbtools.store.vectors import coded

    data = np.zeros((200, 4, 8), np.float16)
    data[:, 0, 0] = np.arange(200)
    data[7, 1, [2, 5]] = -0.0  # its bytes differ from the zero vector's in two sign bits only
    codes, table = coded(data)
    assert np.array_equal(table[codes].view(np.uint16), data.view(np.uint16))  # bit for bit
    assert len(table) == 201  # 200 first vectors (the first is the zero vector), the signed one


def test_settings_and_vectors_roundtrip(bank):
    a = kb.report_learning(bank, content="Fact.", actor="a")
    from kbtools.model.plan import Plan

    vec = np.ones((1, 4, 8), dtype=np.float32)
    bank.apply(lambda b: Plan(vectors=(np.array([a]), vec, "test-embedder"), settings={"embedder": "test-embedder"}))
    again = kb.open_bank(bank.path)
    ids, data = entry_vectors(again)
    assert ids.tolist() == [a] and data.shape == (1, 4, 8)
    assert embedder_name(again) == "test-embedder" and again.settings["embedder"] == "test-embedder"
    with pytest.raises(kb.KbError, match="cannot join"):
        bank.apply(lambda b: Plan(vectors=(np.array([a]), vec, "other")))


def test_cache_is_refused_when_fingerprint_differs(bank):
    write_cache(bank, "index.faiss", "fp-1", b"abc")
    assert read_cache(bank, "index.faiss", "fp-1") == b"abc"
    assert read_cache(bank, "index.faiss", "fp-2") is None


@pytest.mark.parametrize("whole", [True, False])
def test_a_cache_file_sealed_whole_is_refused_after_a_change_in_its_middle(bank, whole):
    """A seal of the whole file hashes every byte; the default seal (size, time, first and last
    MiB) does not see a change in the middle of a large file that keeps its size and time."""
    write_cache_file(bank, "big.bin", "fp", lambda p: p.write_bytes(bytes(5 << 20)), whole=whole)
    path = cache_file(bank, "big.bin", "fp")
    stamp = path.stat().st_mtime_ns
    with open(path, "r+b") as f:
        f.seek(5 << 19)
        f.write(b"\x01")
    os.utime(path, ns=(stamp, stamp))
    assert (cache_file(bank, "big.bin", "fp") is None) is whole
    write_cache_file(bank, "big.bin", "fp", lambda p: p.write_bytes(bytes(5 << 20)), whole=whole)
    assert cache_file(bank, "big.bin", "fp") is not None  # written again: used


def test_one_write_costs_what_it_writes_at_scale(tmp_path):
    """Adding one entry to a 20k bank writes a one-row segment; the table is not rewritten."""
    from kbtools.demo import synthetic_bank

    demo = synthetic_bank(entries=20_000, seed=3)
    bank = kb.create_bank(tmp_path / "big", embedder=None)
    kb.ops.import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
    base = bank.path / segment_files(bank)["entries"][0]
    size, mtime = base.stat().st_size, base.stat().st_mtime_ns
    kb.report_learning(bank, content="One more fact about the cache.", actor="a", link=False)
    new = bank.path / segment_files(bank)["entries"][-1]
    assert base.stat().st_mtime_ns == mtime and base.stat().st_size == size
    assert pl.read_parquet(new).height == 1
    assert new.stat().st_size < size / 50


def test_rows_keep_their_place_when_updated(bank):
    ids = [kb.report_learning(bank, content=f"Fact number {i}.", actor="a") for i in range(5)]
    kb.update_entry(bank, ids[1], actor="a", title="changed")
    kb.delete_entry(bank, ids[3], reason="gone", actor="a")
    new = kb.report_learning(bank, content="A new fact.", actor="a")
    want = [ids[0], ids[1], ids[2], ids[4], new]
    assert bank.entries["id"].to_list() == want
    assert kb.open_bank(bank.path).entries["id"].to_list() == want  # read from all segments at once
    for i in range(TAIL_SEGMENTS + 2):  # through a tail merge
        kb.update_entry(bank, ids[2], actor="a", title=f"t{i}")
    again = kb.open_bank(bank.path)
    assert again.entries["id"].to_list() == want
    assert again.entries.filter(pl.col("id") == ids[2])["title"][0] == f"t{TAIL_SEGMENTS + 1}"
    bank.compact()
    assert kb.open_bank(bank.path).entries["id"].to_list() == want


# ------------------------------------------------------------------ the entry-id set of an open bank


def _id_bank(tmp_path, n=40):
    bank = kb.create_bank(tmp_path / "ids", settings={"auto_link": False})
    return bank, [kb.report_learning(bank, content=f"Id set fact number {i}.", actor="t") for i in range(n)]


def test_the_entry_id_set_grows_on_append_without_a_rebuild(tmp_path):
    bank, ids = _id_bank(tmp_path)
    assert all(bank.has_entry(i) for i in ids)
    built = bank.id_set_counts["built"]
    added = [kb.report_learning(bank, content=f"Appended fact {i}.", actor="t") for i in range(20)]
    assert bank.id_set_counts["built"] == built  # every add grew the set: none rebuilt it
    assert bank.id_set_counts["grown"] >= 20
    assert all(bank.has_entry(i) for i in ids + added)
    assert not bank.has_entry("0badf00d") and not bank.has_entry("not-an-id")
    kb.update_entry(bank, added[0], useful_for="an update keeps every id", actor="t", reason="test")
    assert bank.has_entry(added[0]) and bank.id_set_counts["built"] == built  # no id left: still grown


def test_the_entry_id_set_sees_another_process_append_and_forgets_a_deleted_id(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    bank, ids = _id_bank(tmp_path)
    assert bank.has_entry(ids[0])
    built = bank.id_set_counts["built"]
    script = ("import kbtools as kb, sys; b = kb.open_bank(sys.argv[1]); "
              "print(kb.report_learning(b, content='Written by another process.', actor='other'))")
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PATH": "/usr/bin:/bin"}
    other = subprocess.run([sys.executable, "-c", script, str(bank.path)], capture_output=True, text=True,
                           env=env, check=True, timeout=300).stdout.strip()
    assert not bank.has_entry(other)  # this snapshot is older than the other write
    bank.reload()
    assert bank.has_entry(other) and bank.id_set_counts["built"] == built  # grown from the appended rows
    kb.delete_entry(bank, ids[3], reason="test", actor="t")
    assert not bank.has_entry(ids[3]) and bank.has_entry(ids[4])
    assert bank.id_set_counts["built"] == built + 1  # a delete rebuilds the set
    fresh = kb.open_bank(bank.path)
    assert not fresh.has_entry(ids[3]) and fresh.has_entry(other)
    with pytest.raises(kb.EntryNotFound, match=ids[3]):
        bank.require_entries([ids[4], ids[3]], where="test")
    bank.compact()
    assert not bank.has_entry(ids[3]) and all(bank.has_entry(i) for i in ids if i != ids[3])


def test_the_entry_id_set_folds_its_recent_ids_and_keeps_foreign_ids():
    from kbtools.store.segments import EntryIds

    rng = np.random.default_rng(3)
    codes = rng.choice(2**32, size=10_000, replace=False)
    ids = [f"{c:08x}" for c in codes]
    known = EntryIds(pl.Series(ids[:5000] + ["IMPORTED-1"]), (1, 5001))
    known.grow(pl.Series(ids[5000:]), (1, 10_001))  # more than FOLD_AT: folded into the array
    assert len(known.recent) == 0 and len(known.codes) == 10_000
    assert all(i in known for i in ids) and "IMPORTED-1" in known
    assert known.nbytes() < 10_000 * 5  # 4 bytes an id
    others = [f"{c:08x}" for c in rng.choice(2**32, size=2000) if f"{c:08x}" not in set(ids)]
    assert not any(i in known for i in others)
    assert "FFFFFFFF" not in known and "" not in known  # upper case is another id


def test_a_tail_merge_rewrites_only_the_small_segments(tmp_path):
    """Merged segments grow like a binary counter: a merge leaves the base and every older merged
    segment larger than what it merges alone (no write rewrites the whole table)."""
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    step = TAIL_SEGMENTS + 1
    for i in range(1 + 2 * step):  # the base, then two merges of `step` small segments
        kb.report_learning(bank, content=f"Ladder fact {i}.", actor="t")
    after_two = segment_files(bank)["entries"]
    rows = [pl.read_parquet(bank.path / s).height for s in after_two]
    assert rows == [1, 2 * step]  # the second merge took the first merged segment in (same size)
    for i in range(step):
        kb.report_learning(bank, content=f"More ladder fact {i}.", actor="t")
    after_three = segment_files(bank)["entries"]
    assert after_three[:2] == after_two  # the base and the big merged segment were not rewritten
    assert [pl.read_parquet(bank.path / s).height for s in after_three[2:]] == [step]
    assert kb.open_bank(bank.path).entries.height == 1 + 3 * step


def test_fsync_paths_syncs_files_and_folders_together_and_reports_a_failure(tmp_path):
    from kbtools.store.lock import fsync_paths

    files = [tmp_path / f"f{i}" for i in range(5)]
    for f in files:
        f.write_bytes(b"x" * 100)
    fsync_paths([*files, tmp_path])  # all at once, folders included
    with pytest.raises(FileNotFoundError):
        fsync_paths([*files, tmp_path / "gone"])  # every fsync is joined, then the failure raised



def test_segmented_vectors_read_one_kind_as_the_joined_array_does():
    """Indexing ``view[rows, kind]`` reads that vector of each row only; every form of index gives
    what the joined array gives (float16 segments, a selection, runs and gathers)."""
    from kbtools.store.vectors import SegmentedVectors

    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(n, 4, 5)).astype(np.float16) for n in (3, 7, 2)]
    joined = np.concatenate(parts).astype(np.float32)
    for rows in (None, rng.permutation(12)[:9], np.arange(2, 11)):
        view = SegmentedVectors(parts, rows)
        ref = joined if rows is None else joined[rows]
        for key in (np.array([0, 3, 1]), slice(1, 7), np.ones(len(view), bool), np.arange(len(view))):
            for rest in ((), (0,), (2,), (-1,), (1, slice(None)), (0, 3), (slice(None), 2)):
                got, want = view[(key, *rest)], ref[(key, *rest)]
                assert got.dtype == np.float32 and got.shape == want.shape and np.array_equal(got, want), (key, rest)
        assert np.array_equal(view.take(np.arange(len(view)), kind=2), ref[:, 2])
        with pytest.raises(IndexError):  # as the joined array: no kind past the fourth
            view[np.array([0]), 4]


def test_a_compaction_that_cannot_carry_a_cache_still_commits(tmp_path, monkeypatch):
    """Carrying the caches comes after the commit: a segment's ids that cannot be read then leave
    the seal as it was (the cache is rebuilt later) and the compaction returns."""
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    for i in range(3):
        kb.report_learning(bank, content=f"Kiln {i} overheats after error K-7{i}.", actor="a", link=False)
        kb.embed_bank(bank, embedder="hashing")
    first = [vector_segments(bank)[0]["data"]]
    write_cache_file(bank, "index-x.kbx", "fp", lambda p: p.write_bytes(b"index"), meta={"segments": first})
    fresh = kb.open_bank(bank.path)

    def unreadable(bank, segment):
        raise OSError("gone")

    # the folded segments' ids go unreadable for the carrying, which runs once the compaction committed
    monkeypatch.setattr(caches, "segment_ids", unreadable)
    report = fresh.compact()
    assert report["vectors"] == {"segments": 1, "rows": 3, "caches_kept": 0}
    again = kb.open_bank(bank.path)
    assert len(vector_segments(again)) == 1 and cached_file_meta(again, "index-x.kbx")[2]["segments"] == first


def test_segments_merge_as_rows_keep_their_place_new_keys_go_last_and_deleted_keys_go():
    """``merge_keyed`` applied segment after segment gives what a plain model gives: per key its
    latest row, at the place the key first appeared, new keys at the end, deleted keys gone (and
    at the end again when written anew), whatever mix of appends, updates and deletes a segment
    holds."""
    from kbtools.store.segments import merge_keyed

    rng = np.random.default_rng(5)
    keys = ("src", "dst", "type")
    merged, model, seq = None, {}, 0
    for _ in range(60):
        rows = []
        for _ in range(int(rng.integers(1, 7))):
            seq += 1
            src = None if rng.random() < 0.1 else f"e{rng.integers(6)}"  # a null key matches a null key
            key = (src, f"e{rng.integers(6)}", str(rng.choice(["cites", "see_also"])))
            rows.append({"src": key[0], "dst": key[1], "type": key[2], "note": f"n{seq}",
                         "_deleted": bool(rng.random() < 0.3), "_seq": seq})
        rows = pl.DataFrame(rows, schema={"src": pl.String, "dst": pl.String, "type": pl.String, "note": pl.String,
                                          "_deleted": pl.Boolean, "_seq": pl.Int64})
        latest = {}
        for row in rows.iter_rows(named=True):  # one segment: per key its latest row, keys in first order
            latest[(row["src"], row["dst"], row["type"])] = row
        for key, row in latest.items():
            if row["_deleted"]:
                model.pop(key, None)
            else:
                model[key] = row["note"]
        merged = merge_keyed(merged, rows, keys)
        assert list(zip(*(merged[c].to_list() for c in keys))) == list(model)
        assert merged["note"].to_list() == list(model.values())
