"""check_bank: every invariant of a bank, as a list of problems (empty when the bank is sound).

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

from kbtools.store.bank import Bank, open_bank, read_manifest

__all__ = ["check_bank"]


def _segment_problems(root: Path, manifest: dict) -> list[Problem]:
    out: list[Problem] = []
    for table, files in manifest.get("tables", {}).items():
        if table not in SCHEMAS:
            out.append(Problem("manifest", None, "tables", table, "not a table of a bank"))
            continue
        for rel in files:
            path = root / rel
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
    info = bank._manifest.get("vectors") or {}
    out: list[Problem] = []
    dims = set()
    for seg in info.get("segments", []):
        for key in ("data", "ids"):
            if not (bank.path / seg[key]).exists():
                out.append(Problem("vectors", None, key, seg[key], "a vector segment the manifest names is missing"))
        if out:
            continue
        data = np.load(bank.path / seg["data"], mmap_mode="r")
        seg_ids = np.load(bank.path / seg["ids"])
        if data.shape[0] != seg_ids.shape[0]:
            out.append(Problem("vectors", None, "rows", seg["data"], f"{data.shape[0]} vectors but {seg_ids.shape[0]} ids"))
        dims.add(tuple(data.shape[1:]))
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
    bank is sound; a notebook shows it as a table). Raises :class:`~kbtools.errors.NotABank` when the
    path is not a bank.
    """
    root = bank_or_path.path if isinstance(bank_or_path, Bank) else Path(bank_or_path)
    out = Problems(_segment_problems(root, read_manifest(root)))
    if out:
        return out
    bank = open_bank(root)
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
