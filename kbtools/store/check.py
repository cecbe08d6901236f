"""check_bank: every invariant of a bank, as a list of problems (empty when the bank is sound);
version_problems: whether one version's files are whole (what repair rolls back to).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> check_bank(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
[]
"""

from __future__ import annotations

import os

import numpy as np
import polars as pl

from kbtools.model.reprs import Problems
from kbtools.model.rules import Problem, problems_edges, problems_entries, problems_triples
from kbtools.model.schema import SCHEMAS
from pathlib import Path

from kbtools.errors import BankDamaged, UnsafePath
from kbtools.store.bank import SWEEP_AGE_S, Bank, open_bank, read_manifest
from kbtools.store.files import VECTOR_FILES, digest, inside, manifest_files, symlinks, temp_files
from kbtools.store.vectors import load_npy, load_vectors

__all__ = ["check_bank", "version_problems"]


def _file_problems(root: Path, manifest: dict) -> list[Problem]:
    """Paths that lead outside the bank, missing files, files changed since their commit, vector
    segments that do not load, symlinks and temp files a crashed write left behind."""
    out: list[Problem] = []
    if not isinstance(manifest.get("tables"), dict):
        out.append(Problem("manifest", None, "tables", None, "manifest.json names no tables"))
    recorded = manifest.get("files") or {}
    for rel in manifest_files(manifest):
        try:
            path = inside(root, rel)
        except UnsafePath:
            out.append(Problem("manifest", None, "path", rel, "a file outside the bank folder (never read)"))
            continue
        if not path.exists():
            out.append(Problem("files", None, "file", rel, "a file the manifest names is missing"))
        elif rel in recorded and digest(path)[2] != recorded[rel][2]:
            out.append(Problem("files", None, "file", rel, "changed since it was committed (checksum differs)"))
    for seg in (manifest.get("vectors") or {}).get("segments", []):
        for key in VECTOR_FILES:
            rel = seg.get(key)
            if not rel:
                if key in ("hashes", "codes"):
                    continue
                out.append(Problem("vectors", None, key, None, "a vector segment names its data and ids"))
                continue
            try:
                arr = np.load(inside(root, rel), mmap_mode="r", allow_pickle=False)
            except UnsafePath:
                continue
            except (OSError, ValueError, EOFError) as err:  # EOFError: an empty file
                if (root / rel).exists():
                    out.append(Problem("vectors", None, key, rel, f"does not load ({err})"))
                continue
            if seg.get("rows") is not None and arr.shape[0] != seg["rows"] and not (key == "data" and seg.get("codes")):
                out.append(Problem("vectors", None, key, rel, f"{arr.shape[0]} rows, the manifest says {seg['rows']}"))
    for rel in symlinks(root):
        out.append(Problem("files", None, "symlink", rel, "a bank holds no symlinks (kbtools never follows one)"))
    for tmp in temp_files(root, older_than=SWEEP_AGE_S):  # younger ones may belong to a write in flight
        out.append(Problem("files", None, "temp", tmp.relative_to(root).as_posix(),
                           "a temp file a crashed write left behind (`kb repair` removes it)"))
    return out


def version_problems(root: Path, manifest: dict) -> list[Problem]:
    """What keeps the version ``manifest`` of the bank at ``root`` from being read as its commit
    wrote it: a file outside the bank, missing, changed since its commit (checksum), a vector file
    that does not load, a table segment that is unreadable or lacks a column. Empty when every
    file it names is whole: what :func:`~kbtools.store.repair.repair_bank` rolls back to."""
    if not isinstance(manifest.get("tables"), dict):
        return [Problem("manifest", None, "tables", None, "manifest.json names no tables")]
    problems = [p for p in _file_problems(root, manifest) if p.column not in ("symlink", "temp")]
    return problems + _segment_problems(root, manifest)


