"""Reading a table's segments and the keyed merge: the rows of a table are its segments read in
order; in a keyed table (entries, edges, triples) every row carries ``_seq`` (the manifest version
that wrote it) and ``_deleted`` (a tombstone), and the latest version of each key wins, in the
place where the key first appeared. Pure functions over frames, plus the small structures a bank
keeps per table (:class:`TableCache`, :class:`EntryIds`) to grow on append instead of re-merging.

>>> rows = pl.DataFrame({"id": ["a", "b", "a"], "v": [1, 2, 3], "_seq": [1, 1, 2], "_deleted": [False] * 3})
>>> merge_keyed(None, rows, ("id",)).select("id", "v").rows()
[('a', 3), ('b', 2)]
"""

from __future__ import annotations

import collections
import errno
import itertools
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple

import numpy as np
import polars as pl

from kbtools.errors import BankDamaged, KbError
from kbtools.model.frames import among, rows_where
from kbtools.model.schema import KEYS, SCHEMAS, TABLES, empty
from kbtools.store.files import inside
from kbtools.store.rowindex import RowChange, RowIndex

if TYPE_CHECKING:  # functions here read a bank's snapshot; the bank imports this module
    from kbtools.store.bank import Bank

__all__ = ["SEQ", "DELETED", "MAX_CHUNKS", "new_epoch", "latest_in_first_order", "only_fresh_keys",
           "merge_keyed", "merged_rows", "append_rows", "project", "read_segment", "read_segments", "TABLE_READS", "check_segment", "segment_rows",
           "live_rows", "segment_files",
           "TableCache", "EntryIds", "current_ids", "missing_ids", "table_mark", "key_mark", "rows_with", "rows_finder",
           "appended_rows", "SegmentMark", "remember_rows", "segment_names", "segments_frame", "base_and_later"]

#: the column of a keyed table's rows naming the manifest version that wrote them
SEQ = "_seq"
#: the column of a keyed table's rows marking a tombstone (the key was deleted)
DELETED = "_deleted"
_SEQ, _DELETED = SEQ, DELETED
_NONE = np.zeros(0, np.int64)

_EPOCHS = itertools.count(1)


def new_epoch() -> int:
    """A number never handed out before in this process: marks that rows changed other than by
    an append (see :class:`TableCache`).

    >>> new_epoch() < new_epoch()
    True
    """
    return next(_EPOCHS)


