"""repair_bank: bring a damaged bank back to the newest kept version whose files are all whole,
and say what that loses.

A commit keeps a copy of its manifest under ``manifests/`` (the last
:data:`~kbtools.store.files.KEEP_MANIFESTS`). Repair reads the current manifest and the kept
ones, takes the newest whose every file is whole (present, unchanged since its commit, loadable:
:func:`~kbtools.store.check.version_problems`) and, when that is not the current one, commits it
again as a new version. Everything committed up to that version is kept as it was; the report
names each commit after it (version, actor, reason, time) and, from the files those commits
wrote that still read (their entries, edges and events), the entries and edges they added that
are gone. The derived caches under ``cache/`` are removed (each is rebuilt the first time it is
needed) and so are the temp files of crashed writes.

>>> import tempfile, pathlib
>>> from kbtools.model.plan import Plan
>>> from kbtools.store.bank import create_bank
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
>>> _ = bank.apply(Plan(settings={"auto_link": False}), actor="me", reason="quiet")
>>> _ = (bank.path / "manifest.json").write_text("{")
>>> r = repair_bank(bank.path)
>>> r["damaged"], r["rolled_back_to"], r["version"], r["dropped_commits"]
(['manifest.json: not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)'], 1, 2, [])
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import datetime
from pathlib import Path

import polars as pl

from kbtools.errors import BankDamaged, BankUnrepairable, KbError
from kbtools.store.bank import DEFAULT_LOCK_TIMEOUT, Bank, read_manifest
from kbtools.store.check import version_problems
from kbtools.store.files import atomic_write_bytes, history, temp_files, write_history
from kbtools.store.lock import bank_lock
from kbtools.store.manifest import stamp
from kbtools.store.segments import DELETED, SEQ, latest_in_first_order, read_segment, read_segments

__all__ = ["repair_bank"]

#: what a repair does with the derived caches (said in its report)
CACHES = "removed: each is rebuilt the first time it is needed"


def repair_bank(bank_or_path: Bank | str | os.PathLike, *, dry_run: bool = False,
                timeout: float = DEFAULT_LOCK_TIMEOUT) -> dict:
    """Bring a damaged bank back to the newest committed version whose files are all whole.

    Takes a :class:`~kbtools.store.bank.Bank` or a path, as :func:`~kbtools.store.check.check_bank`
    does. Under the writers' lock: picks the newest whole version among the current manifest and
    the kept ones (``manifests/``); when that is not the current one, commits it again as a new
    version; removes the derived caches (rebuilt when next needed) and the temp files of crashed
    writes. An open Bank passed in is moved to the repaired version. With ``dry_run`` nothing is
    written: the report says what would be done.

    Returns a report: ``damaged`` (what is wrong with the current version), ``rolled_back_to``
    (the version restored, None when the current one is whole), ``version`` (the version the
    repair committed), ``dropped_commits`` (version, actor, reason, committed_at of each commit
    lost), ``lost`` (the ``entries`` (id, title) and ``edges`` (src, dst, type) those commits
    added that the restored version does not hold, and the files of theirs that could not be read
    (``unread``), so what they held is known only from the events), ``caches_removed``,
    ``temp_files_removed``, ``caches`` and ``dry_run``.

    Raises :class:`~kbtools.errors.BankUnrepairable` when no kept version is whole (restore the
    bank from a copy), :class:`~kbtools.errors.NotABank` when the path is not a bank.
    """
    bank = bank_or_path if isinstance(bank_or_path, Bank) else None
    root = bank.path if bank is not None else Path(bank_or_path)
    try:
        current, damaged = read_manifest(root), []
    except BankDamaged as err:  # still a bank (bank.json says so); its kept manifests may be whole
        current, damaged = None, [f"{err.file}: {err.why}"]
    held = contextlib.nullcontext() if dry_run else bank_lock(root, timeout, "repair")
    with held:
        if current is not None and not dry_run:
            current = read_manifest(root)  # under the lock: the newest commit
        candidates = ([current] if current is not None else []) + history(root)
        if current is not None:
            damaged = [str(p) for p in _problems(root, current)]
        chosen = current if current is not None and not damaged else \
            next((m for m in candidates if m is not current and not _problems(root, m)), None)
        if chosen is None:
            raise BankUnrepairable(root, len(candidates))
        rolled_back = chosen is not current
        after = _version(chosen)
        dropped = [m for m in candidates if _version(m) > after] if rolled_back else []
        by_version = {_version(m): m for m in reversed(dropped)}  # the current manifest wins a tie
        report = {
            "bank": str(root), "damaged": damaged, "rolled_back_to": after if rolled_back else None,
            "version": None,
            "dropped_commits": [{"version": v, "committed_at": m.get("committed_at"),
                                 "actor": (m.get("commit") or {}).get("actor"),
                                 "reason": (m.get("commit") or {}).get("reason")}
                                for v, m in sorted(by_version.items())],
            "lost": _lost(root, chosen, list(by_version.values())),
            "caches_removed": 0, "temp_files_removed": 0, "caches": CACHES, "dry_run": dry_run,
        }
        temps, caches = temp_files(root), _cache_files(root)
        report["temp_files_removed"], report["caches_removed"] = len(temps), len(caches)
        if dry_run:
            return report
        if rolled_back:
            latest = max(_version(m) for m in candidates)
            manifest = stamp(json.loads(json.dumps(chosen)), latest + 1, actor="repair",
                             reason=f"rolled back to version {after}, the newest whose files are all whole")
            data = json.dumps(manifest, separators=(",", ":")).encode()
            atomic_write_bytes(root / "manifest.json", data)
            write_history(root, manifest, data)
            report["version"] = manifest["version"]
        for f in temps + caches:
            f.unlink(missing_ok=True)
    if bank is not None:
        bank.reload()
    return report


def _version(manifest: dict) -> int:
    try:
        return int(manifest.get("version", 0))
    except (TypeError, ValueError):
        return -1


def _problems(root: Path, manifest: dict) -> list:
    """:func:`version_problems`, and a manifest too malformed to be looked at is one problem."""
    try:
        return version_problems(root, manifest)
    except (KbError, TypeError, ValueError, AttributeError, KeyError) as err:
        return [f"manifest version {manifest.get('version')}: malformed ({err})"]


def _cache_files(root: Path) -> list[Path]:
    folder = root / "cache"
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())


def _lost(root: Path, chosen: dict, dropped: list[dict]) -> dict:
    """The entries and edges the ``dropped`` manifests' commits added that ``chosen`` does not
    hold: read from the table segments they wrote, and from their events where a segment does
    not read (the damaged one, most often); the files that could not be read."""
    unread: list[str] = []

    def dropped_rows(table: str) -> pl.DataFrame | None:
        kept = set(chosen["tables"].get(table, []))
        names = sorted({n for m in dropped for n in (m.get("tables") or {}).get(table, []) or []
                        if isinstance(n, str) and n not in kept})  # version-first names: oldest first
        parts = []
        for name in names:
            try:
                parts.append(read_segment(root, table, name))
            except (KbError, FileNotFoundError):
                unread.append(name)
        return pl.concat(parts, how="diagonal_relaxed") if parts else None

    def restored(table: str) -> pl.DataFrame:
        return read_segments(root, table, list(chosen["tables"].get(table, [])), None, written={})[0]

    if not dropped:
        return {"entries": [], "edges": [], "unread": []}
    entry_ids = set(restored("entries")["id"].to_list())
    edge_keys = set(restored("edges").select("src", "dst", "type").iter_rows())
    entries, edges, gone = {}, {}, set()
    rows = dropped_rows("entries")
    if rows is not None:
        for row in latest_in_first_order(rows.sort(SEQ, maintain_order=True), ["id"]).iter_rows(named=True):
            if row[DELETED]:
                gone.add(row["id"])
            elif row["id"] not in entry_ids:
                entries[row["id"]] = row["title"]
    rows = dropped_rows("edges")
    if rows is not None:
        for row in latest_in_first_order(rows.sort(SEQ, maintain_order=True), ["src", "dst", "type"]).iter_rows(named=True):
            key = (row["src"], row["dst"], row["type"])
            if row[DELETED]:
                gone.add(key)
            elif key not in edge_keys:
                edges[key] = True
    events = dropped_rows("events")
    if events is not None:
        since = _time(chosen.get("committed_at"))
        if since is not None:
            events = events.filter(pl.col("at") > since)
        for row in events.sort("at", maintain_order=True).iter_rows(named=True):
            action = row["action"] or ""
            if action in ("entry.create", "entry.split") and row["src"]:
                if row["src"] not in entry_ids and row["src"] not in gone:
                    entries.setdefault(row["src"], _title(row["payload"]))
            elif action in ("entry.delete", "entry.merge"):
                entries.pop(row["src"], None)
            elif action.startswith("edge.") and row["src"] and row["dst"] and row["type"]:
                key = (row["src"], row["dst"], row["type"])
                if action == "edge.delete":
                    edges.pop(key, None)
                elif key not in edge_keys and key not in gone:
                    edges[key] = True
    return {"entries": [{"id": i, "title": t} for i, t in entries.items()],
            "edges": [{"src": s, "dst": d, "type": t} for s, d, t in edges],
            "unread": sorted(set(unread))}


def _time(text) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _title(payload) -> str | None:
    try:
        value = json.loads(payload or "{}")
    except ValueError:
        return None
    return value.get("title") if isinstance(value, dict) else None
