"""The index of a table's rows by one column, kept across writes: what it finds is what a scan finds."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kbtools as kb
from kbtools.store.lock import in_parallel
from kbtools.store.rowindex import RowChange, RowIndex
from kbtools.store.segments import rows_finder, rows_with

IDS = ["a1", "b2", "c3", "0badf00d", "a-much-longer-id", None]


def _scan(values: list, wanted) -> list[int]:
    return [i for i, v in enumerate(values) if v is not None and v in set(wanted)]


@settings(max_examples=60, deadline=None)
@given(start=st.lists(st.sampled_from(IDS), max_size=80),
       steps=st.lists(st.tuples(st.lists(st.integers(0, 200), max_size=5), st.lists(st.sampled_from(IDS), max_size=70)),
                      max_size=12),
       wanted=st.lists(st.sampled_from(IDS[:-1] + ["zz"]), min_size=1, max_size=4))
def test_the_index_finds_what_a_scan_finds_through_drops_and_appends(start, steps, wanted):
    rows = list(start)
    index = RowIndex.build(pl.Series(rows, dtype=pl.String))
    for drop, add in steps:
        dropped = sorted({d % len(rows) for d in drop}) if rows else []
        rows = [v for i, v in enumerate(rows) if i not in set(dropped)] + add
        index = index.changed(RowChange(np.array(dropped, dtype=np.int64), len(add)), pl.Series(add, dtype=pl.String))
        assert index.height == len(rows)
        assert index.rows_of(wanted).tolist() == _scan(rows, wanted)


def _scans(bank) -> None:
    """Every entry's edges and its own row, found by the bank's index and by a scan."""
    edges, entries = bank.edges, bank.entries
    ids = entries["id"].to_list()
    for some in (ids[:1], ids[1:4], ids[-3:], ["0badf00d"]):
        for column in ("src", "dst"):
            assert rows_with(bank, "edges", column, some).tolist() == _scan(edges[column].to_list(), some)
        assert rows_with(bank, "entries", "id", some).tolist() == _scan(ids, some)


def test_a_banks_index_follows_its_writes_links_deletes_and_compactions(bank):
    ids = [kb.report_learning(bank, content=f"Pump {i} on line {i % 3} faults with error E-{i}.", actor="a")
           for i in range(8)]
    kb.link(bank, ids[0], ids[1], "see_also", actor="a")
    kb.link(bank, ids[2], ids[1], "corrects", actor="a", note="the right line")
    _scans(bank)  # scanned: asked for in one version of the rows
    kb.report_learning(bank, content="Line 1 faults after the pump restarts.", actor="a",
                       connections=[{"id": ids[0], "relation": "see_also"}])  # new versions of both tables
    _scans(bank)  # built here: a second version asked for
    built = RowIndex.builds
    kb.unlink(bank, ids[0], ids[1], "see_also", actor="a", reason="not related")
    _scans(bank)
    kb.delete_entry(bank, ids[1], reason="wrong", actor="a")  # bridges and drops its edges
    kb.report_learning(bank, content="A later fact about line 2.", actor="a",
                       connections=[{"id": ids[4], "relation": "see_also"}])
    _scans(bank)
    kb.update_entry(bank, ids[5], actor="a", title="renamed")  # a key updated in place
    _scans(bank)
    assert RowIndex.builds == built  # grown by each write, not built again
    other = kb.open_bank(bank.path)  # another process's writes, read by a reload
    kb.link(other, ids[6], ids[7], "see_also", actor="b")
    bank.reload()
    _scans(bank)
    bank.compact()
    _scans(bank)


def test_a_process_that_writes_once_scans_and_one_that_writes_on_builds_the_index(tmp_path):
    bank = kb.create_bank(tmp_path / "b", embedder="hashing")
    for i in range(6):
        kb.report_learning(bank, content=f"Pump {i % 3} on line {i % 2} faults with error E-{i}.", actor="a")
    bank = kb.open_bank(bank.path)  # a new process's view: nothing asked yet
    built = RowIndex.builds
    kb.report_learning(bank, content="Pump 1 on line 1 faults with error E-9 again.", actor="a")
    assert RowIndex.builds == built  # one command's linked write: scans, however often it asks
    kb.report_learning(bank, content="Pump 2 on line 0 faults with error E-8 again.", actor="a")
    assert RowIndex.builds > built  # asked for in a second version: built, then kept current
    _scans(bank)


def test_linked_writes_find_the_edges_a_scan_finds(tmp_path):
    """The write-time linker reads a new entry's neighbourhood from the index: the links it writes
    are those it writes when every edge is scanned for it."""
    from kbtools.linker import planning

    found = []
    scan = planning.PlanContext.edges_touching

    def both(self, ids):
        got = scan(self, ids)
        rows, self.edge_rows = self.edge_rows, None
        try:
            found.append((got.sort("_orig").rows(), scan(self, ids).sort("_orig").rows()))
        finally:
            self.edge_rows = rows
        return got

    bank = kb.create_bank(tmp_path / "b", embedder="hashing")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planning.PlanContext, "edges_touching", both)
        for i in range(30):
            kb.report_learning(bank, content=f"Pump {i % 4} on line {i % 3} keeps faulting with error E-{i % 5}.", actor="a")
    assert found and all(a == b for a, b in found)
    assert bank.edges.height > 0


def test_a_finder_reads_a_writes_new_rows_after_the_banks(small_bank):
    new = pl.DataFrame({"src": ["0badf00d"], "dst": [small_bank.ids[0]]})
    find = rows_finder(small_bank, {"edges": new})
    n = small_bank.edges.height
    assert find("edges", "dst", [small_bank.ids[0]]).tolist() == _scan(small_bank.edges["dst"].to_list(),
                                                                        [small_bank.ids[0]]) + [n]
    with pytest.raises(kb.KbError, match="no column"):
        rows_with(small_bank, "edges", "nope", ["x"])


def test_calls_in_parallel_return_in_order_and_raise_the_first_error():
    assert in_parallel([lambda i=i: i * i for i in range(5)]) == [0, 1, 4, 9, 16]

    def fail(msg):
        raise OSError(msg)

    with pytest.raises(OSError, match="first"):
        in_parallel([lambda: 1, lambda: fail("first"), lambda: fail("second")])
