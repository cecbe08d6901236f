"""The simple things a user would do instead of folding or linking, as evaluation arms.

Instead of folding: plain result collapsing and maximal marginal relevance (MMR); the replay
measures folding beside them. Instead of the linker, at the linker's number of links (``kb eval
links``): the globally most similar pairs (:func:`knn_pairs`), each entry's nearest neighbours in
turn (:func:`per_entry_knn_pairs`), and those neighbours re-ranked by the rare terms they share
(:func:`rerank_pairs`, with the fixed :data:`RERANK_TOP`, :data:`RERANK_LAMBDA`,
:data:`RERANK_MAX_DF`, never tuned per bank).

>>> import polars as pl
>>> pool = pl.DataFrame({"id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
>>> e = pl.DataFrame({"src": ["b"], "dst": ["a"], "type": ["corrects"], "source": ["author"]})
>>> collapse(pool, e).ids()
['a', 'c']
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Iterable, Sequence

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.answer import Answer
from kbtools.retrieval.folding import EdgeLookup, flat, pool_components

__all__ = ["collapse", "mmr", "RERANK_TOP", "RERANK_LAMBDA", "RERANK_MAX_DF", "knn_pairs", "neighbour_lists",
           "outside_groups", "per_entry_pairs", "per_entry_knn_pairs", "rank_terms", "rerank_scores", "rerank_pairs"]

#: The re-rank baseline looks at each entry's this many cosine nearest neighbours.
RERANK_TOP: int = 50
#: Weight of the shared rare terms' idf sum beside the cosine.
RERANK_LAMBDA: float = 0.02
#: A term counts as rare when at most this many entries hold it.
RERANK_MAX_DF: int = 20
_WORD = re.compile(r"[a-z0-9]{3,}")
_ID_LIKE = re.compile(r"(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}")


def collapse(pool: pl.DataFrame, edges: pl.DataFrame | EdgeLookup, *, k: int = 8,
             sources: Iterable[str] | None = None, query: str | None = None) -> Answer:
    """Plain result collapsing: one result per connected component, best rank wins; no dominance,
    no protection, no pointers: the rest of each group is dropped."""
    keep = [group[0] for group in pool_components(pool, edges, sources=sources)]
    kept = pool.filter(pl.col("id").is_in(keep))
    return dataclasses.replace(flat(kept, k=k, query=query), method="collapse")


def mmr(pool: pl.DataFrame, vectors: np.ndarray, *, k: int = 8, lam: float = 0.5,
        query: str | None = None) -> Answer:
    """Maximal marginal relevance (Carbonell & Goldstein 1998) over the pool.

    ``vectors`` holds one row per pool row; relevance is the pool ``score``, redundancy the highest
    cosine similarity to an already chosen result: pick ``argmax lam*score - (1-lam)*max_sim``.

    >>> pool = pl.DataFrame({"id": ["a", "b", "c"], "score": [1.0, 0.99, 0.5]})
    >>> v = np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0]])
    >>> mmr(pool, v, k=2).ids()
    ['a', 'c']
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValidationError("k", k, "must be a non-negative integer")
    if not 0.0 <= float(lam) <= 1.0:
        raise ValidationError("lam", lam, "must be between 0 and 1")
    vecs = np.asarray(vectors, dtype=np.float64)
    if vecs.ndim != 2 or vecs.shape[0] != pool.height:
        raise ValidationError("vectors", getattr(vecs, "shape", vecs),
                              f"must be a 2-D array with one row per pool row ({pool.height})")
    order = _mmr_order(pool["score"].fill_null(0.0).to_numpy().astype(np.float64), vecs, k, float(lam))
    return dataclasses.replace(flat(pool[order], k=k, query=query), method="mmr")


