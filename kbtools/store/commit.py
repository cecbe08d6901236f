"""The commit: one transaction across tables, made visible by one rename.

Under the writers' lock (held by ``Bank.apply``) a commit writes the new segment files of the
plan (temp name, rename), then the next manifest the same way, and renames it over
``manifest.json``: :func:`swap_manifest` is the commit point. Every segment file is fsynced, with
its folder, together with the next manifest's temp file, before that file is renamed into place:
no manifest ever names a file whose bytes or folder entry could be lost. A crash before the
rename leaves the old manifest (the orphan segments are swept later); a crash after it leaves the
new one. Readers only read a manifest and the immutable files it names, so they never see half a
write.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
>>> bank.apply(Plan(settings={"auto_link": False}), actor="me", reason="quiet").settings
{'auto_link': False}
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from kbtools.errors import EmbedderMismatch
from kbtools.model.plan import Plan, VectorRows
from kbtools.model.schema import APPEND_ONLY, KEYS, TABLES, conform
from kbtools.store.files import (VECTOR_FILES, atomic_write_bytes, digest, inside, log_retired, manifest_files,
                                 write_history, write_parquet)
from kbtools.store.lock import in_parallel
from kbtools.store.manifest import copy_manifest, new_tag, stamp
from kbtools.store.segments import DELETED, SEQ
from kbtools.store.vectors import DEFAULT_VECTOR_DTYPE, write_vector_segment

__all__ = ["Prepared", "prepare_commit", "segment_frame", "swap_manifest"]


#: A vector segment of at most this many rows (the write path of agents) is kept in memory as
#: written; bigger ones (an embedding job) are read back memory-mapped, as any reader reads them.
REMEMBERED_ROWS = 4096


@dataclass(frozen=True)
class Prepared:
    """A commit written but not yet visible: the next ``manifest``, the table segments written
    (relative path -> rows, to be taken as written instead of read back) and the files that must
    be durable before the manifest is renamed into place."""

    manifest: dict
    written: dict[str, pl.DataFrame]
    synced: list[Path]
    #: small vector files written (relative path -> the array as the file holds it), to be taken
    #: as written instead of read back by the first query after the commit
    arrays: dict = field(default_factory=dict)


def segment_frame(table: str, changes: Plan, seq: int) -> pl.DataFrame | None:
    """The rows the commit of version ``seq`` adds to ``table`` (None when none): the appends of an
    append-only table; for a keyed table the upserts and the tombstones of the deletes, each
    carrying ``_seq``."""
    if table in APPEND_ONLY:
        frame = changes.appends.get(table)
        return None if frame is None else conform(frame, table)
    parts = []
    version = pl.lit(seq, pl.Int64).alias(SEQ)
    up = changes.upserts.get(table)
    if up is not None and up.height:
        parts.append(conform(up, table, extra=(pl.lit(False).alias(DELETED), version)))
    dele = changes.deletes.get(table)
    if dele is not None and dele.height:
        parts.append(conform(dele.select(KEYS[table]), table, extra=(pl.lit(True).alias(DELETED), version)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical")


def prepare_commit(root: Path, current: dict, changes: Plan, *, actor: str | None, reason: str | None,
                   merged_logs: list[str], durable: bool = True) -> Prepared:
    """Write the segment files (tables and vectors) of ``changes`` over the manifest ``current``
    of the bank at ``root``, and build the next manifest (version, commit record, the usage logs
    it merges); nothing is visible until :func:`swap_manifest`. Raises
    :class:`~kbtools.errors.EmbedderMismatch` for vectors of another embedder than the bank's."""
    manifest = copy_manifest(current)
    seq = int(manifest.get("version", 0)) + 1
    tag = new_tag(seq)
    written: dict[str, pl.DataFrame] = {}
    synced: list[Path] = []
    arrays: dict[str, np.ndarray] = {}
    writes = []  # the segment files, written at once (their encoding releases the GIL)
    for table in TABLES:
        frame = segment_frame(table, changes, seq)
        if frame is None or frame.height == 0:
            continue
        rel = f"tables/{table}/{tag}.parquet"
        (root / "tables" / table).mkdir(parents=True, exist_ok=True)
        writes.append(functools.partial(write_parquet, frame, root / rel, durable=False))
        synced += [root / rel, root / "tables" / table] if durable else []
        written[rel] = frame
        manifest["tables"].setdefault(table, []).append(rel)
    info = None
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
        dtype = str((manifest.get("settings") or {}).get("vector_dtype", DEFAULT_VECTOR_DTYPE))
        writes.append(functools.partial(write_vector_segment, root, tag, ids, data, hashes, dtype=dtype, durable=False,
                                        arrays=arrays if len(ids) <= REMEMBERED_ROWS else None))
    try:
        done = in_parallel(writes)
    except BaseException:  # a file refused (a full disk): the files the others wrote go too
        for path in [root / rel for rel in written] + list((root / "vectors").glob(f"{tag}.*")):
            path.unlink(missing_ok=True)
        raise
    if info is not None:
        seg = done[-1]
        info["segments"].append(seg)
        synced += [root / seg[k] for k in VECTOR_FILES if seg.get(k)] + [root / "vectors"]
    if changes.settings:
        manifest.setdefault("settings", {}).update(changes.settings)
    stamp(manifest, seq, actor=actor, reason=reason)
    manifest["usage_merged"] = list(merged_logs)
    return Prepared(manifest, written, synced, arrays)


def swap_manifest(root: Path, old: dict, manifest: dict, *, durable: bool = True,
                  synced_with: list[Path] = ()) -> bytes:
    """The commit point: record in ``manifest`` the digest of every file it newly names (over
    ``old``, the manifest it replaces) and the files it retires (kept for a grace period so open
    snapshots stay readable), write it atomically as ``root/manifest.json`` and keep a copy in the
    manifest history. Returns the bytes written."""
    old = old or {}
    names = set(manifest_files(manifest))
    known = {k: v for k, v in (old.get("files") or {}).items() if k in names}
    for rel in names - set(known):
        known[rel] = digest(inside(root, rel))
    manifest["files"] = known
    # the files leaving the manifest go to the retired log (the sweep removes them after the grace
    # period); a manifest of an older kbtools listed them itself: they move to the log once
    earlier = {k: v for k, v in (old.get("retired") or {}).items() if k not in names}
    log_retired(root, set(manifest_files(old)) - names, time.time(), earlier)
    manifest.pop("retired", None)
    # one line, by the C encoder (an indented dump runs the pure-Python one: ~10x the time)
    data = json.dumps(manifest, separators=(",", ":")).encode()
    atomic_write_bytes(root / "manifest.json", data, durable=durable, synced_with=synced_with)
    try:
        write_history(root, manifest, data)
    except OSError:
        pass  # the history helps repair; a commit never fails for it
    return data
