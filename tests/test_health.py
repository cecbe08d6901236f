"""The health report: on the demo bank, on an empty bank and on a bank with every kind of damage
it is meant to find; ``kb health --json --html``."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import polars as pl

import kbtools as kb
from kbtools.demo.banks import DEMO_DIR

NAMES = ["note_coverage", "noteless_siblings", "leaky_notes", "hubs", "isolated", "hidden_hop", "near_prune",
         "flows", "duplicate_candidates", "storage"]


def test_health_on_the_demo_bank():
    path = DEMO_DIR / "engineering"
    manifest = (path / "manifest.json").read_bytes()
    report = kb.health(kb.open_bank(path, readonly=True))
    assert [f.name for f in report.findings] == NAMES
    # the three leaky hop tasks; the seed's own example note ("needs --http1.1 from curl") names a
    # token of its target's title, which is how, not what
    assert report.finding("leaky_notes").count == 3
    assert report.finding("duplicate_candidates").count > 0  # the planted pairs
    assert report.finding("isolated").count > 0 and report.finding("storage").count == 0
    for f in report.findings:
        assert f.fix and isinstance(f.count, int) and len(f.examples) <= 5
    json.dumps(report.to_dict())
    html = report._repr_html_()
    assert "kb judge PATH --dry-run" in html and "notes that restate their target" in html
    assert (path / "manifest.json").read_bytes() == manifest  # reads never write


def test_health_on_an_empty_bank(tmp_path):
    report = kb.health(kb.create_bank(tmp_path / "b"))
    assert all(f.count == 0 for f in report.findings)
    assert "✓" in report.to_text()


def test_health_finds_the_damage(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    ids = [kb.report_learning(bank, content=f"Fact number {i} about the build cache and runner image {i}."
                              + (" Tracked as QX-4471-Z." if i == 4 else ""), actor="a") for i in range(6)]
    parent = ids[0]
    kb.link(bank, ids[1], parent, "split_from", actor="a")  # two note-less siblings of one parent
    kb.link(bank, ids[2], parent, "split_from", actor="a")
    kb.link(bank, ids[3], ids[4], "see_also", actor="a", note="Its fix is QX-4471-Z.")  # restates the target
    old = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=2 * 180 + 30)  # faded to ~0.45*0.3
    kb.edit_edges(bank, add=[{"src": ids[4], "dst": ids[5], "type": "see_also", "source": "auto", "weight": 0.5}],
                  actor="linker", reason="test")
    edge = bank.edges.filter(pl.col("source") == "auto").with_columns(pl.lit(old).cast(pl.Datetime("us", "UTC")).alias("seen_at"))
    kb.edit_edges(bank, add=edge, actor="linker", reason="age it", replace=True)
    for _ in range(5):
        kb.ops.record_usage(bank, [ids[3]], query="build cache")  # ids[4] is one hop away, never returned
    kb.update_entry(bank, ids[5], actor="a", content="Fact number 5, rewritten.")  # dead rows until compaction
    report = kb.health(bank)
    assert report.finding("noteless_siblings").examples[0] == {"parent": parent, "type": "split_from",
                                                               "siblings": sorted(ids[1:3])}
    assert report.finding("leaky_notes").count == 1
    hidden = report.finding("hidden_hop")
    assert hidden.count >= 1 and hidden.examples[0]["next_to"] == ids[3]
    assert ids[4] in {e["id"] for e in hidden.examples}
    assert report.finding("near_prune").count == 1
    storage = report.finding("storage")
    assert storage.count > 0 and storage.detail["dead_rows"] > 0 and "kb compact" in storage.fix
    assert report.finding("note_coverage").count == 2


def test_kb_health_cli(tmp_path):
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    out = tmp_path / "health.html"
    proc = subprocess.run([sys.executable, "-m", "kbtools", "health", str(DEMO_DIR / "business"), "--json",
                           "--html", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [f["name"] for f in data["findings"]] == NAMES
    assert data["findings"][NAMES.index("flows")]["count"] > 0  # the business bank's planted holes
    assert "kb holes PATH --flows" in out.read_text()


def test_kb_judge_and_kb_health_report_progress_on_stderr():
    # off a terminal: timestamped lines at each quarter of each stage (the search for candidate
    # pairs, then the judging of the pairs found), the last line of each whole
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    for args, label in ((["judge", str(DEMO_DIR / "engineering"), "--dry-run"], "judge: "),
                        (["health", str(DEMO_DIR / "engineering")], "health: duplicate candidates: ")):
        proc = subprocess.run([sys.executable, "-m", "kbtools", *args], capture_output=True, text=True, env=env,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        stages: dict[int, list[int]] = {}
        for line in proc.stderr.splitlines():
            if label in line:
                done, total = line.rsplit(" ", 1)[-1].split("/")
                stages.setdefault(int(total), []).append(int(done))
        assert len(stages) == 2, proc.stderr  # the search, then the judging
        for total, done in stages.items():
            assert len(done) >= 2 and done[-1] == total > 0, proc.stderr


def test_a_document_bank_is_not_faulted_for_its_own_structure(tmp_path):
    # kb ingest joins each document's sections to its first entry (source "structure"): those edges
    # need no note, and a document's sections are not note-less duplicate siblings
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, topic in (("cache", "build cache"), ("runner", "runner image")):
        (docs / f"{name}.md").write_text(
            f"# The {topic}\n\nWhat the {topic} is for.\n\n## Sizing the {topic}\n\nGive the {topic} 20 GB.\n\n"
            f"## Cleaning the {topic}\n\nPrune the {topic} weekly.\n\n## Watching the {topic}\n\nAlert at 90 % full.\n",
            encoding="utf-8")
    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char")
    kb.ingest(bank, docs, max_level=2)
    structure = bank.edges.filter(pl.col("source") == "structure")
    assert structure.height >= 6 and set(structure["type"]) == {"part_of"}
    report = kb.health(bank)
    assert report.finding("note_coverage").count == 0
    assert report.finding("noteless_siblings").count == 0
    assert report.finding("note_coverage").detail["by_source"]["structure"]["with_note"] == 0  # still shown
    kb.link(bank, structure["src"][0], structure["dst"][0], "split_from", actor="a")  # an agent's note-less edge
    kb.link(bank, structure["src"][1], structure["dst"][1], "split_from", actor="a")
    assert kb.health(bank).finding("note_coverage").count == 2


def test_a_table_read_whole_by_a_cold_query_is_storage_to_tidy_until_compacted(tmp_path):
    # a bank filled before its last compaction has no sidecars: a fresh process's first query reads
    # its tables whole; kb health says so (from sidecars_from rows) and kb compact writes them
    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char", settings={"auto_link": False})
    for i in range(4):
        kb.report_learning(bank, content=f"The cache runner {i} keeps its image for {i + 2} days.", actor="a")
    ids = bank.entries["id"].to_list()
    kb.link(bank, ids[1], ids[0], "see_also", actor="a", note="the same runner pool")
    assert kb.health(bank).finding("storage").detail["sidecars"] == {"entries": False, "edges": False}
    flagged = kb.health(bank, sidecars_from=1).finding("storage")
    assert {e["table"] for e in flagged.examples if "sidecar" in e} == {"entries", "edges"}
    assert kb.health(bank).finding("storage").count == flagged.count - 2  # small tables: not worth it
    bank.compact(sweep_age=0)
    after = kb.health(bank, sidecars_from=1).finding("storage")
    assert after.detail["sidecars"] == {"entries": True, "edges": True} and after.count == 0


def test_a_documents_sections_do_not_make_its_first_section_a_hub(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    sections = "\n\n".join(f"## Step {i}\n\nDo thing number {i} with the tool." for i in range(12))
    (docs / "guide.md").write_text("# The guide\n\nHow to run it.\n\n" + sections + "\n")
    (docs / "faq.md").write_text("# FAQ\n\nSee [the guide](guide.md) first.\n")
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder=None)
    kb.ingest(bank, docs)
    kb.backfill(bank)
    head = bank.entries.filter(pl.col("title") == "The guide")["id"][0]
    assert kb.centrality(bank).filter(pl.col("id") == head)["hub"][0]  # twelve part_of edges
    hubs = kb.health(bank).finding("hubs")
    assert hubs.count == 0 and "a document's parts aside" in hubs.title
