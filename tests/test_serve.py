"""Serving like an embedded database: agents that add and query in a loop see every new entry at
once, with no rebuild of the index and no copy of the whole vector array; a cold process reads the
index file memory-mapped and never loads MiniLM for a query whose vector is given."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.demo import synthetic_bank
from kbtools.ops.interchange import import_frames
from kbtools.retrieval.index import VectorIndex
from kbtools.retrieval.search import bank_index
from kbtools.store.vectors import SegmentedVectors, entry_vectors, vector_blocks


@pytest.fixture(scope="module")
def bank20k(tmp_path_factory):
    demo = synthetic_bank(entries=20_000, seed=3)
    bank = kb.create_bank(tmp_path_factory.mktemp("serve") / "b20k", embedder=None)
    import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
    kb.embed_bank(bank, embedder="hashing")
    bank.compact(sweep_age=0)
    return bank


@pytest.fixture
def bank(bank20k, tmp_path):
    shutil.copytree(bank20k.path, tmp_path / "b")
    return kb.open_bank(tmp_path / "b")


@pytest.mark.slow
def test_agents_adding_and_querying_in_a_loop_see_no_stall(bank):
    kb.query(bank, "warm the index", record_usage=False)  # the one build (or cache read) of this process
    builds = VectorIndex.builds
    for i in range(100):  # 200 alternating adds and queries
        phrase = f"zyxel{i:03d} quokka{i:03d} retention window for shard {i:03d}"
        new = kb.report_learning(bank, content=f"The {phrase} is seven days.", actor=f"agent-{i % 3}", link=False)
        ans = kb.query(bank, phrase, k=8)
        assert ans.ids(), f"query {i} answered nothing"
        assert new in ans.ids(), f"query {i} did not see the entry added just before it"
    assert VectorIndex.builds == builds, "an add rebuilt the whole index"
    assert bank.entries.height == 20_100
    assert len(entry_vectors(bank)[0]) == 20_100
    assert bank_index(bank).size == bank.entries.filter(pl.col("status") == "active").height


def test_a_report_grows_what_the_process_queried_with_and_the_query_after_it_reads_it(bank, monkeypatch):
    grown = []
    add = VectorIndex.add

    def counted(self, ids, vectors, **options):
        grown.append(list(ids))
        return add(self, ids, vectors, **options)

    monkeypatch.setattr(VectorIndex, "add", counted)
    new = kb.report_learning(bank, content="The quokka shard keeps nine days.", actor="a", link=False)
    assert grown == []  # nothing queried yet: nothing built
    kb.query(bank, "warm the index", record_usage=False)
    grown.clear()
    newer = kb.report_learning(bank, content="The zyxel shard keeps ten days.", actor="a", link=False)
    assert grown == [[newer]]  # grown by the write, after its commit
    ans = kb.query(bank, "zyxel shard keeps ten days", k=8, record_usage=False)
    assert grown == [[newer]] and newer in ans.ids()  # the query read the grown index as it was
    assert new in kb.query(bank, "quokka shard keeps nine days", k=8, record_usage=False).ids()


def test_a_report_through_the_agent_door_grows_the_snapshot_its_queries_read(bank, monkeypatch):
    from kbtools.mcp.door import Door

    door = Door(bank.path, actor="agent")
    door.query("warm the index")
    grown = []
    add = VectorIndex.add
    monkeypatch.setattr(VectorIndex, "add", lambda self, ids, vectors, **o: (grown.append(list(ids)),
                                                                             add(self, ids, vectors, **o))[1])
    _, stored = door.report_learning(content="The wombat shard keeps eleven days.")
    assert grown == [[stored["id"]]]  # the reading snapshot grew inside the report
    _, answer = door.query("wombat shard keeps eleven days")
    assert grown == [[stored["id"]]] and stored["id"] in [r["id"] for r in answer["results"]]


def test_vectors_are_read_in_place_not_concatenated(bank):
    for i in range(3):
        kb.report_learning(bank, content=f"Fact {i} about the warm pool.", actor="a", link=False)
    from kbtools.store.vectors import CodedVectors

    def stored(part):  # the arrays a segment is read from (a coded one: its codes and its distinct vectors)
        return [part.codes, part.table] if isinstance(part, CodedVectors) else [part]

    ids, data = entry_vectors(bank)
    assert isinstance(data, SegmentedVectors) and len(data.parts) == 4
    assert all(isinstance(a, np.memmap) for a in stored(data.parts[0]))  # mapped, not read into memory
    # the three small segments this process just wrote are taken as written, not read back
    assert not any(isinstance(p, np.memmap) for p in data.parts[1:])
    assert not any(a.flags.writeable for p in data.parts for a in stored(p))
    reopened = entry_vectors(kb.open_bank(bank.path, readonly=True))[1]
    assert all(isinstance(a, np.memmap) for p in reopened.parts for a in stored(p))  # a fresh open maps every segment
    assert np.array_equal(np.asarray(reopened), np.asarray(data))
    full = np.asarray(data)
    assert full.shape == (bank.entries.height, 4, 384)
    pick = np.array([len(ids) - 1, 0, 5])
    assert np.array_equal(data[pick], full[pick]) and np.array_equal(data[pick, 0, :], full[pick, 0, :])


def test_a_re_embedded_entry_replaces_its_vector(bank):
    first = bank.entries["id"][0]
    kb.update_entry(bank, first, actor="t", reason="rewritten", content="Zebra herds cross the llama farm.")
    kb.embed_bank(bank)
    ids, data = entry_vectors(bank)
    assert (ids == first).sum() == 1 and len(ids) == bank.entries.height
    assert kb.query(bank, "zebra herds llama farm", record_usage=False, fold=False).ids()[0] == first


def test_a_cold_process_maps_the_index_file_and_never_loads_minilm(bank):
    kb.query(bank, "warm", record_usage=False)  # builds and writes the index file (20k >= 5000)
    assert sorted(p.name for p in (bank.path / "cache").glob("index-flat.kbx*")) == [
        "index-flat.kbx", "index-flat.kbx.ids.npy", "index-flat.kbx.json"]
    q = kb.retrieval.get_embedder("hashing").encode(["retention window shard"])[0].tolist()
    script = f"""
