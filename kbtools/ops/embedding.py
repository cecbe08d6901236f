"""Embedding a bank: an explicit write (``kb embed``, a job, or the write that adds an entry),
never a side effect of a read.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> from kbtools.ops.writes import report_learning
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
>>> _ = report_learning(bank, content="Restart the worker after a config change.", actor="a")
>>> embed_bank(bank, embedder="hashing")["embedded"]
1
"""

from __future__ import annotations


import numpy as np
import polars as pl

from kbtools.model.plan import Plan, VectorRows
from kbtools.progress import Progress, progress_callback
from kbtools.retrieval.embedders import Embedder, get_embedder
from kbtools.retrieval.index import DIMENSIONS
from kbtools.retrieval.search import bank_embedder, embed_rows, text_hashes
from kbtools.store.bank import Bank
from kbtools.store.embed_cache import EmbeddingCache

__all__ = ["embed_bank", "embed_new_rows"]


def embed_new_rows(rows: pl.DataFrame, embedder: Embedder) -> VectorRows:
    """Vectors for entry rows about to be written (cache first, then the embedder)."""
    hashes = text_hashes(rows)
    cache = EmbeddingCache(embedder.name)
    found, cached = cache.get(hashes)
    data = np.zeros((rows.height, len(DIMENSIONS), embedder.dim), dtype=np.float32)
    if cached is not None:
        data[found] = cached
    if (~found).any():
        fresh = embed_rows(rows.filter(pl.Series(~found)), embedder)
        data[~found] = fresh
        cache.put(hashes[~found], fresh)
    return VectorRows(rows["id"].to_numpy(), data, embedder.name, hashes)


def embed_bank(bank: Bank, *, embedder: Embedder | str | None = None, rebuild: bool = False,
               progress: Progress = False, actor: str = "kb embed") -> dict:
    """Embed every entry whose vectors are missing or stale (its texts changed); with ``rebuild``
    embed all of them again, possibly with another embedder. Returns counts. ``progress=True``
    shows a ``tqdm.auto`` bar (a callback ``progress(done, total)`` also works; silent by default)."""
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
        ids, _, old = bank.vectors(with_hashes=True)
        known = dict(zip(ids.tolist(), old.tolist()))
        cur = entries["id"].to_list()
        todo = np.array([i for i, (eid, h) in enumerate(zip(cur, hashes.tolist())) if known.get(eid) != h], dtype=np.int64)
    if len(todo) == 0:
        return {"embedded": 0, "entries": entries.height, "embedder": emb.name}
    rows = entries[todo]
    cache = EmbeddingCache(emb.name)
    found, cached = cache.get(hashes[todo])
    data = np.zeros((len(todo), len(DIMENSIONS), emb.dim), dtype=np.float32)
    if cached is not None:
        data[found] = cached
    hits = int(found.sum())
    if (~found).any():
        step = None if progress is None else (lambda done, total: progress(hits + done, len(todo)))
        fresh = embed_rows(rows.filter(pl.Series(~found)), emb, progress=step)
        data[~found] = fresh
        cache.put(hashes[todo][~found], fresh)
    elif progress is not None:
        progress(len(todo), len(todo))  # every vector came from the text-hash cache

    def plan(b: Bank) -> Plan:
        live = b.entries.join(rows.select("id"), on="id", how="semi")
        keep = rows["id"].is_in(live["id"].implode()).to_numpy()
        return Plan(
            vectors=VectorRows(rows["id"].to_numpy()[keep], data[keep], emb.name, hashes[todo][keep]),
            replace_vectors=rebuild, settings={"embedder": emb.name},
        )

    bank.apply(plan, actor=actor, reason="embed")
    return {"embedded": int(len(todo)), "from_cache": int(found.sum()), "entries": entries.height, "embedder": emb.name}
