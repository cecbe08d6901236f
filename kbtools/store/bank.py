"""The bank: open a bank folder, read its tables as polars frames (a snapshot; ``reload()`` moves
it to the newest version) and commit a transaction (``apply``) or a compaction (``compact``). The
folder and the store's other modules are described in :mod:`kbtools.store`.

Rows of keyed tables (entries, edges, triples) carry ``_seq`` (the manifest version that wrote
them) and ``_deleted`` (a tombstone); the latest version of a key wins. ``events`` and ``usage``
are append-only. ``compact`` folds segments together, so a compacted table is a single Parquet file
any reader can open as is.

>>> import tempfile, pathlib
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "eng")
>>> bank.entries.height, bank.version
(0, 0)
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Callable

import polars as pl

from kbtools.errors import BankDamaged, BankExists, KbError, ReadOnlyBank
from kbtools.model.plan import Plan
from kbtools.model.schema import SCHEMAS, TABLES
from kbtools.store.caches import DerivedValues, carry_caches, fingerprint_of
from kbtools.store.commit import prepare_commit, swap_manifest
from kbtools.store.compaction import full_frames, rewritten, sweep, tail_starts, vector_tail_start
from kbtools.store.files import SeenFiles, atomic_write_bytes, changed_files, inside, manifest_files
from kbtools.store.lock import bank_lock, flock_file, storage_errors
from kbtools.store.manifest import FORMAT, FORMAT_VERSION, SWEEP_AGE_S, parse_manifest, read_manifest, utcnow
from kbtools.store.segments import (EntryIds, TableCache, current_ids, live_rows, missing_ids, new_epoch, project,
                                    read_segments, remember_rows, segment_rows, segments_frame)
from kbtools.store.sidecars import SIDECAR_TABLES, write_sidecars
from kbtools.store.usage import UsageLogs, fold_usage, with_pending
from kbtools.store.vectors import embedder_name, remember_segments
from kbtools.model.config import DEFAULT_EMBEDDER

__all__ = ["Bank", "create_bank", "open_bank", "utcnow", "read_manifest", "flock_file", "FORMAT", "DEFAULT_LOCK_TIMEOUT",
           "SWEEP_AGE_S"]

DEFAULT_LOCK_TIMEOUT = 30.0


class Bank:
    """An open bank: its tables as polars frames (a snapshot; ``reload()`` moves it to the newest
    version) and the means to commit a transaction.

    Use :func:`open_bank` / :func:`create_bank` to get one. Frames returned by the properties are
    never mutated by kbtools. What is read beside the tables takes the bank as its first argument:
    its vectors (:mod:`kbtools.store.vectors`), its cache files (:mod:`kbtools.store.caches`), the
    segment files and growth marks of its tables (:mod:`kbtools.store.segments`).

    >>> import tempfile, pathlib
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> sorted(bank.manifest["tables"])
    ['edges', 'entries', 'events', 'triples', 'usage']
    """

    def __init__(self, path: str | os.PathLike, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, readonly: bool = False):
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.readonly = bool(readonly)
        read_manifest(self.path)
        self._usage = UsageLogs(self.path)
        self._caches: dict[str, TableCache] = {t: TableCache() for t in TABLES}
        self._derived = DerivedValues()
        self._manifest: dict = {}
        self._changed_outside: dict = {}
        self._ids: EntryIds | None = None
        self._seg_rows: dict[str, int] = {}  # rows of the table segments seen (written or counted)
        self._counted: dict[tuple, int] = {}  # rows a table holds, by (table, its segment list), for the repr
        self._safe: set[str] = set()  # segment names checked by ``inside`` (names never change meaning)
        self._checked_files: set[str] = set()  # files found as their commit recorded them (see changed_files)
        self._seen = SeenFiles(self.path, keep=not self.readonly)  # files with other times, same bytes
        self._written: dict[str, pl.DataFrame] = {}  # the segments of the commit in flight
        self._manifest_raw: bytes = b""  # the bytes of manifest.json this snapshot was loaded from
        self._fingerprints: dict[tuple, str] = {}  # fingerprint() of this snapshot, by what it is on
        #: how often the entry-id set was built from the whole id column and grown by appended rows
        self.id_set_counts = {"built": 0, "grown": 0}
        self.reload()

    # -- snapshot ---------------------------------------------------------------------------

    def reload(self) -> "Bank":
        """Move this snapshot to the newest committed version (cheap when nothing changed).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").reload().version
        0
        """
        for attempt in range(5):
            try:
                with open(self.path / "manifest.json", "rb") as fh:
                    raw = fh.read()
                if raw != self._manifest_raw:  # the same bytes: the same version, nothing to do
                    self._load(parse_manifest(self.path, raw))
                    self._manifest_raw = raw
                self._usage.refresh(self._manifest.get("usage_merged", []))
                return self
            except FileNotFoundError as err:
                if attempt == 4:  # still missing: not a sweep racing this read, a damaged bank
                    raise BankDamaged(self.path, self._relative(err.filename), "missing") from None
                time.sleep(0.01 * (attempt + 1))  # a compaction swept a file between our reads
        return self

    def _relative(self, filename) -> str:
        """``filename`` (from an OSError) relative to the bank folder, as a manifest names it."""
        try:
            return Path(filename).relative_to(self.path).as_posix()
        except (TypeError, ValueError):
            return str(filename)

    def _load(self, manifest: dict, changed_outside: dict | None = None) -> None:
        for table in TABLES:
            segs = list(manifest["tables"].get(table, []))
            cache = self._caches[table]
            if cache.frame is None:
                for name in segs:
                    if name not in self._seg_rows and name not in self._safe:
                        inside(self.path, name)  # an unsafe path is refused at open, read or not
                        self._safe.add(name)
                continue  # read when first asked for (:meth:`_frame`): a query never reads events
            if segs == cache.segments:
                continue
            if segs[: len(cache.segments)] == cache.segments:
                todo, frame = segs[len(cache.segments) :], cache.frame
            else:
                todo, frame = segs, None
            frame, appended, keys_kept, change = self._read(table, todo, frame)
            if not appended:
                cache.epoch = new_epoch()
            if not keys_kept:
                cache.key_epoch = new_epoch()
            cache.segments = segs
            cache.moved(frame, change)
        self._manifest = manifest
        self._manifest_raw = b""
        self._fingerprints = {}
        self._changed_outside = (changed_files(self.path, manifest.get("files") or {}, self._checked_files,
                                               self._seen)
                                 if changed_outside is None else changed_outside)

    def _frame(self, table: str) -> pl.DataFrame:
        """The merged rows of ``table`` in this snapshot, read from its segments on first use."""
        cache = self._caches[table]
        if cache.frame is None:
            try:
                segs = list(self._manifest["tables"].get(table, []))
                frame = self._read(table, segs, None)[0]
            except FileNotFoundError:  # swept by a compaction since this snapshot: move on once
                warnings.warn(f"{self.path}: a segment of {table} in version {self.version} was swept by a "
                              "compaction; this snapshot moved to the newest version", stacklevel=3)
                self.reload()
                segs = list(self._manifest["tables"].get(table, []))
                try:
                    frame = self._read(table, segs, None)[0]
                except FileNotFoundError as err:  # named by the newest version too: damage, not a sweep
                    raise BankDamaged(self.path, self._relative(err.filename), "missing") from None
            cache.segments, cache.epoch, cache.key_epoch = segs, new_epoch(), new_epoch()
            cache.moved(frame, None)
        return cache.frame

    def _read(self, table: str, names: list[str], frame: pl.DataFrame | None):
        """:func:`~kbtools.store.segments.read_segments` for this bank (the entry-id set passed
        when it is current for ``frame``)."""
        known = self._ids
        if not (table == "entries" and known is not None and frame is not None
                and known.mark == (self._caches["entries"].key_epoch, frame.height)):
            known = None
        held = self._caches[table].held_rows if frame is not None and frame is self._caches[table].frame else None
        return read_segments(self.path, table, names, frame, written=self._written, ids=known, rows_with=held)

    @property
    def version(self) -> int:
        """The manifest version this snapshot reads (0 for a new bank)."""
        return int(self._manifest.get("version", 0))

    @property
    def settings(self) -> dict:
        """The bank's settings (auto_link, embedder, ...) as of this snapshot."""
        return dict(self._manifest.get("settings", {}))

    @property
    def manifest(self) -> dict:
        """The manifest of this snapshot: the segment files of each table (``"tables"``), the
        vector segments and their embedder (``"vectors"``), the settings, the commit record and the
        files' digests. Read it, never change it (a commit builds the next one)."""
        return self._manifest

    def table(self, name: str) -> pl.DataFrame:
        """One table of this snapshot, with exactly the columns of ``kbtools.model.schema.SCHEMAS``."""
        if name not in SCHEMAS:
            raise KbError(f"unknown table {name!r}: the tables are {', '.join(TABLES)}")
        frame = self._frame(name)
        if name == "entries":
            return self._entries_with_usage(frame)
        if name == "usage":
            return self._all_usage(frame)
        return project(frame, SCHEMAS[name])

    def _entries_with_usage(self, frame: pl.DataFrame) -> pl.DataFrame:
        usage = self.fingerprint(("usage", "usage-log"))
        mark = (self._caches["entries"].epoch, frame.height)

        def build(prior) -> tuple:
            if prior is not None and prior[1] == usage and prior[2][0] == mark[0] and prior[2][1] <= mark[1]:
                # entries only appended since and the same usage (a write): the new rows are folded
                # alone, with the usage of their ids, not the whole table again
                new = project(frame.slice(prior[2][1]), SCHEMAS["entries"])
                grown = pl.concat([prior[0], fold_usage(new, with_pending(self._frame("usage"), self._usage.pending,
                                                                          new.select("id")))])
                return grown.rechunk() if grown.n_chunks() > 64 else grown, usage, mark
            return fold_usage(project(frame, SCHEMAS["entries"]), self._all_usage(self._frame("usage"))), usage, mark

        return self.derived("entries+usage", build, on=("entries", "usage", "usage-log"), grow=True)[0]

    def _all_usage(self, committed: pl.DataFrame | None) -> pl.DataFrame:
        return with_pending(committed, self._usage.pending, self._frame("entries").select("id"))

    @property
    def seen_files(self) -> SeenFiles:
        """The files found with another time than their commit recorded but the same bytes (a bank
        copied by a tool that does not keep times), hashed once and kept in ``cache/``."""
        return self._seen

    @property
    def changed_outside(self) -> dict[str, list]:
        """The files of this snapshot whose size or bytes differ from what their commit recorded
        (rewritten by another tool), as path -> ``[size, mtime_ns]``; empty for a sound bank."""
        return dict(self._changed_outside)

    def fingerprint(self, on: tuple[str, ...] = TABLES) -> str:
        """A short fingerprint of the segments of the named tables (and ``"vectors"``): it changes
        exactly when what they hold changes.

        >>> import tempfile, pathlib
        >>> len(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").fingerprint(("entries",)))
        16
        """
        key = (tuple(on), self._usage.signature if "usage-log" in on else None)
        memo = self._fingerprints.get(key)
        if memo is None:
            memo = self._fingerprints[key] = fingerprint_of(self._manifest, on, usage_signature=self._usage.signature,
                                                            changed_outside=self._changed_outside)
        return memo

    def derived(self, name: str, build: Callable[..., object], *, on: tuple[str, ...] = TABLES,
                grow: bool = False, keep: bool = True) -> object:
        """A value computed from this snapshot, cached in memory until one of the tables it is
        built ``on`` changes (graph views, lookups, indexes and term statistics built by other
        modules). With ``grow=True`` the builder is called with the previous value (``None`` the
        first time), so a cache can be grown on append instead of rebuilt: the public door for
        incremental caches. With ``keep=False`` what the builder returns is not kept (a caller
        reading the previous value, ``build=lambda prior: prior``).

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.derived("n", lambda: bank.entries.height, on=("entries",))
        0
        >>> bank.derived("grown", lambda prev: (prev or 0) + 1, grow=True)
        1
        """
        return self._derived.get(name, self.fingerprint(on), build, grow=grow, keep=keep)

    def require_entries(self, ids, *, where: str = "") -> None:
        """The one existence check: raise :class:`~kbtools.errors.EntryNotFound` naming the first of
        ``ids`` that is not an entry of this snapshot (a ValidationError for a non-string id).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").require_entries(["0badf00d"], where="link")
        Traceback (most recent call last):
        ...
        kbtools.errors.EntryNotFound: link: entry 0badf00d does not exist in this bank
        """
        from kbtools.errors import EntryNotFound, ValidationError

        ids = list(ids)
        for eid in ids:
            if not isinstance(eid, str):
                raise ValidationError("id", eid, "an entry id is a string of 8 hex characters")
        missing = self._missing_entries(ids)
        if missing:
            raise EntryNotFound(missing[0], where)

    def _missing_entries(self, ids: list[str]) -> list[str]:
        """Those of ``ids`` that are not entries, in order."""
        return missing_ids(ids, self._frame("entries")["id"], self._entry_ids)

    def _entry_ids(self) -> EntryIds:
        """The ids of this snapshot's entries, kept across snapshots (see :func:`current_ids`)."""
        frame = self._frame("entries")
        self._ids = current_ids(self._ids, frame["id"], (self._caches["entries"].key_epoch, frame.height),
                                self.id_set_counts)
        return self._ids

    def merged(self, name: str) -> TableCache:
        """The merged rows of table ``name`` in this snapshot as the store keeps them (the keyed
        tables' ``_seq`` and ``_deleted`` included) with their epochs: what
        :func:`~kbtools.store.segments.table_mark`, :func:`~kbtools.store.segments.key_mark` and
        :func:`~kbtools.store.segments.appended_rows` read to grow a cache instead of rebuilding it.
        Read it, never change it.

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").merged("edges").frame.height
        0
        """
        if name not in SCHEMAS:
            raise KbError(f"unknown table {name!r}: the tables are {', '.join(TABLES)}")
        self._frame(name)
        return self._caches[name]

    def has_entry(self, entry_id: str) -> bool:
        """Whether an entry with this id exists in this snapshot (one column scan, no id set built).

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").has_entry("a1b2c3d4")
        False
        """
        return not self._missing_entries([entry_id])

    @property
    def entries(self) -> pl.DataFrame:
        """The entries table (usage from the usage log already counted in)."""
        return self.table("entries")

    @property
    def edges(self) -> pl.DataFrame:
        """The edges table."""
        return self.table("edges")

    @property
    def events(self) -> pl.DataFrame:
        """The append-only events table."""
        return self.table("events")

    @property
    def triples(self) -> pl.DataFrame:
        """The entity triples the linker's bridge signal reads."""
        return self.table("triples")

    @property
    def usage(self) -> pl.DataFrame:
        """The usage log not yet compacted into entries."""
        return self.table("usage")

    def __repr__(self) -> str:
        """The path, version and row counts of entries and edges; counted without reading the
        tables when they are not read yet (only their key columns).

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> repr(bank).endswith("v0: 0 entries, 0 edges>")
        True
        """
        counts = ", ".join(f"{self._rows_held(t)} {t}" for t in ("entries", "edges"))
        return f"<Bank {self.path} v{self.version}: {counts}>"

    def _rows_held(self, table: str) -> int | str:
        """The rows of ``table`` in this snapshot: the read frame's height, else counted from the
        segments (once per segment list), else a word that it is not read yet."""
        names = list(self._manifest["tables"].get(table, []))
        cache = self._caches[table]
        if cache.frame is not None and cache.segments == names:
            return cache.frame.height
        key = (table, tuple(names))
        if key not in self._counted:
            try:
                self._counted[key] = live_rows(self.path, names, table)
            except (OSError, KbError, pl.exceptions.PolarsError, pl.exceptions.PanicException):  # a repr never raises
                return "(not read yet)"
        return self._counted[key]

    # -- usage (append-only logs, one per process; no lock) ----------------------------------

    def log_usage(self, ids, *, query: str = "") -> int:
        """Count ``ids`` as returned by a query: one line each in this process's usage log under
        ``usage/`` (an append, never the writers' lock, never a table rewrite). The next write or
        compaction merges the logs into the usage table. On a read-only bank (or file system)
        nothing is recorded and a warning says so once. Returns the rows recorded.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.log_usage([], query="nothing")
        0
        """
        return self._usage.append(ids, query=query, merged=self._manifest.get("usage_merged", []),
                                  readonly=self.readonly)

    def _repr_html_(self) -> str:
        """A notebook's summary table: path, version, embedder, rows per table (the tables are read)."""
        from kbtools.model.reprs import bank_summary_html

        return bank_summary_html(str(self.path), self.version, {t: self.table(t).height for t in TABLES},
                                 embedder=embedder_name(self))

    # -- writing ----------------------------------------------------------------------------

    @storage_errors  # an OSError (read-only, disk full, a folder as .lock) becomes a StorageError
    def apply(self, plan: "Plan | Callable[[Bank], Plan | None]", *, actor: str | None = None, reason: str | None = None,
              timeout: float | None = None, durable: bool = True) -> "Plan | None":
        """Commit ``plan`` as one transaction (one manifest swap) under the writers' lock.

        ``plan`` is a :class:`~kbtools.model.plan.Plan`, or a planner ``fn(bank) -> Plan`` that is
        run on the newest version under the lock (read, then plan, then apply: what every write
        function does, so that its checks see what it commits over). A planner raises to abort:
        nothing is written. ``actor`` and ``reason`` are kept in the manifest's commit record.
        Returns the plan applied.

        Every commit is atomic (a rename); ``durable=False`` skips the fsyncs, for writes whose loss
        in a power cut is harmless: the bank is then as before or after, never between.

        >>> import tempfile, pathlib
        >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
        >>> bank.apply(Plan(settings={"auto_link": False}), actor="me", reason="quiet").settings
        {'auto_link': False}
        >>> bank.version
        1
        """
        if self.readonly:
            raise ReadOnlyBank(self.path, reason or "write")
        with bank_lock(self.path, self.lock_timeout if timeout is None else timeout, actor):
            self.reload()
            changes = plan(self) if callable(plan) else plan
            if changes is not None and not changes.is_empty():
                logged = self._usage.claim(self._manifest.get("usage_merged", [])) if self._usage.due() else None
                if logged is not None:
                    changes = changes + Plan(appends={"usage": logged})
                self._commit(changes, durable=durable, actor=actor, reason=reason)
                self._usage.drop_claimed(self._manifest.get("usage_merged", []))
            return changes

    def _commit(self, changes: Plan, *, durable: bool = True, actor: str | None = None, reason: str | None = None) -> None:
        prepared = prepare_commit(self.path, self._manifest, changes, actor=actor, reason=reason,
                                  merged_logs=[p.name for p in self._usage.claimed], durable=durable)
        self._seg_rows.update({rel: frame.height for rel, frame in prepared.written.items()})
        self._written = dict(prepared.written)
        try:
            self._swap(prepared.manifest, durable=durable, synced_with=prepared.synced)
        finally:
            self._written = {}
        remember_segments(self, prepared.arrays)
        remember_rows(self, prepared.written)
        starts = tail_starts(self._manifest, self._segment_rows)
        vector_start = vector_tail_start(self._manifest)
        if starts or vector_start is not None:
            self._compact(full=False, starts=starts, vector_start=vector_start)

    def _swap(self, manifest: dict, *, durable: bool = True, synced_with: list[Path] = ()) -> None:
        """Commit ``manifest`` (:func:`~kbtools.store.commit.swap_manifest`) and move this snapshot to it."""
        data = swap_manifest(self.path, self._manifest, manifest, durable=durable, synced_with=synced_with)
        names = set(manifest_files(manifest))
        # the files this commit names anew were just written and recorded: only the others can
        # have been changed outside, and those were checked when this commit re-read the manifest
        self._load(manifest, {k: v for k, v in self._changed_outside.items() if k in names})
        self._manifest_raw = data

    def _segment_rows(self, name: str) -> int:
        """The rows of one table segment (segments never change: read once from the file's footer)."""
        rows = self._seg_rows.get(name)
        if rows is None:
            rows = self._seg_rows[name] = segment_rows(self.path, name)
        return rows

    # -- compaction (see compaction.py) ------------------------------------------------------

    def compact(self, *, timeout: float | None = None, sweep_age: float = SWEEP_AGE_S) -> dict:
        """Fold every table into one segment (tombstones dropped, the usage log folded into
        entries) and the vectors into one segment, sweep unreferenced files, and return what it did.

        >>> import tempfile, pathlib
        >>> create_bank(pathlib.Path(tempfile.mkdtemp()) / "b").compact()["version"]
        1
        """
        with bank_lock(self.path, self.lock_timeout if timeout is None else timeout, "compact"):
            self.reload()
            # the usage logged since the last commit is committed first, as a write would, so that
            # the compaction folds it in once and no log of it stays pending to be counted again
            logged = self._usage.claim(self._manifest.get("usage_merged", []))
            if logged is not None:
                self._commit(Plan(appends={"usage": logged}), actor="compact",
                             reason="usage logged since the last commit")
                self._usage.drop_claimed(self._manifest.get("usage_merged", []))
            return self._compact(full=True, sweep_age=sweep_age)

    def _compact(self, *, full: bool, sweep_age: float = SWEEP_AGE_S, starts: dict[str, int] | None = None,
                 vector_start: int | None = None) -> dict:
        frames = None
        if full:
            frames = {t: self._frame(t) for t in TABLES}
            frames = full_frames(frames, self.table("entries") if frames["usage"].height else None, self.version + 1)
        folded = {t: list(self._manifest["tables"][t][start:]) for t, start in (starts or {}).items()}
        arrays: dict = {}  # a vector tail merge's arrays: this process reads none of them back
        merged: dict = {}  # and the rows of a tail merge's segments
        manifest, report = rewritten(self, frames=frames, starts=starts, seg_rows=self._seg_rows,
                                     vector_start=vector_start, arrays=arrays, written=merged,
                                     read=None if full else lambda table, names: segments_frame(self, table, names))
        if full:  # before the commit: a reader of the new version finds its base segments' sidecars
            report["sidecars"] = write_sidecars(self, {t: (manifest["tables"][t][0], frames[t]) for t in SIDECAR_TABLES
                                                       if frames.get(t) is not None and manifest["tables"].get(t)},
                                                (manifest.get("vectors") or {}).get("segments", []))
        # a rewrite cannot be applied incrementally: drop the merged frames. Derived values stay: the
        # content is unchanged, and each one is rebuilt (or grown from its predecessor) when next asked
        for table in report["tables"]:
            if full:
                self._caches[table] = TableCache()
            elif self._caches[table].frame is not None:
                # a tail merge rewrites files, not rows: the merged frame stays as it is
                self._caches[table].segments = list(manifest["tables"][table])
        if not full:  # a tail merge: its segment holds the rows of those it folded (said before the swap,
            # so that the rows of theirs this process holds are kept with it)
            remember_rows(self, merged, {manifest["tables"][t][-1]: names for t, names in folded.items()
                                         if len(manifest["tables"][t]) == starts[t] + 1 and t in _SEEN_THROUGH})
        self._swap(manifest)
        remember_segments(self, arrays)
        folded = report.get("vectors", {}).pop("folded", None)
        if folded:  # after the commit: a crash before leaves the caches to be rebuilt, as before
            report["vectors"]["caches_kept"] = carry_caches(self, folded, manifest["vectors"]["segments"][0]["data"])
        report["swept"] = sweep(self.path, self._manifest, sweep_age)
        return report


