"""The judge as an edge source: the rule judge on hand-made pairs, a judge as a plain function,
the fold before and after, the LLM judge's interface, ``kb judge --dry-run`` and ``kb eval judge``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import kbtools as kb
from kbtools.demo.banks import DEMO_DIR, truth_path
from kbtools.errors import ValidationError
from kbtools.judging.judge import Verdict, candidate_pairs, parse_verdict, plan_verdicts, rule_judge

KB = [sys.executable, "-m", "kbtools"]


def _row(id_, content, *, title="T", systems=("postgres",), tasks=("migrate",), metadata="{}"):
    return {"id": id_, "title": title, "summary": "", "content": content, "systems": list(systems),
            "tasks": list(tasks), "metadata": metadata}


BASE = _row("a0000001", "Set lock_timeout to 5s before ALTER TABLE. Run migrations off-peak. Watch pg_locks while it runs.")


@pytest.mark.parametrize("newer, action", [
    (_row("b1", BASE["content"] + " Reported again."), "merge"),
    (_row("b2", "Watch pg_locks while it runs. Set lock_timeout to 5s before ALTER TABLE. Run migrations off-peak."), "merge"),
    (_row("b3", "Correction: set lock_timeout to 2s before ALTER TABLE. Run migrations off-peak. Watch pg_locks while it runs.",
          title="Correction: T"), "supersede"),
    (_row("b4", "Set lock_timeout to 2s before ALTER TABLE. Run migrations off-peak.",
          metadata=json.dumps({"supersedes": "a0000001"})), "supersede"),
    (_row("b5", "Watch pg_locks while it runs."), "split"),
    (_row("b6", "Set lock_timeout to 30s before ALTER TABLE. Run migrations off-peak. Watch pg_locks while it runs."), "distinct"),
    (_row("b7", BASE["content"], systems=("mysql",)), "distinct"),
    (_row("b8", "Redis keys expire after 300 seconds in staging."), "distinct"),
])
def test_rule_judge_verdicts_on_hand_made_pairs(newer, action):
    verdict = rule_judge(BASE, newer)
    assert verdict.action == action
    assert verdict.note and 0.0 <= verdict.confidence <= 1.0


def test_a_pair_where_one_negates_what_the_other_states_is_never_merged():
    found = _row("a1", "List of packages which were found during the CMake run.", title="PACKAGES_FOUND")
    missing = _row("b1", "List of packages which were not found during the CMake run.", title="PACKAGES_NOT_FOUND")
    assert rule_judge(found, missing).action == "distinct"
    added = _row("b2", "Heads up: the payment client retries three times, so do not add your own retry loop.")
    assert rule_judge(_row("a2", "The payment client retries three times."), added).action == "merge"  # added context


def test_entries_written_at_one_instant_never_correct_each_other():
    import datetime as dt

    at = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    old = _row("a1", "Added in v0.5.5. A boolean that is true on a debug build.")
    new = _row("b1", "Added in v0.5.3. A boolean that is true on a debug build, not a release one.")
    assert rule_judge(dict(old, created_at=at), dict(new, created_at=at + dt.timedelta(days=1))).action == "supersede"
    assert rule_judge(dict(old, created_at=at), dict(new, created_at=at)).action != "supersede"  # one ingest


def test_pages_of_two_documents_that_say_the_same_fold_without_deleting_either():
    text = "Specify a launcher for compile rules. See the global property of the same name for details."
    a = _row("a1", text, title="RULE_LAUNCH_COMPILE", metadata=json.dumps({"doc": "prop_dir/RULE_LAUNCH_COMPILE.rst"}))
    b = _row("b1", text, title="RULE_LAUNCH_COMPILE", metadata=json.dumps({"doc": "prop_tgt/RULE_LAUNCH_COMPILE.rst"}))
    verdict = rule_judge(a, b)
    assert verdict.action == "merge" and verdict.confidence < 0.9  # kb judge writes supersedes, deletes nothing
    assert rule_judge(a, dict(b, metadata="{}")).confidence >= 0.9  # one report said twice: merged
    section = dict(b, metadata=json.dumps({"doc": "prop_dir/RULE_LAUNCH_COMPILE.rst", "section": "Notes"}))
    assert rule_judge(a, section).confidence < 0.9  # two sections of one document: neither deleted
    part = dict(b, content="Specify a launcher for compile rules.")
    assert rule_judge(a, part).action == "distinct"  # a page saying a part of another: another page
    assert rule_judge(a, dict(part, metadata="{}")).action == "split"


def test_pages_alike_by_a_template_are_different_pages():
    # AWS CLI examples: a command and its "-entry" variant; CMake: one property of a directory and of a target
    acl = _row("a1", "To delete a network ACL. This example deletes the specified network ACL. Command: "
                     "aws ec2 delete-network-acl --network-acl-id acl-5fb85d36",
               title="delete-network-acl", metadata=json.dumps({"doc": "ec2/delete-network-acl.rst"}))
    entry = _row("b1", "To delete a network ACL entry. This example deletes ingress rule number 100 from the "
                       "specified network ACL. Command: aws ec2 delete-network-acl-entry --network-acl-id "
                       "acl-5fb85d36 --ingress --rule-number 100",
                 title="delete-network-acl-entry", metadata=json.dumps({"doc": "ec2/delete-network-acl-entry.rst"}))
    assert rule_judge(acl, entry).action == "distinct"
    directory = _row("c1", "Specify a launcher for compile rules. This overrides the global property for a directory.",
                     metadata=json.dumps({"doc": "prop_dir/RULE_LAUNCH_COMPILE.rst"}))
    target = _row("d1", "Specify a launcher for compile rules. This overrides the global and directory property "
                        "for a target.", metadata=json.dumps({"doc": "prop_tgt/RULE_LAUNCH_COMPILE.rst"}))
    assert rule_judge(directory, target).action == "distinct"
    # the same two texts reported by agents: one adds context to the other
    assert rule_judge(dict(acl, metadata="{}"), dict(entry, metadata="{}")).action == "merge"


def test_verdict_and_llm_interface_check_their_input():
    with pytest.raises(ValidationError, match="confidence"):
        Verdict("merge", "x", 1.5)
    with pytest.raises(ValidationError, match="JSON object"):
        parse_verdict("not json at all")
    prompts = []

    def complete(prompt: str) -> str:
        prompts.append(prompt)
        return 'Here: {"action": "supersede", "note": "Newer report of that one.", "confidence": 0.8}'

    judge = kb.llm_judge(complete)
    assert judge(BASE, _row("b9", "x")) == Verdict("supersede", "Newer report of that one.", 0.8)
    assert "[a0000001]" in prompts[0] and "[b9]" in prompts[0] and "never what" in prompts[0]


def test_candidate_pairs_skip_linked_pairs_and_order_by_age():
    e = pl.DataFrame({"id": ["a1", "b2"], "title": ["t", "t"], "summary": ["", ""],
                      "content": ["redis TTL is 300 in staging"] * 2, "systems": [["redis"]] * 2,
                      "tasks": [[], []], "created_at": [2, 1]})
    assert candidate_pairs(e).select("a", "b").row(0) == ("b2", "a1")  # b2 is the older
    edges = pl.DataFrame({"src": ["a1"], "dst": ["b2"], "type": ["see_also"], "source": ["author"]})
    assert candidate_pairs(e, edges=edges).height == 0  # an agent said how the two relate
    guessed = edges.with_columns(source=pl.lit("auto"))  # the linker found them alike: still a candidate
    assert candidate_pairs(e, edges=guessed).height == 1
    assert candidate_pairs(e, edges=guessed.with_columns(type=pl.lit("supersedes"))).height == 0
    assert candidate_pairs(e.head(0)).height == 0


def test_a_judge_run_reads_each_pair_as_the_shared_caches_read_it():
    from kbtools.judging.sameness import compare, reading_run

    rows = [json.loads(x) for x in (Path(kb.__file__).parent / "evaluate" / "data" / "judge_pairs.jsonl").open()]
    outside = [compare(r["a"], r["b"]) for r in rows] + [compare(r["a"], r["b"], frame=0.95) for r in rows]
    with reading_run():  # read twice, at two frames: each reading kept by pair and frame
        inside = [compare(r["a"], r["b"]) for r in rows] + [compare(r["a"], r["b"], frame=0.95) for r in rows]
        again = [compare(r["a"], r["b"]) for r in rows]
    assert inside == outside and again == outside[: len(rows)] and outside[: len(rows)] != outside[len(rows):]


def test_plan_verdicts_merges_only_above_the_confidence():
    j = pl.DataFrame({"a": ["a1", "c3"], "b": ["b2", "d4"], "score": [0.9, 0.8], "action": ["merge", "merge"],
                      "note": ["Same.", "Same."], "confidence": [0.95, 0.7]})
    d = plan_verdicts(j, merge_confidence=0.9)
    assert d.select("write", "type").rows() == [("merge", None), ("edge", "supersedes")]


def _small_bank(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder=None)
    ids = {}
    for name, text in [("old", "The deploy job needs the registry token from vault before pushing images."),
                       ("dup", "The deploy job needs the registry token from vault before pushing images. Reported again."),
                       ("x1", "Kafka consumer lag grows when max.poll.records is too high."),
                       ("x2", "Grafana alert rules evaluate every minute by default."),
                       ("x3", "Terraform state locking uses a DynamoDB lock table.")]:
        ids[name] = kb.report_learning(bank, content=text, systems=["ci"], tasks=["deploy"], actor="agent-1")
    return bank, ids


def test_a_judge_is_a_plain_function(tmp_path):
    bank, ids = _small_bank(tmp_path)
    seen = []

    def judge(a, b):
        seen.append((a["id"], b["id"]))
        return Verdict("supersede", "Newer report of the same job; read this one.", 1.0)

    report = kb.judge_bank(bank, judge=judge, threshold=0.5)
    assert seen == [(ids["old"], ids["dup"])]
    edge = bank.edges.filter(pl.col("source") == "judge").row(0, named=True)
    assert (edge["src"], edge["dst"], edge["type"]) == (ids["dup"], ids["old"], "supersedes")
    assert edge["note"] == "Newer report of the same job; read this one." and edge["created_by"] == "judge"
    ev = bank.events.filter(pl.col("action") == "edge.create")
    assert ev["actor"].to_list()[-1] == "judge"
    assert report["note_coverage_after"]["judge"] == {"edges": 1, "with_note": 1, "share": 1.0}
    assert report["written"] == {"supersedes": 1}
    other, _ = _small_bank(tmp_path / "other")
    with pytest.raises(ValidationError, match="Verdict"):
        kb.judge_bank(other, judge=lambda a, b: "merge", threshold=0.5)
    assert other.edges.height == 0  # nothing written on error


def test_fold_before_and_after_the_judge(tmp_path):
    bank, ids = _small_bank(tmp_path)
    kb.embed_bank(bank, embedder="hashing-char")
    text = "deploy job registry token vault"
    before = kb.query(bank, text, k=4, protect=0, record_usage=False)
    assert {ids["old"], ids["dup"]} <= set(before.ids())  # two duplicates, two slots

    kb.judge_bank(bank, threshold=0.5, merge_confidence=1.0)  # a merge verdict below 1.0 writes supersedes
    after = kb.query(bank, text, k=4, protect=0, record_usage=False)
    shown = [r for r in after.results if r.id in (ids["old"], ids["dup"])]
    assert len(shown) == 1 and shown[0].id == ids["dup"]  # the newer one represents the pair
    pointer = next(p for p in shown[0].related if p.id == ids["old"])
    assert pointer.relation == "supersedes" and pointer.note == "The same knowledge reported twice."


def test_merge_above_the_confidence_removes_the_newer_entry(tmp_path):
    bank, ids = _small_bank(tmp_path)
    kb.link(bank, ids["x1"], ids["dup"], "cites", actor="agent-2", note="where the token comes from")
    report = kb.judge_bank(bank, threshold=0.5, merge_confidence=0.5)
    assert report["written"] == {"merge": 1}
    assert ids["dup"] not in bank.entries["id"].to_list()
    moved = bank.edges.filter(pl.col("src") == ids["x1"]).row(0, named=True)
    assert moved["dst"] == ids["old"] and moved["note"] == "where the token comes from"
    merge = bank.events.filter(pl.col("action") == "entry.merge").row(0, named=True)
    assert merge["actor"] == "judge" and merge["reason"] == "The same knowledge reported twice."
    assert kb.check_bank(bank) == []


def _copy_demo(tmp_path):
    shutil.copytree(DEMO_DIR / "engineering", tmp_path / "engineering")
    shutil.copy(truth_path(DEMO_DIR / "engineering"), truth_path(tmp_path / "engineering"))
    return tmp_path / "engineering"


def _kb(*args):
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1")
    return subprocess.run([*KB, *args], capture_output=True, text=True, env=env, timeout=600)


def test_kb_judge_dry_run_writes_nothing_then_writes(tmp_path):
    path = _copy_demo(tmp_path)
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))
    manifest = (path / "manifest.json").read_bytes()
    proc = _kb("judge", str(path), "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["dry_run"] and out["written"].get("supersedes", 0) > 0
    assert (path / "manifest.json").read_bytes() == manifest
    assert sorted(p.relative_to(path).as_posix() for p in path.rglob("*")) == files

    proc = _kb("judge", str(path), "--limit", "40")
    assert proc.returncode == 0, proc.stderr and "note coverage after" in proc.stdout
    bank = kb.open_bank(path)
    judged = bank.edges.filter(pl.col("source") == "judge")
    assert judged.height > 0 and judged["note"].is_not_null().all()
    assert set(judged["type"].to_list()) <= {"supersedes", "split_from"}
    assert kb.check_bank(bank) == []


def test_eval_judge_on_the_demo_sidecar():
    report = kb.evaluate.evaluate_judge(kb.open_bank(DEMO_DIR / "engineering", readonly=True))
    at = report["at_default"]
    assert report["planted"] == 52
    # a shortened copy the generator did not plant reads as a merge below the merge confidence
    # (a supersedes edge, nothing deleted); the merges written stay exact
    assert at["merge"]["precision"] >= 0.9 and at["merge"]["recall"] >= 0.7
    assert at["split"]["precision"] >= 0.75 and at["split"]["recall"] >= 0.8
    assert at["supersede"]["precision"] >= 0.85 and at["supersede"]["recall"] >= 0.7
    assert at["distinct"]["recall"] == 1.0
    assert report["merges"]["precision"] == 1.0  # the destructive merge's stated precision
    assert [r["threshold"] for r in report["sweep"]] == sorted(r["threshold"] for r in report["sweep"])
    proc = _kb("eval", "judge", str(DEMO_DIR / "engineering"))
    assert proc.returncode == 0 and "| merge |" in proc.stdout and "Sweep" in proc.stdout
