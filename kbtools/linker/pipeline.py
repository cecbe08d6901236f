"""The candidates and evidence of a connect's chunks, computed ahead of the sequential linking.

They depend only on the bank as read, never on the links planned so far: ``chunk_evidence`` yields
them chunk after chunk, from this process (the next chunk's index search in a thread) or from worker
processes forked with the bank in memory, the same arrays bit for bit either way.

>>> auto_workers(1, cpus=8), auto_workers(40, cpus=1), auto_workers(40, cpus=2) > 0
(0, 0, True)
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Iterator

import numpy as np

import kbtools.linker.forks as forks
from kbtools.linker.evidence import Relations, candidate_pairs, kernel_parts, pair_evidence, search_neighbours
from kbtools.linker.rules import LinkerSettings
from kbtools.linker.terms import TermStats

__all__ = ["ChunkWork", "chunk_evidence", "auto_workers", "use_kernels", "CHUNK_ROWS", "KERNELS_FROM"]

#: From this many chunks a connect forks worker processes (fewer: the fork costs what they save)
PROCESSES_FROM = 6
#: At most this many worker processes (past a few, the sequential linking is what a connect waits on)
MAX_WORKERS = 8
#: Entries a connect links per chunk with a neighbour index
CHUNK_ROWS = 512
#: From this many chunks a connect runs the compiled loops (``kernels``, with numba installed)
KERNELS_FROM = 40
#: Chunks computed ahead per worker (each holds its pairs' arrays until the linking reads them)
_AHEAD = 2


@dataclass(frozen=True, eq=False)
class ChunkWork:
    """What a chunk's candidates and evidence read."""

    stats: TermStats
    rel: Relations
    open_: np.ndarray
    linked: np.ndarray
    settings: LinkerSettings
    vectors: np.ndarray | None = None
    cosine: object = None
    neighbors: object = None
    eligible: np.ndarray | None = None
    margin: int = 0
    #: the names of the pairs' and of the evidence's arrays a worker process sends back (None: all)
    keep: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    #: whether the processes computing chunks run the compiled loops (``use_kernels``)
    kernels: bool = False

    def search(self, rows: np.ndarray):
        """The neighbour-index search of these rows (None without an index, or where the rows' candidates
        come from the frame's lists)."""
        if self.vectors is None or self.neighbors is None or self.settings.both_ends:
            return None
        return search_neighbours(self.stats, rows, self.vectors, self.neighbors, open_=self.open_, linked=self.linked,
                                 settings=self.settings, eligible=self.eligible)

    def evidence(self, rows: np.ndarray, searched=None) -> tuple[dict, dict]:
        """The rows' candidate pairs and their evidence; ``searched``: ``search(rows)``, done already."""
        if searched is None:
            searched = self.search(rows)
        pairs = candidate_pairs(self.stats, rows, rel=self.rel, open_=self.open_, linked=self.linked,
                                settings=self.settings, vectors=self.vectors, neighbors=self.neighbors,
                                eligible=self.eligible, margin=self.margin, searched=searched, cosine=self.cosine)
        ev = pair_evidence(self.stats, pairs["m"], pairs["c"], rel=self.rel, settings=self.settings,
                           vectors=self.vectors, cosine=self.cosine, known_cos=pairs.get("cos"))
        return pairs, ev

    def prepare(self) -> None:
        """Build what the statistics make lazily and every chunk reads, once, before a fork."""
        st = self.stats
        if len(st.ids):
            st.transposed_parts()
            st.total  # noqa: B018 - read for its cache
            if self.kernels:
                kernel_parts(st)

    def warm(self) -> None:
        """The compiled loops read back, when this connect uses them."""
        if self.kernels:
            import kbtools.linker.kernels as kernels

            kernels.warm()