def latest_in_first_order(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """One row per key: the values of its latest version, in the order keys first appeared."""
    if rows.height <= 64:  # a write's few rows: told in Python (a polars query costs more here)
        listed = list(zip(*(rows.get_column(k).to_list() for k in keys)))
        if len(set(listed)) == len(listed):
            return rows
    elif not rows.select(pl.struct(keys).is_duplicated().any()).item():
        return rows
    idx = rows.with_row_index("_ord")
    last = idx.sort(_SEQ, maintain_order=True).unique(subset=keys, keep="last").drop("_ord")
    first = idx.unique(subset=keys, keep="first", maintain_order=True).select(*keys, "_ord")
    return last.join(first, on=keys, how="left", nulls_equal=True).sort("_ord").drop("_ord")


def only_fresh_keys(current: pl.DataFrame | None, new: pl.DataFrame, keys: tuple[str, ...], *,
                    rows_with: Callable | None = None) -> bool:
    """True when ``new`` only adds rows: no tombstone, no key twice, no key already in ``current``
    (the append of a write that adds entries or edges; checked without hashing the whole table).
    ``rows_with(column, values)``: positions in ``current`` of the rows holding those values (an
    index kept with the table; None where there is none), else ``current`` is scanned."""
    if current is None or current.height == 0 or new[_DELETED].any():
        return False
    if new.height > 64:  # a bulk append (a connect chunk's links): one semi join, not a merge and sort
        if new.select(pl.struct(list(keys)).is_duplicated().any()).item():
            return False
        return new.select(keys).join(current.select(keys), on=list(keys), how="semi", nulls_equal=True).height == 0
    listed = _key_tuples(new, keys)  # a write's few rows: told in Python
    first = new.get_column(keys[0])
    if len(set(listed)) < len(listed) or first.null_count():
        return False  # a key twice, or a null first key: the merge decides (it matches nulls as keys)
    near = _rows_of(current, keys, first, rows_with)  # the rows of the few first keys
    return not set(listed) & set(_key_tuples(near, keys))


def _key_tuples(frame: pl.DataFrame, keys: tuple[str, ...]) -> list[tuple]:
    return list(zip(*(frame.get_column(k).to_list() for k in keys)))


def _rows_of(current: pl.DataFrame, keys: tuple[str, ...], first: pl.Series, rows_with: Callable | None,
             ) -> pl.DataFrame:
    """The ``keys`` of the rows of ``current`` whose first key is among ``first`` (no null among
    them), with their positions (``_pos``): from ``rows_with`` where it has an index, else by a scan."""
    at = rows_with(keys[0], first.to_list()) if rows_with is not None else None
    if at is None:
        return rows_where(current, among(keys[0], first), columns=keys)
    at = pl.Series("_pos", at, dtype=pl.UInt32)
    return current.select(pl.col(list(keys)).gather(at)).with_columns(at)


def merge_keyed(current: pl.DataFrame | None, new: pl.DataFrame, keys: tuple[str, ...]) -> pl.DataFrame:
    """Apply segment rows (with _seq/_deleted) on top of a merged frame (without tombstones).

    Rows keep their place: an updated row stays where its key first appeared, new keys go at the
    end (so derived structures over the rows can be extended instead of rebuilt)."""
    return merged_rows(current, new, keys)[0]


def merged_rows(current: pl.DataFrame | None, new: pl.DataFrame, keys: tuple[str, ...], *,
                rows_with: Callable | None = None) -> tuple[pl.DataFrame, RowChange | None]:
    """:func:`merge_keyed`, and how its rows came from ``current`` (None when there were none):
    the positions of the keys deleted, and the new keys appended. ``rows_with``: as for
    :func:`only_fresh_keys`.

    >>> cur = merge_keyed(None, pl.DataFrame({"id": ["a", "b"], "_seq": [1, 1], "_deleted": [False, False]}), ("id",))
    >>> frame, change = merged_rows(cur, pl.DataFrame({"id": ["a", "c"], "_seq": [2, 2], "_deleted": [True, False]}), ("id",))
    >>> frame["id"].to_list(), change.dropped.tolist(), change.appended
    (['b', 'c'], [0], 1)
    """
    if new.height == 0:
        return (current, RowChange(_NONE, 0)) if current is not None else (new.filter(pl.lit(False)), None)
    new = latest_in_first_order(new, list(keys))
    if current is None or current.height == 0:
        return new.filter(~pl.col(_DELETED)), None
    first = new.get_column(keys[0])
    if first.null_count():  # a scan, not a hash of every row
        held = rows_where(current, among(keys[0], first) | pl.col(keys[0]).is_null(), columns=keys)
    else:
        held = _rows_of(current, keys, first, rows_with)
    if new.height <= 64 and not first.null_count():  # a write's few rows: each one's place told in Python
        place = dict(zip(_key_tuples(held, keys), held["_pos"].to_list()))
        new = new.with_columns(pl.Series("_pos", [place.get(k) for k in _key_tuples(new, keys)], dtype=pl.UInt32))
    else:
        new = new.join(held, on=list(keys), how="left", nulls_equal=True)
    pos = new["_pos"].fill_null(-1).cast(pl.Int64).to_numpy()
    deleted = new[_DELETED].to_numpy()
    fresh = pos < 0
    dropped, appended = np.sort(pos[~fresh & deleted]), int((fresh & ~deleted).sum())
    # no key changed in place (an append, a delete, a linked write's links in and evicted out): the
    # deleted rows dropped and the new ones appended, no sort of the table
    if not (~fresh & ~deleted).any():
        kept = _without_rows(current, dropped)
        added = new.filter(pl.Series(fresh & ~deleted)).drop("_pos") if appended else None
        return (append_rows(kept, added) if appended else kept), RowChange(dropped, appended)
    fresh = pl.Series(fresh)
    new = new.with_columns(
        pl.when(fresh).then(pl.lit(current.height, pl.UInt32) + fresh.cast(pl.UInt32).cum_sum() - 1)
        .otherwise(pl.col("_pos")).alias("_pos")
    )
    kept = current.with_row_index("_pos").join(new.select(keys), on=list(keys), how="anti", nulls_equal=True)
    merged = pl.concat([kept, new], how="diagonal_relaxed").sort("_pos").drop("_pos")
    return merged.filter(~pl.col(_DELETED)), RowChange(dropped, appended)


def _without_rows(frame: pl.DataFrame, dropped: np.ndarray) -> pl.DataFrame:
    """``frame`` less the rows at the sorted positions ``dropped``: a few rows by slicing around them
    (no copy of the rows kept; :func:`append_rows` bounds the chunks), many by a mask."""
    if not len(dropped):
        return frame
    if len(dropped) > MAX_CHUNKS // 4:
        mask = np.ones(frame.height, dtype=bool)
        mask[dropped] = False
        return frame.filter(pl.Series(mask))
    starts = np.concatenate([[0], dropped + 1]).tolist()
    ends = np.concatenate([dropped, [frame.height]]).tolist()
    return pl.concat([frame.slice(a, b - a) for a, b in zip(starts, ends) if b > a] or [frame.clear()],
                     how="vertical", rechunk=False)


#: An appended frame keeps at most this many chunks: past it, the chunks after the first are joined.
MAX_CHUNKS = 32


def append_rows(frame: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the rows of ``new`` at its end, its chunks kept few: every append adds a
    chunk, and an operation over a frame costs per chunk, so past :data:`MAX_CHUNKS` the rows after
    the first chunk (what was appended since the table was read) are joined into one chunk; the
    first chunk, the bulk of the table, is never copied.

    >>> f = pl.DataFrame({"a": [1, 2]})
    >>> for i in range(40):
    ...     f = append_rows(f, pl.DataFrame({"a": [i]}))
    >>> f.height, f.n_chunks() <= MAX_CHUNKS
    (42, True)
    """
    out = frame.vstack(new) if new.schema == frame.schema else pl.concat([frame, new], how="diagonal_relaxed")
    if out.width and out.n_chunks() > MAX_CHUNKS:
        first = out.get_column(out.columns[0]).chunk_lengths()[0]
        out = pl.concat([out.slice(0, first), out.slice(first).rechunk()], how="vertical", rechunk=False)
    return out


def project(frame: pl.DataFrame, columns) -> pl.DataFrame:
    """``frame.select(columns)`` for plain column names, without a query plan (a tenth of the
    cost on a large frame: this runs on every read of a table)."""
    return pl.DataFrame([frame.get_column(c) for c in columns])


#: Past this many values, :meth:`TableCache.rows_with` scans the column (one vectorised pass) instead
#: of looking each value up in the index
MANY_VALUES = 256
#: The version of a table's rows (counted from the first asked for) whose ask for a column's rows
#: builds its index (the asks before it scan)
INDEX_FROM = 2


class TableCache:
    """The merged rows of one table, the segment list they were built from, and the
    :class:`~kbtools.store.rowindex.RowIndex` of each column asked for (kept current as rows change)."""

    __slots__ = ("segments", "frame", "epoch", "key_epoch", "indexes", "asked", "version")

    def __init__(self) -> None:
        self.segments: list[str] = []
        self.frame: pl.DataFrame | None = None
        self.epoch = new_epoch()  # a new number whenever rows changed other than at the end
        # a new number whenever a key may have left or moved (a tombstone, a re-read): while it
        # holds, the keys of rows ``:n`` are those of before and new keys come at the end
        self.key_epoch = new_epoch()
        self.indexes: dict[str, RowIndex] = {}
        self.asked: dict[str, tuple] = {}  # by column: versions asked for without its index, the last one
        self.version = 0  # counts the frames taken (:meth:`moved`)

    def moved(self, frame: pl.DataFrame, change: RowChange | None) -> None:
        """Take ``frame`` as the merged rows, ``change`` telling how they came from the rows held
        (None: read anew): the indexes follow a change, and are dropped otherwise."""
        if change is None:
            self.indexes = {}
        elif self.indexes and (len(change.dropped) or change.appended):
            tail = frame.slice(frame.height - change.appended)
            self.indexes = {c: ix.changed(change, tail.get_column(c)) for c, ix in self.indexes.items()}
        self.frame = frame
        self.version += 1

    def held_rows(self, column: str, values) -> np.ndarray | None:
        """:meth:`rows_with` where an index of ``column`` is held, else None (none is built)."""
        index = self.indexes.get(column)
        if index is None or self.frame is None or index.height != self.frame.height:
            return None
        values = values if isinstance(values, list) else list(values)
        return index.rows_of(values) if len(values) <= MANY_VALUES else None

    def rows_with(self, column: str, values) -> np.ndarray:
        """Positions (ascending) of the merged rows whose ``column`` holds one of ``values``: a few
        values by the column's index, many (a bulk change's) by a scan of the column. The index is
        built when asked for the second time (a process that asks once, a command's one write, pays
        a scan, not the build: 0.1 s for 600,000 edges)."""
        values = values if isinstance(values, list) else list(values)
        index = self.indexes.get(column)
        if len(values) <= MANY_VALUES and (index is None or index.height != self.frame.height):
            count, seen = self.asked.get(column, (0, -1))
            if seen != self.version:  # asks of one version (one write's) count once
                self.asked[column] = count, seen = count + 1, self.version
            if count >= INDEX_FROM:
                index = self.indexes[column] = RowIndex.build(self.frame.get_column(column))
        if len(values) > MANY_VALUES or index is None or index.height != self.frame.height:
            column_values = self.frame.get_column(column)
            wanted = pl.Series(values, dtype=column_values.dtype, strict=False).drop_nulls()
            return column_values.is_in(wanted.implode()).fill_null(False).arg_true().to_numpy().astype(np.int64)
        return index.rows_of(values)


_HEX_ID = re.compile(r"[0-9a-f]{8}")


class EntryIds:
    """The ids of a bank's entries as a membership structure, grown on append.

    An id of 8 lowercase hex characters (every id kbtools writes) is a 32-bit number: those are
    kept in a sorted ``uint32`` array (4 bytes per id, 4 MB per million; a look-up is a binary
    search, exact: no hash, no collision). Ids added since the array was sorted wait in a small
    set that is folded in once it holds ``FOLD_AT`` ids (one O(n) merge per ``FOLD_AT`` appends);
    any other id (an import's foreign key) goes to a set of its own.

    >>> ids = EntryIds(pl.Series(["0000000a", "ffffffff", "odd-id"]), (1, 3))
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

#: What polars raises on bytes that are not the Parquet a commit wrote (a panic of its Rust core
#: included), besides OSError
_PARQUET_ERRORS = (pl.exceptions.PolarsError, pl.exceptions.PanicException, ValueError)


def _parquet(root: Path, table: str | None, name: str, read, *, missing_is_damage: bool = False):
    """``read(path)`` of the table segment ``name`` of the bank at ``root``: the one door of every
    read of a segment file. A file that is not what its commit wrote raises
    :class:`~kbtools.errors.BankDamaged` naming it; a file that is not there raises
    FileNotFoundError with its path (a compaction may have swept it since the snapshot: the caller
    moves to the newest version, and calls it damage when that names the file too), or with
    ``missing_is_damage`` :class:`~kbtools.errors.BankDamaged` (for a reader of the newest version)."""
    path = inside(root, name)
    try:
        frame = read(path)
    except PermissionError:
        raise  # not damage: the file system's answer, said as it is
    except (OSError, *_PARQUET_ERRORS) as err:
        if not path.exists():  # FileNotFoundError, or polars saying so in its own words
            if missing_is_damage:
                raise BankDamaged(root, name, "missing") from None
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path)) from None
        why = (f"unreadable: {err.strerror or err}" if isinstance(err, OSError)
               else f"not the Parquet its commit wrote: {str(err).splitlines()[0][:200]}")
        raise BankDamaged(root, name, why) from None
    if table is not None:
        have = frame.names() if isinstance(frame, pl.Schema) else frame.columns
        lacking = [c for c in SCHEMAS[table] if c not in have]
        if lacking:
            raise BankDamaged(root, name, f"a segment of {table} without the column(s) {', '.join(lacking)}")
    return frame


