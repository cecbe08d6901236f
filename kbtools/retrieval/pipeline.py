"""kb.query: the bank's query path, step 1 to step 8 of the seed.

1. a pool of 20 ranked candidates (dense weighted cosine, optional BM25 arm fused by RRF), no usage
   counted; 2-7. ``fold`` over the trusted edges (or ``flat`` with ``fold=False``), a deeper pool
   folded when the first folds into fewer than ``k`` results (``fold_refilled``); 8. usage
   appended for the returned result ids only (``record_usage=False`` counts nothing).

>>> import kbtools as kb  # doctest: +SKIP
>>> kb.query(bank, "how do I log in to production with playwright", k=8).text()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Iterable, Mapping

import polars as pl

from kbtools.model.answer import Answer
from kbtools.model.config import QUERY_DEFAULTS
from kbtools.retrieval.embedders import Embedder
from kbtools.errors import ValidationError
from kbtools.retrieval.folding import EdgeLookup, flat, fold_refilled
from kbtools.retrieval.index import MAX_DEAD_SHARE
from kbtools.retrieval.search import display_rows, ranked_columns
from kbtools.store.bank import Bank
from kbtools.model import vocab
from kbtools.model.schema import KEYS
from kbtools.model.vocab import EDGE_SOURCES, TRUSTED_SOURCES
from kbtools.store.segments import DELETED, SegmentMark, base_and_later, latest_in_first_order, segment_names
from kbtools.store.sidecars import read_edge_ends

__all__ = ["QUERY_DEFAULTS", "query", "edge_lookup"]

#: Defaults of :func:`query`.


def edge_lookup(bank: Bank, *, sources: Iterable[str] | None = None) -> EdgeLookup:
    """The bank's edges prepared for folding (one per source set), kept across bank versions: the
    rows of the edge segments written since it was built (a link, an add with its connections, an
    unlink, a retype, a bridge, a linked write's evicted links) are applied key by key, the keys
    they touch masked and their live rows added as a part, so a query after a write reads only what
    the write wrote (``EdgeLookup.builds`` counts the builds from the whole edge frame; one happens
    again once masked rows pass ``MAX_DEAD_SHARE`` of those held). The trusted edges of a bank whose base edges
    segment has its sidecar (:func:`~kbtools.store.sidecars.read_edge_ends`, written by a full
    compaction) are read from it, memory-mapped, and the segments after it applied: the edge
    frame is never read. Neighbours' display fields come from the pool's display rows of active
    entries (:func:`~kbtools.retrieval.search.display_rows`), read for the ids a fold hands over only."""
    allowed = frozenset(TRUSTED_SOURCES if sources is None else sources)
    unknown = allowed - EDGE_SOURCES
    if unknown:
        raise ValidationError("sources", sorted(unknown)[0], f"an edge source; sources are {', '.join(sorted(EDGE_SOURCES))}")
    key = "edge_lookup:" + ",".join(sorted(allowed))

    def build(prior: EdgeLookup | None) -> EdgeLookup:
        out = _from_segments(bank, allowed, prior)
        if out is not None:
            return out
        out = EdgeLookup.build(bank.edges, sources=allowed)
        out.mark = SegmentMark(segment_names(bank, "edges"))  # it covers these segments: later ones are applied
        return out

    lookup = bank.derived(key, build, on=("edges",), grow=True)
    return lookup.with_entries(_BankEntries(bank))


def _from_segments(bank: Bank, allowed: frozenset[str], prior: EdgeLookup | None) -> EdgeLookup | None:
    """``prior`` (when the segments it covers still lead the snapshot's) or the trusted edges of
    the base segment's sidecar, with the rows of the segments after those applied key by key (an
    add, a link, an unlink, a linked write's evicted links: what the write wrote, never the whole
    edge frame); None where the whole edge frame must be read: no prior and no sidecar (or other
    sources than the trusted ones, which the sidecar holds), an aliased type, a segment swept since."""
    def read_base(first: str) -> EdgeLookup | None:
        if allowed != TRUSTED_SOURCES:
            return None
        ends = read_edge_ends(bank, first)
        return None if ends is None or ends["aliased"] else EdgeLookup.from_ends(ends, mark=SegmentMark((first,)))

    found = base_and_later(bank, "edges", prior, read_base)
    if found is None:
        return None
    base, rows, mark = found
    if rows is None:
        return base
    if set(rows.get_column("type").cast(pl.String).to_list()) & set(vocab.TYPE_ALIASES):
        return None
    rows = latest_in_first_order(rows, list(KEYS["edges"]))
    # a write's few rows: read as columns and masked by a Series (a polars query costs more here)
    keys = list(zip(*(rows.get_column(c).cast(pl.String).to_list() for c in KEYS["edges"])))
    deleted = rows.get_column(DELETED)
    out = base.changed(keys, rows.filter(~deleted) if deleted.any() else rows, mark=mark)
    held = sum(p.height for p in out.parts)
    return None if len(out.dead) > MAX_DEAD_SHARE * held else out  # past it a fold filters too many: read afresh


class _BankEntries:
    """The display fields of a bank's active entries, read for the ids a fold asks for."""

    __slots__ = ("bank",)

    def __init__(self, bank: Bank):
        self.bank = bank

    def rows_for(self, ids) -> dict[str, dict]:
        return display_rows(self.bank, ids)


def query(
    bank: Bank,
    text: str,
    *,
    k: int = QUERY_DEFAULTS.k,
    fold: bool = True,
    protect: int = QUERY_DEFAULTS.protect,
    neighbors: int = QUERY_DEFAULTS.neighbors,
    pool: int = QUERY_DEFAULTS.pool,
    lexical: bool = QUERY_DEFAULTS.lexical,
    weights: Mapping[str, float] | None = None,
    sources: Iterable[str] | None = None,
    record_usage: bool | None = None,
    embedder: Embedder | str | None = None,
    index: str = QUERY_DEFAULTS.index,
    query_vector=None,
) -> Answer:
    """Answer ``text`` from the bank: folded (default) or flat, with neighbours handed over.

    ``weights`` re-weights the four search dimensions (content, useful_for, systems, tasks);
    ``sources`` chooses which edge sources fold (trusted by default); ``lexical`` adds the BM25
    arm; ``index`` picks the faiss index kind (flat is exact). ``query_vector`` answers for a
    vector embedded already (the embedder is then never loaded). ``record_usage`` counts the
    returned ids in the usage log: by default unless the bank is open read-only (then quietly
    not: a read-only open is normal use); ``True`` asks for it, with a warning (once per bank)
    when it cannot be recorded; ``False`` never.
    """
    if not isinstance(k, int) or k < 1:
        raise ValidationError("k", k, "k is a positive integer")
    def ranked(size: int) -> dict[str, list]:
        return ranked_columns(bank, text, pool=size, lexical=lexical, weights=weights, embedder=embedder,
                              index=index, query_vector=query_vector)

    lookup = edge_lookup(bank, sources=sources)
    if fold:
        answer = fold_refilled(ranked, lookup, pool=pool, k=k, protect=protect, neighbors=neighbors, query=text,
                               sources=lookup.sources)
    else:
        answer = flat(ranked(max(pool, k)), lookup, k=k, neighbors=0, query=text, sources=lookup.sources)
    if record_usage or (record_usage is None and not bank.readonly):
        bank.log_usage(answer.ids(), query=text)
    return answer
