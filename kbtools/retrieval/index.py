"""Vector search over entries: the precombined vector in faiss, and exact weighted search.

Each entry has one unit vector per search dimension (:data:`DIMENSIONS`). A query's score is the
weighted sum of its cosines with them, ``Σ w_d cos(q, e_d)``, which equals ``q · combined`` for the
precombined vector ``combined = Σ w_d e_d``: one vector per entry answers default-weight queries
(4× fewer bytes to scan), and :func:`search_weighted` answers the rest exactly from all four.

>>> rng = np.random.default_rng(0)
>>> per_dim = rng.normal(size=(5, 4, 8)).astype(np.float32)
>>> index = VectorIndex.build(["a", "b", "c", "d", "e"], combine(per_dim))
>>> scores, ids = index.search(per_dim[:1, 0], 2)
>>> ids.shape, index.size
((1, 2), 5)
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, ClassVar, Final, Mapping, Sequence

import numpy as np

from kbtools.errors import KbError, StaleCache, ValidationError
from kbtools.model.config import INDEX_KINDS

__all__ = [
    "DIMENSIONS",
    "DEFAULT_WEIGHTS",
    "INDEX_KINDS",
    "combine",
    "VectorIndex",
    "search_weighted",
    "recall_at_k",
    "index_kind",
    "APPROXIMATE_FROM",
    "IVF_FROM",
    "IVF_NPROBE",
    "IVF_PROBE_SHARE",
    "ivf_nprobe",
    "ivf_lists",
    "IVF_LISTS",
    "REFINE_FACTOR",
    "check_fingerprint",
    "MAX_DEAD_SHARE",
]

#: The search dimensions of an entry, in the order of axis 1 of a (n, 4, d) vector array.
DIMENSIONS: Final[tuple[str, ...]] = ("content", "useful_for", "systems", "tasks")
#: How much each dimension counts in a default query (sums to 1).
DEFAULT_WEIGHTS: Final[Mapping[str, float]] = MappingProxyType(
    {"content": 0.5, "useful_for": 0.25, "systems": 0.125, "tasks": 0.125})
#: faiss index kinds :meth:`VectorIndex.build` makes; "flat" is exact.
#: ``"auto"`` is exact (flat) below this many entries and ``hnsw`` from it, up to :data:`IVF_FROM`.
APPROXIMATE_FROM: Final[int] = 50_000
#: ``"auto"`` is ``ivf_sq8`` from this many entries: an HNSW build grows as n log n (ten minutes of
#: CPU at a million entries, for less recall at its search breadth than the IVF index finds), while
#: the IVF index's share of lists visited was tuned at that size and finds too little below it.
IVF_FROM: Final[int] = 1_000_000
#: Lists of an ``ivf_sq8`` index: this many times √n (at least 39 training points per list).
IVF_LISTS: Final[float] = 1.0
#: Share of an ``ivf_sq8`` index's lists a query visits (at least :data:`IVF_NPROBE` of them), tuned
#: on title queries of a 1M-entry demo bank; how many lists a recall needs depends on the size and on
#: how a bank's vectors cluster, which is why ``"auto"`` picks HNSW below :data:`IVF_FROM`.
IVF_PROBE_SHARE: Final[float] = 0.1
#: The fewest lists an ``ivf_sq8`` query visits.
IVF_NPROBE: Final[int] = 24
#: Share of dead (removed) rows past which a grown index is rebuilt instead of masked further.
MAX_DEAD_SHARE: Final[float] = 0.2
#: Candidates per wanted result that an approximate kind re-scores exactly when the index has a
#: refine source (the bank's stored vectors; see :meth:`VectorIndex.refine_with`). Only the 8-bit
#: kinds: ``ivf`` holds the float32 vectors themselves and ``hnsw`` them as float16 (the precision
#: the bank stores its vectors in; a score moves by ~1e-4), so their own top ``k`` stands.
REFINE_FACTOR: Final[Mapping[str, int]] = MappingProxyType({"ivf_sq8": 2, "sq8": 4, "hnsw_sq8": 4, "ivf": 1, "hnsw": 1})
_MAGIC = b"KBVX1\n"
_HNSW_M, _HNSW_EF_CONSTRUCTION, _HNSW_EF_SEARCH = 32, 80, 128


#: weight vectors checked already, by their values (read-only; a few: weights rarely vary)
_WEIGHT_VECTORS: dict[tuple[float, ...], np.ndarray] = {}


def _weight_vector(weights: Mapping[str, float]) -> np.ndarray:
    unknown = set(weights) - set(DIMENSIONS)
    if unknown:
        raise ValidationError("weights", sorted(unknown), f"dimensions must be among {', '.join(DIMENSIONS)}")
    values = tuple(float(weights.get(d, 0.0)) for d in DIMENSIONS)
    held = _WEIGHT_VECTORS.get(values)
    if held is not None:
        return held
    vector = np.array(values, dtype=np.float32)
    if not np.all(np.isfinite(vector)) or (vector < 0).any() or vector.sum() <= 0:
        raise ValidationError("weights", dict(weights), "must be finite, non-negative and not all zero")
    vector.flags.writeable = False
    if len(_WEIGHT_VECTORS) < 64:
        _WEIGHT_VECTORS[values] = vector
    return vector


def _check_per_dim(per_dim: np.ndarray) -> np.ndarray:
    per_dim = np.asarray(per_dim)
    if per_dim.ndim != 3 or per_dim.shape[1] != len(DIMENSIONS):
        raise ValidationError("vectors", f"shape {per_dim.shape}",
                              f"must be (n, {len(DIMENSIONS)}, d), one row per dimension {DIMENSIONS}")
    return per_dim


def combine(vectors: np.ndarray, weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> np.ndarray:
    """The precombined vectors ``Σ_d w_d e_d``, float32 (n, d), from per-dimension (n, 4, d).

    Missing dimensions in ``weights`` count 0; rows are not renormalised, so
    ``q · combined = Σ w_d cos(q, e_d)`` for unit ``q`` and ``e_d``.

    >>> e = np.eye(4, dtype=np.float32)[None]          # one entry, dimension d along axis d
    >>> combine(e).tolist()
    [[0.5, 0.25, 0.125, 0.125]]
    """
    vectors = _check_per_dim(vectors)
    return np.einsum("nkd,k->nd", vectors.astype(np.float32, copy=False), _weight_vector(weights))


def _faiss(threads: int):
    import faiss

    if threads < 1:
        raise KbError(f"threads={threads}: must be at least 1")
    faiss.omp_set_num_threads(threads)
    return faiss


def _new_index(faiss, kind: str, dim: int, n: int, seed: int):
    ip = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":  # float16 codes: half the file and memory of float32, the same recall and speed
        index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_fp16, _HNSW_M, ip)
    elif kind == "hnsw_sq8":
        index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, _HNSW_M, ip)
    elif kind == "sq8":
        return faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, ip)
    elif kind == "ivf_sq8":  # IVF_LISTS × √n lists, codes of one byte per value
        nlist = ivf_lists(n)
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, nlist, faiss.ScalarQuantizer.QT_8bit, ip)
        index.cp.seed = seed
        index.nprobe = ivf_nprobe(nlist)
        return index
    else:  # ivf: about sqrt(n) lists, at least 39 training points per list
        nlist = max(1, min(int(np.sqrt(n)), n // 39))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, ip)
        index.cp.seed = seed
        index.nprobe = min(nlist, max(8, nlist // 4))
        return index
    index.hnsw.efConstruction = _HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = _HNSW_EF_SEARCH
    return index


def _check_ids_vectors(ids: Sequence[str], vectors: np.ndarray, dim: int | None) -> tuple[np.ndarray, np.ndarray]:
    ids = np.asarray(list(ids), dtype=str)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(ids) or (dim is not None and vectors.shape[1] != dim):
        want = f"({len(ids)}, {dim if dim is not None else 'd'})"
        raise ValidationError("vectors", f"shape {vectors.shape}", f"must be {want}, one row per id")
    if (len(set(ids.tolist())) if len(ids) <= 64 else len(np.unique(ids))) != len(ids):  # (a few: a set)
        values, counts = np.unique(ids, return_counts=True)
        raise ValidationError("ids", values[counts > 1][0].item(), "appears more than once")
    if not np.all(np.isfinite(vectors)):
        raise ValidationError("vectors", "NaN or inf", "every value must be finite")
    return ids, vectors


@dataclass(eq=False)
class VectorIndex:
    """A faiss index over one vector per entry, with positions mapped back to string ids.

    ``fingerprint`` is set by the caller (e.g. table version + embedder name) and checked with
    :func:`check_fingerprint`. ``add`` changes the index in place; ``remove`` marks rows dead in
    place (a mask of live rows that every search filters through a faiss ``IDSelectorBitmap``: HNSW
    cannot delete, and a mask never renumbers the rows). ``size`` counts live rows,
    ``dead_share`` the share of dead ones (rebuild past :data:`MAX_DEAD_SHARE`).

    >>> index = VectorIndex.build(["x", "y"], np.eye(2, dtype=np.float32), fingerprint="v1")
    >>> index.search(np.array([[0.0, 1.0]], np.float32), 1)[1].tolist()
    [['y']]
    >>> VectorIndex.from_bytes(index.to_bytes()).fingerprint
    'v1'
    >>> index.remove(["y"]); index.search(np.array([[0.0, 1.0]], np.float32), 1)[1].tolist(), index.size
    ([['x']], 1)
    """

    faiss_index: object
    ids: np.ndarray
    kind: str = "flat"
    fingerprint: str = ""
    dead: np.ndarray | None = None  #: per row, True when removed (None: none removed)
    #: vectors added to an index read memory-mapped (read-only): an exact side index searched with it
    delta: object = None
    #: read memory-mapped from a file (read-only: :meth:`add` grows :attr:`delta` instead)
    mapped: bool = False
    #: how many indexes this process built from scratch (the bench and tests count rebuilds)
    builds: ClassVar[int] = 0
    _idset: set | None = field(default=None, repr=False, compare=False)
    #: the ids with spare room after them: an add writes its ids there (no copy of every id per add)
    _id_room: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: ``refine(positions) -> (m, d) float32``: the exact vectors at index positions (e.g. read from
    #: the bank's memory-mapped segments); when set, :meth:`search` asks the index for
    #: ``refine_factor × k`` candidates and re-scores them exactly (see :meth:`refine_with`).
    refine: Callable[[np.ndarray], np.ndarray] | None = None
    refine_factor: int = 1

    @classmethod
    def build(cls, ids: Sequence[str], combined: np.ndarray, *, kind: str = "flat",
              threads: int = 1, seed: int = 0, fingerprint: str = "") -> "VectorIndex":
        """Index ``combined`` (n, d) under ``ids``; ``kind`` is one of :data:`INDEX_KINDS`."""
        ids, vectors = _check_ids_vectors(ids, combined, None)
        if vectors.shape[1] == 0:
            raise ValidationError("vectors", f"shape {vectors.shape}", "need at least one column")
        return cls.build_blocks(ids, lambda: iter((vectors,)), dim=vectors.shape[1], kind=kind, threads=threads,
                                seed=seed, fingerprint=fingerprint)

    @classmethod
    def build_blocks(cls, ids: Sequence[str], blocks, *, dim: int, kind: str = "flat", threads: int = 1,
                     seed: int = 0, fingerprint: str = "") -> "VectorIndex":
        """Index vectors that arrive in blocks, without ever holding them all: ``blocks()`` returns
        an iterator of float32 (m, ``dim``) arrays, one row per id in ``ids`` order. It is called
        once to gather the training sample (trained kinds: at most 100 points per list, a seeded
        choice of rows) and once to add the blocks one by one. The index is the one :meth:`build`
        makes from the same rows joined.

        >>> rows = np.eye(4, dtype=np.float32)
        >>> index = VectorIndex.build_blocks(list("abcd"), lambda: iter((rows[:3], rows[3:])), dim=4)
        >>> index.search(rows[3:], 1)[1].tolist()
        [['d']]
        """
        if kind not in INDEX_KINDS:
            raise ValidationError("kind", kind, f"must be one of {', '.join(INDEX_KINDS)}")
        ids = np.asarray(list(ids), dtype=str)
        if dim < 1:
            raise ValidationError("dim", dim, "need at least one column")
        if len(np.unique(ids)) != len(ids):
            values, counts = np.unique(ids, return_counts=True)
            raise ValidationError("ids", values[counts > 1][0].item(), "appears more than once")
        if kind == "ivf" and len(ids) == 0:
            raise ValidationError("vectors", "0 rows", "an ivf index needs vectors to train on")
        faiss = _faiss(threads)
        VectorIndex.builds += 1
        index = _new_index(faiss, kind, dim, len(ids), seed)

        def checked():
            seen = 0
            for block in blocks():
                block = np.ascontiguousarray(block, dtype=np.float32)
                if block.ndim != 2 or block.shape[1] != dim or seen + len(block) > len(ids):
                    raise ValidationError("vectors", f"a block of shape {block.shape} after {seen} rows",
                                          f"blocks must be (m, {dim}) and hold {len(ids)} rows in all, one per id")
                if not np.all(np.isfinite(block)):
                    raise ValidationError("vectors", "NaN or inf", "every value must be finite")
                yield seen, block
                seen += len(block)
            if seen != len(ids):
                raise ValidationError("vectors", f"{seen} rows", f"must be {len(ids)}, one row per id")

        if not index.is_trained:  # train on at most 100 points per list (a seeded sample)
            most = 100 * getattr(index, "nlist", len(ids))
            pick = (np.sort(np.random.default_rng(seed).choice(len(ids), most, replace=False)) if len(ids) > most
                    else np.arange(len(ids)))
            sample = np.empty((len(pick), dim), dtype=np.float32)
            for start, block in checked():
                lo, hi = np.searchsorted(pick, [start, start + len(block)])
                sample[lo:hi] = block[pick[lo:hi] - start]
            index.train(sample)
            del sample
        for _, block in checked():
            index.add(block)
        return cls(index, ids, kind, fingerprint)

    @property
    def size(self) -> int:
        """How many live vectors the index holds (rows removed by :meth:`remove` do not count; rows
        of the side index of a memory-mapped index do)."""
        return int(self.faiss_index.ntotal) + (0 if self.delta is None else int(self.delta.ntotal)) - self.n_dead

    @property
    def n_dead(self) -> int:
        """Rows removed in place (still in faiss, filtered out of every search)."""
        return 0 if self.dead is None else int(np.count_nonzero(self.dead))

    @property
    def dead_share(self) -> float:
        """Share of the faiss rows that are dead (0.0 for an index nothing was removed from)."""
        total = len(self.ids)
        return self.n_dead / total if total else 0.0

    def live_ids(self) -> np.ndarray:
        """The ids of the live rows, in row order."""
        return self.ids if self.dead is None else self.ids[~self.dead]

    def remove(self, ids: Sequence[str]) -> None:
        """Mark the rows of ``ids`` dead, in place: searches skip them from now on (the faiss index
        itself is untouched, so this is cheap for every kind, HNSW included). An id that is not
        live in the index is refused and nothing is marked.

        >>> index = VectorIndex.build(["a", "b", "c"], np.eye(3, dtype=np.float32))
        >>> index.remove(["b"]); index.size, round(index.dead_share, 2)
        (2, 0.33)
        """
        ids = np.asarray(list(ids), dtype=str)
        if ids.size == 0:
            return
        live = np.ones(len(self.ids), bool) if self.dead is None else ~self.dead
        if len(ids) <= 16:  # a few: one vectorised comparison each (np.isin sorts every id)
            hit = np.zeros(len(self.ids), bool)
            for x in ids.tolist():
                hit |= self.ids == x
            hit &= live
        else:
            hit = np.isin(self.ids, ids) & live
        missing = np.setdiff1d(ids, self.ids[hit])
        if missing.size:
            raise ValidationError("ids", missing[0].item(), "is not a live id of the index; nothing was removed")
        dead = np.zeros(len(self.ids), bool) if self.dead is None else self.dead.copy()
        dead[hit] = True
        self.dead = dead
        self._selector = None

    def _search_params(self):
        """faiss search parameters that filter out dead rows (None when none is dead)."""
        if self.dead is None or not self.dead.any():
            return None
        held = getattr(self, "_selector", None)
        if held is not None:
            return held[0]
        import faiss

        bitmap = np.packbits(~self.dead, bitorder="little")
        selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        index = self.faiss_index
        if hasattr(index, "hnsw"):
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=int(index.hnsw.efSearch))
        elif hasattr(index, "nprobe"):
            params = faiss.SearchParametersIVF(sel=selector, nprobe=int(index.nprobe))
        else:
            params = faiss.SearchParameters(sel=selector)
        self._selector = (params, selector, bitmap)  # faiss reads the bitmap in place: keep it alive
        return params

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self.faiss_index.d)

    def search(self, queries: np.ndarray, k: int, *, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` per query row: scores float32 (m, k) by inner product, ids str (m, k).

        When the index holds fewer than ``k`` vectors the tail is id ``""`` with score ``-inf``.
        ``threads`` None: one (the lists of one query scanned on several cores of a shared machine
        wait on each other: slower than one core, see docs/performance.md).
        """
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ValidationError("queries", f"shape {queries.shape}", f"must be (m, {self.dim})")
        if k < 1:
            raise ValidationError("k", k, "must be at least 1")
        _faiss(1 if threads is None else threads)
        params = self._search_params()
        if self.refine is not None and self.refine_factor > 1 and self.size:
            scores, positions = self._refined(queries, k, params)
        elif params is None:
            scores, positions = self.faiss_index.search(queries, k)
        else:
            scores, positions = self.faiss_index.search(queries, k, params=params)
        if self.delta is not None and self.delta.ntotal:
            base = int(self.faiss_index.ntotal)
            dead_here = 0 if self.dead is None else int(np.count_nonzero(self.dead[base:]))
            d_scores, d_pos = self.delta.search(queries, min(k + dead_here, int(self.delta.ntotal)))
            if dead_here:  # rows of the side index removed since: drop them before merging
                gone = self.dead[base:][np.where(d_pos >= 0, d_pos, 0)] & (d_pos >= 0)
                d_scores, d_pos = np.where(gone, -np.inf, d_scores), np.where(gone, -1, d_pos)
            # the side index's best below every row's last place: the main answer stands as it is
            if not ((positions[:, -1:] >= 0) & (d_scores[:, :1] <= scores[:, -1:])).all():
                scores, positions = _merged(scores, positions, d_scores, d_pos, base, k)
        found = positions >= 0
        if found.all():  # (every slot filled: the usual case, no masking)
            return np.asarray(scores, dtype=np.float32), self.ids[positions]
        ids = np.where(found, self.ids[np.where(found, positions, 0)] if len(self.ids) else "", "")
        return np.where(found, scores, -np.inf).astype(np.float32), ids

    def refine_with(self, refine: Callable[[np.ndarray], np.ndarray] | None, factor: int = 0) -> "VectorIndex":
        """Re-score ``factor × k`` approximate candidates exactly with ``refine(positions)``, the
        exact vectors at those index positions (None: no refining). ``factor`` 0 takes the kind's
        default from :data:`REFINE_FACTOR` (1, no refining, for exact kinds). Returns ``self``.

        >>> rows = np.eye(3, dtype=np.float32)
        >>> index = VectorIndex.build(list("abc"), rows, kind="sq8").refine_with(lambda pos: rows[pos], 4)
        >>> index.search(rows[2:], 1)[1].tolist(), index.refine_factor
        ([['c']], 4)
        """
        if factor < 0:
            raise ValidationError("factor", factor, "must be 0 (the kind's default) or at least 1")
        self.refine = refine
        self.refine_factor = factor or REFINE_FACTOR.get(self.kind, 1)
        return self

    def _refined(self, queries: np.ndarray, k: int, params=None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` per query from ``refine_factor × k`` candidates re-scored with exact vectors
        (dead rows filtered out by ``params``, as in :meth:`search`)."""
        want = min(int(self.faiss_index.ntotal), k * self.refine_factor)
        _, cand = (self.faiss_index.search(queries, want) if params is None
                   else self.faiss_index.search(queries, want, params=params))
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        positions = np.full((len(queries), k), -1, dtype=np.int64)
        for row, (query, found) in enumerate(zip(queries, cand)):
            found = found[found >= 0]
            if not len(found):
                continue
            exact = np.asarray(self.refine(found), dtype=np.float32) @ query
            top = np.lexsort((found, -exact))[:k]  # best first, ties by position
            scores[row, : len(top)], positions[row, : len(top)] = exact[top], found[top]
        return scores, positions

    def add(self, ids: Sequence[str], vectors: np.ndarray, *, threads: int = 1) -> None:
        """Append vectors under new ids, in place (ids already live are refused; a removed id may
        come back: its new row is live, its old one stays dead)."""
        ids, vectors = _check_ids_vectors(ids, vectors, self.dim)
        clash = (np.array([i in self._id_set() for i in ids.tolist()], dtype=bool) if self.dead is None
                 else np.isin(ids, self.live_ids()))
        if clash.any():
            raise ValidationError("ids", ids[clash][0].item(), "is already in the index")
        _faiss(threads)
        # New rows go to an exact side index, searched beside the main one, when the main index is
        # memory-mapped (read-only) or a graph (an HNSW insert searches and rewires its links:
        # milliseconds a row, paid by the first query after every write).
        if self.mapped or self.kind in ("hnsw", "hnsw_sq8"):
            if self.delta is None:
                self.delta = _faiss(threads).IndexFlatIP(self.dim)
            self.delta.add(vectors)
        else:
            self.faiss_index.add(vectors)
        self.ids = self._ids_with(ids)
        if self.dead is not None:
            self.dead = np.concatenate([self.dead, np.zeros(len(ids), bool)])
            self._selector = None
        if self._idset is not None:
            self._idset.update(ids.tolist())
        if self.delta is None:  # new rows in the main index: its re-scoring source does not cover them
            self.refine = None  # (a side index is searched exactly: the main index's refine still holds)

    def _ids_with(self, new: np.ndarray) -> np.ndarray:
        """``ids`` followed by ``new``, written into the spare room of the ids' buffer (grown by half
        when full or when the new ids need a wider string type); ``ids`` views handed out before
        keep their rows."""
        n, k = len(self.ids), len(new)
        room = self._id_room
        mine = room is not None and self.ids.base is room  # ids are the start of this room
        dtype = np.result_type(self.ids.dtype, new.dtype)
        if not mine or room.dtype != dtype or len(room) < n + k:
            room = np.empty(max(n + k, (3 * (n + k)) // 2 + 16), dtype=dtype)
            room[:n] = self.ids
            self._id_room = room
        room[n : n + k] = new
        return room[: n + k]

    def _id_set(self) -> set:
        """The ids as a set, built on the first :meth:`add` and kept up to date by the next ones."""
        if self._idset is None or len(self._idset) != len(self.ids):
            self._idset = set(self.ids.tolist())
        return self._idset

    def holds_any(self, ids: Sequence[str]) -> bool:
        """Whether any of ``ids`` is in the index (a set lookup each, after the first call).

        >>> VectorIndex.build(["a"], np.ones((1, 2), np.float32)).holds_any(["b", "a"])
        True
        """
        known = self._id_set()
        return any(str(i) in known for i in ids)

    def write(self, path) -> None:
        """Write the index to ``path`` (a faiss file) and its ids beside it (``path.ids.npy``);
        :meth:`read` maps it back without copying. An index grown by :meth:`add` after a
        memory-mapped read is written whole."""
        import faiss
        from pathlib import Path

        path = Path(path)
        index = self.faiss_index
        if self.delta is not None and self.delta.ntotal:
            raise KbError("a grown memory-mapped index is not written: build it again to cache it")
        if self.n_dead:
            raise KbError("an index with removed rows is not written (they would come back): build it again")
        faiss.write_index(index, str(path))
        with open(f"{path}.ids.npy", "wb") as fh:
            np.save(fh, np.asarray(self.ids, dtype=str), allow_pickle=False)

    @classmethod
    def read(cls, path, *, kind: str, fingerprint: str = "", mmap: bool = True) -> "VectorIndex":
        """The index :meth:`write` wrote, memory-mapped where faiss allows (flat and scalar-quantised
        codes, HNSW's vectors): opening costs no copy of the vectors, and pages load as searched.

        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "i.faiss"
        >>> VectorIndex.build(["x", "y"], np.eye(2, dtype=np.float32)).write(f)
        >>> VectorIndex.read(f, kind="flat").search(np.array([[0.0, 1.0]], np.float32), 1)[1].tolist()
        [['y']]
        """
        import faiss

        index, mapped = None, False
        if mmap and hasattr(faiss, "IO_FLAG_MMAP_IFC"):
            try:
                index, mapped = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC), True
            except RuntimeError:
                index = None
        if index is None:
            index = faiss.read_index(str(path))
        ids = np.load(f"{path}.ids.npy", allow_pickle=False)
        if len(ids) != index.ntotal:
            raise StaleCache(f"index file {path} holds {index.ntotal} vectors but {len(ids)} ids; rebuild it")
        if kind in ("hnsw", "hnsw_sq8"):
            index.hnsw.efSearch = _HNSW_EF_SEARCH
        return cls(index, ids, kind, fingerprint, mapped=mapped)

    def to_bytes(self) -> bytes:
        """The index, its ids, kind and fingerprint as one byte string (for the store to persist).
        An index grown into its side index or with removed rows is refused, as by :meth:`write`."""
        import faiss

        if (self.delta is not None and self.delta.ntotal) or self.n_dead:
            raise KbError("a grown index or one with removed rows is not serialised: build it again to keep it")

        header = json.dumps({"kind": self.kind, "fingerprint": self.fingerprint}).encode()
        id_buffer = io.BytesIO()
        np.save(id_buffer, self.ids, allow_pickle=False)
        id_bytes = id_buffer.getvalue()
        sizes = np.array([len(header), len(id_bytes)], dtype="<u8").tobytes()
        return _MAGIC + sizes + header + id_bytes + faiss.serialize_index(self.faiss_index).tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "VectorIndex":
        """Read what :meth:`to_bytes` wrote."""
        import faiss

        if not data.startswith(_MAGIC):
            raise StaleCache("vector index bytes do not start with the kbtools header; rebuild the index")
        start = len(_MAGIC)
        header_len, ids_len = (int(x) for x in np.frombuffer(data[start : start + 16], dtype="<u8"))
        start += 16
        header = json.loads(data[start : start + header_len])
        start += header_len
        ids = np.load(io.BytesIO(data[start : start + ids_len]), allow_pickle=False)
        index = faiss.deserialize_index(np.frombuffer(data[start + ids_len :], dtype=np.uint8))
        return cls(index, ids, header["kind"], header["fingerprint"])


def ivf_lists(n: int) -> int:
    """Lists of an ``ivf_sq8`` index over ``n`` vectors: :data:`IVF_LISTS` × √n, with at least 39
    vectors to train each list, and at least one list.

    >>> ivf_lists(1_000_000), ivf_lists(5_000), ivf_lists(10)
    (1000, 70, 1)
    """
    return max(1, min(int(IVF_LISTS * np.sqrt(n)), n // 39))


def ivf_nprobe(nlist: int) -> int:
    """Lists an ``ivf_sq8`` query visits out of ``nlist``: :data:`IVF_PROBE_SHARE` of them, at least
    :data:`IVF_NPROBE` (all of them when there are fewer).

    >>> ivf_nprobe(1000), ivf_nprobe(100), ivf_nprobe(10)
    (100, 24, 10)
    """
    return min(nlist, max(IVF_NPROBE, int(np.ceil(IVF_PROBE_SHARE * nlist))))


def index_kind(kind: str, n: int) -> str:
    """The index kind for ``n`` entries: ``"auto"`` is ``"flat"`` (exact) below
    :data:`APPROXIMATE_FROM` entries, ``"hnsw"`` up to :data:`IVF_FROM` and ``"ivf_sq8"`` from it;
    any other kind is itself.

    >>> index_kind("auto", 10_000), index_kind("auto", 100_000), index_kind("auto", 1_000_000), index_kind("flat", 10**7)
    ('flat', 'hnsw', 'ivf_sq8', 'flat')
    """
    if kind == "auto":
        return "flat" if n < APPROXIMATE_FROM else "hnsw" if n < IVF_FROM else "ivf_sq8"
    return kind


def _merged(s1, p1, s2, p2, offset: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` per row of two result lists (the second's positions shifted by ``offset``)."""
    p2 = np.where(p2 >= 0, p2 + offset, -1)
    s1 = np.where(p1 >= 0, s1, -np.inf)
    s2 = np.where(p2 >= 0, s2, -np.inf)
    scores, positions = np.concatenate([s1, s2], axis=1), np.concatenate([p1, p2], axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(positions, order, 1)


def search_weighted(per_dim: np.ndarray, ids: Sequence[str], query: np.ndarray,
                    weights: Mapping[str, float] = DEFAULT_WEIGHTS, k: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``k`` by ``Σ_d w_d (q_d · e_d)`` over per-dimension vectors (n, 4, d).

    ``query`` is one vector (d,) used for every dimension, or (4, d) with one phrasing per
    dimension. Returns (scores float32 (k,), ids str (k,)), best first, ties by position.

    >>> per_dim = np.zeros((2, 4, 2), np.float32); per_dim[0, 0, 0] = per_dim[1, 2, 0] = 1
    >>> search_weighted(per_dim, ["a", "b"], np.array([1.0, 0.0]), {"systems": 1.0}, k=1)[1].tolist()
    ['b']
    """
    per_dim = _check_per_dim(per_dim)
    ids = np.asarray(list(ids), dtype=str)
    query = np.asarray(query, dtype=np.float32)
    if query.ndim == 1:
        query = np.broadcast_to(query, (len(DIMENSIONS), query.shape[0]))
    if query.shape != (len(DIMENSIONS), per_dim.shape[2]) or len(ids) != per_dim.shape[0]:
        raise ValidationError("query", f"shape {query.shape} for {len(ids)} ids",
                              f"must be ({per_dim.shape[2]},) or ({len(DIMENSIONS)}, {per_dim.shape[2]}),"
                              f" with one id per entry ({per_dim.shape[0]})")
    if k < 1:
        raise ValidationError("k", k, "must be at least 1")
    weighted_query = query * _weight_vector(weights)[:, None]
    scores = np.einsum("nkd,kd->n", per_dim, weighted_query, dtype=np.float32)
    k = min(k, len(ids))
    top = np.argpartition(-scores, k - 1)[:k] if k < len(ids) else np.arange(len(ids))
    top = top[np.lexsort((top, -scores[top]))]
    return scores[top], ids[top]


def recall_at_k(approx_ids, exact_ids) -> float:
    """Mean share of each row of ``exact_ids`` found in the same row of ``approx_ids``
    (padding ``""`` ignored).

    >>> recall_at_k([["a", "b"], ["c", "d"]], [["a", "b"], ["c", "e"]])
    0.75
    """
    approx = np.atleast_2d(np.asarray(approx_ids, dtype=str))
    exact = np.atleast_2d(np.asarray(exact_ids, dtype=str))
    if approx.shape[0] != exact.shape[0]:
        raise ValidationError("approx_ids", f"{approx.shape[0]} rows", f"must match exact_ids ({exact.shape[0]} rows)")
    real = exact != ""
    hits = (exact[:, :, None] == approx[:, None, :]).any(axis=2) & real
    wanted = real.sum(axis=1)
    rows = wanted > 0
    if not rows.any():
        return 1.0
    return float((hits.sum(axis=1)[rows] / wanted[rows]).mean())


def check_fingerprint(index: VectorIndex, expected: str) -> None:
    """Raise :class:`StaleCache` unless ``index.fingerprint == expected``.

    >>> check_fingerprint(VectorIndex.build(["a"], np.ones((1, 2), np.float32), fingerprint="t3"), "t3")
    """
    if index.fingerprint != expected:
        raise StaleCache(
            f"vector index fingerprint {index.fingerprint!r} does not match the bank's {expected!r}:"
            " the entries or the embedder changed since it was built; rebuild it"
            " with VectorIndex.build over the current vectors and save it again")