def read_segment(root: Path, table: str, name: str) -> pl.DataFrame:
    """The rows of the segment ``name`` of ``table`` in the bank at ``root``, as written (``_seq``
    and ``_deleted`` included). Raises :class:`~kbtools.errors.BankDamaged` naming the file when it
    is not the Parquet its commit wrote, or lacks a column of the table; FileNotFoundError when it
    is not there.

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); _ = (root / "x.parquet").write_bytes(b"PAR1 cut")
    >>> read_segment(root, "edges", "x.parquet")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kbtools.errors.BankDamaged: ...: x.parquet is damaged (not the Parquet its commit wrote: ...
    """
    return _parquet(root, table, name, pl.read_parquet)


def check_segment(root: Path, table: str, name: str) -> None:
    """Read the footer of the segment ``name`` of ``table`` (not its rows): what a reader that
    hands the files to another engine (a LazyFrame, DuckDB) checks first, so that damage is
    :class:`~kbtools.errors.BankDamaged` naming the file, not that engine's error at collect time."""
    _parquet(root, table, name, pl.read_parquet_schema, missing_is_damage=True)


def segment_rows(root: Path, name: str) -> int:
    """The rows of the table segment ``name`` of the bank at ``root`` (read from the file's footer)."""
    return _parquet(root, None, name, lambda path: int(pl.scan_parquet(path).select(pl.len()).collect().item()),
                    missing_is_damage=True)


