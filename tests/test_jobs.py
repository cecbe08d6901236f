"""The jobs on real banks: connect (chunked, kill-safe, equal to one-by-one), decay, reinforce,
feedback, explain through the bank, auto-linking at report time, the job lock and exit codes."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

import kbtools as kb
from kbtools.ops import link_context as lc
from kbtools.ops import maintenance as kc
from kbtools.ops.jobs import connect, decay
from kbtools.linker import plan_links
from kbtools.linker import apply_links as apply_in_memory

JOB = [sys.executable, "-m", "kbtools"]


def _copy(demo_dir, tmp_path, name="engineering"):
    import shutil

    shutil.copytree(demo_dir / name, tmp_path / name)
    return kb.open_bank(tmp_path / name)


def _small(bank_dir, n=120):
    """A small realistic bank: the first n demo entries (by time) and their edges."""
    src = kb.open_bank(bank_dir)
    ents = src.entries.sort("created_at").head(n)
    ids = ents["id"]
    edges = src.edges.filter(pl.col("src").is_in(ids.implode()) & pl.col("dst").is_in(ids.implode()))
    return ents, edges


def test_connect_commits_about_ten_chunks_by_default(tmp_path, demo_dir, monkeypatch):
    """The default chunk is a tenth of the entries to link (at least ``CONNECT_CHUNK``): a job
    commits about ten times whatever the bank's size, each commit its own transaction."""
    ents, edges = _small(demo_dir / "engineering", n=300)
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    kb.ops.import_frames(bank, entries=ents, edges=edges, guard=False)
    before = bank.version
    monkeypatch.setattr(kc, "CONNECT_CHUNK", 20)
    seen = []
    report = connect(bank, progress=lambda done, total: seen.append(done))
    assert report["entries"] == 300 and seen == list(range(30, 301, 30))
    assert bank.version == before + 10
    monkeypatch.setattr(kc, "CONNECT_CHUNK", 200)  # the floor wins over a tenth
    seen.clear()
    connect(bank, rebuild=True, progress=lambda done, total: seen.append(done))
    assert seen == [200, 300]


def test_connect_equals_linking_one_by_one(tmp_path, demo_dir):
    ents, edges = _small(demo_dir / "engineering")
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    kb.ops.import_frames(bank, entries=ents, edges=edges, guard=False)
    report = connect(bank, chunk=37)  # several chunks, each its own transaction
    assert report["entries"] == ents.height and report["links_made"] > 20
    got = set(bank.edges.filter(pl.col("source") == "auto").select("src", "dst", "type").iter_rows())
    # one by one, in created_at order, each plan applied before the next
    e, ed = bank.entries.with_columns(pl.lit(None).cast(bank.entries["linked_at"].dtype).alias("linked_at")), edges
    settings = kc.linker_settings(bank)
    for eid in e.sort("created_at", "id")["id"].to_list():
        plan = plan_links(eid, e, ed, None, settings=settings)
        e, ed = apply_in_memory(e, ed, plan)
    want = set(ed.filter(pl.col("source") == "auto").select("src", "dst", "type").iter_rows())
    assert got == want
    assert bank.entries["linked_at"].null_count() == 0
    again = connect(bank)
    assert again["entries"] == 0 and again["links_made"] == 0
    assert kb.check_bank(bank) == []


def test_connect_dry_run_writes_nothing(tmp_path, demo_dir):
    ents, edges = _small(demo_dir / "engineering", 60)
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    kb.ops.import_frames(bank, entries=ents, edges=edges, guard=False)
    v = bank.version
    report = connect(bank, dry_run=True)
    assert report["links_made"] > 0 and report["plan"]
    assert kb.open_bank(bank.path).version == v


def test_connect_rebuild_ends_alike_whatever_the_chunk(tmp_path, demo_dir):
    """A rebuild re-makes links it removed within one chunk: every chunk size ends with the links of
    linking one entry per transaction (a chunk used to lose them: the removal hid the re-made row)."""
    import shutil

    ents, edges = _small(demo_dir / "engineering", n=200)
    base = kb.create_bank(tmp_path / "base", embedder=None)
    kb.ops.import_frames(base, entries=ents, edges=edges, guard=False)
    connect(base)
    ends = {}
    for chunk in (1, 37, 2000):
        shutil.copytree(tmp_path / "base", tmp_path / f"r{chunk}")
        bank = kb.open_bank(tmp_path / f"r{chunk}")
        connect(bank, rebuild=True, chunk=chunk)
        ends[chunk] = set(bank.edges.filter(pl.col("source") == "auto").select("src", "dst", "type").iter_rows())
    assert len(ends[1]) > 50 and ends[37] == ends[1] and ends[2000] == ends[1]


