"""Embedding a bank: an explicit write (``kb embed``, a job, or the write that adds an entry),
never a side effect of a read.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> from kbtools.ops.writes import report_learning
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", embedder=None)
>>> _ = report_learning(bank, content="Restart the worker after a config change.", actor="a")
>>> embed_bank(bank, embedder="hashing")["embedded"]
1
>>> _ = report_learning(bank, content="Drain the queue before a deploy.", actor="a")  # embedded by its write
>>> embed_bank(bank)["embedded"]
0
"""

from __future__ import annotations


import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.plan import Plan, VectorRows
from kbtools.progress import Progress, progress_callback
from kbtools.retrieval.embedders import Embedder, get_embedder
from kbtools.retrieval.index import DIMENSIONS
from kbtools.retrieval.search import bank_embedder, embed_rows, text_hashes
from kbtools.store.bank import Bank
from kbtools.store.embed_cache import EmbeddingCache
from kbtools.store.vectors import entry_vectors
from kbtools.store.segments import table_mark
from kbtools.store.vectors import embedder_name, vector_count

__all__ = ["embed_bank", "embed_new_rows", "write_embedder", "vectors_for_write", "vector_cache", "CACHE_FROM_ROWS", "EMBED_CHUNK", "FLOAT16_FROM"]


def write_embedder(bank: Bank) -> str | None:
    """The embedder a write embeds what it adds or changes with, or None: the bank's vectors'
    embedder when it has vectors, else the one its settings record when every entry has a vector
    (a new bank: zero of zero), so a bank that answers queries keeps answering after each write.
    A bank with entries but no vectors stays as it is until ``kb embed``.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> write_embedder(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
    'minilm-int8'
    >>> write_embedder(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", embedder=None)) is None
    True
    """
    if embedder_name(bank):
        return embedder_name(bank)
    name = bank.settings.get("embedder")
    if name and vector_count(bank) >= table_mark(bank, "entries")[1]:
        return name
    return None


def vectors_for_write(bank: Bank, rows: pl.DataFrame, *, before: pl.DataFrame | None = None,
                      progress: Progress = None) -> VectorRows | None:
    """Vectors of the entry ``rows`` a write adds or changes, for the same transaction (None when
    the bank's writes do not embed, see :func:`write_embedder`, or no row's embedded text is new
    or changed). ``before``: the rows as they are now, for rows that exist (only those whose
    embedded text changed are embedded again). Texts already embedded come from the cache by
    text hash. ``progress`` (see :mod:`kbtools.progress`) reports the texts embedded, for an
    import of many rows."""
    name = write_embedder(bank)
    if name is None or rows.height == 0:
        return None
    if before is not None and before.height:  # an update: only rows whose embedded text changed
        old = dict(zip(before["id"].to_list(), text_hashes(before).tolist()))
        fresh = [old.get(i) != h for i, h in zip(rows["id"].to_list(), text_hashes(rows).tolist())]
        rows = rows.filter(pl.Series(fresh))
        if rows.height == 0:
            return None
    return embed_new_rows(rows, bank_embedder(bank, name if not embedder_name(bank) else None), progress=progress)


def embed_new_rows(rows: pl.DataFrame, embedder: Embedder, *, progress: Progress = None) -> VectorRows:
    """Vectors for entry rows about to be written (cache first, then the embedder, ``progress``
    reporting the texts it embeds; rows whose texts were all embedded before report their end)."""
    hashes = text_hashes(rows)
    cache = vector_cache(embedder, rows.height)
    found, cached = cache.get(hashes)
    data = np.zeros((rows.height, len(DIMENSIONS), embedder.dim), dtype=np.float32)
    if cached is not None:
        data[found] = cached
    report = progress_callback(progress, "embed")
    if (~found).any():
        fresh = embed_rows(rows.filter(pl.Series(~found)), embedder, progress=report)
        data[~found] = fresh
        cache.put(hashes[~found], fresh)
    elif report is not None and rows.height:
        report(rows.height * len(DIMENSIONS), rows.height * len(DIMENSIONS))
    return VectorRows(rows["id"].to_numpy(), data, embedder.name, hashes)


#: A write of fewer entries than this skips the text-hash cache when its embedder is cheap (see
#: :func:`vector_cache`); a bulk embed or import of more uses it with any embedder.
CACHE_FROM_ROWS = 64


