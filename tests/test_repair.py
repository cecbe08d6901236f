"""Every failure is repairable: each kind of bank file damaged in turn, every reader names the
damage (BankDamaged, never a polars/numpy traceback), ``kb repair`` brings the bank back without
losing anything committed before the damaged commit, and its report names what was dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kbtools as kb
from kbtools.store.segments import segment_files
from kbtools.store.vectors import entry_vectors, vector_segments

BEFORE = [
    "Restart the payments worker after changing its config file.",
    "The staging signing key rotates with vault rotate staging-sign.",
    "Nginx burst limits drop requests under a traffic spike.",
]
LAST = "Kafka consumer lag grows when max.poll.records is too high."


def _bank(path: Path, *, auto_link: bool = False) -> tuple[kb.Bank, dict[str, str], str]:
    """A bank of three entries and a link, then one more write (the commit the damage hits):
    the bank, the entries committed before that write (id -> content) and the last entry's id."""
    bank = kb.create_bank(path, settings={"auto_link": auto_link}, embedder="hashing")
    ids = [kb.report_learning(bank, content=text, actor="agent-1") for text in BEFORE]
    kb.link(bank, ids[0], ids[1], "see_also", note="both about rotating config", actor="agent-1")
    before = dict(bank.entries.select("id", "content").iter_rows())
    last = kb.report_learning(bank, content=LAST, actor="agent-2", link=False)
    return bank, before, last


def _cut(path: Path) -> None:
    """Truncate a file to half its size."""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _damage(bank: kb.Bank, kind: str) -> str:
    """Damage one file of ``bank``'s newest version; returns its path relative to the bank."""
    if kind == "table segment":
        rel = segment_files(bank)["entries"][-1]
        _cut(bank.path / rel)
    elif kind == "manifest truncated":
        rel = "manifest.json"
        _cut(bank.path / rel)
    elif kind == "manifest garbage":
        rel = "manifest.json"
        (bank.path / rel).write_bytes(b"\x00\xffnot a manifest\x13" * 20)
    elif kind == "vector segment":
        rel = vector_segments(bank)[-1]["data"]
        _cut(bank.path / rel)
    return rel


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "kbtools", *args], capture_output=True, text=True, env=env)


def _named(err: BaseException, rel: str, bank: kb.Bank) -> None:
    text = str(err)
    assert rel in text and f"kb check {bank.path}" in text and f"kb repair {bank.path}" in text, text


#: for each kind of damage, the readers that read the damaged file
READERS = {
    "table segment": ("entries", "query"),
    "manifest truncated": ("open",),
    "manifest garbage": ("open",),
    "vector segment": ("query",),
}


@pytest.mark.parametrize("kind", list(READERS))
def test_every_reader_names_the_damage_and_repair_brings_the_bank_back(tmp_path, kind):
    bank, before, last = _bank(tmp_path / "b")
    version = bank.version
    rel = _damage(bank, kind)
    assert kb.check_bank(bank.path)  # found

    for reader in READERS[kind]:
        with pytest.raises(kb.BankDamaged) as err:
            fresh = kb.open_bank(bank.path)
            if reader == "entries":
                fresh.entries
            elif reader == "query":
                kb.query(fresh, "payments worker config", record_usage=False)
        _named(err.value, rel, bank)
    for args in (["query", str(bank.path), "payments worker config"], ["health", str(bank.path)]):
        out = _cli(*args)
        assert "Traceback" not in out.stderr, out.stderr
        if args[0] == "query" or kind != "vector segment":  # kb health reads no vector
            assert out.returncode == 1 and rel in out.stderr and "kb repair" in out.stderr, out.stderr

    report = kb.repair_bank(bank.path)
    assert kb.check_bank(bank.path) == []
    repaired = kb.open_bank(bank.path)
    kept = dict(repaired.entries.select("id", "content").iter_rows())
    assert {i: kept.get(i) for i in before} == before  # nothing committed before the damage is lost
    assert kb.query(repaired, "payments worker config", record_usage=False).ids()  # reads again
    if kind.startswith("manifest"):  # the damaged file was the manifest: its kept copy is the same version
        assert report["rolled_back_to"] == version and report["dropped_commits"] == []
        assert last in kept and report["lost"] == {"entries": [], "edges": [], "unread": []}
    else:  # the last commit's file: that commit is dropped, named, and its entry said to be gone
        assert report["rolled_back_to"] == version - 1 and report["version"] == version + 1
        assert [(d["version"], d["actor"], d["reason"]) for d in report["dropped_commits"]] == \
            [(version, "agent-2", "report_learning")]
        assert report["dropped_commits"][0]["committed_at"]
        assert report["lost"]["entries"] == [{"id": last, "title": LAST}] and last not in kept
    assert any(rel in d for d in report["damaged"])


