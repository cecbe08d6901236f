"""A commit history as a bank: curl's commits (a slice of the real file), ingest then backfill."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import ValidationError
from kbtools.ops.citations import plan_backfill, prefix_resolver
from kbtools.ops.ingest_commits import ingest_commits, is_commits_file, plan_commits, read_commits

CURL = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "curl-commits.jsonl.gz"
pytestmark = pytest.mark.skipif(not CURL.exists(), reason="the shared curl commits file is not here")


@pytest.fixture(scope="module")
def curl_slice(tmp_path_factory):
    """The first 300 commits of the real file, as a .jsonl.gz of their own."""
    path = tmp_path_factory.mktemp("curl") / "curl-300.jsonl.gz"
    with gzip.open(CURL, "rt", encoding="utf-8") as src, gzip.open(path, "wt", encoding="utf-8") as out:
        for _, line in zip(range(300), src):
            out.write(line)
    return path


def test_cli_ingest_detects_commits_and_backfill_resolves_abbreviated_hashes(tmp_path, curl_slice):
    bank_dir = tmp_path / "curl"
    run = lambda *a: subprocess.run([sys.executable, "-m", "kbtools", *a], capture_output=True, text=True, timeout=300)
    out = run("ingest", str(bank_dir), "--create", "--embedder", "minilm-static", "--from", str(curl_slice))
    assert out.returncode == 0, out.stderr
    assert "300 documents -> wrote 300 entries" in out.stdout
    made = kb.open_bank(bank_dir, readonly=True)  # the embedder asked for, the texts embedded in the write
    assert made.settings["embedder"] == "minilm-static"
    assert kb.query(made, "fix a memory leak in the connection cache", k=3, record_usage=False).ids()
    again = run("ingest", str(bank_dir), "--embedder", "hashing-char", "--from", str(curl_slice))
    assert again.returncode == 1 and "--embedder goes with --create" in again.stderr
    out = run("backfill", str(bank_dir))
    assert out.returncode == 0, out.stderr
    bank = kb.open_bank(bank_dir, readonly=True)
    records = [json.loads(line) for line in gzip.open(curl_slice, "rt")]
    by_sha = {r["sha"]: r for r in records}
    ents = bank.entries
    assert ents.height == 300 and set(ents["id"]) == {r["sha"][:8] for r in records}
    first = ents.filter(pl.col("id") == records[0]["sha"][:8]).row(0, named=True)
    assert first["title"] == records[0]["subject"] and first["content"] == records[0]["body"]
    meta = json.loads(first["metadata"])
    assert meta["sha"] == records[0]["sha"] and meta["author"] == records[0]["author"]
    cites = bank.edges.filter(pl.col("type") == "cites")
    assert cites.height > 20 and set(cites["source"]) == {"citation_backfill"}
    # each edge: the citing message names a prefix (7+ characters) of the cited commit's hash
    sha_of = {r["sha"][:8]: r["sha"] for r in records}
    for src, dst in cites.select("src", "dst").iter_rows():
        body, target = by_sha[sha_of[src]]["body"], sha_of[dst]
        assert any(target[:n] in body for n in range(7, 41)), (src, dst)
    # every "Follow-up to <hash>" whose hash is in the slice is an edge
    follow = set()
    for r in records:
        for h in re.findall(r"Follow-up to ([0-9a-f]{7,40})", r["body"]):
            hit = [s for s in by_sha if s.startswith(h)]
            if len(hit) == 1 and hit[0] != r["sha"]:
                follow.add((r["sha"][:8], hit[0][:8]))
    assert follow and follow <= set(cites.select("src", "dst").iter_rows())
    # issue numbers are metadata, never edges
    closes = [json.loads(m).get("closes") for m in ents["metadata"]]
    assert sum(bool(c) for c in closes) > 100
    assert bank.edges.filter(pl.col("type") != "cites").height == 0
    # a second run adds nothing
    out = run("ingest", str(bank_dir), "--from", str(curl_slice))
    assert out.returncode == 0 and "wrote 0 entries (300 already present" in out.stdout


def test_plan_commits_trailers_and_metadata(curl_slice):
    records = read_commits(curl_slice, limit=50)
    plan = plan_commits(records)
    assert plan.entries.height == 50
    for rec, meta in zip(records, plan.entries["metadata"]):
        meta = json.loads(meta)
        closes = re.findall(r"^Closes #(\d+)", rec["body"], flags=re.M)
        assert meta.get("closes", []) == closes and meta["parents"] == rec["parents"]


def test_bad_commit_records_are_refused_naming_the_line(tmp_path):
    good = {"sha": "a" * 40, "parents": [], "author": "A", "date": "2026-01-01T00:00:00Z", "subject": "s", "body": ""}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "sha": "xyz"}) + "\n")
    assert is_commits_file(path)
    with pytest.raises(ValidationError, match="row 2|line 2|2"):
        read_commits(path)
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "sha": "a" * 8 + "b" * 32}) + "\n")
    with pytest.raises(ValidationError, match="first 8 characters"):
        plan_commits(read_commits(path))
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "subject": "again"}) + "\n")
    with pytest.raises(ValidationError, match="the same commit twice"):
        plan_commits(read_commits(path))
    bank = kb.create_bank(tmp_path / "b")
    with pytest.raises(ValidationError):
        ingest_commits(bank, path)
    assert bank.entries.height == 0


def test_a_record_without_body_or_parents_is_a_one_line_root_commit(tmp_path):
    first = {"sha": "a" * 40, "author": "A", "date": "2026-01-01T00:00:00Z", "subject": "init: the first commit"}
    rows = [first, {"sha": "b" * 40, "parents": None, "author": "B", "date": "2026-01-02T00:00:00Z",
                    "subject": "lib: tidy", "body": None},
            {"sha": "c" * 40, "parents": ["b" * 40], "author": "C", "date": "2026-01-03T00:00:00Z",
             "subject": "lib: fix", "body": "Follow-up to bbbbbbbbbb"}]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert is_commits_file(path)
    records = read_commits(path)
    assert [(r["parents"], r["body"]) for r in records[:2]] == [([], ""), ([], "")]
    entries = plan_commits(records).entries
    assert entries["content"].to_list()[:2] == ["init: the first commit", "lib: tidy"]  # the subject stands in
    silent = {"sha": "d" * 40, "author": "D", "date": "2026-01-04T00:00:00Z", "subject": "", "body": None}
    plan = plan_commits([*records, silent])
    assert plan.entries.height == 3 and plan.report["empty_messages"] == ["d" * 40]  # left out, listed
    path.write_text(json.dumps({k: v for k, v in first.items() if k != "subject"}) + "\n")
    with pytest.raises(ValidationError, match="subject"):
        read_commits(path)


def test_prefix_resolution_is_unique_and_long_enough():
    look = prefix_resolver({"abcdef0123": "x", "abcdef9999": "y"})
    assert look("abcdef0") == "x" and look("abcdef") is None and look("abcdef") is None
    ents = pl.DataFrame({"id": ["aaaaaaaa", "bbbbbbbb"], "content": ["Follow-up to bbbbbbbbbb12.", "x"],
                         "metadata": ['{"key": "aaaaaaaa00", "head": true}', '{"key": "bbbbbbbbbb1234", "head": true}']})
    plan = plan_backfill(ents, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String}),
                         patterns=[{"pattern": r"\b([0-9a-f]{7,40})\b", "resolve": "prefix"}])
    assert plan.add.select("src", "dst").rows() == [("aaaaaaaa", "bbbbbbbb")]



def test_cli_refuses_a_bad_commits_file_before_creating_the_bank(tmp_path):
    good = {"sha": "a" * 40, "parents": [], "author": "A", "date": "2026-01-01T00:00:00Z", "subject": "s", "body": ""}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "date": "yesterday"}) + "\n")
    out = subprocess.run([sys.executable, "-m", "kbtools", "ingest", str(tmp_path / "b"), "--create", "--from", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "row 2" in out.stderr and "date" in out.stderr
    assert not (tmp_path / "b").exists()
    out = subprocess.run([sys.executable, "-m", "kbtools", "ingest", str(tmp_path / "b"), "--create", "--from",
                          str(CURL), "--shape", "documents", "--limit", "3"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "--limit" in out.stderr


def test_the_link_mask_takes_the_pull_request_number_written_with_a_cited_hash(tmp_path, curl_slice):
    from kbtools.evaluate.links import held_out_frames
    from kbtools.evaluate.masking import MASK, mask_citations

    bank = kb.create_bank(tmp_path / "curl", embedder=None)
    ingest_commits(bank, curl_slice)
    kb.backfill(bank)
    ents, _, held = held_out_frames(bank.entries, bank.edges)
    body = dict(ents.select("id", "content").iter_rows())
    # the leak: "Follow-up to <hash> #N" names the cited commit twice, its message saying "Closes #N"
    written = [(src, dst) for src, dst in held.select("src", "dst").iter_rows()
               if re.search(r"[0-9a-f]{7,40} \(?#\d+", body[src] or "")]
    assert written
    masked, report = mask_citations(ents, held, patterns=bank.settings["citations"])
    assert report["by_rule"]["number"] >= len(written)
    after = dict(masked.select("id", "content").iter_rows())
    for src, _ in written:
        assert not re.search(re.escape(MASK) + r"[ \t]*\(?#\d", after[src]), after[src]
    # nothing else is taken: the cited commits keep their own "Closes #N"
    fields = [f for f in ("title", "summary", "content") if f in ents.columns]
    hashes = lambda frame: sum(frame[f].fill_null("").str.count_matches("#").sum() for f in fields)
    assert hashes(masked) == hashes(ents) - report["by_rule"]["number"]
