"""What the linker reads from a bank, cached on the bank and grown on append: its settings, its
term statistics, the content vectors in row order and a nearest-neighbour index over them; and the
plan of links for entries that are about to be written (the write-time linker inside one
transaction).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> linker_settings(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")).max_new
5
"""

from __future__ import annotations

import functools
import itertools
import os
import threading

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.linker import LINKER_DEFAULTS, LINKER_LEXICAL, LinkerSettings, LinkPlan, TermStats, plan_links
from kbtools.linker.anchors import AnchorRows, anchor_frame
from kbtools.linker.rules import RETIRED_SETTINGS
from kbtools.linker.terms import ANCHOR_COLUMNS, PART_COLUMNS, STATS_COLUMNS, anchor_keys, fill_anchors
from kbtools.retrieval.index import ivf_nprobe
from kbtools.store.bank import Bank
from kbtools.store.caches import cache_file, cached_file_meta, write_cache_file
from kbtools.store.segments import appended_rows, key_mark, rows_finder, table_mark
from kbtools.store.vectors import (embedder_name, entry_vectors, segment_data, segment_ids, segments_after,
                                   vector_segments)

__all__ = ["linker_settings", "settings_for", "ignored_settings", "term_stats", "linker_vectors", "neighbour_index",
           "plan_new_entry_links",
           "NEIGHBOURS_FLAT_BELOW", "NEIGHBOURS_IVF_FROM", "NEIGHBOURS_FILE", "ANCHORS_FILE", "STATS_FILE",
           "new_neighbour_index",
           "ivf_neighbour_index", "faiss_threads"]


def linker_settings(bank: Bank) -> LinkerSettings:
    """The linker's settings for this bank: the lexical weight of meaning (omega 0.25) when its
    vectors come from a lexical embedder, the defaults otherwise; ``linker`` settings in the bank
    override both."""
    return settings_for(embedder_name(bank), bank.settings.get("linker") or {})


def settings_for(embedder: str | None, stored: dict) -> LinkerSettings:
    """The linker settings of a bank whose vectors come from ``embedder``, with its ``stored``
    ``linker`` settings over them.

    >>> settings_for("hashing-char", {"h": 0.6}).omega, settings_for("minilm-int8", {"h": 0.6}).omega
    (0.25, 0.5)
    """
    base = LINKER_LEXICAL if (embedder or "").startswith("hashing") else LINKER_DEFAULTS
    ignored = ignored_settings(stored)
    over = {k: v for k, v in dict(stored).items() if k not in ignored}
    return base.with_(**over) if over else base


def ignored_settings(stored: dict) -> list[str]:
    """The stored ``linker`` settings read as absent: the retired ones (``RETIRED_SETTINGS``), and
    a ``threshold`` stored beside ``weights`` (an older ``kb calibrate``'s gate on its model's
    probability, not on the linker's score).

    >>> ignored_settings({"weights": [["bias", -1.0]], "threshold": 0.5, "h": 0.6})
    ['threshold', 'weights']
    """
    stored = dict(stored)
    return sorted(k for k in stored if k in RETIRED_SETTINGS or (k == "threshold" and "weights" in stored))


def term_stats(bank: Bank, settings: LinkerSettings) -> TermStats:
    """The linker's term statistics for the bank, cached; when entries were only appended since
    (same triples, no text or kind changed), the previous statistics are extended, not rebuilt.
    An append is read from the store's table mark (the new rows alone are hashed); otherwise the
    texts of every entry are hashed and compared, so that a change of status or ``linked_at``
    alone keeps the statistics."""
    name = _stats_name(settings)
    triples = bank.triples
    known = tuple(sorted(set(triples["subject"].to_list()) | set(triples["object"].to_list())))
    entries = bank.entries
    mark = table_mark(bank, "entries")

    def texts(frame: pl.DataFrame) -> pl.Series:
        return frame.select(pl.struct("id", "kind", "title", "summary", "content").hash()).to_series()

    def build(prior) -> tuple:
        if prior is not None:
            old_stats, old_known, old_content, old_mark = prior
            new = appended_rows(bank, "entries", old_mark) if old_known == known else None
            n = len(old_content)
            if new is not None and n + new.height == entries.height:  # appended only: the first rows as before
                content, same = pl.concat([old_content, texts(new)]), True
            else:
                content = texts(entries)
                same = n <= len(content) and content.head(n).equals(old_content)
            if old_known == known and same:
                planned = _planned_extension(old_stats, entries)
                if planned is not None:  # the rows a linked add planned with, now committed
                    return planned, known, content, mark
                try:
                    return old_stats.extend(entries), known, content, mark
                except ValidationError:
                    pass
        else:
            content = texts(entries)
        return _built_stats(bank, entries, known, settings), known, content, mark

    return bank.derived(name, build, on=("entries", "triples"), grow=True)[0]


