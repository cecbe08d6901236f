"""What the linker reads from a bank grows on append: the content vectors and their neighbour index
gain the new rows alone (no gather of the bank's vectors, no rebuild), and equal a fresh build."""

from __future__ import annotations

import numpy as np
import pytest

import kbtools as kb
from kbtools.demo import synthetic_bank
from kbtools.ops import link_context
from kbtools.ops.interchange import import_frames


@pytest.fixture
def bank(tmp_path):
    demo = synthetic_bank(entries=600, seed=5)
    bank = kb.create_bank(tmp_path / "b")
    import_frames(bank, entries=demo.entries, edges=demo.edges, guard=False)
    kb.embed_bank(bank, embedder="hashing")
    return bank


def _fresh(bank) -> np.ndarray:
    return link_context.linker_vectors(kb.open_bank(bank.path, readonly=True))


def test_linker_vectors_grow_by_the_new_rows_and_equal_a_fresh_build(bank):
    first = link_context._linker_state(bank)
    index = link_context.neighbour_index(bank, first.view)
    for i in range(5):  # with linking: each add plans against the cached vectors and index
        kb.report_learning(bank, content=f"Pump {i} on line 3 keeps faulting with error E-21{i}.", actor="a")
    state = link_context._linker_state(bank)
    assert state.lineage == first.lineage and state.n == first.n + 5  # grown, not rebuilt
    assert link_context.neighbour_index(bank, state.view) is index and index.ntotal == state.n
    assert np.array_equal(state.view, _fresh(bank))
    assert np.abs(state.view[-5:]).sum() > 0  # the new entries' vectors, not zero rows
    with pytest.raises(ValueError):
        state.view[0, 0] = 1.0  # callers read it only


def test_a_re_embedded_earlier_entry_rebuilds_the_linker_vectors(bank):
    first = link_context._linker_state(bank)
    eid = bank.entries["id"][3]
    kb.update_entry(bank, eid, content="Something else entirely: the kiln on site 9 overheats.", actor="a")
    kb.embed_bank(bank, embedder="hashing")
    state = link_context._linker_state(bank)
    assert state.lineage != first.lineage
    assert np.array_equal(state.view, _fresh(bank))
    assert not np.array_equal(state.view[3], first.view[3])


def test_entries_added_without_vectors_get_zero_rows_until_embedded(bank):
    link_context._linker_state(bank)
    kb.report_learning(bank, content="No vector yet for this one.", actor="a", link=False, embed=False)
    state = link_context._linker_state(bank)
    assert np.array_equal(state.view, _fresh(bank)) and not state.view[-1].any()


def test_term_stats_grow_on_append_and_survive_a_status_change(bank):
    settings = link_context.linker_settings(bank)
    link_context.term_stats(bank, settings)
    for i in range(3):
        kb.report_learning(bank, content=f"Kiln {i} on site 4 overheats after error K-77{i}.", actor="a", link=False)
    grown = link_context.term_stats(bank, settings)
    fresh = link_context.term_stats(kb.open_bank(bank.path, readonly=True), settings)
    assert grown.vocab == fresh.vocab and grown.ids == fresh.ids
    assert (grown.postings != fresh.postings).nnz == 0 and np.array_equal(grown.w, fresh.w)
    kb.update_entry(bank, bank.entries["id"][0], status="archived", actor="a")  # texts unchanged
    assert link_context.term_stats(bank, settings) is grown


def test_linker_vectors_survive_updates_in_place_and_a_connect_run(bank):
    from kbtools.ops.maintenance import connect_bank

    first = link_context._linker_state(bank)
    kb.update_entry(bank, bank.entries["id"][7], status="archived", actor="a")
    connect_bank(bank, limit=50)  # sets linked_at of 50 entries, adds edges
    state = link_context._linker_state(bank)
    assert state is first  # the same rows, the same vectors: nothing gathered again
    assert np.array_equal(state.view, _fresh(bank))


def test_a_linked_add_takes_the_statistics_it_planned_with_after_its_commit(bank, monkeypatch):
    settings = link_context.linker_settings(bank)
    before = link_context.term_stats(bank, settings)
    kb.report_learning(bank, content="Kiln 7 on site 4 overheats after error K-771.", actor="a")
    planned = before._cache["extended"][1]
    calls = []
    monkeypatch.setattr(type(before), "extend", lambda self, entries: calls.append(entries) or None)
    after = link_context.term_stats(bank, settings)
    assert after is planned and not calls  # taken, not extended again
    monkeypatch.undo()
    fresh = link_context.term_stats(kb.open_bank(bank.path, readonly=True), settings)
    assert after.ids == fresh.ids and after.vocab == fresh.vocab
    assert (after.postings != fresh.postings).nnz == 0 and np.array_equal(after.w, fresh.w)
    assert np.array_equal(after.rank, fresh.rank) and np.array_equal(after.session, fresh.session)


def test_planned_statistics_are_not_taken_for_other_rows(bank):
    import polars as pl

    settings = link_context.linker_settings(bank)
    base = link_context.term_stats(bank, settings)
    entries = bank.entries
    extra = entries.tail(1).with_columns(pl.lit("zz000001").alias("id"), pl.lit("Kiln 9 smokes.").alias("content"))
    planned = base.extend(pl.concat([entries, extra]))
    link_context._remember_extension(base, planned, pl.concat([entries, extra]))
    other = extra.with_columns(pl.lit("Kiln 9 is fine.").alias("content"))
    assert link_context._planned_extension(base, pl.concat([entries, extra])) is planned
    assert link_context._planned_extension(base, pl.concat([entries, other])) is None
    assert link_context._planned_extension(base, entries) is None
