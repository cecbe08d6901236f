"""Every rule the store enforces on a write, each with a test that fails when the rule is broken."""

from __future__ import annotations

import json
import re

import polars as pl
import pytest

import kbtools as kb


def _unchanged(bank, fn, exc, match=None):
    """Run fn, expect exc, and check nothing at all was written."""
    before = kb.open_bank(bank.path)
    with pytest.raises(exc, match=match) as err:
        fn()
    after = kb.open_bank(bank.path)
    assert after.version == before.version
    for t in ("entries", "edges", "events", "triples"):
        assert after.table(t).height == before.table(t).height
    return str(err.value)


def test_report_learning_writes_entry_and_connections_in_one_transaction(small_bank):
    a, c, d = small_bank.ids
    v = small_bank.version
    e = kb.report_learning(
        small_bank, content="Set SameSite=None on the session cookie behind the CDN.", useful_for="fixing logins",
        title="SameSite for CDN cookies", summary="Cookies behind the CDN need SameSite=None.", kind="knowledge",
        systems=["cdn", "auth"], tasks=["deploy"], actor="agent-7", session_id="s-1",
        connections=[{"id": a, "relation": "clarifies", "note": "the setting that caveat depends on"}, {"id": d, "relation": "see_also"}],
    )
    assert re.fullmatch(r"[0-9a-f]{8}", e)
    assert small_bank.version == v + 1  # one transaction
    row = small_bank.entries.filter(pl.col("id") == e).row(0, named=True)
    assert row["systems"] == ["cdn", "auth"] and row["session_id"] == "s-1" and row["status"] == "active"
    edges = small_bank.edges.filter(pl.col("src") == e).sort("type")
    assert edges.select("dst", "type", "source", "weight").rows() == [(a, "clarifies", "author", 1.0), (d, "see_also", "author", 1.0)]
    assert edges["note"].to_list() == ["the setting that caveat depends on", None]
    acts = small_bank.events.tail(3)["action"].to_list()
    assert acts == ["entry.create", "edge.create", "edge.create"]
    assert set(small_bank.events.tail(3)["actor"]) == {"agent-7"}


def test_created_at_and_ids_for_imports(bank):
    e = kb.report_learning(bank, content="An old lesson.", actor="import", created_at="2025-01-02T03:04:05Z")
    row = bank.entries.row(0, named=True)
    assert row["id"] == e and row["created_at"].year == 2025


@pytest.mark.parametrize(
    "content, why",
    [
        ("", "content is empty"),
        ("   \n ", "content is empty"),
        ("$ kubectl get pods\nweb-1 Running\n$ kubectl logs web-1\nok", "command transcript"),
        ("2026-11-29 10:00:01 started build\n2026-11-29 10:00:09 build failed", "session log"),
        ("[10:00:01] started\n[10:00:02] done", "session log"),
        ("Output is written to /tmp/build-4481/out.json after the run", "temporary path"),
        ("The migration is currently running on prod, do not touch", "work in progress"),
        ("The worker with PID 48213 holds the lock", "process id"),
    ],
)
def test_guard_rejects_session_logs_and_transient_state(bank, content, why):
    msg = _unchanged(bank, lambda: kb.report_learning(bank, content=content, actor="a"), kb.GuardRejected)
    assert why in msg


def test_a_code_example_with_comments_is_no_shell_transcript():
    from kbtools.model.guard import transient_reason

    # CMake's AUTORCC_OPTIONS example: "# ..." comments around one command
    example = "  # ...\n  set_property(SOURCE resources.qrc PROPERTY AUTORCC_OPTIONS 9)\n  # ...\n"
    assert transient_reason(example) is None
    assert "transcript" in transient_reason("# apt install nginx\nReading lists\n# ./configure\nok")  # a root shell


@pytest.mark.parametrize("content", [
    "The deploy is RIGHT NOW running on prod", "The deploy is r\u0131ght now running on prod",
    "C:\\Users\\ana\\AppData\\Local\\Temp\\run-1\\log.txt holds it", "See /private/var/folders/x1/T/out",
    "the runner's process 48213 died",
])
def test_the_guard_reads_each_pattern_in_any_text_it_can_match(content):
    """Each pattern is searched only in texts holding what it cannot match without: what matches
    (any case, as ``re.I`` reads it) is still found."""
    from kbtools.model.guard import transient_reason

    assert transient_reason(content) is not None


