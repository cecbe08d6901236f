"""How a bank lies on disk: segments per table, rows stored against rows live (the dead rows a
compaction would drop), vector segments and the caches with whether each is fresh. Read-only.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> storage_report(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))["dead_rows"]
0
"""

from __future__ import annotations

import json

from kbtools.store.bank import Bank
from kbtools.store.segments import segment_files, segment_rows
from kbtools.store.sidecars import SIDECAR_TABLES, read_display_records, read_edge_ends
from kbtools.store.vectors import embedder_name, vector_count, vector_segments

__all__ = ["storage_report"]


def storage_report(bank: Bank) -> dict:
    """Per table: segments, rows stored, rows live, dead rows (older versions and tombstones of
    keyed tables); vector segments and rows; cache files with their size; bytes on disk; per table
    that has them, whether its base segment has its sidecar (what a fresh process's first query
    reads instead of the whole table; ``kb compact`` writes it)."""
    tables, dead = {}, 0
    files = segment_files(bank)
    for table, segs in files.items():
        stored = sum(segment_rows(bank.path, s) for s in segs)
        live = bank.table(table).height if table != "usage" else stored
        if table == "entries":
            live = bank.entries.height
        tables[table] = {"segments": len(segs), "rows_stored": stored, "rows_live": live,
                         "dead_rows": max(0, stored - live)}
        dead += max(0, stored - live)
    vsegs = vector_segments(bank)
    live = vector_count(bank)
    caches = []
    folder = bank.path / "cache"
    if folder.is_dir():
        for f in sorted(folder.iterdir()):
            if f.suffix == ".json" or not f.is_file():
                continue
            try:
                seal = json.loads(f.with_name(f.name + ".json").read_text())
                fingerprint = seal.get("fingerprint") if isinstance(seal, dict) else None
            except (OSError, ValueError):
                fingerprint = None
            caches.append({"name": f.name, "bytes": f.stat().st_size, "fingerprint": fingerprint})
    readers = {"entries": read_display_records, "edges": read_edge_ends}
    sidecars = {t: readers[t](bank, files[t][0]) is not None for t in SIDECAR_TABLES if files.get(t)}
    size = sum(f.stat().st_size for f in bank.path.rglob("*") if f.is_file())
    return {"tables": tables, "dead_rows": dead, "segments": sum(t["segments"] for t in tables.values()),
            "vector_segments": len(vsegs), "vector_rows_stored": sum(int(s.get("rows", 0)) for s in vsegs),
            "vectors_live": live, "entries_without_vectors": max(0, bank.entries.height - live),
            "embedder": embedder_name(bank), "caches": caches, "bytes_on_disk": size,
            "usage_log_rows": bank.usage.height, "sidecars": sidecars}
