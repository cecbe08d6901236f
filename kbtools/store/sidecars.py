"""Sidecars of a table's base segment: what a fresh process's first query reads instead of the
whole table. A full compaction writes them beside the cache files (``cache/``), each sealed with
the name of the segment it describes (segments never change, so the name is its fingerprint):

- ``edges-ends``: both ends of every trusted edge of the base edges segment, sorted by end id
  (packed 8-byte ids, the rows they belong to, each edge's type, source and note), read
  memory-mapped: the edges touching a pool are found by binary search (:func:`edge_ends` builds
  them; folding's edge lookup builds its parts with the same function);
- ``entries-display``: the display fields of every entry of the base entries segment (id, title,
  summary, kind, steps, status), one record per entry sorted by id, read memory-mapped for the
  records a query asks for (:class:`DisplayRecords`).

A sidecar missing, sealed for another segment, or not as it was written (size, time, first and
last MiB) is never read: the reader reads the table, as for a bank without one. Reads never write
one. Pure builders (:func:`canonical_edges`, :func:`~kbtools.store.rowindex.packed_ids`, :func:`edge_ends`,
:func:`display_records`) and their readers.

>>> kept = canonical_edges(pl.DataFrame({"src": ["b", "a"], "dst": ["a", "c"], "type": ["cites", "related_to"],
...                                      "note": [None, "x"], "source": ["author", "judge"]}), frozenset({"author", "judge"}))
>>> ends = edge_ends(kept)
>>> ends["keys"].astype(">u8").view("S8").tolist(), ends["rows"].tolist(), ends["names"]
([b'a', b'a', b'b', b'c'], [1, 0, 0, 1], ['author', 'cites', 'judge', 'see_also'])
"""

from __future__ import annotations

import json
import mmap
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import numpy as np
import polars as pl

from kbtools.model import vocab
from kbtools.store.caches import cached_file_meta, write_cache_file
from kbtools.store.rowindex import packed_ids, packed_query
from kbtools.store.vectors import load_npy

if TYPE_CHECKING:  # functions here read a bank's snapshot; the bank imports this module
    from kbtools.store.bank import Bank

__all__ = ["SIDECAR_TABLES", "EDGE_SIDECAR", "DISPLAY_SIDECAR", "CANONICAL_COLUMNS", "canonical_edges", "edge_ends", "write_edge_ends",
           "read_edge_ends", "display_records", "write_display_records", "read_display_records", "DisplayRecords",
           "write_sidecars"]

#: the tables whose base segment gets sidecars
SIDECAR_TABLES = ("entries", "edges")
#: the cache names of the sidecars (one of each per bank: the base segment's)
EDGE_SIDECAR = "edges-ends"
DISPLAY_SIDECAR = "entries-display"
#: what a sidecar's seal records besides its segment: a reader takes only its own format
_FORMAT = 1
#: the bytes at each end of a sidecar file its seal hashes (a cold query checks every file)
_SEAL_SPAN = 1 << 16
_EDGE_ARRAYS = ("rows", "src_at", "dst_at", "type_code", "source_code", "is_out", "note_ends", "note_bytes")
_DISPLAY_FIELDS = ("id", "title", "summary", "kind", "steps", "status")
#: the display fields that may be null (steps are null when their JSON is empty)
_NULLABLE = (1, 2, 3, 5)


#: Up to this many rows, :func:`canonical_edges` reads a frame in Python (the rows of a write).
_FEW_EDGES = 64
#: The columns of a :func:`canonical_edges` frame, in order.
CANONICAL_COLUMNS = ("src", "dst", "type", "note", "source")