def test_guard_accepts_durable_knowledge(bank):
    kb.report_learning(bank, content="Pass --http1.1 to curl for the session-create POST; the server rejects HTTP/2.", actor="a")
    kb.report_learning(bank, content="Use the tmp_path fixture instead of writing under the repo.", actor="a")
    assert bank.entries.height == 2


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        (dict(kind="poem"), kb.ValidationError, ["kind='poem'", "must be one of"]),
        (dict(systems="ci"), kb.ValidationError, ["systems='ci'", "list of strings"]),
        (dict(tasks=[1, 2]), kb.ValidationError, ["tasks", "list of strings"]),
        (dict(created_at=12), kb.ValidationError, ["created_at=12"]),
        (dict(title=5), kb.ValidationError, ["title=5", "must be a string"]),
        (dict(metadata="{oops"), kb.ValidationError, ["metadata", "JSON"]),
        (dict(actor=""), kb.ValidationError, ["actor", "names its actor"]),
    ],
)
def test_bad_fields_name_value_and_rule_and_write_nothing(small_bank, kwargs, exc, words):
    args = dict(content="A durable fact.", actor="a")
    args.update(kwargs)
    msg = _unchanged(small_bank, lambda: kb.report_learning(small_bank, **args), exc)
    for w in words:
        assert w in msg


def test_missing_content_is_an_error(bank):
    with pytest.raises(TypeError):
        kb.report_learning(bank, actor="a")  # content is a required keyword
    _unchanged(bank, lambda: kb.report_learning(bank, content=None, actor="a"), kb.ValidationError, "content is required")


@pytest.mark.parametrize(
    "conn, words",
    [
        ({"id": "deadbeef", "relation": "cites"}, ["deadbeef", "does not exist"]),
        ({"id": None, "relation": "cites"}, ["does not exist"]),
        ({"relation": "cites"}, ["connection"]),
        ({"id": "A", "relation": "cousin_of"}, ["cousin_of", "unknown edge type"]),
        ({"id": "A", "relation": "cites", "source": "gossip"}, ["gossip", "unknown edge source"]),
        ({"id": "A", "relation": "cites", "source": "auto"}, ["trusted"]),
    ],
)
def test_bad_connections_write_nothing(small_bank, conn, words):
    conn = {k: (small_bank.ids[0] if v == "A" else v) for k, v in conn.items()}
    msg = _unchanged(small_bank, lambda: kb.report_learning(small_bank, content="A fact.", actor="a", connections=[conn]), kb.KbError)
    for w in words:
        assert w in msg


def test_link_rules(small_bank):
    a, c, d = small_bank.ids
    _unchanged(small_bank, lambda: kb.link(small_bank, a, a, "clarifies", actor="x"), kb.EdgeRuleError, "cannot point at itself")
    _unchanged(small_bank, lambda: kb.link(small_bank, c, a, "corrects", actor="x"), kb.EdgeRuleError, "already exists")
    _unchanged(small_bank, lambda: kb.link(small_bank, a, "0badf00d", "cites", actor="x"), kb.EdgeRuleError, "0badf00d")
    _unchanged(small_bank, lambda: kb.link(small_bank, a, d, "likes", actor="x"), kb.EdgeRuleError, "unknown edge type")
    _unchanged(small_bank, lambda: kb.link(small_bank, a, d, "cites", source="rumour", actor="x"), kb.EdgeRuleError, "unknown edge source")
    _unchanged(small_bank, lambda: kb.link(small_bank, a, d, "cites", weight=0.5, actor="x"), kb.EdgeRuleError, "weight 1.0")
    _unchanged(small_bank, lambda: kb.link(small_bank, a, d, "see_also", source="auto", weight=1.5, actor="x"), kb.EdgeRuleError, r"\(0, 1\]")
    kb.link(small_bank, d, a, "related_to", note="same cookie", actor="x")
    row = small_bank.edges.filter((pl.col("src") == d) & (pl.col("dst") == a)).row(0, named=True)
    assert row["type"] == "see_also" and row["note"] == "same cookie"
    kb.link(small_bank, a, d, "see_also", source="auto", weight=0.4, actor="connect")  # fading edges keep their weight
    assert small_bank.edges.filter(pl.col("source") == "auto")["weight"].to_list() == [0.4]


