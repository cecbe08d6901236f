"""The seed's numbers, written once: typed, frozen presets that the function signatures, the CLI's
defaults and the evaluations read (change a preset with ``dataclasses.replace``).

>>> QUERY_DEFAULTS.k, QUERY_DEFAULTS.pool, FOLD_DEFAULTS.protect
(8, 20, 2)
>>> import dataclasses
>>> dataclasses.replace(QUERY_DEFAULTS, k=5).k
5
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FoldConfig", "QueryConfig", "FOLD_DEFAULTS", "QUERY_DEFAULTS", "DEFAULT_EMBEDDER", "EMBEDDER_NAMES", "EMBEDDER_ALIASES", "INDEX_KINDS"]

#: The embedder a new bank records (``create_bank``): its writes embed what they add with it, so
#: the first query answers; ``kb embed --embedder NAME`` picks another before anything is embedded.
DEFAULT_EMBEDDER = "minilm-int8"
#: The embedders a bank can record, in order of preference (kbtools.retrieval.embedders makes them).
EMBEDDER_NAMES: tuple[str, ...] = ("minilm-int8", "minilm-static", "hashing-char")
#: Short names ``get_embedder`` also takes: alias -> the name in :data:`EMBEDDER_NAMES` it means.
EMBEDDER_ALIASES = {"minilm": "minilm-int8", "static": "minilm-static", "fast": "minilm-static",
                    "hashing": "hashing-char"}
#: The faiss index kinds a query can search (kbtools.retrieval.index builds them).
INDEX_KINDS: tuple[str, ...] = ("flat", "hnsw", "ivf", "sq8", "hnsw_sq8", "ivf_sq8")


@dataclass(frozen=True)
class FoldConfig:
    """Folding (seed 000): ``k`` results, the top ``protect`` ranks never folded away, up to
    ``neighbors`` one-hop neighbours per result."""

    k: int = 8
    protect: int = 2
    neighbors: int = 3


@dataclass(frozen=True)
class QueryConfig(FoldConfig):
    """A query: a ranked ``pool`` folded into ``k`` results; the optional BM25 arm reads
    ``lexical_depth`` hits and is fused by RRF with constant ``rrf_k``; ``index`` is the faiss kind (``auto``: exact below 50,000 entries, HNSW from it, IVF+SQ8 from a million)."""

    pool: int = 20
    lexical: bool = False
    index: str = "auto"
    rrf_k: int = 60
    lexical_depth: int = 100


FOLD_DEFAULTS = FoldConfig()
QUERY_DEFAULTS = QueryConfig()
