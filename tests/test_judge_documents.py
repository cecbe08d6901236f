"""The judge on documents and on which way a supersession points: a value change is read on the
sentences that differ and only where the changed sentence restates the older one's (the same slot),
never over whole documents; a split is a sentence said word for word; an entry whose own status
says it was replaced is superseded by a newer one that names it and restates its title; and an
older entry that replaces the newer one is written as the one that supersedes."""

from __future__ import annotations

import json

import polars as pl
import pytest

import kbtools as kb
from kbtools.judging.judge import plan_verdicts, rule_judge


def _entry(id_, title, content, **meta):
    return {"id": id_, "title": title, "summary": "", "content": content, "systems": [], "tasks": [],
            "metadata": json.dumps(meta)}


# a long document: many sentences, values and change words ("now", "not", "raised") of its own
DOC = " ".join(f"Section {i}: the worker pool now handles {10 * i} jobs, not {10 * i - 5}, since the limit was raised."
               for i in range(1, 12))


def test_a_rewritten_document_is_not_read_as_a_correction():
    older = " ".join(f"Section {i}: the worker pool handles {10 * i} jobs on the batch queue." for i in range(1, 12))
    newer = " ".join(f"Section {i}: the worker pool handles {10 * i + 1} jobs, not on the batch queue." for i in range(1, 12))
    v = rule_judge(_entry("a1", "Worker pool", older), _entry("b2", "Worker pool", newer))
    assert v.action == "distinct"


def test_a_one_sentence_correction_inside_a_document_is_read_there():
    newer = DOC.replace("handles 30 jobs, not 25", "handles 40 jobs, not 30") + " Correction: section 3 was wrong."
    v = rule_judge(_entry("a1", "Worker pool", DOC), _entry("b2", "Worker pool", newer))
    assert v.action == "supersede" and "30" in v.note and "40" in v.note


def test_a_cue_in_another_sentence_does_not_make_a_changed_value_a_correction():
    older = "The mail gateway rewrites every link through its scanner. Tracked as YF-5666-V; quote it in any follow-up."
    newer = "Browsers land on the wrong virtual host when they reuse one connection. Tracked as BX-4701-S; quote it in any follow-up."
    assert rule_judge(_entry("a1", "", older), _entry("b2", "", newer)).action == "distinct"


@pytest.mark.parametrize("part", [
    "A quick way to confirm is to watch the analyzer while migrate runs.",  # one word differs
    "The alias looked healthy while the mapping was the real cause.",  # the roles swapped
])
def test_a_sentence_that_differs_from_the_older_ones_is_not_a_split(part):
    whole = ("The mapping looked healthy while the alias was the real cause. A quick way to confirm is to watch "
             "the mapping while migrate runs. Roll back the alias change first. Check the reindex queue after.")
    assert rule_judge(_entry("a1", "", whole), _entry("b2", "", part)).action != "split"


OLD = _entry("c0ffee12", "RB 17: Rotating the queue credentials", "Rotate the queue credentials every quarter by hand.",
             Status="Superseded")
NEW = _entry("d00d0001", "RB 31: Queue credentials from the store",
             "The secret store rotates the queue credentials; RB 17 described the manual rotation.")


def test_an_entry_marked_replaced_is_superseded_by_a_newer_one_that_names_it_and_takes_up_its_subject():
    assert rule_judge(OLD, NEW).action == "supersede"
    active = dict(OLD, metadata=json.dumps({"Status": "Active"}))
    assert rule_judge(active, NEW).action == "distinct"  # a mention alone is not a replacement
    unnamed = dict(NEW, content="The secret store rotates the queue credentials.")
    assert rule_judge(OLD, unnamed).action == "distinct"  # nor a status alone
    elsewhere = dict(NEW, title="RB 31: Alerting for the night shift")
    assert rule_judge(OLD, elsewhere).action == "distinct"  # nor naming it on another subject
    version = dict(NEW, title="RB 31: Rotating the queue credentials, version 2")
    assert rule_judge(active, version).action == "supersede"  # a new version of one document, by name


def test_an_older_entry_that_replaces_the_newer_is_the_one_written_as_superseding(tmp_path):
    older = _entry("c0ffee12", "RB 17: Queue credentials", "Rotate the queue credentials every quarter by hand.")
    newer = _entry("d00d0001", "RB 31: Queue credentials for the batch jobs",
                   "Rotate the batch credentials weekly. This runbook was merged into RB 17 after the audit.")
    v = rule_judge(older, newer)
    assert v.action == "supersede" and v.reverse
    plan = plan_verdicts(pl.DataFrame({"a": ["c0ffee12"], "b": ["d00d0001"], "score": [0.8], "action": [v.action],
                                       "note": [v.note], "confidence": [v.confidence], "reverse": [v.reverse]}))
    assert plan.select("src", "dst", "type").row(0) == ("c0ffee12", "d00d0001", "supersedes")


def test_judge_bank_writes_the_older_over_the_newer_when_the_older_replaces_it(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder=None)
    old = kb.report_learning(bank, title="Queue credentials runbook", content="Rotate the queue credentials every quarter by hand.",
                             actor="x")
    new = kb.report_learning(bank, title="Queue credentials for batch jobs",
                             content=f"Rotate the queue credentials every quarter by hand for batch jobs. Merged into {old}.",
                             actor="y")
    report = kb.judge_bank(bank, threshold=0.2)
    assert report["written"] == {"supersedes": 1}
    assert bank.edges.filter(pl.col("source") == "judge").select("src", "dst").row(0) == (old, new)


