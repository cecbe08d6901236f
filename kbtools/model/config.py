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

__all__ = ["FoldConfig", "QueryConfig", "FOLD_DEFAULTS", "QUERY_DEFAULTS", "DEFAULT_EMBEDDER"]

#: The embedder a new bank records (``create_bank``): its writes embed what they add with it, so
#: the first query answers; ``kb embed --embedder NAME`` picks another before anything is embedded.
DEFAULT_EMBEDDER = "minilm-int8"


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
    ``lexical_depth`` hits and is fused by RRF with constant ``rrf_k``; ``index`` is the faiss kind (``auto``: exact below 50,000 entries, IVF+SQ8 from it)."""

    pool: int = 20
    lexical: bool = False
    index: str = "auto"
    rrf_k: int = 60
    lexical_depth: int = 100


FOLD_DEFAULTS = FoldConfig()
QUERY_DEFAULTS = QueryConfig()
