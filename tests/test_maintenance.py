"""kbtools.ops.maintenance: connect, decay and explain over a real bank written here."""

from __future__ import annotations

import datetime as dt

import polars as pl

import kbtools as kb
from kbtools.ops.maintenance import connect_bank, decay_bank

TEXTS = ["Line 3 keeps faulting with error E-217 on the encoder.",
         "Found it: the encoder cable on line 3 was loose, error E-217 gone.",
         "The cafeteria menu changes on Mondays."]


def _bank(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    ids = [kb.report_learning(bank, content=t, actor="t", kind="event", session_id="s1") for t in TEXTS]
    return bank, ids


def test_connect_links_what_belongs_together_and_marks_entries_seen(tmp_path):
    bank, ids = _bank(tmp_path)
    report = connect_bank(bank)
    assert report["entries"] == 3 and report["links_made"] >= 1
    auto = bank.edges.filter(pl.col("source") == "auto")
    assert {ids[0], ids[1]} <= set(auto["src"].to_list() + auto["dst"].to_list())
    assert bank.entries["linked_at"].null_count() == 0
    assert connect_bank(bank)["entries"] == 0  # a second run has nothing left to link


def test_decay_dry_run_writes_nothing_and_a_real_run_prunes_faded_links(tmp_path):
    bank, ids = _bank(tmp_path)
    connect_bank(bank)
    version = bank.version
    far = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3650)
    dry = decay_bank(bank, dry_run=True, now=far)
    assert bank.version == version and dry["pruned"] == 0 and len(dry["plan"]) >= 1
    assert decay_bank(bank, now=far)["pruned"] == len(dry["plan"])
    assert bank.edges.filter(pl.col("source") == "auto").height == 0


def test_explain_scores_a_pair(tmp_path):
    bank, ids = _bank(tmp_path)
    score = kb.explain(bank, ids[1], ids[0])
    assert score.linked and score.score > kb.explain(bank, ids[2], ids[0]).score