def _stats_name(settings: LinkerSettings) -> str:
    return f"termstats:{hash(settings)}"


def _held_stats(bank: Bank, settings: LinkerSettings) -> tuple | None:
    """What :func:`term_stats` keeps for the bank (statistics, known entities, texts' hashes, table
    mark), as it is: possibly for an earlier version of the entries; None before it first ran."""
    return bank.derived(_stats_name(settings), lambda prior: prior, on=("entries", "triples"), grow=True, keep=False)


def _stats_before(bank: Bank, settings: LinkerSettings) -> TermStats:
    """Statistics of the bank's first entries that a write's new rows can extend: those of every
    entry (:func:`term_stats`), or those kept from before rows were only appended since (another
    write that did not link, another process's): one extension to the new rows instead of two."""
    held = _held_stats(bank, settings)
    if held is not None:
        old_stats, old_known, old_content, old_mark = held
        since = appended_rows(bank, "entries", old_mark, columns=("id",))
        if len(old_content) == len(old_stats.ids) and since is not None and since.height <= STALE_ROWS:
            triples = bank.triples
            if old_known == tuple(sorted(set(triples["subject"].to_list()) | set(triples["object"].to_list()))):
                return old_stats
    return term_stats(bank, settings)  # (kept: what the writes after it extend)


#: Rows appended since the statistics a linked write extends, past which the bank's are brought
#: up to date (and kept) first: a process that stopped keeping them never extends ever more rows
STALE_ROWS = 64


def keep_stats_current(bank: Bank) -> None:
    """After a linked write's commit: the statistics its links were planned with become the bank's
    (:func:`term_stats` takes them, no extension), so that the next write extends those."""
    settings = linker_settings(bank)
    held = _held_stats(bank, settings)
    planned = None if held is None else held[0]._cache.get("extended")
    if planned is not None and len(planned[1].ids) == table_mark(bank, "entries")[1]:
        term_stats(bank, settings)  # takes the planned statistics when the rows committed read alike


#: The anchors of a bank's entries in its ``cache/`` folder, by a key of what each is read from.
ANCHORS_FILE = "linker-anchors.bin"
_ANCHOR_TERMS = ".terms"  #: the anchors' terms, beside their rows (``ANCHORS_FILE``), both Parquet
#: Anchors read from the cache are written again once this share of the rows had to be read anew.
ANCHORS_RESAVE = 0.05


def _built_stats(bank: Bank, entries: pl.DataFrame, known: tuple, settings: LinkerSettings) -> TermStats:
    """``TermStats.build`` of the bank's entries, from what the bank's cache keeps when it can:

    - the statistics' parts (``STATS_FILE``: postings, vocabulary, cues, bags) when the bank's first
      rows read as they did when they were kept (kinds, texts, systems, metadata), with their
      anchors; rows appended since are added by ``extend``;
    - else the anchors of every row whose text, kind and systems read as before (``ANCHORS_FILE``;
      reading anchors is most of a build: 7 of 11 s on the PEP bank, 3 of 4 s at 100k).

    Both are written again when they missed ``ANCHORS_RESAVE`` of the rows. A stale, damaged or
    foreign cache is never used (the fingerprint names the code that reads texts, the polars
    version, the known entities and the settings)."""
    keys = anchor_keys(entries)
    part_keys = anchor_keys(entries, PART_COLUMNS)
    fingerprint = _anchors_fingerprint(entries.columns, known)
    stats = _stats_from_parts(bank, entries, known, settings, fingerprint, keys, part_keys)
    if stats is not None:
        return stats
    given = _saved_anchors(bank, fingerprint, keys)
    if given is not None:  # a build reads every anchor: made together, a block at a time
        given = given.to_list()
    stats = TermStats.build(entries, known_entities=known, settings=settings, anchors=given)
    missed = len(keys) if given is None else sum(a is None for a in given)
    if len(keys) and missed >= ANCHORS_RESAVE * len(keys):
        _save_anchors(bank, fingerprint, keys, stats.anchors)
    _save_parts(bank, fingerprint, part_keys, stats)
    return stats