def _segment_problems(root: Path, manifest: dict) -> list[Problem]:
    out: list[Problem] = []
    for table, files in manifest.get("tables", {}).items():
        if table not in SCHEMAS:
            out.append(Problem("manifest", None, "tables", table, "not a table of a bank"))
            continue
        for rel in files:
            try:
                path = inside(root, rel)
            except UnsafePath:
                continue  # reported by _file_problems
            if not path.exists():
                out.append(Problem(table, None, "segment", rel, "a segment the manifest names is missing"))
                continue
            try:
                schema = pl.read_parquet_schema(path)
            except Exception as err:  # noqa: BLE001 - any unreadable file is a problem to report
                out.append(Problem(table, None, "segment", rel, f"unreadable Parquet ({err})"))
                continue
            for name, dtype in SCHEMAS[table].items():
                got = schema.get(name)
                if got is None:
                    out.append(Problem(table, None, name, rel, "a column of the table is missing in this segment"))
                elif got != dtype and not (isinstance(got, pl.Datetime) and isinstance(dtype, pl.Datetime)):
                    out.append(Problem(table, None, name, str(got), f"column {name} must be {dtype} (segment {rel})"))
    return out


def _vector_problems(bank: Bank, ids: pl.Series) -> list[Problem]:
    info = bank.manifest.get("vectors") or {}
    out: list[Problem] = []
    dims = set()
    for seg in info.get("segments", []):
        for key in ("data", "ids", "codes"):
            if seg.get(key) and not (bank.path / seg[key]).exists():
                out.append(Problem("vectors", None, key, seg[key], "a vector segment the manifest names is missing"))
        if out:
            continue
        data = load_vectors(bank.path, seg)
        seg_ids = load_npy(bank.path, seg, "ids")
        if data.shape[0] != seg_ids.shape[0]:
            out.append(Problem("vectors", None, "rows", seg["data"], f"{data.shape[0]} vectors but {seg_ids.shape[0]} ids"))
        dims.add(tuple(data.shape[1:]))
        held = seg.get("holds")
        if held is not None and sum(int(rows) for _, rows in held) != data.shape[0]:
            out.append(Problem("vectors", None, "holds", seg["data"],
                               f"a merged segment holds the rows of those it folds: {data.shape[0]} rows, "
                               f"they had {sum(int(rows) for _, rows in held)}"))
    if len(dims) > 1:
        out.append(Problem("vectors", None, "shape", sorted(dims), "every vector segment has the same shape"))
    if info.get("segments") and not info.get("embedder"):
        out.append(Problem("vectors", None, "embedder", None, "a bank with vectors records the embedder that built them"))
    return out


def check_bank(bank_or_path: Bank | str | os.PathLike) -> Problems:
    """Every broken invariant of the bank at its newest version: segments present and readable
    with the right columns; entry ids, kinds, statuses and content; edge vocabulary, endpoints,
    self-loops, uniqueness and weights; triples; events naming actor and action; vectors.

    Returns a list of :class:`Problem` (:class:`~kbtools.model.reprs.Problems`, equal to ``[]`` when the
    bank is sound; a notebook shows it as a table). A damaged bank gives its problems (an
    unreadable ``manifest.json`` is one); raises :class:`~kbtools.errors.NotABank` when the path
    is not a bank.
    """
    root = bank_or_path.path if isinstance(bank_or_path, Bank) else Path(bank_or_path)
    try:
        manifest = read_manifest(root)
    except BankDamaged as err:
        return Problems([Problem("manifest", None, "file", err.file, err.why)])
    out = Problems(_file_problems(root, manifest))
    if isinstance(manifest.get("tables"), dict):
        out += _segment_problems(root, manifest)
    if any(p.column not in ("symlink", "temp") for p in out):
        return out
    try:
        out += _row_problems(open_bank(root))
    except BankDamaged as err:  # damage the files' checksums did not show (a file without one)
        out.append(Problem("files", None, "file", err.file, err.why))
    return out


def _row_problems(bank: Bank) -> list[Problem]:
    out: list[Problem] = []
    entries = bank.entries
    out += problems_entries(entries)
    out += problems_edges(bank.edges, entries["id"])
    out += problems_triples(bank.triples)
    events = bank.events.with_row_index("_row")
    for col in ("at", "actor", "action"):
        for row in events.filter(pl.col(col).is_null()).iter_rows(named=True):
            out.append(Problem("events", row["_row"], col, None, f"every event records its {col}"))
    out += _vector_problems(bank, entries["id"])
    return out
