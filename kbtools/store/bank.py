"""The store: the only module that touches a bank's files.

A bank is a folder::

    bank.json            what the folder is (format, settings, the embedder that built its vectors)
    manifest.json        the current version: which segment files make up each table
    tables/<table>/      immutable Parquet segments, one or more per table
    vectors/             memory-mappable .npy segments (entry vectors, one per search dimension)
    cache/               derived artefacts (the query and linker indexes, the linker's anchors,
                         layouts), each sealed with what it was built from
    .lock                the writers' lock file (flock); its text names the holder

A write is one transaction across tables: under the lock it re-reads the manifest (so it plans on
the latest state), writes new segment files (temp name, fsync, rename), then writes the next
manifest the same way and renames it over ``manifest.json``. The rename is the commit point: a
crash before it leaves the old manifest, and the orphan segments are swept later; a crash after it
leaves the new one. Readers only ever read a manifest and the immutable files it names, so they
never see half a write.

Rows of keyed tables (entries, edges, triples) carry ``_seq`` (the manifest version that wrote
them) and ``_deleted`` (a tombstone); the latest version of a key wins. ``events`` and ``usage``
are append-only. ``compact`` folds segments together, so a compacted table is a single Parquet file
any reader can open as is.

>>> import tempfile, pathlib
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "eng")
>>> bank.entries.height, bank.version
(0, 0)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import socket
import time
import uuid
import weakref
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl

from kbtools.errors import BankExists, BankLocked, EmbedderMismatch, KbError, NotABank, ReadOnlyBank, UnsafePath
from kbtools.model.config import DEFAULT_EMBEDDER
from kbtools.model.plan import Plan, VectorRows
from kbtools.model.schema import APPEND_ONLY, KEYS, SCHEMAS, TABLES, conform, empty
from kbtools.store.files import digest, inside, manifest_files, temp_files, write_history
from kbtools.store.lock import flock_file, fsync_dir, fsync_paths, storage_errors
from kbtools.store.vectors import SegmentedVectors

__all__ = [
    "Bank",
    "create_bank",
    "open_bank",
    "VectorBlocks",
    "utcnow",
    "read_manifest",
    "flock_file",
    "FORMAT",
    "DEFAULT_LOCK_TIMEOUT",
]

FORMAT = "kbtools-bank"
FORMAT_VERSION = 1
DEFAULT_LOCK_TIMEOUT = 30.0
#: Merge the small segments after the base once there are more than this many.
TAIL_SEGMENTS = 16
#: A table never keeps more segments than this: past it, every segment after the base is merged.
MAX_SEGMENTS = 4 * TAIL_SEGMENTS + 1
#: Unreferenced files younger than this are left alone by the sweep (a reader may still open them).
SWEEP_AGE_S = 120.0

#: How vector segments store each number: float16 halves the disk and the pages a scan reads
#: (cosines change by ~1e-4, far below what separates neighbours); the setting
#: ``vector_dtype="float32"`` keeps full precision. Segments are read back as float32 either way.
VECTOR_DTYPES = {"float16": np.float16, "float32": np.float32}
DEFAULT_VECTOR_DTYPE = "float16"

_SEQ = "_seq"
_DELETED = "_deleted"


def utcnow() -> datetime:
    """The current time in UTC, at the bank's resolution (microseconds).

    >>> utcnow().tzinfo is not None
    True
    """
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------------------------
# low-level file helpers


_fsync_dir = fsync_dir  # a no-op on Windows, where a folder cannot be opened


def _atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True, synced_with: list[Path] = ()) -> None:
    """Write ``data`` to ``path`` atomically (temp name, rename); with ``durable`` the bytes are
    fsynced before the rename and the folder after it. ``synced_with``: files (and folders) that
    must be durable before the rename, fsynced together with the temp file."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
    fsync_paths([tmp, *synced_with] if durable else synced_with)
    os.replace(tmp, path)
    if durable:
        _fsync_dir(path.parent)


def _write_parquet(frame: pl.DataFrame, path: Path, *, durable: bool = True) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    frame.write_parquet(tmp, compression="zstd", statistics=True)
    if durable:
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_npy(array: np.ndarray, path: Path, *, durable: bool = True) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
        fh.flush()
        if durable:
            os.fsync(fh.fileno())
    os.replace(tmp, path)


def _read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _cache_group(path: Path) -> list[Path]:
    """A cache file and its siblings (``name`` and ``name.*``), without the seal."""
    return sorted(p for p in path.parent.glob(path.name + "*")
                  if p.is_file() and not p.name.endswith(".json") and not p.name.endswith(".tmp"))


def _file_seal(path: Path, whole: bool = False) -> list:
    """``[size, mtime_ns, hash of the first and last MiB]``: enough to see a file was changed;
    ``whole``: a hash of every byte instead, read a MiB at a time (the file is never held whole)."""
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        if whole:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        else:
            h.update(fh.read(1 << 20))
            if st.st_size > 1 << 20:
                fh.seek(max(st.st_size - (1 << 20), 1 << 20))
                h.update(fh.read(1 << 20))
    return [st.st_size, st.st_mtime_ns, h.hexdigest()]


def _tail_start(rows: list[int], tail: int, most: int) -> int | None:
    """Where a tail merge of segments with these row counts starts (None: no merge yet).

    The run merged is taken from the end: the newest segment, then each older one no larger than
    the rows taken so far, never the base (segment 0). It is merged once it holds more than
    ``tail`` segments, so merged segments double like a binary counter: a row is rewritten
    O(log n) times, a merge never rewrites the whole table, and a table keeps O(log n) segments
    (past ``most`` segments everything after the base is merged).

    >>> _tail_start([100_000] + [1] * 16, 16, 65) is None, _tail_start([100_000] + [1] * 17, 16, 65)
    (True, 1)
    >>> _tail_start([100_000, 34, 17] + [1] * 17, 16, 65), _tail_start([100_000, 68] + [1] * 17, 16, 65)
    (1, 2)
    """
    if len(rows) > most:
        return 1
    taken, start = 0, len(rows)
    while start > 1 and (taken == 0 or rows[start - 1] <= taken):
        start -= 1
        taken += rows[start]
    return start if len(rows) - start > tail else None


def _manifest_copy(manifest: dict) -> dict:
    """A copy of ``manifest`` that a commit may change (its segment lists, vector info and settings
    are new objects; the files it records are replaced, never changed): without a JSON round trip,
    whose cost grows with every segment the manifest names.

    >>> m = {"tables": {"entries": ["a"]}, "vectors": {"segments": [{"data": "v"}]}, "settings": {}}
    >>> c = _manifest_copy(m); c["tables"]["entries"].append("b"); c["vectors"]["segments"].append({})
    >>> m["tables"]["entries"], len(m["vectors"]["segments"])
    (['a'], 1)
    """
    out = dict(manifest)
    out["tables"] = {t: list(segs) for t, segs in (manifest.get("tables") or {}).items()}
    if isinstance(manifest.get("vectors"), dict):
        vectors = out["vectors"] = dict(manifest["vectors"])
        vectors["segments"] = [dict(seg) for seg in vectors.get("segments", [])]
    out["settings"] = dict(manifest.get("settings") or {})
    return out


# ---------------------------------------------------------------------------------------------
# the lock


def _locked(root: Path, timeout: float, actor: str | None):
    """The writers' lock of a bank."""
    return flock_file(root / ".lock", timeout=timeout, actor=actor,
                      busy=lambda holder: BankLocked(root, timeout, holder))


# ---------------------------------------------------------------------------------------------
# reading segments


