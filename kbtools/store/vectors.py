"""A bank's entry vectors: written one ``.npy`` segment per write (``vectors/<tag>.npy`` with its
ids and text hashes beside it), read in place, memory-mapped, the latest segment winning per id and
deleted entries left out. Every reader takes the bank: :func:`entry_vectors`, :func:`vector_blocks`,
:func:`vector_ids`, :func:`vector_count`, :func:`vector_segments` with :func:`segment_ids` and
:func:`segment_data` (what an index grown by the segments appended since reads), and
:func:`embedder_name`. What is read stays in the bank's derived caches (``Bank.derived``), grown
when a write appends a segment.

A bank's vectors are written one segment per write (an append), so concatenating them on every
read would copy the whole (n, 4, d) array after each small write. :class:`SegmentedVectors` keeps
the segments memory-mapped and a row selection over them (the latest vector per id, live entries
only); indexing it gathers just the rows asked for, and ``np.asarray(view)`` materialises the whole
array for the callers that need one (batch jobs, never the query path).

>>> a = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3)
>>> b = np.ones((1, 4, 3), np.float32)
>>> view = SegmentedVectors([a, b])
>>> view.shape, view[[2, 0], 0, :].tolist()
((3, 4, 3), [[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
>>> np.asarray(view).shape
(3, 4, 3)
"""

from __future__ import annotations

import errno
import os
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import polars as pl

from kbtools.errors import BankDamaged, KbError
from kbtools.store.files import VECTOR_FILES, inside, write_npy
from kbtools.store.manifest import require_format
from kbtools.store.segments import new_epoch, table_mark

if TYPE_CHECKING:  # functions here read a bank's snapshot; the bank imports this module
    from kbtools.store.bank import Bank

__all__ = ["ids_in", "pack_ids", "remember_segments", "segment_arrays", "segment_hashes", "SegmentedVectors",
           "CodedVectors", "coded", "CODED_FROM", "load_vectors", "VectorBlocks", "VECTOR_DTYPES", "DEFAULT_VECTOR_DTYPE",
           "embedder_name",
           "entry_vectors", "vector_count", "vector_ids", "vector_blocks", "vector_segments", "segment_ids",
           "segment_data", "load_npy", "write_vector_segment", "continued", "segments_after"]

#: How vector segments store each number: float16 halves the disk and the pages a scan reads
#: (cosines change by ~1e-4, far below what separates neighbours); the setting
#: ``vector_dtype="float32"`` keeps full precision. Segments are read back as float32 either way.
VECTOR_DTYPES = {"float16": np.float16, "float32": np.float32}
DEFAULT_VECTOR_DTYPE = "float16"


