"""The simple things a user would do instead of folding, as evaluation arms: plain result
collapsing and maximal marginal relevance (MMR). The replay measures folding beside them.

>>> import polars as pl
>>> pool = pl.DataFrame({"id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
>>> e = pl.DataFrame({"src": ["b"], "dst": ["a"], "type": ["corrects"], "source": ["author"]})
>>> collapse(pool, e).ids()
['a', 'c']
"""

from __future__ import annotations

import dataclasses
from typing import Iterable

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.answer import Answer
from kbtools.retrieval.folding import EdgeLookup, flat, pool_components

__all__ = ["collapse", "mmr"]


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