def vector_cache(embedder: Embedder, rows: int) -> EmbeddingCache:
    """The cache of ``embedder``'s vectors by text hash for embedding ``rows`` entries. It spares a
    re-embed of what was embedded before (a bank rebuilt, a copy imported), and costs a look-up in
    every shard and a new shard per write: for a write of under :data:`CACHE_FROM_ROWS` entries it
    is on only where embedding costs more than that (``worth_caching``: MiniLM, not the static
    table or hashing); an embedder that does not say is cached.

    >>> from kbtools.retrieval.embedders import get_embedder
    >>> vector_cache(get_embedder("hashing"), 1).enabled, vector_cache(get_embedder("minilm-int8"), 1).enabled
    (False, True)
    """
    worth = bool(getattr(embedder, "worth_caching", True)) or rows >= CACHE_FROM_ROWS
    return EmbeddingCache(embedder.name, enabled=worth)


#: Entries embedded and committed per step: one vector segment each, so memory stays bounded.
EMBED_CHUNK = 50_000
#: From this many entries vectors are stored as float16 (half the bytes; cosines change by < 1e-3).
FLOAT16_FROM = 100_000


def embed_bank(bank: Bank, *, embedder: Embedder | str | None = None, rebuild: bool = False,
               progress: Progress = False, actor: str = "kb embed", chunk: int = EMBED_CHUNK) -> dict:
    """Embed every entry whose vectors are missing or stale (its texts changed); with ``rebuild``
    embed all of them again, possibly with another embedder. Returns counts. ``progress=True``
    shows a ``tqdm.auto`` bar (a callback ``progress(done, total)`` also works; silent by default).

    Streamed: ``chunk`` entries at a time are embedded and committed as one vector segment, so a
    million entries embed in bounded memory and a killed run keeps the chunks it committed. Banks of
    :data:`FLOAT16_FROM` entries or more store float16 vectors."""
    if chunk < 1:
        raise ValidationError("chunk", chunk, "embed at least one entry per step")
    progress = progress_callback(progress, "embed")
    if rebuild:
        emb = get_embedder(embedder) if isinstance(embedder, str) else (embedder or bank_embedder(bank))
    else:
        emb = bank_embedder(bank, embedder)
    entries = bank.entries
    hashes = text_hashes(entries)
    if rebuild:
        todo = np.arange(entries.height)
    else:
        ids, _, old = entry_vectors(bank, with_hashes=True)
        stale = pl.DataFrame({"id": entries["id"], "h": hashes}).join(
            pl.DataFrame({"id": ids.astype(str).tolist(), "old": old}, schema={"id": pl.String, "old": pl.UInt64}),
            on="id", how="left", maintain_order="left")
        todo = np.flatnonzero((stale["old"].is_null() | (stale["old"] != stale["h"])).to_numpy())
    if len(todo) == 0:
        return {"embedded": 0, "entries": entries.height, "embedder": emb.name}
    dtype = np.float16 if entries.height >= FLOAT16_FROM else np.float32
    cache = vector_cache(emb, len(todo))
    hits = 0
    for start in range(0, len(todo), chunk):
        part = todo[start : start + chunk]
        step = None if progress is None else (lambda done, total, s=start: progress(s + done, len(todo)))
        hits += _embed_chunk(bank, entries[part], hashes[part], emb, cache, dtype, step,
                             replace=rebuild and start == 0, actor=actor)
    return {"embedded": int(len(todo)), "from_cache": hits, "entries": entries.height, "embedder": emb.name,
            "segments": -(-len(todo) // chunk), "dtype": np.dtype(dtype).name}


def _embed_chunk(bank: Bank, rows: pl.DataFrame, hashes: np.ndarray, emb: Embedder, cache: EmbeddingCache, dtype,
                 progress, *, replace: bool, actor: str) -> int:
    """Embed ``rows`` (text-hash cache first) and commit them as one vector segment; returns cache hits."""
    found, cached = cache.get(hashes)
    data = np.zeros((rows.height, len(DIMENSIONS), emb.dim), dtype=dtype)
    if cached is not None:
        data[found] = cached
    if (~found).any():
        hits = int(found.sum())
        fresh_rows = rows.height - hits  # embed_rows counts texts (one per dimension of an entry): read as entries
        step = None if progress is None else (
            lambda done, total: progress(hits + done * fresh_rows // max(total, 1), rows.height))
        fresh = embed_rows(rows.filter(pl.Series(~found)), emb, progress=step)
        data[~found] = fresh
        cache.put(hashes[~found], fresh)
        del fresh
    elif progress is not None:
        progress(rows.height, rows.height)  # every vector came from the text-hash cache

    def plan(b: Bank) -> Plan:
        keep = rows["id"].is_in(b.entries["id"].implode()).to_numpy()
        return Plan(vectors=VectorRows(rows["id"].to_numpy()[keep], data[keep], emb.name, hashes[keep]),
                    replace_vectors=replace, settings={"embedder": emb.name})

    bank.apply(plan, actor=actor, reason="embed")
    return int(found.sum())