def live_rows(root: Path, names: list[str], table: str) -> int:
    """The rows ``table`` holds over its segments ``names`` without reading the table: for a keyed
    table only the key, ``_seq`` and ``_deleted`` columns are read (the latest version of each key,
    tombstones left out); an append-only table is counted from the files' footers."""
    if not names:
        return 0
    files = [inside(root, n) for n in names]
    scan = pl.scan_parquet(files)
    if table not in KEYS:
        return int(scan.select(pl.len()).collect().item())
    keys = list(KEYS[table])
    # segments are listed oldest first, so the last row of a key in scan order is its latest version
    latest = scan.select(*keys, _DELETED).unique(subset=keys, keep="last")
    return int(latest.filter(~pl.col(_DELETED)).select(pl.len()).collect().item())


def segment_files(bank: Bank) -> dict[str, list[str]]:
    """The Parquet segment files of each table in ``bank``'s snapshot, oldest first (paths relative
    to the bank folder): what a reader must read, and nothing else (superseded files stay on disk
    until the sweep).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> segment_files(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))["entries"]
    []
    """
    tables = bank.manifest.get("tables") or {}
    return {t: list(tables.get(t, [])) for t in TABLES}


#: how often this process read a table whole (:func:`read_segments` without rows to grow); tests
#: and benches count them
TABLE_READS: collections.Counter = collections.Counter()