class SegmentedVectors:
    """Rows ``rows`` (positions in the virtual concatenation of ``parts``; all rows when None) of
    a list of arrays of the same trailing shape, without concatenating them. Read-only; rows come
    back as float32."""

    __slots__ = ("parts", "offsets", "rows", "_tail")

    def __init__(self, parts: Sequence[np.ndarray], rows: np.ndarray | None = None):
        self.parts = list(parts)
        sizes = [len(p) for p in self.parts]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self._tail = tuple(self.parts[0].shape[1:]) if self.parts else (0, 0)

    # -- array protocol ---------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self._tail)

    @property
    def ndim(self) -> int:
        return 1 + len(self._tail)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float32)

    @property
    def total(self) -> int:
        """Rows in all the segments together (before the selection)."""
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return int(self.offsets[-1]) if self.rows is None else int(len(self.rows))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.take(np.arange(len(self)))
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key):
        rest: tuple = ()
        if isinstance(key, tuple):
            key, rest = key[0], key[1:]
        if isinstance(key, (int, np.integer)):
            return self.take(np.array([int(key) % max(len(self), 1)]))[(0, *rest)]
        if isinstance(key, slice):
            picked = np.arange(len(self))[key]
        else:
            picked = np.asarray(key)
            if picked.dtype == bool:
                if picked.shape != (len(self),):
                    raise IndexError(f"boolean index of shape {picked.shape} for {len(self)} rows")
                picked = np.flatnonzero(picked)
        if rest and isinstance(rest[0], (int, np.integer)) and not isinstance(rest[0], bool):
            kind = int(rest[0])
            if not -self._tail[0] <= kind < self._tail[0]:
                raise IndexError(f"index {kind} is out of bounds for {self._tail[0]} vectors per row")
            out = self.take(picked.astype(np.int64, copy=False), kind=kind % self._tail[0])  # one vector of each row read
            return out[(slice(None), *rest[1:])] if rest[1:] else out
        out = self.take(picked.astype(np.int64, copy=False))
        return out[(slice(None), *rest)] if rest else out

    # -- reading ----------------------------------------------------------------------------

    def take(self, picked: np.ndarray, kind: int | None = None) -> np.ndarray:
        """The selected rows at ``picked`` (positions in this view), gathered from their segments
        into one new float32 array; with ``kind``, only that vector of each row (``view[picked,
        kind]``, shape (rows, d)), the others neither read nor converted.

        >>> view = SegmentedVectors([np.arange(8, dtype=np.float16).reshape(2, 2, 2), np.ones((1, 2, 2))])
        >>> view.take(np.array([2, 0]), kind=1).tolist()
        [[1.0, 1.0], [2.0, 3.0]]
        """
        picked = np.asarray(picked, dtype=np.int64)
        pos = picked if self.rows is None else self.rows[picked]
        tail = self._tail if kind is None else self._tail[1:]
        out = np.empty((len(pos), *tail), dtype=np.float32)
        if not len(pos):
            return out
        seg = np.searchsorted(self.offsets, pos, side="right") - 1
        for s in np.unique(seg):
            where = np.flatnonzero(seg == s)
            local = pos[where] - self.offsets[s]
            part = self.parts[s]
            if len(local) and local[-1] - local[0] == len(local) - 1 and np.all(np.diff(local) == 1):
                rows = slice(int(local[0]), int(local[-1]) + 1)  # a run in order (a whole segment): a slice
            else:
                rows = local
            out[where] = part[rows] if kind is None else part[rows, kind]
        return out

    def __repr__(self) -> str:
        return f"<SegmentedVectors {self.shape} over {len(self.parts)} segments>"


class CodedVectors:
    """A vector segment that stores each distinct vector once: ``codes`` (n, dims) rows of
    ``table`` (u, d). Read as the (n, dims, d) array it stands for: indexing gathers just the rows
    asked for (``[rows]``, ``[rows, kind]``, slices), ``np.asarray`` the whole of it. The search
    dimensions of real banks repeat (an empty ``useful_for`` or ``tasks`` is one vector for every
    entry): a bank's vectors take a quarter to a half of the disk and page cache.

    >>> table = np.arange(6, dtype=np.float16).reshape(3, 2)
    >>> coded = CodedVectors(np.array([[0, 2], [1, 2]], np.int32), table)
    >>> coded.shape, coded[1].tolist(), coded[[1, 0], 1].tolist(), np.asarray(coded)[0, 0].tolist()
    ((2, 2, 2), [[2.0, 3.0], [4.0, 5.0]], [[4.0, 5.0], [4.0, 5.0]], [0.0, 1.0])
    """

    __slots__ = ("codes", "table")

    def __init__(self, codes: np.ndarray, table: np.ndarray):
        self.codes, self.table = codes, table

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.codes), self.codes.shape[1], self.table.shape[1])

    @property
    def ndim(self) -> int:
        return 3

    @property
    def dtype(self) -> np.dtype:
        return self.table.dtype

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) > 2:
            return self.table[self.codes[key[:2]]][(Ellipsis, *key[2:])]
        return self.table[np.asarray(self.codes[key])]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.table[np.asarray(self.codes)]
        return out if dtype is None else out.astype(dtype, copy=False)


#: a vector segment of at least this many rows stores each distinct vector once where that saves
CODED_FROM = 64


