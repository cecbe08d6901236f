"""kb ingest on real files: folders of Markdown / reST / text, JSONL records, mapped edges with a
stated direction, citation patterns resolved through a key column (written by backfill), dry run,
the report with unresolved references, the guard modes, and the inputs a first import meets
(flagged rows, all-null list columns, naive timestamps, hex ids in notes, wrapped citations)."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

import kbtools as kb
from kbtools.errors import KbError, ValidationError
from kbtools.ops.citations import citing_sentence, plan_backfill
from kbtools.ops.sections import sentences, split_at_paragraphs, split_sections
from kbtools.model.guard import transient_reason
from kbtools.ops.ingest import ingest, parse_edge_map, read_documents
from kbtools.ops.jobs import backfill

KB = [sys.executable, "-m", "kbtools"]

LONG_PARA = ("The cache key includes the locale because two users with different languages must not share a "
             "rendered page. ") * 8


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "docs"
    (d / "guides").mkdir(parents=True)
    (d / "guides" / "cache.md").write_text(
        "# Caching\n\nPages are cached per user.\n\n## Keys\n\nDeeper heading stays inside.\n\n"
        "# Invalidation\n\n" + "\n\n".join([LONG_PARA] * 6) + "\n", encoding="utf-8")
    (d / "deploy.rst").write_text(
        "Deploying\n=========\n\nShip with the script.\n\nRollback\n========\n\nRun it backwards.\n\n"
        "Details\n-------\n\nA subsection.\n", encoding="utf-8")
    (d / "notes.txt").write_text("Plain notes without any heading. Second sentence.", encoding="utf-8")
    (d / "image.png").write_bytes(b"\x89PNG")
    return d


def test_folder_sections_cap_and_part_of(corpus, bank):
    report = ingest(bank, corpus, cap=1200)
    bank.reload()
    ents = bank.entries
    titles = sorted(ents["title"].to_list())
    assert report["documents"] == 3
    assert "Caching" in titles and "Caching — Caching" not in titles and "Caching — Invalidation" in titles
    assert "Deploying — Rollback" in titles and "notes" in titles
    assert not any("Keys" in t or "Details" in t for t in titles)  # deeper headings stay inside
    pieces = ents.filter(pl.col("title").str.starts_with("Caching — Invalidation"))
    assert pieces.height >= 3 and report["sections_split"] == 1
    assert pieces["content"].str.len_chars().max() <= 1200
    first = ents.filter(pl.col("title") == "Caching")["id"][0]
    part_of = bank.edges.filter(pl.col("type") == "part_of")
    cache_ids = set(ents.filter(pl.col("title").str.starts_with("Caching"))["id"].to_list()) - {first}
    assert set(part_of.filter(pl.col("src").is_in(sorted(cache_ids)))["dst"].to_list()) == {first}
    assert set(part_of["source"].to_list()) == {"structure"}
    summary = ents.filter(pl.col("title") == "Deploying")["summary"][0]
    assert summary == "Ship with the script."
    # a second run adds nothing
    again = ingest(bank, corpus, cap=1200)
    assert again["entries"] == 0 and again["already_present"] == ents.height


def test_split_helpers():
    assert [s.heading for s in split_sections("Title\n=====\n\nx\n\nSub\n---\n\ny", fmt="rst", max_level=2)] == ["Title", "Sub"]
    pieces = split_at_paragraphs("\n\n".join(["a" * 90] * 5), cap=200)
    assert all(len(p) <= 200 for p in pieces) and "".join(pieces).count("a") == 450
    assert sentences("It is\nwrapped, e.g. here. Next.") == ["It is wrapped, e.g. here.", "Next."]


def test_rst_titles_labels_and_markup_as_sphinx_reads_them():
    # a two-letter title takes a two-character underline (CMake's ``if`` command page)
    assert [s.heading for s in split_sections("if\n--\n\nConditionally run.\n", fmt="rst")] == ["if"]
    assert [s.heading for s in split_sections("Title\n--\n\nx\n", fmt="rst")] == [""]  # too short an underline
    # a preamble a reader never sees is no section; an admonition is read
    hidden = split_sections(".. highlight:: c\n\n.. index:: pair: x; y\n\nIntro\n=====\n\nText.\n", fmt="rst")
    assert [s.heading for s in hidden] == ["Intro"]
    shown = split_sections(".. note:: This PEP is obsolete.\n\nIntro\n=====\n\nText.\n", fmt="rst")
    assert [s.heading for s in shown] == ["", "Intro"]
    labelled = split_sections(".. _top:\n\nAlpha\n=====\n\nx\n\n.. _inner:\n\ny\n\n.. _next:\n\nBeta\n====\n\nz\n",
                              fmt="rst")
    assert [(s.heading, s.labels) for s in labelled] == [("Alpha", ("top", "inner")), ("Beta", ("next",))]


def _jsonl(tmp_path, rows):
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


RECORDS = [
    {"n": 1, "body": "Old way\n=======\n\nUse the old loader. It reads INI files.\n", "meta": {"Title": "Old loader",
     "Superseded-By": "2", "Created": "13-Jun-2000", "Topic": "Packaging"}},
    {"n": 2, "body": "New way\n=======\n\nUse the new loader, which replaces\nDOC 1 and its INI parsing. "
                     "It reads TOML.\n\nMore\n====\n\nSee DOC 3 and DOC 77 too.\n",
     "meta": {"Title": "New loader", "Requires": "3, 99", "Created": "2001-02-03"}},
    {"n": 3, "body": "Base\n====\n\nThe base format.\n", "meta": {"Title": "Base format"}},
]


def test_jsonl_edges_direction_cite_and_unresolved(tmp_path, bank):
    path = _jsonl(tmp_path, RECORDS)
    report = ingest(bank, path, text_field="body", key_field="n", fmt="rst", title_field="Title",
                    title_format="DOC {key}: {title}", created_field="Created", systems_field="Topic",
                    edges=["Superseded-By=value supersedes record", "Requires=requires"], cite=r"DOC\s+(\d+)")
    bank.reload()
    ents = bank.entries
    head = {t.split(":")[0]: i for i, t in ents.select("id", "title").iter_rows() if "More" not in t}
    e = bank.edges
    sup = e.filter(pl.col("type") == "supersedes")
    assert sup.select("src", "dst").rows() == [(head["DOC 2"], head["DOC 1"])]  # the successor is the source
    assert e.filter(pl.col("type") == "requires").select("src", "dst").rows() == [(head["DOC 2"], head["DOC 3"])]
    assert set(e.filter(pl.col("type") != "part_of")["source"].to_list()) == {"import"}
    assert report["unresolved"] == [{"doc": "docs.jsonl:2", "field": "Requires", "value": "99"}]
    assert report["citations"]["unresolved_keys"] == ["77"]
    old = ents.filter(pl.col("id") == head["DOC 1"]).row(0, named=True)
    assert old["systems"] == ["packaging"] and old["created_at"].year == 2000
    assert json.loads(old["metadata"])["key"] == "1"
    # the citation pattern is recorded; backfill writes the cites edges with whole sentences as notes
    assert e.filter(pl.col("type") == "cites").height == 0
    out = backfill(bank)
    bank.reload()
    cites = bank.edges.filter(pl.col("type") == "cites").sort("dst")
    assert out["written"] == cites.height == 2
    note = cites.filter(pl.col("dst") == head["DOC 1"])["note"][0]
    assert note == "Use the new loader, which replaces DOC 1 and its INI parsing."
    assert backfill(bank)["written"] == 0


def test_dry_run_writes_nothing_and_cli_reports(tmp_path):
    path = _jsonl(tmp_path, RECORDS)
    bank_dir = tmp_path / "b"
    kb.create_bank(bank_dir)
    cmd = [*KB, "ingest", str(bank_dir), "--from", str(path), "--text-field", "body", "--key", "n",
           "--format", "rst", "--title-field", "Title", "--edge", "Requires=requires", "--cite", r"DOC\s+(\d+)"]
    dry = subprocess.run([*cmd, "--dry-run", "--json"], capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] and report["entries"] == 4 and report["unresolved"][0]["value"] == "99"
    assert kb.open_bank(bank_dir).entries.height == 0 and not kb.open_bank(bank_dir).settings.get("citations")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "wrote 4 entries" in run.stdout and "unresolved references: 1" in run.stdout
    assert kb.open_bank(bank_dir).entries.height == 4
    bad = subprocess.run([*cmd, "--edge", "Requires=needs"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "edge type 'needs'" in bad.stderr


def test_edge_map_parsing():
    assert parse_edge_map("Replaces=record supersedes value").forward
    with pytest.raises(ValidationError, match="direction"):
        parse_edge_map("Replaces=value supersedes other")


def test_jsonl_needs_the_text_field(tmp_path, bank):
    path = _jsonl(tmp_path, RECORDS)
    with pytest.raises(ValidationError, match="--text-field"):
        read_documents(path, text_field="text")
    assert bank.entries.height == 0


def test_a_record_without_text_is_left_out_and_listed_a_repeated_key_refused(tmp_path, bank):
    rows = [*RECORDS, {"n": 4, "body": None, "meta": {"Title": "Withdrawn stub"}}, {"n": 5, "meta": {"Title": "x"}},
            {"n": 6, "body": "  ", "meta": {"Title": "blank"}}]
    report = ingest(bank, _jsonl(tmp_path, rows), text_field="body", key_field="n", fmt="rst", dry_run=True)
    assert [(x["line"], x["key"]) for x in report["left_out"]] == [(4, "4"), (5, "5"), (6, "6")]
    assert report["documents"] == 3  # the three with text, planned as before
    with pytest.raises(ValidationError, match="line 1 has this key too") as err:
        read_documents(_jsonl(tmp_path, [*RECORDS, {**RECORDS[0], "body": "again"}]), text_field="body", key_field="n")
    assert err.value.row == 4
    assert bank.entries.height == 0


def test_bpmn_source_goes_to_the_bpmn_importer(tmp_path, bank):
    (tmp_path / "p.bpmn").write_text("<definitions/>")  # not a BPMN model: the importer names it
    version = bank.version
    with pytest.raises(KbError, match="p.bpmn"):
        ingest(bank, tmp_path / "p.bpmn")
    assert bank.version == version and bank.entries.height == 0


# ------------------------------------------------------------------- the guard: recipe vs transcript

RECIPE = """To find why the session-create POST is refused, compare the two protocol versions; the
refusal only shows over HTTP/2, so force HTTP/1.1 when you script it.

    $ curl -sS -X POST https://api.example.com/session --http2 -o /dev/null -w '%{http_code}'
    421
    $ curl -sS -X POST https://api.example.com/session --http1.1 -o /dev/null -w '%{http_code}'
    201