def read_segments(root: Path, table: str, names: list[str], frame: pl.DataFrame | None, *,
                  written: dict[str, pl.DataFrame], ids: EntryIds | None = None, rows_with: Callable | None = None,
                  ) -> tuple[pl.DataFrame, bool, bool, RowChange | None]:
    """The merged rows of ``table`` after reading the segments ``names`` (of the bank at ``root``)
    on top of ``frame``, whether they are ``frame`` with rows added at its end only (an append:
    nothing before changed), whether the keys of ``frame`` kept their rows (no key deleted; new
    keys at the end, updated rows in place), and how the rows came from ``frame``'s
    (:class:`~kbtools.store.rowindex.RowChange`; None when read anew).

    ``written``: segments this process just committed, taken as written instead of read back (each
    is taken out of the dict). ``ids``: the entry ids of ``frame`` when they are current for it, so
    that an append of new entries is told without scanning the id column. ``rows_with``: an index of
    ``frame``'s rows (see :func:`only_fresh_keys`).
    """
    keyed = table in KEYS
    if names and frame is None:
        TABLE_READS[table] += 1
    if not names:
        if frame is not None:
            return frame, True, True, RowChange(_NONE, 0)
        base = empty(table)
        if keyed:
            base = base.with_columns(pl.lit(0, pl.Int64).alias(_SEQ), pl.lit(False).alias(_DELETED))
        return base, False, False, None
    parts = [written.pop(n) if n in written else read_segment(root, table, n) for n in names]
    try:
        new = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
    except _PARQUET_ERRORS as err:  # a column of a type no other segment's can be cast to
        raise BankDamaged(root, f"tables/{table}/", f"segments of {table} that do not fit together: "
                          f"{str(err).splitlines()[0][:200]}") from None
    if frame is None:
        return (merge_keyed(None, new, KEYS[table]) if keyed else new), False, False, None
    if keyed:
        fresh = _fresh_entries(ids, new) if table == "entries" and ids is not None else None
        if fresh is None:
            fresh = only_fresh_keys(frame, new, KEYS[table], rows_with=rows_with)
        if fresh:
            return append_rows(frame, new), True, True, RowChange(_NONE, new.height)
        merged, change = merged_rows(frame, new, KEYS[table], rows_with=rows_with)
        return merged, False, not new[_DELETED].any(), change
    return append_rows(frame, new), True, True, RowChange(_NONE, new.height)