@pytest.mark.parametrize("chunk", [0, -5, 2.5, True])
def test_connect_refuses_a_chunk_that_is_not_a_positive_integer(tmp_path, demo_dir, chunk):
    bank = _copy(demo_dir, tmp_path, "business")
    version = bank.version
    with pytest.raises(kb.ValidationError, match="chunk"):
        connect(bank, chunk=chunk)
    assert kb.open_bank(bank.path).version == version  # nothing written


def test_connect_cli_takes_a_chunk_size(tmp_path, demo_dir):
    bank = _copy(demo_dir, tmp_path, "business")
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    out = subprocess.run([*JOB, "connect", str(bank.path), "--chunk", "10", "--json"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    linked = kb.open_bank(bank.path)
    assert linked.entries["linked_at"].null_count() < bank.entries.height
    assert linked.version - bank.version == 3  # 25 linkable entries in chunks of 10: one transaction each
    bad = subprocess.run([*JOB, "connect", str(bank.path), "--chunk", "0"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode != 0 and "chunk" in bad.stderr


def test_connect_killed_midway_then_rerun_finishes_without_doubling(tmp_path, demo_dir):
    bank = _copy(demo_dir, tmp_path)
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.Popen([sys.executable, "jobs/connect.py", "--bank", str(bank.path), "--chunk", "200"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=os.path.dirname(os.path.dirname(__file__)))
    deadline = time.time() + 120
    while time.time() < deadline:  # kill it once some chunk has been committed
        if kb.open_bank(bank.path).entries["linked_at"].null_count() < bank.entries.height:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mid = kb.open_bank(bank.path)
    assert kb.check_bank(mid) == []
    done_before = mid.entries.height - mid.entries["linked_at"].null_count()
    report = connect(mid)
    assert report["entries"] == mid.entries.height - done_before
    final = kb.open_bank(bank.path)
    assert final.entries["linked_at"].null_count() == 0
    auto = final.edges.filter(pl.col("source") == "auto")
    assert auto.select("src", "dst", "type").is_duplicated().sum() == 0
    pairs = auto.select(pl.min_horizontal("src", "dst").alias("a"), pl.max_horizontal("src", "dst").alias("b"))
    assert pairs.is_duplicated().sum() == 0  # at most one automatic link per pair
    deg = pl.concat([auto["src"], auto["dst"]]).value_counts()["count"]
    assert deg.max() <= 12


def test_second_run_exits_3_while_the_first_holds_the_bank(tmp_path, demo_dir):
    # The first run is a real process holding the job's lock until the test lets it go, so the
    # second always meets it held: a real `kb connect` on the demo finishes in a fraction of a
    # second, sooner than a second interpreter starts, and racing it made this test flaky.
    bank = _copy(demo_dir, tmp_path)
    unlinked = bank.entries["linked_at"].null_count()
    assert unlinked > 0
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    hold = ("import sys, kbtools as kb\n"
            "from kbtools.ops.jobs import job_lock\n"
            "with job_lock(kb.open_bank(sys.argv[1]), 'connect'):\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.read()\n")
    first = subprocess.Popen([sys.executable, "-c", hold, str(bank.path)], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert first.stdout.readline().strip() == "held"
        second = subprocess.run([*JOB, "connect", str(bank.path), "--json"], env=env, capture_output=True, text=True, timeout=120)
    finally:
        first.stdin.close()
        first.wait(timeout=60)
    assert first.returncode == 0
    assert second.returncode == 3, second.stdout + second.stderr
    out = json.loads(second.stdout)
    assert out["status"] == "running" and "already running" in out["error"]
    assert f"pid {first.pid}" in out["error"]  # names the holder
    assert kb.open_bank(bank.path).entries["linked_at"].null_count() == unlinked  # and did nothing
    third = subprocess.run([*JOB, "connect", str(bank.path), "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stdout + third.stderr  # the lock went with its holder
    assert kb.open_bank(bank.path).entries["linked_at"].null_count() == 0


def test_decay_prunes_faded_and_dangling_but_never_trusted(tmp_path):
    bank = kb.create_bank(tmp_path / "b")
    a = kb.report_learning(bank, content="Fact A about caches.", actor="x", link=False)
    b = kb.report_learning(bank, content="Fact B about caches.", actor="x", link=False)
    c = kb.report_learning(bank, content="Fact C about caches.", actor="x", link=False)
    old = kb.store.bank.utcnow() - dt.timedelta(days=400)
    fresh = kb.store.bank.utcnow()
    kb.edit_edges(bank, add=pl.DataFrame([
        {"src": a, "dst": b, "type": "see_also", "source": "auto", "weight": 0.4, "seen_at": old, "created_at": old},
        {"src": b, "dst": c, "type": "see_also", "source": "auto", "weight": 0.9, "seen_at": fresh, "created_at": fresh},
        {"src": a, "dst": c, "type": "cites", "source": "author", "weight": 1.0, "seen_at": old, "created_at": old},
    ]), actor="test", reason="setup")
    report = decay(bank)
    left = set(bank.edges.select("src", "dst", "source").iter_rows())
    assert (a, b, "auto") not in left  # 0.4 * 0.5^(400/180) = 0.086 < 0.1
    assert (b, c, "auto") in left and (a, c, "author") in left
    assert report["pruned"] == 1
    assert decay(bank)["pruned"] == 0


def test_reinforce_and_feedback(tmp_path):
    bank = kb.create_bank(tmp_path / "b")
    fix = kb.report_learning(bank, content="Found it: the encoder cable on line 3 was loose.", kind="event", actor="x", link=False)
    prob = kb.report_learning(bank, content="Line 3 keeps faulting with error E-217.", kind="event", actor="x", link=False)
    kb.link(bank, fix, prob, "see_also", source="auto", weight=0.5, actor="connect")
    assert kc.reinforce(bank, [fix, prob])["reinforced"] == 1
    w = bank.edges.filter(pl.col("source") == "auto")["weight"][0]
    assert w == pytest.approx(0.5 + 0.2 * 0.5, abs=1e-3)
    out = kc.feedback(bank, fix, [prob])
    assert out == {"links": 1, "replaced": 1}
    row = bank.edges.row(0, named=True)
    assert (row["src"], row["dst"], row["type"], row["source"], row["weight"]) == (fix, prob, "resolves", "feedback", 0.8)
    with pytest.raises(kb.EntryNotFound):
        kc.feedback(bank, fix, ["0badf00d"])


def test_report_learning_links_at_write_time(tmp_path):
    bank = kb.create_bank(tmp_path / "b")
    t0 = kb.store.bank.utcnow()
    p = kb.report_learning(bank, content="Line 3 keeps faulting with error E-217.", kind="event", session_id="s1", actor="x", created_at=t0)
    f = kb.report_learning(bank, content="Found it: the encoder cable on line 3 was loose.", kind="event", session_id="s1", actor="x",
                           created_at=t0 + dt.timedelta(minutes=5))
    auto = bank.edges.filter(pl.col("source") == "auto")
    assert auto.select("src", "dst", "type").rows() == [(f, p, "resolves")]
    assert json.loads(auto["evidence"][0])["why"]
    assert bank.entries["linked_at"].null_count() == 0
    off = kb.create_bank(tmp_path / "off", settings={"auto_link": False})
    kb.report_learning(off, content="Line 3 keeps faulting with error E-217.", kind="event", session_id="s1", actor="x")
    kb.report_learning(off, content="Found it: the encoder cable on line 3 was loose.", kind="event", session_id="s1", actor="x")
    assert off.edges.height == 0


def test_explain_through_the_bank(tmp_path):
    bank = kb.create_bank(tmp_path / "b")
    t0 = kb.store.bank.utcnow()
    p = kb.report_learning(bank, content="Line 3 keeps faulting with error E-217.", kind="event", session_id="s1", actor="x", created_at=t0, link=False)
    f = kb.report_learning(bank, content="Found it: the encoder cable on line 3 was loose.", kind="event", session_id="s1", actor="x",
                           created_at=t0 + dt.timedelta(minutes=1), link=False)
    score = kb.explain(bank, f, p)
    assert score.linked and score.type == "resolves"
    assert set(score.signals) == {"share", "sem", "bridge", "time", "cue"}
    with pytest.raises(kb.EntryNotFound):
        kb.explain(bank, f, "0badf00d")


def test_jobs_entry_points_help_and_usage():
    for job in ("backfill", "connect", "decay"):
        out = subprocess.run([sys.executable, f"jobs/{job}.py", "--help"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.dirname(__file__)))
        assert out.returncode == 0 and "--bank" in out.stdout and "--dry-run" in out.stdout and "Exit status" in out.stdout
        bad = subprocess.run([sys.executable, f"jobs/{job}.py"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.dirname(__file__)))
        assert bad.returncode == 2


def test_new_entries_extend_the_term_statistics_instead_of_rebuilding(tmp_path, demo_dir, monkeypatch):
    from kbtools.linker import TermStats

    bank = _copy(demo_dir, tmp_path)
    connect(bank, limit=50)
    builds = []
    real = TermStats.build.__func__

    def counting(cls, *a, **k):
        builds.append(1)
        return real(cls, *a, **k)

    monkeypatch.setattr(TermStats, "build", classmethod(counting))
    for i in range(3):
        kb.report_learning(bank, content=f"Kafka consumer lag grows when max.poll.records is {i}00.", actor="a")
    assert builds == []  # each write extended the statistics
    kb.update_entry(bank, bank.entries["id"][0], actor="a", content="Rewritten text about nginx burst.")
    kb.report_learning(bank, content="Another note on nginx burst limits.", actor="a")
    assert builds == [1]  # a changed text is a rebuild


def test_the_linkers_neighbour_index_grows_with_appended_entries(tmp_path, demo_dir):
    ents, edges = _small(demo_dir / "engineering", n=300)
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    kb.ops.import_frames(bank, entries=ents, edges=edges, guard=False)
    kb.embed_bank(bank, embedder="hashing-char")
    kb.report_learning(bank, content="Kafka consumer lag grows when max.poll.records is 500.", actor="a")
    vectors = lc.linker_vectors(bank)
    index = lc.neighbour_index(bank, vectors)
    assert index.ntotal == bank.entries.height == len(vectors)
    new = kb.report_learning(bank, content="Nginx burst limits drop requests under a spike.", actor="a")
    vectors = lc.linker_vectors(bank)
    grown = lc.neighbour_index(bank, vectors)
    assert grown is index and grown.ntotal == bank.entries.height  # grown in place, not rebuilt
    row = bank.entries["id"].to_list().index(new)
    assert grown.search(vectors[row : row + 1], 1)[1][0, 0] == row
    kb.update_entry(bank, bank.entries["id"][0], actor="a", content="Rewritten text about nginx burst.")
    kb.embed_bank(bank)  # re-embeds the changed entry
    rebuilt = lc.neighbour_index(bank, lc.linker_vectors(bank))
    assert rebuilt is not index and rebuilt.ntotal == bank.entries.height


def test_connect_with_the_neighbour_index_equals_linking_one_by_one(tmp_path, demo_dir):
    ents, edges = _small(demo_dir / "engineering", n=120)
    bank = kb.create_bank(tmp_path / "b", embedder=None)
    kb.ops.import_frames(bank, entries=ents, edges=edges, guard=False)
    kb.embed_bank(bank, embedder="hashing-char")
    vectors = lc.linker_vectors(bank)
    index = lc.neighbour_index(bank, vectors)
    report = connect(bank, chunk=37)
    assert report["links_made"] > 20
    got = set(bank.edges.filter(pl.col("source") == "auto").select("src", "dst", "type").iter_rows())
    e, ed = bank.entries.with_columns(pl.lit(None).cast(bank.entries["linked_at"].dtype).alias("linked_at")), edges
    settings = kc.linker_settings(bank)
    for eid in e.sort("created_at", "id")["id"].to_list():
        plan = plan_links(eid, e, ed, None, vectors=vectors, neighbors=index, settings=settings)
        e, ed = apply_in_memory(e, ed, plan)
    want = set(ed.filter(pl.col("source") == "auto").select("src", "dst", "type").iter_rows())
    assert got == want


def test_seed_section_4_numbers_through_the_public_bank_api(tmp_path):
    """The seed's nine memories written with report_learning, the triple with add_triple, then
    kb.explain with the seed's cosines and a lexical embedder's settings."""
    from tests.seed_memories import _ROWS, COSINES

    bank = kb.create_bank(tmp_path / "seed", settings={"auto_link": False})
    ids = {}
    for name, kind, content, session, at in _ROWS:
        ids[name] = kb.report_learning(bank, content=content, kind=kind, session_id=session, created_at=at, actor="seed")
    kb.ops.add_triple(bank, "Kioko", "uses", "pgvector", actor="seed")
    lex = kb.linker.LINKER_LEXICAL

    fix = kb.explain(bank, ids["fix"], ids["fault"], cosine=COSINES[("fix", "fault")], settings=lex)
    assert fix.linked and fix.type == "resolves"
    assert fix.signals["share"] == pytest.approx(0.156, abs=1e-3)
    assert fix.raw == pytest.approx(0.787, abs=1e-3) and fix.score == pytest.approx(0.669, abs=1e-3)
    dec = kb.explain(bank, ids["decision"], ids["goal"], cosine=COSINES[("decision", "goal")], settings=lex)
    assert dec.linked and dec.type == "serves" and dec.score == pytest.approx(0.60, abs=1e-3)
    assert "Kioko" in dec.why and "pgvector" in dec.why
    les = kb.explain(bank, ids["lesson"], ids["procedure"], cosine=COSINES[("lesson", "procedure")], settings=lex)
    assert les.linked and les.type == "refines" and les.score == pytest.approx(0.542, abs=1e-3)
    tea = kb.explain(bank, ids["plc"], ids["tea"], cosine=COSINES[("tea", "plc")], settings=lex)
    assert not tea.linked and tea.raw == pytest.approx(0.0, abs=1e-9)