The 421 (misdirected request) comes from the CDN's HTTP/2 coalescing; keep --http1.1 in the script."""

TRANSCRIPT = """$ kubectl get pods -n web
NAME                   READY   STATUS             RESTARTS   AGE
web-7c9d8f6b5-x2k4p    0/1     CrashLoopBackOff   12         37m
$ kubectl logs web-7c9d8f6b5-x2k4p -n web --tail 3
Error: listen EADDRINUSE: address already in use :::8080
$ kubectl describe pod web-7c9d8f6b5-x2k4p -n web | tail -2
  Warning  BackOff  2m (x160 over 37m)  kubelet  Back-off restarting failed container"""


def test_guard_tells_a_recipe_from_a_transcript():
    assert transient_reason(RECIPE) is None
    assert "transcript" in transient_reason(TRANSCRIPT)
    doctest = ("The result is a list:\n\n    >>> sorted({3, 1})\n    [1, 3]\n    >>> len([])\n    0\n\n"
               "Sets are unordered, so sort them before comparing.")
    assert transient_reason(doctest) is None
    # a config file's comment block: "# " lines of sentences are no root prompts
    comments = ("# This is the global list of trusted keys.  Comment lines, like this\n"
                "# one, as well as empty lines are ignored.  Lines have a length limit\n"
                "# but this is not serious limitation as the format of the entries is\n"
                "# fixed and checked by gpg-agent.  A non-comment line starts with\n"
                "# optional white space, followed by the fingerprint in hex.\n")
    assert transient_reason(comments) is None
    assert "transcript" in transient_reason("# ls /etc\nhosts\n# cat /etc/hosts\n127.0.0.1 localhost")


