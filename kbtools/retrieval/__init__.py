"""Retrieval: embedders, the faiss index, the BM25 arm, folding and the ranked pool, with the
settings ``kb.query`` and ``kb.fold`` take (``QUERY_DEFAULTS``, ``FOLD_DEFAULTS``) and the parts of
the ``Answer`` they return (``Result``, ``Pointer``).

>>> from kbtools import retrieval
>>> "ranked_pool" in retrieval.__all__ and retrieval.FOLD_DEFAULTS.k
8
"""

from kbtools.model.answer import Pointer, Result
from kbtools.model.config import FOLD_DEFAULTS, QUERY_DEFAULTS, FoldConfig, QueryConfig
from kbtools.retrieval.embedders import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    StaticEmbedder,
    default_embedder,
    get_embedder,
)
from kbtools.retrieval.folding import EdgeLookup, flat, fold, fold_refilled, pool_components
from kbtools.retrieval.index import DEFAULT_WEIGHTS, DIMENSIONS, VectorIndex
from kbtools.retrieval.search import keep_current, pool_fetcher, ranked_pool

__all__ = ["Embedder", "HashingEmbedder", "MiniLMEmbedder", "StaticEmbedder", "default_embedder", "get_embedder",
           "EdgeLookup", "fold", "fold_refilled", "flat", "pool_components", "pool_fetcher", "DEFAULT_WEIGHTS", "DIMENSIONS", "VectorIndex",
           "keep_current", "ranked_pool", "Result", "Pointer", "QUERY_DEFAULTS", "FOLD_DEFAULTS", "QueryConfig",
           "FoldConfig"]
