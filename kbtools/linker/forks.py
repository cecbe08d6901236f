"""Worker processes forked with what they read already in memory (Linux only): a big connect's
chunk workers (``pipeline``) and a big statistics build's entity pass (``anchors``).

Fork, not spawn: a worker starts with the statistics, vectors and texts in memory (shared until
written) instead of importing and reading them again. A forked worker runs numpy, scipy, faiss or
plain Python only, never polars, whose threads a fork does not copy.

>>> spread(lambda lo, hi: list(range(lo, hi)), [0, 5])
[[0, 1, 2, 3, 4]]
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, TypeVar

import numpy as np

__all__ = ["cpus", "can_fork", "may_fork", "die_with_parent", "keep_freed_memory", "balanced_bounds", "spread"]

T = TypeVar("T")


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
    """Ask Linux to kill this worker when the process that forked it ends (killed, out of memory, a
    scheduler's SIGTERM): else the worker would wait on its queue for ever, holding its copy of the
    bank's pages."""
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
    """In a worker that allocates and frees the same large arrays chunk after chunk: ask glibc to
    serve blocks up to ``_KEPT_BLOCK`` from the heap and to keep freed memory (mallopt), instead
    of mapping fresh zeroed pages for each large array and returning them when it is freed. The
    pages are then faulted in once, not once per chunk, which cuts a whole-bank connect's page
    faults and system time about tenfold (docs/performance.md). The worker's memory stays at its
    peak until it ends. Returns whether glibc took it (False elsewhere)."""
    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _KEPT_BLOCK)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2 * _KEPT_BLOCK))
    except (OSError, AttributeError):  # not glibc
        return False


_JOB: Callable | None = None  #: in a forked worker of ``spread``: the function its slices run


def _slice(lo: int, hi: int):
    return _JOB(lo, hi)


def _start_slice_worker(job: Callable) -> None:
    global _JOB
    _JOB = job  # given at the fork (never pickled): each worker has its own call's job
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's


def balanced_bounds(sizes, parts: int) -> list[int]:
    """Bounds of ``parts`` slices of the items (``sizes``: their costs, such as text lengths) of
    about equal total cost, each of one item or more.

    >>> balanced_bounds([10, 1, 1, 1, 1, 10], 2), balanced_bounds([1, 1], 4)
    ([0, 3, 6], [0, 1, 2])
    """
    sizes = np.asarray(sizes, np.float64)
    n = len(sizes)
    parts = max(1, min(parts, n))
    ends = np.cumsum(sizes)
    cuts = np.searchsorted(ends, ends[-1] * np.arange(1, parts) / parts, side="right") if n else []
    bounds = [0]
    for k, cut in enumerate(np.asarray(cuts, np.int64).tolist(), start=1):
        bounds.append(min(max(cut, bounds[-1] + 1), n - (parts - k)))  # every slice keeps one item at least
    return bounds + [n]


def spread(job: Callable[[int, int], T], bounds: list[int]) -> list[T]:
    """``[job(lo, hi) for each slice bounds[k]:bounds[k + 1]]``, in order: the first slice in this
    process, the others in forked worker processes at the same time (``job`` need not pickle: a
    worker has it from the fork; what it returns is pickled back). One slice, or where this process
    may not fork (``may_fork``): all slices here, one after another. Where the fork fails (no
    processes left) or a worker dies (killed, out of memory), its slices run here: the result is
    the same. What ``job`` raises in a worker is raised here."""
    slices = list(zip(bounds[:-1], bounds[1:]))
    if len(slices) <= 1 or not may_fork():
        return [job(lo, hi) for lo, hi in slices]
    # the job goes to the workers as the pool's initializer argument, copied by the fork: two
    # threads spreading at once each fork their own job
    with ProcessPoolExecutor(max_workers=len(slices) - 1, mp_context=multiprocessing.get_context("fork"),
                             initializer=_start_slice_worker, initargs=(job,)) as pool:
        try:
            later = [pool.submit(_slice, lo, hi) for lo, hi in slices[1:]]
        except (OSError, BrokenProcessPool):  # the fork failed: every slice here
            return [job(lo, hi) for lo, hi in slices]
        out = [job(*slices[0])]
        for (lo, hi), future in zip(slices[1:], later):
            try:
                out.append(future.result())
            except BrokenProcessPool:  # its worker died: the slice here
                out.append(job(lo, hi))
        return out
