r"""Retrieval over a bank: entry vectors (one per search dimension), the faiss index over their
precombined vector, the BM25 arm, and the ranked pool that folding starts from.

The vectors are embedded once and kept by the store beside the tables; each carries a hash of the
texts it was built from, so only new or changed entries are embedded again. The index is a cache:
in memory per bank version, on disk with the fingerprint of the vectors and the embedder it was
built from (a stale or foreign index is never used: it is rebuilt).

>>> texts = entry_texts(pl.DataFrame({"title": ["T"], "summary": ["S"], "content": ["c"], "useful_for": ["u"],
...                                   "systems": [["ci", "k8s"]], "tasks": [[]]}))
>>> texts["systems"], texts["content"]
(['ci, k8s'], ['T. S\nc'])
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable, Mapping

import numpy as np
import polars as pl

from kbtools.model.config import DEFAULT_EMBEDDER, QUERY_DEFAULTS
from kbtools.retrieval.embedders import Embedder, get_embedder
from kbtools.errors import EmbedderMismatch, NotEmbedded, ValidationError
from kbtools.retrieval.index import DEFAULT_WEIGHTS, DIMENSIONS, MAX_DEAD_SHARE, VectorIndex, combine, index_kind
from kbtools.retrieval.lexical import BM25Index, rrf
from kbtools.store.bank import Bank
from kbtools.store.caches import cache_file, cached_file_meta, reseal_cache_file, write_cache_file
from kbtools.store.segments import (DELETED, SegmentMark, appended_rows, base_and_later, latest_in_first_order,
                                    segment_names, segments_frame, table_mark)
from kbtools.store.sidecars import DisplayRecords, read_display_records
from kbtools.store.vectors import (embedder_name, ids_in, pack_ids, segment_data, segment_ids, segments_after,
                                   vector_blocks, vector_count, vector_segments)

__all__ = [
    "display_rows",
    "keep_current",
    "pool_fetcher",
    "PoolDisplay",
    "SidecarDisplay",
    "entry_texts",
    "text_hashes",
    "bank_embedder",
    "bank_index",
    "bank_bm25",
    "ranked_pool",
    "ranked_columns",
]

#: Defaults of retrieval: the pool folding starts from, the index kind, RRF's k.


#: up to this many rows (a write's), :func:`entry_texts` reads the frame's values in Python: a
#: polars expression per column costs more than the rows
_FEW_ROWS = 64


def entry_texts(entries: pl.DataFrame) -> dict[str, list[str]]:
    """The text of each search dimension per entry (lists joined with ", ", null items left out)."""
    if entries.height <= _FEW_ROWS:
        return _few_entry_texts(entries)
    out = {}
    for dim in DIMENSIONS:
        col = entries[dim] if dim in entries.columns else pl.Series([None] * entries.height)
        if isinstance(col.dtype, pl.List):
            col = col.cast(pl.List(pl.String)).list.join(", ")
        out[dim] = col.fill_null("").to_list()
    if "title" in entries.columns:
        # what an entry says includes its title and one-sentence summary
        head = entries.select(
            pl.concat_str([pl.col("title").fill_null(""), pl.col("summary").fill_null("")], separator=". ")
            if "summary" in entries.columns else pl.col("title").fill_null("")
        ).to_series().to_list()
        out["content"] = [f"{h}\n{c}".strip() for h, c in zip(head, out["content"])]
    return out


def _few_entry_texts(entries: pl.DataFrame) -> dict[str, list[str]]:
    """:func:`entry_texts` of a few rows, value by value (what the polars expressions give)."""
    n = entries.height
    column = {name: entries[name].to_list() if name in entries.columns else [None] * n
              for name in (*DIMENSIONS, "title", "summary")}
    out = {}
    for dim in DIMENSIONS:
        if dim in entries.columns and isinstance(entries[dim].dtype, pl.List):
            out[dim] = ["" if v is None else ", ".join(str(x) for x in v if x is not None) for v in column[dim]]
        else:
            out[dim] = ["" if v is None else str(v) for v in column[dim]]
    if "title" in entries.columns:
        if "summary" in entries.columns:
            head = [f"{t or ''}. {s or ''}" for t, s in zip(column["title"], column["summary"])]
        else:
            head = [t or "" for t in column["title"]]
        out["content"] = [f"{h}\n{c}".strip() for h, c in zip(head, out["content"])]
    return out


def text_hashes(entries: pl.DataFrame) -> np.ndarray:
    """A stable 64-bit hash per entry of the texts its vectors are built from."""
    texts = entry_texts(entries)
    rows = zip(*(texts[d] for d in DIMENSIONS))
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b("\x1f".join(r).encode(), digest_size=8).digest(), "little") for r in rows),
        dtype=np.uint64, count=entries.height,
    )


def embed_rows(entries: pl.DataFrame, embedder: Embedder, *, batch: int = 256, progress: Callable | None = None) -> np.ndarray:
    texts = entry_texts(entries)
    n, d = entries.height, embedder.dim
    out = np.zeros((n, len(DIMENSIONS), d), dtype=np.float32)
    total = n * len(DIMENSIONS)
    done = reported = 0
    for j, dim in enumerate(DIMENSIONS):
        col = texts[dim]
        nonempty = np.flatnonzero([bool(t.strip()) for t in col])
        for start in range(0, len(nonempty), batch):
            idx = nonempty[start : start + batch]
            out[idx, j] = embedder.encode([col[i] for i in idx])
            done += len(idx)
            if progress:
                progress(done, total)
                reported = done
        done += n - len(nonempty)
    if progress and total and reported < total:
        progress(total, total)  # the last texts were empty: no batch reported the end
    return out


def bank_embedder(bank: Bank, embedder: Embedder | str | None = None) -> Embedder:
    """The embedder a bank's vectors come from (else the one its settings record, else the
    default); asking for another one once vectors exist is an error that says how to re-embed."""
    recorded = embedder_name(bank) or bank.settings.get("embedder")
    if isinstance(embedder, str):
        embedder = get_embedder(embedder)
    if embedder is None:
        return get_embedder(recorded) if recorded else get_embedder(DEFAULT_EMBEDDER)
    recorded = embedder_name(bank)  # before any vector is written, the setting is only a default
    if recorded and embedder.name != recorded:
        raise EmbedderMismatch(
            f"bank {bank.path} was embedded with {recorded!r}, not {embedder.name!r}; "
            f"re-embed it with `kb embed {bank.path} --embedder {embedder.name} --rebuild` "
            f"(or kb.embed_bank(bank, embedder={embedder.name!r}, rebuild=True))"
        )
    return embedder


#: index keys of the weights seen, by their values (a few: weights rarely vary)
_WEIGHT_KEYS: dict[tuple[float, ...], str] = {}


def _weights_key(weights: Mapping[str, float]) -> str:
    values = tuple(float(weights.get(d, 0.0)) for d in DIMENSIONS)
    key = _WEIGHT_KEYS.get(values)
    if key is None:  # (every query names its index by this key: made once per weights)
        key = json.dumps(dict(zip(DIMENSIONS, values)), sort_keys=True)
        if len(_WEIGHT_KEYS) < 64:
            _WEIGHT_KEYS[values] = key
    return key


def _check_weights(weights: Mapping[str, float] | None) -> Mapping[str, float]:
    if weights is None:
        return DEFAULT_WEIGHTS
    unknown = set(weights) - set(DIMENSIONS)
    if unknown:
        raise ValidationError("weights", sorted(unknown)[0], f"a search dimension; dimensions are {', '.join(DIMENSIONS)}")
    return {d: float(weights.get(d, 0.0)) for d in DIMENSIONS}


def bank_index(bank: Bank, *, kind: str = "auto", weights: Mapping[str, float] | None = None) -> VectorIndex:
    """The faiss index over the bank's precombined vectors (active entries only), from memory, from
    the on-disk cache when its fingerprint matches (a file faiss reads itself, memory-mapped where
    the index type allows), or built (and cached). When entries were only added since, the previous
    index grows by them instead of being rebuilt, and entries deleted or superseded since are
    removed from it in place (masked) until dead rows pass ``MAX_DEAD_SHARE`` (20 %) of it, when it
    is rebuilt. ``kind="auto"``: exact below
    :data:`~kbtools.retrieval.index.APPROXIMATE_FROM` entries, ``hnsw`` from it, ``ivf_sq8`` from
    :data:`~kbtools.retrieval.index.IVF_FROM`."""
    weights = _check_weights(weights)
    kind = index_kind(kind, _entry_count(bank))  # the row count, without usage counted in
    name = f"index:{kind}:{_weights_key(weights)}"

    def build(prior: VectorIndex | None) -> VectorIndex:
        segs = [s["data"] for s in vector_segments(bank)]
        mark = SegmentMark(segment_names(bank, "entries"))
        fp = hashlib.sha256(
            json.dumps([embedder_name(bank), segs, _weights_key(weights), kind, bank.fingerprint(("entries", "vectors"))]).encode()
        ).hexdigest()[:24]
        # the write path of agents adding entries: only the new segments are read
        idx = _appended(prior, bank, weights)
        if idx is not None:  # nothing else to read (the blocks' id index is costly at 100k)
            idx.fingerprint, idx.segments, idx.mark = fp, segs, mark
            return idx
        earlier = None
        if prior is None:
            idx = _cached_index(bank, kind, fp)
            if idx is None:  # a cache file of an earlier snapshot: grown below, not rebuilt
                prior = earlier = _earlier_cached_index(bank, kind, weights, segs)
                was = getattr(earlier, "fingerprint", None)
        # every other read of the vectors streams blocks from the memory-mapped segments (never joined);
        # this snapshot's own index file holds exactly its active entries with vectors: no table read
        live = idx.ids if idx is not None else _active_ids(bank)
        blocks = vector_blocks(bank, ids=live)
        fresh = None
        if idx is None and prior is not None:
            fresh = segments_after(bank, getattr(prior, "segments", None) or [])
        if fresh is not None:
            # vectors written since it was built: in the segments after its own, and in the later
            # segments a compaction folded in with them (``appended``, see ``Bank._carry_caches``)
            parts = [segment_ids(bank, sg) for sg in fresh] + [np.asarray(getattr(prior, "appended", ()), dtype=str)]
            rewritten = np.concatenate(parts)
            # the segments as the index knows them, then those after (a tail merge's rows are theirs)
            idx = grown_index(prior, [*prior.segments, *(sg["data"] for sg in fresh)], blocks.ids, blocks.only,
                              weights, rewritten)
            if idx is not None and earlier is not None and _as_built(idx, blocks.ids):
                # the file holds what a build for this snapshot would (a compaction rewrote the
                # tables, not what they hold): sealed for it, the next process reads it as it is
                reseal_cache_file(bank, f"index-{kind}.kbx", was, fp, _cache_meta(bank, kind, weights, segs))
        if idx is None:
            idx = VectorIndex.build_blocks(blocks.ids, lambda: (combine(d, weights) for _, d in blocks),
                                           dim=blocks.shape[2], kind=kind, threads=_build_threads(len(blocks.ids)))
            if len(blocks.ids) >= 5000:  # small indexes build faster than they load
                write_cache_file(bank, f"index-{kind}.kbx", fp, idx.write,
                                      meta=_cache_meta(bank, kind, weights, segs))
        idx.fingerprint = fp
        idx.segments = segs
        idx.mark = mark
        if idx.refine is None and idx.n_dead == 0 and len(idx.ids) == len(blocks.ids) \
                and np.array_equal(idx.ids, blocks.ids):  # (a side index's rows come after the main's)
            # approximate kinds re-score their candidates with the stored vectors (read from the
            # mapped segments, only the candidates' rows): exact scores, recall of the candidates
            idx.refine_with(lambda positions: combine(blocks.rows(positions), weights))
        return idx

    index = bank.derived(name, build, on=("entries", "vectors"), grow=True)
    _served(bank).add(name)
    return index


def _served(bank: Bank) -> set:
    """The names of the query indexes this process built for ``bank`` (a value of no table: it
    lasts from one snapshot to the next)."""
    return bank.derived("served-indexes", set, on=())


def _as_built(idx: VectorIndex, live: np.ndarray) -> bool:
    """Whether ``idx`` holds exactly the rows a build over ``live`` would, in its order (nothing
    added beside it, nothing removed)."""
    return ((idx.delta is None or idx.delta.ntotal == 0) and idx.n_dead == 0 and len(idx.ids) == len(live)
            and bool(np.array_equal(idx.ids, live)))


def _build_threads(n: int) -> int:
    import os

    return 1 if n < 50_000 else max(1, min(8, os.cpu_count() or 1))


class _Rows:
    """Rows ``picked`` of a vector view, gathered only when indexed (``rows[mask]``)."""

    def __init__(self, data, picked: np.ndarray):
        self.data, self.picked = data, picked

    def __len__(self) -> int:
        return len(self.picked)

    def __getitem__(self, key):
        return self.data[self.picked[np.asarray(key)]]


def _cached_index(bank: Bank, kind: str, fp: str) -> VectorIndex | None:
    """The index cached on disk for ``fp``, read by faiss from its file (memory-mapped); None when
    there is none or it does not load (a damaged cache is rebuilt, never trusted)."""
    path = cache_file(bank, f"index-{kind}.kbx", fp)
    if path is None:
        return None
    try:
        return VectorIndex.read(path, kind=kind, fingerprint=fp)
    except Exception:  # noqa: BLE001 - a cache that does not load is rebuilt
        return None


def _cache_meta(bank: Bank, kind: str, weights, segs: list) -> dict:
    """What an index cache file was built from, beyond its snapshot's fingerprint: a later snapshot
    with the same embedder, weights and kind, whose vector segments start with these, can grow it."""
    return {"embedder": embedder_name(bank), "weights": _weights_key(weights), "kind": kind, "segments": list(segs)}


def _earlier_cached_index(bank: Bank, kind: str, weights, segs: list) -> VectorIndex | None:
    """The index cached for an earlier snapshot of this bank (entries changed since: linked, added,
    deleted; or vectors appended), read from its file to be grown in place by ``grown_index`` (a fresh
    process after a write reads the new rows only, instead of rebuilding a million-entry index);
    None when there is none or it was built from other vectors, weights or kind."""
    found = cached_file_meta(bank, f"index-{kind}.kbx")
    if found is None:
        return None
    path, fp, meta = found
    old = meta.get("segments")
    if (not isinstance(old, list) or meta.get("embedder") != embedder_name(bank) or meta.get("kind") != kind
            or meta.get("weights") != _weights_key(weights) or segments_after(bank, old) is None):
        return None
    try:
        idx = VectorIndex.read(path, kind=kind, fingerprint=fp)
    except Exception:  # noqa: BLE001 - a cache that does not load is rebuilt
        return None
    idx.segments = list(old)
    idx.appended = list(meta.get("appended_ids") or [])
    return idx


def _appended(prior: VectorIndex | None, bank: Bank, weights) -> VectorIndex | None:
    """``prior`` grown by the vectors of the segments appended since it was built, when the
    entries only gained rows since and every new vector belongs to a new entry (the write path of
    agents adding entries); None otherwise. Reads only the new segments, never the whole array."""
    old = getattr(prior, "segments", None)
    new_segs = None if prior is None or old is None else segments_after(bank, old)
    if new_segs is None:
        return None
    added = _added_since(bank, getattr(prior, "mark", None))
    if added is None:
        return None
    if not new_segs:
        return prior if added.height == 0 else None  # entries without vectors: the full check
    ids = np.concatenate([segment_ids(bank, sg) for sg in new_segs])
    if len(ids) > 4096 or len(ids) != added.height:
        return None
    listed, added_ids = ids.tolist(), added["id"].to_list()
    if len(set(listed)) != len(listed) or set(listed) != set(added_ids) or prior.holds_any(listed):
        return None
    data = np.concatenate([np.asarray(segment_data(bank, sg), dtype=np.float32) for sg in new_segs])
    live = {i for i, status in zip(added_ids, added["status"].to_list()) if status == "active"}
    active = np.array([i in live for i in listed], dtype=bool)  # (a few rows: no frame filter)
    if active.any():
        prior.add(ids[active].tolist(), combine(data[active], weights))
    return prior


def _added_since(bank: Bank, mark) -> pl.DataFrame | None:
    """The latest version of each entry written since ``mark`` (a :class:`SegmentMark` of an
    earlier snapshot), read from the segments after those it names (this process's own writes are
    not read back), when none of them is a tombstone; None when anything else changed."""
    if not isinstance(mark, SegmentMark):
        return None
    names = segment_names(bank, "entries")
    if names[: len(mark.names)] != mark.names:
        return None
    try:
        rows = segments_frame(bank, "entries", names[len(mark.names):])
    except FileNotFoundError:  # swept by a compaction since: rebuilt from the tables
        return None
    if rows is None:
        return pl.DataFrame(schema={"id": pl.String, "status": pl.String})
    if any(rows.get_column(DELETED).to_list()):
        return None
    return latest_in_first_order(rows, ["id"])


def grown_index(prior: VectorIndex | None, segs: list, live: np.ndarray, read: Callable, weights,
                rewritten=()) -> VectorIndex | None:
    """The previous index, changed in place, when only entries were added, deleted or superseded
    since (else None: rebuild). New entries are added; an entry re-embedded since (its text
    changed) has its old row removed and its new one added; entries that left (deleted, superseded,
    archived) are removed in place (masked: every search skips them, see ``VectorIndex.remove``)
    until dead rows would pass :data:`~kbtools.retrieval.index.MAX_DEAD_SHARE` of the index, when
    it is rebuilt instead."""
    old_segs = getattr(prior, "segments", None)
    if prior is None or old_segs is None or segs[: len(old_segs)] != old_segs:
        return None
    before = prior.live_ids()
    gone = ~ids_in(before, live)
    if len(rewritten):  # entries re-embedded (their text changed): the old row goes, the new one is added
        gone |= ids_in(before, np.asarray(rewritten, dtype=str))
    if gone.any():  # an entry left (deleted, superseded, archived)
        total = len(prior.ids)
        if (prior.n_dead + int(gone.sum())) > MAX_DEAD_SHARE * total:
            return None
        prior.remove(before[gone])
    known = ids_in(live, prior.live_ids())
    if (~known).any():  # read only the new rows
        for new_ids, data in read(live[~known]):
            prior.add(new_ids.tolist(), combine(data, weights))
    return prior


class PoolDisplay:
    """Each entry's row number and the columns a pool shows, held as Python values (one list per
    column, in :data:`COLUMNS` order): a query reads its twenty rows by position, without
    gathering or building a frame; rows appended since are appended to the lists in place."""

    __slots__ = ("rows", "columns", "mark")
    #: the columns held, in the order :meth:`take` returns them
    COLUMNS = ("id", "title", "summary", "kind", "steps", "status")

    def __init__(self, rows: dict, columns: tuple[list, ...], mark):
        self.rows, self.columns, self.mark = rows, columns, mark

    @classmethod
    def of(cls, frame: pl.DataFrame, mark=None) -> "PoolDisplay":
        """The display of ``frame``'s rows (it has the :data:`COLUMNS`)."""
        columns = _display_columns(frame)
        return cls(dict(zip(columns[0], range(len(columns[0])))), columns, mark)

    def grown(self, added: pl.DataFrame, mark) -> "PoolDisplay":
        """This display and ``added``'s rows after it (the lists are extended, not copied)."""
        new = _display_columns(added)
        start = len(self.columns[0])
        self.rows.update(zip(new[0], range(start, start + len(new[0]))))
        for column, more in zip(self.columns, new):
            column.extend(more)
        return PoolDisplay(self.rows, self.columns, mark)

    @property
    def count(self) -> int:
        """The rows held (the entries table's rows)."""
        return len(self.columns[0])

    def find(self, ids: list[str]) -> list[int | None]:
        """The position of each of ``ids`` (None where it is not an entry)."""
        rows = self.rows
        return [rows.get(i) for i in ids]

    def take(self, positions: list[int]) -> list[tuple]:
        """The display rows at these positions, in this order, as tuples in :data:`COLUMNS` order
        (steps a new list, or None)."""
        ids, titles, summaries, kinds, steps, status = self.columns
        return [(ids[p], titles[p], summaries[p], kinds[p], None if steps[p] is None else list(steps[p]), status[p])
                for p in positions]