def use_kernels(chunks: int) -> bool:
    """Whether a connect of this many chunks runs the compiled loops (``KERNELS_FROM``, numba, ``KB_KERNELS``)."""
    if chunks < KERNELS_FROM or os.environ.get("KB_KERNELS", "").strip().lower() == "numpy":
        return False
    return importlib.util.find_spec("numba") is not None


def auto_workers(chunks: int, *, cpus: int | None = None) -> int:
    """Worker processes for a connect of this many chunks: none for a few chunks, on one core, or
    where this process may not fork (``forks.may_fork``); else one per core, at most ``MAX_WORKERS``."""
    if cpus is None:
        cpus = forks.cpus()
    if chunks < PROCESSES_FROM or cpus < 2 or not forks.may_fork():
        return 0
    return min(cpus, MAX_WORKERS)


@contextlib.contextmanager
def chunk_evidence(work: ChunkWork, chunks: list[np.ndarray], *, workers: int = 0,
                   while_waiting=None) -> Iterator[Iterator[tuple[dict, dict]]]:
    """An iterator of ``(pairs, ev)`` per chunk, in order, computed ahead by ``workers`` forked
    processes (0: in this process). A worker that dies hands its chunks back to this process.
    ``while_waiting()`` is called while the next chunk is not ready, as long as it returns True."""
    if workers > 0 and len(chunks) and forks.can_fork():
        work.prepare()
        work.warm()  # the workers start with the compiled loops in memory
        with _forked(work, workers) as pool, contextlib.closing(_from_processes(work, chunks, pool, workers,
                                                                                 while_waiting)) as computed:
            yield computed
        return
    work.warm()
    # closed on leaving: a caller that stops at the last chunk (a zip) leaves the generator open,
    # holding ``while_waiting`` (and what it belongs to) until it is collected
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-link") as ahead, \
            contextlib.closing(_in_process(work, chunks, ahead)) as computed:
        yield computed


def _in_process(work: ChunkWork, chunks, ahead) -> Iterator[tuple[dict, dict]]:
    coming = ahead.submit(work.search, chunks[0]) if chunks else None
    for i, rows in enumerate(chunks):
        searched = coming.result()
        if i + 1 < len(chunks):
            coming = ahead.submit(work.search, chunks[i + 1])
        yield work.evidence(rows, searched)


@contextlib.contextmanager
def _forked(work: ChunkWork, workers: int):
    # fork: the workers start with the bank in memory; they never call polars (a fork drops its threads)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                               initializer=_start_worker, initargs=(work,))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


_WORK: ChunkWork | None = None  #: in a worker process: what its chunks read (given at the fork)


def _start_worker(work: ChunkWork) -> None:
    global _WORK
    _WORK = work
    forks.die_with_parent()
    forks.keep_freed_memory()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's: it stops the pool
    # one thread each, niced: the linking, which the connect waits on, goes first
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    with contextlib.suppress(OSError):
        os.nice(5)
    work.warm()


def _chunk_in_worker(rows: np.ndarray) -> tuple[dict, dict]:
    pairs, ev = _WORK.evidence(rows)
    if _WORK.keep is None:
        return pairs, ev
    pair_names, evidence_names = _WORK.keep
    return {k: pairs[k] for k in pair_names if k in pairs}, {k: ev[k] for k in evidence_names}


def _from_processes(work: ChunkWork, chunks, pool, workers: int, while_waiting=None) -> Iterator[tuple[dict, dict]]:
    pending = collections.deque()
    broken = False
    for i, rows in enumerate(chunks):
        while not broken and len(pending) < workers * _AHEAD and i + len(pending) < len(chunks):
            try:
                pending.append(pool.submit(_chunk_in_worker, chunks[i + len(pending)]))
            except BrokenProcessPool:
                broken = True
        result = None
        if pending:
            busy = while_waiting is not None
            while busy and not pending[0].done():
                busy = while_waiting()
            try:
                result = pending.popleft().result()
            except BrokenProcessPool:
                broken = True
                pending.clear()
        yield result if result is not None else work.evidence(rows)