def _guard_rows():
    return pl.DataFrame({"id": ["a1b2c3d4", "b2c3d4e5"], "content": [RECIPE, TRANSCRIPT],
                         "title": ["Force HTTP/1.1 for session-create", "pods"]})


def test_import_guard_report_is_the_default(bank):
    out = kb.ops.import_frames(bank, entries=_guard_rows())  # a flagged row is reported, not a refused import
    assert out["entries"] == 2
    assert [r["id"] for r in out["flagged"]] == ["b2c3d4e5"]
    stats = kb.bank_stats(bank.reload())
    assert [r["id"] for r in stats["flagged_by_guard"]] == ["b2c3d4e5"]
    from kbtools.evaluate.bank_stats import format_stats

    assert "GUARD: 1 entr" in format_stats(stats)


def test_import_guard_reject_and_off(tmp_path):
    b1 = kb.create_bank(tmp_path / "r")
    with pytest.raises(ValidationError, match="row 2.*transcript"):
        kb.ops.import_frames(b1, entries=_guard_rows(), guard="reject")
    assert b1.reload().entries.height == 0
    b2 = kb.create_bank(tmp_path / "o")
    assert "flagged" not in kb.ops.import_frames(b2, entries=_guard_rows(), guard="off")


def test_cli_import_guard_flags(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _guard_rows().to_dicts()) + "\n")
    run = subprocess.run([*KB, "import", str(tmp_path / "b"), "--create", "--entries", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "the guard flagged 1 row(s)" in run.stdout and "b2c3d4e5" in run.stdout
    rej = subprocess.run([*KB, "import", str(tmp_path / "c"), "--create", "--entries", str(path), "--guard", "reject"],
                         capture_output=True, text=True, timeout=120)
    assert rej.returncode == 1 and "rejected by the guard" in rej.stderr


# ------------------------------------------------------------------- casts on import


def test_import_frames_casts_read_ndjson_frames(tmp_path, bank):
    path = tmp_path / "e.jsonl"
    rows = [{"id": "a1b2c3d4", "content": "Cache keys include the locale.", "systems": [], "tasks": [],
             "usage_count": 2, "created_at": "2024-05-01T10:00:00"},
            {"id": "b2c3d4e5", "content": "Locale comes from the header.", "systems": [], "tasks": [],
             "usage_count": 0, "created_at": "2024-05-02T10:00:00"}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    frame = pl.read_ndjson(path)
    assert frame.schema["systems"] == pl.List(pl.Null)  # what a user gets
    edges = pl.DataFrame({"src": ["a1b2c3d4"], "dst": ["b2c3d4e5"], "type": ["cites"], "weight": [1]})
    naive = frame.with_columns(pl.col("created_at").str.to_datetime())
    out = kb.ops.import_frames(bank, entries=naive, edges=edges)  # an all-null list column (List(Null)) is cast, not refused
    assert out["entries"] == 2
    got = bank.reload().entries.sort("id")
    assert got["systems"].to_list() == [[], []] and got["created_at"][0].hour == 10
    assert str(got["created_at"].dtype.time_zone) == "UTC"
    with pytest.raises(ValidationError, match="weight.*cannot be cast to Float64"):
        kb.ops.import_frames(bank, edges=edges.with_columns(pl.lit("high").alias("weight"), pl.lit("see_also").alias("type")))


# ------------------------------------------------------------------- the leak lint and notes


def test_leak_lint_ignores_the_targets_own_id():
    from kbtools.evaluate.leak import leaky_notes

    entries = pl.DataFrame({"id": ["5361983c", "a1b2c3d4"], "title": ["Fetch fix", "Release notes"],
                            "summary": ["x", "y"], "useful_for": [None, None],
                            "content": ["Fetch no longer asks for tags it has.",
                                        "The fixes in 5361983c made fetch faster."]})
    edges = pl.DataFrame({"src": ["a1b2c3d4"], "dst": ["5361983c"], "type": ["cites"], "source": ["citation_backfill"],
                          "note": ["The fixes in 5361983c made fetch faster."]})
    assert leaky_notes(entries, edges).height == 0  # a cited id is not a rare token the note restates
    leaking = edges.with_columns(pl.lit("Fixed in 5361983c, tracked as ZX-4471-Q.").alias("note"))
    ents = entries.with_columns(pl.Series("content", ["Tracked as ZX-4471-Q.", "The fixes in 5361983c."]))
    assert leaky_notes(ents, leaking)["reason"].to_list() == ["rare token ZX-4471-Q"]


WRAPPED = """fetch: speed up the tag walk

This follows up on the earlier work. E.g., the fixes in 6c915c3f (fetch: do not ask for
tags we already have) made the second fetch cheap, but the first one still walks every
ref. Walk only the new ones.
"""


def test_backfill_note_is_the_whole_wrapped_sentence():
    ents = pl.DataFrame({"id": ["a1b2c3d4", "6c915c3f"], "content": [WRAPPED, "fetch: do not ask for tags"],
                         "metadata": ["{}", "{}"]})
    plan = plan_backfill(ents, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String}))
    note = plan.add["note"][0]
    # the sentence is whole, not cut at the parenthesis
    assert note == ("E.g., the fixes in 6c915c3f (fetch: do not ask for tags we already have) made the second "
                    "fetch cheap, but the first one still walks every ref.")
    long = "Intro. " + "word " * 80 + "then 6c915c3f and " + "more " * 80 + "end. Last."
    trimmed = citing_sentence(long, "6c915c3f", limit=120)
    assert len(trimmed) <= 120 and "6c915c3f" in trimmed and trimmed.startswith("…") and trimmed.endswith("…")


# ------------------------------------------------------------------- a folder of Markdown docs


def _docs_folder(root):
    (root / "guides").mkdir(parents=True)
    (root / "ops").mkdir()
    (root / "guides" / "deploy.md").write_text(
        "---\ntitle: Deploying the service\ntags: [ops, deploy]\ndate: 2024-03-01\n---\n\n"
        "Deploys go through the pipeline. See [rolling back](../ops/rollback.md#undo) when it fails.\n\n"
        "The [status page](https://status.example.com) shows the run, and [the FAQ](faq.md) the rest.\n\n"
        "![the pipeline](img/pipeline.png) and [the slides](deck.pdf) are pictures, not documents.\n")
    (root / "ops" / "rollback.md").write_text("# Rolling back\n\nRoll back with `kubectl rollout undo`.\n\n"
                                              "# Undo\n\nThen tell the [deploy guide](../guides/deploy.md) owners.\n")
    return root


def test_a_docs_folder_keeps_front_matter_out_and_links_its_files(tmp_path, bank):
    src = _docs_folder(tmp_path / "docs")
    report = ingest(bank, src)
    assert report["links"]["references_found"] == 3 and report["links"]["resolved"] == 2  # no image, no PDF
    assert report["links"]["unresolved_keys"] == ["guides/faq"]  # a file the folder does not hold
    rows = {r["title"]: r for r in bank.entries.iter_rows(named=True)}
    deploy = rows["Deploying the service"]  # the front matter's title, not the file's name
    assert not deploy["content"].startswith("---") and "tags:" not in deploy["content"]
    assert deploy["created_at"].date().isoformat() == "2024-03-01"
    assert {"Rolling back", "Rolling back — Undo"} <= set(rows)  # the first section is the document itself
    backfill(bank)
    cites = bank.edges.filter(pl.col("type") == "cites").select("src", "dst", "note").rows()
    undo, head = rows["Rolling back — Undo"]["id"], rows["Rolling back"]["id"]
    assert sorted(cites) == sorted([
        (deploy["id"], head, "See [rolling back](../ops/rollback.md#undo) when it fails."),
        (undo, deploy["id"], "Then tell the [deploy guide](../guides/deploy.md) owners.")])
    assert ingest(bank, src)["entries"] == 0  # a second run adds nothing


def test_a_docs_site_links_its_pages_from_the_root(tmp_path, bank):
    d = tmp_path / "content"
    (d / "commands").mkdir(parents=True)
    (d / "using").mkdir()
    (d / "commands" / "install.md").write_text("# install\n\nSee [the config](/using/config) and "
                                                "[the CDN](//cdn.example.com/x.js).\n")
    (d / "using" / "config.md").write_text("# config\n\nRead by [install](../commands/install.md).\n")
    report = ingest(bank, d)
    assert (report["links"]["references_found"], report["links"]["resolved"]) == (2, 2)  # no protocol-relative URL
    backfill(bank)
    titles = dict(bank.entries.select("id", "title").iter_rows())
    cites = bank.edges.filter(pl.col("type") == "cites").select("src", "dst").rows()
    assert {(titles[a], titles[b]) for a, b in cites} == {("install", "config"), ("config", "install")}


def test_reference_links_resolve_through_their_documents_definitions(tmp_path, bank):
    d = tmp_path / "api"
    d.mkdir()
    (d / "fs.md").write_text("# File system\n\n## fs.open()\n\nOpens a file, see [`fs.close()`][]. "
                             "It fails with one of the [system errors][errs].\n\n## fs.close()\n\nCloses it.\n\n"
                             "[`fs.close()`]: #fsclose\n[errs]: errors.md#system-errors\n[web]: https://nodejs.org\n")
    (d / "errors.md").write_text("# Errors\n\nSee [the web][web] and [`fs.open()`][].\n\n[`fs.open()`]: fs.md#fsopen\n")
    report = ingest(bank, d)
    assert report["links"]["resolved"] == 2  # a place of the same page, a web page, an undefined label: none
    backfill(bank)
    titles = dict(bank.entries.select("id", "title").iter_rows())
    cites = bank.edges.filter(pl.col("type") == "cites").select("src", "dst", "note").rows()
    assert sorted((titles[a], titles[b], note) for a, b, note in cites) == [
        ("Errors", "File system — fs.open()", "See [the web][web] and [`fs.open()`][]."),  # the page's first entry
        ("File system — fs.open()", "Errors", "It fails with one of the [system errors][errs]."),
    ]


def test_a_held_out_link_is_masked_as_backfill_resolves_it(tmp_path, bank):
    from kbtools.evaluate.masking import mask_citations

    ingest(bank, _docs_folder(tmp_path / "docs"))
    backfill(bank)
    held = bank.edges.filter(pl.col("type") == "cites").select("src", "dst")
    masked, report = mask_citations(bank.entries, held, patterns=bank.settings["citations"])
    assert report["by_rule"]["pattern"] == 2  # both links (a summary shows a link as its text, not its target)
    # what the masked link reads as in the summary goes with it
    assert dict(masked.select("title", "summary").iter_rows())["Rolling back — Undo"] == "Then tell the [ref] owners."
    for field in ("content", "summary"):
        assert not masked[field].str.contains(r"\]\((\.\./ops/rollback|\.\./guides/deploy)").any()
    assert masked["content"].str.contains("status.example.com").any()  # not a link between the files


def test_a_markdown_file_under_one_title_is_split_at_its_sections(tmp_path, bank):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "install.md").write_text("# Installing\n\nPick your platform.\n\n## Linux\n\nUse the package.\n\n"
                                  "### Debian\n\napt works.\n\n## macOS\n\nUse brew.\n")
    (d / "faq.md").write_text("## Why\n\nBecause.\n\n## How\n\nLike this.\n")  # sections, no title heading
    ingest(bank, d)
    titles = sorted(bank.entries["title"].to_list())
    assert titles == ["Installing", "Installing — Linux", "Installing — macOS", "Why", "Why — How"]
    linux = bank.entries.filter(pl.col("title") == "Installing — Linux")["content"][0]
    assert "apt works." in linux  # a deeper heading stays inside its section