def _display_columns(frame: pl.DataFrame) -> tuple[list, ...]:
    """The display columns of ``frame`` as lists: kinds and statuses share one string object per
    value, steps are tuples (None where null)."""
    shared: dict = {}
    return (frame["id"].to_list(), frame["title"].to_list(), frame["summary"].to_list(),
            [shared.setdefault(v, v) for v in frame["kind"].to_list()], _steps(frame["steps"]),
            [shared.setdefault(v, v) for v in frame["status"].to_list()])


def _steps(steps: pl.Series) -> list:
    """Each row's steps as a tuple, None where null: only the rows with steps are converted (most
    rows have none, and a Python list made for every row is the dearest part of the display);
    a few rows (an append) are converted directly."""
    if len(steps) <= 64:
        return [None if v is None else tuple(v) for v in steps.to_list()]
    lengths = steps.list.len().to_numpy()  # a float array where some are null (NaN)
    held: list = [None] * len(steps)
    for i in np.flatnonzero(lengths == 0).tolist():
        held[i] = ()
    full = np.flatnonzero(lengths > 0)
    for i, value in zip(full.tolist(), steps.gather(full).to_list()):
        held[i] = tuple(value)
    return held


class SidecarDisplay:
    """The pool's display rows read from the base entries segment's sidecar
    (:class:`~kbtools.store.sidecars.DisplayRecords`, memory-mapped: a query reads its own rows
    only) and the rows of the segments written after it (``later``: id -> display row, None for a
    deleted entry), with the interface of :class:`PoolDisplay`: positions past the sidecar's
    records are rows of ``later``."""

    __slots__ = ("records", "later", "listed", "fresh", "count", "mark")

    def __init__(self, records: DisplayRecords, mark: SegmentMark):
        self.records, self.mark = records, mark
        self.later: dict[str, int | None] = {}  # id -> position in ``listed`` (None: deleted)
        self.listed: list[tuple] = []
        self.fresh: set[str] = set()  # live ids the sidecar does not hold
        self.count = len(records)

    def applied(self, rows: pl.DataFrame, mark: SegmentMark) -> "SidecarDisplay":
        """This display with ``rows`` (entries rows written after what it covers, ``_deleted``
        included, oldest first) applied; shares this one's state (it is the newer of the two)."""
        before = self.records.find(rows["id"].to_list())
        deleted = rows[DELETED].to_list()
        for row, in_base, gone in zip(zip(*_display_columns(rows)), before, deleted):
            eid = row[0]
            was = self.later[eid] is not None if eid in self.later else in_base is not None
            if gone:
                self.later[eid] = None
                self.fresh.discard(eid)
            else:
                self.later[eid] = len(self.listed)
                self.listed.append(row)
                if in_base is None:
                    self.fresh.add(eid)
            self.count += (not gone) - was
        out = SidecarDisplay.__new__(SidecarDisplay)
        out.records, out.later, out.listed, out.fresh, out.count, out.mark = (
            self.records, self.later, self.listed, self.fresh, self.count, mark)
        return out

    def find(self, ids: list[str]) -> list[int | None]:
        """The position of each of ``ids`` (None where it is not an entry)."""
        later = self.later
        base = iter(self.records.find([i for i in ids if i not in later]))
        n = len(self.records)
        return [next(base) if i not in later else (None if later[i] is None else n + later[i]) for i in ids]

    def active_ids(self):
        """The ids of the active entries (in no set order), packed
        (:func:`~kbtools.store.vectors.pack_ids`) where every id packs, else as strings."""
        later, listed = self.later, self.listed
        base = self.records.packed_ids(np.flatnonzero(self.records.active))
        added = np.array([eid for eid, at in later.items() if at is not None and listed[at][5] == "active"], dtype=str)
        if not later:
            return base
        changed, added_packed = pack_ids(np.array(list(later), dtype=str)), pack_ids(added)
        if changed is None or added_packed is None:  # an id that does not pack: as strings
            ids = self.records.ids_of(base)
            return np.concatenate([ids[~np.isin(ids, np.array(list(later), dtype=str))], added])
        return np.concatenate([base[~np.isin(base, changed)], added_packed])

    def take(self, positions: list[int]) -> list[tuple]:
        """The display rows at these positions, as :meth:`PoolDisplay.take` gives them."""
        n = len(self.records)
        base = iter(self.records.take([p for p in positions if p < n]))
        listed = self.listed
        return [_shown(next(base) if p < n else listed[p - n]) for p in positions]