def test_the_pep_rows_keep_the_status_the_bank_keeps_and_never_the_relation():
    from kbtools.evaluate.judge_sets import pep_rows

    record = {"pep": 5, "body": "Guidelines.", "headers": {"Title": "Guidelines", "Status": "Superseded",
                                                          "Superseded-By": "387", "Created": "26-Oct-2000"}}
    row = pep_rows([record])[0]
    assert json.loads(row["metadata"]) == {"Status": "Superseded"} and "387" not in json.dumps(row)


@pytest.mark.parametrize("older, newer, action", [
    ("Queue credentials runbook v1", "Queue credentials runbook v2", "supersede"),
    ("Queue credentials runbook", "Queue credentials runbook v2.0", "supersede"),
    ("Queue credentials runbook v2", "Queue credentials runbook v1", "supersede"),  # the older is the revision
    ("Update the queue client to v1.66.0", "Update the queue client to v1.70.0", "other"),  # what it is about
    ("Queue credentials runbook v1", "Batch credentials runbook v2", "other"),
])
def test_a_title_with_a_higher_version_is_the_same_document_revised(older, newer, action):
    v = rule_judge(_entry("a1", older, "Rotate the credentials."), _entry("b2", newer, "Rotate the credentials by hand."))
    assert (v.action == "supersede") == (action == "supersede")
    assert v.reverse == (older.endswith("v2") and action == "supersede")


def test_two_parts_of_one_document_do_not_supersede_each_other_by_its_name():
    rationale = _entry("a1", "RB 17: Rotating the queue credentials — Rationale", "RB 17 rotates the credentials by hand.",
                       Status="Superseded")
    examples = _entry("b2", "RB 17: Rotating the queue credentials — Rationale (part 2)",
                      "As RB 17 says, rotate the queue credentials monthly.", Status="Superseded")
    assert rule_judge(rationale, examples).action != "supersede"


def test_a_model_may_say_the_older_one_replaces_the_newer():
    from kbtools.judging.judge import JUDGE_PROMPT, parse_verdict

    assert '"reverse": true' in JUDGE_PROMPT
    assert parse_verdict('{"action": "supersede", "note": "Replaces it.", "confidence": 0.8, "reverse": true}').reverse
    assert not parse_verdict('{"action": "supersede", "note": "Replaces it.", "confidence": 0.8, "reverse": "yes"}').reverse


def test_a_newer_entry_that_replaces_a_list_of_entries_supersedes_each_it_lists():
    """"replaces RB 12 (paging) and RB 17 (manual rotation)": RB 17 is replaced, though named second."""
    active = dict(OLD, metadata=json.dumps({"Status": "Active"}))
    listed = dict(NEW, content="This runbook replaces RB 12 (paging for the rotation) and RB 17 (the manual rotation).")
    assert rule_judge(active, listed).action == "supersede"
    kept = dict(NEW, content="This runbook replaces RB 12 (paging for the rotation); RB 17 stays as it is.")
    assert rule_judge(active, kept).action == "distinct"


def test_an_older_entry_that_says_the_newer_covers_it_is_superseded_by_it():
    active = dict(OLD, metadata=json.dumps({"Status": "Active"}))
    covered = dict(active, content="Rotate the queue credentials every quarter by hand. This is now fully covered "
                                   "by RB 31.")
    assert rule_judge(covered, NEW).action == "supersede"
    described = dict(active, content="Rotate the queue credentials every quarter by hand; RB 31 describes the store.")
    assert rule_judge(described, NEW).action == "distinct"


def test_commits_whose_bodies_say_alike_are_told_apart_by_their_subjects():
    """A commit's subject states the change; its body may hold only a reference ("Closes #8128")."""
    def commit(id_, subject, body):
        return {"id": id_, "title": subject, "summary": subject, "content": body, "systems": [], "tasks": [],
                "metadata": "{}"}

    assert rule_judge(commit("a0000001", "test1527: enable for hyper", "Closes #8128"),
                      commit("a0000002", "test1528: enable for hyper", "Closes #8128")).action == "distinct"
    assert rule_judge(commit("a0000003", "libssh: make atime/mtime date overflow return error", "Closes #9328"),
                      commit("a0000004", "libssh2: make atime/mtime date overflow return error", "Closes #9328")
                      ).action == "distinct"
    assert rule_judge(commit("a0000007", "tests: fix http servers to run with a dynamic log directory", "Ref: #10818"),
                      commit("a0000008", "tests: fix C servers to run with a dynamic log directory", "Ref: #10818")
                      ).action == "distinct"  # a subject that adds a word names another change
    assert rule_judge(commit("a0000005", "RELEASE-NOTES: synced", "RELEASE-NOTES: synced"),
                      commit("a0000006", "RELEASE-NOTES: synced", "RELEASE-NOTES: synced")).action == "merge"
    # sections of two documents that share a paragraph: the headings name two documents
    copyright_ = "This document has been placed in the public domain."
    assert rule_judge(_entry("b0000001", "PEP 8: Style Guide for Python Code — Copyright", copyright_),
                      _entry("b0000002", "PEP 20: The Zen of Python — Copyright", copyright_)).action == "distinct"