def test_a_sphinx_folder_links_its_documents_through_doc_roles(tmp_path, bank):
    d = tmp_path / "source"
    (d / "guides").mkdir(parents=True)
    (d / "index.rst").write_text("Project\n=======\n\nStart with :doc:`guides/install`, then :doc:`usage`.\n")
    (d / "guides" / "install.rst").write_text("Install\n=======\n\nBack to :doc:`the index </index>` when done.\n")
    report = ingest(bank, d)
    assert (report["links"]["references_found"], report["links"]["resolved"]) == (3, 2)
    assert report["links"]["unresolved_keys"] == ["usage"]
    backfill(bank)
    titles = dict(bank.entries.select("id", "title").iter_rows())
    cites = {(titles[a], titles[b]) for a, b in bank.edges.filter(pl.col("type") == "cites").select("src", "dst").rows()}
    assert cites == {("Project", "Install"), ("Install", "Project")}


def _sphinx_labels_folder(root):
    (root / "guides").mkdir(parents=True)
    (root / "index.rst").write_text(
        ".. highlight:: shell\n\n.. This comment and the directive above are no section.\n\n"
        ".. _start:\n\nProject\n=======\n\nRead :ref:`the install steps <install-steps>` first, then "
        ":ref:`Removal`.\nA :ref:`dup` label is defined twice, a :ref:`nowhere` label never.\n")
    (root / "guides" / "install.rst").write_text(
        "Install\n=======\n\n.. note:: Needs Python 3.11.\n\n.. _install-steps:\n\nSteps\n-----\n\n"
        "Run the installer.\n\n.. _dup:\n\nBack to :ref:`start`.\n\n.. _removal:\n\nRemoval\n=======\n\n"
        "Delete the folder.\n\n.. _dup:\n\nAgain.\n")
    return root