import json, sys, numpy as np, kbtools as kb
from kbtools.retrieval.index import VectorIndex
from kbtools.retrieval.search import bank_index
bank = kb.open_bank({str(bank.path)!r})
ans = kb.query(bank, "retention window shard", query_vector=np.array({q}, np.float32), record_usage=False)
light = not any(m in sys.modules for m in ("scipy", "sklearn", "igraph", "onnxruntime"))
idx = bank_index(bank)
new = kb.report_learning(bank, content="The quokka ledger closes at noon.", actor="a", link=False)
after = kb.query(bank, "quokka ledger closes noon", record_usage=False, fold=False).ids()
print(json.dumps({{"ids": ans.ids(), "builds": VectorIndex.builds, "mapped": idx.mapped,
                  "onnx": "onnxruntime" in sys.modules, "new_first": after[0] == new,
                  "grown": bank_index(bank) is idx, "light": light}}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ids"] and got["builds"] == 0 and got["mapped"]
    assert not got["onnx"], "a query with its vector given loaded MiniLM"
    assert got["light"], "a query with its vector given imported scipy, scikit-learn, igraph or onnxruntime"
    assert got["new_first"] and got["grown"]  # the mapped index grew by its side index


def test_a_damaged_index_file_is_rebuilt_never_used(bank):
    kb.query(bank, "warm", record_usage=False)
    want = kb.query(bank, "retention window shard", record_usage=False, fold=False).ids()
    path = bank.path / "cache" / "index-flat.kbx"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    fresh = kb.open_bank(bank.path)
    builds = VectorIndex.builds
    assert kb.query(fresh, "retention window shard", record_usage=False, fold=False).ids() == want
    assert VectorIndex.builds == builds + 1


def _retimed(root, ns: int) -> None:
    """Every file of the bank given another modification time, as ``cp -r`` or a download leaves them."""
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, ns=(ns, ns))


def test_a_bank_copied_without_its_times_keeps_its_caches(bank):
    kb.query(bank, "warm", record_usage=False)  # writes the index file
    want = kb.query(bank, "retention window shard", record_usage=False, fold=False).ids()
    _retimed(bank.path, 1_600_000_000 * 10**9)
    builds = VectorIndex.builds
    copied = kb.open_bank(bank.path)
    assert kb.query(copied, "retention window shard", record_usage=False, fold=False).ids() == want
    assert VectorIndex.builds == builds  # the index file read, not rebuilt
    assert copied.seen_files.hashed > 0  # its files hashed once, found as recorded
    again = kb.open_bank(bank.path)  # a later process stats them only
    assert kb.query(again, "retention window shard", record_usage=False, fold=False).ids() == want
    assert again.seen_files.hashed == 0 and VectorIndex.builds == builds
    assert kb.check_bank(bank.path) == []


def test_a_read_only_bank_copied_without_its_times_hashes_its_files_and_writes_nothing(bank):
    kb.query(bank, "warm", record_usage=False)
    _retimed(bank.path, 1_600_000_000 * 10**9)
    before = sorted(p.relative_to(bank.path).as_posix() for p in bank.path.rglob("*") if p.is_file())
    builds = VectorIndex.builds
    reader = kb.open_bank(bank.path, readonly=True)
    kb.query(reader, "retention window shard", record_usage=False)
    assert reader.seen_files.hashed > 0 and VectorIndex.builds == builds
    assert sorted(p.relative_to(bank.path).as_posix() for p in bank.path.rglob("*") if p.is_file()) == before


def test_a_copied_segment_whose_bytes_changed_is_still_seen(bank):
    kb.query(bank, "warm", record_usage=False)
    _retimed(bank.path, 1_600_000_000 * 10**9)
    path = max((p for p in (bank.path / "vectors").glob("*.npy")), key=lambda p: p.stat().st_size)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # the same size, another time and another byte
    path.write_bytes(bytes(data))
    builds = VectorIndex.builds
    kb.query(kb.open_bank(bank.path), "retention window shard", record_usage=False, fold=False)
    assert VectorIndex.builds == builds + 1  # the index built over the old bytes is not used


def test_a_query_on_a_read_only_file_system_answers_without_keeping_its_index(bank):
    """A bank on a read-only mount: the first query builds its index in memory (the cache file
    cannot be written) and answers; nothing is left in the bank."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not available to mount a read-only file system")
    for p in (bank.path / "cache").glob("index-*"):
        p.unlink()
    script = ("import sys\nimport kbtools as kb\n"
              "print(len(kb.query(kb.open_bank(sys.argv[1]), 'retention window shard', record_usage=False).ids()))")
    cmd = f"mount --bind -o ro {bank.path} {bank.path} || exit 99; exec {sys.executable} -c \"$KB_CHILD\" {bank.path}"
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KB_CHILD": script})
    if proc.returncode == 99 or "unshare" in proc.stderr:
        pytest.skip(f"cannot mount read-only here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip().splitlines()[-1]) > 0
    assert not list((bank.path / "cache").glob("*index-*"))


def test_segmented_vectors_on_empty_and_mixed_input():
    empty = SegmentedVectors([])
    assert len(empty) == 0 and np.asarray(empty).shape[0] == 0
    a, b = np.zeros((2, 4, 3), np.float32), np.ones((3, 4, 3), np.float32)
    view = SegmentedVectors([a, b], rows=np.array([1, 4]))
    assert view.shape == (2, 4, 3) and view[np.array([True, False])].sum() == 0 and view[1].sum() == 12


def test_the_embedding_cache_keeps_few_shards_under_single_entry_writes(tmp_path):
    from kbtools.store.embed_cache import MERGE_SMALL, EmbeddingCache

    cache = EmbeddingCache("test-embedder", root=tmp_path)
    for h in range(3 * MERGE_SMALL):  # one shard per write, as report_learning makes them
        cache.put(np.array([h], dtype=np.uint64), np.full((1, 4, 2), h, np.float32))
    assert len(list((tmp_path / "vectors" / "test-embedder").glob("*.hashes.npy"))) < MERGE_SMALL
    found, vecs = cache.get(np.arange(3 * MERGE_SMALL, dtype=np.uint64))
    assert found.all() and vecs[:, 0, 0].tolist() == list(range(3 * MERGE_SMALL))


def test_the_embedding_cache_never_rewrites_a_big_shard_when_it_merges_small_ones(tmp_path):
    """A bank's embedding job writes one shard of many entries: its hashes file is small (8 bytes an
    entry) but its vectors are not, and merging the single-entry shards of later writes must leave
    it alone (it was read and written again by every merge)."""
    from kbtools.store.embed_cache import MERGE_SMALL, SMALL_SHARD_BYTES, EmbeddingCache

    cache = EmbeddingCache("test-embedder", root=tmp_path)
    rows = SMALL_SHARD_BYTES // (4 * 8 * 4) + 1  # vectors just over the small size, hashes far under it
    cache.put(np.arange(rows, dtype=np.uint64) + 10_000, np.ones((rows, 4, 8), np.float32))
    folder = tmp_path / "vectors" / "test-embedder"
    (big,) = folder.glob("*.vectors.npy")
    before = big.stat()
    for h in range(2 * MERGE_SMALL):
        cache.put(np.array([h], dtype=np.uint64), np.full((1, 4, 8), h, np.float32))
    after = big.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert len(list(folder.glob("*.hashes.npy"))) < MERGE_SMALL
    found, vecs = cache.get(np.array([0, 2 * MERGE_SMALL - 1, 10_000, 10_000 + rows - 1], dtype=np.uint64))
    assert found.all() and vecs[:2, 0, 0].tolist() == [0, 2 * MERGE_SMALL - 1]


def test_a_fresh_process_after_writes_grows_the_cached_index_instead_of_rebuilding(bank):
    kb.query(bank, "warm the index", record_usage=False)  # builds the index and writes its cache file
    new = kb.report_learning(bank, content="The zyxel quokka retention window is nine days.", actor="a", link=False)
    gone = bank.entries["id"][5]
    kb.update_entry(bank, gone, status="archived", actor="a")
    builds = VectorIndex.builds
    fresh = kb.open_bank(bank.path, readonly=True)  # another process: only the file on disk
    idx = bank_index(fresh)
    assert VectorIndex.builds == builds, "the cached index was rebuilt instead of grown"
    live = set(idx.live_ids().tolist())
    assert new in live and gone not in live and idx.n_dead == 1  # masked in place
    assert idx.size == fresh.entries.filter(pl.col("status") == "active").height
    assert new in kb.query(fresh, "zyxel quokka retention window", k=8, record_usage=False).ids()


def test_a_compaction_keeps_the_cached_query_index(bank):
    """``kb compact`` folds the vector segments into one holding the same vectors: the index cached
    over the earlier ones is read and grown by the entries appended since, not rebuilt, and answers
    as a rebuilt one does."""
    kb.query(bank, "warm the index", record_usage=False)  # the index over the bank's segments, cached
    new = kb.report_learning(bank, content="The zyxel quokka retention window is nine days.", actor="a", link=False)
    report = kb.open_bank(bank.path).compact()
    assert report["vectors"]["segments"] == 1 and report["vectors"]["caches_kept"] >= 1
    builds = VectorIndex.builds
    fresh = kb.open_bank(bank.path, readonly=True)
    idx = bank_index(fresh)
    assert VectorIndex.builds == builds, "the cached index was rebuilt after a compaction"
    assert new in set(idx.live_ids().tolist()) and idx.size == fresh.entries.filter(pl.col("status") == "active").height
    questions = ["zyxel quokka retention window", "warm the index", fresh.entries["title"][7]]
    carried = [kb.query(fresh, q, k=8, record_usage=False).ids() for q in questions]
    shutil.rmtree(bank.path / "cache")
    rebuilt = kb.open_bank(bank.path, readonly=True)
    assert [kb.query(rebuilt, q, k=8, record_usage=False).ids() for q in questions] == carried
    assert VectorIndex.builds == builds + 1 and new in carried[0]


def test_a_compaction_does_not_keep_a_query_index_whose_entry_was_re_embedded(bank):
    kb.query(bank, "warm the index", record_usage=False)
    eid = bank.entries.filter(pl.col("status") == "active")["id"][11]
    kb.update_entry(bank, eid, content="The zyxel quokka retention window is nine days.", actor="a")
    assert kb.embed_bank(bank)["embedded"] == 0  # the update embedded the new text in its own write
    assert kb.open_bank(bank.path).compact()["vectors"]["caches_kept"] >= 1
    builds = VectorIndex.builds
    fresh = kb.open_bank(bank.path, readonly=True)
    ids = kb.query(fresh, "zyxel quokka retention window", k=8, record_usage=False).ids()
    assert ids[0] == eid and len(set(ids)) == len(ids)
    # carried, seen stale: the entry's old row is masked and its new vector added, never rebuilt
    assert VectorIndex.builds == builds and bank_index(fresh).size == fresh.entries.height


def test_a_few_vector_rows_are_read_without_mapping_them_and_equal_the_mapped_rows(bank, monkeypatch):
    from kbtools.store.vectors import VectorBlocks

    kb.report_learning(bank, content="One more segment to read from.", actor="a", link=False)
    blocks = vector_blocks(bank)
    positions = np.random.default_rng(0).integers(0, len(blocks.ids), 40)
    positions[-1] = len(blocks.ids) - 1  # a row of the newest segment
    preads = []
    monkeypatch.setattr(os, "pread", lambda fd, n, at, real=os.pread: preads.append(at) or real(fd, n, at))
    read = blocks.rows(positions)
    # read through descriptors, a row at a time (a segment storing each distinct vector once: a
    # distinct vector at a time, at most one a search dimension), not the map
    took = len(preads)
    assert len(positions) <= took <= 4 * len(positions)
    monkeypatch.setattr(VectorBlocks, "PREAD_ROWS", -1)
    mapped = blocks.rows(positions)
    assert len(preads) == took  # through the map: no pread
    assert read.dtype == mapped.dtype and np.array_equal(read, mapped)


def _plain_fold(bank, text):
    """The oracle: the same pool folded over the whole edge frame and the active entries."""
    from kbtools.retrieval.search import ranked_pool

    pool = ranked_pool(bank, text)
    active = bank.entries.filter(pl.col("status") == "active").select("id", "title", "summary", "kind")
    return kb.fold(pool, bank.edges, entries=active, query=text).to_dict()


@pytest.mark.parametrize("sidecar", [True, False], ids=["edge sidecar", "edge frame"])
def test_a_query_after_an_add_link_unlink_or_delete_reads_the_fold_edges_without_rebuilding(bank, sidecar):
    """With the compaction's edge sidecar or without it (a bank never fully compacted: the first
    query builds the lookup from the edge frame once), a query after any write applies what the
    write wrote to the fold's edges and folds as a fresh build over the whole edge frame does."""
    from kbtools.retrieval.folding import EdgeLookup
    from kbtools.retrieval.pipeline import edge_lookup

    if not sidecar:
        for path in (bank.path / "cache").glob("edges-ends*"):
            path.unlink()
        bank = kb.open_bank(bank.path)
    kb.query(bank, "warm the fold", record_usage=False)
    builds = EdgeLookup.builds
    phrase = "zyxel quokka retention window for the cold shard"
    new = kb.report_learning(bank, content=f"The {phrase} is seven days.", actor="a", link=False)
    ans = kb.query(bank, phrase, record_usage=False)
    assert ans.ids()[0] == new and ans.to_dict() == _plain_fold(bank, phrase)

    # link the new entry to its nearest pool members and to an entry far outside the pool
    pool = ans.ids()
    far = bank.entries.filter(~pl.col("id").is_in(pool))["id"][0]
    kb.link(bank, pool[3], new, "corrects", actor="a", note="the window changed")
    kb.link(bank, new, far, "cites", actor="a", note="where the window is set")
    ans = kb.query(bank, phrase, record_usage=False)
    assert ans.to_dict() == _plain_fold(bank, phrase)
    assert pool[3] in [p.id for r in ans.results for p in r.related], "the new corrects edge did not fold"
    assert far in [p.id for r in ans.results for p in r.neighbors], "the new cites edge is not a neighbour"

    kb.unlink(bank, new, far, "cites", reason="wrong target", actor="a")
    ans = kb.query(bank, phrase, record_usage=False)
    assert ans.to_dict() == _plain_fold(bank, phrase)
    assert far not in [p.id for r in ans.results for p in r.neighbors]

    # a delete bridges X -> deleted -> Y and removes the deleted entry's edges
    kb.link(bank, new, far, "see_also", actor="a")
    kb.delete_entry(bank, new, reason="superseded by the runbook", actor="a")
    ans = kb.query(bank, phrase, record_usage=False)
    assert new not in ans.ids() and ans.to_dict() == _plain_fold(bank, phrase)
    lookup = edge_lookup(bank)
    assert lookup.touching([new]) == [], "a deleted entry's edges are still folded"
    assert EdgeLookup.builds == builds, "a write rebuilt the fold's edge lookup from the whole edge frame"
    whole = EdgeLookup.build(bank.edges)  # the plain build over the current edge frame holds the same rows
    assert len(lookup) == len(whole) and lookup.rows == whole.rows


