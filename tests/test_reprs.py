"""Rich notebook reprs: a bank's summary table, bank_stats tables, check_bank's problem list, the
reports' markdown; and progress bars (``progress=True``) on embed, connect and evaluation, silent by
default. Real banks on disk (the seeded demo bank copied to tmp_path)."""

from __future__ import annotations

import json
import shutil

import pytest

import kbtools as kb
from kbtools.model.reprs import BankStats, Problems


@pytest.fixture
def biz(tmp_path, demo_dir):
    shutil.copytree(demo_dir / "business", tmp_path / "business")
    shutil.copy(demo_dir / "business.truth.json", tmp_path / "business.truth.json")
    return kb.open_bank(tmp_path / "business")


def test_bank_shows_a_summary_table(biz):
    page = biz._repr_html_()
    assert str(biz.path) in page and f"version {biz.version}" in page
    assert f"<td style='{page.split('<td style=')[1].split('>')[0][1:-1]}'>entries</td>" in page
    assert f"{biz.entries.height:,}" in page and f"{biz.edges.height:,}" in page
    assert "var(--jp-" in page  # themed: reads in JupyterLab's dark theme


def test_bank_stats_stay_a_dict_and_render_tables(biz):
    stats = kb.bank_stats(biz)
    assert isinstance(stats, dict) and isinstance(stats, BankStats)
    assert json.loads(json.dumps(stats)) == dict(stats)  # JSON-ready, as the CLI prints it
    page = stats._repr_html_()
    assert "entries by kind" in page and "edges by source" in page
    kind, count = next(iter(stats["entries_by_kind"].items()))
    assert f"<td style=" in page and kind in page and str(count) in page


def test_check_bank_is_an_empty_list_when_sound_and_a_table_when_not(biz, tmp_path):
    problems = kb.check_bank(biz)
    assert problems == [] and isinstance(problems, Problems)
    assert "sound" in problems._repr_html_()
    bad = Problems([kb.model.Problem("edges", 3, "type", "cousin_of", "unknown edge type")])
    page = bad._repr_html_()
    assert "1 problem" in page and "cousin_of" in page and "unknown edge type" in page


def test_reports_render_as_markdown_in_a_notebook(biz):
    kb.embed_bank(biz, embedder="hashing")
    report = kb.evaluate.run_replay(kb.open_bank(biz.path))
    assert report._repr_markdown_() == report.to_markdown()
    assert "# Folding replay" in report._repr_markdown_()


def test_progress_is_silent_by_default_and_a_bar_when_asked(tmp_path, demo_dir, capsys):
    shutil.copytree(demo_dir / "engineering", tmp_path / "eng")
    shutil.copy(demo_dir / "engineering.truth.json", tmp_path / "eng.truth.json")
    bank = kb.open_bank(tmp_path / "eng")
    kb.embed_bank(bank, embedder="hashing")
    assert capsys.readouterr().err == ""  # a library call is silent unless asked
    bank = kb.open_bank(tmp_path / "eng")
    out = kb.embed_bank(bank, embedder="hashing", rebuild=True, progress=True)
    err = capsys.readouterr().err
    assert "embed" in err and f"{out['embedded']}/{out['embedded']}" in err  # tqdm's bar, on stderr outside Jupyter
    seen = []
    kb.connect(kb.open_bank(tmp_path / "eng"), rebuild=True, chunk=100, progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1] == bank.entries.height
    kb.connect(kb.open_bank(tmp_path / "eng"), rebuild=True, chunk=100, progress=True)
    assert "connect" in capsys.readouterr().err
    kb.evaluate.run_replay(kb.open_bank(tmp_path / "eng"), progress=True)
    assert "replay" in capsys.readouterr().err
    with pytest.raises(kb.ValidationError, match="progress is True, False, None or a callable"):
        kb.embed_bank(bank, embedder="hashing", rebuild=True, progress="yes")


def test_embed_progress_counts_entries_not_their_texts(tmp_path, demo_dir, monkeypatch):
    """Each entry is embedded as several texts (one per dimension); the progress counts entries, up
    to the number embedded, never past it (``kb embed`` printed 8000/2000 on the demo bank)."""
    monkeypatch.setenv("KBTOOLS_EMBED_CACHE", "0")  # every text embedded, none from the cache
    shutil.copytree(demo_dir / "business", tmp_path / "biz")
    bank = kb.open_bank(tmp_path / "biz")
    seen = []
    out = kb.embed_bank(bank, embedder="hashing", chunk=64, progress=lambda d, t: seen.append((d, t)))
    assert out["embedded"] == bank.entries.height and out["from_cache"] == 0
    assert {t for _, t in seen} == {out["embedded"]}
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and all(d <= t for d, t in seen)
    assert seen[-1] == (out["embedded"], out["embedded"]) and len(seen) > 3


def test_bank_repr_counts_rows_before_the_tables_are_read(biz, small_bank):
    fresh = kb.open_bank(biz.path)
    assert repr(fresh).endswith(f": {biz.entries.height} entries, {biz.edges.height} edges>")
    a, c, d = small_bank.ids
    kb.delete_entry(small_bank, d, reason="a test", actor="t")  # a tombstone and a bridged edge in a later segment
    kb.unlink(small_bank, c, a, "corrects", reason="a test", actor="t")
    later = kb.open_bank(small_bank.path)
    shown = repr(later)
    assert shown.endswith(f"v{later.version}: {later.entries.height} entries, {later.edges.height} edges>"), shown
    assert later.entries.height == 2 and later.edges.height == 0