def _shown(row: tuple) -> tuple:
    """A held display row as :meth:`PoolDisplay.take` gives it (steps a new list, or None)."""
    return row[:4] + (None if row[4] is None else list(row[4]), row[5])


def _display(bank: Bank) -> PoolDisplay | SidecarDisplay:
    """The pool's display rows of the bank's entries (cached; grown when entries were only
    added): from the base segment's sidecar when it has one (:class:`SidecarDisplay`), else built
    from the entries table."""

    def build(prior):
        if prior is None or isinstance(prior, SidecarDisplay):
            out = _sidecar_display(bank, prior)
            if out is not None:
                return out
            prior = None
        mark = table_mark(bank, "entries")
        added = None if prior is None else _appended_entries(bank, prior.mark)
        if added is not None:  # entries were only added: extend, do not rebuild
            return prior.grown(added, mark)
        return PoolDisplay.of(bank.entries, mark)

    return bank.derived("pool-display", build, on=("entries",), grow=True)


def _appended_entries(bank: Bank, mark) -> pl.DataFrame | None:
    """The display columns of the entries appended since ``mark`` (see ``appended_rows``), read
    once per bank version and mark: the index and the display rows grow from the same rows."""
    if mark is None:
        return None
    read = bank.derived("appended-entries", dict, on=("entries",))
    if mark not in read:
        read[mark] = appended_rows(bank, "entries", mark, columns=PoolDisplay.COLUMNS)
    return read[mark]


