"""Usage: which entries queries returned, logged without the writers' lock.

Each process appends ``at<TAB>id<TAB>query_hash`` lines to its own log, ``usage/<host>-<pid>.log``
(an append, never a table rewrite). Once the pending logs are big enough (:meth:`UsageLogs.due`),
a commit claims them (``kb compact`` always): renames them ``*.merging-*``, adds their rows to the
``usage`` table in the same transaction, records the
claimed names in the manifest (``usage_merged``) and then deletes them; a crash in between leaves
names the manifest already counts, which every reader skips. A full compaction folds the usage
table into ``entries.usage_count`` / ``last_used_at``.

>>> import tempfile, pathlib
>>> logs = UsageLogs(pathlib.Path(tempfile.mkdtemp()))
>>> logs.append(["a1b2c3d4"], query="kiln", merged=[], readonly=False)
1
>>> logs.pending["id"].to_list()
['a1b2c3d4']
"""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
import warnings
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from kbtools.model.schema import SCHEMAS, empty
from kbtools.store.segments import project

__all__ = ["UsageLogs", "read_usage_log", "with_pending", "fold_usage", "MERGE_BYTES", "MERGE_LOGS"]


#: a commit merges the pending usage logs once they hold this many bytes (about 800 rows) ...
MERGE_BYTES = 64 * 1024
#: ... or come from this many logs (processes); ``kb compact`` merges them whatever their size
MERGE_LOGS = 8


def read_usage_log(path: Path) -> pl.DataFrame:
    """The rows of one usage log (``at<TAB>id<TAB>query_hash`` lines; a torn last line is skipped)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return empty("usage")
    return _usage_frame([line.split("\t") for line in text.splitlines() if line.count("\t") == 2])


def _usage_frame(rows) -> pl.DataFrame:
    """Usage rows from ``(at, id, query_hash)`` string triples (an unreadable time drops its row)."""
    if not rows:
        return empty("usage")
    at, ids, qh = zip(*rows)
    frame = pl.DataFrame({"at": list(at), "id": list(ids), "query_hash": list(qh)})
    return frame.with_columns(pl.col("at").str.to_datetime(time_zone="UTC", strict=False)
                              .cast(SCHEMAS["usage"]["at"])).drop_nulls("at").select(list(SCHEMAS["usage"]))


class UsageLogs:
    """The usage logs of the bank folder ``root`` not yet merged into its usage table, as one
    open bank sees them: :attr:`pending` holds their rows, read again only when a log changed
    (its name or size) other than by this object's own appends; :attr:`reads` counts those reads.
    An append never reads: other processes' logs are seen at the next :meth:`refresh`. ``merged``,
    in the methods below, is the manifest's ``usage_merged``: the logs its commit already counted."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.signature: tuple = ()
        self._read: pl.DataFrame = empty("usage")
        self._appended: list[tuple[str, str, str]] = []  # this process's rows since the last read
        self._unread: list[str] | None = None  # the merged logs of the refresh whose logs are not read yet
        self.reads = 0
        self.claimed: list[Path] = []
        self._warned = False
        self._log: tuple[int, str] | None = None  # (process id, this process's log path)

    @property
    def pending(self) -> pl.DataFrame:
        """The rows of the pending logs (what was read, then this process's appends); the logs a
        refresh found changed are read here, when first asked for (a query never asks)."""
        if self._unread is not None:  # every pending log as it is now (this process's appends included)
            files = self.files(self._unread)
            self._unread = None
            self._read_logs(files)
        if self._appended:
            self._read = pl.concat([self._read, _usage_frame(self._appended)])
            self._appended = []
        return self._read

    def files(self, merged) -> list[Path]:
        """The pending logs, in name order (symlinks and logs already merged left out)."""
        folder = self.root / "usage"
        if not folder.is_dir() or folder.is_symlink():
            return []
        merged = set(merged)
        return sorted(p for p in folder.iterdir()
                      if (p.suffix == ".log" or ".merging-" in p.name) and p.name not in merged and not p.is_symlink())

    def refresh(self, merged) -> None:
        """Read the pending logs again if any changed since they were last read."""
        files = self.files(merged)
        try:
            sig = tuple((p.name, p.stat().st_size) for p in files)
        except OSError:
            sig = ()
        if sig == self.signature:
            return
        self._unread = list(merged)  # the logs are read by :attr:`pending`, when first asked for
        self._read = empty("usage")
        self._appended = []
        self.signature = sig

    def _read_logs(self, files: list[Path]) -> None:
        try:
            self.signature = tuple((p.name, p.stat().st_size) for p in files)
        except OSError:
            self.signature = ()
        frames = [read_usage_log(p) for p in files]
        self._read = pl.concat(frames) if frames else empty("usage")
        self._appended = []
        self.reads += 1

    def append(self, ids, *, query: str, merged, readonly: bool) -> int:
        """Log ``ids`` as returned by ``query`` in this process's log; nothing on a read-only bank
        or file system (a warning says so once: the caller asked for usage; a query on a bank
        opened read-only does not ask). Returns the rows logged."""
        ids = [i for i in ids if isinstance(i, str)]
        if not ids:
            return 0
        if readonly:
            return self._skipped("the bank is open read-only")
        qhash = hashlib.sha256(query.encode()).hexdigest()[:16]
        at = datetime.now(timezone.utc).isoformat()
        data = "".join(f"{at}\t{i}\t{qhash}\n" for i in ids).encode()
        log = self._log_path()
        try:
            try:
                fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the first log of this bank: its folder is made once
                try:
                    os.mkdir(os.path.dirname(log))
                except FileExistsError:
                    pass
                fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as err:
            return self._skipped(f"{err.strerror or err}")
        # A query neither re-reads nor lists the logs: its rows join the pending rows as they are,
        # and the signature says what this append grew. Other processes' logs are read at the next
        # refresh (a reload), which re-reads everything only when the files differ from it.
        name = os.path.basename(log)
        sizes = dict(self.signature)
        sizes[name] = sizes.get(name, 0) + len(data)
        self.signature = tuple(sorted(sizes.items()))
        self._appended.extend((at, i, qhash) for i in ids)
        return len(ids)

    def _log_path(self) -> str:
        """This process's log, ``usage/<host>-<pid>.log`` (the name kept until the process id changes)."""
        pid = os.getpid()
        held = self._log
        if held is None or held[0] != pid:
            held = self._log = (pid, os.path.join(self.root, "usage", f"{socket.gethostname()}-{pid}.log"))
        return held[1]

    def _skipped(self, why: str) -> int:
        if not self._warned:  # stack: the caller of Bank.log_usage, Bank.log_usage, append, here
            warnings.warn(f"{self.root}: usage not recorded ({why}); queries still answer", stacklevel=4)
            self._warned = True
        return 0

    def due(self) -> bool:
        """Whether the next commit should merge the pending logs (:meth:`claim`): once they hold
        :data:`MERGE_BYTES` or come from :data:`MERGE_LOGS` logs, or a commit left one claimed. Until
        then a write leaves them be (every reader counts them as they are): a write after a few
        queries writes no usage segment of its own."""
        names = [name for name, _ in self.signature]
        return (sum(size for _, size in self.signature) >= MERGE_BYTES or len(names) >= MERGE_LOGS
                or any(".merging-" in name for name in names))

    def claim(self, merged) -> pl.DataFrame | None:
        """Claim every pending log for the commit in flight (renamed, so that no process appends to
        it any more; kept in :attr:`claimed`) and return their rows (None when there is none)."""
        claimed = []
        for p in self.files(merged):
            if ".merging-" in p.name:
                claimed.append(p)
                continue
            target = p.with_name(f"{p.stem}.merging-{uuid.uuid4().hex[:8]}")
            try:
                os.rename(p, target)
            except OSError:
                continue
            claimed.append(target)
        self.claimed = claimed
        if not claimed:
            return None
        return pl.concat([read_usage_log(p) for p in claimed]).select(list(SCHEMAS["usage"]))

    def drop_claimed(self, merged) -> None:
        """Delete the logs the last commit merged (its manifest names them in ``merged``)."""
        for p in self.claimed:
            try:
                p.unlink()
            except OSError:
                pass
        self.claimed = []
        self.refresh(merged)


