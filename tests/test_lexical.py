"""BM25 lexical arm and reciprocal rank fusion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.errors import ValidationError
from kbtools.retrieval.lexical import BM25Index, rrf, tokenize


def test_tokenize_keeps_rare_tokens_whole_and_split():
    assert tokenize("Pass --http1.1 (see E-217).") == [
        "pass", "--http1.1", "http1.1", "http1", "1", "see", "e-217", "e", "217"]
    assert tokenize("kbtools.index.search a1b2c3d4 max_tokens") == [
        "kbtools.index.search", "kbtools", "index", "search", "a1b2c3d4", "max_tokens", "max", "tokens"]
    assert tokenize("") == [] and tokenize("-- ... !") == []
    assert tokenize("-v") == ["-v", "v"]


def test_bm25_hand_computed():
    # N = 3, lengths 2, 3, 1, mean length 2
    bm25 = BM25Index.build(["d1", "d2", "d3"], ["a b", "b c c", "d"])
    idf_b, idf_c = math.log(1 + 1.5 / 2.5), math.log(1 + 2.5 / 1.5)
    ids, scores = bm25.search("b", 10)
    assert ids == ["d1", "d2"]
    np.testing.assert_allclose(scores, [idf_b * 2.2 / (1 + 1.2 * 1.0),
                                        idf_b * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 1.5))])
    ids, scores = bm25.search("c b", 10)
    assert ids == ["d2", "d1"]
    np.testing.assert_allclose(scores[0], idf_c * 2 * 2.2 / (2 + 1.2 * 1.375) + idf_b * 2.2 / 2.65)
    assert bm25.search("nothing here", 10) == ([], pytest.approx(np.zeros(0)))


DOCS = {
    "a1b2c3d4": "The session-create POST hangs unless you pass --http1.1 to curl.",
    "b2c3d4e5": "HTTP 1 is old; http clients retry 1 time by default.",
    "c3d4e5f6": "Error E-217 means the disk quota is exhausted; free space first.",
    "d4e5f6a7": "Error 217 from the e-mail relay: mailbox full.",
    "e5f6a7b8": "kbtools.index builds the faiss index over combined vectors.",
}


def test_bm25_finds_flags_error_codes_and_dotted_names():
    bm25 = BM25Index.build(list(DOCS), list(DOCS.values()))
    assert bm25.search("--http1.1", 3)[0][0] == "a1b2c3d4"
    assert bm25.search("http1.1", 3)[0][0] == "a1b2c3d4"
    assert bm25.search("E-217", 3)[0][0] == "c3d4e5f6"
    assert bm25.search("kbtools.index", 3)[0][0] == "e5f6a7b8"
    assert bm25.search("a1b2c3d4", 3)[0] == []  # ids are not in the texts


def test_bm25_add_matches_one_build_and_refuses_duplicates():
    ids, texts = list(DOCS), list(DOCS.values())
    whole = BM25Index.build(ids, texts)
    grown = BM25Index.build(ids[:2], texts[:2])
    grown.add(ids[2:], texts[2:])
    for query in ("--http1.1", "E-217 disk", "error full", "faiss"):
        got, want = grown.search(query, 5), whole.search(query, 5)
        assert got[0] == want[0]
        np.testing.assert_allclose(got[1], want[1])
    with pytest.raises(ValidationError, match="more than once"):
        grown.add(["a1b2c3d4"], ["again"])
    with pytest.raises(ValidationError, match="one to one"):
        grown.add(["ffffffff"], [])


def test_bm25_k_ties_empty_and_contract():
    texts = ["same words", "same words", "other words"]
    original = list(texts)
    bm25 = BM25Index.build(["x", "y", "z"], texts)
    assert texts == original
    assert bm25.search("same", 1)[0] == ["x"]      # ties keep insertion order
    assert bm25.search("same", 5)[0] == ["x", "y"]  # only positive scores
    empty = BM25Index.build([], [])
    assert empty.size == 0 and empty.search("anything", 3)[0] == []
    empty.add(["a"], ["anything at all"])
    assert empty.search("anything", 3)[0] == ["a"]
    with pytest.raises(ValidationError):
        bm25.search("same", 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abc -.", max_size=20), min_size=1, max_size=8), st.text(alphabet="abc -.", max_size=10))
def test_bm25_scores_non_negative_and_sorted(texts, query):
    bm25 = BM25Index.build([str(i) for i in range(len(texts))], texts)
    assert np.all(bm25.scores(query) >= 0)
    ids, scores = bm25.search(query, 3)
    assert len(ids) <= 3 and np.all(np.diff(scores) <= 0)


def test_rrf_hand_example():
    fused = rrf([["a", "b", "c"], ["c", "a"]], k=60)
    assert [doc for doc, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2][1] == pytest.approx(1 / 62)
    assert rrf([]) == [] and rrf([[], []]) == []
    assert rrf([["a", "a", "b"]], k=0) == [("a", 1.0), ("b", 0.5)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefg"), max_size=6), max_size=4))
def test_rrf_covers_union_and_sorts(rankings):
    fused = rrf(rankings)
    assert {doc for doc, _ in fused} == {doc for r in rankings for doc in r}
    assert all(a[1] >= b[1] for a, b in zip(fused, fused[1:]))