def _sidecar_display(bank: Bank, prior: SidecarDisplay | None) -> SidecarDisplay | None:
    """The display from the base entries segment's sidecar (or ``prior``, read so, when the
    segments it covers still lead the snapshot's) and the segments after it; None without one."""
    def read_base(first: str) -> SidecarDisplay | None:
        records = read_display_records(bank, first)
        return None if records is None else SidecarDisplay(records, SegmentMark((first,)))

    found = base_and_later(bank, "entries", prior, read_base)
    if found is None:
        return None
    base, rows, mark = found
    return base if rows is None else base.applied(rows, mark)


def _active_ids(bank: Bank):
    """The ids of the bank's active entries (from the display's sidecar where it has one)."""
    display = _display(bank)
    if isinstance(display, SidecarDisplay):
        return display.active_ids()
    return bank.entries.filter(pl.col("status") == "active")["id"]


def _entry_count(bank: Bank) -> int:
    """The rows of the entries table (usage not counted in), without reading it where the
    display is read from its sidecar."""
    display = _display(bank)
    return display.count if isinstance(display, SidecarDisplay) else table_mark(bank, "entries")[1]


def _unembedded(bank: Bank, entries: int) -> int:
    """How many of the ``entries`` entries have no vector (once per snapshot). Where the display
    is read from its sidecar and the vector segments start with those its compaction found every
    entry in, only the entries written since are looked up, in the vector segments written since:
    their ids are kept from one snapshot to the next, so a write's query reads its own segment's."""
    def count(prior) -> tuple:
        display = _display(bank)
        covered = display.records.vectors if isinstance(display, SidecarDisplay) else None
        segs = vector_segments(bank)
        if covered is not None and [s["data"] for s in segs[: len(covered)]] == covered:
            later_names = tuple(s["data"] for s in segs[len(covered):])
            after, later = None, set()
            if prior is not None and prior[1] == covered:  # (grown in place: a snapshot's value is read once)
                after, later = segments_after(bank, [*covered, *prior[2]]), prior[3]
            if after is None:
                after, later = segs[len(covered):], set()
            for sg in after:
                later.update(segment_ids(bank, sg).tolist())
            return len(display.fresh - later) if display.fresh else 0, covered, later_names, later
        return max(entries - vector_count(bank), 0), None, (), set()

    return bank.derived("unembedded", count, on=("entries", "vectors"), grow=True)[0]