def _fresh_entries(ids: EntryIds, new: pl.DataFrame) -> bool:
    """Whether ``new`` only adds entries, told by the entry-id set (no scan of the id column)."""
    if new.height > 64 or new[_DELETED].any():
        return False
    listed = new["id"].to_list()
    return len(set(listed)) == len(listed) and all(isinstance(i, str) and i not in ids for i in listed)


def current_ids(prior: EntryIds | None, ids: pl.Series, mark: tuple[int, int], counts: dict[str, int]) -> EntryIds:
    """The entry-id set for the id column ``ids`` at ``mark`` (key epoch, rows): ``prior`` as it is
    when its mark is the same, grown by the rows appended since when only rows were appended,
    else built anew (an id may have left: a delete, a merge, a compaction, a re-read). ``counts``
    tallies ``"built"`` and ``"grown"``.

    >>> counts = {"built": 0, "grown": 0}
    >>> ids = current_ids(None, pl.Series(["0000000a"]), (1, 1), counts)
    >>> ids = current_ids(ids, pl.Series(["0000000a", "0000000b"]), (1, 2), counts)
    >>> "0000000b" in ids, counts
    (True, {'built': 1, 'grown': 1})
    """
    if prior is not None and prior.mark == mark:
        return prior
    if prior is not None and prior.mark[0] == mark[0] and prior.mark[1] <= mark[1]:
        prior.grow(ids.slice(prior.mark[1]), mark)
        counts["grown"] += 1
        return prior
    counts["built"] += 1
    return EntryIds(ids, mark)


def missing_ids(ids: list[str], column: pl.Series, known: Callable[[], EntryIds]) -> list[str]:
    """Those of ``ids`` that are not in the entry-id ``column``, in order: a bulk check is one
    vectorised pass over the column, a few ids are looked up in the id set ``known()`` gives.

    >>> missing_ids(["a", "b"], pl.Series(["a"]), lambda: EntryIds(pl.Series(["a"]), (1, 1)))
    ['b']
    """
    if not ids:
        return []
    if len(ids) > 64:
        found = pl.Series(ids, dtype=pl.String).is_in(column.implode()).to_list()
        return [i for i, ok in zip(ids, found) if not ok]
    have = known()
    return [i for i in ids if i not in have]