def test_kb_repair_from_the_command_line_reports_and_dry_run_writes_nothing(tmp_path):
    bank, before, last = _bank(tmp_path / "b")
    rel = _damage(bank, "table segment")
    manifest = (bank.path / "manifest.json").read_bytes()

    dry = _cli("repair", str(bank.path), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would roll back to version" in dry.stdout and last in dry.stdout and rel in dry.stdout
    assert (bank.path / "manifest.json").read_bytes() == manifest and kb.check_bank(bank.path)

    out = _cli("repair", str(bank.path), "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    payload = json.loads(out.stdout)
    report = payload["repairs"][str(bank.path)]
    assert payload["ok"] and payload["banks"][str(bank.path)] == []
    assert report["dropped_commits"][0]["actor"] == "agent-2"
    assert report["lost"]["entries"][0]["id"] == last and report["lost"]["unread"] == [rel]
    assert set(before) <= set(kb.open_bank(bank.path).entries["id"].to_list())

    again = _cli("check", str(bank.path), "--repair")  # the alias: nothing left to roll back
    assert again.returncode == 0 and "the newest version is whole" in again.stdout, again.stderr


def test_lost_edges_are_named_when_their_segment_still_reads(tmp_path):
    bank, before, last = _bank(tmp_path / "b")
    a, b = list(before)[:2]
    kb.link(bank, b, a, "clarifies", note="which key", actor="agent-3")
    _cut(bank.path / vector_segments(bank)[-1]["data"])  # the link's commit wrote no vectors: the one before
    report = kb.repair_bank(bank)
    assert bank.version == report["version"]  # the open bank moved to the repaired version
    assert [d["actor"] for d in report["dropped_commits"]] == ["agent-2", "agent-3"]
    assert {(e["src"], e["dst"], e["type"]) for e in report["lost"]["edges"]} == {(b, a, "clarifies")}
    assert report["lost"]["entries"] == [{"id": last, "title": LAST}]


def test_a_damaged_cache_is_rebuilt_silently(tmp_path):
    bank, before, last = _bank(tmp_path / "b", auto_link=True)
    caches = sorted(p for p in (bank.path / "cache").iterdir() if p.is_file())
    assert caches  # the linker keeps its anchors and statistics
    answer = kb.query(kb.open_bank(bank.path), "payments worker config", record_usage=False).ids()
    seals = [p for p in caches if p.suffix == ".json"]
    for path in caches:
        if path.suffix != ".json":
            _cut(path)
    for i, seal in enumerate(seals):
        seal.write_text("[1, 2" if i % 2 else "[]")  # not JSON; JSON but not a seal
    fresh = kb.open_bank(bank.path)
    assert kb.query(fresh, "payments worker config", record_usage=False).ids() == answer
    new = kb.report_learning(fresh, content="Restart the payments worker when its config changes.", actor="t")
    assert new in fresh.entries["id"].to_list() and kb.check_bank(bank.path) == []
    for args in (["query", str(bank.path), "payments worker"], ["health", str(bank.path)]):
        out = _cli(*args)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    report = kb.repair_bank(bank.path)
    assert report["rolled_back_to"] is None and report["caches_removed"] >= len(caches)
    assert not any((bank.path / "cache").iterdir()) and kb.check_bank(bank.path) == []


def test_a_damaged_shard_of_the_embedding_cache_is_passed_over(tmp_path):
    env = {**os.environ, "KBTOOLS_CACHE": str(tmp_path / "cache"), "KBTOOLS_EMBED_CACHE": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    write = ("import kbtools as kb, sys\n"
             "b = kb.create_bank(sys.argv[1], settings={'auto_link': False}, embedder='minilm-int8')\n"
             f"kb.report_learning(b, content={LAST!r}, actor='t')\n")
    first = subprocess.run([sys.executable, "-c", write, str(tmp_path / "one")], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    shards = list((tmp_path / "cache").rglob("*.npy"))
    assert shards
    for i, shard in enumerate(shards):
        shard.write_bytes(b"" if i % 2 else shard.read_bytes()[:20])
    second = subprocess.run([sys.executable, "-c", write, str(tmp_path / "two")], env=env, capture_output=True, text=True)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    one, two = (entry_vectors(kb.open_bank(tmp_path / n))[1] for n in ("one", "two"))
    assert np.allclose(np.asarray(one), np.asarray(two))  # embedded again, the same vectors


def test_damage_no_kept_version_escapes_says_to_restore_from_a_copy(tmp_path):
    bank, _, _ = _bank(tmp_path / "b")
    first = segment_files(bank)["entries"][0]  # named by every version since the first write
    _cut(bank.path / first)
    with pytest.raises(kb.BankUnrepairable, match="restore the bank folder from a copy"):
        kb.repair_bank(bank.path)
    out = _cli("repair", str(bank.path))
    assert out.returncode == 1 and "Traceback" not in out.stderr and "restore" in out.stderr, out.stderr


def test_the_doors_for_other_tools_and_a_missing_segment_name_the_damage_too(tmp_path):
    bank, _, _ = _bank(tmp_path / "b")
    rel = _damage(bank, "table segment")
    fresh = kb.open_bank(bank.path)
    for read in (lambda: kb.scan(fresh, "entries"), lambda: kb.sql(fresh, "SELECT count(*) FROM entries"),
                 lambda: fresh.compact()):
        with pytest.raises(kb.BankDamaged) as err:
            read()
        _named(err.value, rel, bank)
    events = segment_files(fresh)["events"][-1]
    (bank.path / events).unlink()
    with pytest.raises(kb.BankDamaged, match="missing"), pytest.warns(UserWarning):
        kb.open_bank(bank.path).events
    report = kb.repair_bank(bank.path)
    assert kb.check_bank(bank.path) == [] and report["lost"]["unread"] == sorted([rel, events])


def test_the_history_keeps_the_newest_twenty_manifests_each_a_copy(tmp_path):
    from kbtools.model.plan import Plan
    from kbtools.store.files import HISTORY, KEEP_MANIFESTS

    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False})
    folder = bank.path / HISTORY
    for i in range(KEEP_MANIFESTS + 5):
        bank.apply(Plan(settings={"note": f"commit {i}"}), actor="me", reason="history")
    stray = folder / f"{1:010d}.json"  # left by a gap (a restore): gone at the next full listing
    stray.write_bytes(b"{}")
    while bank.version % KEEP_MANIFESTS:
        bank.apply(Plan(settings={"note": f"v{bank.version}"}), actor="me", reason="history")
    bank.apply(Plan(settings={"note": "one past the listing"}), actor="me", reason="history")
    names = sorted(p.name for p in folder.glob("*.json"))
    assert names == [f"{v:010d}.json" for v in range(bank.version - KEEP_MANIFESTS + 1, bank.version + 1)]
    newest = folder / names[-1]
    assert json.loads(newest.read_bytes())["version"] == bank.version
    # damage written into manifest.json in place leaves the kept copy whole
    (bank.path / "manifest.json").write_bytes(b"garbage")
    assert json.loads(newest.read_bytes())["version"] == bank.version
