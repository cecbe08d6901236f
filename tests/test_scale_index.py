"""A big bank's index: built block by block from the memory-mapped segments (the same index as one
built from all the vectors in memory), and the recall parameters (lists, lists visited, candidates
re-scored exactly with the stored vectors) that the bank's index uses."""

from __future__ import annotations

import faiss
import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import ValidationError
from kbtools.retrieval.index import IVF_LISTS, IVF_NPROBE, REFINE_FACTOR, VectorIndex, combine, ivf_lists, ivf_nprobe
from kbtools.retrieval.search import bank_index
from kbtools.store.vectors import entry_vectors, vector_blocks, vector_segments


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(30, 48))
    vectors = _unit(centres[rng.integers(30, size=5000)] + 0.4 * rng.normal(size=(5000, 48)))
    return np.array([f"{i:08x}" for i in range(len(vectors))]), vectors


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """6,000 entries in three float16 segments, then 40 entries re-embedded (a fourth segment
    that wins for them) and 25 deleted."""
    mp = pytest.MonkeyPatch()
    mp.setenv("KBTOOLS_EMBED_CACHE", "0")
    from kbtools.ops import embedding

    mp.setattr(embedding, "FLOAT16_FROM", 5000)
    bank = kb.create_bank(tmp_path_factory.mktemp("scale") / "b", embedder=None)
    kb.ops.import_frames(bank, entries=kb.demo.synthetic_bank(entries=6000, seed=4).entries, actor="t", guard=False)
    kb.embed_bank(bank, embedder="hashing-char", chunk=2500)
    ids = bank.entries["id"].to_list()
    for i in ids[100:140]:
        kb.update_entry(bank, i, content=f"rewritten text of {i}: restart the queue worker", actor="t")
    kb.embed_bank(bank, embedder="hashing-char")
    for i in ids[3000:3025]:
        kb.delete_entry(bank, i, actor="t", reason="test")
    mp.undo()
    return bank


@pytest.mark.parametrize("kind", ["ivf_sq8", "flat", "sq8", "ivf"])
def test_block_wise_build_is_the_all_in_memory_index(rows, kind):
    ids, vectors = rows
    whole = VectorIndex.build(ids, vectors, kind=kind, seed=5)
    cuts = [0, 1, 700, 701, 2222, 4999, 5000]
    blocks = VectorIndex.build_blocks(ids, lambda: (vectors[a:b] for a, b in zip(cuts, cuts[1:])), dim=48,
                                      kind=kind, seed=5)
    assert bytes(faiss.serialize_index(blocks.faiss_index)) == bytes(faiss.serialize_index(whole.faiss_index))
    assert blocks.ids.tolist() == whole.ids.tolist()


def test_blocks_that_do_not_cover_the_ids_are_refused(rows):
    ids, vectors = rows
    with pytest.raises(ValidationError, match="one row per id"):
        VectorIndex.build_blocks(ids, lambda: iter((vectors[:10],)), dim=48, kind="flat")
    with pytest.raises(ValidationError, match="blocks must be"):
        VectorIndex.build_blocks(ids[:10], lambda: iter((vectors[:10, :5],)), dim=48, kind="flat")