def _latest_in_first_order(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One row per key: the values of its latest version, in the order keys first appeared."""
    if not rows.select(pl.struct(keys).is_duplicated().any()).item():
        return rows
    idx = rows.with_row_index("_ord")
    last = idx.sort(_SEQ, maintain_order=True).unique(subset=keys, keep="last").drop("_ord")
    first = idx.unique(subset=keys, keep="first", maintain_order=True).select(*keys, "_ord")
    return last.join(first, on=keys, how="left", nulls_equal=True).sort("_ord").drop("_ord")


def _only_fresh_keys(current: pl.DataFrame | None, new: pl.DataFrame, keys: tuple[str, ...]) -> bool:
    """True when ``new`` only adds rows: no tombstone, no key twice, no key already in ``current``
    (the append of a write that adds entries or edges; checked without hashing the whole table)."""
    if current is None or current.height == 0 or new[_DELETED].any():
        return False
    if new.select(pl.struct(list(keys)).is_duplicated().any()).item():
        return False
    if new.height > 64:  # a bulk append (a connect chunk's links): one semi join, not a merge and sort
        return new.select(keys).join(current.select(keys), on=list(keys), how="semi", nulls_equal=True).height == 0
    hit = pl.lit(False)
    for row in new.select(list(keys)).iter_rows():
        cond = pl.lit(True)
        for k, v in zip(keys, row):
            cond = cond & (pl.col(k).is_null() if v is None else pl.col(k) == v)
        hit = hit | cond
    return not current.select(hit.any()).item()


def _merge_keyed(current: pl.DataFrame | None, new: pl.DataFrame, keys: tuple[str, ...]) -> pl.DataFrame:
    """Apply segment rows (with _seq/_deleted) on top of a merged frame (without tombstones).

    Rows keep their place: an updated row stays where its key first appeared, new keys go at the
    end (so derived structures over the rows can be extended instead of rebuilt)."""
    if new.height == 0:
        return current if current is not None else new.filter(pl.lit(False))
    new = _latest_in_first_order(new, list(keys))
    if current is None or current.height == 0:
        return new.filter(~pl.col(_DELETED))
    cur = current.with_row_index("_pos")
    new = new.join(cur.select(*keys, "_pos"), on=list(keys), how="left", nulls_equal=True)
    fresh = new["_pos"].is_null()
    new = new.with_columns(
        pl.when(fresh).then(pl.lit(cur.height, pl.UInt32) + fresh.cast(pl.UInt32).cum_sum() - 1)
        .otherwise(pl.col("_pos")).alias("_pos")
    )
    kept = cur.join(new.select(keys), on=list(keys), how="anti", nulls_equal=True)
    merged = pl.concat([kept, new], how="diagonal_relaxed").sort("_pos").drop("_pos")
    return merged.filter(~pl.col(_DELETED))


#: An appended frame keeps at most this many chunks: past it, the chunks after the first are joined.
MAX_CHUNKS = 32


def _append_rows(frame: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the rows of ``new`` at its end, its chunks kept few: every append adds a
    chunk, and an operation over a frame costs per chunk, so past :data:`MAX_CHUNKS` the rows after
    the first chunk (what was appended since the table was read) are joined into one chunk; the
    first chunk, the bulk of the table, is never copied.

    >>> f = pl.DataFrame({"a": [1, 2]})
    >>> for i in range(40):
    ...     f = _append_rows(f, pl.DataFrame({"a": [i]}))
    >>> f.height, f.n_chunks() <= MAX_CHUNKS
    (42, True)
    """
    out = frame.vstack(new) if new.schema == frame.schema else pl.concat([frame, new], how="diagonal_relaxed")
    if out.width and out.n_chunks() > MAX_CHUNKS:
        first = out.get_column(out.columns[0]).chunk_lengths()[0]
        out = pl.concat([out.slice(0, first), out.slice(first).rechunk()], how="vertical", rechunk=False)
    return out


def _project(frame: pl.DataFrame, columns) -> pl.DataFrame:
    """``frame.select(columns)`` for plain column names, without a query plan (a tenth of the
    cost on a large frame: this runs on every read of a table)."""
    return pl.DataFrame([frame.get_column(c) for c in columns])


def _empty_usage() -> pl.DataFrame:
    return empty("usage")


def _read_usage_log(path: Path) -> pl.DataFrame:
    """The rows of one usage log (``at<TAB>id<TAB>query_hash`` lines; a torn last line is skipped)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return _empty_usage()
    rows = [line.split("\t") for line in text.splitlines() if line.count("\t") == 2]
    if not rows:
        return _empty_usage()
    at, ids, qh = zip(*rows)
    frame = pl.DataFrame({"at": list(at), "id": list(ids), "query_hash": list(qh)})
    return frame.with_columns(pl.col("at").str.to_datetime(time_zone="UTC", strict=False)
                              .cast(SCHEMAS["usage"]["at"])).drop_nulls("at").select(list(SCHEMAS["usage"]))


_EPOCHS = itertools.count(1)


class _TableCache:
    """The merged rows of one table and the segment list they were built from."""

    __slots__ = ("segments", "frame", "epoch", "key_epoch")

    def __init__(self) -> None:
        self.segments: list[str] = []
        self.frame: pl.DataFrame | None = None
        self.epoch = next(_EPOCHS)  # a new number whenever rows changed other than at the end
        # a new number whenever a key may have left or moved (a tombstone, a re-read): while it
        # holds, the keys of rows ``:n`` are those of before and new keys come at the end
        self.key_epoch = next(_EPOCHS)


_HEX_ID = re.compile(r"[0-9a-f]{8}")


class _EntryIds:
    """The ids of a bank's entries as a membership structure, grown on append.

    An id of 8 lowercase hex characters (every id kbtools writes) is a 32-bit number: those are
    kept in a sorted ``uint32`` array (4 bytes per id, 4 MB per million; a look-up is a binary
    search, exact: no hash, no collision). Ids added since the array was sorted wait in a small
    set that is folded in once it holds ``FOLD_AT`` ids (one O(n) merge per ``FOLD_AT`` appends);
    any other id (an import's foreign key) goes to a set of its own.

    >>> ids = _EntryIds(pl.Series(["0000000a", "ffffffff", "odd-id"]), (1, 3))
    >>> "0000000a" in ids, "odd-id" in ids, "0000000b" in ids, "0000000A" in ids
    (True, True, False, False)
    """

    FOLD_AT = 4096
    __slots__ = ("mark", "codes", "recent", "odd")

    def __init__(self, ids: pl.Series, mark: tuple[int, int]) -> None:
        ids = ids.drop_nulls()
        hexed = ids.str.contains(r"^[0-9a-f]{8}$")
        self.codes = np.sort(ids.filter(hexed).str.to_integer(base=16).cast(pl.UInt32).to_numpy())
        self.odd: set[str] = set(ids.filter(~hexed).to_list())
        self.recent: set[str] = set()
        self.mark = mark

    def grow(self, ids: pl.Series, mark: tuple[int, int]) -> None:
        """Add the ids of rows appended since :attr:`mark` (now ``mark``)."""
        for eid in ids.drop_nulls().to_list():
            (self.recent if _HEX_ID.fullmatch(eid) else self.odd).add(eid)
        if len(self.recent) >= self.FOLD_AT:
            new = np.fromiter((int(i, 16) for i in self.recent), np.uint32, len(self.recent))
            self.codes = np.union1d(self.codes, new).astype(np.uint32)
            self.recent = set()
        self.mark = mark

    def __contains__(self, eid: str) -> bool:
        if eid in self.recent or eid in self.odd:
            return True
        if not _HEX_ID.fullmatch(eid):
            return False
        code = np.uint32(int(eid, 16))  # the array's own type: no cast of the whole array
        at = int(self.codes.searchsorted(code))
        return at < len(self.codes) and self.codes[at] == code

    def nbytes(self) -> int:
        """Memory held, roughly (the array plus ~100 bytes per id waiting in a set)."""
        return int(self.codes.nbytes) + 100 * (len(self.recent) + len(self.odd))


# ---------------------------------------------------------------------------------------------
# vectors, read in place


class _VectorState:
    """The vector segments read so far: each memory-mapped, the latest row per id (``rows``,
    positions in the segments' concatenation, ascending), its id and text hash. Appending a
    segment costs what the segment holds: the arrays over all rows are put together only when
    asked for."""

    __slots__ = ("names", "parts", "id_parts", "hash_parts", "row_parts", "dead", "known", "total", "size",
                 "generation", "_arrays")

    def __init__(self) -> None:
        self.names: tuple[str, ...] = ()
        self.parts: list[np.ndarray] = []
        self.id_parts: list[np.ndarray] = []
        self.hash_parts: list[np.ndarray] = []
        self.row_parts: list[np.ndarray] = []
        self.dead: frozenset[int] = frozenset()  # rows replaced by a later segment
        self.known: dict[str, int] | None = None  # id -> row, built on the first append
        self.total = 0
        self.size = 0
        self.generation = next(_EPOCHS)  # a new number when a row was replaced, not appended
        self._arrays: tuple | None = None

    def _all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._arrays is None:
            if not self.id_parts:
                arrays = (np.array([], dtype="U8"), np.zeros(0, np.uint64), np.zeros(0, np.int64))
            else:
                arrays = tuple(p[0] if len(p) == 1 else np.concatenate(p)
                               for p in (self.id_parts, self.hash_parts, self.row_parts))
            if self.dead:
                keep = ~np.isin(arrays[2], np.fromiter(self.dead, np.int64))
                arrays = tuple(a[keep] for a in arrays)
            self._arrays = arrays
        return self._arrays

    @property
    def ids(self) -> np.ndarray:
        return self._all()[0]

    @property
    def hashes(self) -> np.ndarray:
        return self._all()[1]

    @property
    def rows(self) -> np.ndarray:
        return self._all()[2]

    def ids_after(self, segments: int) -> np.ndarray:
        """The ids of the segments from number ``segments`` on."""
        tail = self.id_parts[segments:]
        return np.concatenate(tail) if tail else np.array([], dtype="U8")

    def appended(self, name: str, ids: np.ndarray, data: np.ndarray, hashes: np.ndarray) -> "_VectorState":
        start = self.total
        if len(ids) > 1 and len(np.unique(ids)) != len(ids):  # the last row of an id wins
            _, last = np.unique(ids[::-1], return_index=True)
            local = np.sort(len(ids) - 1 - last)
        else:
            local = np.arange(len(ids))
        ids, hashes = ids[local].astype(str), hashes[local].astype(np.uint64)
        known = self.known
        if known is None:  # once per process: later appends look ids up instead of scanning them
            known = dict(zip(self.ids.tolist(), self.rows.tolist()))
        listed = ids.tolist()
        replaced = [known[i] for i in listed if i in known]
        known.update(zip(listed, (start + local).tolist()))  # shared: only the newest state appends
        out = _VectorState()
        out.names, out.parts = (*self.names, name), [*self.parts, data]
        out.id_parts, out.hash_parts = [*self.id_parts, ids], [*self.hash_parts, hashes]
        out.row_parts = [*self.row_parts, start + local]
        out.dead = self.dead | frozenset(replaced) if replaced else self.dead
        out.known, out.total = known, start + len(data)
        out.size = self.size + len(ids) - len(replaced)
        out.generation = next(_EPOCHS) if replaced else self.generation
        return out


class _Live:
    """The vector rows of live entries (what ``Bank.vectors`` returns) and the marks it was built
    on; ``arrays`` None means every row of ``state``, put together only when read."""

    __slots__ = ("state", "mark", "arrays", "count")

    def __init__(self, state, mark, arrays=None):
        self.state, self.mark, self.arrays = state, mark, arrays
        self.count = state.size if arrays is None else len(arrays[0])

    @property
    def ids(self) -> np.ndarray:
        return self.state.ids if self.arrays is None else self.arrays[0]

    @property
    def hashes(self) -> np.ndarray:
        return self.state.hashes if self.arrays is None else self.arrays[1]

    @property
    def rows(self) -> np.ndarray:
        return self.state.rows if self.arrays is None else self.arrays[2]


def _empty_live(state: _VectorState) -> _Live:
    return _Live(state, None, (np.array([], dtype=str), np.zeros(0, np.uint64), np.zeros(0, np.int64)))


def _grow_live(prior: _Live | None, state: _VectorState, mark: tuple[int, int], entries: pl.DataFrame) -> _Live | None:
    """``prior`` with the rows appended since, when entries and vectors only gained rows (else None)."""
    if prior is None or prior.mark is None or prior.mark[0] != mark[0] or prior.arrays is not None:
        return None  # prior.arrays: some vector had no entry before; it may have one now
    if prior.state.generation != state.generation or len(prior.state.names) > len(state.names) \
            or state.names[: len(prior.state.names)] != prior.state.names:
        return None
    ids = state.ids_after(len(prior.state.names))
    if len(ids) > 64:
        return None
    fresh = entries["id"].slice(prior.mark[1])  # entries added since: the vectors' ids are among them
    if len(ids) and not np.isin(ids, fresh.to_numpy().astype(str)).all():
        return None
    return _Live(state, mark)


# ---------------------------------------------------------------------------------------------
# the bank


class Bank:
    """An open bank: its tables as polars frames (a snapshot; ``reload()`` moves it to the newest
    version) and the means to commit a transaction.

    Use :func:`open_bank` / :func:`create_bank` to get one. Frames returned by the properties are
    never mutated by kbtools.

    >>> import tempfile, pathlib
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> sorted(bank.tables)
    ['edges', 'entries', 'events', 'triples', 'usage']
    """

    def __init__(self, path: str | os.PathLike, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, readonly: bool = False):
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.readonly = bool(readonly)
        self._usage_log: tuple[tuple, pl.DataFrame] = ((), _empty_usage())
        self._usage_warned = False
        read_manifest(self.path)
        self._caches: dict[str, _TableCache] = {t: _TableCache() for t in TABLES}
        self._vector_cache: _VectorState | None = None
        self._segment_files: dict[tuple[str, str], np.ndarray] = {}
        self._derived: dict[str, tuple[int, object]] = {}
        self._manifest: dict = {}
        self._changed_outside: dict = {}
        self._ids: _EntryIds | None = None
        self._seg_rows: dict[str, int] = {}  # rows of the table segments seen (written or counted)
        self._safe: set[str] = set()  # segment names checked by ``inside`` (names never change meaning)
        self._checked_files: set[str] = set()  # files found as their commit recorded them
        self._written: dict[str, pl.DataFrame] = {}  # the segments of the commit in flight
        self._manifest_raw: bytes = b""  # the bytes of manifest.json this snapshot was loaded from
        self._fingerprints: dict[tuple, str] = {}  # fingerprint() of this snapshot, by what it is on
        #: how often the entry-id set was built from the whole id column and grown by appended rows
        self.id_set_counts = {"built": 0, "grown": 0}
        self.reload()

    # -- snapshot ---------------------------------------------------------------------------

    def reload(self) -> "Bank":
        """Move this snapshot to the newest committed version (cheap when nothing changed).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").reload().version
        0
        """
        for attempt in range(5):
            try:
                with open(self.path / "manifest.json", "rb") as fh:
                    raw = fh.read()
                if raw != self._manifest_raw:  # the same bytes: the same version, nothing to do
                    self._load(json.loads(raw))
                    self._manifest_raw = raw
                self._read_usage_logs()
                return self
            except FileNotFoundError:
                if attempt == 4:
                    raise
                time.sleep(0.01 * (attempt + 1))  # a compaction swept a file between our reads
            except UnsafePath:
                raise
            except ValueError as err:
                raise NotABank(self.path, f"manifest.json is unreadable ({err})") from None
        return self

    def _load(self, manifest: dict, changed_outside: dict | None = None) -> None:
        if not isinstance(manifest.get("tables"), dict):
            raise NotABank(self.path, "manifest.json names no tables (damaged): run `kb check --repair`")
        for table in TABLES:
            segs = list(manifest["tables"].get(table, []))
            cache = self._caches[table]
            if cache.frame is None:
                for name in segs:
                    if name not in self._seg_rows and name not in self._safe:
                        inside(self.path, name)  # an unsafe path is refused at open, read or not
                        self._safe.add(name)
                continue  # read when first asked for (:meth:`_frame`): a query never reads events
            if segs == cache.segments:
                continue
            if segs[: len(cache.segments)] == cache.segments:
                todo, frame = segs[len(cache.segments) :], cache.frame
            else:
                todo, frame = segs, None
            frame, appended, keys_kept = self._read_segments(table, todo, frame)
            if not appended:
                cache.epoch = next(_EPOCHS)
            if not keys_kept:
                cache.key_epoch = next(_EPOCHS)
            cache.segments, cache.frame = segs, frame
        self._manifest = manifest
        self._manifest_raw = b""
        self._fingerprints = {}
        self._changed_outside = (self._files_changed_outside(manifest) if changed_outside is None
                                 else changed_outside)

    def _frame(self, table: str) -> pl.DataFrame:
        """The merged rows of ``table`` in this snapshot, read from its segments on first use."""
        cache = self._caches[table]
        if cache.frame is None:
            try:
                segs = list(self._manifest["tables"].get(table, []))
                frame, _, _ = self._read_segments(table, segs, None)
            except FileNotFoundError:  # swept by a compaction since this snapshot: move on once
                warnings.warn(f"{self.path}: a segment of {table} in version {self.version} was swept by a "
                              "compaction; this snapshot moved to the newest version", stacklevel=3)
                self.reload()
                segs = list(self._manifest["tables"].get(table, []))
                frame, _, _ = self._read_segments(table, segs, None)
            cache.segments, cache.frame, cache.epoch, cache.key_epoch = segs, frame, next(_EPOCHS), next(_EPOCHS)
        return cache.frame

    def _read_segments(self, table: str, names: list[str],
                       frame: pl.DataFrame | None) -> tuple[pl.DataFrame, bool, bool]:
        """The merged rows after reading ``names`` on top of ``frame``, whether they are ``frame``
        with rows added at its end only (an append: nothing before changed), and whether the keys
        of ``frame`` kept their rows (no key deleted; new keys at the end, updated rows in place)."""
        keyed = table in KEYS
        if not names:
            if frame is not None:
                return frame, True, True
            base = empty(table)
            if keyed:
                base = base.with_columns(pl.lit(0, pl.Int64).alias(_SEQ), pl.lit(False).alias(_DELETED))
            return base, False, False
        # a segment this process just committed is taken as written, not read back
        parts = [self._written.pop(n) if n in self._written else pl.read_parquet(inside(self.path, n)) for n in names]
        new = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
        if frame is None:
            return (_merge_keyed(None, new, KEYS[table]) if keyed else new), False, False
        if keyed:
            fresh = self._fresh_entries(table, frame, new)
            if fresh is None:
                fresh = _only_fresh_keys(frame, new, KEYS[table])
            if fresh:
                return _append_rows(frame, new), True, True
            return _merge_keyed(frame, new, KEYS[table]), False, not new[_DELETED].any()
        return _append_rows(frame, new), True, True

    def _fresh_entries(self, table: str, frame: pl.DataFrame, new: pl.DataFrame) -> bool | None:
        """Whether ``new`` only adds entries to ``frame``, told by the entry-id set when it is
        current for ``frame`` (no scan of the id column); None when it cannot tell."""
        known = self._ids
        if table != "entries" or known is None or known.mark != (self._caches["entries"].key_epoch, frame.height):
            return None
        if new.height > 64 or new[_DELETED].any():
            return False
        ids = new["id"].to_list()
        return len(set(ids)) == len(ids) and all(isinstance(i, str) and i not in known for i in ids)

    def _files_changed_outside(self, manifest: dict) -> dict:
        """Files whose size or mtime differ from what their commit recorded: rewritten by another
        tool. Their stat goes into every fingerprint, so no cache built before is used again.

        A file found as recorded is not looked at again by this open bank (segments are immutable:
        a reload stats only the files it has not checked yet, not every file of the bank); a bank
        opened later checks them all, so no cache it finds on disk was built over changed bytes."""
        out = {}
        root = os.fspath(self.path)
        files = manifest.get("files") or {}
        checked = self._checked_files
        if len(checked) > 2 * len(files) + 64:
            checked.intersection_update(files)
        for rel, (size, mtime_ns, _) in files.items():
            if rel in checked:
                continue
            try:
                st = os.stat(os.path.join(root, rel))
            except OSError:
                continue
            if st.st_size != size or st.st_mtime_ns != mtime_ns:
                out[rel] = [st.st_size, st.st_mtime_ns]
            else:
                checked.add(rel)
        return out

    @property
    def version(self) -> int:
        """The manifest version this snapshot reads (0 for a new bank)."""
        return int(self._manifest.get("version", 0))

    @property
    def settings(self) -> dict:
        """The bank's settings (auto_link, embedder, ...) as of this snapshot."""
        return dict(self._manifest.get("settings", {}))

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table of this snapshot by name."""
        return {t: self.table(t) for t in TABLES}

    def table(self, name: str) -> pl.DataFrame:
        """One table of this snapshot, with exactly the columns of DESIGN.md."""
        if name not in SCHEMAS:
            raise KbError(f"unknown table {name!r}: the tables are {', '.join(TABLES)}")
        frame = self._frame(name)
        if name == "entries":
            return self._entries_with_usage(frame)
        if name == "usage":
            return self._all_usage(frame)
        return _project(frame, SCHEMAS[name])

    def _entries_with_usage(self, frame: pl.DataFrame) -> pl.DataFrame:
        def build() -> pl.DataFrame:
            base = _project(frame, SCHEMAS["entries"])
            usage = self._all_usage(self._frame("usage"))
            if usage is None or usage.height == 0:
                return base
            counts = usage.group_by("id").agg(pl.len().alias("_n"), pl.col("at").max().alias("_last"))
            return (
                base.join(counts, on="id", how="left")
                .with_columns(
                    (pl.col("usage_count") + pl.col("_n").fill_null(0)).alias("usage_count"),
                    pl.max_horizontal("last_used_at", "_last").alias("last_used_at"),
                )
                .select(list(SCHEMAS["entries"]))
            )

        return self.derived("entries+usage", build, on=("entries", "usage", "usage-log"))

    def fingerprint(self, on: tuple[str, ...] = TABLES) -> str:
        """A short fingerprint of the segments of the named tables (and ``"vectors"``): it changes
        exactly when what they hold changes.

        >>> import tempfile, pathlib
        >>> len(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").fingerprint(("entries",)))
        16
        """
        key = (tuple(on), self._usage_log[0] if "usage-log" in on else None)
        memo = self._fingerprints.get(key)
        if memo is not None:
            return memo
        parts = []
        for name in on:
            if name == "vectors":
                parts.append([s["data"] for s in (self._manifest.get("vectors") or {}).get("segments", [])])
            elif name == "usage-log":
                parts.append(list(self._usage_log[0]))
            else:
                parts.append(self._manifest["tables"].get(name, []))
        parts.append(sorted(self._changed_outside.items()))
        memo = self._fingerprints[key] = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]
        return memo

    def derived(self, name: str, build: Callable[..., object], *, on: tuple[str, ...] = TABLES,
                grow: bool = False) -> object:
        """A value computed from this snapshot, cached in memory until one of the tables it is
        built ``on`` changes (graph views, lookups, indexes and term statistics built by other
        modules). With ``grow=True`` the builder is called with the previous value (``None`` the
        first time), so a cache can be grown on append instead of rebuilt: the public door for
        incremental caches.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.derived("n", lambda: bank.entries.height, on=("entries",))
        0
        >>> bank.derived("grown", lambda prev: (prev or 0) + 1, grow=True)
        1
        """
        key = self.fingerprint(on)
        hit = self._derived.get(name)
        if hit is not None and hit[0] == key:
            return hit[1]
        value = build(hit[1] if hit is not None else None) if grow else build()
        self._derived[name] = (key, value)
        return value

    def scan(self, table: str):
        """A polars LazyFrame over exactly this snapshot's files of ``table``, with the latest-version
        and tombstone rule applied and usage folded into entries: the right way for other tools to
        read a bank (see :func:`kbtools.store.scan.scan`)."""
        from kbtools.store.scan import scan  # the reader lives with the other doors (DuckDB, SQL)

        return scan(self, table)

    def require_entries(self, ids, *, where: str = "") -> None:
        """The one existence check: raise :class:`~kbtools.errors.EntryNotFound` naming the first of
        ``ids`` that is not an entry of this snapshot (a ValidationError for a non-string id).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").require_entries(["0badf00d"], where="link")
        Traceback (most recent call last):
        ...
        kbtools.errors.EntryNotFound: link: entry 0badf00d does not exist in this bank
        """
        from kbtools.errors import EntryNotFound, ValidationError

        ids = list(ids)
        for eid in ids:
            if not isinstance(eid, str):
                raise ValidationError("id", eid, "an entry id is a string of 8 hex characters")
        missing = self._missing_entries(ids)
        if missing:
            raise EntryNotFound(missing[0], where)

    def _missing_entries(self, ids: list[str]) -> list[str]:
        """Those of ``ids`` that are not entries, in order (looked up in :meth:`_entry_ids`)."""
        if not ids:
            return []
        if len(ids) > 64:  # a bulk check: one vectorised pass over the id column
            frame = self._frame("entries")
            found = pl.Series(ids, dtype=pl.String).is_in(frame["id"].implode()).to_list()
            return [i for i, ok in zip(ids, found) if not ok]
        known = self._entry_ids()
        return [i for i in ids if i not in known]

    def _entry_ids(self) -> _EntryIds:
        """The ids of this snapshot's entries as an :class:`_EntryIds`: built once, grown by the
        rows a commit (this process's or another's) appended, rebuilt only when an id may have
        left (a delete, a merge, a compaction, a re-read)."""
        cache = self._caches["entries"]
        frame = self._frame("entries")
        mark = (cache.key_epoch, frame.height)
        known = self._ids
        if known is not None and known.mark == mark:
            return known
        if known is not None and known.mark[0] == mark[0] and known.mark[1] <= mark[1]:
            known.grow(frame["id"].slice(known.mark[1]), mark)
            self.id_set_counts["grown"] += 1
        else:
            known = self._ids = _EntryIds(frame["id"], mark)
            self.id_set_counts["built"] += 1
        return known

    def table_mark(self, name: str) -> tuple[int, int]:
        """``(epoch, rows)`` of a table in this snapshot: while a later mark has the same epoch,
        the table only gained rows at its end since (rows ``rows:`` are the new ones), so a cache
        built over the rows can be grown instead of rebuilt.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.table_mark("entries")[1]
        0
        """
        frame = self._frame(name)
        return self._caches[name].epoch, frame.height

    def key_mark(self, name: str) -> tuple[int, int]:
        """``(key epoch, rows)`` of a table in this snapshot: while a later mark has the same key
        epoch, the first ``rows`` rows hold the same keys in the same order (their values may have
        changed: an update, a status, ``linked_at``), and rows ``rows:`` are new. For caches built
        over the keys alone (the linker's vectors).

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.key_mark("entries")[1]
        0
        """
        frame = self._frame(name)
        return self._caches[name].key_epoch, frame.height

    def appended_rows(self, name: str, mark: tuple[int, int]) -> pl.DataFrame | None:
        """The rows of table ``name`` added since ``mark`` (a :meth:`table_mark` of an earlier
        snapshot), when the table only gained rows at its end since; None when anything else
        changed (then rebuild what was built over the rows). Usage is not counted in.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.appended_rows("entries", bank.table_mark("entries")).height
        0
        """
        epoch, rows = self.table_mark(name)
        if mark is None or mark[0] != epoch or mark[1] > rows:
            return None
        return _project(self._frame(name).slice(mark[1]), SCHEMAS[name])

    def has_entry(self, entry_id: str) -> bool:
        """Whether an entry with this id exists in this snapshot (one column scan, no id set built).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").has_entry("a1b2c3d4")
        False
        """
        return not self._missing_entries([entry_id])

    def vector_segment_ids(self, segment: dict) -> np.ndarray:
        """The entry ids of one vector segment (as listed by :meth:`vector_segments`); segments
        never change, so each is read once per open bank."""
        key = ("ids", segment["ids"])
        if key not in self._segment_files:
            self._segment_files[key] = np.load(inside(self.path, segment["ids"]), allow_pickle=False).astype(str)
        return self._segment_files[key]

    def vector_segment_data(self, segment: dict) -> np.ndarray:
        """The vectors of one vector segment, memory-mapped (read in place, never copied)."""
        key = ("data", segment["data"])
        if key not in self._segment_files:
            self._segment_files[key] = np.load(inside(self.path, segment["data"]), mmap_mode="r", allow_pickle=False)
        return self._segment_files[key]

    def vector_segments(self) -> list[dict]:
        """The vector segments of this snapshot, oldest first: ``{"data", "ids", "rows"[, "hashes"]}``
        with paths relative to the bank folder."""
        return [dict(s) for s in (self._manifest.get("vectors") or {}).get("segments", [])]

    @property
    def entries(self) -> pl.DataFrame:
        """The entries table (usage from the usage log already counted in)."""
        return self.table("entries")

    @property
    def edges(self) -> pl.DataFrame:
        """The edges table."""
        return self.table("edges")

    @property
    def events(self) -> pl.DataFrame:
        """The append-only events table."""
        return self.table("events")

    @property
    def triples(self) -> pl.DataFrame:
        """The entity triples the linker's bridge signal reads."""
        return self.table("triples")

    @property
    def usage(self) -> pl.DataFrame:
        """The usage log not yet compacted into entries."""
        return self.table("usage")

    def segment_files(self) -> dict[str, list[str]]:
        """The Parquet segment files of each table in this snapshot (paths relative to the bank)."""
        return {t: list(self._manifest["tables"].get(t, [])) for t in TABLES}

    def __repr__(self) -> str:
        n = self._caches["entries"].frame
        return f"<Bank {self.path} v{self.version}: {0 if n is None else n.height} entries>"

    # -- usage (append-only logs, one per process; no lock) ----------------------------------

    def log_usage(self, ids, *, query: str = "") -> int:
        """Count ``ids`` as returned by a query: one line each in this process's usage log under
        ``usage/`` (an append, never the writers' lock, never a table rewrite). The next write or
        compaction merges the logs into the usage table. On a read-only bank (or file system)
        nothing is recorded and a warning says so once. Returns the rows recorded.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.log_usage([], query="nothing")
        0
        """
        ids = [i for i in ids if isinstance(i, str)]
        if not ids:
            return 0
        if self.readonly:
            return self._usage_skipped("the bank is open read-only")
        qhash = hashlib.sha256(query.encode()).hexdigest()[:16]
        at = utcnow().isoformat()
        lines = "".join(f"{at}\t{i}\t{qhash}\n" for i in ids)
        try:
            (self.path / "usage").mkdir(exist_ok=True)
            fd = os.open(self.path / "usage" / f"{socket.gethostname()}-{os.getpid()}.log",
                         os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, lines.encode())
            finally:
                os.close(fd)
        except OSError as err:
            return self._usage_skipped(f"{err.strerror or err}")
        self._read_usage_logs()
        return len(ids)

    def _usage_skipped(self, why: str) -> int:
        if not self._usage_warned:
            warnings.warn(f"{self.path}: usage not recorded ({why}); queries still answer", stacklevel=3)
            self._usage_warned = True
        return 0

    def _log_files(self) -> list[Path]:
        folder = self.path / "usage"
        if not folder.is_dir() or folder.is_symlink():
            return []
        merged = set(self._manifest.get("usage_merged", []))
        return sorted(p for p in folder.iterdir()
                      if (p.suffix == ".log" or ".merging-" in p.name) and p.name not in merged and not p.is_symlink())

    def _read_usage_logs(self) -> None:
        files = self._log_files()
        try:
            sig = tuple((p.name, p.stat().st_size) for p in files)
        except OSError:
            sig = ()
        if sig == self._usage_log[0]:
            return
        frames = [_read_usage_log(p) for p in files]
        frame = pl.concat(frames) if frames else _empty_usage()
        self._usage_log = (sig, frame)

    def _all_usage(self, committed: pl.DataFrame | None) -> pl.DataFrame:
        base = empty("usage") if committed is None else _project(committed, SCHEMAS["usage"])
        pending = self._usage_log[1]
        if pending.height == 0:
            return base
        live = pending.join(self._frame("entries").select("id"), on="id", how="semi")
        return pl.concat([base, live.select(list(SCHEMAS["usage"]))], how="vertical_relaxed")

    def _with_usage_logs(self, plan: Plan) -> Plan:
        """``plan`` plus the rows of every pending usage log, claimed (renamed) for this commit."""
        claimed = []
        for p in self._log_files():
            if ".merging-" in p.name:
                claimed.append(p)
                continue
            target = p.with_name(f"{p.stem}.merging-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(p, target)
            except OSError:
                continue
            claimed.append(target)
        self._claimed = claimed
        if not claimed:
            return plan
        rows = pl.concat([_read_usage_log(p) for p in claimed])
        return plan + Plan(appends={"usage": rows.select(list(SCHEMAS["usage"]))})

    def _drop_merged_logs(self) -> None:
        for p in getattr(self, "_claimed", []):
            try:
                p.unlink()
            except OSError:
                pass
        self._claimed = []
        self._read_usage_logs()

    def _repr_html_(self) -> str:
        """A notebook's summary table: path, version, embedder, rows per table (the tables are read)."""
        from kbtools.model.reprs import bank_summary_html

        return bank_summary_html(str(self.path), self.version, {t: self.table(t).height for t in TABLES},
                                 embedder=self.embedder_name)

    # -- vectors ----------------------------------------------------------------------------

    @property
    def embedder_name(self) -> str | None:
        """The embedder that built this bank's vectors (None before any were written)."""
        return (self._manifest.get("vectors") or {}).get("embedder")

    def vectors(self, *, with_hashes: bool = False):
        """(ids as an array of str, vectors (n, dims, d) float32) for every entry that has them,
        latest segment winning per id; entries deleted since are left out. With ``with_hashes``
        also the hash of the texts each vector was built from (0 where unknown)."""
        try:
            return self._vectors(with_hashes)
        except FileNotFoundError:
            warnings.warn(f"{self.path}: a vector segment of version {self.version} was swept by a compaction; "
                          "this snapshot moved to the newest version", stacklevel=2)
            self.reload()
            return self._vectors(with_hashes)

    def _vectors(self, with_hashes: bool):
        got = self._live_vectors()
        data = SegmentedVectors(got.state.parts, got.rows)
        return (got.ids, data, got.hashes) if with_hashes else (got.ids, data)

    def _live_vectors(self) -> "_Live":
        state = self._vector_state()
        entries = self._frame("entries")
        mark = self.table_mark("entries")

        def live(prior) -> tuple:
            if entries is None or entries.height == 0 or state.size == 0:
                return _empty_live(state)
            grown = _grow_live(prior, state, mark, entries)
            if grown is not None:
                return grown
            keep = pl.Series(state.ids, dtype=pl.String).is_in(entries["id"].implode()).to_numpy()
            if keep.all():
                return _Live(state, mark)
            return _Live(state, mark, (state.ids[keep], state.hashes[keep], state.rows[keep]))

        return self.derived("vectors", live, on=("entries", "vectors"), grow=True)

    def vector_count(self) -> int:
        """How many live entries have vectors (what ``len(bank.vectors()[0])`` says, without
        putting the id arrays together).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").vector_count()
        0
        """
        try:
            return self._live_vectors().count
        except FileNotFoundError:
            self.reload()
            return self._live_vectors().count

    def _vector_state(self) -> "_VectorState":
        """The latest vector per id over this snapshot's segments, memory-mapped and never
        concatenated; grown by the segments a write appended."""
        info = self._manifest.get("vectors") or {}
        segs = list(info.get("segments", []))
        names = tuple(s["data"] for s in segs)
        state = self._vector_cache
        if state is not None and state.names == names:
            return state
        if state is None or names[: len(state.names)] != state.names:
            state = _VectorState()
            self._segment_files = {}  # a rewrite (compaction, re-embedding): forget the old segments
        for seg in segs[len(state.names):]:
            ids = self.vector_segment_ids(seg)
            data = self.vector_segment_data(seg)
            hashes = (np.load(inside(self.path, seg["hashes"]), allow_pickle=False) if seg.get("hashes")
                      else np.zeros(len(ids), dtype=np.uint64))
            state = state.appended(seg["data"], ids, data, hashes)
        self._vector_cache = state
        return state

    def vector_blocks(self, block: int = 50_000, *, ids=None) -> "VectorBlocks":
        """The rows :meth:`vectors` gives (same ids, same order, latest segment winning, deleted
        entries left out) as a re-iterable of ``(ids, vectors)`` blocks of at most ``block`` rows,
        each read from its memory-mapped segment: the segments are never joined in memory, so a
        million entries stream through a few hundred MB (an index build reads them this way).
        ``.ids`` holds every id in order without reading a vector. With ``ids`` (a subset of the
        live ids, e.g. the active ones) only those rows come back, in this same order.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> blocks = bank.vector_blocks()
        >>> len(blocks.ids), list(blocks)
        (0, [])
        """
        if block < 1:
            raise KbError(f"block={block}: read at least one row per block")
        try:
            return VectorBlocks(self, block, ids)
        except FileNotFoundError:
            warnings.warn(f"{self.path}: a vector segment of version {self.version} was swept by a compaction; "
                          "this snapshot moved to the newest version", stacklevel=2)
            self.reload()
            return VectorBlocks(self, block, ids)

    def vector_ids(self) -> np.ndarray:
        """The ids of the live entries that have vectors (as :meth:`vectors` gives them), without
        reading the vectors themselves: cheap on a bank of many segments."""
        segs = tuple(s["data"] for s in self.vector_segments())

        def build() -> np.ndarray:
            parts = [np.load(self.path / s["ids"], allow_pickle=False).astype(str) for s in self.vector_segments()]
            ids = np.unique(np.concatenate(parts)) if len(parts) > 1 else (parts[0] if parts else np.array([], dtype=str))
            live = self.entries["id"].implode()
            return ids[pl.Series(ids, dtype=pl.String).is_in(live).to_numpy()] if len(ids) else ids

        return self.derived(f"vector-ids:{hash(segs)}", build, on=("entries", "vectors"))

    # -- caches -----------------------------------------------------------------------------

    def read_cache(self, name: str, fingerprint: str) -> bytes | None:
        """The bytes of a derived artefact if it was built from ``fingerprint``; None otherwise
        (a stale or foreign cache is never returned)."""
        path = self.path / "cache" / name
        meta = path.with_name(path.name + ".json")
        try:
            info = _read_json(meta)
            if info.get("fingerprint") != fingerprint:
                return None
            data = path.read_bytes()
        except (OSError, ValueError):
            return None
        if info.get("blake2b") != hashlib.blake2b(data, digest_size=16).hexdigest():
            return None  # truncated, flipped or foreign bytes: rebuilt, never used
        return data

    def write_cache(self, name: str, fingerprint: str, data: bytes) -> None:
        """Store a derived artefact with the fingerprint of what it was built from (atomic); a
        read-only bank keeps it in memory only (nothing is written)."""
        if self.readonly:
            return
        folder = self.path / "cache"
        folder.mkdir(exist_ok=True)
        _atomic_write_bytes(folder / name, data)
        meta = {"fingerprint": fingerprint, "blake2b": hashlib.blake2b(data, digest_size=16).hexdigest()}
        _atomic_write_bytes(folder / f"{name}.json", json.dumps(meta).encode())

    def cache_file(self, name: str, fingerprint: str) -> Path | None:
        """The path of a derived file written by :meth:`write_cache_file` if it was built from
        ``fingerprint`` and is as it was written (size, mtime and a hash of its first and last MiB
        recorded beside it: a file rewritten, truncated or replaced since is never returned, and
        checking it reads 2 MiB, not the whole file); None otherwise.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.write_cache_file("x.bin", "fp1", lambda p: p.write_bytes(b"abc"))
        >>> bank.cache_file("x.bin", "fp1").read_bytes(), bank.cache_file("x.bin", "other")
        (b'abc', None)
        """
        found = self.cached_file_meta(name)
        return found[0] if found is not None and found[1] == fingerprint else None

    def cached_file_meta(self, name: str) -> tuple[Path, str, dict] | None:
        """``(path, fingerprint, meta)`` of a derived file written by :meth:`write_cache_file`,
        whatever snapshot it was built from, when it is as it was written (the seal checked as by
        :meth:`cache_file`); None otherwise. For caches that can be brought up to date from an
        earlier snapshot (an index grown by the entries added since).

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.write_cache_file("x.bin", "fp1", lambda p: p.write_bytes(b"abc"), meta={"rows": 3})
        >>> bank.cached_file_meta("x.bin")[1:]
        ('fp1', {'rows': 3})
        """
        path = self.path / "cache" / name
        try:
            info = _read_json(path.with_name(path.name + ".json"))
            whole = bool(info.get("whole"))
            if info.get("files") != {p.name: _file_seal(p, whole) for p in _cache_group(path)}:
                return None
        except (OSError, ValueError):
            return None
        return path, str(info.get("fingerprint")), dict(info.get("meta") or {})

    def write_cache_file(self, name: str, fingerprint: str, write: Callable[[Path], None], *,
                         meta: dict | None = None, whole: bool = False) -> None:
        """Write a derived file with ``write(path)`` (it may write siblings ``path.*`` too), sealed
        with ``fingerprint`` and ``meta`` (JSON, read back by :meth:`cached_file_meta`); what an
        older build left under the name is replaced. A read-only bank writes nothing.

        ``whole``: the seal hashes every byte (checked on each read, a MiB at a time), for a file
        whose damage would go unseen by its reader; else its first and last MiB.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.write_cache_file("x.bin", "fp1", lambda p: p.write_bytes(b"a" * 3_000_000), whole=True)
        >>> path = bank.cache_file("x.bin", "fp1")
        >>> before = path.stat().st_mtime_ns
        >>> with open(path, "r+b") as f:  # one byte in the middle; its size and time kept
        ...     _ = f.seek(1_500_000); _ = f.write(b"b")
        >>> os.utime(path, ns=(before, before))
        >>> bank.cache_file("x.bin", "fp1") is None
        True
        """
        if self.readonly:
            return
        folder = self.path / "cache"
        folder.mkdir(exist_ok=True)
        path = folder / name
        seal_path = path.with_name(path.name + ".json")
        try:
            seal_path.unlink()  # first unseal: a crash while writing leaves no seal over half a file
        except FileNotFoundError:
            pass
        tmp = folder / f".{name}.{uuid.uuid4().hex[:8]}"
        write(tmp)  # written aside, then renamed: a reader that mapped the old file keeps it intact
        for part in sorted(folder.glob(tmp.name + "*")):
            os.replace(part, folder / (name + part.name[len(tmp.name):]))
        seal = {"fingerprint": fingerprint, "files": {p.name: _file_seal(p, whole) for p in _cache_group(path)},
                "meta": meta or {}, **({"whole": True} if whole else {})}
        _atomic_write_bytes(seal_path, json.dumps(seal).encode())

    # -- writing ----------------------------------------------------------------------------

    @storage_errors  # an OSError (read-only, disk full, a folder as .lock) becomes a StorageError
    def apply(self, plan: "Plan | Callable[[Bank], Plan | None]", *, actor: str | None = None, reason: str | None = None,
              timeout: float | None = None, durable: bool = True) -> "Plan | None":
        """Commit ``plan`` as one transaction (one manifest swap) under the writers' lock.

        ``plan`` is a :class:`~kbtools.model.plan.Plan`, or a planner ``fn(bank) -> Plan`` that is
        run on the newest version under the lock (read, then plan, then apply: what every write
        function does, so that its checks see what it commits over). A planner raises to abort:
        nothing is written. ``actor`` and ``reason`` are kept in the manifest's commit record.
        Returns the plan applied.

        Every commit is atomic (a rename); ``durable=False`` skips the fsyncs, for writes whose loss
        in a power cut is harmless: the bank is then as before or after, never between.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.apply(Plan(settings={"auto_link": False}), actor="me", reason="quiet").settings
        {'auto_link': False}
        >>> bank.version
        1
        """
        if self.readonly:
            raise ReadOnlyBank(self.path, reason or "write")
        with _locked(self.path, self.lock_timeout if timeout is None else timeout, actor):
            self.reload()
            changes = plan(self) if callable(plan) else plan
            if changes is not None and not changes.is_empty():
                self._commit(self._with_usage_logs(changes), durable=durable, actor=actor, reason=reason)
                self._drop_merged_logs()
            return changes

    def _commit(self, changes: Plan, *, durable: bool = True, actor: str | None = None, reason: str | None = None) -> None:
        manifest = _manifest_copy(self._manifest)
        seq = int(manifest.get("version", 0)) + 1
        tag = f"{seq:08d}-{uuid.uuid4().hex[:6]}"
        self._written = {}
        # every segment file is written (temp name, rename) first and fsynced, with its folder,
        # together with the next manifest's temp file, before that file is renamed into place: the
        # guarantee of an fsync per file (no manifest names a file whose bytes or folder entry could
        # be lost), at the cost of about one fsync
        synced: list[Path] = []
        for table in TABLES:
            frame = self._segment_frame(table, changes, seq)
            if frame is None or frame.height == 0:
                continue
            rel = f"tables/{table}/{tag}.parquet"
            (self.path / "tables" / table).mkdir(parents=True, exist_ok=True)
            _write_parquet(frame, self.path / rel, durable=False)
            synced += [self.path / rel, self.path / "tables" / table] if durable else []
            self._seg_rows[rel] = frame.height
            self._written[rel] = frame
            manifest["tables"].setdefault(table, []).append(rel)
        if changes.vectors is not None:
            ids, data, embedder, hashes = VectorRows(*changes.vectors)
            info = {} if changes.replace_vectors else (manifest.get("vectors") or {})
            info.setdefault("embedder", None)
            info.setdefault("segments", [])
            manifest["vectors"] = info
            if info.get("embedder") not in (None, embedder):
                raise EmbedderMismatch(
                    f"vectors from embedder {embedder!r} cannot join a bank embedded with {info['embedder']!r}; "
                    f"re-embed the whole bank with `kb embed PATH --embedder {embedder} --rebuild`"
                )
            info["embedder"] = embedder
            seg = self._write_vector_segment(tag, ids, data, hashes, durable=False)
            info["segments"].append(seg)
            synced += [self.path / seg[k] for k in ("data", "ids", "hashes") if seg.get(k)] + [self.path / "vectors"]
        if changes.settings:
            manifest.setdefault("settings", {}).update(changes.settings)
        manifest["version"] = seq
        manifest["committed_at"] = utcnow().isoformat()
        manifest["commit"] = {"actor": actor, "reason": reason}
        manifest["usage_merged"] = [p.name for p in getattr(self, "_claimed", [])]
        try:
            self._swap_manifest(manifest, durable=durable, synced_with=synced)
        finally:
            self._written = {}
        self._maybe_merge_tail()

    def _write_vector_segment(self, tag: str, ids, data, hashes, *, durable: bool = True) -> dict:
        (self.path / "vectors").mkdir(exist_ok=True)
        seg = {"data": f"vectors/{tag}.npy", "ids": f"vectors/{tag}.ids.npy", "rows": int(len(ids))}
        dtype = VECTOR_DTYPES.get(str(self.settings.get("vector_dtype", DEFAULT_VECTOR_DTYPE)), np.float16)
        _write_npy(np.ascontiguousarray(data, dtype=dtype), self.path / seg["data"], durable=durable)
        _write_npy(np.asarray(ids, dtype="U8"), self.path / seg["ids"], durable=durable)
        if hashes is not None:
            seg["hashes"] = f"vectors/{tag}.hashes.npy"
            _write_npy(np.asarray(hashes, dtype=np.uint64), self.path / seg["hashes"], durable=durable)
        return seg

    def _segment_frame(self, table: str, changes: Plan, seq: int) -> pl.DataFrame | None:
        if table in APPEND_ONLY:
            frame = changes.appends.get(table)
            return None if frame is None else conform(frame, table)
        parts = []
        up = changes.upserts.get(table)
        if up is not None and up.height:
            parts.append(conform(up, table).with_columns(pl.lit(False).alias(_DELETED)))
        dele = changes.deletes.get(table)
        if dele is not None and dele.height:
            parts.append(conform(dele.select(KEYS[table]), table).with_columns(pl.lit(True).alias(_DELETED)))
        if not parts:
            return None
        return pl.concat(parts, how="diagonal_relaxed").with_columns(pl.lit(seq, pl.Int64).alias(_SEQ))

    def _swap_manifest(self, manifest: dict, *, durable: bool = True, synced_with: list[Path] = ()) -> None:
        """Commit ``manifest``: record the digest of every file it newly names, the files it retires
        (kept for a grace period so open snapshots stay readable), write it atomically (the commit
        point) and keep a copy in the manifest history."""
        old = self._manifest or {}
        names = set(manifest_files(manifest))
        known = {k: v for k, v in (old.get("files") or {}).items() if k in names}
        for rel in names - set(known):
            known[rel] = digest(inside(self.path, rel))
        manifest["files"] = known
        now = time.time()
        root = os.fspath(self.path)
        # kept while the file is there; only those retired before the sweep's grace period can
        # have been swept, so only those are looked for (not every retired file on every commit)
        retired = {k: v for k, v in (old.get("retired") or {}).items()
                   if k not in names and (now - float(v) < SWEEP_AGE_S or os.path.exists(os.path.join(root, k)))}
        retired.update({k: now for k in set(manifest_files(old)) - names})
        manifest["retired"] = retired
        # one line, by the C encoder (an indented dump runs the pure-Python one: ~10x the time)
        data = json.dumps(manifest, separators=(",", ":")).encode()
        _atomic_write_bytes(self.path / "manifest.json", data, durable=durable, synced_with=synced_with)
        self._manifest_raw = b""  # set once this process has loaded what it wrote
        try:
            write_history(self.path, manifest, data)
        except OSError:
            pass  # the history helps repair; a commit never fails for it
        # the files this commit names anew were just written and recorded: only the others can
        # have been changed outside, and those were checked when this commit re-read the manifest
        self._load(manifest, {k: v for k, v in self._changed_outside.items() if k in names})
        self._manifest_raw = data

    # -- compaction -------------------------------------------------------------------------

    def _maybe_merge_tail(self) -> None:
        starts = {}
        for table, segs in self._manifest["tables"].items():
            if len(segs) > TAIL_SEGMENTS + 1:
                start = _tail_start([self._segment_rows(n) for n in segs], TAIL_SEGMENTS, MAX_SEGMENTS)
                if start is not None:
                    starts[table] = start
        if starts:
            self._compact(tables=list(starts), full=False, starts=starts)

    def _segment_rows(self, name: str) -> int:
        """The rows of one table segment (segments never change: read once from the file's footer)."""
        rows = self._seg_rows.get(name)
        if rows is None:
            rows = self._seg_rows[name] = int(pl.scan_parquet(inside(self.path, name)).select(pl.len()).collect().item())
        return rows

    def compact(self, *, timeout: float | None = None, sweep_age: float = SWEEP_AGE_S) -> dict:
        """Fold every table into one segment (tombstones dropped, the usage log folded into
        entries), sweep unreferenced files, and return what it did.

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").compact()["version"]
        1
        """
        with _locked(self.path, self.lock_timeout if timeout is None else timeout, "compact"):
            self.reload()
            return self._compact(tables=list(TABLES), full=True, sweep_age=sweep_age)

    def _compact(self, *, tables: list[str], full: bool, sweep_age: float = SWEEP_AGE_S,
                 starts: dict[str, int] | None = None) -> dict:
        manifest = json.loads(json.dumps(self._manifest))
        seq = int(manifest.get("version", 0)) + 1
        tag = f"{seq:08d}-{uuid.uuid4().hex[:6]}"
        report = {"version": seq, "tables": {}}
        usage_folded = full and self._frame("usage").height > 0
        for table in tables:
            segs = manifest["tables"].get(table, [])
            if full:
                frame = self._frame(table)
                if table == "entries" and usage_folded:
                    frame = self._entries_with_usage(frame).with_columns(
                        pl.lit(seq, pl.Int64).alias(_SEQ), pl.lit(False).alias(_DELETED)
                    )
                elif table == "usage" and usage_folded:
                    frame = None
                if frame is not None and table in KEYS:
                    frame = frame.with_columns(pl.lit(seq, pl.Int64).alias(_SEQ))
                keep: list[str] = []
            else:
                start = (starts or {}).get(table, 1)
                keep, tail = segs[:start], segs[start:]
                parts = [pl.read_parquet(inside(self.path, n)) for n in tail]
                frame = pl.concat(parts, how="diagonal_relaxed") if parts else None
                if frame is not None and table in KEYS:
                    frame = _latest_in_first_order(frame, list(KEYS[table]))
            new_segs = list(keep)
            if frame is not None and frame.height:
                rel = f"tables/{table}/{tag}.parquet"
                (self.path / "tables" / table).mkdir(parents=True, exist_ok=True)
                _write_parquet(frame, self.path / rel)
                self._seg_rows[rel] = frame.height
                new_segs.append(rel)
            manifest["tables"][table] = new_segs
            report["tables"][table] = {"segments_before": len(segs), "segments_after": len(new_segs)}
        if full:
            report["vectors"] = self._compact_vectors(manifest, tag)
        manifest["version"] = seq
        manifest["committed_at"] = utcnow().isoformat()
        manifest["commit"] = {"actor": "compact", "reason": "full compaction" if full else "tail merge"}
        # a rewrite cannot be applied incrementally: drop the merged frames. Derived values stay: the
        # content is unchanged, and each one is rebuilt (or grown from its predecessor) when next asked
        for table in tables:
            if full:
                self._caches[table] = _TableCache()
            elif self._caches[table].frame is not None:
                # a tail merge rewrites files, not rows: the merged frame stays as it is
                self._caches[table].segments = list(manifest["tables"][table])
        self._swap_manifest(manifest)
        folded = report.get("vectors", {}).pop("folded", None)
        if folded:  # after the commit: a crash before leaves the caches to be rebuilt, as before
            report["vectors"]["caches_kept"] = self._carry_caches(folded, manifest["vectors"]["segments"][0]["data"])
        report["swept"] = self._sweep(sweep_age)
        return report

    def _compact_vectors(self, manifest: dict, tag: str) -> dict:
        info = manifest.get("vectors")
        if not info or len(info.get("segments", [])) <= 1:
            return {"segments": len(info.get("segments", [])) if info else 0}
        folded = [dict(seg) for seg in info["segments"]]
        ids, data, hashes = self.vectors(with_hashes=True)
        info["segments"] = [self._write_vector_segment(tag, ids, data, hashes)]
        self._vector_cache = None
        self._segment_files = {}
        return {"segments": 1, "rows": int(len(ids)), "folded": folded}

    def _carry_caches(self, folded: list[dict], into: str) -> int:
        """Seal the cache files built over vector segments a compaction folded as built over the
        one segment they were folded into, which holds the same vectors: the query and neighbour
        indexes (whose seal's ``meta["segments"]`` names the segments they were built over, oldest
        first) are then read and grown, not rebuilt. A cache built over the first of the folded
        segments keeps the ids of the later ones as ``meta["appended_ids"]``: its reader treats
        them as it treats the ids of segments appended since (an entry among them that the cache
        holds was re-embedded: the cache is stale). Other seals are left as they are. Returns how
        many were carried over.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.write_cache_file("x.bin", "fp", lambda p: p.write_bytes(b"abc"), meta={"segments": ["v/1", "v/2"]})
        >>> bank._carry_caches([{"data": "v/1"}, {"data": "v/2"}], "v/3"), bank.cached_file_meta("x.bin")[2]
        (1, {'segments': ['v/3']})
        """
        folder = self.path / "cache"
        if self.readonly or not folder.is_dir():
            return 0
        names = [seg["data"] for seg in folded]
        carried = 0
        for seal_path in sorted(folder.glob("*.json")):
            try:
                info = _read_json(seal_path)
            except (OSError, ValueError):
                continue
            meta = info.get("meta") if isinstance(info, dict) else None
            old = meta.get("segments") if isinstance(meta, dict) else None
            if "files" not in info or not isinstance(old, list) or not old or names[: len(old)] != old:
                continue
            try:  # after the commit: a seal that cannot be carried is left, its cache rebuilt
                later = [self.vector_segment_ids(seg) for seg in folded[len(old) :]]
                appended = sorted(set(meta.get("appended_ids") or []).union(*(ids.tolist() for ids in later)))
                info["meta"] = {**{k: v for k, v in meta.items() if k != "appended_ids"}, "segments": [into],
                                **({"appended_ids": appended} if appended else {})}
                _atomic_write_bytes(seal_path, json.dumps(info).encode())
            except (OSError, ValueError):
                continue
            carried += 1
        return carried

    def _sweep(self, age: float = SWEEP_AGE_S) -> int:
        """Remove files no manifest names any more: retired segments once they have been out of the
        manifest for ``age`` seconds (a reader's snapshot stays readable that long), files a crashed
        write left behind once they are ``age`` seconds old. Never follows a symlink: a symlinked
        folder or file inside the bank is left alone (``kb check`` reports it)."""
        referenced = set(manifest_files(self._manifest))
        retired = self._manifest.get("retired") or {}
        removed = 0
        now = time.time()
        folders = [self.path / "vectors", *(self.path / "tables").glob("*")]
        for folder in folders:
            if folder.is_symlink() or not folder.is_dir() or folder.parent.is_symlink():
                continue
            prefix = folder.relative_to(self.path).as_posix() + "/"
            with os.scandir(folder) as listing:  # names and types without a Path per file
                for f in listing:
                    rel = prefix + f.name
                    if rel in referenced or f.is_symlink() or not f.is_file(follow_symlinks=False):
                        continue
                    try:
                        since = retired.get(rel, f.stat(follow_symlinks=False).st_mtime)
                        if now - float(since) >= age:
                            os.unlink(f.path)
                            removed += 1
                    except FileNotFoundError:
                        pass
        for tmp in temp_files(self.path):
            try:
                if now - tmp.stat().st_mtime >= age:
                    tmp.unlink()
                    removed += 1
            except FileNotFoundError:
                pass
        return removed


def read_manifest(path: str | os.PathLike) -> dict:
    """The manifest of the bank at ``path`` (its segment lists), after checking the folder is a bank.

    >>> read_manifest("/nonexistent")
    Traceback (most recent call last):
    ...
    kbtools.errors.NotABank: /nonexistent is not a kbtools bank: the folder does not exist
    """
    root = Path(path)
    meta_path = root / "bank.json"
    if not root.exists():
        raise NotABank(root, "the folder does not exist")
    if not root.is_dir():
        raise NotABank(root, "it is a file, not a folder")
    if not meta_path.exists():
        raise NotABank(root, "no bank.json in it")
    try:
        meta = _read_json(meta_path)
    except (OSError, ValueError) as err:
        raise NotABank(root, f"bank.json is unreadable ({err})") from None
    if meta.get("format") != FORMAT:
        raise NotABank(root, f"bank.json says format={meta.get('format')!r}, expected {FORMAT!r}")
    if int(meta.get("version", 0)) > FORMAT_VERSION:
        raise NotABank(root, f"format version {meta.get('version')} is newer than this kbtools ({FORMAT_VERSION})")
    try:
        return _read_json(root / "manifest.json")
    except (OSError, ValueError) as err:
        raise NotABank(root, f"manifest.json is unreadable ({err})") from None


def create_bank(path: str | os.PathLike, *, settings: dict | None = None,
                embedder: str | None = DEFAULT_EMBEDDER) -> Bank:
    """Create a new, empty bank folder and open it; an error if a bank (or anything) is there.

    The bank records ``embedder`` in its settings (the default MiniLM model unless told): every
    write then embeds what it adds in its own transaction, so a query answers from the first
    entry on. ``embedder=None`` records none: writes store no vectors until ``kb embed`` (for a
    bank filled by a bulk import and embedded afterwards, or with another embedder).

    >>> import tempfile, pathlib
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "new")
    >>> bank.entries.height, bank.settings["embedder"]
    (0, 'minilm-int8')
    """
    root = Path(path)
    if (root / "bank.json").exists():
        raise BankExists(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise BankExists(root, "the path exists and is not an empty folder")
    root.mkdir(parents=True, exist_ok=True)
    for table in TABLES:
        (root / "tables" / table).mkdir(parents=True, exist_ok=True)
    base_settings = {"auto_link": True, **({"embedder": embedder} if embedder else {})}
    base_settings.update(settings or {})
    if base_settings.get("embedder") is None:
        base_settings.pop("embedder", None)
    manifest = {"version": 0, "tables": {t: [] for t in TABLES}, "settings": base_settings, "vectors": {}}
    _atomic_write_bytes(root / "manifest.json", json.dumps(manifest, indent=1).encode())
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "created_at": utcnow().isoformat()}
    _atomic_write_bytes(root / "bank.json", json.dumps(meta, indent=1).encode())
    return Bank(root)


def open_bank(path: str | os.PathLike, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, readonly: bool = False) -> Bank:
    """Open an existing bank; an error naming the path when it is not one. With ``readonly=True``
    nothing is ever written: writes raise ``ReadOnlyBank``, usage is not recorded, caches are
    built in memory only.

    >>> open_bank("/nonexistent/bank")
    Traceback (most recent call last):
    ...
    kbtools.errors.NotABank: /nonexistent/bank is not a kbtools bank: the folder does not exist
    """
    if isinstance(path, Bank):
        return path
    return Bank(path, lock_timeout=lock_timeout, readonly=readonly)


class VectorBlocks:
    """A bank's vectors as blocks read from the memory-mapped segments (see
    :meth:`Bank.vector_blocks`): ``.ids`` in order, iterate for ``(ids, vectors)`` blocks, as many
    times as needed (each pass reads the files again; nothing is kept)."""

    def __init__(self, bank: Bank, block: int, ids=None):
        segs = bank.vector_segments()
        parts = [np.load(inside(bank.path, s["ids"]), allow_pickle=False).astype(str) for s in segs]
        self.block = block
        self._paths = [inside(bank.path, s["data"]) for s in segs]
        self._maps = [np.load(p, mmap_mode="r", allow_pickle=False) for p in self._paths]
        self._fds: dict[int, int] = {}  #: segment -> descriptor, opened by :meth:`rows` on first use
        if not parts:
            self.ids, self._seg, self._row = np.array([], dtype=str), np.zeros(0, np.int64), np.zeros(0, np.int64)
            return
        all_ids = np.concatenate(parts)
        seg_of = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
        row_of = np.concatenate([np.arange(len(p)) for p in parts])
        if len(parts) > 1:  # the latest segment wins per id, in the order Bank.vectors gives
            _, last = np.unique(all_ids[::-1], return_index=True)
            keep = np.sort(len(all_ids) - 1 - last)
            all_ids, seg_of, row_of = all_ids[keep], seg_of[keep], row_of[keep]
        wanted = bank.entries["id"] if ids is None else ids
        live = pl.Series(all_ids, dtype=pl.String).is_in(pl.Series(wanted, dtype=pl.String).implode()).to_numpy()
        self.ids, self._seg, self._row = all_ids[live], seg_of[live], row_of[live]

    @property
    def shape(self) -> tuple[int, ...]:
        """(rows, dimensions, vector length) of all the blocks together."""
        return (len(self.ids), *(self._maps[0].shape[1:] if self._maps else (0, 0)))

    def __len__(self) -> int:
        return -(-len(self.ids) // self.block)

    #: up to this many rows are read with ``pread`` instead of through the map
    PREAD_ROWS = 512

    def rows(self, positions) -> np.ndarray:
        """The vectors (m, dimensions, d) at ``positions`` of :attr:`ids`, gathered from the
        segments (only those rows are read). A few rows (a query's candidates being re-scored) are
        read with ``pread``: a page fault on the map would map the pages around each row into this
        process too (the kernel's fault-around), and a server re-scoring random rows would count
        most of the vector files as its own resident memory."""
        positions = np.asarray(positions, dtype=np.int64)
        dtype = np.result_type(*(m.dtype for m in self._maps)) if self._maps else np.float32
        out = np.empty((len(positions), *(self._maps[0].shape[1:] if self._maps else (0, 0))), dtype=dtype)
        seg, row = self._seg[positions], self._row[positions]
        for s in np.unique(seg):
            here = np.flatnonzero(seg == s)
            mapped = self._maps[s]
            if (len(here) > self.PREAD_ROWS or not isinstance(mapped, np.memmap) or mapped.dtype != dtype
                    or not mapped.flags.c_contiguous):
                out[here] = mapped[row[here]]
                continue
            fd = self._fd(s)
            size = mapped.dtype.itemsize * int(np.prod(mapped.shape[1:]))
            for k, r in zip(here.tolist(), row[here].tolist()):
                out[k] = np.frombuffer(os.pread(fd, size, mapped.offset + r * size), dtype=dtype).reshape(out.shape[1:])
        return out

    def _fd(self, s: int) -> int:
        """An open descriptor of segment ``s`` (kept: the file stays readable even if swept)."""
        if s not in self._fds:
            self._fds[s] = os.open(self._paths[s], os.O_RDONLY)
            weakref.finalize(self, os.close, self._fds[s])
        return self._fds[s]

    def __iter__(self):
        dtype = np.result_type(*(m.dtype for m in self._maps)) if self._maps else np.float32
        for start in range(0, len(self.ids), self.block):
            sl = slice(start, start + self.block)
            seg, row = self._seg[sl], self._row[sl]
            out = np.empty((len(seg), *self._maps[0].shape[1:]), dtype=dtype)
            for s in np.unique(seg):
                here = seg == s
                rows = row[here]
                # mapped for this block only: the pages read leave this process's resident memory
                # when the map is dropped (a pass over a million entries stays at one block)
                mapped = np.load(self._paths[s], mmap_mode="r", allow_pickle=False)
                # a contiguous run is read as one slice (sequential I/O), the rest by gather
                run = rows[-1] - rows[0] + 1 == len(rows)
                out[here] = mapped[rows[0] : rows[-1] + 1] if run else mapped[rows]
                del mapped
            yield self.ids[sl], out
