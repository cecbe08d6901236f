"""Compaction and the sweep: where a bank's files are rewritten and removed.

Every commit appends segments; :func:`tail_start` decides when the small segments after a table's
base are merged (by ``Bank.apply``, right after a commit: a tail merge), so a table keeps O(log n)
segments and a row is rewritten O(log n) times. ``Bank.compact`` folds every table into one
segment (tombstones dropped, usage folded into entries) and the vectors into one segment, then
carries the caches built over the folded vector segments over (:func:`~kbtools.store.caches.
carry_caches`). Either way the new files become visible by one manifest swap, and
:func:`sweep` removes the files no manifest names any more once they have been retired for the
grace period (:data:`~kbtools.store.manifest.SWEEP_AGE_S`).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").compact()["swept"]
0
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np
import polars as pl

from kbtools.model.schema import KEYS
from kbtools.store.commit import REMEMBERED_ROWS
from kbtools.store.files import manifest_files, read_retired, rewrite_retired, temp_files, write_parquet
from kbtools.store.manifest import SWEEP_AGE_S, new_tag, stamp
from kbtools.store.segments import DELETED, SEQ, latest_in_first_order, read_segment
from kbtools.store.vectors import (CODED_FROM, DEFAULT_VECTOR_DTYPE, entry_vectors, segment_data, segment_hashes,
                                   segment_ids, write_vector_segment)

if TYPE_CHECKING:  # the bank imports this module
    from kbtools.store.bank import Bank

__all__ = ["TAIL_SEGMENTS", "MAX_SEGMENTS", "tail_start", "tail_starts", "vector_tail_start", "merge_vector_tail",
           "full_frames", "rewritten", "rewrite_tables",
           "compact_vectors", "sweep"]

#: Merge the small segments after the base once there are more than this many.
TAIL_SEGMENTS = 16
#: A table never keeps more segments than this: past it, every segment after the base is merged.
MAX_SEGMENTS = 4 * TAIL_SEGMENTS + 1


def tail_start(rows: list[int], tail: int, most: int) -> int | None:
    """Where a tail merge of segments with these row counts starts (None: no merge yet).

    The run merged is taken from the end: the newest segment, then each older one no larger than
    the rows taken so far, never the base (segment 0). It is merged once it holds more than
    ``tail`` segments, so merged segments double like a binary counter: a row is rewritten
    O(log n) times, a merge never rewrites the whole table, and a table keeps O(log n) segments
    (past ``most`` segments everything after the base is merged).

    >>> tail_start([100_000] + [1] * 16, 16, 65) is None, tail_start([100_000] + [1] * 17, 16, 65)
    (True, 1)
    >>> tail_start([100_000, 34, 17] + [1] * 17, 16, 65), tail_start([100_000, 68] + [1] * 17, 16, 65)
    (1, 2)
    """
    if len(rows) > most:
        return 1
    taken, start = 0, len(rows)
    while start > 1 and (taken == 0 or rows[start - 1] <= taken):
        start -= 1
        taken += rows[start]
    return start if len(rows) - start > tail else None


def tail_starts(manifest: dict, rows_of: Callable[[str], int]) -> dict[str, int]:
    """Where the tail merge of each table of ``manifest`` that needs one starts (``rows_of(name)``:
    the rows of a segment).

    >>> tail_starts({"tables": {"edges": ["a"] * 18}}, lambda name: 1)
    {'edges': 1}
    """
    starts = {}
    for table, segs in manifest["tables"].items():
        if len(segs) > TAIL_SEGMENTS + 1:
            start = tail_start([rows_of(n) for n in segs], TAIL_SEGMENTS, MAX_SEGMENTS)
            if start is not None:
                starts[table] = start
    return starts


def vector_tail_start(manifest: dict) -> int | None:
    """Where the tail merge of ``manifest``'s vector segments starts (None: none yet), as for a
    table (:func:`tail_start`): a bank written one entry at a time keeps O(log n) vector segments
    between full compactions, not one per write.

    >>> vector_tail_start({"vectors": {"segments": [{"rows": 1000}] + [{"rows": 1}] * 17}})
    1
    """
    segs = (manifest.get("vectors") or {}).get("segments", [])
    if len(segs) <= TAIL_SEGMENTS + 1:
        return None
    return tail_start([int(s.get("rows") or 0) for s in segs], TAIL_SEGMENTS, MAX_SEGMENTS)


def merge_vector_tail(bank: Bank, manifest: dict, start: int, tag: str, arrays: dict | None = None) -> dict:
    """Merge the vector segments of ``manifest`` from ``start`` on into one (written now, named in
    ``manifest``, changed in place): their rows concatenated in order, nothing dropped, so the
    merged segment holds exactly the rows of those it folds, which it lists (``holds``: name and
    rows of each) for the values built over them to go on growing (see
    :func:`~kbtools.store.vectors.continued`). ``arrays``: as for ``write_vector_segment``."""
    info = manifest["vectors"]
    segs = info["segments"]
    tail = segs[start:]
    ids = np.concatenate([segment_ids(bank, s) for s in tail])
    data = [segment_data(bank, s) for s in tail]
    dtype = "float32" if any(np.dtype(d.dtype) == np.float32 for d in data) else DEFAULT_VECTOR_DTYPE
    hashes = np.concatenate([segment_hashes(bank, s) for s in tail]) if any(s.get("hashes") for s in tail) else None
    seg = write_vector_segment(bank.path, tag, ids, np.concatenate(data), hashes, dtype=dtype,
                               arrays=arrays if len(ids) <= REMEMBERED_ROWS else None)
    seg["holds"] = [[s["data"], int(s["rows"])] for s in tail]
    info["segments"] = [*segs[:start], seg]
    return {"segments_before": len(segs), "segments_after": len(info["segments"])}


def full_frames(frames: dict[str, pl.DataFrame], entries_with_usage: pl.DataFrame | None,
                seq: int) -> dict[str, pl.DataFrame | None]:
    """The one segment of each table a full compaction to version ``seq`` writes, from the merged
    ``frames`` of every table: keyed rows re-stamped with ``seq``; when the usage table holds rows,
    ``entries_with_usage`` (the entries with that usage counted in) replaces the entries and the
    usage table is emptied."""
    usage_folded = frames["usage"].height > 0
    out: dict[str, pl.DataFrame | None] = {}
    for table, frame in frames.items():
        if table == "entries" and usage_folded:
            frame = entries_with_usage.with_columns(pl.lit(seq, pl.Int64).alias(SEQ), pl.lit(False).alias(DELETED))
        elif table == "usage" and usage_folded:
            frame = None
        if frame is not None and table in KEYS:
            frame = frame.with_columns(pl.lit(seq, pl.Int64).alias(SEQ))
        out[table] = frame
    return out


def rewrite_tables(root: Path, manifest: dict, *, tag: str, frames: dict[str, pl.DataFrame | None] | None = None,
                   starts: dict[str, int] | None = None, seg_rows: dict[str, int],
                   read: Callable[[str, list[str]], pl.DataFrame | None] | None = None,
                   written: dict[str, pl.DataFrame] | None = None) -> dict:
    """Write the rewritten segments of the bank at ``root`` into ``manifest`` (changed in place):
    with ``frames`` (see :func:`full_frames`) each table becomes its one segment; with ``starts``
    (see :func:`tail_starts`) the segments of each table from its start on are merged into one,
    the latest version of each key kept, their rows read by ``read(table, names)`` (default: from
    the files). ``seg_rows`` learns the rows of every segment written, ``written`` (when given)
    its rows. Returns the segments before and after, per table."""
    report = {}
    for table in (list(frames) if frames is not None else list(starts or {})):
        segs = manifest["tables"].get(table, [])
        if frames is not None:
            frame = frames[table]
            keep: list[str] = []
        else:
            start = (starts or {}).get(table, 1)
            keep, tail = segs[:start], segs[start:]
            if read is not None:
                frame = read(table, tail) if tail else None
            else:
                parts = [read_segment(root, table, n) for n in tail]
                frame = pl.concat(parts, how="diagonal_relaxed") if parts else None
            if frame is not None and table in KEYS:
                frame = latest_in_first_order(frame, list(KEYS[table]))
        new_segs = list(keep)
        if frame is not None and frame.height:
            rel = f"tables/{table}/{tag}.parquet"
            (root / "tables" / table).mkdir(parents=True, exist_ok=True)
            write_parquet(frame, root / rel)
            seg_rows[rel] = frame.height
            if written is not None:
                written[rel] = frame
            new_segs.append(rel)
        manifest["tables"][table] = new_segs
        report[table] = {"segments_before": len(segs), "segments_after": len(new_segs)}
    return report


def rewritten(bank: Bank, *, frames: dict[str, pl.DataFrame | None] | None = None,
              starts: dict[str, int] | None = None, seg_rows: dict[str, int], vector_start: int | None = None,
              arrays: dict | None = None, read=None, written: dict | None = None) -> tuple[dict, dict]:
    """The next manifest of ``bank`` after a compaction, with the files it names written, and the
    report: with ``frames`` (see :func:`full_frames`) a full compaction, the vectors folded too;
    with ``starts`` (see :func:`tail_starts`) and ``vector_start`` (see :func:`vector_tail_start`)
    a tail merge (``read``, ``written``: see :func:`rewrite_tables`; ``arrays``: the vectors'
    arrays, see :func:`merge_vector_tail`). Nothing is visible until the manifest is swapped in."""
    manifest = json.loads(json.dumps(bank.manifest))
    seq = int(manifest.get("version", 0)) + 1
    tag = new_tag(seq)
    report = {"version": seq, "tables": rewrite_tables(bank.path, manifest, tag=tag, frames=frames, starts=starts,
                                                       seg_rows=seg_rows, read=read, written=written)}
    if frames is not None:
        report["vectors"] = compact_vectors(bank, manifest, tag)
    elif vector_start is not None:
        report["vectors"] = merge_vector_tail(bank, manifest, vector_start, tag, arrays)
    stamp(manifest, seq, actor="compact", reason="full compaction" if frames is not None else "tail merge")
    return manifest, report


def compact_vectors(bank: Bank, manifest: dict, tag: str) -> dict:
    """Fold the vector segments of ``bank`` into one (the live rows, latest per id) and name it in
    ``manifest``; the report keeps the folded segments under ``"folded"`` for carrying the caches."""
    info = manifest.get("vectors")
    segs = (info or {}).get("segments", [])
    if len(segs) == 0 or len(segs) == 1 and (segs[0].get("codes") or segs[0].get("distinct")
                                             or int(segs[0].get("rows") or 0) < CODED_FROM):
        return {"segments": len(segs)}  # one segment, its distinct vectors looked at when written
    folded = [dict(seg) for seg in info["segments"]]
    ids, data, hashes = entry_vectors(bank, with_hashes=True)
    dtype = str(bank.settings.get("vector_dtype", DEFAULT_VECTOR_DTYPE))
    info["segments"] = [write_vector_segment(bank.path, tag, ids, data, hashes, dtype=dtype)]
    return {"segments": 1, "rows": int(len(ids)), "folded": folded}


def sweep(root: Path, manifest: dict, age: float = SWEEP_AGE_S) -> int:
    """Remove files no manifest names any more: retired segments once they have been out of the
    manifest for ``age`` seconds (a reader's snapshot stays readable that long), files a crashed
    write left behind once they are ``age`` seconds old. Never follows a symlink: a symlinked
    folder or file inside the bank is left alone (``kb check`` reports it)."""
    referenced = set(manifest_files(manifest))
    retired = {**(manifest.get("retired") or {}), **read_retired(root)}  # (an older kbtools' manifest listed them)
    removed, left = 0, set()
    now = time.time()
    folders = [root / "vectors", *(root / "tables").glob("*")]
    for folder in folders:
        if folder.is_symlink() or not folder.is_dir() or folder.parent.is_symlink():
            continue
        prefix = folder.relative_to(root).as_posix() + "/"
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
                    else:
                        left.add(rel)
                except FileNotFoundError:
                    pass
    # the log keeps the files still there and no longer named (a commit that failed after logging
    # names files the manifest still holds: their retirement is logged again when it comes)
    kept = {k: v for k, v in retired.items() if k in left}
    if len(kept) != len(retired):
        rewrite_retired(root, kept)
    for tmp in temp_files(root):
        try:
            if now - tmp.stat().st_mtime >= age:
                tmp.unlink()
                removed += 1
        except FileNotFoundError:
            pass
    return removed

