"""Forked worker processes (``kbtools.linker.forks``): slices spread over real forked processes,
and a statistics build's entity pass read in slices gives the same anchors as in one pass."""

from __future__ import annotations

import multiprocessing
import os
import sys

import numpy as np
import polars as pl
import pytest

from kbtools.demo import synthetic_bank
from kbtools.linker import TermStats, anchors, forks
from kbtools.linker.anchors import anchors_of

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")


def test_balanced_bounds_cut_by_cost_and_keep_every_slice_filled():
    assert forks.balanced_bounds([10, 1, 1, 1, 1, 10], 2) == [0, 3, 6]
    assert forks.balanced_bounds([1] * 10, 3) == [0, 3, 6, 10]
    assert forks.balanced_bounds([100, 1, 1], 3) == [0, 1, 2, 3]  # one long item: still three slices
    assert forks.balanced_bounds([5], 4) == [0, 1]
    assert forks.balanced_bounds([], 2) == [0, 0]
    rng = np.random.default_rng(5)
    for _ in range(50):
        sizes = rng.integers(0, 50, rng.integers(1, 40))
        parts = int(rng.integers(1, 6))
        b = forks.balanced_bounds(sizes, parts)
        assert b[0] == 0 and b[-1] == len(sizes) and len(b) == min(parts, len(sizes)) + 1
        assert all(lo < hi for lo, hi in zip(b[:-1], b[1:]))


def _pid_and_range(lo, hi):
    return os.getpid(), list(range(lo, hi))


@linux
def test_spread_runs_the_later_slices_in_forked_processes_in_order():
    out = forks.spread(_pid_and_range, [0, 2, 5, 9])
    assert [r for _, r in out] == [[0, 1], [2, 3, 4], [5, 6, 7, 8]]
    pids = [p for p, _ in out]
    assert pids[0] == os.getpid() and os.getpid() not in pids[1:]
    # a closure works too: the worker has it from the fork, nothing is pickled on the way there
    seen = {"offset": 100}
    assert forks.spread(lambda lo, hi: [x + seen["offset"] for x in range(lo, hi)], [0, 1, 3]) == [[100], [101, 102]]


def _fails_after_the_first(lo, hi):
    if lo > 0:
        raise ValueError(f"slice {lo}:{hi} failed")
    return lo


@linux
def test_spread_raises_what_a_worker_raised():
    with pytest.raises(ValueError, match="slice 3:6 failed"):
        forks.spread(_fails_after_the_first, [0, 3, 6])


@linux
def test_threads_spreading_at_once_each_run_their_own_job():
    from concurrent.futures import ThreadPoolExecutor

    def spread_with(tag):
        return forks.spread(lambda lo, hi: [(tag, x) for x in range(lo, hi)], [0, 3, 6, 9])

    with ThreadPoolExecutor(4) as threads:
        results = list(threads.map(spread_with, range(12)))
    for tag, out in enumerate(results):
        assert out == [[(tag, x) for x in range(lo, lo + 3)] for lo in (0, 3, 6)]


_PARENT = os.getpid()


def _dies_in_a_worker(lo, hi):
    if os.getpid() != _PARENT:  # a worker killed mid-slice (as by the kernel's out-of-memory killer)
        os.kill(os.getpid(), 9)
    return list(range(lo, hi))


@linux
def test_a_slice_whose_worker_dies_runs_here_and_the_result_is_whole():
    assert forks.spread(_dies_in_a_worker, [0, 2, 4, 7]) == [[0, 1], [2, 3], [4, 5, 6]]


def _may_fork_here():
    return forks.may_fork(), forks.spread(_pid_and_range, [0, 1, 2])


@linux
def test_a_pool_worker_does_not_fork_and_runs_every_slice_itself():
    with multiprocessing.get_context("fork").Pool(1) as pool:
        may, out = pool.apply(_may_fork_here)
    assert may is False
    assert out[0][0] == out[1][0]  # both slices in the pool's worker itself


@linux
def test_keep_freed_memory_is_taken_by_glibc():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:  # in a throwaway process: the test process keeps its own malloc settings
        assert pool.apply(forks.keep_freed_memory) is True


@linux
def test_the_entity_pass_in_slices_gives_the_same_anchors_and_statistics(monkeypatch):
    demo = synthetic_bank(entries=600, seed=4)
    texts = [f"{t or ''} {c or ''}" for t, c in zip(demo.entries["title"].to_list(), demo.entries["content"].to_list())]
    texts[7] = ""  # an empty text keeps its place
    for k in range(3, len(texts), 97):  # entities in every slice: identifiers, names, known ones
        texts[k] += f" Line {k} keeps faulting with error E-{k} in build_index.py; Mara Olsen fixed the kiln."
    knowns = [("kiln",) if k % 3 else () for k in range(len(texts))]
    whole = anchors_of(texts, knowns)
    whole_stats = TermStats.build(demo.entries, known_entities=["oslo"])
    calls = []
    spread = forks.spread
    monkeypatch.setattr(forks, "spread", lambda job, bounds: calls.append(bounds) or spread(job, bounds))
    monkeypatch.setattr(anchors, "_SPREAD_FROM", 0)
    monkeypatch.setattr(forks, "cpus", lambda: 3)
    sliced = anchors_of(texts, knowns)
    assert calls and len(calls[-1]) == 4  # three slices: two of them in forked processes
    assert sliced == whole
    assert sliced[7].terms == () and any(a.entities for a in sliced)
    stats = TermStats.build(demo.entries, known_entities=["oslo"])
    assert len(calls) == 2
    assert stats.vocab == whole_stats.vocab and stats.anchors == whole_stats.anchors
    assert (stats.postings != whole_stats.postings).nnz == 0
    assert pl.Series(stats.df).equals(pl.Series(whole_stats.df))