def with_pending(committed: pl.DataFrame | None, pending: pl.DataFrame, entry_ids: pl.DataFrame) -> pl.DataFrame:
    """The usage table: the ``committed`` rows and the ``pending`` log rows of entries that exist
    (``entry_ids``, a frame with the column ``id``).

    >>> rows = pl.DataFrame({"at": [None], "id": ["a"], "query_hash": ["q"]}).cast(SCHEMAS["usage"])
    >>> with_pending(None, rows, pl.DataFrame({"id": ["b"]})).height
    0
    """
    base = empty("usage") if committed is None else project(committed, SCHEMAS["usage"])
    if pending.height == 0:
        return base
    live = pending.join(entry_ids, on="id", how="semi")
    return pl.concat([base, live.select(list(SCHEMAS["usage"]))], how="vertical_relaxed")


def fold_usage(entries: pl.DataFrame, usage: pl.DataFrame | None) -> pl.DataFrame:
    """``entries`` (the columns of ``kbtools.model.schema.SCHEMAS``) with the rows of ``usage`` counted into
    ``usage_count`` and ``last_used_at``."""
    if usage is None or usage.height == 0:
        return entries
    counts = usage.group_by("id").agg(pl.len().alias("_n"), pl.col("at").max().alias("_last"))
    # only the id and the two usage columns are joined: the other columns stay as they are (a join
    # of the whole frame gathers every column of every row, a write's dearest step at 100k)
    got = entries.select("id", "usage_count", "last_used_at").join(counts, on="id", how="left", maintain_order="left")
    return entries.with_columns((got["usage_count"] + got["_n"].fill_null(0)).alias("usage_count"),
                                pl.max_horizontal(got["last_used_at"], got["_last"]).alias("last_used_at"))
