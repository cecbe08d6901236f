"""bank_stats: what a bank holds, in numbers (pure over the bank's frames).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> bank_stats(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))["entries"]
0
"""

from __future__ import annotations

import polars as pl

from kbtools.model.reprs import BankStats
from kbtools.store.bank import Bank
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.ops.fleet import map_banks
from kbtools.store.segments import segment_files
from kbtools.store.vectors import embedder_name, entry_vectors

__all__ = ["bank_stats", "format_stats", "stats_many", "FLEET_STATS"]


def _counts(frame: pl.DataFrame, col: str) -> dict[str, int]:
    if frame.height == 0:
        return {}
    return dict(frame.group_by(col).len().sort(["len", col], descending=[True, False]).iter_rows())


def bank_stats(bank: Bank) -> BankStats:
    """Counts by kind, type and source, note coverage, citation and metadata shares, storage.

    The result is a JSON-ready dict (plain ints, floats, strings and dicts; a
    :class:`~kbtools.model.reprs.BankStats`, which a notebook shows as tables).
    """
    entries, edges = bank.entries, bank.edges
    trusted = edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES)))
    with_note = edges.filter(pl.col("note").fill_null("").str.strip_chars() != "")
    degree = pl.concat([edges["src"], edges["dst"]]).value_counts() if edges.height else None
    linked = 0 if degree is None else degree.height
    size = sum(f.stat().st_size for f in bank.path.rglob("*") if f.is_file())
    from kbtools.evaluate.leak import leaky_notes

    leaky = leaky_notes(bank)
    from kbtools.ops.interchange import guard_flags

    flagged = guard_flags(entries.filter(pl.col("status") == "active") if "status" in entries.columns else entries)
    segments = segment_files(bank)
    return BankStats({
        "path": str(bank.path),
        "version": bank.version,
        "entries": entries.height,
        "entries_by_kind": _counts(entries, "kind"),
        "entries_by_status": _counts(entries, "status"),
        "edges": edges.height,
        "edges_trusted": trusted.height,
        "edges_by_type": _counts(edges, "type"),
        "edges_by_source": _counts(edges, "source"),
        "note_coverage": round(with_note.height / edges.height, 4) if edges.height else 0.0,
        "notes_restating_their_target": leaky.select("src", "type", "dst", "reason").to_dicts(),
        "flagged_by_guard": flagged.select("id", "reason").to_dicts(),
        "connected_entries": linked,
        "isolated_entries": entries.height - linked,
        "triples": bank.triples.height,
        "events": bank.events.height,
        "usage_pending": bank.usage.height,
        "embedder": embedder_name(bank),
        "vectors": int(len(entry_vectors(bank)[0])),
        "segments": {t: len(v) for t, v in segments.items()},
        "bytes_on_disk": size,
    })


def format_stats(stats: dict) -> str:
    """A short human-readable report of :func:`bank_stats`."""
    lines = [
        f"bank {stats['path']} (version {stats['version']}, {stats['bytes_on_disk'] / 1e6:.1f} MB)",
        f"  entries  {stats['entries']:>7}  " + ", ".join(f"{k} {v}" for k, v in list(stats["entries_by_kind"].items())[:8]),
        f"  edges    {stats['edges']:>7}  trusted {stats['edges_trusted']}, notes on {stats['note_coverage']:.0%}",
        "           by source: " + ", ".join(f"{k} {v}" for k, v in stats["edges_by_source"].items()),
        "           by type:   " + ", ".join(f"{k} {v}" for k, v in list(stats["edges_by_type"].items())[:10]),
        f"  linked   {stats['connected_entries']:>7}  isolated {stats['isolated_entries']}",
        *([f"  DATA PROBLEM: {len(stats['notes_restating_their_target'])} edge note(s) restate what an end of "
           "their edge says "
           "(a note says how, never what): " + "; ".join(f"{r['src']} {r['type']} {r['dst']} ({r['reason']})"
                                                        for r in stats['notes_restating_their_target'][:5])]
          if stats["notes_restating_their_target"] else []),
        *([f"  GUARD: {len(stats['flagged_by_guard'])} entr(y/ies) read as transient (imported under --guard report): "
           + "; ".join(f"{r['id']} ({r['reason']})" for r in stats['flagged_by_guard'][:3])]
          if stats.get("flagged_by_guard") else []),
        f"  triples  {stats['triples']:>7}  events {stats['events']}  usage pending {stats['usage_pending']}",
        f"  vectors  {stats['vectors']:>7}  embedder {stats['embedder'] or '-'}",
    ]
    return "\n".join(lines)


#: The numbers of :func:`bank_stats` that :func:`stats_many` puts in its frame, one column each.
FLEET_STATS = ("version", "entries", "edges", "edges_trusted", "note_coverage", "connected_entries", "isolated_entries",
               "triples", "events", "vectors", "embedder", "bytes_on_disk")


def _stats_row(bank: Bank) -> pl.DataFrame:
    stats = bank_stats(bank)
    row = {k: stats[k] for k in FLEET_STATS}
    row["kinds"] = len(stats["entries_by_kind"])
    row["notes_restating_their_target"] = len(stats["notes_restating_their_target"])
    row["flagged_by_guard"] = len(stats["flagged_by_guard"])
    return pl.DataFrame([row], schema_overrides={"embedder": pl.String})


def stats_many(banks, *, client=None, scheduler: str | None = None, workers: int | None = None,
               progress=False) -> pl.DataFrame:
    """:func:`bank_stats` of every bank (paths or glob patterns), computed on the workers of
    :func:`kbtools.ops.fleet.map_banks` (a process pool, or dask with ``client`` / ``scheduler``):
    one row per bank with a ``bank`` column, the numbers in :data:`FLEET_STATS`, the count of
    kinds, of notes restating their target and of guard flags, and ``error`` for a bank that failed.

    >>> stats_many(["data/demo/engineering", "data/demo/business"], workers=2)["entries"].to_list()  # doctest: +SKIP
    [1200, 151]
    """
    return map_banks(_stats_row, banks, client=client, scheduler=scheduler, workers=workers, progress=progress)
