"""The judge on the wording people write: the issue's bank (five facts written twice by two agents,
thirty template facts that differ only in their numbers) folds each written-twice fact into one
slot after ``kb judge``, and no pair that differs in a number is ever merged."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest

import kbtools as kb
from kbtools.judging.judge import MERGE_CONFIDENCE, compare_rows, rule_judge

TWICE = [
    ("The invoice export job needs the vendor flag set before it runs.",
     "Heads up: the invoice export job needs the vendor flag set before it runs, as we found again today."),
    ("The staging database refuses connections until the VPN profile is refreshed.",
     "Note: the staging database refuses connections until the VPN profile is refreshed."),
    ("Release branches are cut from main every second Tuesday by the release captain.",
     "FYI, as we found: release branches are cut from main every second Tuesday by the release captain."),
    ("The customer portal caches avatars for a day, so a new avatar shows up late.",
     "Update: the customer portal caches avatars for a day, so a new avatar shows up late."),
    ("Vendor invoices in the archive are searchable only by their purchase order reference.",
     "Vendor invoices in the archive are searchable only by their purchase order reference, as we found again."),
]


def _bank(tmp_path):
    """The issue's bank as a user writes it: a new bank's defaults, so each write embeds with the
    default embedder and links; the linker joins each written-twice pair with a ``see_also``."""
    bank = kb.create_bank(tmp_path / "b")
    ids = []
    for first, second in TWICE:
        ids.append((kb.report_learning(bank, content=first, actor="agent-1"),
                    kb.report_learning(bank, content=second, actor="agent-2")))
    for i in range(30):
        kb.report_learning(bank, content=f"Unrelated fact {i}: the team calendar shows room {100 + i} for the weekly sync.",
                           actor="agent-3")
    bank = kb.open_bank(bank.path)
    linked = {frozenset(p) for p in bank.edges.filter(pl.col("source") == "auto").select("src", "dst").iter_rows()}
    assert {frozenset(p) for p in ids} <= linked  # the linker's guesses, which the judge still reads
    return bank, ids


def test_candidates_rank_the_written_twice_facts_first(tmp_path):
    bank, ids = _bank(tmp_path)
    pairs = kb.ops.propose_duplicates(bank)
    top = {frozenset(p) for p in pairs.head(5).select("a", "b").iter_rows()}
    assert top == {frozenset(p) for p in ids}
    siblings = pairs.filter(pl.col("title_a").str.contains("Unrelated") | pl.col("title_b").str.contains("Unrelated"))
    assert siblings.height > 0 and siblings["differ"].is_not_null().all() and not siblings["same"].any()


def test_kb_judge_folds_each_written_twice_fact_into_one_slot(tmp_path):
    bank, ids = _bank(tmp_path)
    for (old, new), (text, _) in zip(ids, TWICE):  # before: the fact takes two slots
        assert {old, new} <= set(kb.query(bank, text, k=6, protect=0, record_usage=False).ids())
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-m", "kbtools", "judge", str(bank.path), "--json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["written"].get("merge", 0) + report["written"].get("supersedes", 0) == 5
    decisions = pl.DataFrame(report["decisions"])
    written = decisions.filter(pl.col("write") != "none")
    assert {frozenset(p) for p in written.select("a", "b").iter_rows()} == {frozenset(p) for p in ids}
    bank = kb.open_bank(bank.path)
    for (old, new), (text, _) in zip(ids, TWICE):
        answer = kb.query(bank, text, k=6, protect=0, record_usage=False)
        assert len({old, new} & set(answer.ids())) == 1  # one slot for the fact
    assert bank.entries.height == 40 - report["written"].get("merge", 0)



def test_judge_bank_then_query_gives_each_written_twice_fact_one_slot(tmp_path):
    bank, ids = _bank(tmp_path)
    report = kb.judge_bank(bank)
    written = report["decisions"].filter(pl.col("write") != "none")
    assert {frozenset(p) for p in written.select("a", "b").iter_rows()} == {frozenset(p) for p in ids}
    assert written["write"].to_list() == ["merge"] * 5  # framing aside the two say the same
    bank = kb.open_bank(bank.path)
    for (old, new), (text, _) in zip(ids, TWICE):
        answer = kb.query(bank, text, k=6, protect=0, record_usage=False)
        assert len({old, new} & set(answer.ids())) == 1
    template = bank.entries.filter(pl.col("content").str.starts_with("Unrelated fact"))
    assert template.height == 30  # one-liners that differ only in their numbers stay apart

@pytest.mark.parametrize("a, b", [
    ("Unrelated fact 14: the team calendar shows room 114 for the weekly sync.",
     "Unrelated fact 16: the team calendar shows room 116 for the weekly sync."),
    ("Customers on version 4.2 of the desktop app see a blank settings page.",
     "Heads up: customers on version 4.3 of the desktop app see a blank settings page."),
    ("Backups of db-prod-1 run at 02:00.", "Note: backups of db-prod-2 run at 02:00."),
    ("The Q3 review is on 2024-09-12.", "FYI the Q3 review is on 2024-09-19."),
    ("The pool holds 64 connections.", "The pool holds 128 connections, as we found again today."),
])
def test_a_pair_differing_only_in_a_value_is_never_a_duplicate(a, b):
    row = {"id": "a", "title": "", "content": a, "systems": [], "tasks": []}
    verdict = rule_judge(row, dict(row, id="b", content=b))
    assert verdict.action == "distinct" and compare_rows(row, dict(row, content=b)).conflicts


def test_a_correction_names_the_change_in_its_note():
    row = {"id": "a", "title": "", "content": "The API gateway timeout is 30 s.", "systems": [], "tasks": []}
    verdict = rule_judge(row, dict(row, id="b", content="Correction: the API gateway timeout is 60 s, not 30 s."))
    assert verdict.action == "supersede" and "changes 30 s to 60 s" in verdict.note
    same = rule_judge(row, dict(row, id="b", content="Heads up: the API gateway timeout is 30 s."))
    assert same.action == "merge" and same.confidence >= MERGE_CONFIDENCE


def test_health_lists_what_the_judge_folds(tmp_path):
    bank, ids = _bank(tmp_path)
    finding = kb.health(bank).finding("duplicate_candidates")
    report = kb.judge_bank(bank, dry_run=True)
    folded = report["decisions"].filter(pl.col("action") != "distinct")
    assert finding.count == folded.height == 5
    assert {frozenset((e["a"], e["b"])) for e in finding.examples} == {frozenset(p) for p in ids}
    seen = {(e["a"], e["b"]): e["action"] for e in finding.examples}
    assert seen == {(r["a"], r["b"]): r["action"] for r in folded.iter_rows(named=True)}
    assert finding.detail["differing_values"] > 0  # the template siblings: candidates, never findings


def _entry(id_, title, content):
    return {"id": id_, "title": title, "content": content, "systems": [], "tasks": []}


RUNBOOK = _entry("c0ffee12", "RB 17: Rotating the queue credentials",
                 "Rotate the queue credentials every quarter. Restart the consumers after the rotation.")


@pytest.mark.parametrize("newer", [
    "This runbook supersedes RB 17: rotate the credentials monthly and keep the consumers running.",
    "Replaces the earlier RB-0017. Rotate monthly, consumers reload the secret themselves.",
    "Rotate the queue credentials monthly instead of RB 17's quarterly schedule. Obsoletes c0ffee12.",
    "This note updates :rb:`17`: rotate monthly.",
    "A successor to rb 17, written after the new secret store went live.",
    "It would *supersede* RB 17 once the secret store is live.",
    "RB 17 was withdrawn in favour of this runbook after the audit.",
    "RB 17 will be retired when the secret store is live.",
    "Use this procedure in place of 'Rotating the queue credentials'.",
    "Reverts c0ffee1: the consumers could not reload the secret.",
])
def test_a_newer_entry_naming_the_one_it_replaces_supersedes_it(newer):
    assert rule_judge(RUNBOOK, _entry("d00d0001", "RB 31: Queue secrets", newer)).action == "supersede"


@pytest.mark.parametrize("older", [
    "Rotate the queue credentials every quarter. Superseded by RB 31.",
    "This runbook was withdrawn in favour of the secret store procedure in RB 31.",
    "Rotate the credentials by hand. Since the secret store, use RB-31 instead.",
    "Replaced by 'Queue secrets from the store' (rotation is automatic now).",
    "This runbook continues in a shorter form in RB 31.",
])
def test_an_older_entry_naming_its_successor_is_superseded(older):
    newer = _entry("d00d0001", "RB 31: Queue secrets from the store", "The secret store rotates the queue credentials.")
    assert rule_judge(_entry("c0ffee12", "RB 17: Rotating credentials", older), newer).action == "supersede"


@pytest.mark.parametrize("newer", [
    "This runbook does not replace RB 17; it adds the alerting steps.",
    "This page supplements rather than supersedes RB 17.",
    "Alert thresholds replace RB 17's defaults for the night shift.",  # a part of it, not the entry
    "The script replaces the manual step described in RB 17.",
    "RB 17, which replaced the old wiki page, still applies.",
    "Page the on-call engineer instead of the team lead; see RB 17 for the rotation itself.",
    "This runbook supersedes RB 18 and links RB 17 for the rotation.",  # names another entry
    "Rotate the queue credentials every quarter; the consumers are restarted after it, as RB 17 says.",
])
def test_a_mention_without_a_word_of_replacement_aimed_at_it_is_not_a_supersession(newer):
    assert rule_judge(RUNBOOK, _entry("d00d0001", "RB 31: Alerting for the queue", newer)).action != "supersede"


def test_after_kb_judge_a_corrected_fact_in_the_answer_names_the_result_that_corrects_it(tmp_path):
    bank = kb.create_bank(tmp_path / "b")  # a new bank's defaults: embedded, linked writes
    old = kb.report_learning(bank, content="The API gateway timeout is 30 s for the orders service.", actor="agent-1")
    for i in range(15):
        kb.report_learning(bank, content=f"Service {i} logs go to bucket logs-{i} with a retention of {i + 3} days.",
                           actor="agent-3")
    new = kb.report_learning(bank, content="Correction: the API gateway timeout is 60 s for the orders service, not 30 s.",
                             actor="agent-2")
    report = kb.judge_bank(bank)
    assert report["written"] == {"supersedes": 1}
    answer = kb.query(kb.open_bank(bank.path), "API gateway timeout orders service", k=4, record_usage=False)
    assert answer.ids()[:2] == [old, new]  # both protected: the top two always represent themselves
    above = answer.results[0].dominated_by
    assert [(p.id, p.relation, p.direction) for p in above] == [(new, "supersedes", "in")]
    assert "changes 30 s to 60 s" in above[0].note
    assert f"  ↳ answer: {new} supersedes (in)" in answer.text()