def keep_current(bank: Bank) -> None:
    """Grow the values a default query reads (the index, the pool's display rows, the counts of
    entries and of those without vectors) to this snapshot, where this process built them for an
    earlier one: a write that calls it after its commit pays the growth by its own rows, and the
    query after it does not. Nothing a query has not built is built; a value that cannot be grown
    is left for the next query to build (and to say what is wrong).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> keep_current(bank); _served(bank)
    set()
    """
    served = _served(bank)
    if not served:
        return
    try:
        entries = _entry_count(bank)  # (a query built the display rows before its index)
        if entries:
            _unembedded(bank, entries)
        if f"index:{index_kind('auto', entries)}:{_weights_key(DEFAULT_WEIGHTS)}" in served:
            bank_index(bank)
    except Exception:  # noqa: BLE001 - the write is committed; the next query rebuilds and raises
        pass


def display_rows(bank: Bank, ids) -> dict[str, dict]:
    """Title, summary, kind and steps of those of ``ids`` that are active entries, by id: read from
    the pool's display rows (grown when entries are only added), never from a pass over the bank.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> display_rows(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), ["a1b2c3d4"])
    {}
    """
    display = _display(bank)
    found = display.take([p for p in display.find(list(dict.fromkeys(ids))) if p is not None])
    return {row[0]: dict(zip(_SHOWN, row)) for row in found if row[5] == "active"}


