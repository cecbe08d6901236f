"""kbtools.ops.maintenance: connect, decay and explain over a real bank written here."""

from __future__ import annotations

import datetime as dt
import json

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


def test_linker_settings_stored_are_read_by_connect_audited_and_reset(tmp_path):
    from kbtools.ops.maintenance import configure_linker

    bank, ids = _bank(tmp_path)
    version = bank.version
    out = configure_linker(bank, {"threshold": "0.99", "max_new": 4}, actor="ana")
    assert out["changed"] == {"threshold": 0.99, "max_new": 4} and out["settings"]["threshold"] == 0.99
    assert bank.version == version + 1 and bank.settings["linker"] == {"threshold": 0.99, "max_new": 4}
    commit = json.loads((bank.path / "manifest.json").read_text())["commit"]  # the audit of the write
    assert commit["actor"] == "ana" and "threshold=0.99" in commit["reason"]
    assert connect_bank(bank)["links_made"] == 0  # nothing scores 0.99: connect read the stored threshold
    version = bank.version
    assert configure_linker(bank, {"threshold": 0.99})["changed"] == {} and bank.version == version  # no change: no commit
    out = configure_linker(bank, reset=["threshold"])
    assert out["stored"] == {"max_new": 4} and out["settings"]["threshold"] == 0.35 and out["changed"] == {"threshold": None}


def test_bad_linker_settings_are_refused_and_write_nothing(tmp_path):
    import pytest

    from kbtools.errors import ValidationError
    from kbtools.ops.maintenance import configure_linker

    bank, _ = _bank(tmp_path)
    version = bank.version
    for values, reset, rule in [({"h": 0}, (), "over 0"), ({"max_new": "2.5"}, (), "whole number"),
                                ({"nope": 1}, (), "not a linker setting"), ({"both_ends": "maybe"}, (), "true or false"),
                                ({"weights": [[1, 2]]}, (), "retired"), ({}, ["nope"], "not a linker setting"),
                                ({"h": 0.5}, ["h"], "both set and reset"), ({"omega": "nan"}, (), "at most 1")]:
        with pytest.raises(ValidationError, match=rule):
            configure_linker(bank, values, reset=reset)
    assert configure_linker(bank, {"h": 0.6}, dry_run=True)["changed"] == {"h": 0.6}
    assert kb.open_bank(bank.path).version == version and "linker" not in kb.open_bank(bank.path).settings


def test_settings_an_older_kbtools_stored_are_ignored_and_dropped(tmp_path):
    """A bank whose linker settings hold retired keys (an older kb calibrate's weights and its
    threshold, identifiers) opens and links as with them absent; a change or a reset drops them."""
    from kbtools.model.plan import Plan
    from kbtools.ops.link_context import linker_settings
    from kbtools.ops.maintenance import configure_linker

    bank, ids = _bank(tmp_path)
    old = {"weights": [["share", 1.0], ["bias", -1.0]], "threshold": 0.9, "identifiers": False, "h": 0.6}
    bank.apply(Plan(settings={"linker": old}), actor="t", reason="an older kbtools' settings")
    bank = kb.open_bank(bank.path)
    shown = configure_linker(bank)
    assert shown["ignored"] == ["identifiers", "threshold", "weights"] and shown["changed"] == {}
    assert linker_settings(bank) == kb.linker.LINKER_DEFAULTS.with_(h=0.6)
    assert kb.explain(bank, ids[1], ids[0]).linked and connect_bank(bank)["links_made"] >= 1
    version = bank.version
    out = configure_linker(bank, reset=["weights"])
    assert out["stored"] == {"h": 0.6} and out["ignored"] == [] and out["settings"] == shown["settings"]
    assert bank.version == version + 1 and kb.open_bank(bank.path).settings["linker"] == {"h": 0.6}
