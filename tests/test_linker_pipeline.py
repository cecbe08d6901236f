"""A connect's chunks computed ahead (``kbtools.linker.pipeline``): worker processes give the plan
computed in one process, a worker that dies hands its chunks back, and nothing is left running."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os

import faiss
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from kbtools.demo import synthetic_bank
from kbtools.evaluate.bench import text_vectors
from kbtools.linker import TermStats, plan_connect
from kbtools.linker.pipeline import ChunkWork, auto_workers, chunk_evidence
from kbtools.linker.planning import PlanContext
from kbtools.linker.rules import LINKER_DEFAULTS
from kbtools.model.schema import SCHEMAS

NOW = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
fork_only = pytest.mark.skipif(not auto_workers(10, cpus=2), reason="worker processes are forked on Linux only")


@pytest.fixture(scope="module")
def bank():
    demo = synthetic_bank(entries=2_500, seed=5)
    entries = demo.entries.with_columns(pl.lit(None).cast(SCHEMAS["entries"]["linked_at"]).alias("linked_at"))
    vectors = text_vectors(entries)
    index = faiss.IndexHNSWFlat(vectors.shape[1], 16, faiss.METRIC_INNER_PRODUCT)  # approximate: order matters
    index.add(vectors)
    return entries, demo.edges, demo.triples, vectors, index, TermStats.build(entries)


def _work(bank, cls=ChunkWork):
    entries, edges, triples, vectors, index, stats = bank
    ctx = PlanContext.open(entries, edges, triples, stats, LINKER_DEFAULTS, NOW, vectors, None, index)
    rows = np.argsort(stats.rank, kind="stable")[:1_200]
    work = cls(stats, ctx.rel, ctx.open_, ctx.linked, LINKER_DEFAULTS, vectors=vectors, neighbors=index,
               eligible=ctx.eligible())
    return work, [rows[i : i + 200] for i in range(0, len(rows), 200)]


class _DiesOnThirdChunk(ChunkWork):
    """A worker computing the third chunk exits at once, as one killed for memory would."""

    def evidence(self, rows, searched=None):
        if multiprocessing.parent_process() is not None and rows[0] == self.stats._cache["third chunk"]:
            os._exit(3)
        return super().evidence(rows, searched)


def _same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key], equal_nan=a[key].dtype.kind == "f"), key


@fork_only
def test_a_dead_worker_hands_its_chunks_back(bank):
    work, chunks = _work(bank, _DiesOnThirdChunk)
    work.stats._cache["third chunk"] = chunks[2][0]
    try:
        with chunk_evidence(work, chunks, workers=2) as computed:
            got = list(computed)
        with chunk_evidence(work, chunks, workers=0) as computed:
            want = list(computed)
    finally:
        del work.stats._cache["third chunk"]
    assert len(got) == len(want) == len(chunks)
    for (pairs, ev), (pairs2, ev2) in zip(got, want):
        _same(pairs, pairs2)
        _same(ev, ev2)
    assert not multiprocessing.active_children()


@fork_only
def test_leaving_early_stops_the_workers(bank):
    work, chunks = _work(bank)
    with pytest.raises(RuntimeError, match="stop"):
        with chunk_evidence(work, chunks, workers=2) as computed:
            for i, _ in enumerate(computed):
                if i == 1:
                    raise RuntimeError("stop")
    assert not multiprocessing.active_children()


def test_workers_only_for_a_big_connect_on_several_cores():
    assert auto_workers(4, cpus=8) == 0  # a fork costs what four chunks gain (2,000 entries: a connect job's transaction)
    assert auto_workers(100, cpus=1) == 0
    if auto_workers(100, cpus=2):  # Linux
        assert auto_workers(100, cpus=2) == 2 and auto_workers(100, cpus=64) == 8


@fork_only
def test_the_linking_works_while_it_waits_for_the_workers(bank):
    work, chunks = _work(bank)
    calls = []

    def more() -> bool:  # what the linking does meanwhile (a connect writes evidence texts)
        calls.append(1)
        return len(calls) < 3

    with chunk_evidence(work, chunks, workers=2, while_waiting=more) as computed:
        assert len(list(computed)) == len(chunks)
    # called while the first chunk was computed until it had nothing left, then once per later wait
    assert 3 <= len(calls) < 3 + len(chunks)


def test_evidence_written_early_reads_as_written_at_the_end(bank):
    from kbtools.linker.state import LinkState

    entries, edges, triples, vectors, index, stats = bank
    written = []
    original = LinkState.plan

    def plan(self, report):  # the connect wrote no text while waiting (one process): write it all now
        while self.write_evidence(most=7):
            written.append(1)
        return original(self, report)

    LinkState.plan = plan
    try:
        early = plan_connect(entries, edges, triples, stats=stats, now=NOW, chunk=300, workers=0)
    finally:
        LinkState.plan = original
    late = plan_connect(entries, edges, triples, stats=stats, now=NOW, chunk=300, workers=0)
    assert len(written) > 100
    assert_frame_equal(early.add, late.add)


def _in_a_daemon(work, chunks, conn):
    try:
        with chunk_evidence(work, chunks, workers=2) as computed:  # may not start processes: computes here
            conn.send((auto_workers(100, cpus=2), len(list(computed)), len(multiprocessing.active_children())))
    except BaseException as error:  # noqa: BLE001 - reported to the test
        conn.send(repr(error))


@fork_only
def test_a_pool_worker_links_in_its_own_process(bank):
    """A fleet runs banks in pool workers (dask's are daemonic, which may not start processes): a
    connect there neither forks more workers on its own nor fails when asked to."""
    work, chunks = _work(bank)
    ours, theirs = multiprocessing.get_context("fork").Pipe()
    child = multiprocessing.get_context("fork").Process(target=_in_a_daemon, args=(work, chunks, theirs), daemon=True)
    child.start()
    got = ours.recv() if ours.poll(120) else "no answer"
    child.join(30)
    assert got == (0, len(chunks), 0)


@fork_only
def test_worker_processes_plan_replaced_decisions_alike(demo_dir):
    """The engineering demo holds decisions replaced by others (superseded entries whose
    replacement is known link in its name, ``_auto_links``; structural links): what the linking
    reads of the workers' arrays covers those too."""
    from kbtools.linker.state import LinkState

    tables = demo_dir / "engineering" / "tables"
    entries, edges, triples = (pl.read_parquet(sorted((tables / name).glob("*.parquet"))) for name in ("entries", "edges", "triples"))
    entries = entries.with_columns(pl.lit(None).cast(SCHEMAS["entries"]["linked_at"]).alias("linked_at"))
    edges = edges.filter(pl.col("source") != "auto")
    calls = []
    original = LinkState._auto_links

    def counted(self, *args):
        calls.append(1)
        return original(self, *args)

    LinkState._auto_links = counted
    try:
        alone, forked = (plan_connect(entries, edges, triples, now=NOW, chunk=150, workers=w) for w in (0, 2))
    finally:
        LinkState._auto_links = original
    assert alone.report["structural"] > 0 and len(calls) >= 2 * 5  # 7 a run
    assert alone.report == forked.report
    assert_frame_equal(alone.add, forked.add)
    assert_frame_equal(alone.remove, forked.remove)
    assert_frame_equal(alone.entry_updates, forked.entry_updates)


@pytest.mark.parametrize("workers", [-1, 1.5, True, "2"])
def test_a_bad_number_of_workers_is_named(bank, workers):
    from kbtools.errors import ValidationError

    entries, edges, triples, _, _, stats = bank
    with pytest.raises(ValidationError, match="workers"):
        plan_connect(entries, edges, triples, stats=stats, now=NOW, workers=workers)


_KILLED_PARENT = """
import multiprocessing, sys, time
import polars as pl
from kbtools.demo import synthetic_bank
from kbtools.linker import plan_connect
demo = synthetic_bank(entries=2_000, seed=5)

def progress(done, total):
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
    time.sleep(120)  # killed meanwhile

plan_connect(demo.entries, demo.edges, demo.triples, chunk=200, workers=2, progress=progress)
"""


@fork_only
def test_workers_end_with_a_killed_connect(tmp_path):
    """A connect killed outright (a scheduler's SIGKILL, the OOM killer) leaves no worker behind
    waiting for chunks with its copy of the bank's memory."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert len(workers) == 2

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    deadline = time.monotonic() + 20
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:  # this test stops what it started, even when the workers outlive their parent
        os.kill(pid, signal.SIGKILL)
    assert not left
