"""Retrieval: embedders, the faiss index, the BM25 arm, folding and the ranked pool.

>>> from kbtools import retrieval
>>> "ranked_pool" in retrieval.__all__
True
"""

from kbtools.retrieval.embedders import (
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
    StaticEmbedder,
    default_embedder,
    get_embedder,
)
from kbtools.retrieval.folding import EdgeLookup, flat, fold, pool_components
from kbtools.retrieval.index import DEFAULT_WEIGHTS, DIMENSIONS, VectorIndex
from kbtools.retrieval.search import ranked_pool

__all__ = ["Embedder", "HashingEmbedder", "MiniLMEmbedder", "StaticEmbedder", "default_embedder", "get_embedder",
           "EdgeLookup", "fold", "flat", "pool_components", "DEFAULT_WEIGHTS", "DIMENSIONS", "VectorIndex",
           "ranked_pool"]
