"""The kb command line: in-process through ``main([...])`` (what a subprocess would run, minus
the interpreter start), and as a real subprocess where the process matters (exit statuses)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import types

from kbtools.store.caches import cached_file_meta, write_cache_file
from kbtools.store.vectors import vector_segments


KB = [sys.executable, "-m", "kbtools"]


def run(*args, check=True, process=False):
    """``kb ARGS``: in-process by default, as a real subprocess with ``process=True``."""
    if process:
        env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
        proc = subprocess.run([*KB, *args], capture_output=True, text=True, env=env, timeout=600)
    else:
        from kbtools.cli.main import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as stop:  # --help and usage errors leave through argparse
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
        proc = types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())
    if check and proc.returncode != 0:
        raise AssertionError(f"kb {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_every_subcommand_has_help():
    from kbtools.cli.main import subcommands

    names = subcommands()
    assert {"demo", "stats", "check", "import", "export"} <= set(names)
    for name in names:
        out = run(name, "--help")
        assert "--json" in out.stdout, name


def test_demo_check_stats_json(tmp_path):
    out = json.loads(run("demo", "--out", str(tmp_path / "d"), "--json").stdout)
    assert out["engineering"]["entries"] > 1000 and out["business"]["entries"] > 50
    check = json.loads(run("check", str(tmp_path / "d/engineering"), "--json").stdout)
    assert check["ok"] is True
    stats = json.loads(run("stats", str(tmp_path / "d/business"), "--json").stdout)
    assert stats["edges_by_type"]["precedes"] > 10
    again = run("demo", "--out", str(tmp_path / "d"), check=False)
    assert again.returncode == 1 and "already there" in again.stderr


def test_not_a_bank_is_exit_1_with_the_path(tmp_path):
    proc = run("stats", str(tmp_path / "nope"), check=False, process=True)
    assert proc.returncode == 1 and str(tmp_path / "nope") in proc.stderr and "not a kbtools bank" in proc.stderr


def test_check_exit_4_on_problems(tmp_path):
    run("demo", "--out", str(tmp_path / "d"), "--only", "business")
    bank = tmp_path / "d/business"
    manifest = json.loads((bank / "manifest.json").read_text())
    manifest["tables"]["edges"].append("tables/edges/missing.parquet")
    (bank / "manifest.json").write_text(json.dumps(manifest))
    proc = run("check", str(bank), check=False, process=True)
    assert proc.returncode == 4 and "missing" in proc.stdout


def test_import_export_cli(tmp_path):
    run("demo", "--out", str(tmp_path / "d"), "--only", "business")
    run("export", str(tmp_path / "d/business"), "--to", str(tmp_path / "x"))
    out = json.loads(run("import", str(tmp_path / "copy"), "--create", "--entries", str(tmp_path / "x/entries.jsonl"),
                         "--edges", str(tmp_path / "x/entry_edges.jsonl"), "--json").stdout)
    assert out["entries"] > 50
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a1b2c3d4", "content": "x", "kind": "poem"}\n')
    proc = run("import", str(tmp_path / "copy"), "--entries", str(bad), check=False)
    assert proc.returncode == 1 and "row 1" in proc.stderr and "poem" in proc.stderr


def test_import_create_is_all_or_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "content": "x"}\n')
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a1b2c3d4", "content": "The session-create POST needs --http1.1."}\n')
    for _ in range(2):  # the same command again meets the same import error, not "a bank is already there"
        proc = run("import", str(tmp_path / "new/b"), "--create", "--entries", str(bad), check=False)
        assert proc.returncode == 1 and "row 1" in proc.stderr and "already there" not in proc.stderr
        assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()  # an empty folder that was there stays, emptied again
    assert run("import", str(tmp_path / "kept"), "--create", "--entries", str(bad), check=False).returncode == 1
    assert (tmp_path / "kept").is_dir() and not any((tmp_path / "kept").iterdir())
    run("import", str(tmp_path / "b"), "--create", "--entries", str(good))
    proc = run("import", str(tmp_path / "b"), "--create", "--entries", str(bad), check=False)
    assert "already there" in proc.stderr  # a bank that was there is never removed
    from kbtools.store.bank import open_bank

    assert open_bank(tmp_path / "b").entries.height == 1


def test_query_and_eval_commands_on_the_embedded_demo_bank(eng):
    q = json.loads(run("query", str(eng.path), "how do I log in to production with playwright", "--no-usage", "--json").stdout)
    assert len(q["results"]) == 8
    side = run("query", str(eng.path), "how do I log in to production with playwright", "--compare", "--no-usage").stdout
    assert "FLAT top-8" in side and "FOLDED" in side and "PROGRAMMATIC API FLOW" in side
    hop = json.loads(run("eval", "hoplab", str(eng.path), "--json").stdout)
    assert hop["agent"]["simulated"] is True and len(hop["excluded"]) == 3
    replay = run("eval", "replay", str(eng.path))
    assert "lost no relevant entry" in replay.stdout


def test_compact_says_which_cached_indexes_it_kept(tmp_path):
    import kbtools as kb

    bank = kb.create_bank(tmp_path / "b", embedder=None)
    for i in range(3):  # one vector segment per entry
        kb.report_learning(bank, content=f"Kiln {i} overheats after error K-7{i}.", actor="a", link=False)
        kb.embed_bank(bank, embedder="hashing")
    segments = [s["data"] for s in vector_segments(bank)]
    assert len(segments) == 3
    write_cache_file(bank, "index-x.kbx", "fp", lambda p: p.write_bytes(b"index"), meta={"segments": segments})
    out = run("compact", str(bank.path))
    assert "vectors folded into one segment, 1 cached index(es) kept" in out.stdout
    meta = cached_file_meta(kb.open_bank(bank.path), "index-x.kbx")[2]
    assert meta["segments"] == [s["data"] for s in vector_segments(kb.open_bank(bank.path))]
    assert "appended_ids" not in meta  # built over every folded segment: nothing written since
    again = json.loads(run("compact", str(bank.path), "--json").stdout)
    assert "caches_kept" not in again["vectors"]  # one segment: nothing folded


def test_linker_shows_sets_and_refuses(tmp_path):
    import kbtools as kb

    bank = kb.create_bank(tmp_path / "b")
    shown = run("linker", str(bank.path))
    assert "h = 0.3\n" in shown.stdout + "\n" and "*" not in shown.stdout
    out = run("linker", str(bank.path), "--set", "h=0.6", "--set", "max_new=4")
    assert "h = 0.6 *" in out.stdout and "changed: h -> 0.6, max_new -> 4" in out.stdout
    assert kb.open_bank(bank.path).settings["linker"] == {"h": 0.6, "max_new": 4}
    bad = run("linker", str(bank.path), "--set", "h=2", check=False, process=True)
    assert bad.returncode == 1 and "h='2': must be a number over 0 and at most 1" in bad.stderr
    assert kb.open_bank(bank.path).settings["linker"] == {"h": 0.6, "max_new": 4}  # nothing written
    back = json.loads(run("linker", str(bank.path), "--reset", "h", "--json").stdout)
    assert back["stored"] == {"max_new": 4} and back["settings"]["h"] == 0.3


def test_hubs_and_communities_say_which_edges_they_count(tmp_path, demo_dir):
    import shutil

    import kbtools as kb

    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    path = str(tmp_path / "eng")
    bank = kb.open_bank(path)
    n = bank.edges.height
    hubs = run("hubs", path).stdout.strip().splitlines()[-1]
    assert f"among {bank.entries.height} entries (the hub rule here: degree >= " in hubs
    assert f"counting trusted edges only ({n} of {n} edges)" in hubs and f"kb connect {path}" in hubs
    comm = run("communities", path).stdout.strip().splitlines()[-1]
    assert f"counting trusted edges only ({n} of {n} edges)" in comm and "have no counted link" in comm
    a, b = bank.entries["id"][:2]
    kb.link(bank, a, b, "see_also", actor="linker", source="auto", weight=0.6)
    hubs = run("hubs", path).stdout.strip().splitlines()[-1]
    assert f"({n} of {n + 1} edges); --all-links to include the 1 automatic links" in hubs
    every = run("hubs", path, "--all-links", "--all").stdout.strip().splitlines()[-1]
    assert f"counting every edge ({n + 1}, 1 automatic links included)" in every
    assert json.loads(run("hubs", path, "--json").stdout) == []  # --json stays the rows alone


def test_create_makes_an_empty_bank_and_says_what_next(tmp_path):
    import kbtools as kb

    path = str(tmp_path / "notes")
    out = run("create", path).stdout
    assert f"created an empty bank at {path} (embedder: minilm-int8; write-time links: on)" in out
    assert f"next: kb import {path} --entries" in out
    bank = kb.open_bank(path)
    assert bank.entries.height == 0 and bank.settings["embedder"] == "minilm-int8"
    again = run("create", path, check=False)
    assert again.returncode == 1 and "a bank is already there" in again.stderr
    bulk = json.loads(run("create", str(tmp_path / "bulk"), "--embedder", "none", "--no-auto-link", "--json").stdout)
    assert bulk["settings"] == {"auto_link": False} and bulk["version"] == 0
    assert run("create", str(tmp_path / "x"), "--embedder", "nope", check=False).returncode == 2


def test_holes_html_writes_the_diagram_and_the_table_offline(tmp_path, demo_dir):
    out = tmp_path / "report" / "holes.html"
    text = run("holes", str(demo_dir / "business"), "--html", str(out)).stdout
    assert text.rstrip().endswith(f"wrote {out} (the flows diagram and the holes table, offline)")
    page = out.read_text()
    assert "<script src=" not in page and "Plotly.newPlot" in page  # plotly.js embedded: opens offline
    assert "question to ask" in page and "high severity" in page and "lanes (owner)" in page
    rows = json.loads(run("holes", str(demo_dir / "business"), "--json", "--html", str(tmp_path / "b.html")).stdout)
    assert rows and (tmp_path / "b.html").exists()
