"""The writers' lock, portable: ``fcntl.flock`` where the platform has it, else the ``filelock``
package (``msvcrt`` on Windows); and the one place that turns an ``OSError`` of a commit into a
:class:`~kbtools.errors.StorageError`.

The flock backend writes the holder's text ("pid 41 on host (kb connect) since ...") into the lock
file itself; the portable backend cannot (Windows forbids reading a locked file), so it writes it
to a sidecar ``<lock>.holder``. Either way a waiter that gives up names the holder. The kernel
drops both kinds of lock when the holding process dies. ``KBTOOLS_LOCK=portable`` forces the
portable backend (the tests run the lock code through it on Linux).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / ".lock"
>>> with flock_file(path, timeout=1, actor="me", busy=RuntimeError):
...     "for me" in holder_text(path)
True
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from kbtools.errors import BankLocked, KbError, StorageError

try:  # not on Windows: ``import kbtools`` must work there all the same
    import fcntl
except ImportError:  # pragma: no cover - exercised by forcing the portable backend
    fcntl = None  # type: ignore[assignment]

__all__ = ["bank_lock", "flock_file", "lock_backend", "holder_text", "storage_errors", "fsync_dir", "fsync_paths", "in_parallel"]


def lock_backend() -> str:
    """``"flock"`` or ``"portable"``: the backend :func:`flock_file` uses in this process.

    >>> lock_backend() in ("flock", "portable")
    True
    """
    if fcntl is None or os.environ.get("KBTOOLS_LOCK", "").lower() == "portable":
        return "portable"
    return "flock"


def _holder(actor: str | None) -> str:
    cmd = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv[:3]))
    since = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    who = f"pid {os.getpid()} on {socket.gethostname()} ({cmd or 'python'})"
    if actor:
        who += f" for {actor}"
    return f"{who} since {since}"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".holder")


def holder_text(path: str | os.PathLike) -> str:
    """The text the current (or last) holder of the lock at ``path`` left ("" when none)."""
    path = Path(path)
    for where in (_sidecar(path), path) if lock_backend() == "portable" else (path, _sidecar(path)):
        try:
            text = where.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text:
            return text
    return ""


@contextlib.contextmanager
def flock_file(path: Path, *, timeout: float, actor: str | None, busy: Callable[[str], Exception]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (the holder's text beside it while held), waiting up to
    ``timeout`` seconds; past that, raise ``busy(holder)``. The kernel drops the lock when the
    process dies, so a killed holder never leaves the bank locked."""
    path = Path(path)
    if lock_backend() == "portable":
        with _portable(path, timeout=timeout, actor=actor, busy=busy):
            yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + max(timeout, 0.0)
    delay = 0.002
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as err:
                if err.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    try:
                        holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "another process"
                    except OSError:
                        holder = "another process"
                    raise busy(holder) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
        os.ftruncate(fd, 0)
        os.pwrite(fd, _holder(actor).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def bank_lock(root: Path, timeout: float, actor: str | None):
    """The writers' lock of the bank at ``root`` (its ``.lock`` file): held by every commit,
    compaction and repair; a waiter that gives up raises :class:`~kbtools.errors.BankLocked`
    naming the holder."""
    root = Path(root)
    return flock_file(root / ".lock", timeout=timeout, actor=actor,
                      busy=lambda holder: BankLocked(root, timeout, holder))


@contextlib.contextmanager
def _portable(path: Path, *, timeout: float, actor: str | None, busy: Callable[[str], Exception]) -> Iterator[None]:
    import filelock

    if path.is_dir():  # filelock would wait out the timeout on a folder; say what is wrong at once
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    # an OS lock (msvcrt on Windows, flock elsewhere) is kept as a file; the last resort, a soft lock
    # (a marker file, where the platform has neither), releases by deleting it
    keep = {} if filelock.FileLock is filelock.SoftFileLock else {"preserve_lock_file": True}
    lock = filelock.FileLock(str(path), thread_local=False, **keep)
    try:
        lock.acquire(timeout=max(timeout, 0.0), poll_interval=0.005)
    except filelock.Timeout:
        raise busy(holder_text(path) or "another process") from None
    sidecar = _sidecar(path)
    try:
        sidecar.write_text(_holder(actor), encoding="utf-8")
        yield
    finally:
        with contextlib.suppress(OSError):
            sidecar.write_text("", encoding="utf-8")
        lock.release()


_SYNC_POOL: tuple | None = None  # (pid, executor): a forked child makes its own (threads do not fork)


def fsync_paths(paths) -> None:
    """fsync every file and folder in ``paths`` at once (a thread each, joined before returning;
    a folder is skipped where folders cannot be opened). Concurrent fsyncs share the file system's
    journal commits: five files cost about one fsync instead of five, more so on a busy disk. Raises
    the first OSError after all have finished.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "a").write_text("x")
    >>> fsync_paths([d / "a", d])
    """
    paths = [Path(p) for p in paths if os.name != "nt" or not Path(p).is_dir()]
    in_parallel([functools.partial(_fsync_one, p) for p in paths])


def in_parallel(calls: list[Callable[[], object]]) -> list:
    """Run ``calls`` at once (the last in this thread, the others in a pool of threads) and return
    their results in order; the first exception is raised after all have finished. For file work
    that waits on the disk or releases the GIL (a segment's encoding, an fsync).

    >>> in_parallel([lambda: 1, lambda: 2])
    [1, 2]
    """
    global _SYNC_POOL
    if len(calls) <= 1:
        return [call() for call in calls]
    if _SYNC_POOL is None or _SYNC_POOL[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _SYNC_POOL = (os.getpid(), ThreadPoolExecutor(max_workers=8, thread_name_prefix="kb-files"))
    futures = [_SYNC_POOL[1].submit(call) for call in calls[:-1]]
    try:
        last, last_error = calls[-1](), None
    except Exception as err:  # noqa: BLE001 - raised once the others have finished
        last, last_error = None, err
    errors = [f.exception() for f in futures] + [last_error]
    for err in errors:
        if err is not None:
            raise err
    return [f.result() for f in futures] + [last]


def _fsync_one(path: Path) -> None:
    # a file is opened for writing (Windows flushes only a handle that may write), a folder for reading
    fd = os.open(path, os.O_RDONLY if path.is_dir() else os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (fsync of the folder); a no-op where folders cannot be
    opened (Windows), whose renames are already journaled by NTFS."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_OS_ERROR_IN_TEXT = re.compile(r"\(os error (\d+)\)")


def storage_errors(method):
    """Decorate a ``Bank`` method so that an ``OSError`` (or polars' wrapped I/O error) it raises
    becomes a :class:`~kbtools.errors.StorageError` naming the path and the errno; a
    :class:`~kbtools.errors.KbError` passes through unchanged."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except KbError:
            raise
        except OSError as err:
            raise StorageError(err.filename or self.path, err.errno, err.strerror or str(err)) from err
        except Exception as err:  # polars reports a failed write as ComputeError("... (os error 28)")
            found = _OS_ERROR_IN_TEXT.search(str(err))
            if found is None:
                raise
            code = int(found.group(1))
            raise StorageError(self.path, code, os.strerror(code)) from err

    return wrapper