#: the tables whose readers build on the segments themselves (see ``segments.segment_names``): a tail
#: merge of this process is seen through for them (the folded segments' rows stay held with it)
_SEEN_THROUGH = ("entries", "edges")


def create_bank(path: str | os.PathLike, *, settings: dict | None = None,
                embedder: str | None = DEFAULT_EMBEDDER) -> Bank:
    """Create a new, empty bank folder and open it; an error if a bank (or anything) is there.

    The bank records ``embedder`` in its settings (the default MiniLM model unless told): every
    write then embeds what it adds in its own transaction, so a query answers from the first
    entry on. ``embedder=None`` records none: writes store no vectors until ``kb embed`` (for a
    bank filled by a bulk import and embedded afterwards, or with another embedder).

    >>> import tempfile, pathlib
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "new")
    >>> bank.entries.height, bank.settings["embedder"]
    (0, 'minilm-int8')
    """
    root = Path(path)
    if (root / "bank.json").exists():
        raise BankExists(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise BankExists(root, "the path exists and is not an empty folder")
    root.mkdir(parents=True, exist_ok=True)
    for table in TABLES:
        (root / "tables" / table).mkdir(parents=True, exist_ok=True)
    base_settings = {"auto_link": True, **({"embedder": embedder} if embedder else {})}
    base_settings.update(settings or {})
    if base_settings.get("embedder") is None:
        base_settings.pop("embedder", None)
    manifest = {"version": 0, "tables": {t: [] for t in TABLES}, "settings": base_settings, "vectors": {}}
    atomic_write_bytes(root / "manifest.json", json.dumps(manifest, indent=1).encode())
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "created_at": utcnow().isoformat()}
    atomic_write_bytes(root / "bank.json", json.dumps(meta, indent=1).encode())
    return Bank(root)


def open_bank(path: str | os.PathLike, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, readonly: bool = False) -> Bank:
    """Open an existing bank; an error naming the path when it is not one. With ``readonly=True``
    nothing is ever written: writes raise ``ReadOnlyBank``, usage is not recorded, caches are
    built in memory only.

    >>> open_bank("/nonexistent/bank")
    Traceback (most recent call last):
    ...
    kbtools.errors.NotABank: /nonexistent/bank is not a kbtools bank: the folder does not exist
    """
    if isinstance(path, Bank):
        return path
    return Bank(path, lock_timeout=lock_timeout, readonly=readonly)