def test_a_sphinx_folder_links_its_sections_through_ref_labels(tmp_path, bank):
    report = ingest(bank, _sphinx_labels_folder(tmp_path / "source"), max_level=2)
    assert (report["links"]["references_found"], report["links"]["resolved"]) == (5, 3)
    assert sorted(report["links"]["unresolved_labels"]) == ["dup", "nowhere"]  # twice defined, never defined
    rows = {r["title"]: r for r in bank.entries.iter_rows(named=True)}
    assert sorted(rows) == ["Install", "Install — Removal", "Install — Steps", "Project"]  # no markup-only preamble
    backfill(bank)
    cites = {(bank.entries.filter(pl.col("id") == a)["title"][0], bank.entries.filter(pl.col("id") == b)["title"][0])
             for a, b in bank.edges.filter(pl.col("type") == "cites").select("src", "dst").rows()}
    # a label right before a title names that section; one inside a section names the section it is in
    assert cites == {("Project", "Install — Steps"), ("Project", "Install — Removal"),
                     ("Install — Steps", "Project")}
    assert "Needs Python 3.11." in rows["Install"]["content"]  # an admonition is text a reader sees


def test_a_summary_is_prose_not_code_nor_options():
    from kbtools.ops.sections import first_sentence

    assert first_sentence(".. code-block:: c\n   :class: good\n\n   PyObject *x;\n\nThe API returns a new reference.") \
        == "The API returns a new reference."
    # a short lead-in reads with what it leads in to; a sentence that says something stays itself
    assert first_sentence("Example::\n\n    set(X 1)\n\nGenerates code for both.") == "Example: set(X 1)"
    assert first_sentence("Output:\n\n    {\n      \"VpcId\": \"vpc-1\"\n    }\n") == 'Output: { "VpcId": "vpc-1" }'
    assert first_sentence("Fixes:\n\n- the leak in the pool\n- the retry") == "Fixes: the leak in the pool"
    long = "The following command deletes the bucket policy of my-bucket::\n\n    aws s3api delete-bucket-policy\n"
    assert first_sentence(long) == "The following command deletes the bucket policy of my-bucket:"
    # a word longer than the limit is cut inside, not dropped whole
    cut = first_sentence("Output::\n\n    " + "x" * 500, limit=60)
    assert cut.startswith("Output: xxx") and len(cut) == 60 and cut.endswith("…")
    assert first_sentence("```sh\nmake\n```\n\nBuild first.") == "Build first."
    assert first_sentence(".. note:: Needs 3.11.") == "Needs 3.11."  # an admonition is prose
    # code, when that is all there is
    assert first_sentence(".. code-block:: cmake\n\n   add_test(NAME t)\n") == "add_test(NAME t)"