def test_unlink_requires_reason_and_an_existing_edge(small_bank):
    a, c, d = small_bank.ids
    _unchanged(small_bank, lambda: kb.unlink(small_bank, c, a, "corrects", reason="", actor="x"), kb.ValidationError, "requires a reason")
    _unchanged(small_bank, lambda: kb.unlink(small_bank, a, c, "corrects", reason="r", actor="x"), kb.EdgeNotFound)
    kb.unlink(small_bank, c, a, "corrects", reason="the correction was wrong", actor="judge")
    assert small_bank.edges.filter((pl.col("src") == c) & (pl.col("dst") == a)).height == 0
    ev = small_bank.events.tail(1).row(0, named=True)
    assert ev["action"] == "edge.delete" and ev["reason"] == "the correction was wrong" and ev["actor"] == "judge"


def test_an_edge_removed_and_added_in_one_change_is_replaced(small_bank):
    """What a re-derived link or a feedback link over an automatic one does: the new row wins (its
    tombstone used to hide it, so `kb connect --rebuild` lost the links it re-made)."""
    a, c, d = small_bank.ids
    kb.edit_edges(small_bank, add=[{"src": d, "dst": a, "type": "see_also", "source": "auto", "weight": 0.4}],
                  actor="linker", reason="first")
    key = {"src": d, "dst": a, "type": "see_also"}
    kb.edit_edges(small_bank, add=[{**key, "source": "auto", "weight": 0.7, "evidence": {"why": "again"}}],
                  remove=[key], actor="linker", reason="re-derived")
    for bank in (small_bank, kb.open_bank(small_bank.path)):
        row = bank.edges.filter((pl.col("src") == d) & (pl.col("dst") == a) & (pl.col("type") == "see_also"))
        assert row.height == 1 and row["weight"][0] == 0.7 and json.loads(row["evidence"][0])["why"] == "again"
    actions = small_bank.events.tail(2)["action"].to_list()
    assert sorted(actions) == ["edge.create", "edge.delete"]  # the audit keeps both
    kb.edit_edges(small_bank, remove=[key], actor="linker", reason="gone")
    assert small_bank.edges.filter((pl.col("src") == d) & (pl.col("dst") == a)).height == 0


def test_events_are_only_ever_appended(small_bank):
    a, c, d = small_bank.ids
    before = small_bank.events
    kb.link(small_bank, d, a, "cites", actor="x")
    kb.unlink(small_bank, d, a, "cites", reason="r", actor="x")
    kb.delete_entry(small_bank, c, reason="r", actor="judge")
    after = small_bank.events
    assert after.head(before.height).equals(before)
    assert after.height > before.height


def test_delete_bridges_every_path_through_the_entry(bank):
    x = kb.report_learning(bank, content="Step X of the release.", actor="a")
    b = kb.report_learning(bank, content="Step B of the release.", actor="a", connections=[{"id": x, "relation": "part_of"}])
    y = kb.report_learning(bank, content="The release.", actor="a")
    z = kb.report_learning(bank, content="A related note.", actor="a")
    kb.link(bank, x, b, "part_of", actor="a")  # x part_of b part_of y: transitive type kept
    kb.unlink(bank, b, x, "part_of", reason="cycle not wanted", actor="a")
    kb.link(bank, b, y, "part_of", actor="a")
    kb.link(bank, b, z, "cites", actor="a", note="where this is used")  # part_of then cites: see_also
    kb.link(bank, x, b, "see_also", source="auto", weight=0.5, actor="connect")  # untrusted hops are not bridged
    out = kb.delete_entry(bank, b, reason="merged upstream", actor="judge")
    got = {(s, d, t): (src, json.loads(ev)) for s, d, t, src, ev in bank.edges.select("src", "dst", "type", "source", "evidence").iter_rows()}
    assert (x, y, "part_of") in got and got[(x, y, "part_of")][0] == "bridged"
    assert (x, z, "see_also") in got
    ev = got[(x, y, "part_of")][1]
    assert ev["bridged"] == b and [h[:3] for h in ev["hops"]] == [[x, b, "part_of"], [b, y, "part_of"]]
    assert b not in bank.entries["id"].to_list()
    assert bank.edges.filter((pl.col("src") == b) | (pl.col("dst") == b)).height == 0
    assert out["bridged"].height == 2
    assert kb.check_bank(bank) == []
    assert "edge.bridge" in bank.events["action"].to_list()