def table_mark(bank: Bank, name: str) -> tuple[int, int]:
    """``(epoch, rows)`` of table ``name`` in ``bank``'s snapshot: while a later mark has the same
    epoch, the table only gained rows at its end since (rows ``rows:`` are the new ones), so a
    cache built over the rows can be grown instead of rebuilt.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> table_mark(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), "entries")[1]
    0
    """
    merged = bank.merged(name)
    return merged.epoch, merged.frame.height


def key_mark(bank: Bank, name: str) -> tuple[int, int]:
    """``(key epoch, rows)`` of table ``name`` in ``bank``'s snapshot: while a later mark has the
    same key epoch, the first ``rows`` rows hold the same keys in the same order (their values may
    have changed: an update, a status, ``linked_at``), and rows ``rows:`` are new. For caches built
    over the keys alone (the linker's vectors).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> key_mark(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), "entries")[1]
    0
    """
    merged = bank.merged(name)
    return merged.key_epoch, merged.frame.height


def rows_with(bank: Bank, table: str, column: str, values) -> np.ndarray:
    """Positions (ascending) of the rows of ``bank.table(table)`` whose ``column`` holds one of
    ``values``: found by binary search in an index of the column (:class:`~kbtools.store.rowindex.RowIndex`),
    built on first use and kept current by the bank's writes and reloads, not by a scan of the table.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> rows_with(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), "edges", "src", ["a1b2c3d4"]).tolist()
    []
    """
    merged = bank.merged(table)
    if column not in merged.frame.columns:
        raise KbError(f"table {table!r} has no column {column!r}")
    return merged.rows_with(column, values)


def rows_finder(bank: Bank, tails: dict[str, pl.DataFrame] | None = None) -> Callable[[str, str, object], np.ndarray]:
    """``find(table, column, values)``: positions (ascending) of the rows whose ``column`` holds
    one of ``values`` in ``bank.table(table)`` followed by the rows of ``tails[table]`` (a write's
    new rows, not committed yet): the bank's found by :func:`rows_with`, the tail's by a scan.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> find = rows_finder(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), {"edges": pl.DataFrame({"src": ["a1"]})})
    >>> find("edges", "src", ["a1"]).tolist()
    [0]
    """
    tails = tails or {}

    def find(table: str, column: str, values) -> np.ndarray:
        values = list(dict.fromkeys(values.to_list() if isinstance(values, pl.Series) else values))
        found = rows_with(bank, table, column, values)
        tail = tails.get(table)
        if tail is not None and tail.height:
            hit = tail.select(among(column, values).fill_null(False)).to_series().to_numpy()
            found = np.concatenate([found, np.flatnonzero(hit) + bank.merged(table).frame.height])
        return found

    return find


def appended_rows(bank: Bank, name: str, mark: tuple[int, int] | None, *,
                  columns: tuple[str, ...] | None = None) -> pl.DataFrame | None:
    """The rows of table ``name`` of ``bank`` added since ``mark`` (a :func:`table_mark` of an
    earlier snapshot), when the table only gained rows at its end since; None when anything else
    changed (then rebuild what was built over the rows). Usage is not counted in. ``columns``:
    only these columns of the table (a query growing its caches reads a few).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> appended_rows(bank, "entries", table_mark(bank, "entries")).height
    0
    """
    merged = bank.merged(name)
    if mark is None or mark[0] != merged.epoch or mark[1] > merged.frame.height:
        return None
    return project(merged.frame.slice(mark[1]), SCHEMAS[name] if columns is None else columns)


class SegmentMark(NamedTuple):
    """What a value built from a table's segments themselves (a base segment's sidecar and the
    segments after it), not from its merged frame, covers: the segments' names, oldest first.
    While a later snapshot's segments start with these, only the segments after them are new."""

    names: tuple[str, ...]