def test_a_sphinx_folder_reads_included_files_into_the_pages_that_include_them(tmp_path, bank):
    d = tmp_path / "source"
    (d / "command").mkdir(parents=True)
    (d / "command" / "OPTIONS.txt").write_text("Options shared by two commands\n\n``--fast`` skips the checks.\n")
    (d / "command" / "build.rst").write_text(
        "build\n-----\n\nBuilds it.\n\n.. include:: OPTIONS.txt\n   :start-line: 2\n")
    (d / "command" / "test.rst").write_text("test\n----\n\nTests it.\n\n  .. include:: /command/OPTIONS.txt\n")
    (d / "loop.rst").write_text("Loop\n====\n\n.. include:: loop.rst\n\n.. include:: missing.txt\n")
    report = ingest(bank, d)
    assert report["included"] == {"command/OPTIONS.txt": "command/build.rst"}
    content = dict(bank.entries.select("title", "content").iter_rows())
    assert sorted(content) == ["build", "test"]  # the included file is no entry of its own
    assert "``--fast`` skips the checks." in content["build"] and "shared by" not in content["build"]  # :start-line:
    assert "  Options shared by two commands" in content["test"]  # from the root, indented like its directive
    # a loop and a missing file stay as written: a page of nothing but those directives is no entry
    assert report["markup_only"] == ["loop.rst — Loop"]