def test_merge_moves_edges_and_names_what_it_dropped(bank):
    keep = kb.report_learning(bank, content="Canonical note on cache keys.", actor="a")
    dup = kb.report_learning(bank, content="Duplicate note on cache keys.", actor="a", connections=[{"id": keep, "relation": "see_also"}])
    other = kb.report_learning(bank, content="Locale handling.", actor="a")
    kb.link(bank, dup, other, "cites", actor="a", note="where the locale enters the key")
    kb.link(bank, keep, other, "cites", actor="a")
    third = kb.report_learning(bank, content="CDN cache.", actor="a", connections=[{"id": dup, "relation": "clarifies"}])
    out = kb.merge_entries(bank, keep=keep, remove=[dup], reason="duplicate", actor="judge")
    edges = set(bank.edges.select("src", "dst", "type").iter_rows())
    assert (third, keep, "clarifies") in edges  # moved
    assert (keep, other, "cites") in edges
    assert not any(dup in (s, d) for s, d, _ in edges)
    assert out == {"moved": 1, "dropped": 2, "removed": 1}
    merge_ev = bank.events.filter(pl.col("action") == "entry.merge").row(0, named=True)
    dropped = json.loads(merge_ev["payload"])["dropped"]
    assert {d["why"] for d in dropped} == {"would point at itself", "duplicates an edge the survivor has"}
    assert kb.check_bank(bank) == []
    _unchanged(bank, lambda: kb.merge_entries(bank, keep=keep, remove=[keep], reason="r", actor="j"), kb.ValidationError)
    _unchanged(bank, lambda: kb.merge_entries(bank, keep=keep, remove=["0badf00d"], reason="r", actor="j"), kb.EntryNotFound)


def test_split_writes_parts_with_split_from_edges(small_bank):
    a = small_bank.ids[0]
    parts = kb.split_entry(small_bank, a, parts=[{"content": "Part one: the CDN."}, {"content": "Part two: the cookie.", "kind": "fact"}], reason="two topics", actor="judge")
    assert len(parts) == 2
    sf = small_bank.edges.filter(pl.col("type") == "split_from")
    assert set(sf["src"]) == set(parts) and set(sf["dst"]) == {a} and set(sf["source"]) == {"judge"}
    _unchanged(small_bank, lambda: kb.split_entry(small_bank, a, parts=[{"content": "x", "kind": "poem"}], reason="r", actor="j"), kb.ValidationError, "row 0")


def test_triples_are_audited_and_unique(bank):
    kb.ops.add_triple(bank, "Kioko", "uses", "pgvector", actor="agent-1")
    _unchanged(bank, lambda: kb.ops.add_triple(bank, "Kioko", "uses", "pgvector"), kb.ValidationError, "already recorded")
    _unchanged(bank, lambda: kb.ops.add_triple(bank, "Kioko", "", "pgvector"), kb.ValidationError, "relation")
    assert bank.events.filter(pl.col("action") == "triple.create").height == 1


def test_update_entry_is_audited(small_bank):
    a = small_bank.ids[0]
    kb.update_entry(small_bank, a, actor="judge", reason="typo", title="New title")
    ev = small_bank.events.tail(1).row(0, named=True)
    assert ev["action"] == "entry.update" and "New title" in ev["payload"]
    _unchanged(small_bank, lambda: kb.update_entry(small_bank, a, actor="j", kind="poem"), kb.ValidationError, "kind")
    _unchanged(small_bank, lambda: kb.update_entry(small_bank, a, actor="j", usage_count=5), kb.ValidationError, "not an updatable")
    _unchanged(small_bank, lambda: kb.update_entry(small_bank, "0badf00d", actor="j", title="x"), kb.EntryNotFound)


def test_check_bank_finds_broken_invariants(small_bank):
    assert kb.check_bank(small_bank.path) == []
    # break the bank behind the store's back: a segment with a self-loop and a bad type
    import polars as pl
    from kbtools.model.schema import conform

    bad = conform(pl.DataFrame({"src": [small_bank.ids[0]], "dst": [small_bank.ids[0]], "type": ["cousin_of"], "source": ["author"], "weight": [0.3]}), "edges")
    seg = small_bank.path / "tables/edges/99999999-bad.parquet"
    bad.with_columns(pl.lit(10**6).alias("_seq"), pl.lit(False).alias("_deleted")).write_parquet(seg)
    manifest = json.loads((small_bank.path / "manifest.json").read_text())
    manifest["tables"]["edges"].append("tables/edges/99999999-bad.parquet")
    (small_bank.path / "manifest.json").write_text(json.dumps(manifest))
    rules = {p.rule.split(";")[0] for p in kb.check_bank(small_bank.path)}
    assert {"unknown edge type", "an entry cannot point at itself", "trusted edges have weight 1.0"} <= rules
    seg.unlink()
    assert "missing" in str(kb.check_bank(small_bank.path)[0])
    with pytest.raises(kb.NotABank):
        kb.check_bank(small_bank.path / "nope")


