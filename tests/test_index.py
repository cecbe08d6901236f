"""Vector index: precombined vectors, faiss kinds against numpy brute force, exact weighted search."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.errors import StaleCache, ValidationError
from kbtools.retrieval.index import (
    DEFAULT_WEIGHTS,
    DIMENSIONS,
    INDEX_KINDS,
    VectorIndex,
    check_fingerprint,
    combine,
    recall_at_k,
    search_weighted,
)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _clustered(n: int, dim: int, clusters: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    return _unit(centres[rng.integers(clusters, size=n)] + 0.35 * rng.normal(size=(n, dim)))


def _brute(vectors: np.ndarray, ids: np.ndarray, queries: np.ndarray, k: int):
    scores = queries @ vectors.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, top, 1), ids[top]


@pytest.fixture(scope="module")
def clustered():
    vectors = _clustered(4000, 64, 40, seed=1)
    ids = np.array([f"{i:08x}" for i in range(len(vectors))])
    queries = _clustered(200, 64, 40, seed=1)  # same centres, fresh points
    return ids, vectors, queries


def test_combine_hand_example_and_identity():
    per_dim = np.zeros((2, 4, 3), np.float32)
    per_dim[0, :, 0] = 1.0                       # every dimension along x
    per_dim[1, 0, 1] = per_dim[1, 3, 2] = 1.0    # content along y, tasks along z
    combined = combine(per_dim)
    np.testing.assert_allclose(combined, [[1.0, 0, 0], [0, 0.5, 0.125]])
    assert np.all(per_dim[0, :, 0] == 1.0)       # input unchanged
    assert combine(np.zeros((0, 4, 3))).shape == (0, 3)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.floats(0, 1), min_size=4, max_size=4).filter(lambda w: sum(w) > 1e-6))
def test_query_dot_combined_is_weighted_cosine(seed, raw_weights):
    rng = np.random.default_rng(seed)
    per_dim = _unit(rng.normal(size=(6, 4, 8)))
    query = _unit(rng.normal(size=8))
    weights = dict(zip(DIMENSIONS, raw_weights))
    expected = sum(w * (per_dim[:, j] @ query) for j, w in enumerate(raw_weights))
    np.testing.assert_allclose(combine(per_dim, weights) @ query, expected, atol=1e-5)


def test_bad_weights_and_shapes_are_refused():
    with pytest.raises(ValidationError, match="dimensions must be among"):
        combine(np.zeros((1, 4, 2)), {"title": 1.0})
    with pytest.raises(ValidationError, match="not all zero"):
        combine(np.zeros((1, 4, 2)), {"content": 0.0})
    with pytest.raises(ValidationError, match=r"\(n, 4, d\)"):
        combine(np.zeros((1, 3, 2)))
    with pytest.raises(ValidationError, match="must be one of"):
        VectorIndex.build(["a"], np.ones((1, 2)), kind="lsh")
    with pytest.raises(ValidationError, match="more than once"):
        VectorIndex.build(["a", "a"], np.ones((2, 2)))


def test_flat_agrees_with_numpy_brute_force(clustered):
    ids, vectors, queries = clustered
    index = VectorIndex.build(ids, vectors)
    scores, found = index.search(queries, 10)
    want_scores, want_ids = _brute(vectors, ids, queries, 10)
    np.testing.assert_allclose(scores, want_scores, atol=1e-5)
    assert recall_at_k(found, want_ids) == 1.0
    assert (found == want_ids).mean() > 0.99  # only near-ties may swap places


@pytest.mark.parametrize("kind", ["hnsw", "sq8", "hnsw_sq8", "ivf"])
def test_approximate_kinds_recall(clustered, kind):
    ids, vectors, queries = clustered
    exact = _brute(vectors, ids, queries, 10)[1]
    found = VectorIndex.build(ids, vectors, kind=kind).search(queries, 10)[1]
    recall = recall_at_k(found, exact)
    print(f"{kind}: recall@10 = {recall:.3f}")
    assert recall > 0.9


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_serialize_round_trip(clustered, kind):
    ids, vectors, queries = clustered
    index = VectorIndex.build(ids[:1000], vectors[:1000], kind=kind, fingerprint="entries@7|minilm-int8")
    again = VectorIndex.from_bytes(index.to_bytes())
    assert (again.kind, again.fingerprint, again.size) == (kind, "entries@7|minilm-int8", 1000)
    for a, b in zip(index.search(queries[:20], 5), again.search(queries[:20], 5)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(StaleCache):
        VectorIndex.from_bytes(b"garbage")


@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_add_incremental_matches_one_build(clustered, kind):
    ids, vectors, queries = clustered
    whole = VectorIndex.build(ids[:2000], vectors[:2000], kind="flat")
    grown = VectorIndex.build(ids[:1500], vectors[:1500], kind=kind)
    grown.add(ids[1500:2000], vectors[1500:2000])
    assert grown.size == 2000
    assert recall_at_k(grown.search(queries, 10)[1], whole.search(queries, 10)[1]) > 0.9
    with pytest.raises(ValidationError, match="already in the index"):
        grown.add(ids[:1], vectors[:1])
    with pytest.raises(ValidationError, match="shape"):
        grown.add(["new"], np.ones((1, 3)))


def test_short_and_empty_index_pads():
    index = VectorIndex.build(["a", "b"], np.eye(2, dtype=np.float32))
    scores, found = index.search(np.array([[1.0, 0.0]]), 4)
    assert found.tolist() == [["a", "b", "", ""]]
    assert scores[0, 0] == 1.0 and np.all(np.isneginf(scores[0, 2:]))
    empty = VectorIndex.build([], np.zeros((0, 3)))
    assert empty.size == 0 and empty.search(np.ones((1, 3)), 2)[1].tolist() == [["", ""]]


def test_search_weighted_against_brute_force():
    rng = np.random.default_rng(3)
    per_dim = _unit(rng.normal(size=(300, 4, 16)))
    ids = np.array([f"e{i}" for i in range(300)])
    original = per_dim.copy()
    query = _unit(rng.normal(size=16))
    # default weights, one phrasing: same as the flat index over combined vectors
    scores, found = search_weighted(per_dim, ids, query, DEFAULT_WEIGHTS, k=5)
    flat_scores, flat_ids = VectorIndex.build(ids, combine(per_dim)).search(query[None], 5)
    np.testing.assert_allclose(scores, flat_scores[0], atol=1e-5)
    assert found.tolist() == flat_ids[0].tolist()
    # custom weights, one phrasing per dimension
    phrasings = _unit(rng.normal(size=(4, 16)))
    weights = {"systems": 1.0, "tasks": 3.0}
    scores, found = search_weighted(per_dim, ids, phrasings, weights, k=7)
    want = per_dim[:, 2] @ phrasings[2] + 3.0 * (per_dim[:, 3] @ phrasings[3])
    order = np.argsort(-want, kind="stable")[:7]
    assert found.tolist() == ids[order].tolist()
    np.testing.assert_allclose(scores, want[order], atol=1e-5)
    np.testing.assert_array_equal(per_dim, original)
    assert search_weighted(per_dim[:2], ids[:2], query, k=5)[1].shape == (2,)
    with pytest.raises(ValidationError, match="query"):
        search_weighted(per_dim, ids, np.ones(3), k=5)


def test_recall_at_k_hand_example():
    assert recall_at_k([["a", "b", "c"]], [["c", "x", "a"]]) == pytest.approx(2 / 3)
    assert recall_at_k([["a", ""]], [["a", ""]]) == 1.0


def test_check_fingerprint():
    index = VectorIndex.build(["a"], np.ones((1, 2), np.float32), fingerprint="entries@3|minilm-int8")
    check_fingerprint(index, "entries@3|minilm-int8")
    with pytest.raises(StaleCache, match="rebuild"):
        check_fingerprint(index, "entries@4|minilm-int8")


def test_a_search_runs_on_one_core_unless_asked():
    import faiss

    vectors = _clustered(3000, 8, 50, seed=5)
    index = VectorIndex.build([f"e{i}" for i in range(3000)], vectors, kind="ivf_sq8", threads=2)
    queries = _clustered(20, 8, 50, seed=6)
    index.search(queries[:1], 8)
    assert faiss.omp_get_max_threads() == 1
    index.search(queries, 8, threads=2)
    assert faiss.omp_get_max_threads() == 2
    for q in queries:
        auto, two = index.search(q[None], 8), index.search(q[None], 8, threads=2)
        assert auto[1].tolist() == two[1].tolist() and np.allclose(auto[0], two[0])


def test_adds_write_their_ids_into_spare_room_and_earlier_views_keep_their_rows():
    index = VectorIndex.build(["a", "b"], np.eye(2, dtype=np.float32))
    index.mapped = True  # grow the side index, as a mapped index does
    before = index.ids
    index.add(["c"], np.array([[1.0, 1.0]], np.float32) / np.sqrt(2))
    with_c = index.ids
    index.add(["d"], np.array([[1.0, -1.0]], np.float32) / np.sqrt(2))
    assert np.shares_memory(index.ids, with_c) and with_c.tolist() == ["a", "b", "c"]  # written in place, not copied
    index.add(["a-much-longer-id"], np.array([[0.0, 1.0]], np.float32))  # a wider string type
    assert index.ids.tolist() == ["a", "b", "c", "d", "a-much-longer-id"] and before.tolist() == ["a", "b"]
    assert index.search(np.array([[1.0, -1.0]], np.float32), 1)[1].tolist() == [["d"]]


def test_a_mapped_index_keeps_its_re_scoring_when_rows_go_to_the_side_index(tmp_path):
    vectors = _clustered(3000, 16, 12, seed=9)
    ids = [f"e{i}" for i in range(3000)]
    VectorIndex.build(ids, vectors, kind="ivf_sq8").write(tmp_path / "i.kbx")
    index = VectorIndex.read(tmp_path / "i.kbx", kind="ivf_sq8")
    index.refine_with(lambda positions: vectors[positions])
    assert index.mapped and index.refine is not None
    new = _clustered(5, 16, 12, seed=10)
    index.add([f"n{i}" for i in range(5)], new)
    assert index.refine is not None  # the side index is exact; the main index's re-scoring still holds
    scores, found = index.search(new[:1], 3)
    assert found[0][0] == "n0" and abs(float(scores[0][0]) - 1.0) < 1e-5
    q = vectors[:1]
    assert index.search(q, 1)[1][0][0] == "e0" and abs(float(index.search(q, 1)[0][0][0]) - 1.0) < 1e-5


def test_a_graph_index_takes_new_rows_in_an_exact_side_index():
    rng = np.random.default_rng(5)
    base = rng.normal(size=(600, 32)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    idx = VectorIndex.build([f"b{i:05d}" for i in range(600)], base, kind="hnsw")
    new = rng.normal(size=(12, 32)).astype(np.float32)
    new /= np.linalg.norm(new, axis=1, keepdims=True)
    idx.add([f"n{i:05d}" for i in range(12)], new)
    assert idx.faiss_index.ntotal == 600 and idx.delta.ntotal == 12  # the graph was not rewired
    scores, ids = idx.search(new, 1)
    assert ids[:, 0].tolist() == [f"n{i:05d}" for i in range(12)]
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)
    idx.remove(["n00003"])
    assert "n00003" not in idx.search(new[3:4], 5)[1][0].tolist()
    assert idx.search(base[:1], 1)[1][0, 0] == "b00000"


def test_a_grown_graph_index_is_never_serialised_without_its_new_rows():
    from kbtools.errors import KbError

    rows = np.eye(4, dtype=np.float32)
    idx = VectorIndex.build(list("abc"), rows[:3], kind="hnsw")
    assert VectorIndex.from_bytes(idx.to_bytes()).search(rows[:1], 1)[1].tolist() == [["a"]]
    idx.add(["d"], rows[3:])
    with pytest.raises(KbError, match="build it again"):
        idx.to_bytes()


def test_an_hnsw_index_keeps_its_vectors_as_float16(tmp_path):
    """The HNSW index holds two bytes a value (the precision a bank stores its vectors in): its
    file is smaller than the same graph over float32 vectors by about half the vectors' bytes, and
    each vector still finds itself first, with the exact score to float16 precision."""
    import faiss

    rng = np.random.default_rng(4)
    rows = rng.normal(size=(2000, 64)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    ids = [f"{i:08x}" for i in range(len(rows))]
    index = VectorIndex.build(ids, rows, kind="hnsw")
    index.write(tmp_path / "i.faiss")
    wide = faiss.IndexHNSWFlat(rows.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    wide.add(rows)
    faiss.write_index(wide, str(tmp_path / "wide.faiss"))
    saved = (tmp_path / "wide.faiss").stat().st_size - (tmp_path / "i.faiss").stat().st_size
    assert saved > 0.45 * rows.nbytes
    scores, found = VectorIndex.read(tmp_path / "i.faiss", kind="hnsw").search(rows[:200], 1)
    assert found[:, 0].tolist() == ids[:200]
    assert np.allclose(scores[:, 0], 1.0, atol=2e-3)
