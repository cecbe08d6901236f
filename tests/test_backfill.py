"""Backfill: citations (full ids and unique 7+ prefixes) and dedup metadata become trusted edges."""

from __future__ import annotations

import json

import polars as pl

import kbtools as kb
from kbtools.ops.citations import plan_backfill
from kbtools.model.schema import conform


def _entries(rows):
    return conform(pl.DataFrame(rows), "entries").with_columns(pl.col("metadata").fill_null("{}"))


def test_citations_prefixes_self_and_ambiguity():
    entries = _entries([
        {"id": "a1b2c3d4", "content": "The cookie jar pattern. See b2c3d4e5 for the loopback recipe. Unrelated."},
        {"id": "b2c3d4e5", "content": "Loopback recipe; a1b2c3d is where it started. Also b2c3d4e5 (itself)."},
        {"id": "c3d4e5f6", "content": "Cites 0badf00d (nothing) and ffffff0 (ambiguous) and deadbee."},
        {"id": "ffffff01", "content": "x"},
        {"id": "ffffff02", "content": "y"},
    ])
    plan = plan_backfill(entries, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String}))
    got = {(s, d): n for s, d, n in plan.add.filter(pl.col("type") == "cites").select("src", "dst", "note").iter_rows()}
    assert got == {
        ("a1b2c3d4", "b2c3d4e5"): "See b2c3d4e5 for the loopback recipe.",
        ("b2c3d4e5", "a1b2c3d4"): "Loopback recipe; a1b2c3d is where it started.",
    }
    assert plan.report["self_citations"] == 1 and plan.report["ambiguous_prefixes"] == 1
    assert set(plan.add["source"]) == {"citation_backfill"}


def test_metadata_keys_become_typed_edges():
    entries = _entries([
        {"id": "a1b2c3d4", "content": "a", "metadata": json.dumps({"split_from": "b2c3d4e5", "replaces": ["c3d4e5f6", "0badf00d"]})},
        {"id": "b2c3d4e5", "content": "b", "metadata": json.dumps({"recovered_from": "c3d4e5f6", "supersedes": "b2c3d4e5"})},
        {"id": "c3d4e5f6", "content": "c", "metadata": "{not json"},
    ])
    plan = plan_backfill(entries, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String}))
    assert set(plan.add.select("src", "dst", "type").iter_rows()) == {
        ("a1b2c3d4", "b2c3d4e5", "split_from"),
        ("a1b2c3d4", "c3d4e5f6", "supersedes"),
        ("b2c3d4e5", "c3d4e5f6", "derived_from"),
    }
    assert plan.report["metadata_unknown_ids"] == 2  # 0badf00d and the self-reference
    assert plan.report["metadata_bad_json"] == 1
    assert set(plan.add["source"]) == {"metadata_backfill"}


def test_backfill_on_demo_bank_then_second_run_writes_nothing(tmp_path, demo_dir):
    import shutil

    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    bank = kb.open_bank(tmp_path / "eng")
    from kbtools.ops.jobs import backfill

    dry = backfill(bank, dry_run=True)
    assert dry["written"] == 0 and kb.open_bank(bank.path).version == bank.version
    first = backfill(bank)
    assert first["written"] == first["edges_planned"] > 200
    cites = bank.edges.filter(pl.col("source") == "citation_backfill")
    assert cites.height > 50 and cites["note"].null_count() == 0
    assert bank.edges.filter(pl.col("source") == "metadata_backfill").height > 100
    second = backfill(bank)
    assert second["written"] == 0 and second["already_present"] == first["written"]
    assert kb.check_bank(bank) == []
    assert bank.events.filter(pl.col("actor") == "backfill").height == first["written"]


def test_plan_leaves_input_unchanged_and_handles_empty():
    entries = _entries([{"id": "a1b2c3d4", "content": "see b2c3d4e5"}, {"id": "b2c3d4e5", "content": "x"}])
    before = entries.clone()
    plan_backfill(entries, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String}))
    assert entries.equals(before)
    assert plan_backfill(entries.head(0), pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})).add.height == 0