def test_a_section_of_markup_only_is_no_entry_and_its_labels_name_the_next(tmp_path, bank):
    d = tmp_path / "source"
    (d / "module").mkdir(parents=True)
    (d / "module" / "FindBoost.rst").write_text(".. cmake-module:: ../../Modules/FindBoost.cmake\n")
    (d / "manual.rst").write_text(".. _manual:\n\nManual\n======\n\n.. only:: html\n\n   .. contents::\n\n"
                                  "Introduction\n============\n\nBuild systems describe targets.\n")
    (d / "guide.rst").write_text("Guide\n=====\n\nSee :ref:`manual` and :module:`FindBoost`.\n")
    report = ingest(bank, d)
    assert sorted(report["markup_only"]) == ["manual.rst — Manual", "module/FindBoost.rst"]
    rows = {r["title"]: r for r in bank.entries.iter_rows(named=True)}
    assert sorted(rows) == ["Guide", "Manual — Introduction"]
    assert json.loads(rows["Manual — Introduction"]["metadata"])["head"]  # the document's first entry now
    backfill(bank)
    cites = bank.edges.filter(pl.col("type") == "cites").select("src", "dst").rows()
    assert cites == [(rows["Guide"]["id"], rows["Manual — Introduction"]["id"])]  # the label moved with the text


def test_a_held_out_ref_is_masked_as_backfill_resolves_it(tmp_path, bank):
    from kbtools.evaluate.masking import mask_citations

    ingest(bank, _sphinx_labels_folder(tmp_path / "source"), max_level=2)
    backfill(bank)
    held = bank.edges.filter(pl.col("type") == "cites").select("src", "dst")
    masked, _ = mask_citations(bank.entries, held, patterns=bank.settings["citations"])
    text = "\n".join(masked["content"].to_list())
    assert "install-steps>" not in text and ":ref:`Removal`" not in text and ":ref:`start`" not in text
    assert ":ref:`nowhere`" in text  # no held-out edge made it


def test_records_with_ids_of_their_own_go_through_ingest_titled_by_their_first_sentence(tmp_path, bank):
    rows = [{"id": "T-1", "title": "Refund approvals", "content": "Refunds over 500 EUR need a second approver. Always."},
            {"id": "T-2", "content": "The export job fails when the vendor flag is unset. Set it first."}]
    path = _jsonl(tmp_path, rows)
    with pytest.raises(ValidationError, match="kb ingest BANK --from FILE.jsonl --text-field content --key id"):
        kb.import_files(bank, entries=path)  # kbtools' own ids are 8 hex characters: the error says where to go
    ingest(bank, path, text_field="content", key_field="id")
    titles = dict(bank.entries.select(pl.col("metadata").str.json_path_match("$.key"), "title").iter_rows())
    assert titles == {"T-1": "Refund approvals", "T-2": "The export job fails when the vendor flag is unset."}


