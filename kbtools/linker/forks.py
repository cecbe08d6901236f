"""Worker processes forked with the bank already in memory (Linux only): a big connect's chunk
workers (``pipeline``). A forked worker never runs polars, whose threads a fork does not copy.

>>> cpus() >= 1
True
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys

__all__ = ["cpus", "can_fork", "may_fork", "die_with_parent", "keep_freed_memory"]


def cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether this process can fork workers: Linux, and not itself a daemonic pool worker (which
    may not start processes)."""
    return (sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon)


def may_fork() -> bool:
    """``can_fork`` and not itself any pool's worker: a fleet of banks spreads its banks over the
    cores already."""
    return can_fork() and multiprocessing.parent_process() is None


_PR_SET_PDEATHSIG = 1  #: prctl(2)


def die_with_parent() -> None:
    """Ask Linux to kill this worker when the process that forked it ends (else it would wait for ever)."""
    parent = multiprocessing.parent_process()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the pool's own checks remain
        return
    if parent is not None and os.getppid() != parent.pid:  # it ended before the request
        os._exit(1)


#: glibc's mallopt(3) parameters
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Blocks up to this size come from the heap and stay there when freed (a dense block of scores is 16 MB)
_KEPT_BLOCK = 256 << 20


def keep_freed_memory() -> bool:
    """Ask glibc (mallopt) to serve blocks up to ``_KEPT_BLOCK`` from the heap and keep freed memory:
    a worker that allocates the same large arrays chunk after chunk then faults its pages in once.
    Returns whether glibc took it (False elsewhere)."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _KEPT_BLOCK)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2 * _KEPT_BLOCK))
    except (OSError, AttributeError):  # not glibc
        return False