#: the fields :func:`display_rows` returns, in :attr:`PoolDisplay.COLUMNS` order
_SHOWN = ("id", "title", "summary", "kind", "steps")
#: the columns of a ranked pool
POOL_SCHEMA = {"id": pl.String, "score": pl.Float64, "title": pl.String, "summary": pl.String,
               "kind": pl.String, "steps": pl.List(pl.String)}


def _bm25_text(entries: pl.DataFrame) -> list[str]:
    return entries.select(
        pl.concat_str([pl.col("title").fill_null(""), pl.col("summary").fill_null(""), pl.col("content").fill_null(""),
                       pl.col("useful_for").fill_null("")], separator="\n")
    ).to_series().to_list()


def bank_bm25(bank: Bank) -> BM25Index:
    """The BM25 index over active entries' title, summary, content and useful-for line."""

    def build() -> BM25Index:
        active = bank.entries.filter(pl.col("status") == "active")
        return BM25Index.build(active["id"].to_list(), _bm25_text(active))

    return bank.derived("bm25", build, on=("entries",))


def ranked_pool(
    bank: Bank, text: str, *, pool: int = 20, lexical: bool = False, weights: Mapping[str, float] | None = None,
    embedder: Embedder | str | None = None, index: str = QUERY_DEFAULTS.index, query_vector: np.ndarray | None = None,
) -> pl.DataFrame:
    """The ranked candidate pool for ``text``: id, score, title, summary, kind, steps (best first).

    Dense: weighted cosine over the four dimensions (one precombined vector per entry). With
    ``lexical`` a BM25 ranking is fused with the dense one by reciprocal rank fusion (k = 60).
    The frame of :func:`ranked_columns`.
    """
    return pl.DataFrame(ranked_columns(bank, text, pool=pool, lexical=lexical, weights=weights, embedder=embedder,
                                       index=index, query_vector=query_vector), schema=POOL_SCHEMA)