def canonical_edges(edges: pl.DataFrame, allowed: frozenset[str]) -> pl.DataFrame:
    """The edges of a frame whose source is ``allowed``, types canonical (``related_to`` ->
    ``see_also``), self-loops and repeated ``(src, dst, type)`` rows dropped (the first kept):
    src, dst, type, note, source."""
    if edges.height <= _FEW_EDGES:  # a write's few rows: told in Python (a polars query costs more here)
        columns = [edges.get_column(c).cast(pl.String).to_list() if c in edges.columns else [None] * edges.height
                   for c in CANONICAL_COLUMNS]
        seen, kept = set(), []
        for src, dst, typ, note, source in zip(*columns):
            typ = vocab.TYPE_ALIASES.get(typ, typ)
            if src is None or dst is None or src == dst or source not in allowed or (src, dst, typ) in seen:
                continue
            seen.add((src, dst, typ))
            kept.append((src, dst, typ, note, source))
        return pl.DataFrame(kept, schema={c: pl.String for c in CANONICAL_COLUMNS}, orient="row")
    note = pl.col("note").cast(pl.String) if "note" in edges.columns else pl.lit(None, pl.String)
    return (
        edges.lazy()
        .select(pl.col("src").cast(pl.String), pl.col("dst").cast(pl.String),
                pl.col("type").cast(pl.String).replace(vocab.TYPE_ALIASES), note.alias("note"),
                pl.col("source").cast(pl.String))
        .filter(pl.col("source").is_in(list(allowed)) & (pl.col("src") != pl.col("dst")))
        .unique(subset=["src", "dst", "type"], keep="first", maintain_order=True)
        .collect()
    )


def edge_ends(kept: pl.DataFrame) -> dict:
    """Both ends of every edge of ``kept`` (a :func:`canonical_edges` frame), sorted by end id:
    ``keys`` (the end ids, packed when :func:`packed_ids` can, else ``str``), ``packed``, ``rows``
    (the edge row of each end), ``is_out`` (the end is the edge's source), and per edge
    ``src_at`` / ``dst_at`` (positions of its ends in ``keys``), ``type_code`` / ``source_code``
    (into ``names``) and ``notes``."""
    n = kept.height
    both = pl.concat([kept["src"], kept["dst"]])
    values = packed_ids(both)
    packed = values is not None
    if not packed:
        values = both.to_numpy().astype(str) if len(both) else np.zeros(0, dtype="<U8")
    order = np.argsort(values, kind="stable")
    rows = np.concatenate([np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)])
    where = np.empty(2 * n, dtype=np.int64)
    where[order] = np.arange(2 * n)
    names = sorted(set(kept["type"].unique().to_list()) | set(kept["source"].unique().to_list()))
    code = {name: i for i, name in enumerate(names)}
    type_code = kept["type"].replace_strict(code, return_dtype=pl.UInt16).to_numpy() if n else np.zeros(0, np.uint16)
    source_code = kept["source"].replace_strict(code, return_dtype=pl.UInt16).to_numpy() if n else np.zeros(0, np.uint16)
    notes = kept["note"].to_numpy() if n else np.zeros(0, dtype=object)
    return {"keys": values[order], "packed": packed, "rows": rows[order], "src_at": where[:n], "dst_at": where[n:],
            "names": names, "type_code": type_code, "source_code": source_code,
            "notes": notes.astype(object, copy=False), "is_out": order < n}


