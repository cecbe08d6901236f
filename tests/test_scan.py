"""Other tools read a bank right: kb.scan, kb.ops.duckdb and kb sql read exactly the manifest's files
with the latest-_seq/tombstone rule, where a glob over tables/<table>/*.parquet reads superseded
segments that stay on disk between sweeps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import polars.selectors as cs
import pytest
from polars.testing import assert_frame_equal

import kbtools as kb
from kbtools.model.schema import KEYS, TABLES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def churned(tmp_path_factory):
    """A bank after 40 writes (updates, links, a delete, usage): tail merges leave superseded
    segments on disk, as they do for 120 s after any compaction."""
    bank = kb.create_bank(tmp_path_factory.mktemp("scan") / "b", settings={"auto_link": False})
    ids = [kb.report_learning(bank, content=f"Fact {i}: the deploy job {i} needs a token.", actor="x") for i in range(6)]
    for i in range(30):
        kb.update_entry(bank, ids[i % 6], actor="judge", reason="clearer", content=f"Fact {i % 6}, rewritten {i}.")
    kb.link(bank, ids[0], ids[1], "cites", actor="x")
    kb.link(bank, ids[2], ids[1], "clarifies", actor="x", note="how long the token lives")
    kb.unlink(bank, ids[0], ids[1], "cites", reason="wrong", actor="x")
    kb.delete_entry(bank, ids[5], reason="obsolete", actor="x")
    kb.ops.record_usage(bank, ids[:3], query="token")
    kb.ops.record_usage(bank, ids[:1], query="deploy")
    return bank


def _sorted(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    return frame.sort(list(KEYS.get(table, frame.columns[:3])), nulls_last=True)


def test_a_glob_over_the_segment_folder_is_wrong(churned):
    """The pitfall the README used to recommend: superseded segments are still on disk."""
    for table in ("entries", "events"):
        globbed = pl.read_parquet(str(churned.path / "tables" / table / "*.parquet"))
        scanned = kb.scan(churned, table).collect()
        print(f"{table}: glob {globbed.height} rows, kb.scan {scanned.height}, the bank {churned.table(table).height}")
        assert globbed.height > churned.table(table).height == scanned.height, table
    assert pl.read_parquet(str(churned.path / "tables/entries/*.parquet"))["id"].n_unique() == 6  # the deleted one too


@pytest.mark.parametrize("table", TABLES)
def test_scan_reads_each_table_exactly_as_the_bank_does(churned, table):
    scanned = kb.scan(churned, table)
    assert isinstance(scanned, pl.LazyFrame)
    assert_frame_equal(_sorted(scanned.collect(), table), _sorted(churned.table(table), table))


def test_scan_applies_the_rule_and_folds_usage(churned):
    entries = kb.scan(churned, "entries").collect()
    assert entries.height == 5 and entries["id"].n_unique() == 5
    assert entries.filter(pl.col("content").str.contains("rewritten")).height == 5  # the latest version only
    assert sorted(entries["usage_count"].to_list()) == [0, 0, 1, 1, 2]
    assert kb.scan(churned, "edges").collect().select("type").to_series().to_list() == ["clarifies"]  # unlinked gone


@pytest.mark.parametrize("own", [False, True], ids=["locked", "your-connection"])
def test_duckdb_views_match_the_bank(churned, own):
    duckdb = pytest.importorskip("duckdb")
    con = kb.ops.duckdb(churned, connection=duckdb.connect() if own else None)
    assert isinstance(con, duckdb.DuckDBPyConnection)
    for table in TABLES:
        got = con.sql(f"SELECT * FROM {table}").pl().with_columns(cs.datetime(time_zone="*").dt.convert_time_zone("UTC"))
        assert_frame_equal(_sorted(got, table), _sorted(churned.table(table), table), check_dtypes=False)
    n_glob = duckdb.connect().execute(f"SELECT count(*) FROM '{churned.path}/tables/events/*.parquet'").fetchall()[0][0]
    assert n_glob > churned.events.height == con.execute("SELECT count(*) FROM events").fetchall()[0][0]


def test_the_default_duckdb_connection_is_locked_down(churned, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    con = kb.ops.duckdb(churned)
    with pytest.raises(duckdb.PermissionException):
        con.sql(f"SELECT count(*) FROM '{churned.path}/tables/events/*.parquet'").fetchall()
    with pytest.raises(duckdb.PermissionException):
        con.execute(f"COPY (SELECT 1 AS a) TO '{tmp_path}/out.csv'")
    with pytest.raises(duckdb.Error, match="locked"):
        con.execute("SET enable_external_access = true")
    assert list(tmp_path.iterdir()) == []


def test_sql_and_pandas(churned):
    pytest.importorskip("duckdb")
    pd = pytest.importorskip("pandas")
    frame = kb.sql(churned, "SELECT id, usage_count FROM entries ORDER BY usage_count DESC, id")
    assert frame["usage_count"].to_list()[0] == 2
    assert isinstance(frame.to_pandas(), pd.DataFrame)
    assert len(kb.scan(churned, "edges").collect().to_pandas()) == 1
    with pytest.raises(kb.KbError, match="Table with name nope does not exist"):
        kb.sql(churned, "SELECT * FROM nope")


def test_sql_takes_what_duckdb_parses_as_one_select(churned):
    pytest.importorskip("duckdb")
    n = churned.entries.height
    assert kb.sql(churned, "WITH e AS (SELECT id FROM entries) SELECT count(*) AS n FROM e;")["n"].item() == n
    assert kb.sql(churned, "FROM entries SELECT count(*) AS n")["n"].item() == n
    assert "usage_count" in kb.sql(churned, "DESCRIBE entries")["column_name"].to_list()


# each probe, if it ran, would read a host file or write one (beside the query, or over the manifest)
PROBES = {
    "read_csv": ("SELECT * FROM read_csv('/etc/passwd')", "Permission Error"),
    "read_text": ("SELECT * FROM read_text('/etc/hostname')", "Permission Error"),
    "glob": ("SELECT * FROM glob('/etc/*')", "Permission Error"),
    "quoted path": ("SELECT * FROM '{bank}/tables/events/*.parquet'", "Permission Error"),
    "copy": ("COPY (SELECT 1) TO 'out.csv'", "statement type COPY"),
    "attach": ("ATTACH 'other.db'", "statement type ATTACH"),
    "two statements": ("SELECT 1; COPY (SELECT 1) TO 'out.csv'", "2 statements"),
    "manifest": ("COPY (SELECT 1 AS a) TO '{bank}/manifest.json'", "statement type COPY"),
    "set": ("SET enable_external_access = true", "statement type SET"),
    "empty": (" ;", "no statement"),
}


def _bytes(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("probe", PROBES)
def test_sql_refuses_what_is_not_one_read_only_select(churned, tmp_path, monkeypatch, probe):
    pytest.importorskip("duckdb")
    query, rule = PROBES[probe]
    query = query.format(bank=churned.path)
    before = _bytes(churned.path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(kb.SqlRefused, match="refused") as err:
        kb.sql(churned, query)
    assert rule in str(err.value) and repr(query) in str(err.value) and "one read-only SELECT" in str(err.value)
    assert list(tmp_path.iterdir()) == []
    assert _bytes(churned.path) == before
    assert kb.check_bank(churned.path) == []


@pytest.mark.parametrize("probe", ["read_csv", "copy", "attach", "two statements", "manifest"])
def test_kb_sql_refuses_on_the_command_line_with_one_line(churned, tmp_path, probe):
    pytest.importorskip("duckdb")
    query = PROBES[probe][0].format(bank=churned.path)
    before = _bytes(churned.path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-m", "kbtools", "sql", str(churned.path), query], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "" and "root:" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("kb sql: SQL "), proc.stderr
    assert "refused" in proc.stderr
    assert list(tmp_path.iterdir()) == []
    assert _bytes(churned.path) == before
    assert kb.check_bank(churned.path) == []


def test_kb_sql_on_the_command_line_writes_nothing(churned):
    pytest.importorskip("duckdb")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in churned.path.rglob("*") if p.is_file())
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-m", "kbtools", "sql", str(churned.path),
                           "SELECT count(*) AS n FROM entries", "--csv"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["n", "5"]
    after = sorted((p.name, p.stat().st_mtime_ns) for p in churned.path.rglob("*") if p.is_file())
    assert after == before
