"""``kb bench --only serve`` times the verbs a user calls on real banks written to disk: the rows it
prints exist, carry their baselines, and every query it times is asked once."""

from __future__ import annotations

import math

import pytest

from kbtools.evaluate.bench import run_bench


@pytest.mark.slow
def test_the_serve_section_times_the_public_verbs(tmp_path):
    report = run_bench(only="serve", sizes=(1000, 2000), workdir=str(tmp_path), log=lambda message: None)
    rows = {r["metric"]: r for r in report["rows"] if r["section"] == "serve"}
    for n in ("1k", "2k"):
        steady = rows[f"kb.query {n} (folded, text embedded by the bank's embedder, flat), p50"]
        first = rows[f"first kb.query after a report_learning {n}, p50"]
        linked = rows[f"first kb.query after a linked report_learning (the default write) {n}, p50"]
        assert first["baseline_value"] == linked["baseline_value"] == steady["value"]
    assert rows["kb.report_learning 2k (link=False, embedded, durable), p50"]["baseline_value"] > 0  # the 1k bank
    assert rows["cold: open_bank + first kb.query 2k (new process, flat)"]["value"] > 0
    assert any(m.startswith("kb mcp: one query_knowledge_bank round trip") for m in rows)
    assert all(math.isfinite(r["value"]) for r in rows.values())