#: The parts of a bank's term statistics in its ``cache/`` folder (numpy's npz, no pickles).
STATS_FILE = "linker-stats.npz"


def _stats_from_parts(bank, entries, known, settings, fingerprint, keys, part_keys) -> TermStats | None:
    """The statistics from the kept parts and anchors of the bank's first rows, grown by the rest;
    None when they cannot be used."""
    kept = _saved_parts(bank, fingerprint, part_keys)
    if kept is None:
        return None
    parts, n = kept
    anchors = _saved_anchors(bank, fingerprint, keys[:n])
    if anchors is None:
        return None
    missed = len(anchors.missing())  # rows changed since the anchors were kept, not since the parts
    try:
        anchors = fill_anchors(entries.head(n), anchors, known_entities=known, settings=settings)
        stats = TermStats.from_parts(entries.head(n), parts, anchors, known_entities=known, settings=settings)
        if n < entries.height:
            stats = stats.extend(entries)
    except ValidationError:
        return None
    if missed + entries.height - n >= ANCHORS_RESAVE * max(n, 1):
        _save_anchors(bank, fingerprint, keys, stats.anchors)
    if entries.height - n >= ANCHORS_RESAVE * max(n, 1):
        _save_parts(bank, fingerprint, part_keys, stats)
    return stats


def _save_parts(bank: Bank, fingerprint: str, part_keys: np.ndarray, stats: TermStats) -> None:
    if bank.readonly or not len(part_keys):
        return
    arrays = {"keys": part_keys}
    for name, value in stats.parts().items():
        name = name.replace(":", "__")
        if isinstance(value, list):  # strings: one UTF-8 buffer, NUL between them, and their count
            arrays[name] = np.frombuffer("\x00".join(value).encode(), np.uint8)
            arrays[name + "__count"] = np.array([len(value)], np.int64)
        else:
            arrays[name] = value

    def write(path) -> None:
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)

    write_cache_file(bank, STATS_FILE, fingerprint, write, whole=True)


def _saved_parts(bank: Bank, fingerprint: str, part_keys: np.ndarray) -> tuple[dict, int] | None:
    """The kept parts and how many of the bank's first rows they hold, when those rows' keys are
    the bank's now; None otherwise."""
    path = cache_file(bank, STATS_FILE, fingerprint)  # every byte hashed, never held whole
    if path is None:
        return None
    try:
        with np.load(path, allow_pickle=False) as held:
            kept = held["keys"]
            n = len(kept)
            if not 0 < n <= len(part_keys) or not np.array_equal(kept, part_keys[:n]):
                return None
            parts = {}
            for name in held.files:
                if name == "keys" or name.endswith("__count"):
                    continue
                value = held[name]
                if name + "__count" in held.files:
                    count = int(held[name + "__count"][0])
                    value = value.tobytes().decode().split("\x00") if count else []
                    if len(value) != count:
                        return None  # a string held a NUL: not kept faithfully
                parts[name.replace("__", ":")] = value
        return parts, n
    except Exception:  # noqa: BLE001 - a cache that does not read is rebuilt, never trusted
        return None


def _anchors_fingerprint(columns, known: tuple) -> str:
    """What kept anchors and statistics were read with, besides each row's own key: the code that
    reads texts, the polars version (its hashes make the keys), the columns the frame has and the
    known entities."""
    import hashlib

    parts = [_anchor_code(), pl.__version__, [c for c in ANCHOR_COLUMNS if c in columns], list(known)]
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()