@pytest.mark.parametrize("embedder, cached", [("hashing", False), ("minilm-static", False), ("minilm-int8", True)])
def test_a_write_keeps_its_vectors_in_the_text_cache_only_when_embedding_costs_more(tmp_path, monkeypatch,
                                                                                      embedder, cached):
    """The cache by text hash spares MiniLM a re-embed; for the static table and hashing a look-up
    costs more than embedding, so their writes neither search nor fill it."""
    monkeypatch.setenv("KBTOOLS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KBTOOLS_EMBED_CACHE", "1")
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder=embedder)
    kb.report_learning(bank, content="Drain the payments queue before a deploy.", actor="t")
    shards = list((tmp_path / "cache").rglob("*.hashes.npy"))
    assert bool(shards) is cached
    assert kb.query(bank, "payments queue deploy", record_usage=False).ids()  # embedded in the write either way


def test_a_bulk_embed_keeps_its_vectors_in_the_text_cache_with_any_embedder(tmp_path, monkeypatch):
    """Re-embedding a bank (a rebuild, a copy) is what the cache spares, cheap embedder or not."""
    from kbtools.ops.embedding import CACHE_FROM_ROWS

    monkeypatch.setenv("KBTOOLS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KBTOOLS_EMBED_CACHE", "1")
    demo = synthetic_bank(entries=CACHE_FROM_ROWS + 36, seed=5)
    outs = []
    for name in ("one", "two"):
        bank = kb.create_bank(tmp_path / name, embedder=None)
        import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
        outs.append(kb.embed_bank(bank, embedder="minilm-static"))
    assert outs[0]["from_cache"] == 0 and outs[1]["from_cache"] == demo.entries.height