def test_vector_blocks_are_the_vectors_without_joining_the_segments(bank):
    ids, data = entry_vectors(bank)
    assert len(vector_segments(bank)) > 3  # three chunks, then each update embedded in its own write (tails merged)
    blocks = vector_blocks(bank, block=777)
    got = list(blocks)
    assert len(got) == len(blocks) == -(-len(ids) // 777) and all(len(b[0]) <= 777 for b in got)
    assert np.concatenate([b[0] for b in got]).tolist() == ids.tolist() == blocks.ids.tolist()
    joined = np.concatenate([b[1] for b in got])
    assert joined.dtype == np.float16 and np.array_equal(joined, np.asarray(data))
    pick = np.array([5, 0, len(ids) - 1, 2600, 2600])
    assert np.array_equal(blocks.rows(pick), np.asarray(data)[pick])
    assert len(list(blocks)) == len(got)  # re-iterable: a second pass reads the files again
    active = bank.entries.filter(pl.col("status") == "active")["id"].head(100)
    assert vector_blocks(bank, ids=active).ids.tolist() == [i for i in ids.tolist() if i in set(active)]


def test_bank_index_is_built_from_blocks_as_from_all_vectors(bank):
    ids, data = entry_vectors(bank)
    active = set(bank.entries.filter(pl.col("status") == "active")["id"].to_list())
    live = np.array([i in active for i in ids.tolist()])
    streamed = bank_index(bank, kind="ivf_sq8")
    in_memory = VectorIndex.build(ids[live], combine(np.asarray(data)[live]), kind="ivf_sq8")
    assert streamed.ids.tolist() == in_memory.ids.tolist()
    assert bytes(faiss.serialize_index(streamed.faiss_index)) == bytes(faiss.serialize_index(in_memory.faiss_index))


def test_recall_parameters_are_used(bank):
    assert ivf_lists(1_000_000) == int(IVF_LISTS * 1000)
    n = 60_000  # 244 lists: a share of them passes the floor of IVF_NPROBE
    points = np.random.default_rng(0).normal(size=(n, 2)).astype(np.float32)
    built = faiss.downcast_index(VectorIndex.build(np.arange(n).astype(str), points, kind="ivf_sq8").faiss_index)
    assert (built.nlist, built.nprobe) == (ivf_lists(n), ivf_nprobe(ivf_lists(n))) and built.nprobe > IVF_NPROBE
    idx = bank_index(bank, kind="ivf_sq8")
    assert idx.refine is not None and idx.refine_factor == REFINE_FACTOR["ivf_sq8"] > 1
    ids, data = entry_vectors(bank)
    position = {i: p for p, i in enumerate(ids.tolist())}
    combined = combine(np.asarray(data))
    queries = combined[[10, 500, 4000]] + 0.01
    scores, found = idx.search(queries, 8)
    # refined: every score is the exact one from the stored vectors, best first
    exact = np.array([[combined[position[i]] @ q for i in row] for row, q in zip(found, queries)], dtype=np.float32)
    assert np.allclose(scores, exact, atol=1e-5) and (np.diff(scores, axis=1) <= 0).all()
    raw = idx.faiss_index.search(queries, 8)[0]
    assert not np.allclose(raw, exact, atol=1e-5)  # the SQ8 codes alone score differently


def test_refined_search_pads_and_breaks_ties_by_position():
    rows = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    idx = VectorIndex.build(["a", "b", "c"], rows, kind="sq8").refine_with(lambda pos: rows[pos], 4)
    scores, ids = idx.search(np.array([[1.0, 0.0]], np.float32), 5)
    assert ids.tolist() == [["a", "b", "c", "", ""]]
    assert scores[0, :3].tolist() == [1.0, 1.0, 0.0] and np.isneginf(scores[0, 3:]).all()
    with pytest.raises(ValidationError, match="factor"):
        idx.refine_with(None, -1)
    idx.add(["d"], np.array([[0.5, 0.5]], np.float32))
    assert idx.refine is None  # the source no longer covers every row


def test_exact_top_streams_the_segments_and_agrees_with_search_weighted(bank):
    from kbtools.evaluate.scale import exact_top
    from kbtools.retrieval.index import search_weighted

    ids, data = entry_vectors(bank)
    per_dim = np.asarray(data, dtype=np.float32)
    queries = combine(per_dim[[3, 2700, 5500]]) * 2
    got = exact_top(bank, queries, 8, block=1000)
    want = [set(search_weighted(per_dim, ids, q, k=8)[1].tolist()) for q in queries]
    assert [set(row.tolist()) for row in got] == want
