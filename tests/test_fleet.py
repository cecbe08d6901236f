"""Many banks at once: the jobs and the cross-bank analytics on a dask LocalCluster of two worker
processes (loopback, no dashboard) over a generated fleet of 20 banks, one of them damaged (a
truncated Parquet segment) and one whose connect lock another process holds; the same on the local
process pool and through ``kb decay --bank 'DIR/*'``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import kbtools as kb
from kbtools.demo.fleet import fleet_banks
from kbtools.errors import KbError
from kbtools.ops.fleet import expand_banks, parse_scheduler, summary_status
from kbtools.store.segments import segment_files

distributed = pytest.importorskip("distributed")

DAMAGED, LOCKED = "bank-03-synthetic", "bank-05-business"
HOLD_LOCK = """
import sys
from kbtools.ops.jobs import job_lock
from kbtools.store.bank import open_bank
with job_lock(open_bank(sys.argv[1]), "connect"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _damage(bank_path: Path) -> None:
    """Cut the entries segment in half: the bank no longer opens."""
    seg = bank_path / segment_files(kb.open_bank(bank_path))["entries"][0]
    data = seg.read_bytes()
    seg.write_bytes(data[: len(data) // 2])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    kb.demo.build_fleet(root, banks=20, seed=3, sizes=(200, 500))
    _damage(root / DAMAGED)
    return root


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      env={"POLARS_MAX_THREADS": "1"}) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture
def held(fleet):
    """Another process holds the connect lock of the LOCKED bank while the test runs."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(fleet / LOCKED)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_jobs_over_the_fleet_on_dask(fleet, client, held):
    before = {p.name: kb.open_bank(p).entries.height for p in sorted(fleet.iterdir()) if p.is_dir() and p.name != DAMAGED}
    summary = kb.run_jobs([str(fleet / "*")], client=client)

    assert summary.columns == ["bank", "job", "status", "entries", "links_made", "links_dropped", "seconds", "error",
                               "worker", "report"]
    assert summary.height == 20 * 3
    by = {(Path(b).name, j): r for b, j, r in zip(summary["bank"], summary["job"], summary.iter_rows(named=True))}
    # the damaged bank: every job an error that names what broke, and nothing else stopped
    assert [by[(DAMAGED, j)]["status"] for j in kb.ops.fleet.JOB_ORDER] == ["error"] * 3
    assert all(by[(DAMAGED, j)]["error"] for j in ("backfill", "connect", "decay"))
    # the locked bank: connect did nothing (another process holds its lock), backfill and decay ran
    assert by[(LOCKED, "connect")]["status"] == "running" and "already running" in by[(LOCKED, "connect")]["error"]
    assert by[(LOCKED, "backfill")]["status"] == by[(LOCKED, "decay")]["status"] == "ok"
    assert kb.open_bank(fleet / LOCKED).entries["linked_at"].null_count() == before[LOCKED]  # never linked
    # every other bank: all three jobs, links made, linked_at written, on single-threaded workers
    ok = summary.filter(~pl.col("bank").str.contains(f"{DAMAGED}|{LOCKED}"))
    assert ok["status"].unique().to_list() == ["ok"] and ok.height == 18 * 3
    connect = ok.filter(pl.col("job") == "connect")
    assert (connect["links_made"] > 0).all()
    for row in connect.iter_rows(named=True):
        assert row["entries"] == before[Path(row["bank"]).name]
        unseen = kb.open_bank(row["bank"]).entries.filter(pl.col("linked_at").is_null())
        assert unseen["kind"].is_in(["step", "artifact", "role"]).all()  # process nodes are not linked
    assert {json.loads(r)["polars_threads"] for r in ok["report"]} == {1}
    assert ok["worker"].n_unique() == 2  # both workers took banks
    assert summary_status(summary) == 3

    # a second run: nothing left to link, the lock released, the locked bank now connects
    held.stdin.close()
    held.wait(timeout=30)
    again = kb.run_jobs([str(fleet / "*")], ["connect"], client=client)
    status = dict(zip([Path(b).name for b in again["bank"]], again["status"]))
    assert status[LOCKED] == "ok" and status[DAMAGED] == "error"
    assert again.filter(pl.col("status") == "ok", ~pl.col("bank").str.contains(LOCKED))["links_made"].sum() == 0


def test_cross_bank_analytics_on_the_workers(fleet, client):
    stats = kb.fleet.stats_many([str(fleet / "*")], client=client)
    assert stats.height == 20 and stats.columns[0] == "bank" and stats.columns[-1] == "error"
    damaged = stats.filter(pl.col("bank").str.ends_with(DAMAGED))
    assert damaged["error"][0] and damaged["entries"][0] is None
    good = stats.filter(pl.col("error").is_null())
    for row in good.head(3).iter_rows(named=True):
        bank = kb.open_bank(row["bank"])
        assert (row["entries"], row["edges"]) == (bank.entries.height, bank.edges.height)

    holes = kb.fleet.holes_many([str(fleet / "*")], client=client)
    business = fleet / "bank-02-business"
    mine = holes.filter(pl.col("bank") == str(business)).drop("bank", "error")
    assert mine.height > 0
    assert mine.sort("id", "hole").equals(kb.workflow_holes(kb.open_bank(business)).sort("id", "hole"))

    comms = kb.fleet.communities_many([str(fleet / "*")], client=client)
    assert comms["bank"].n_unique() == 20
    one = fleet / "bank-00-synthetic"
    direct = kb.communities(kb.open_bank(one))
    mine = comms.filter(pl.col("bank") == str(one))
    assert mine.height == direct["community"].n_unique() and mine["size"].sum() == direct.height


def test_process_pool_and_cli(tmp_path):
    kb.demo.build_fleet(tmp_path, banks=3, seed=5, sizes=(200, 300))
    _damage(tmp_path / "bank-01-synthetic")
    summary = kb.run_jobs([str(tmp_path / "*")], ["backfill", "decay"], workers=2)
    assert summary.select("job", "status").rows() == [("backfill", "ok"), ("decay", "ok"), ("backfill", "error"),
                                                      ("decay", "error"), ("backfill", "ok"), ("decay", "ok")]
    assert {json.loads(r)["polars_threads"] for r in summary["report"].drop_nulls()} == {1}
    assert kb.fleet.stats_many([str(tmp_path / "bank-0[02]-*")], workers=2)["error"].null_count() == 2

    out = subprocess.run([sys.executable, "-m", "kbtools", "connect", "--bank", str(tmp_path / "*"), "--workers", "2",
                          "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    rows = json.loads(out.stdout)
    assert [r["status"] for r in rows] == ["ok", "error", "ok"] and rows[0]["links_made"] > 0


def test_arguments_are_checked(tmp_path):
    with pytest.raises(KbError, match="matches no folder"):
        expand_banks([str(tmp_path / "nothing-*")])
    with pytest.raises(KbError, match="local:N"):
        parse_scheduler("local:0")
    with pytest.raises(KbError, match="must be one of backfill"):
        kb.run_jobs([str(tmp_path)], ["compact"])
    (tmp_path / "a.truth.json").write_text("{}")
    (tmp_path / "a").mkdir()
    assert expand_banks([str(tmp_path / "a*")]) == [str(tmp_path / "a")]


def test_fleet_is_seeded_and_varied():
    fleet = fleet_banks(20, seed=7)
    sizes = [demo.entries.height for _, demo in fleet]
    assert min(sizes) >= 200 and max(sizes) <= 3000 and max(sizes) > 4 * min(sizes)
    assert sum(name.endswith("business") for name, _ in fleet) == 6
    assert all(d.entries["id"].n_unique() == d.entries.height for _, d in fleet)
