"""Graph analytics through a bank: recall with the links section, related, trace, communities,
hubs, holes, and their command lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest

import kbtools as kb

KB = [sys.executable, "-m", "kbtools"]


@pytest.fixture(scope="module")
def linked(tmp_path_factory, eng):
    """The embedded engineering bank after backfill and connect (the graph has structure)."""
    import shutil

    root = tmp_path_factory.mktemp("linked")
    shutil.copytree(eng.path, root / "engineering")
    bank = kb.open_bank(root / "engineering")
    kb.backfill(bank)
    kb.connect(bank)
    return bank


def test_recall_brings_in_linked_entries_and_explains_the_links(linked):
    ctx = kb.recall(linked, "how do I log in to production with playwright", links=3, record_usage=False)
    assert 0 < len(ctx.linked) <= 3
    shown = set(ctx.ids()) | {p.id for r in ctx.results for p in r.related}
    for item in ctx.linked:
        assert item["id"] not in shown
        assert 0 < item["activation"] <= 1.0 + 1e-9
    assert 0 < len(ctx.links) <= 6
    text = ctx.text()
    assert "How these entries connect" in text
    usage_before = linked.usage.height
    kb.recall(linked, "how do I log in to production with playwright", links=3, record_usage=True)
    assert linked.usage.height - usage_before == len(ctx.results)  # linked entries are not counted as used


def test_recall_with_no_links_is_the_query(linked):
    a = kb.recall(linked, "rotate the staging signing key", links=0, record_usage=False)
    b = kb.query(linked, "rotate the staging signing key", record_usage=False)
    assert a.ids() == b.ids() and not a.linked and not a.links


def test_related_and_trace(linked):
    auto = linked.edges.filter(pl.col("source") == "auto").row(0, named=True)
    rel = kb.related(linked, auto["src"], depth=2, limit=10)
    assert rel.height > 0 and set(rel.columns) >= {"id", "score", "path"}
    assert auto["src"] not in rel["id"].to_list()
    chain = kb.trace(linked, auto["src"], auto["dst"])
    assert chain.height == 1
    with pytest.raises(kb.EntryNotFound):
        kb.related(linked, "0badf00d")
    with pytest.raises(kb.EntryNotFound):
        kb.trace(linked, auto["src"], "0badf00d")


def test_communities_and_hubs(linked):
    com = kb.communities(linked, trusted_only=False)
    assert com.height == linked.entries.height
    big = com.filter(pl.col("community") >= 0)
    assert big["community"].n_unique() > 10
    assert big.filter(pl.col("community") == 0)["label"][0]
    again = kb.communities(linked, trusted_only=False)
    assert again.equals(com)  # reproducible with the seed
    cen = kb.centrality(linked)
    assert set(cen.columns) >= {"id", "degree", "in_degree", "out_degree", "pagerank", "betweenness", "hub"}
    assert abs(cen["pagerank"].sum() - 1.0) < 1e-6


def test_holes_on_the_demo_business_bank_match_the_planted_ones(demo_dir):
    bank = kb.open_bank(demo_dir / "business")
    truth = kb.demo.read_truth(bank)
    found = set(kb.workflow_holes(bank).select("id", "hole").iter_rows())
    planted = {(h["id"], h["hole"]) for h in truth["holes"]}
    assert found == planted
    flows = kb.process_flows(bank)
    assert flows.height >= 6


@pytest.mark.parametrize("cmd", [["holes"], ["holes", "--flows"], ["communities"], ["hubs", "--all"]])
def test_analytics_commands_json_and_csv(demo_dir, cmd):
    path = str(demo_dir / ("business" if cmd[0] == "holes" else "engineering"))
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    out = subprocess.run([*KB, cmd[0], path, *cmd[1:], "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert isinstance(rows, list) and rows
    csv = subprocess.run([*KB, cmd[0], path, *cmd[1:], "--csv"], capture_output=True, text=True, env=env, timeout=300)
    assert csv.returncode == 0 and "," in csv.stdout.splitlines()[0]
