"""All or nothing, for real: writers killed with SIGKILL at random instants, two writers at once,
a lock that times out with a clear error, and a reader that never sees half a write."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time

import polars as pl
import pytest

import kbtools as kb
from tests import writers

KILLS = int(os.environ.get("KB_CRASH_KILLS", "200"))


@pytest.fixture(scope="module")
def ctx():
    c = mp.get_context("forkserver")
    c.set_forkserver_preload(["kbtools", "tests.writers"])
    return c


def _drain(conn) -> list[tuple]:
    got = []
    while conn.poll():
        try:
            got.append(conn.recv())
        except EOFError:
            break
    return got


def _assert_sound(path, acked: list[tuple]) -> pl.DataFrame:
    bank = kb.open_bank(path)
    # a killed writer may leave its temp file behind: litter that `kb repair` sweeps, not damage
    # (check_bank reports it once it is older than the sweep age, which a loaded machine reaches)
    assert [p for p in kb.check_bank(bank) if p.column != "temp"] == []
    ids = set(bank.entries["id"].to_list())
    edges = set(bank.edges.select("src", "dst").iter_rows())
    for kind, eid, prev in acked:
        if kind != "entry":
            continue
        assert eid in ids, f"acknowledged entry {eid} lost"
        if prev:
            assert (eid, prev) in edges, f"acknowledged edge {eid}->{prev} lost"
    # every entry that exists came with its edge: never half a write
    chained = bank.edges.filter(pl.col("type") == "see_also")
    created = bank.events.filter(pl.col("action") == "entry.create")
    assert created.height == bank.entries.height
    assert chained.height == bank.events.filter(pl.col("action") == "edge.create").height
    return bank.entries


@pytest.mark.slow
def test_sigkill_at_random_instants_loses_nothing_acknowledged(tmp_path, ctx):
    path = str(tmp_path / "crash")
    kb.create_bank(path)
    rng = random.Random(20261129)
    acked: list[tuple] = []
    kills = 0
    while kills < KILLS:
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=writers.write_loop, args=(path, f"k{kills}", child, 50, 7))
        proc.start()
        child.close()
        assert parent.recv()[0] == "ready"
        # let it get going, then kill it somewhere inside its writes; every other kill waits for a
        # first acknowledged write (on a loaded machine a write can take longer than the random delay)
        if kills % 2 == 0:
            parent.poll(5.0)
        time.sleep(rng.uniform(0.0, 0.12))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        acked += _drain(parent)
        parent.close()
        kills += 1
        if kills % 25 == 0 or kills == KILLS:
            _assert_sound(path, acked)
    entries = _assert_sound(path, acked)
    assert sum(1 for a in acked if a[0] == "entry") > 50, "the writers barely wrote: the test proves little"
    assert entries.height >= sum(1 for a in acked if a[0] == "entry")
    kb.repair_bank(path)  # sweeps what the kills left behind, whatever its age
    assert kb.check_bank(path) == []


@pytest.mark.slow
def test_two_writers_interleaved_lose_nothing(tmp_path, ctx):
    path = str(tmp_path / "two")
    kb.create_bank(path)
    pipes, procs = [], []
    for tag in ("job", "notebook"):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=writers.write_loop, args=(path, tag, child, 200, 0, 0.003))
        p.start()
        child.close()
        pipes.append(parent)
        procs.append(p)
    acked: list[tuple] = []
    for p, parent in zip(procs, pipes):
        while True:
            msg = parent.recv()
            if msg[0] == "done":
                break
            if msg[0] != "ready":
                acked.append(msg)
        p.join(timeout=120)
        assert p.exitcode == 0
    entries = _assert_sound(path, acked)
    assert entries.height == 400
    # they really interleaved: both writers' entries alternate somewhere in commit order
    actors = kb.open_bank(path).events.filter(pl.col("action") == "entry.create")["actor"].to_list()
    switches = sum(1 for a, b in zip(actors, actors[1:]) if a != b)
    assert switches > 2


def test_lock_timeout_names_the_holder(tmp_path, ctx):
    path = str(tmp_path / "locked")
    bank = kb.create_bank(path, )
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=writers.hold_lock, args=(path, 3.0, child))
    p.start()
    child.close()
    kind, pid, _ = parent.recv()
    assert kind == "locked"
    other = kb.open_bank(path, lock_timeout=0.3)
    with pytest.raises(kb.BankLocked) as err:
        kb.report_learning(other, content="A fact.", actor="notebook")
    assert f"pid {pid}" in str(err.value) and "slow-job" in str(err.value) and "0.3 s" in str(err.value)
    p.join()
    assert kb.open_bank(path).entries.height == 0  # nothing written by the refused writer
    kb.report_learning(other, content="A fact.", actor="notebook")  # free again


def test_reader_never_sees_half_a_write(tmp_path, ctx):
    path = str(tmp_path / "read")
    kb.create_bank(path)
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=writers.write_loop, args=(path, "w", child, 120, 30, 0.0))
    p.start()
    child.close()
    assert parent.recv()[0] == "ready"
    reader = kb.open_bank(path)
    seen_versions = set()
    while p.is_alive():
        reader.reload()
        seen_versions.add(reader.version)
        ents, edges = reader.entries, reader.edges
        ids = set(ents["id"].to_list())
        # every edge's endpoints are there, and every entry but the first came with its edge
        assert set(edges["src"].to_list()) <= ids and set(edges["dst"].to_list()) <= ids
        assert edges.height == max(ents.height - 1, 0)
    p.join()
    assert len(seen_versions) > 3
