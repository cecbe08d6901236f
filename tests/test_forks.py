"""Forked worker processes (``kbtools.linker.forks``): who may fork, and glibc keeping a worker's freed memory."""

from __future__ import annotations

import multiprocessing
import sys

import pytest

from kbtools.linker import forks

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")


def _may_fork_here():
    return forks.may_fork()


@linux
def test_a_pool_worker_may_not_fork():
    assert forks.may_fork() is True
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(_may_fork_here) is False


@linux
def test_keep_freed_memory_is_taken_by_glibc():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:  # in a throwaway process: the test process keeps its own malloc settings
        assert pool.apply(forks.keep_freed_memory) is True