def _mmr_order(scores: np.ndarray, vecs: np.ndarray, k: int, lam: float) -> list[int]:
    n = len(scores)
    if n == 0 or k == 0:
        return []
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    unit = vecs / np.where(norms == 0, 1.0, norms)
    sims = unit @ unit.T
    chosen: list[int] = []
    redundancy = np.full(n, -np.inf)
    free = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        gain = lam * scores - (1.0 - lam) * np.where(np.isfinite(redundancy), redundancy, 0.0)
        gain = np.where(free, gain, -np.inf)
        best = int(np.argmax(gain))
        chosen.append(best)
        free[best] = False
        redundancy = np.maximum(redundancy, sims[best])
    return chosen


# ------------------------------------------------------------------------------------------ links


def _unit(vectors: np.ndarray, linkable) -> tuple[np.ndarray, np.ndarray]:
    vec = np.ascontiguousarray(vectors, dtype=np.float32)
    ok = np.ones(len(vec), bool) if linkable is None else np.array(linkable, bool)
    ok &= np.linalg.norm(vec, axis=1) > 0
    return vec, ok


def knn_pairs(ids, vectors: np.ndarray, budget: int, *, exclude: set = frozenset(), k: int | None = None,
              linkable=None, block: int = 1024, groups=None) -> set[tuple[str, str]]:
    """The ``budget`` most similar unordered pairs of the whole bank, among each entry's ``k``
    cosine nearest neighbours (exact numpy scan; ``vectors`` L2-normalised, rows aligned with
    ``ids``), skipping ``exclude`` and pairs within one of ``groups`` (see :func:`outside_groups`).

    >>> v = np.array([[1.0, 0.0], [0.9, 0.436], [0.0, 1.0]])
    >>> sorted(knn_pairs(["a", "b", "c"], v, 1))
    [('a', 'b')]
    """
    ids = list(ids)
    n = len(ids)
    if budget <= 0 or n < 2:
        return set()
    vec, ok = _unit(vectors, linkable)
    k = min(n - 1, k or max(8, 4 * -(-2 * budget // max(int(ok.sum()), 1))))
    nbr, sim = neighbour_lists(vec, k=k, linkable=ok, block=block)
    if groups is not None:
        nbr, sim = outside_groups(nbr, sim, groups)
    rows = np.repeat(np.arange(n), nbr.shape[1])
    cols, vals = nbr.ravel(), sim.ravel()
    keep = cols >= 0
    r, c, v = rows[keep], cols[keep], vals[keep]
    out: set = set()
    for i in np.argsort(-v, kind="stable"):
        a, b = ids[r[i]], ids[c[i]]
        pair = (a, b) if a < b else (b, a)
        if pair in out or pair in exclude:
            continue
        out.add(pair)
        if len(out) >= budget:
            break
    return out


def neighbour_lists(vectors: np.ndarray, *, k: int, linkable=None, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` cosine nearest other rows, most similar first: ``(nbr, sim)``, both
    ``(n, k)``; ``nbr`` is -1 (and ``sim`` -inf) where a row has fewer linkable neighbours, and a row
    that is not linkable (or has a zero vector) has none. Exact numpy scan, ``block`` rows at a time.

    >>> nbr, sim = neighbour_lists(np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]), k=2)
    >>> nbr.tolist()
    [[1, 2], [0, 2], [1, 0]]
    """
    vec, ok = _unit(vectors, linkable)
    n = len(vec)
    k = max(0, min(int(k), n - 1))
    nbr = np.full((n, k), -1, np.int64)
    sim = np.full((n, k), -np.inf, np.float32)
    if k == 0:
        return nbr, sim
    for lo in range(0, n, block):
        part = np.arange(lo, min(n, lo + block))
        s = vec[part] @ vec.T
        s[:, ~ok] = -np.inf
        s[np.arange(len(part)), part] = -np.inf
        top = np.argpartition(-s, k - 1, axis=1)[:, :k]
        val = np.take_along_axis(s, top, 1)
        order = np.argsort(-val, axis=1, kind="stable")
        top, val = np.take_along_axis(top, order, 1), np.take_along_axis(val, order, 1)
        good = np.isfinite(val) & ok[part][:, None]
        nbr[part] = np.where(good, top, -1)
        sim[part] = np.where(good, val, -np.inf)
    return nbr, sim


def outside_groups(nbr: np.ndarray, sim: np.ndarray, groups) -> tuple[np.ndarray, np.ndarray]:
    """Neighbour lists without the candidates of a row's own group (``groups[i]``: an integer per
    row, -1 for none; the sections of one document, which its structure joins already), each row's
    remaining candidates moved to its front in their order.

    >>> nbr = np.array([[1, 2], [0, 2], [0, 1]])
    >>> outside_groups(nbr, np.array([[0.9, 0.5], [0.9, 0.4], [0.5, 0.4]]), np.array([0, 0, -1]))[0].tolist()
    [[2, -1], [2, -1], [0, 1]]
    """
    groups = np.asarray(groups)
    mine = groups[:, None]
    same = (nbr >= 0) & (mine >= 0) & (groups[np.maximum(nbr, 0)] == mine)
    nbr, sim = np.where(same, -1, nbr), np.where(same, -np.inf, sim)
    order = np.argsort(nbr < 0, axis=1, kind="stable")  # kept candidates first, in their order
    return np.take_along_axis(nbr, order, 1), np.take_along_axis(sim, order, 1)


def per_entry_pairs(ids, nbr: np.ndarray, score: np.ndarray, budget: int, *,
                    exclude: set = frozenset()) -> set[tuple[str, str]]:
    """Links taken in rounds: round r links every entry to its r-th candidate (``nbr[i, r]``,
    candidates ranked best first), the best-scored first within a round, until ``budget`` links;
    a pair already linked (from its other end) or in ``exclude`` is skipped, a -1 candidate is none.
    So every entry gets its first candidate before any gets its second.

    >>> nbr = np.array([[1, 2], [0, 2], [1, 0]])
    >>> score = np.array([[0.9, 0.1], [0.9, 0.5], [0.5, 0.1]])
    >>> sorted(per_entry_pairs(["a", "b", "c"], nbr, score, 2))
    [('a', 'b'), ('b', 'c')]
    """
    ids = list(ids)
    out: set = set()
    if budget <= 0:
        return out
    for r in range(nbr.shape[1] if nbr.ndim == 2 else 0):
        col, val = nbr[:, r], score[:, r]
        rows = np.flatnonzero(col >= 0)
        for i in rows[np.argsort(-val[rows], kind="stable")]:
            a, b = ids[i], ids[col[i]]
            pair = (a, b) if a < b else (b, a)
            if pair in out or pair in exclude:
                continue
            out.add(pair)
            if len(out) >= budget:
                return out
    return out


def per_entry_knn_pairs(ids, vectors: np.ndarray, budget: int, *, exclude: set = frozenset(), linkable=None,
                        k: int | None = None) -> set[tuple[str, str]]:
    """Per-entry kNN: every entry's nearest neighbour, then every entry's second, ... until
    ``budget`` links (:func:`per_entry_pairs` over cosine neighbour lists).

    >>> v = np.array([[1.0, 0.0], [0.9, 0.436], [0.0, 1.0], [0.1, 0.995]])
    >>> sorted(per_entry_knn_pairs(["a", "b", "c", "d"], v, 2))
    [('a', 'b'), ('c', 'd')]
    """
    n = len(vectors)
    if budget <= 0 or n < 2:
        return set()
    _, ok = _unit(vectors, linkable)
    k = k or max(RERANK_TOP, 4 * -(-budget // max(int(ok.sum()), 1)))
    nbr, sim = neighbour_lists(vectors, k=k, linkable=ok)
    return per_entry_pairs(ids, nbr, sim, budget, exclude=exclude)


def rank_terms(text: str | None) -> set[str]:
    """The re-rank's terms of a text: lower-cased words of 3 or more letters or digits, ids
    (hex strings of 7 or more characters holding a digit and a letter: entry ids, commit hashes)
    left out.

    >>> sorted(rank_terms("See a1b2c3d4: the TLS cache, v2 of it"))
    ['cache', 'see', 'the', 'tls']
    """
    return {w for w in _WORD.findall((text or "").lower()) if not _ID_LIKE.fullmatch(w)}


def rerank_scores(terms: Sequence[set[str]], nbr: np.ndarray, sim: np.ndarray, *, lam: float = RERANK_LAMBDA,
                  max_df: int = RERANK_MAX_DF) -> np.ndarray:
    """``sim + lam * sum(idf(t))`` over the terms ``t`` an entry shares with each candidate whose
    document frequency is at most ``max_df``; ``idf(t) = ln(N / df(t))`` over the ``N`` entries of
    ``terms``. -inf where there is no candidate (``nbr`` -1).

    >>> t = [{"tls", "cache"}, {"tls", "cache"}, {"tea"}, {"tls"}]
    >>> s = rerank_scores(t, np.array([[1, 3]]).repeat(4, 0), np.array([[0.5, 0.4]]).repeat(4, 0), max_df=2)
    >>> round(float(s[0, 0]), 4) == round(0.5 + 0.02 * math.log(4 / 2), 4)
    True
    """
    from scipy import sparse

    n = len(terms)
    vocab: dict[str, int] = {}
    indptr, indices = [0], []
    for ts in terms:
        indices.extend(vocab.setdefault(t, len(vocab)) for t in ts)
        indptr.append(len(indices))
    bag = sparse.csr_matrix((np.ones(len(indices), np.float64), indices, indptr), shape=(n, max(len(vocab), 1)))
    df = np.asarray(bag.sum(axis=0)).ravel()
    idf = np.where((df > 0) & (df <= max_df), np.log(n / np.maximum(df, 1)), 0.0)
    rare = bag @ sparse.diags(idf)
    rows = np.repeat(np.arange(n), nbr.shape[1])
    cols = nbr.ravel()
    good = cols >= 0
    shared = np.zeros(len(cols))
    if good.any():
        shared[good] = np.asarray(bag[rows[good]].multiply(rare[cols[good]]).sum(axis=1)).ravel()
    out = sim.astype(np.float64) + lam * shared.reshape(nbr.shape)
    return np.where(nbr >= 0, out, -np.inf)


def rerank_pairs(ids, vectors: np.ndarray, texts: Sequence[str], budget: int, *, exclude: set = frozenset(),
                 linkable=None, top: int = RERANK_TOP, lam: float = RERANK_LAMBDA,
                 max_df: int = RERANK_MAX_DF) -> set[tuple[str, str]]:
    """The re-rank baseline: each entry's ``top`` cosine nearest neighbours re-ranked by
    :func:`rerank_scores` (cosine plus ``lam`` times the idf of the rare terms they share), then
    taken per entry in rounds (:func:`per_entry_pairs`) until ``budget`` links.

    >>> v = np.array([[1.0, 0.0], [0.9, 0.436], [0.8, 0.6]])
    >>> sorted(rerank_pairs(["a", "b", "c"], v, ["tls cache", "tea", "tls cache"], 1, max_df=2, lam=1.0))
    [('a', 'c')]
    """
    n = len(ids)
    if budget <= 0 or n < 2:
        return set()
    _, ok = _unit(vectors, linkable)
    nbr, sim = neighbour_lists(vectors, k=top, linkable=ok)
    score = rerank_scores([rank_terms(t) for t in texts], nbr, sim, lam=lam, max_df=max_df)
    order = np.argsort(-score, axis=1, kind="stable")
    return per_entry_pairs(ids, np.take_along_axis(nbr, order, 1), np.take_along_axis(score, order, 1), budget,
                           exclude=exclude)
