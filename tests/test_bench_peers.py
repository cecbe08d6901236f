"""``kb bench --peers`` measures LanceDB, Chroma and DuckDB + vss beside kbtools in the same run,
for real, on the same vectors (the bench extra, in .venv-bench where scripts/test.sh puts it: it
pins DuckDB to its vss build)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_PEERS = "import lancedb, chromadb, duckdb, duckdb_extension_vss"


def _has_peers(python: str) -> bool:
    return subprocess.run([python, "-c", _PEERS], capture_output=True).returncode == 0


def _bench_python() -> str | None:
    for python in (str(ROOT / ".venv-bench" / "bin" / "python"), sys.executable):
        if Path(python).exists() and _has_peers(python):
            return python
    return None


def _kb(python: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ORT_DISABLE_TELEMETRY="1", ANONYMIZED_TELEMETRY="False")
    return subprocess.run([python, "-m", "kbtools", *args], capture_output=True, text=True, env=env, timeout=1200,
                          cwd=ROOT)


@pytest.mark.slow
def test_peers_are_measured_beside_kbtools_on_a_small_bank():
    python = _bench_python()
    if python is None:
        pytest.skip("the bench extra (LanceDB, Chroma, DuckDB + vss) is not installed: scripts/test.sh makes .venv-bench")
    out = _kb(python, "bench", "--peers", "--sizes", "500", "--json")
    assert out.returncode == 0, out.stderr[-3000:]
    [report] = json.loads(out.stdout)["peers"]
    assert report["entries"] == 500
    assert report["systems"] == ["kbtools", "LanceDB", "Chroma", "DuckDB+vss"]
    assert set(report["index"]) == set(report["systems"]) and all(report["index"].values())
    assert report["index"]["kbtools"].startswith("flat")  # the index kb.query picks at 500 entries
    assert "take turns" in report["notes"]["turns"]
    assert "fsynced" in report["notes"]["adds"]
    rows = {r["operation"]: r for r in report["rows"]}
    assert {"top-8 query, steady, p50",
            "add one row as each system commits it, p50 (kbtools and DuckDB fsync; LanceDB and Chroma do not)",
            "add one row, on disk when it returns, p50 (LanceDB's and Chroma's files fsynced after it)",
            "first query after each add (a query asked for the first time), p50", "cold: import + open + first query, new process", "peak RSS of that process (51 queries)",
            "disk after the adds"} <= set(rows)
    for r in report["rows"]:
        assert set(r["values"]) == set(report["systems"]), r
        for system, value in r["values"].items():
            assert math.isfinite(value) and value > 0, (r["operation"], system, value)
        assert r["kbtools_over_best_peer"] is not None
    for system, recall in rows["recall@8 of that query (exact scan = 1)"]["values"].items():
        assert 0 <= recall <= 1, (system, recall)
    # an exact scan of the same vectors agrees with every HNSW on most of the top 8
    assert min(rows["recall@8 of that query (exact scan = 1)"]["values"].values()) > 0.3


def test_peers_without_the_extra_name_it():
    if _has_peers(sys.executable):
        pytest.skip("this venv has the bench extra")
    out = _kb(sys.executable, "bench", "--peers", "--sizes", "50")
    assert out.returncode == 1
    assert "bench extra" in out.stderr and "kbtools[bench]" in out.stderr