def coded(data: np.ndarray, least_rows: int = CODED_FROM, most_share: float = 0.75):
    """``data`` (n, dims, d) as ``(codes, table)`` (see :class:`CodedVectors`) when storing each
    distinct vector once saves a quarter or more and it has at least ``least_rows`` rows; else
    None. Exact: a vector's bytes are its identity (hashed, then compared).

    >>> data = np.zeros((100, 4, 8), np.float16); data[:, 0, 0] = np.arange(100)
    >>> codes, table = coded(data)
    >>> table.shape, np.array_equal(table[codes], data)
    ((100, 8), True)
    """
    n, dims = data.shape[:2]
    if n < least_rows:
        return None
    flat = np.ascontiguousarray(data).reshape(n * dims, -1)
    raw = flat.view(np.uint8).reshape(len(flat), -1)
    if raw.shape[1] % 8:
        return None  # (vectors whose bytes are not whole 8-byte words: none kbtools writes)
    words = raw.view(np.uint64)
    step = 1 << 16  # a block at a time: no copy of the whole array
    for seed in range(3):  # a hash of each vector's bytes, checked below (two alike: another seed)
        mix = np.random.default_rng(seed).integers(1, 2**63, size=(2, words.shape[1]), dtype=np.uint64) | np.uint64(1)
        keys = np.concatenate([_row_hash(words[i : i + step], mix) for i in range(0, len(words), step)])
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if len(first) > most_share * len(flat):
            return None
        order = np.argsort(first, kind="stable")  # the table in the rows' order: blocks read it forward
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        table = flat[first[order]]
        codes = rank[inverse.reshape(-1)].astype(np.int32)
        if all(np.array_equal(table[codes[i : i + step]], flat[i : i + step]) for i in range(0, len(flat), step)):
            return codes.reshape(n, dims), table
    return None


