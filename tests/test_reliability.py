"""Reads never write, a write is one transaction, and a bank survives damage and hostile files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import polars as pl
import pytest

import kbtools as kb
from kbtools.store.lock import bank_lock
from kbtools.store.repair import repair_bank
from kbtools.store.caches import cache_file, write_cache_file
from kbtools.store.segments import segment_files
from kbtools.store.vectors import entry_vectors, vector_segments

TEXTS = [
    "Restart the payments worker after changing its config file.",
    "The staging signing key rotates with vault rotate staging-sign.",
    "Nginx burst limits drop requests under a traffic spike.",
    "Kafka consumer lag grows when max.poll.records is too high.",
    "The session-create POST needs --http1.1 behind the proxy.",
    "Playwright login for post-deploy checks runs once in global setup.",
]


def _bank(path: Path, *, auto_link: bool = False) -> kb.Bank:
    bank = kb.create_bank(path, settings={"auto_link": auto_link}, embedder=None)
    for text in TEXTS:
        kb.report_learning(bank, content=text, actor="t", link=False)
    kb.embed_bank(bank, embedder="hashing")
    return bank


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ 1. one transaction, idempotent


def test_report_with_linking_is_one_commit_with_its_vectors_and_links(tmp_path):
    bank = _bank(tmp_path / "b")
    bank.apply(kb.model.Plan(settings={"auto_link": True}), actor="t", reason="turn linking on")
    before = bank.version
    new = kb.report_learning(bank, content="Restart the payments worker when its config changes.", actor="agent")
    assert bank.version == before + 1  # entry, vectors and links in one manifest swap
    assert new in entry_vectors(bank)[0].tolist()
    assert bank.entries.filter(pl.col("id") == new)["linked_at"][0] is not None
    assert bank.edges.filter((pl.col("src") == new) | (pl.col("dst") == new)).height >= 1


def test_an_error_while_linking_leaves_nothing_written(tmp_path, monkeypatch):
    bank = _bank(tmp_path / "b", auto_link=True)
    before = (bank.version, bank.entries.height)

    def broken(*args, **kwargs):
        raise kb.BankLocked(bank.path, 0.05, "another writer")

    monkeypatch.setattr("kbtools.ops.link_context.plan_new_entry_links", broken)
    with pytest.raises(kb.BankLocked):
        kb.report_learning(bank, content="A fact about caches.", actor="agent")
    fresh = kb.open_bank(bank.path)
    assert (fresh.version, fresh.entries.height) == before  # the caller may retry: no duplicate


def test_a_retried_report_with_its_key_returns_the_same_id(tmp_path):
    bank = _bank(tmp_path / "b")
    a = kb.report_learning(bank, content="Rotate the key monthly.", actor="agent", key="agent-7/42")
    version = bank.version
    b = kb.report_learning(bank, content="Rotate the key monthly.", actor="agent", key="agent-7/42")
    assert a == b and bank.version == version
    assert bank.entries.filter(pl.col("content") == "Rotate the key monthly.").height == 1
    with pytest.raises(kb.ValidationError, match="idempotency key"):
        kb.report_learning(bank, content="x y z", actor="agent", key="  ")


# ------------------------------------------------------------------ 2. nothing outside the bank


def test_compact_never_deletes_through_a_symlink(tmp_path):
    bank = _bank(tmp_path / "b")
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "thesis.txt").write_text("years of work")
    os.symlink(outside, bank.path / "tables" / "attack")
    old = (outside / "thesis.txt")
    os.utime(old, (0, 0))
    bank.compact(sweep_age=0)
    assert old.exists()
    assert any("symlink" in str(p) for p in kb.check_bank(bank.path))


def test_a_manifest_naming_a_file_outside_the_bank_is_never_read(tmp_path):
    bank = _bank(tmp_path / "b")
    manifest = json.loads((bank.path / "manifest.json").read_text())
    manifest["tables"]["triples"] = ["../../../../etc/hostname"]
    (bank.path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(kb.UnsafePath):
        kb.open_bank(bank.path)
    assert any("outside the bank" in str(p) for p in kb.check_bank(bank.path))


# ------------------------------------------------------------------ 3. snapshots and compaction


def test_an_open_snapshot_still_answers_after_a_compaction(tmp_path):
    bank = _bank(tmp_path / "b")
    kb.report_learning(bank, content="One more fact to make a second vector segment.", actor="t", link=False)
    kb.embed_bank(bank)
    reader = kb.open_bank(bank.path)
    kb.open_bank(bank.path).compact()  # retired files stay for the grace period
    assert kb.query(reader, "signing key rotation", record_usage=False).ids()
    late = kb.open_bank(bank.path)
    kb.report_learning(bank, content="Yet another fact for a fresh segment.", actor="t", link=False)
    kb.embed_bank(bank)
    kb.open_bank(bank.path).compact(sweep_age=0)  # past the grace period: the files are gone
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ids, _ = entry_vectors(late)
    assert len(ids) == late.entries.height and any("moved to the newest version" in str(w.message) for w in seen)


def test_a_burst_of_writes_keeps_the_manifest_small_and_the_sweep_removes_what_they_retired(tmp_path):
    from kbtools.store.files import RETIRED_LOG, manifest_files, read_retired
    from kbtools.store.segments import segment_files

    bank = kb.create_bank(tmp_path / "b", embedder="hashing-char", settings={"auto_link": False})
    kb.report_learning(bank, content="The first fact of the burst.", actor="t")
    for i in range(60):  # tail merges retire files; each stays on disk for the grace period
        kb.report_learning(bank, content=f"Burst fact number {i} about queue {i}.", actor="t")
    text = (bank.path / "manifest.json").read_text()
    retired = read_retired(bank.path)
    assert len(retired) > 60 and all((bank.path / name).exists() for name in retired)
    # the manifest every commit writes records the live files only, not every file the burst retired
    manifest = json.loads(text)
    assert "retired" not in manifest and not set(retired) & (set(manifest_files(manifest)) | set(manifest["files"]))
    assert not set(retired) & {n for names in segment_files(bank).values() for n in names}
    bank.compact(sweep_age=0)  # past the grace period: the files and their lines are gone
    assert read_retired(bank.path) == {} and not any((bank.path / name).exists() for name in retired)
    assert kb.check_bank(bank.path) == [] and kb.open_bank(bank.path).entries.height == 61
    assert (bank.path / RETIRED_LOG).read_text() == ""


def test_a_manifest_of_an_older_kbtools_hands_its_retired_files_to_the_log(tmp_path):
    from kbtools.store.files import read_retired

    bank = _bank(tmp_path / "b")
    stale = bank.path / "tables" / "entries" / "00000000-old.parquet"
    stale.write_bytes(b"a segment an older version retired")
    manifest = json.loads((bank.path / "manifest.json").read_text())
    manifest["retired"] = {"tables/entries/00000000-old.parquet": 1.0}
    (bank.path / "manifest.json").write_text(json.dumps(manifest))
    bank = kb.open_bank(bank.path)
    kb.report_learning(bank, content="A write by this version.", actor="t", link=False)
    assert "retired" not in json.loads((bank.path / "manifest.json").read_text())
    assert read_retired(bank.path)["tables/entries/00000000-old.parquet"] == 1.0
    bank.compact()  # retired long ago: swept now
    assert not stale.exists()


# ------------------------------------------------------------------ 4. caches verified


def test_a_re_embedded_entry_is_ranked_by_its_new_vector_in_the_same_process(tmp_path):
    bank = _bank(tmp_path / "b")
    first = bank.entries["id"][0]
    kb.query(bank, "kafka consumer lag", record_usage=False)  # builds the in-memory index
    kb.update_entry(bank, first, actor="t", content="Zebra herds cross the llama farm before the migration.",
                    title="Zebra llama farm migration", reason="rewritten")
    kb.embed_bank(bank)
    assert kb.query(bank, "zebra llama farm migration", record_usage=False, fold=False).ids()[0] == first


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_damaged_index_cache_is_rebuilt_never_used(tmp_path, damage):
    from kbtools.retrieval.search import bank_index

    bank = _bank(tmp_path / "b")
    want = kb.query(bank, "nginx burst spike", record_usage=False, fold=False).ids()
    idx = bank_index(bank)
    write_cache_file(bank, "index-flat.kbx", idx.fingerprint, idx.write)  # as a big bank caches it
    assert cache_file(kb.open_bank(bank.path), "index-flat.kbx", idx.fingerprint) is not None
    cache = bank.path / "cache" / "index-flat.kbx"
    data = bytearray(cache.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 3]
    else:
        data = bytearray(b"not faiss at all")
    cache.write_bytes(bytes(data))
    fresh = kb.open_bank(bank.path)
    assert cache_file(fresh, "index-flat.kbx", idx.fingerprint) is None  # never used
    assert kb.query(fresh, "nginx burst spike", record_usage=False, fold=False).ids() == want


def test_a_segment_rewritten_by_another_tool_is_reported(tmp_path):
    bank = _bank(tmp_path / "b")
    bank.compact()
    seg = bank.path / segment_files(bank)["entries"][0]
    frame = pl.read_parquet(seg).with_columns(pl.lit("archived").alias("status"))
    frame.write_parquet(seg)
    problems = [str(p) for p in kb.check_bank(bank.path)]
    assert any("changed since it was committed" in p for p in problems)
    fresh = kb.open_bank(bank.path)
    assert fresh.fingerprint(("entries",)) != bank.fingerprint(("entries",))  # no cache of before is reused


# ------------------------------------------------------------------ 5. reads never take the lock or write


def test_a_query_answers_while_a_writer_holds_the_lock(tmp_path):
    bank = _bank(tmp_path / "b")
    reader = kb.open_bank(bank.path, lock_timeout=0.05)
    with bank_lock(bank.path, 1.0, "a long job"):
        ans = kb.query(reader, "payments worker config", record_usage=True)
    assert ans.ids()
    kb.report_learning(bank, content="A write merges the usage log.", actor="t", link=False)
    assert kb.open_bank(bank.path).usage.height >= len(ans.ids())


def test_a_read_only_bank_writes_nothing(tmp_path):
    bank = _bank(tmp_path / "b")
    before = _snapshot(bank.path)
    ro = kb.open_bank(bank.path, readonly=True)
    kb.query(ro, "vault signing key", record_usage=True)
    kb.recall(ro, "vault signing key", record_usage=True)
    with pytest.raises(kb.ReadOnlyBank):
        kb.report_learning(ro, content="Should not land.", actor="t", link=False)
    assert _snapshot(bank.path) == before


def test_a_read_only_query_is_quiet_unless_usage_was_asked_for(tmp_path):
    bank = _bank(tmp_path / "b")
    before = _snapshot(bank.path)
    ro = kb.open_bank(bank.path, readonly=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            assert kb.query(ro, "vault signing key").ids() and kb.recall(ro, "vault signing key").ids()
    assert not [w for w in seen if "usage" in str(w.message)]  # a read-only open is normal use
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        kb.query(ro, "vault signing key", record_usage=True)  # asked for: said, once per bank
        kb.query(ro, "vault signing key", record_usage=True)
    assert [str(w.message) for w in seen if "usage" in str(w.message)] == [
        f"{bank.path}: usage not recorded (the bank is open read-only); queries still answer"]
    cli = subprocess.run([sys.executable, "-m", "kbtools", "query", str(bank.path), "vault signing key", "--readonly"],
                         capture_output=True, text=True)
    assert cli.returncode == 0 and "usage" not in cli.stderr, cli.stderr
    assert _snapshot(bank.path) == before
    kb.query(bank, "vault signing key")  # a writable bank still records by default
    assert kb.open_bank(bank.path).usage.height > 0


def test_a_query_never_embeds(tmp_path):
    bank = _bank(tmp_path / "b")
    kb.report_learning(bank, content="Not embedded yet.", actor="t", link=False, embed=False)
    before = _snapshot(bank.path)
    with pytest.raises(kb.NotEmbedded, match="kb embed"):
        kb.query(kb.open_bank(bank.path), "anything", record_usage=False)
    assert _snapshot(bank.path) == before
    cli = subprocess.run([sys.executable, "-m", "kbtools", "query", str(bank.path), "anything"],
                         capture_output=True, text=True)
    assert cli.returncode == 1 and "kb embed" in cli.stderr and _snapshot(bank.path) == before


# ------------------------------------------------------------------ 6. check and repair


def _damage(bank: kb.Bank, kind: str) -> None:
    root = bank.path
    if kind == "no tables key":
        manifest = json.loads((root / "manifest.json").read_text())
        del manifest["tables"]
        (root / "manifest.json").write_text(json.dumps(manifest))
    elif kind == "truncated vectors":
        seg = root / vector_segments(bank)[-1]["data"]
        seg.write_bytes(seg.read_bytes()[:100])
    elif kind == "deleted hashes":
        (root / vector_segments(bank)[-1]["hashes"]).unlink()
    elif kind == "wrong schema":
        seg = root / segment_files(bank)["edges"][-1]
        pl.DataFrame({"nonsense": [1, 2]}).write_parquet(seg)
    elif kind == "temp file":
        (root / ".manifest.json.deadbeef.tmp").write_text("{")
        os.utime(root / ".manifest.json.deadbeef.tmp", (0, 0))  # left by a write that crashed long ago


@pytest.mark.parametrize("kind", ["no tables key", "truncated vectors", "deleted hashes", "wrong schema", "temp file"])
def test_check_detects_and_repair_recovers(tmp_path, kind):
    bank = _bank(tmp_path / "b")
    kept = set(bank.entries["id"].to_list())
    kb.link(bank, *bank.entries["id"].to_list()[:2], "see_also", note="both about ops", actor="t")
    kb.report_learning(bank, content="The last write before the damage.", actor="t", link=False)
    _damage(kb.open_bank(bank.path), kind)
    assert kb.check_bank(bank.path)  # detected
    report = repair_bank(bank.path)
    assert kb.check_bank(bank.path) == []
    fresh = kb.open_bank(bank.path)
    assert kept <= set(fresh.entries["id"].to_list())  # nothing before the damaged commit is lost
    if kind in ("truncated vectors", "deleted hashes", "wrong schema"):  # the damaged commit is named
        assert report["rolled_back_to"] is not None and report["dropped_commits"]
        assert all(d["version"] > report["rolled_back_to"] and "reason" in d for d in report["dropped_commits"])
    elif kind == "no tables key":  # the same version, restored from the kept manifests
        assert report["rolled_back_to"] == fresh.version - 1 and report["dropped_commits"] == []
    else:
        assert report["rolled_back_to"] is None and report["temp_files_removed"] == 1


def test_kb_check_repair_from_the_command_line(tmp_path):
    bank = _bank(tmp_path / "b")
    _damage(bank, "truncated vectors")
    run = [sys.executable, "-m", "kbtools", "check", str(bank.path)]
    assert subprocess.run(run, capture_output=True, text=True).returncode == 4
    out = subprocess.run(run + ["--repair"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "rolled back to version" in out.stdout and ": ok" in out.stdout