def test_a_code_block_cut_at_the_size_cap_keeps_its_lines_and_no_piece_is_summed_up_by_its_code(tmp_path, bank):
    # an AWS CLI example page: a literal block of JSON output longer than the cap, then prose
    d = tmp_path / "examples"
    d.mkdir()
    output = "\n".join(f'        "Field{i}": "value-{i}",' for i in range(60))
    (d / "describe-things.rst").write_text(
        "**Example 1: To describe a thing**\n\nThe following ``describe-things`` example describes a thing. ::\n\n"
        "    aws ec2 describe-things\n\nOutput::\n\n    {\n" + output + "\n    }\n\n"
        "**Example 2: To filter things**\n\nSee :ref:`the filters <filters>` and `the guide <https://x.org>`_.\n")
    ingest(bank, d, cap=1000)
    pieces = bank.entries.filter(pl.col("title").str.starts_with("describe-things")).sort("title")
    assert pieces.height >= 3
    content = "\n".join(pieces["content"].to_list())
    assert output in content  # cut at line ends, not spaced out by blank lines
    summaries = pieces["summary"].to_list()
    assert summaries[0] == "Example 1: To describe a thing"  # markup as a reader of the page sees it
    last = pieces.filter(pl.col("content").str.contains("Example 2"))["summary"][0]
    assert last == "Example 2: To filter things"  # not the JSON the piece starts with


def test_the_guard_reads_a_documents_prose_not_its_examples(tmp_path, bank):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "ls.rst").write_text(
        "**Listing buckets**\n\nThe following ``ls`` command lists your buckets. ::\n\n    aws s3 ls\n\n"
        "Output::\n\n    2013-07-11 17:08:50 bucket-one\n    2013-07-24 14:55:44 bucket-two\n"
        "    2013-07-25 09:00:01 bucket-three\n")
    (d / "status.rst").write_text("**Job status**\n\nThe job is currently running; check again later.\n")
    (d / "output.rst").write_text("Output::\n\n    2013-07-11 17:08:50 all code\n    2013-07-12 17:08:50 all code\n")
    # inline code is an example too; a thing described by what it does is no work in progress
    (d / "bench.md").write_text("# Bench\n\nKeep the bank with `kb bench --workdir /tmp/big`.\n\n"
                                "Stops a suite that is currently running. Each process\n512 bytes.\n")
    report = ingest(bank, d)
    # the example's timestamped output is no session log; a page of prose saying "currently running" is flagged
    assert [r["title"] for r in report["flagged"]] == ["status"]
    assert bank.entries.height == 4  # report mode imports them all
    with pytest.raises(ValidationError, match="rejected by the guard.*in progress"):
        ingest(kb.create_bank(tmp_path / "strict"), d, guard="reject")
    assert kb.open_bank(tmp_path / "strict").entries.height == 0


def test_files_named_alike_in_several_folders_are_titled_with_their_folders(tmp_path, bank):
    d = tmp_path / "examples"
    for service in ("ec2", "iot"):
        (d / service).mkdir(parents=True)
        (d / service / "tag-resource.rst").write_text(f"**To tag a resource**\n\nTags a {service} resource.\n")
    (d / "ec2" / "describe-instances.rst").write_text("**To describe an instance**\n\nDescribes it.\n")
    ingest(bank, d)
    assert sorted(bank.entries["title"].to_list()) == ["describe-instances", "ec2/tag-resource", "iot/tag-resource"]


def test_a_fenced_code_block_cut_at_the_size_cap_is_closed_and_opened_again(tmp_path, bank):
    d = tmp_path / "api"
    d.mkdir()
    code = "\n".join(f"console.log('line {i}');" for i in range(40))
    (d / "fs.md").write_text("# File system\n\n## fs.open()\n\nOpens a file.\n\n```mjs\n" + code +
                             "\n```\n\n### Performance\n\nThe call reads the whole file.\n")
    ingest(bank, d, cap=400)
    pieces = bank.entries.filter(pl.col("title").str.contains("fs.open")).sort("title")
    assert pieces.height >= 3
    for text in pieces["content"].to_list():
        assert sum(line.startswith("```") for line in text.split("\n")) % 2 == 0  # each piece reads as Markdown
    assert all(line in "\n".join(pieces["content"].to_list()) for line in code.split("\n"))
    last = pieces.filter(pl.col("content").str.contains("Performance"))["summary"][0]
    assert last == "Performance"  # its first prose (a heading without its marks), not the code it starts in