@functools.lru_cache(maxsize=1)
def _anchor_code() -> str:
    """A digest of the code anchors are read with: a change to it makes every kept anchor stale."""
    import hashlib

    import kbtools.words as text
    from kbtools.linker import anchors, terms

    digest = hashlib.blake2b(digest_size=16)
    for module in (anchors, text, terms):
        with open(module.__file__, "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


def _save_anchors(bank: Bank, fingerprint: str, keys: np.ndarray, anchors) -> None:
    if bank.readonly:
        return
    per_row, flat = anchor_frame(anchors)
    per_row = per_row.with_columns(pl.Series("key", keys[:, 0], dtype=pl.UInt64),
                                   pl.Series("key2", keys[:, 1], dtype=pl.UInt64))

    def write(path) -> None:
        per_row.write_parquet(path, compression="zstd")
        flat.write_parquet(path.with_name(path.name + _ANCHOR_TERMS), compression="zstd")

    write_cache_file(bank, ANCHORS_FILE, fingerprint, write, whole=True)


def _saved_anchors(bank: Bank, fingerprint: str, keys: np.ndarray) -> AnchorRows | None:
    """Per row, the anchors kept for its key (None where none is; made when a row is read), or None
    without a usable cache."""
    path = cache_file(bank, ANCHORS_FILE, fingerprint)  # every byte of both files hashed, never held whole
    if path is None:
        return None
    try:
        per_row = pl.read_parquet(path)
        flat = pl.read_parquet(path.with_name(path.name + _ANCHOR_TERMS))
        wanted = pl.DataFrame({"key": pl.Series(keys[:, 0], dtype=pl.UInt64),
                               "key2": pl.Series(keys[:, 1], dtype=pl.UInt64)})
        kept = per_row.select("key", "key2").with_row_index("row").unique(["key", "key2"], keep="first")
        found = wanted.join(kept, on=["key", "key2"], how="left", maintain_order="left")["row"]
        return AnchorRows((per_row.select("terms", "entities"), flat), found)
    except Exception:  # noqa: BLE001 - a cache that does not read is rebuilt, never trusted
        return None


def _stats_rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(c for c in STATS_COLUMNS if c in frame.columns)


def _remember_extension(base: TermStats, extended: TermStats, entries: pl.DataFrame) -> None:
    """Keep on ``base`` the statistics it was extended to for rows about to be written (a linked
    add), so that the next ``term_stats`` after the commit takes them instead of extending again."""
    base._cache["extended"] = (_stats_rows(entries.slice(len(base.ids))), extended)


def _planned_extension(base: TermStats, entries: pl.DataFrame) -> TermStats | None:
    """The statistics ``base`` was extended to for these entries' new rows, when the rows committed
    read alike on every column the statistics read (else None)."""
    held = base._cache.get("extended")
    if held is None or entries.height != len(held[1].ids):
        return None
    rows, extended = held
    new = _stats_rows(entries.slice(len(base.ids)))
    return extended if new.columns == rows.columns and new.equals(rows) else None


def linker_vectors(bank: Bank) -> np.ndarray | None:
    """Content-dimension vectors aligned with the entries' rows (zero rows where missing), float32.

    Cached on the bank; when entries were only appended since (and no earlier entry was
    re-embedded), the cache grows by the new rows alone, read from the new vector segments: an add
    at 100k entries never gathers the bank's vectors again. The array is read-only for callers."""
    state = _linker_state(bank)
    return None if state is None else state.view


class _LinkerVectors:
    """The linker's vectors: rows ``[:n]`` of a buffer with spare rows, grown in place on append.

    ``lineage`` names the rows' history: a state grown from another keeps its lineage (its first
    rows are the same), a rebuilt one gets a new one, so the neighbour index can grow by the new rows
    without comparing the bank's vectors."""

    _counter = itertools.count(1)

    def __init__(self, buffer: np.ndarray, n: int, mark, segments: tuple, lineage: int | None = None):
        self.buffer, self.n, self.mark, self.segments = buffer, n, mark, segments
        self.lineage = next(self._counter) if lineage is None else lineage
        self._view: np.ndarray | None = None

    @property
    def view(self) -> np.ndarray:
        """Rows ``[:n]``, read-only: the same array object while they stay the same rows, so that
        what the linker keeps for these vectors (a connect's whole-frame lists) holds from one of a
        job's commits to the next."""
        out = self._view
        if out is None or out.base is not self.buffer or len(out) != self.n:
            out = self._view = self.buffer[: self.n]
            out.flags.writeable = False
        return out

    def room(self, rows: int) -> np.ndarray:
        """The buffer, with at least ``rows`` rows after ``n`` (reallocated with a quarter more when
        short: views handed out before keep the old buffer, whose first ``n`` rows are the same)."""
        if self.n + rows > len(self.buffer):
            bigger = np.zeros((max(self.n + rows, int(1.25 * (self.n + rows)) + 1024), self.buffer.shape[1]), np.float32)
            bigger[: self.n] = self.buffer[: self.n]
            self.buffer = bigger
        return self.buffer

    def with_rows(self, extra: np.ndarray) -> np.ndarray:
        """The bank's rows followed by ``extra`` rows, written into the spare rows (no copy of the
        bank's rows; the next call may overwrite them): for planning the links of rows about to be
        written, under ``_SCRATCH``."""
        extra = np.asarray(extra, dtype=np.float32).reshape(-1, self.buffer.shape[1])
        buf = self.room(len(extra))
        buf[self.n : self.n + len(extra)] = extra
        return buf[: self.n + len(extra)]


_SCRATCH = threading.Lock()  #: one planner at a time writes the spare rows of a bank's linker vectors
_BLOCK = 16_384  #: rows gathered at a time from the vector segments in a full build


def _linker_state(bank: Bank) -> _LinkerVectors | None:
    ids, data = entry_vectors(bank)
    if len(ids) == 0:
        return None
    mark = key_mark(bank, "entries")  # updates in place (linked_at, status) keep the rows' ids
    paths = tuple(s["data"] for s in vector_segments(bank))

    def build(prior):
        if prior is not None:
            grown = _grown(bank, prior, mark, paths)
            if grown is not None:
                return grown
        pos = pl.DataFrame({"id": ids.tolist(), "_pos": np.arange(len(ids))})
        order = bank.entries.select("id").join(pos, on="id", how="left")["_pos"].to_numpy()
        n = bank.entries.height
        out = np.zeros((n + max(1024, n // 4), data.shape[2]), dtype=np.float32)
        have = np.flatnonzero(~np.isnan(order.astype(float)))
        for lo in range(0, len(have), _BLOCK):  # the content dimension only, a block at a time
            rows = have[lo : lo + _BLOCK]
            out[rows] = data.take(order[rows].astype(np.int64), kind=0)
        return _LinkerVectors(out, n, mark, paths)

    return bank.derived("linker-vectors", build, on=("entries", "vectors"), grow=True)


def _grown(bank: Bank, prior: _LinkerVectors, mark, paths: tuple) -> _LinkerVectors | None:
    """``prior`` grown by the entries appended since it was built (its rows as they are when only
    values of its rows changed or a tail merge folded its segments), or None when anything else
    changed (an entry removed, an earlier entry re-embedded, the vectors compacted)."""
    fresh = segments_after(bank, prior.segments)
    if fresh is None or prior.mark[0] != mark[0] or prior.mark[1] > mark[1]:
        return None
    if not fresh and mark == prior.mark:
        # only values of the rows changed (a connect chunk set linked_at), or segments merged: same vectors
        if paths == prior.segments:
            return prior
        same = _LinkerVectors(prior.buffer, prior.n, mark, paths, prior.lineage)
        same._view = prior._view  # the same array object: what a connect keeps for it holds
        return same
    new_rows = bank.entries.slice(prior.mark[1]).select("id")
    if prior.n + new_rows.height != bank.entries.height:
        return None
    where = {eid: k for k, eid in enumerate(new_rows["id"].to_list())}
    seg_ids = [segment_ids(bank, s) for s in fresh]
    if any(eid not in where for part in seg_ids for eid in part.tolist()):
        return None  # an earlier entry has a new vector: rebuild
    buf = prior.room(len(where))
    buf[prior.n : prior.n + len(where)] = 0.0
    for seg, part in zip(fresh, seg_ids):  # oldest first: a later segment's vector wins
        rows = prior.n + np.fromiter((where[e] for e in part.tolist()), np.int64, count=len(part))
        buf[rows] = np.asarray(segment_data(bank, seg)[:, 0, :], dtype=np.float32)
    return _LinkerVectors(buf, prior.n + len(where), mark, paths, prior.lineage)


#: Below this many entries the linker's neighbour index is exact (flat); above it, HNSW.
NEIGHBOURS_FLAT_BELOW = 20_000
#: From this many entries the linker's neighbour index is an inverted file with 8-bit codes.
NEIGHBOURS_IVF_FROM = 300_000
#: efSearch 40, not 64: at 100k the exact top 24 are found about as often, the search costs a third
#: less, and a whole-bank connect makes the same links but a handful. M 16, not 32: a search reads
#: half the neighbours per node (see ``new_neighbour_index``)
_HNSW_M, _HNSW_EF_CONSTRUCTION, _HNSW_EF_SEARCH = 16, 80, 40


def faiss_threads(threads: int = 1):
    """faiss with its OpenMP threads set (one for interactive searches)."""
    import faiss

    faiss.omp_set_num_threads(threads)
    return faiss


def new_neighbour_index(vectors: np.ndarray):
    """An empty neighbour index for these vectors (add them next): flat (exact) for a small bank,
    HNSW over 8-bit codes (M 16, efSearch 40; one range for all dimensions, trained here on
    ``vectors``) for a large one, and from ``NEIGHBOURS_IVF_FROM`` entries an inverted file with 8-bit codes (√n lists,
    a tenth visited; trained here on a seeded sample): an HNSW graph over a million vectors takes
    longer to build than the bank takes to link.

    The linker re-scores every hit with the exact vectors, so 8-bit codes cost no recall after
    re-scoring (0.987 of the exact top 41 at 100k, as full vectors); they make the graph a quarter
    of the memory, its search about a third faster and its build about 40 % faster.

    One range for all dimensions (faiss ``QT_8bit_uniform``), not one per dimension, decodes a
    value with one multiply less and finds the exact neighbours among a search's first hits as
    often. M 16 rather than 32 then reads half the neighbours per node: a whole-bank connect costs
    less in its workers, makes almost the same links, and recovers the same share of held-out human
    edges on the PEP bank; the index builds faster and its graph is half the size. Rows
    added later are coded with the range of the first build (a value outside it is clipped in
    the code, never in the re-scored cosine)."""
    faiss = faiss_threads(1)
    d = vectors.shape[1]
    if len(vectors) < NEIGHBOURS_FLAT_BELOW:
        return faiss.IndexFlatIP(d)
    if len(vectors) >= NEIGHBOURS_IVF_FROM:
        return ivf_neighbour_index(vectors)
    index = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit_uniform, _HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = _HNSW_EF_SEARCH
    index.train(np.ascontiguousarray(vectors, dtype=np.float32))  # the codes' range: one pass
    return index


def ivf_neighbour_index(vectors: np.ndarray, nlist: int | None = None):
    """An empty inverted-file index with 8-bit codes (``nlist`` lists, default √n; a tenth of them
    visited, see ``ivf_nprobe``), trained on a seeded sample of ``vectors`` of 100 points a list."""
    faiss = faiss_threads(1)
    d = vectors.shape[1]
    nlist = nlist or max(1, int(np.sqrt(len(vectors))))
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(d), d, nlist, faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = 0
    sample = np.random.default_rng(0).choice(len(vectors), min(len(vectors), 100 * nlist), replace=False)
    faiss_threads(max(1, min(8, os.cpu_count() or 1)))
    try:
        index.train(np.ascontiguousarray(vectors[np.sort(sample)], dtype=np.float32))
    finally:
        faiss_threads(1)
    index.nprobe = ivf_nprobe(nlist)
    return index


def neighbour_index(bank: Bank, vectors: np.ndarray | None):
    """The faiss index over the linker's content vectors in row order (what ``plan_links`` and
    ``plan_connect`` take as ``neighbors``); ``vectors`` is :func:`linker_vectors` of the bank.
    Cached per bank; when those vectors grew since (entries appended, see ``linker_vectors``), the
    index grows by the new rows alone. A flat index that grows past ``NEIGHBOURS_FLAT_BELOW``
    entries is rebuilt as HNSW.

    An HNSW or inverted-file index is also kept in the bank's ``cache/`` (``NEIGHBOURS_FILE``), so
    a new process (a scheduled ``kb connect``, the first linked add of a server) reads it instead of
    building it again (seconds for HNSW at 100k entries), and grows it by the entries
    appended since. It is written when built from scratch, and again once it has grown by
    ``NEIGHBOURS_RESAVE`` of its rows; a read-only bank writes nothing."""
    if vectors is None or len(vectors) == 0:
        return None
    state = _linker_state(bank)
    mine = state is not None and len(vectors) == state.n and np.may_share_memory(vectors, state.buffer)
    lineage = state.lineage if mine else None  # vectors of another origin: the index is rebuilt
    name = "linker-neighbours"

    def build(prior):
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if prior is not None:
            index, old_lineage, n = prior
            outgrown = isinstance(index, faiss_threads(1).IndexFlatIP) and len(vecs) >= NEIGHBOURS_FLAT_BELOW
            if not outgrown and lineage is not None and old_lineage == lineage and n <= len(vecs):
                if len(vecs) > n:
                    index.add(vecs[n:])
                return index, lineage, len(vecs)
        saved = len(vecs) >= NEIGHBOURS_FLAT_BELOW and lineage is not None  # the bank's own rows: on disk
        index, start = _saved_neighbours(bank, vecs) if saved else (None, 0)
        if index is None:
            index = new_neighbour_index(vecs)
        threads = 1 if len(vecs) - start < NEIGHBOURS_FLAT_BELOW else max(1, min(8, os.cpu_count() or 1))
        faiss_threads(threads)
        try:
            if len(vecs) > start:
                index.add(vecs[start:])
        finally:
            faiss_threads(1)
        if saved and (start == 0 or len(vecs) - start >= NEIGHBOURS_RESAVE * start):
            _save_neighbours(bank, index, len(vecs))
        return index, lineage, len(vecs)

    return bank.derived(name, build, on=("entries", "vectors"), grow=True)[0]


#: The linker's neighbour index in a bank's ``cache/`` folder (faiss's own format).
NEIGHBOURS_FILE = "linker-neighbours.faiss"
#: A neighbour index read from the cache and grown by this share of its rows is written again.
NEIGHBOURS_RESAVE = 0.05
_NEIGHBOURS_FORMAT = 2  #: 2: M 16, codes with one range for all dimensions (a cached index of format 1 is built again)


def _ids_digest(ids: pl.Series) -> str:
    """A digest of entry ids in row order (which rows an index's positions stand for)."""
    import hashlib

    return hashlib.blake2b("\x00".join(ids.to_list()).encode(), digest_size=16).hexdigest()


def _save_neighbours(bank: Bank, index, rows: int) -> None:
    """Keep ``index`` (over the linker vectors of the bank's first ``rows`` entries) in the cache."""
    faiss = faiss_threads(1)
    digest = _ids_digest(bank.entries["id"].head(rows))
    meta = {"format": _NEIGHBOURS_FORMAT, "embedder": embedder_name(bank), "rows": rows, "ids": digest,
            "dim": int(index.d), "segments": [s["data"] for s in vector_segments(bank)]}
    write_cache_file(bank, NEIGHBOURS_FILE, f"{embedder_name(bank)}:{rows}:{digest}",
                          lambda path: faiss.write_index(index, str(path)), meta=meta)


def _saved_neighbours(bank: Bank, vecs: np.ndarray):
    """``(index, rows)``: the cached neighbour index when it was built over the linker vectors of
    the bank's first ``rows`` entries as they are now (same embedder and vector segments, new
    segments holding only entries after them, the same ids in the same rows); ``(None, 0)``
    otherwise (a stale, damaged or foreign cache is rebuilt, never trusted)."""
    found = cached_file_meta(bank, NEIGHBOURS_FILE)
    if found is None:
        return None, 0
    path, _, meta = found
    rows, old = meta.get("rows"), meta.get("segments")
    if (meta.get("format") != _NEIGHBOURS_FORMAT or meta.get("embedder") != embedder_name(bank)
            or meta.get("dim") != vecs.shape[1] or not isinstance(rows, int) or not 0 < rows <= len(vecs)
            or not isinstance(old, list)):
        return None, 0
    after = segments_after(bank, old)
    if after is None:
        return None, 0
    ids = bank.entries["id"].head(rows)
    if _ids_digest(ids) != meta.get("ids"):
        return None, 0  # an entry removed or reordered: positions stand for other rows
    # vectors written since: the segments after those it was built over, and those a compaction
    # folded in with them (see ``Bank._carry_caches``)
    fresh = [segment_ids(bank, s) for s in after]
    fresh.append(np.asarray(meta.get("appended_ids") or [], dtype=str))
    if ids.is_in(pl.Series(np.concatenate(fresh).tolist(), dtype=pl.String).implode()).any():
        return None, 0  # an earlier entry has a new vector
    faiss = faiss_threads(1)
    try:
        index = faiss.read_index(str(path))
    except Exception:  # noqa: BLE001 - a cache that does not load is rebuilt
        return None, 0
    if index.ntotal != rows or index.d != vecs.shape[1]:
        return None, 0
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = _HNSW_EF_SEARCH
    elif hasattr(index, "nprobe"):
        index.nprobe = ivf_nprobe(index.nlist)
    return index, rows


class _WithNewRows:
    """A neighbour index over the bank's rows plus a few rows about to be written: the cached index
    is searched as it is (never changed before the commit) and the new rows are scored exactly."""

    def __init__(self, base, extra: np.ndarray):
        self.base, self.extra = base, np.ascontiguousarray(extra, dtype=np.float32)
        self.n_base = 0 if base is None else int(base.ntotal)
        self.ntotal = self.n_base + len(self.extra)

    def search(self, x: np.ndarray, k: int):
        parts_s, parts_r = [], []
        if self.base is not None and self.n_base:
            s, r = self.base.search(x, min(k, self.n_base))
            parts_s.append(s)
            parts_r.append(r)
        if len(self.extra):
            parts_s.append(x @ self.extra.T)
            parts_r.append(np.broadcast_to(np.arange(self.n_base, self.ntotal), (len(x), len(self.extra))))
        scores, rows = np.concatenate(parts_s, axis=1), np.concatenate(parts_r, axis=1)
        scores = np.where(rows < 0, -np.inf, scores)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        top_s, top_r = np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)
        if top_s.shape[1] < k:
            pad = k - top_s.shape[1]
            top_s = np.pad(top_s, ((0, 0), (0, pad)), constant_values=-np.inf)
            top_r = np.pad(top_r, ((0, 0), (0, pad)), constant_values=-1)
        return top_s.astype(np.float32), np.where(np.isfinite(top_s), top_r, -1).astype(np.int64)


def plan_new_entry_links(bank: Bank, new_entries: pl.DataFrame, new_edges: pl.DataFrame,
                         content_vectors: np.ndarray | None, *, now) -> LinkPlan:
    """The write-time linker's links for entries that are not in the bank yet (``new_entries``,
    with ``new_edges`` written beside them), as if they were appended to it: what
    ``report_learning`` commits in the same transaction as the entries themselves.

    ``content_vectors`` holds the content-dimension vector of each new entry (row order), or None
    when the bank has no vectors. The bank's cached statistics and index are read, never changed.
    """
    settings = linker_settings(bank)
    entries = pl.concat([bank.entries, new_entries.select(bank.entries.columns)], how="vertical_relaxed")
    edges = pl.concat([bank.edges, new_edges.select(bank.edges.columns)], how="vertical_relaxed") if new_edges.height else bank.edges
    state = _linker_state(bank)
    base = _stats_before(bank, settings)
    try:
        stats = base.extend(entries)
    except ValidationError:
        stats = None
    else:
        _remember_extension(base, stats, entries)
    find = rows_finder(bank, {"edges": new_edges})

    def edge_rows(ids: list[str]) -> np.ndarray:
        return np.union1d(find("edges", "src", ids), find("edges", "dst", ids))

    with _SCRATCH:
        vectors = neighbors = None
        if state is not None and content_vectors is not None:
            neighbors = _WithNewRows(neighbour_index(bank, state.view), content_vectors)
            vectors = state.with_rows(content_vectors)  # the bank's rows are not copied
            faiss_threads(1)
        # a write reads no whole-frame lists (``LinkerSettings.both_ends``): every entry's list in
        # the grown frame would cost a connect of the whole bank per write; ``kb connect`` reads them
        alone = settings.with_(both_ends=False)
        plans = [plan_links(eid, entries, edges, bank.triples, vectors=vectors, neighbors=neighbors, stats=stats,
                            settings=alone, now=now, edge_rows=edge_rows)
                 for eid in new_entries["id"].to_list()]
    if len(plans) == 1:
        return plans[0]
    return LinkPlan(add=pl.concat([p.add for p in plans], how="diagonal_relaxed"),
                    remove=pl.concat([p.remove for p in plans], how="diagonal_relaxed"),
                    entry_updates=pl.concat([p.entry_updates for p in plans], how="diagonal_relaxed"),
                    report={"entries": len(plans)})