#: a segment of at most this many rows that this process wrote is kept for :func:`segments_frame`
REMEMBER_ROWS = 4096


class _Recent(NamedTuple):
    """What this process's commits wrote, while the snapshot names it: small segments' rows by
    name, and the segments each tail merge folded (merged name -> the names it holds, in order)."""

    rows: dict
    merges: dict


def _recent(bank: Bank) -> _Recent:
    def kept(prior: _Recent | None) -> _Recent:
        tables = bank.manifest.get("tables") or {}
        named = {n for segs in tables.values() for n in segs}
        merges = {m: held for m, held in (prior.merges if prior else {}).items() if m in named}
        named |= {n for held in merges.values() for n in held}
        return _Recent({n: f for n, f in (prior.rows if prior else {}).items() if n in named}, merges)

    return bank.derived("table-segment-rows", kept, on=TABLES, grow=True)


def remember_rows(bank: Bank, written: dict[str, pl.DataFrame], merges: dict[str, list[str]] | None = None) -> None:
    """Take the small table segments a commit of this process just wrote (relative path -> their
    rows) as read, and the segments a tail merge folded (merged name -> their names):
    :func:`segments_frame` (and the next tail merge) reads none of them back, and
    :func:`segment_names` names the folded ones instead of the merged one."""
    recent = _recent(bank)
    for name, frame in (written or {}).items():
        if frame.height <= REMEMBER_ROWS and name.startswith("tables/"):
            recent.rows[name] = frame
    for merged, held in (merges or {}).items():
        recent.merges[merged] = tuple(n for h in held for n in recent.merges.get(h, (h,)))


def segment_names(bank: Bank, table: str) -> tuple[str, ...]:
    """The segments of ``table`` in ``bank``'s snapshot, oldest first, a segment that a tail merge
    of this process wrote named by the segments it folded (its rows are theirs): a value built
    over the segments before a write and its tail merge sees the write's segment as the only new
    one (:class:`SegmentMark`)."""
    merges = _recent(bank).merges
    names = (bank.manifest.get("tables") or {}).get(table, [])
    return tuple(n for name in names for n in merges.get(name, (name,)))


def segments_frame(bank: Bank, table: str, names: list[str] | tuple[str, ...]) -> pl.DataFrame | None:
    """The rows of the segments ``names`` of ``table`` (as :func:`segment_names` gives them) as
    written (``_seq`` and ``_deleted`` included, oldest first; None for no segment): the ones
    this process wrote as it wrote them, the others read (:func:`read_segment`: damage raises
    :class:`~kbtools.errors.BankDamaged`, a segment swept since raises FileNotFoundError)."""
    if not names:
        return None
    held = _recent(bank).rows
    parts = [held[n] if n in held else read_segment(bank.path, table, n) for n in names]
    try:
        return pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
    except _PARQUET_ERRORS as err:
        raise BankDamaged(bank.path, f"tables/{table}/", f"segments of {table} that do not fit together: "
                          f"{str(err).splitlines()[0][:200]}") from None


def base_and_later(bank: Bank, table: str, prior, read_base: Callable[[str], object]):
    """What a value built over ``table``'s segments from its base segment on (a sidecar read and
    the segments after it) starts from: ``prior`` where the segments it covers (``prior.mark``, a
    :class:`SegmentMark`) still lead the snapshot's, else ``read_base(the base segment's name)``;
    with the rows of the segments after those (:func:`segments_frame`; None when none) and the
    snapshot's mark. None where the table has no segment, ``read_base`` gives None, or a later
    segment was swept by a compaction since this snapshot (the table's own read moves on)."""
    names = segment_names(bank, table)
    if not names:
        return None
    if prior is not None and names[: len(prior.mark.names)] == prior.mark.names:
        base, covered = prior, len(prior.mark.names)
    else:
        base, covered = read_base(names[0]), 1
        if base is None:
            return None
    try:
        rows = segments_frame(bank, table, names[covered:])
    except FileNotFoundError:
        return None
    return base, rows, SegmentMark(names)