def _row_hash(words: np.ndarray, mix: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of ``words`` (uint64): every word's bits mixed (shifts fold the high
    bits into the low ones, so a sign bit counts), then summed with odd weights (wrapping)."""
    x = words ^ (words >> np.uint64(31))
    x = x * mix[0]
    x ^= x >> np.uint64(29)
    return (x * mix[1]).sum(axis=1, dtype=np.uint64)


# ---------------------------------------------------------------------------------------------
# the vector state of an open bank


class _VectorState:
    """The vector segments read so far: each memory-mapped, the latest row per id (``rows``,
    positions in the segments' concatenation, ascending), its id and text hash. Appending a
    segment costs what the segment holds: the arrays over all rows are put together only when
    asked for."""

    __slots__ = ("names", "covers", "parts", "id_parts", "hash_parts", "row_parts", "dead", "known", "total", "size",
                 "generation", "_arrays")

    def __init__(self) -> None:
        self.names: tuple[str, ...] = ()  # the segments (or parts of merged ones) appended, in order
        self.covers: tuple[str, ...] = ()  # the snapshot's segments these rows are
        self.parts: list[np.ndarray] = []
        self.id_parts: list[np.ndarray] = []
        self.hash_parts: list[np.ndarray] = []
        self.row_parts: list[np.ndarray] = []
        self.dead: frozenset[int] = frozenset()  # rows replaced by a later segment
        self.known: dict[str, int] | None = None  # id -> row, built on the first append
        self.total = 0
        self.size = 0
        self.generation = new_epoch()  # a new number when a row was replaced, not appended
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
        out.generation = new_epoch() if replaced else self.generation
        out.covers = (*self.covers, name)
        return out

    def covering(self, names: tuple[str, ...]) -> "_VectorState":
        """This state, said to cover the snapshot's segments ``names`` (the same rows, merged)."""
        if names == self.covers:
            return self
        out = _VectorState.__new__(_VectorState)
        for slot in _VectorState.__slots__:
            setattr(out, slot, getattr(self, slot))
        out.covers = names
        return out


class _Live:
    """The vector rows of live entries (what :func:`entry_vectors` returns) and the marks it was built
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
    if len(ids) and not set(ids.tolist()) <= set(fresh.to_list()):  # (a few ids: no sort of strings)
        return None
    return _Live(state, mark)


def pack_ids(ids) -> np.ndarray | None:
    """A ``str`` array of ids of at most 8 ASCII characters as ``uint64`` (each id's bytes,
    zero-padded, read as one native integer: equal exactly where the ids are), else None; a
    ``uint64`` array is taken as packed already. What :func:`ids_in` compares.

    >>> pack_ids(np.array(["a1b2c3d4"])).view("S8").tolist()
    [b'a1b2c3d4']
    """
    if isinstance(ids, np.ndarray) and ids.dtype == np.uint64:
        return ids
    if not isinstance(ids, np.ndarray) or ids.dtype.kind != "U" or ids.dtype.itemsize > 32 or ids.ndim != 1:
        return None
    chars = np.ascontiguousarray(ids).view(np.uint32).reshape(len(ids), ids.dtype.itemsize // 4)
    if chars.size and chars.max() > 127:
        return None
    out = np.zeros((len(ids), 8), dtype=np.uint8)
    out[:, : chars.shape[1]] = chars
    return out.view(np.uint64).reshape(len(ids))


def ids_in(ids: np.ndarray, wanted) -> np.ndarray:
    """Which of ``ids`` (a ``str`` array) are in ``wanted`` (an array or series of ids, or a
    :func:`pack_ids` array), as a
    boolean array: compared as 8-byte integers where both pack (no string column built: a million
    ids in tens of milliseconds).

    >>> ids_in(np.array(["a1b2c3d4", "0000000a"]), np.array(["0000000a"])).tolist()
    [False, True]
    """
    a, w = pack_ids(ids), pack_ids(wanted)
    if a is not None and w is not None:
        return pl.Series(a).is_in(pl.Series(w).implode()).to_numpy()
    return pl.Series(ids, dtype=pl.String).is_in(pl.Series(wanted, dtype=pl.String).implode()).to_numpy()


class VectorBlocks:
    """A bank's vectors as blocks read from the memory-mapped segments (see
    :func:`vector_blocks`): ``.ids`` in order, iterate for ``(ids, vectors)`` blocks, as many
    times as needed (each pass reads the files again; nothing is kept)."""

    def __init__(self, bank: Bank, block: int, ids=None):
        segs = vector_segments(bank)
        parts = [load_npy(bank.path, s, "ids").astype(str) for s in segs]
        self.block = block
        self._paths = [inside(bank.path, s["data"]) for s in segs]
        self._segs, self._root = segs, bank.path
        self._maps = [load_vectors(bank.path, s) for s in segs]
        self._fds: dict[int, int] = {}  #: segment -> descriptor, opened by :meth:`rows` on first use
        if not parts:
            self.ids, self._seg, self._row = np.array([], dtype=str), np.zeros(0, np.int64), np.zeros(0, np.int64)
            return
        all_ids = np.concatenate(parts)
        seg_of = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
        row_of = np.concatenate([np.arange(len(p)) for p in parts])
        if len(parts) > 1:  # the latest segment wins per id, in the order :func:`entry_vectors` gives
            key = pack_ids(all_ids)  # integers sort faster than strings
            _, last = np.unique((all_ids if key is None else key)[::-1], return_index=True)
            keep = np.sort(len(all_ids) - 1 - last)
            all_ids, seg_of, row_of = all_ids[keep], seg_of[keep], row_of[keep]
        wanted = bank.entries["id"] if ids is None else ids
        if (isinstance(wanted, np.ndarray) and wanted.dtype.kind == "U" and len(wanted) == len(all_ids)
                and np.array_equal(wanted, all_ids)):
            self.ids, self._seg, self._row = all_ids, seg_of, row_of  # every row wanted (an index's own ids)
            return
        self.ids, self._seg, self._row = (a[ids_in(all_ids, wanted)] for a in (all_ids, seg_of, row_of))

    def only(self, ids) -> "VectorBlocks":
        """These blocks limited to the rows of ``ids`` (what ``vector_blocks(bank, ids=ids)`` gives
        for a subset of :attr:`ids`, without reading the id files again)."""
        out = VectorBlocks.__new__(VectorBlocks)
        out.block, out._paths, out._maps, out._fds = self.block, self._paths, self._maps, {}
        out._segs, out._root = self._segs, self._root
        keep = ids_in(self.ids, np.asarray(ids, dtype=str))
        out.ids, out._seg, out._row = self.ids[keep], self._seg[keep], self._row[keep]
        return out

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
            stored = mapped.table if isinstance(mapped, CodedVectors) else mapped
            if (len(here) > self.PREAD_ROWS or not isinstance(stored, np.memmap) or stored.dtype != dtype
                    or not stored.flags.c_contiguous):
                out[here] = mapped[row[here]]
                continue
            fd = self._fd(s)
            size = stored.dtype.itemsize * int(np.prod(stored.shape[1:]))
            if isinstance(mapped, CodedVectors):  # each distinct vector of these rows read once
                codes = np.asarray(mapped.codes[row[here]])
                wanted, where = np.unique(codes, return_inverse=True)
                read = np.stack([np.frombuffer(os.pread(fd, size, stored.offset + c * size), dtype=dtype)
                                 for c in wanted.tolist()])
                out[here] = read[where.reshape(codes.shape)]
                continue
            for k, r in zip(here.tolist(), row[here].tolist()):
                out[k] = np.frombuffer(os.pread(fd, size, stored.offset + r * size), dtype=dtype).reshape(out.shape[1:])
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
                mapped = load_vectors(self._root, self._segs[s])
                # a contiguous run is read as one slice (sequential I/O), the rest by gather
                run = rows[-1] - rows[0] + 1 == len(rows)
                out[here] = mapped[rows[0] : rows[-1] + 1] if run else mapped[rows]
                del mapped
            yield self.ids[sl], out


# ---------------------------------------------------------------------------------------------
# reading a bank's vectors


def embedder_name(bank: Bank) -> str | None:
    """The embedder that built ``bank``'s vectors (None before any were written).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> embedder_name(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")) is None
    True
    """
    return (bank.manifest.get("vectors") or {}).get("embedder")


def vector_segments(bank: Bank) -> list[dict]:
    """The vector segments of ``bank``'s snapshot, oldest first: ``{"data", "ids", "rows"[, "hashes"]}``
    with paths relative to the bank folder.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> vector_segments(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
    []
    """
    return [dict(s) for s in (bank.manifest.get("vectors") or {}).get("segments", [])]


def _segments(bank: Bank) -> list[dict]:
    """The vector segments as the manifest records them (not copied: read, never changed)."""
    return (bank.manifest.get("vectors") or {}).get("segments", [])


def load_npy(root: Path, segment: dict, key: str, *, mmap: bool = False) -> np.ndarray:
    """The array of one file of a vector segment (``key``: ``"data"``, ``"ids"`` or ``"hashes"``)
    of the bank at ``root``, memory-mapped with ``mmap``: the one door of every read of a vector
    file. A file that does not load as the ``.npy`` its commit wrote, or whose rows are not those
    the manifest records, raises :class:`~kbtools.errors.BankDamaged` naming it; a file that is not
    there raises FileNotFoundError (a compaction may have swept it since the snapshot).

    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp()); _ = (root / "v.npy").write_bytes(b"NUMPY cut")
    >>> load_npy(root, {"data": "v.npy"}, "data", mmap=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kbtools.errors.BankDamaged: ...: v.npy is damaged (not the .npy its commit wrote: ...
    """
    rel = segment[key]
    path = inside(root, rel)
    try:
        arr = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path)) from None
    except PermissionError:
        raise  # not damage: the file system's answer, said as it is
    except (OSError, ValueError, EOFError) as err:  # truncated, garbage, a pickle
        raise BankDamaged(root, rel, f"not the .npy its commit wrote: {str(err).splitlines()[0][:200]}") from None
    rows = segment.get("rows")
    if key == "data" and segment.get("codes"):  # the table of distinct vectors: its codes have the rows
        rows = None
    if isinstance(rows, int) and (arr.ndim == 0 or arr.shape[0] != rows):
        raise BankDamaged(root, rel, f"{arr.shape[0] if arr.ndim else 0} rows, the manifest records {rows}")
    return arr


def load_vectors(root: Path, segment: dict, *, mmap: bool = True):
    """The vectors (n, dims, d) of one vector segment of the bank at ``root``: its data array, or a
    :class:`CodedVectors` over its codes and table (both through :func:`load_npy`)."""
    data = load_npy(root, segment, "data", mmap=mmap)
    if not segment.get("codes"):
        return data
    codes = load_npy(root, segment, "codes", mmap=mmap)
    if codes.ndim != 2 or data.ndim != 2 or (codes.size and (codes.min() < 0 or codes.max() >= len(data))):
        raise BankDamaged(root, segment["codes"], "codes that are not rows of the segment's vectors")
    return CodedVectors(codes, data)


def _after_sweep(bank: Bank, read):
    """``read()``, once more on the newest version when a vector file of this snapshot was swept
    by a compaction; a file the newest version names and that is not there is damage."""
    try:
        return read()
    except FileNotFoundError:
        _swept(bank)
    try:
        return read()
    except FileNotFoundError as err:
        try:
            rel = Path(err.filename).relative_to(bank.path).as_posix()
        except (TypeError, ValueError):
            rel = str(err.filename)
        raise BankDamaged(bank.path, rel, "missing") from None


def _segment_files(bank: Bank) -> dict:
    """The vector files read so far by this open bank, by (kind, path): segments never change, so
    each is read once; those no longer in the snapshot's manifest are let go."""
    def kept(prior: dict | None) -> dict:
        named = {s[k] for s in _segments(bank) for k in VECTOR_FILES if s.get(k)}
        return {key: value for key, value in (prior or {}).items() if key[1] in named}

    return bank.derived("vector-segment-files", kept, on=("vectors",), grow=True)


def continued(segments: list[dict], names) -> list[dict] | None:
    """The segments of ``segments`` (a snapshot's, oldest first) that hold the rows after those of
    the segments ``names`` (what a value built earlier covers), or None where ``segments`` do not
    continue ``names``. A tail merge's segment holds the rows of the segments it folded, in order
    (``holds``: ``[name, rows]`` each): where ``names`` end inside it, the rows after theirs come back
    as one *part* of it, ``{"data": name, "rows": n, "of": segment, "at": offset}``, which
    :func:`segment_ids`, :func:`segment_data` and :func:`segment_hashes` read as a slice of it.

    >>> m = {"data": "m", "rows": 3, "holds": [["x", 1], ["y", 1], ["z", 1]]}
    >>> [(s["data"], s.get("at")) for s in continued([{"data": "b"}, m, {"data": "w"}], ["b", "x"])]
    [('y', 1), ('z', 2), ('w', None)]
    >>> continued([{"data": "b"}, m], ["b", "m"]), continued([{"data": "b"}, m], ["b", "y"])
    ([], None)
    """
    names = list(names)
    i, out = 0, []
    for seg in segments:
        if i == len(names):
            out.append(seg)
        elif seg["data"] == names[i]:
            i += 1
        else:  # names go on inside a merged segment, or the snapshot does not continue them
            held = seg.get("holds") or []
            k, at = 0, 0
            while k < len(held) and i < len(names) and held[k][0] == names[i]:
                at += int(held[k][1])
                k, i = k + 1, i + 1
            if k == 0 or (i < len(names) and k < len(held)):
                return None
            out += [{"data": name, "rows": int(rows), "of": seg, "at": start}
                    for (name, rows), start in zip(held[k:], np.cumsum([at] + [int(r) for _, r in held[k:]]).tolist())]
    return out if i == len(names) else None


def segments_after(bank: Bank, names) -> list[dict] | None:
    """The vector segments of ``bank``'s snapshot holding the rows written after the segments
    ``names`` (see :func:`continued`): what a value built over those grows by; None where the
    vectors were rewritten otherwise since (a compaction, a re-embedding)."""
    return continued(_segments(bank), names)


def _slice(array: np.ndarray, part: dict) -> np.ndarray:
    return array[part["at"] : part["at"] + part["rows"]]


def segment_ids(bank: Bank, segment: dict) -> np.ndarray:
    """The entry ids of one vector segment of ``bank`` (as listed by :func:`vector_segments`, or a
    part of one, see :func:`continued`)."""
    if "of" in segment:
        return _slice(segment_ids(bank, segment["of"]), segment)
    files = _segment_files(bank)
    key = ("ids", segment["ids"])
    if key not in files:
        files[key] = load_npy(bank.path, segment, "ids").astype(str)
    return files[key]


def remember_segments(bank: Bank, arrays: dict) -> None:
    """Take the vector files a commit of this process just wrote (relative path -> the array the
    file holds) as read: segments never change, so the first query after a write reads none of
    them back. Only the files of ``bank``'s snapshot are taken."""
    if not arrays:
        return
    files = _segment_files(bank)
    for seg in _segments(bank):
        for kind in ("data", "ids", "hashes"):
            rel = seg.get(kind)
            if rel in arrays:
                array = arrays[rel]
                array.flags.writeable = False  # as read-only as the memory-mapped file it stands for
                files[(kind, rel)] = array


def segment_hashes(bank: Bank, segment: dict) -> np.ndarray:
    """The text hashes of one vector segment of ``bank`` (zeros where the segment has none)."""
    if "of" in segment:
        return _slice(segment_hashes(bank, segment["of"]), segment)
    if not segment.get("hashes"):
        return np.zeros(int(segment.get("rows") or len(segment_ids(bank, segment))), dtype=np.uint64)
    files = _segment_files(bank)
    key = ("hashes", segment["hashes"])
    if key not in files:
        files[key] = load_npy(bank.path, segment, "hashes")
    return files[key]


def segment_data(bank: Bank, segment: dict) -> np.ndarray:
    """The vectors of one vector segment of ``bank``, memory-mapped (read in place, never copied)."""
    if "of" in segment:
        return _slice(segment_data(bank, segment["of"]), segment)
    files = _segment_files(bank)
    key = ("data", segment["data"])
    if key not in files:
        files[key] = load_vectors(bank.path, segment)
    return files[key]


def _state(bank: Bank) -> _VectorState:
    """The latest vector per id over ``bank``'s segments, memory-mapped and never concatenated;
    grown by the segments a write appended, rebuilt when the segments were rewritten."""
    segs = _segments(bank)
    names = tuple(s["data"] for s in segs)

    def grown(state: _VectorState | None) -> _VectorState:
        after = None if state is None else continued(segs, state.covers)
        if after is None:
            state, after = _VectorState(), segs
        for seg in after:
            ids = segment_ids(bank, seg)
            data = segment_data(bank, seg)
            hashes = segment_hashes(bank, seg)
            state = state.appended(seg["data"], ids, data, hashes)
        return state.covering(names)

    return bank.derived("vector-state", grown, on=("vectors",), grow=True)


def _live(bank: Bank) -> _Live:
    state = _state(bank)
    mark = table_mark(bank, "entries")

    def live(prior) -> _Live:
        if state.size == 0:
            return _empty_live(state)
        entries = bank.merged("entries").frame  # the ids only: no usage folded in
        if entries.height == 0:
            return _empty_live(state)
        grown = _grow_live(prior, state, mark, entries)
        if grown is not None:
            return grown
        keep = pl.Series(state.ids, dtype=pl.String).is_in(entries["id"].implode()).to_numpy()
        if keep.all():
            return _Live(state, mark)
        return _Live(state, mark, (state.ids[keep], state.hashes[keep], state.rows[keep]))

    return bank.derived("vectors", live, on=("entries", "vectors"), grow=True)


def _swept(bank: Bank) -> None:
    warnings.warn(f"{bank.path}: a vector segment of version {bank.version} was swept by a compaction; "
                  "this snapshot moved to the newest version", stacklevel=3)
    bank.reload()


def entry_vectors(bank: Bank, *, with_hashes: bool = False):
    """(ids as an array of str, vectors (n, dims, d) float32) for every entry of ``bank`` that has
    them, latest segment winning per id; entries deleted since are left out. The vectors are a
    :class:`SegmentedVectors` view over the memory-mapped segments (``np.asarray`` joins them).
    With ``with_hashes`` also the hash of the texts each vector was built from (0 where unknown).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> ids, data = entry_vectors(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
    >>> len(ids), data.shape[0]
    (0, 0)
    """
    got = _after_sweep(bank, lambda: _live(bank))
    data = SegmentedVectors(got.state.parts, got.rows)
    return (got.ids, data, got.hashes) if with_hashes else (got.ids, data)


def vector_count(bank: Bank) -> int:
    """How many live entries of ``bank`` have vectors (what ``len(entry_vectors(bank)[0])`` says,
    without putting the id arrays together).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> vector_count(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
    0
    """
    return _after_sweep(bank, lambda: _live(bank)).count


def vector_blocks(bank: Bank, block: int = 50_000, *, ids=None) -> VectorBlocks:
    """The rows :func:`entry_vectors` gives (same ids, same order, latest segment winning, deleted
    entries left out) as a re-iterable of ``(ids, vectors)`` blocks of at most ``block`` rows,
    each read from its memory-mapped segment: the segments are never joined in memory, so a
    million entries stream through a few hundred MB (an index build reads them this way).
    ``.ids`` holds every id in order without reading a vector. With ``ids`` (a subset of the
    live ids, e.g. the active ones) only those rows come back, in this same order.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> blocks = vector_blocks(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
    >>> len(blocks.ids), list(blocks)
    (0, [])
    """
    if block < 1:
        raise KbError(f"block={block}: read at least one row per block")
    return _after_sweep(bank, lambda: VectorBlocks(bank, block, ids))


def vector_ids(bank: Bank) -> np.ndarray:
    """The ids of the live entries of ``bank`` that have vectors (as :func:`entry_vectors` gives them),
    without reading the vectors themselves: cheap on a bank of many segments.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> len(vector_ids(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")))
    0
    """
    segs = tuple(s["data"] for s in vector_segments(bank))

    def build() -> np.ndarray:
        parts = [segment_ids(bank, s) for s in vector_segments(bank)]
        ids = np.unique(np.concatenate(parts)) if len(parts) > 1 else (parts[0] if parts else np.array([], dtype=str))
        live = bank.entries["id"].implode()
        return ids[pl.Series(ids, dtype=pl.String).is_in(live).to_numpy()] if len(ids) else ids

    return _after_sweep(bank, lambda: bank.derived(f"vector-ids:{hash(segs)}", build, on=("entries", "vectors")))


def segment_arrays(ids, data, hashes, *, dtype: str = DEFAULT_VECTOR_DTYPE) -> dict[str, np.ndarray]:
    """The arrays a vector segment's files hold (``"data"`` as ``dtype``, ``"ids"``, and
    ``"hashes"`` when given), keyed as the manifest names the files."""
    out = {"data": np.ascontiguousarray(data, dtype=VECTOR_DTYPES.get(str(dtype), np.float16)),
           "ids": np.asarray(ids, dtype="U8")}
    if hashes is not None:
        out["hashes"] = np.asarray(hashes, dtype=np.uint64)
    return out


def write_vector_segment(root: Path, tag: str, ids, data, hashes, *, dtype: str = DEFAULT_VECTOR_DTYPE,
                         durable: bool = True, arrays: dict | None = None) -> dict:
    """Write one vector segment into ``root/vectors/`` (its data as ``dtype``, its ids and, when
    given, its text hashes) and return what the manifest records of it. With ``arrays`` (a dict),
    the arrays written are put in it by relative path."""
    (root / "vectors").mkdir(exist_ok=True)
    seg = {"data": f"vectors/{tag}.npy", "ids": f"vectors/{tag}.ids.npy", "rows": int(len(ids))}
    if hashes is not None:
        seg["hashes"] = f"vectors/{tag}.hashes.npy"
    out = segment_arrays(ids, data, hashes, dtype=dtype)
    packed = coded(out["data"], least_rows=CODED_FROM)
    if packed is not None:  # each distinct vector stored once (see CodedVectors)
        require_format(root, 2)
        out["codes"], out["data"] = packed
        seg["codes"] = f"vectors/{tag}.codes.npy"
        arrays = None  # (what this process holds of a segment is its (n, dims, d) data)
    elif len(ids) >= CODED_FROM:
        seg["distinct"] = True  # looked at: storing each distinct vector once would not save enough
    for kind, array in out.items():
        write_npy(array, root / seg[kind], durable=durable)
        if arrays is not None:
            arrays[seg[kind]] = array
    return seg
