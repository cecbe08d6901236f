"""The sidecars of a compacted bank's base segments: a fresh process's first query reads them
instead of the whole entries and edges tables, and answers exactly what the tables answer."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.model.vocab import TRUSTED_SOURCES
from kbtools.retrieval.folding import EdgeLookup
from kbtools.store.segments import TABLE_READS
from kbtools.store.sidecars import DISPLAY_SIDECAR, EDGE_SIDECAR, display_records

QUERIES = ["how do I log in to production with playwright", "why does the nightly e2e suite flake",
           "rotate the staging signing key", "owner ruling says table this card for N days"]


@pytest.fixture
def compacted(tmp_path, demo_dir):
    """The engineering demo bank, embedded with the hashing embedder and compacted: its base
    segments have their sidecars."""
    root = tmp_path / "engineering"
    shutil.copytree(demo_dir / "engineering", root)
    bank = kb.open_bank(root)
    kb.embed_bank(bank, embedder="hashing")
    report = bank.compact(sweep_age=0)
    assert sorted(report["sidecars"]) == sorted([DISPLAY_SIDECAR, EDGE_SIDECAR])
    return bank


def _without_sidecars(bank, tmp_path, name="oracle"):
    """A copy of the bank without its sidecars: what the tables alone answer."""
    root = tmp_path / name
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(bank.path, root)
    for f in (root / "cache").glob("*"):
        if f.name.startswith((EDGE_SIDECAR, DISPLAY_SIDECAR)):
            f.unlink()
    return root


def _shown(answer):
    return [(r.id, r.rank, r.title, r.summary, r.kind, r.related, r.neighbors) for r in answer.results]


def _answers(path):
    return _answers_of(kb.open_bank(path))


def _answers_of(bank):
    return ([_shown(kb.query(bank, q, record_usage=False, neighbors=3)) for q in QUERIES]
            + [_shown(kb.query(bank, QUERIES[0], record_usage=False, sources=sorted(TRUSTED_SOURCES | {"auto"})))])


def _same_as_tables(bank, tmp_path):
    assert _answers(bank.path) == _answers(_without_sidecars(bank, tmp_path))


def test_a_fresh_first_query_reads_neither_table_whole(compacted):
    builds, entries, edges = EdgeLookup.builds, TABLE_READS["entries"], TABLE_READS["edges"]
    bank = kb.open_bank(compacted.path)
    answer = kb.query(bank, QUERIES[0], record_usage=False)
    assert answer.results and any(r.related or r.neighbors for r in answer.results)
    assert (EdgeLookup.builds, TABLE_READS["entries"], TABLE_READS["edges"]) == (builds, entries, edges)


def test_without_sidecars_the_tables_are_read(compacted, tmp_path):
    entries = TABLE_READS["entries"]
    kb.query(kb.open_bank(_without_sidecars(compacted, tmp_path)), QUERIES[0], record_usage=False)
    assert TABLE_READS["entries"] > entries


def test_the_sidecars_answer_what_the_tables_answer_after_each_kind_of_write(compacted, tmp_path):
    bank = compacted
    ids = bank.entries.filter(pl.col("status") == "active")["id"].to_list()
    _same_as_tables(bank, tmp_path)
    new = kb.report_learning(bank, content="The nightly e2e suite flakes when the staging CDN is cold.",
                             actor="agent-9", connections=[{"id": ids[0], "relation": "corrects", "note": "which run"}])
    _same_as_tables(bank, tmp_path)
    kb.link(bank, ids[1], ids[2], "clarifies", actor="agent-9", note="how the caveat reads")
    _same_as_tables(bank, tmp_path)
    kb.unlink(bank, new, ids[0], "corrects", reason="a wrong link", actor="agent-9")
    _same_as_tables(bank, tmp_path)
    kb.update_entry(bank, ids[3], actor="agent-9", reason="clearer", title="Rotate the staging signing key monthly")
    _same_as_tables(bank, tmp_path)
    kb.delete_entry(bank, ids[1], reason="obsolete", actor="agent-9")
    _same_as_tables(bank, tmp_path)
    kb.split_entry(bank, ids[4], parts=[{"content": "The first half of it."}, {"content": "The second half of it."}],
                   reason="two things", actor="agent-9")
    _same_as_tables(bank, tmp_path)
    kb.merge_entries(bank, keep=ids[5], remove=[ids[6]], reason="the same fact", actor="agent-9")
    _same_as_tables(bank, tmp_path)
    bank.compact(sweep_age=0)
    _same_as_tables(bank, tmp_path)


def test_a_process_that_read_the_sidecars_answers_as_the_tables_across_its_own_writes(compacted, tmp_path):
    bank = kb.open_bank(compacted.path)
    builds = EdgeLookup.builds
    kb.query(bank, QUERIES[1], record_usage=False)
    ids = bank.entries.filter(pl.col("status") == "active")["id"].to_list()
    for i in range(20):  # past a tail merge of the entries and edges segments
        kb.report_learning(bank, content=f"Night run {i} of the e2e suite flakes on a cold cache.", actor="agent-9",
                           link=False, connections=[{"id": ids[i], "relation": "cites", "note": f"run {i}"}])
        kb.query(bank, QUERIES[i % len(QUERIES)], record_usage=False)
    kb.unlink(bank, bank.edges["src"][-1], bank.edges["dst"][-1], bank.edges["type"][-1], reason="x", actor="a")
    kb.query(bank, QUERIES[0], record_usage=False)
    assert EdgeLookup.builds == builds  # the sidecar's lookup was grown by the writes, never built
    got = _answers_of(bank)
    assert got == _answers(_without_sidecars(bank, tmp_path))


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign"])
def test_a_damaged_or_foreign_sidecar_is_not_read(compacted, tmp_path, damage):
    expected = _answers(_without_sidecars(compacted, tmp_path))
    cache = compacted.path / "cache"
    for name in (EDGE_SIDECAR, DISPLAY_SIDECAR):
        path = cache / name
        if damage == "flip":  # the first bytes of the id array changed
            data = bytearray(path.read_bytes())
            data[-8:] = bytes(8)
            path.write_bytes(bytes(data))
        elif damage == "truncate":
            path.write_bytes(path.read_bytes()[:-16])
        else:  # sealed for a segment the bank no longer names
            seal = cache / f"{name}.json"
            seal.write_text(seal.read_text().replace("tables/", "tables/old-"))
    builds = EdgeLookup.builds
    assert _answers(compacted.path) == expected
    assert EdgeLookup.builds > builds  # the edges were read from the table


def test_a_repair_removes_the_sidecars_and_the_tables_answer(compacted, tmp_path):
    expected = _answers(_without_sidecars(compacted, tmp_path))
    kb.repair_bank(compacted.path)
    assert not list((compacted.path / "cache").glob(EDGE_SIDECAR + "*"))
    assert _answers(compacted.path) == expected


def test_display_records_keep_nulls_empty_steps_and_refuse_repeated_ids():
    frame = pl.DataFrame({"id": ["b", "a", "c"], "title": ["B", None, ""], "summary": [None, "s", "é"],
                          "kind": ["fact", "knowledge", None], "steps": [None, [], ["x", "y"]],
                          "status": ["active", "archived", "active"]})
    records = display_records(frame)
    assert records["keys"].astype(">u8").view("S8").tolist() == [b"a", b"b", b"c"]
    assert display_records(pl.concat([frame, frame.head(1)])) is None
    assert np.all(np.diff(np.abs(records["ends"].reshape(-1) + 0.5)) >= 0)


def test_a_few_edges_are_made_canonical_as_many_are():
    """``canonical_edges`` reads a write's few rows in Python and a frame of many with polars: the
    same rows either way (sources kept, aliases renamed, self-loops, null ends and repeated keys
    dropped, the first kept), checked by padding the same rows past the few with rows of a source
    that is not kept."""
    from kbtools.model.vocab import TYPE_ALIASES
    from kbtools.store.sidecars import canonical_edges

    rng = np.random.default_rng(11)
    kept = frozenset(TRUSTED_SOURCES)
    ends = ["a1", "b2", "c3", None]
    types = ["cites", "see_also", *TYPE_ALIASES, None]
    sources = [*sorted(kept)[:3], "auto", None]
    schema = {c: pl.String for c in ("src", "dst", "type", "note", "source")}
    for _ in range(40):
        n = int(rng.integers(0, 30))
        rows = {"src": list(rng.choice(ends, n)), "dst": list(rng.choice(ends, n)), "type": list(rng.choice(types, n)),
                "note": [None if rng.random() < 0.3 else f"n{i}" for i in range(n)], "source": list(rng.choice(sources, n))}
        few = pl.DataFrame(rows, schema=schema)
        padding = pl.DataFrame({"src": ["x"] * 80, "dst": ["y"] * 80, "type": ["cites"] * 80, "note": [None] * 80,
                                "source": ["not-a-kept-source"] * 80}, schema=schema)
        assert canonical_edges(few, kept).equals(canonical_edges(pl.concat([few, padding]), kept))