def _texts(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Strings (None allowed) as one UTF-8 blob and the end of each in it (None: ends at -1 - start)."""
    ends = np.empty(len(values), dtype=np.int64)
    chunks, at = [], 0
    for i, v in enumerate(values):
        if v is None:
            ends[i] = -1 - at
            continue
        b = v.encode()
        chunks.append(b)
        at += len(b)
        ends[i] = at
    return ends, np.frombuffer(b"".join(chunks), dtype=np.uint8)


class _Notes:
    """Edge notes read from a blob by row: ``notes[rows]`` gives them as an object array (each
    row's note decoded once)."""

    __slots__ = ("ends", "blob", "_read")

    def __init__(self, ends: np.ndarray, blob):
        self.ends, self.blob = ends, blob
        self._read: dict[int, str | None] = {}

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, rows) -> np.ndarray:
        listed = np.asarray(rows, dtype=np.int64).tolist()
        read = self._read
        todo = [r for r in listed if r not in read]
        if todo:
            at = np.asarray(todo, dtype=np.int64)
            for r, e, s in zip(todo, self.ends[at].tolist(), self.ends[at - 1].tolist()):
                start = 0 if r == 0 else (s if s >= 0 else -1 - s)
                read[r] = None if e < 0 else bytes(self.blob[start:e]).decode()
        out = np.empty(len(listed), dtype=object)
        out[:] = [read[r] for r in listed]
        return out


def write_edge_ends(bank: Bank, segment: str, frame: pl.DataFrame) -> bool:
    """Write the ``edges-ends`` sidecar of the edges segment ``segment`` (its rows ``frame``: no
    tombstone, each key once, what a full compaction writes); nothing when its ids do not pack."""
    ends = edge_ends(canonical_edges(frame, vocab.TRUSTED_SOURCES))
    if not ends["packed"] and len(ends["keys"]):
        return False
    note_ends, note_bytes = _texts(ends["notes"].tolist())
    arrays = {**{k: ends[k] for k in _EDGE_ARRAYS if k in ends}, "note_ends": note_ends, "note_bytes": note_bytes}
    arrays["keys"] = np.asarray(ends["keys"], dtype=np.uint64)
    meta = {"format": _FORMAT, "segment": segment, "names": ends["names"], "edges": len(ends["src_at"]),
            "sources": sorted(vocab.TRUSTED_SOURCES),
            "aliased": bool(frame.height) and bool(frame["type"].cast(pl.String).is_in(list(vocab.TYPE_ALIASES)).any())}
    _write_arrays(bank, EDGE_SIDECAR, segment, arrays, meta)
    return True


def read_edge_ends(bank: Bank, segment: str) -> dict | None:
    """The ``edges-ends`` sidecar of ``segment``, memory-mapped, as :func:`edge_ends` gives it (the
    trusted sources' edges; ``notes`` read by row), with ``edges`` and ``aliased``; None when
    there is none for this segment or it is not as it was written."""
    got = _read_arrays(bank, EDGE_SIDECAR, segment, ("keys", *_EDGE_ARRAYS))
    if got is None:
        return None
    arrays, meta = got
    n = meta.get("edges")
    if (meta.get("sources") != sorted(vocab.TRUSTED_SOURCES) or not isinstance(n, int)
            or any(len(arrays[k]) != 2 * n for k in ("keys", "rows", "is_out"))
            or any(len(arrays[k]) != n for k in ("src_at", "dst_at", "type_code", "source_code", "note_ends"))):
        return None
    blob = _mapped_bytes(arrays.pop("note_bytes"))
    arrays = {k: _plain(a) for k, a in arrays.items()}
    return {**arrays, "packed": True, "names": list(meta.get("names") or []), "edges": n,
            "aliased": bool(meta.get("aliased")), "notes": _Notes(arrays["note_ends"], blob)}


def display_records(entries: pl.DataFrame) -> dict | None:
    """The display fields of ``entries`` (id, title, summary, kind, steps, status), one record per
    entry sorted by id: ``keys`` (packed ids), ``ends`` (n, 6: the end of each field in ``blob``,
    a record's fields one after the other; steps as JSON), ``blob``, ``active`` (the status is
    active); None when the ids do not pack or repeat."""
    frame = entries.select(*_DISPLAY_FIELDS)
    keys = packed_ids(frame["id"])
    if keys is None and frame.height:
        return None
    if frame.height == 0:
        return {"keys": np.zeros(0, np.uint64), "ends": np.zeros((0, len(_DISPLAY_FIELDS)), np.int64),
                "blob": np.zeros(0, np.uint8), "active": np.zeros(0, bool)}
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    if (keys[1:] == keys[:-1]).any():
        return None
    frame = frame[order]
    steps = [None if v is None else json.dumps(v) for v in frame["steps"].to_list()]
    columns = [frame[c].fill_null("").to_list() for c in ("id", "title", "summary", "kind")]
    columns += [[s or "" for s in steps], frame["status"].fill_null("").to_list()]
    lengths = np.array([[len(v.encode()) for v in col] for col in columns], dtype=np.int64).T
    ends = np.cumsum(lengths.reshape(-1)).reshape(lengths.shape)
    for j in _NULLABLE:  # a null field is told from an empty one by a negative end (-1 - end)
        null = frame[_DISPLAY_FIELDS[j]].is_null().to_numpy()
        ends[:, j] = np.where(null, -1 - ends[:, j], ends[:, j])
    blob = "".join(v for row in zip(*columns) for v in row).encode()
    return {"keys": keys, "ends": ends, "blob": np.frombuffer(blob, dtype=np.uint8),
            "active": (frame["status"] == "active").fill_null(False).to_numpy()}


def write_display_records(bank: Bank, segment: str, frame: pl.DataFrame, vectors: list[dict] = ()) -> bool:
    """Write the ``entries-display`` sidecar of the entries segment ``segment`` (its rows ``frame``:
    no tombstone, each id once); nothing when its ids do not pack. ``vectors``: the vector
    segments of the same version; when every entry has a vector in them, the sidecar says so
    (a reader then checks only the entries written since for vectors)."""
    records = display_records(frame)
    if records is None:
        return False
    held = [load_npy(bank.path, seg, "ids") for seg in vectors]
    covered = bool(held) and bool(np.isin(frame["id"].to_numpy().astype("U8"), np.concatenate(held)).all())
    _write_arrays(bank, DISPLAY_SIDECAR, segment, records, {
        "format": _FORMAT, "segment": segment, "entries": int(len(records["keys"])),
        "vectors": [seg["data"] for seg in vectors] if covered else None})
    return True


class DisplayRecords:
    """The ``entries-display`` sidecar read memory-mapped: :meth:`find` places ids among its
    records, :meth:`take` reads records as ``(id, title, summary, kind, steps, status)`` tuples
    (steps a tuple or None); nothing is read before a record is asked for."""

    __slots__ = ("keys", "ends", "view", "active", "vectors", "_shared", "_taken", "_found")

    def __init__(self, keys: np.ndarray, ends: np.ndarray, view, active: np.ndarray, vectors: list[str] | None = None):
        self.keys, self.ends, self.view, self.active = keys, ends, view, active
        #: the vector segments that hold a vector of every record's entry (None: not known)
        self.vectors = vectors
        self._shared: dict = {}
        # records read and ids placed so far (a served bank asks for the same ones again)
        self._taken: dict[int, tuple] = {}
        self._found: dict[str, int | None] = {}

    def __len__(self) -> int:
        return len(self.keys)

    @staticmethod
    def ids_of(packed: np.ndarray) -> np.ndarray:
        """:meth:`packed_ids` as a ``str`` array."""
        return np.ascontiguousarray(packed, dtype=np.uint64).view("S8").astype("U8")

    def packed_ids(self, records: np.ndarray | None = None) -> np.ndarray:
        """The ids of these records (all when None) as :func:`~kbtools.store.vectors.pack_ids`
        packs them (each id's bytes read as one native integer)."""
        keys = self.keys if records is None else self.keys[records]
        return np.asarray(keys, dtype=np.uint64).astype(">u8").view(np.uint64)

    def find(self, ids: list[str]) -> list[int | None]:
        """The record of each of ``ids`` (None where absent)."""
        found = self._found
        if all(i in found for i in ids):
            return [found[i] for i in ids]
        got = self._search(ids)
        found.update(zip(ids, got))
        return got

    def _search(self, ids: list[str]) -> list[int | None]:
        if not ids or not len(self.keys):
            return [None] * len(ids)
        q, fits = packed_query(ids)
        at = np.searchsorted(self.keys, q)
        at = np.minimum(at, len(self.keys) - 1)
        hit = (self.keys[at] == q) & fits
        return [a if h else None for a, h in zip(at.tolist(), hit.tolist())]

    def take(self, records: list[int]) -> list[tuple]:
        """The records at these positions, in this order."""
        taken = self._taken
        todo = [r for r in records if r not in taken]
        if todo:
            for r, row in zip(todo, self._read(todo)):
                taken[r] = row
        return [taken[r] for r in records]

    def _read(self, records: list[int]) -> list[tuple]:
        rows = np.asarray(records, dtype=np.int64)
        ends = self.ends[rows].tolist()
        before = self.ends[rows - 1, -1].tolist()
        view, shared = self.view, self._shared
        out = []
        for r, e, b in zip(records, ends, before):
            at = 0 if r == 0 else (b if b >= 0 else -1 - b)
            cuts = [x if x >= 0 else -1 - x for x in e]
            raw = bytes(view[at:cuts[-1]])
            fields, prev = [], 0
            for x in cuts:
                fields.append(raw[prev:x - at].decode())
                prev = x - at
            eid, title, summary, kind, steps, status = fields
            out.append((eid, None if e[1] < 0 else title, None if e[2] < 0 else summary,
                        None if e[3] < 0 else shared.setdefault(kind, sys.intern(kind)),
                        None if not steps else () if steps == "[]" else tuple(json.loads(steps)),
                        None if e[5] < 0 else shared.setdefault(status, sys.intern(status))))
        return out


def read_display_records(bank: Bank, segment: str) -> DisplayRecords | None:
    """The ``entries-display`` sidecar of ``segment``, memory-mapped; None when there is none for
    this segment or it is not as it was written."""
    got = _read_arrays(bank, DISPLAY_SIDECAR, segment, ("keys", "ends", "blob", "active"))
    if got is None:
        return None
    arrays, meta = got
    n = meta.get("entries")
    ends = arrays["ends"]
    if (not isinstance(n, int) or len(arrays["keys"]) != n or len(arrays["active"]) != n
            or ends.shape != (n, len(_DISPLAY_FIELDS))
            or (n and _end(int(ends[-1, -1])) != len(arrays["blob"]))):
        return None
    view = _mapped_bytes(arrays["blob"])
    covered = meta.get("vectors")
    covered = [str(v) for v in covered] if isinstance(covered, list) else None
    return DisplayRecords(_plain(arrays["keys"]), _plain(ends), view, _plain(arrays["active"]), covered)


def _end(x: int) -> int:
    """A field's end as recorded (negative where the field is null)."""
    return x if x >= 0 else -1 - x


def _plain(array: np.ndarray) -> np.ndarray:
    """A memory-mapped array as a plain ndarray over the same pages (indexing a ``np.memmap``
    costs a subclass's bookkeeping on every call)."""
    return array.view(np.ndarray) if isinstance(array, np.memmap) else array


def _mapped_bytes(array: np.ndarray):
    """The bytes of a memory-mapped ``uint8`` array as a memoryview over one ``mmap`` of its file
    (slicing it gives bytes without numpy's per-slice cost)."""
    if not isinstance(array, np.memmap):
        return memoryview(np.ascontiguousarray(array).tobytes())
    if not len(array):
        return memoryview(b"")
    with open(array.filename, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return memoryview(mapped)[array.offset:array.offset + len(array)]


def write_sidecars(bank: Bank, segments: dict[str, tuple[str, pl.DataFrame]], vectors: list[dict] = ()) -> list[str]:
    """Write the sidecars of the base segments a full compaction wrote (table -> (segment, rows);
    ``vectors``: the vector segments it leaves); returns the sidecars written. A read-only bank
    writes none."""
    written = []
    for table, (segment, frame) in segments.items():
        if table == "edges" and write_edge_ends(bank, segment, frame):
            written.append(EDGE_SIDECAR)
        elif table == "entries" and write_display_records(bank, segment, frame, vectors):
            written.append(DISPLAY_SIDECAR)
    return written


# -- files ---------------------------------------------------------------------------------------


def _write_arrays(bank: Bank, name: str, segment: str, arrays: dict[str, np.ndarray], meta: dict) -> None:
    """Arrays as ``.npy`` files of the cache ``name`` (``keys`` the main file, the others
    siblings), sealed with ``segment`` and ``meta``."""
    def write(path: Path) -> None:
        for key, array in arrays.items():
            target = path if key == "keys" else path.with_name(f"{path.name}.{key}")
            with open(target, "wb") as fh:
                np.save(fh, np.ascontiguousarray(array), allow_pickle=False)
                fh.flush()
                os.fsync(fh.fileno())

    write_cache_file(bank, name, segment, write, meta=meta, span=_SEAL_SPAN)


def _read_arrays(bank: Bank, name: str, segment: str, keys: Iterable[str]) -> tuple[dict, dict] | None:
    found = cached_file_meta(bank, name)
    if found is None or found[1] != segment or found[2].get("format") != _FORMAT or found[2].get("segment") != segment:
        return None
    path, _, meta = found
    try:
        arrays = {k: np.load(path if k == "keys" else path.with_name(f"{path.name}.{k}"), mmap_mode="r",
                             allow_pickle=False) for k in keys}
    except (OSError, ValueError, EOFError):
        return None
    return arrays, meta