def pool_fetcher(bank: Bank, text: str, first: pl.DataFrame | None = None, **options) -> Callable[[int], pl.DataFrame]:
    """``size -> ranked_pool(bank, text, pool=size, **options)``: the ranking that
    :func:`~kbtools.retrieval.folding.fold_refilled` fetches deeper; ``first``, a pool fetched
    already, is given back for its own size instead of searched again."""
    def fetch(size: int) -> pl.DataFrame:
        if first is not None and size == first.height:
            return first
        return ranked_pool(bank, text, pool=size, **options)

    return fetch


def ranked_columns(
    bank: Bank, text: str, *, pool: int = 20, lexical: bool = False, weights: Mapping[str, float] | None = None,
    embedder: Embedder | str | None = None, index: str = QUERY_DEFAULTS.index, query_vector: np.ndarray | None = None,
) -> dict[str, list]:
    """:func:`ranked_pool`'s columns as lists (the query path folds them without building a frame)."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("text", text, "a query is a non-empty string")
    if pool < 1:
        raise ValidationError("pool", pool, "the pool holds at least one candidate")
    if query_vector is None or embedder is not None:  # the embedder loads only to embed text
        emb = bank_embedder(bank, embedder)
    entries = _entry_count(bank)  # the row count: the usage log need not be counted in
    missing = _unembedded(bank, entries) if entries else 0
    if missing:
        raise NotEmbedded(bank.path, missing, entries)
    q = query_vector if query_vector is not None else emb.encode([text])[0]
    idx = bank_index(bank, kind=index, weights=weights)
    depth = pool if not lexical else max(pool, QUERY_DEFAULTS.lexical_depth)
    scores, ids = idx.search(np.asarray(q, dtype=np.float32)[None, :], min(depth, max(idx.size, 1)))
    dense = [(i, float(s)) for i, s in zip(ids[0].tolist(), scores[0].tolist()) if i is not None and i != ""]
    if lexical:
        lex_ids, _ = bank_bm25(bank).search(text, depth)
        fused = rrf([[i for i, _ in dense], list(lex_ids)], k=QUERY_DEFAULTS.rrf_k)
        ranked = fused[:pool]
    else:
        ranked = dense[:pool]
    if not ranked:
        return {name: [] for name in POOL_SCHEMA}
    display = _display(bank)
    found = display.find([i for i, _ in ranked])
    keep = [(r, p) for r, p in zip(ranked, found) if p is not None]
    rows = display.take([p for _, p in keep])
    ids, titles, summaries, kinds, steps, _ = zip(*rows) if rows else ([],) * 6
    return {"id": list(ids), "score": [float(s) for (_, s), _ in keep], "title": list(titles), "summary": list(summaries),
            "kind": list(kinds), "steps": list(steps)}
