"""The lexical arm: BM25 over entry texts, and reciprocal rank fusion with the vector arm.

Error strings, flag names, ids and dotted names are what agents search for verbatim, so the
tokenizer keeps each whitespace chunk whole (``--http1.1``, ``e-217``, ``kbtools.index``) as well as
split into its letter-digit runs (``http1``, ``1``); a leading ``--`` also gives the bare form.

>>> bm25 = BM25Index.build(["a1", "b2"], ["retry with --http1.1 on session-create", "E-217: disk full"])
>>> bm25.search("--http1.1", 1)[0]
['a1']
>>> [doc for doc, _ in rrf([["a1", "b2"], ["b2", "a1"]])]
['a1', 'b2']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from kbtools.errors import ValidationError

if TYPE_CHECKING:  # scipy is imported on first use: a query without the lexical arm never loads it
    import scipy.sparse as sp

__all__ = ["tokenize", "BM25Index", "rrf", "BM25_K1", "BM25_B", "RRF_K"]

#: BM25 term-frequency saturation.
BM25_K1: float = 1.2
#: BM25 length normalisation.
BM25_B: float = 0.75
#: Reciprocal rank fusion constant.
RRF_K: int = 60

_RUN = re.compile(r"[^\W_]+")
_LEAD = "\"'`([{<*"
_TRAIL = "\"'`)]}>.,;:!?*"


def tokenize(text: str) -> list[str]:
    """Lowercased terms: each chunk whole (when it holds punctuation) and its letter-digit runs.

    >>> tokenize("Use --http1.1, see E-217 in kbtools.index (a1b2c3d4).")
    ['use', '--http1.1', 'http1.1', 'http1', '1', 'see', 'e-217', 'e', '217', 'in', 'kbtools.index', 'kbtools', 'index', 'a1b2c3d4']
    """
    terms: list[str] = []
    for chunk in text.lower().split():
        chunk = chunk.lstrip(_LEAD).rstrip(_TRAIL)
        runs = _RUN.findall(chunk)
        if not runs:
            continue
        if runs != [chunk]:
            for whole in dict.fromkeys((chunk, chunk.lstrip("-"))):
                if whole not in runs:
                    terms.append(whole)
        terms.extend(runs)
    return terms


def _term_counts(texts: Sequence[str], vocabulary: dict[str, int]) -> sp.csr_matrix:
    """Term-frequency rows for ``texts``; new terms are added to ``vocabulary`` (in place)."""
    import scipy.sparse as sp

    cols: list[int] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for row, text in enumerate(texts):
        terms = tokenize(text)
        lengths[row] = len(terms)
        cols.extend(vocabulary.setdefault(term, len(vocabulary)) for term in terms)
    rows = np.repeat(np.arange(len(texts)), lengths)
    counts = sp.csr_matrix((np.ones(len(cols), dtype=np.float32), (rows, np.asarray(cols, dtype=np.int64))),
                           shape=(len(texts), len(vocabulary)))
    counts.sum_duplicates()
    return counts


def _bm25_weights(counts: sp.csr_matrix, k1: float, b: float) -> sp.csc_matrix:
    """Each (document, term) cell's BM25 contribution, as a column-sliceable matrix."""
    import scipy.sparse as sp

    n_docs = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    mean_length = lengths.mean() if n_docs and lengths.mean() > 0 else 1.0
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    rows = np.repeat(np.arange(n_docs), np.diff(counts.indptr))
    tf = counts.data
    norm = k1 * (1.0 - b + b * lengths[rows] / mean_length)
    data = idf[counts.indices] * tf * (k1 + 1.0) / (tf + norm)
    return sp.csr_matrix((data, counts.indices, counts.indptr), shape=counts.shape).tocsc()


def _check_ids_texts(ids: Sequence[str], texts: Sequence[str], known: np.ndarray) -> np.ndarray:
    ids = np.asarray(list(ids), dtype=str)
    if len(ids) != len(texts):
        raise ValidationError("texts", f"{len(texts)} texts", f"must match the {len(ids)} ids one to one")
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValidationError("texts", text, "every text must be a str", row=row)
    values, counts = np.unique(np.concatenate([known, ids]), return_counts=True)
    if (counts > 1).any():
        raise ValidationError("ids", values[counts > 1][0].item(), "appears more than once in the index")
    return ids


@dataclass(eq=False)
class BM25Index:
    """BM25 (Okapi, ``idf = ln(1 + (N - df + .5) / (df + .5))``) over entry texts.

    ``add`` changes the index in place (term statistics are recomputed, vectorised).

    >>> bm25 = BM25Index.build(["x", "y"], ["alpha beta", "beta gamma gamma"])
    >>> bm25.search("gamma", 5)[0]
    ['y']
    """

    ids: np.ndarray
    vocabulary: dict
    counts: sp.csr_matrix
    weights: sp.csc_matrix
    k1: float = BM25_K1
    b: float = BM25_B

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], *, k1: float = BM25_K1,
              b: float = BM25_B) -> "BM25Index":
        """Index ``texts`` (one per id)."""
        if k1 < 0 or not 0 <= b <= 1:
            raise ValidationError("k1, b", (k1, b), "need k1 >= 0 and 0 <= b <= 1")
        ids = _check_ids_texts(ids, texts, np.array([], dtype=str))
        vocabulary: dict[str, int] = {}
        counts = _term_counts(texts, vocabulary)
        return cls(ids, vocabulary, counts, _bm25_weights(counts, k1, b), k1, b)

    @property
    def size(self) -> int:
        """How many documents the index holds."""
        return len(self.ids)

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Append documents in place; ids already present are refused."""
        import scipy.sparse as sp

        ids = _check_ids_texts(ids, texts, self.ids)
        new_counts = _term_counts(texts, self.vocabulary)
        old = self.counts
        old = sp.csr_matrix((old.data, old.indices, old.indptr), shape=(old.shape[0], len(self.vocabulary)))
        self.counts = sp.vstack([old, new_counts], format="csr")
        self.weights = _bm25_weights(self.counts, self.k1, self.b)
        self.ids = np.concatenate([self.ids, ids])

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float64 (n,)); a repeated query term counts
        once per occurrence."""
        cols = [self.vocabulary[t] for t in tokenize(query) if t in self.vocabulary]
        if not cols:
            return np.zeros(self.size)
        unique, repeats = np.unique(cols, return_counts=True)
        return np.asarray(self.weights[:, unique] @ repeats.astype(np.float64)).ravel()

    def search(self, query: str, k: int = 20) -> tuple[list[str], np.ndarray]:
        """Ids and scores of the ``k`` best documents with a positive score, best first
        (ties by insertion order)."""
        if k < 1:
            raise ValidationError("k", k, "must be at least 1")
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        hits = hits[np.lexsort((hits, -scores[hits]))]
        return self.ids[hits].tolist(), scores[hits]


def rrf(rankings: list[list[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: ``score(id) = Σ 1 / (k + rank)`` over the rankings (rank from 1).

    Best first; ties keep the order of first appearance. A repeat inside one ranking counts once.

    >>> rrf([["a", "b"], ["b", "c"]], k=1)
    [('b', 0.8333333333333333), ('a', 0.5), ('c', 0.3333333333333333)]
    """
    if k < 0:
        raise ValidationError("k", k, "must be >= 0")
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(dict.fromkeys(ranking), start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    order = sorted(enumerate(fused.items()), key=lambda item: (-item[1][1], item[0]))
    return [pair for _, pair in order]