def test_the_linked_writes_script_times_the_default_write_on_a_copy(tmp_path, demo_dir):
    """``scripts/linked_writes.py BANK N`` (how docs/performance.md times the default write on a
    big bank) writes N linked entries into the bank it is given and prints their p50."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    before = kb.open_bank(tmp_path / "eng").entries.height
    script = Path(__file__).resolve().parents[1] / "scripts" / "linked_writes.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "eng"), "4"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    assert out.returncode == 0, out.stderr
    assert re.search(r"4 linked writes: p50 [\d.]+ ms, mean [\d.]+ ms", out.stdout)
    bank = kb.open_bank(tmp_path / "eng")
    assert bank.entries.height == before + 3 + 4  # three warm-up writes, then the four timed
    written = bank.entries.filter(pl.col("content").str.starts_with("Pump "))
    assert written.height == 4 and written["linked_at"].null_count() == 0
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "eng"), "2", "--no-link", "--more", "20"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    assert out.returncode == 0, out.stderr
    assert re.search(r"then 20 more writes: mean [\d.]+ ms; the bank keeps \d+ vector segments", out.stdout)
    assert len(re.findall(r"2 unlinked writes: p50", out.stdout)) == 2
    assert kb.open_bank(tmp_path / "eng").entries.height == before + 3 + 4 + 3 + 2 + 20 + 2


def test_the_pause_cost_script_times_queries_after_pauses_and_adds(tmp_path, demo_dir):
    """``scripts/pause_cost.py BANK R`` (how docs/performance.md tells an add's cost to the next
    query from any pause's) asks R rounds of four queries and writes R entries."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    bank = kb.open_bank(tmp_path / "eng")
    kb.embed_bank(bank, embedder="hashing")
    before = bank.entries.height
    script = Path(__file__).resolve().parents[1] / "scripts" / "pause_cost.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "eng"), "3"], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "ORT_DISABLE_TELEMETRY": "1"})
    assert out.returncode == 0, out.stderr
    for name in ("after a query", "after a 7 ms sleep", "after 7 ms busy", "after an add"):
        assert re.search(rf"{name} +p50 [\d.]+ ms", out.stdout), out.stdout
    assert kb.open_bank(tmp_path / "eng").entries.height == before + 3


def test_a_derived_title_reads_past_a_short_lead_in(tmp_path):
    """An agent's note that starts "Gotcha:" on a line of its own is titled by what it says."""
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder="hashing")
    eid = kb.report_learning(bank, content="Gotcha:\n- the export job needs the vendor flag set. It fails without.",
                             actor="t")
    row = bank.entries.filter(pl.col("id") == eid).row(0, named=True)
    assert row["title"] == "Gotcha: the export job needs the vendor flag set."
    assert row["summary"] == row["title"]
    eid = kb.report_learning(bank, content="Note: the pool drains at 3 am.\nMore later.", actor="t")
    assert bank.entries.filter(pl.col("id") == eid)["title"][0] == "Note: the pool drains at 3 am."


def test_a_connection_to_an_id_merged_or_deleted_says_what_became_of_it(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    keep = kb.report_learning(bank, content="The invoice export job needs the vendor flag set before it runs.", actor="x")
    twice = kb.report_learning(bank, content="Heads up: the invoice export job needs the vendor flag set before it runs.",
                               actor="y")
    tea = kb.report_learning(bank, content="Green tea is served at noon.", actor="y")
    kb.merge_entries(bank, keep=keep, remove=[twice], reason="the same fact twice", actor="judge")
    kb.delete_entry(bank, tea, reason="not about work", actor="ops")
    version = bank.version
    with pytest.raises(kb.EdgeRuleError, match=rf"{twice} was merged into {keep} by judge at .*: the same fact twice; connect to {keep}"):
        kb.report_learning(bank, content="The vendor flag lives on the billing settings page.", actor="z",
                           connections=[{"id": twice, "relation": "clarifies"}])
    with pytest.raises(kb.EdgeRuleError, match=rf"{tea} was deleted by ops at .*: not about work"):
        kb.link(bank, tea, keep, "cites", actor="z")
    with pytest.raises(kb.EdgeRuleError, match=r"the entry does not exist \(got src='0badc0de'\)$"):
        kb.link(bank, "0badc0de", keep, "cites", actor="z")  # never in the bank: the error as before
    assert kb.open_bank(bank.path).version == version  # nothing written
