"""The link lane (``kbtools.linker.lane``): a big connect's common links made by a compiled loop over
arrays give the plan the state alone makes, link for link; at the first row the lane may not link
(superseded, structural, linked before, an end with automatic links from before at its cap) it
hands its links to the state, and the plan is still the same."""

from __future__ import annotations

import datetime as dt
import gzip
import json

import numpy as np
import polars as pl
import pytest

from kbtools.demo import synthetic_bank
from kbtools.linker import LINKER_DEFAULTS, kernels, plan_connect, planning
from kbtools.linker import state as linking
from kbtools.linker.lane import TYPE_NAMES, LinkLane
from kbtools.linker.pipeline import KERNELS_FROM
from kbtools.linker.rules import KINDS

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba is not installed (the `fast` extra)")

NOW = dt.datetime(2026, 12, 3, tzinfo=dt.timezone.utc)


class _Lanes:
    """What the lanes of the connects under test did: the rows they linked, and the links each had
    made when it handed over to the state."""

    def __init__(self):
        self.rows, self.handed = 0, []


@pytest.fixture
def lanes(monkeypatch):
    seen = _Lanes()
    hand_over, link = linking.LinkState.hand_over, LinkLane.link

    def spy_hand_over(self):
        if self.lane is not None:
            seen.handed.append(int(self.lane.counts[0]))
        hand_over(self)

    def spy_link(self, rows, choice, pure):
        done = link(self, rows, choice, pure)
        seen.rows += done
        return done

    monkeypatch.setattr(linking.LinkState, "hand_over", spy_hand_over)
    monkeypatch.setattr(LinkLane, "link", spy_link)
    return seen


def _both(monkeypatch, entries, edges, triples, rows=None, **kw) -> tuple:
    """The plan with the lane and without it (the same connect otherwise), in chunks small enough
    that the ``rows`` linked (all entries by default) make ``KERNELS_FROM`` chunks: the compiled loops."""
    chunk = max(1, (rows or entries.height) // KERNELS_FROM - 1)
    plans = []
    for lane in (True, False):
        monkeypatch.setattr(planning, "_LANE", lane)
        plans.append(plan_connect(entries, edges, triples, chunk=chunk, now=NOW, **kw))
    return tuple(plans)


def _same(with_lane, without) -> None:
    assert with_lane.report == without.report
    assert with_lane.add.equals(without.add) and with_lane.remove.equals(without.remove)
    assert with_lane.entry_updates.equals(without.entry_updates)


def _unlinked(demo) -> pl.DataFrame:
    return demo.entries.with_columns(pl.lit(None).cast(pl.Datetime("us", "UTC")).alias("linked_at"))


@pytest.mark.parametrize("cap", [12, 3])
@pytest.mark.parametrize("workers", [0, 2])
def test_the_lane_plans_what_the_state_plans(monkeypatch, lanes, cap, workers):
    demo = synthetic_bank(entries=3000, seed=11)
    with_lane, without = _both(monkeypatch, _unlinked(demo), demo.edges, demo.triples, workers=workers,
                               settings=LINKER_DEFAULTS.with_(max_degree=cap))
    _same(with_lane, without)
    assert lanes.handed == [] and lanes.rows == with_lane.report["entries"]  # the lane linked every row
    assert with_lane.report["links"] > 2000 and with_lane.report["evicted"] > 50 and with_lane.report["capped"] > 10
    if cap == 3:  # most rows at their cap: evictions and refusals all along
        assert with_lane.report["evicted"] > 1000 and with_lane.report["capped"] > 1000


def test_a_small_plan_from_the_lane_is_read_from_its_records(monkeypatch, lanes):
    """A plan of fewer links than ``state._EDGES_BY_COLUMN`` is built row by row from records: the
    lane hands its links over at the end, and the frames are the state's."""
    monkeypatch.setattr(linking, "_EDGES_BY_COLUMN", 10**9)
    demo = synthetic_bank(entries=3000, seed=11)
    with_lane, without = _both(monkeypatch, _unlinked(demo), demo.edges, demo.triples)
    _same(with_lane, without)
    assert lanes.rows == with_lane.report["entries"] and len(lanes.handed) == 1 and lanes.handed[0] > 5000


def test_a_structural_or_superseded_row_hands_over(monkeypatch, lanes):
    demo = synthetic_bank(entries=3000, seed=11)
    entries = _unlinked(demo).sort("created_at")
    ids = entries["id"].to_list()
    decisions = entries.with_row_index().filter(pl.col("kind") == "decision")["index"].to_list()
    late = next(i for i in decisions if i > 1800)
    meta = entries["metadata"].to_list()
    meta[late] = json.dumps({"supersedes": ids[late - 7]})  # a decision that replaces an older entry
    with_lane, without = _both(monkeypatch, entries.with_columns(pl.Series("metadata", meta)), demo.edges,
                               demo.triples)
    _same(with_lane, without)
    assert with_lane.report["structural"] == 1 and (with_lane.entry_updates["status"] == "superseded").sum() == 1
    assert len(lanes.handed) == 1 and lanes.handed[0] > 1500 and 1700 < lanes.rows <= late

    lanes.rows, lanes.handed = 0, []
    status = entries["status"].to_list()
    status[2200] = "superseded"  # superseded before the plan: its links go to its successor, if any
    with_lane, without = _both(monkeypatch, entries.with_columns(pl.Series("status", status)), demo.edges,
                               demo.triples)
    _same(with_lane, without)
    assert len(lanes.handed) == 1 and lanes.handed[0] > 1500 and 2100 < lanes.rows <= 2200


def test_links_from_before_at_their_cap_hand_over(monkeypatch, lanes):
    """A second connect: the rows the first linked hold automatic links, and at a cap of four the
    lane hands over at the first row whose links could evict one of them."""
    demo = synthetic_bank(entries=3000, seed=11)
    entries = _unlinked(demo).sort("created_at")
    settings = LINKER_DEFAULTS.with_(max_degree=4)
    first = plan_connect(entries.head(1500), demo.edges, demo.triples, now=NOW, settings=settings)
    entries, edges = planning.apply_links(entries, demo.edges, first)
    assert (edges["source"] == "auto").sum() > 1000
    with_lane, without = _both(monkeypatch, entries, edges, demo.triples, rows=1500, settings=settings)
    _same(with_lane, without)
    assert len(lanes.handed) == 1 and lanes.rows < 1500 and with_lane.report["evicted"] > 0
    # rows linked before, linked again (their automatic links derived anew): the state links them
    lanes.rows, lanes.handed = 0, []
    again = entries["id"].to_list()[1000:]
    with_lane, without = _both(monkeypatch, entries, edges, demo.triples, rows=2000, ids=again, settings=settings)
    _same(with_lane, without)
    assert with_lane.report["rederived"] > 0 and lanes.handed == [0] and lanes.rows == 0


def test_the_real_pep_bank_plans_the_same(monkeypatch, lanes, tmp_path):
    from kbtools.demo.peps import PEPS_FILE, build_peps_bank

    src = tmp_path / "slice.jsonl.gz"
    with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh, gzip.open(src, "wt", encoding="utf-8") as out:
        for k, line in enumerate(fh):
            if k % 4 == 0:
                out.write(line)
    bank = build_peps_bank(tmp_path / "bank", source=src)[0]
    entries = bank.entries.with_columns(pl.lit(None).cast(pl.Datetime("us", "UTC")).alias("linked_at"))
    with_lane, without = _both(monkeypatch, entries, bank.edges, bank.triples)
    _same(with_lane, without)
    # sections of one PEP are not linked to each other: the links run between PEPs
    assert with_lane.report["links"] > 50 and lanes.rows > 0


def test_the_weakest_link_is_the_least_by_weight_then_key():
    """At a full row the lane evicts the link the state's heap would: the least weight, then the
    least (source, target, type name); a link no stronger than the weakest is refused."""
    assert kernels.warm()
    n = 6
    lane = LinkLane(n, 8, np.zeros(n, np.int64), np.zeros(n, bool), cap=2, max_new=5)

    class Choice:  # the arrays of a chunk's ``state.LinkChoice`` the lane reads
        def __init__(self, rows_c, score, type_key):
            bounds = np.cumsum([0] + [len(x) for x in rows_c])
            self.arrays = {"bounds": bounds, "c": np.concatenate(rows_c), "base": np.zeros(bounds[-1], np.int64),
                           "score": np.array(score, float), "type_key": np.full(bounds[-1], type_key, np.int64)}
            self.exact = np.zeros(len(rows_c), bool)

    knowledge = KINDS.index("knowledge")
    key = (knowledge << 8 | knowledge) << 9 | 1 << 2  # two knowledge entries, the first the later
    typ, m_is_src = linking.type_of_key(key)

    def link(m, c):
        return (m, c, typ) if m_is_src else (c, m, typ)

    # rows 3 and 4 link to rows 0 and 1: at a cap of two, all four rows are full
    assert lane.link(np.array([3, 4]), Choice([[0, 1], [0, 1]], [0.5] * 4, key), np.ones(2, bool)) == 2
    assert lane.live() == 4 and lane.degree[:5].tolist() == [2, 2, 0, 2, 2]
    # row 5 links to 0 at 0.5 (refused: no stronger than the weakest)
    # and to 1 at 0.9, which evicts the least key of row 1's two links of weight 0.5
    lane.link(np.array([5]), Choice([[0, 1]], [0.5, 0.9], key), np.ones(1, bool))
    assert lane.counts.tolist() == [5, 5, 1, 1, 0]  # made, links, evicted, refused, rows scanned exactly
    live = {(int(s), int(d), TYPE_NAMES[t]) for s, d, t, a in zip(lane.src, lane.dst, lane.typ, lane.alive) if a}
    evicted = min(link(3, 1), link(4, 1))
    assert live == {link(3, 0), link(4, 0), link(3, 1), link(4, 1), link(5, 1)} - {evicted}
    # a row the lane may not link stops it there, before any of its links
    assert lane.link(np.array([2]), Choice([[0]], [0.99], key), np.zeros(1, bool)) == 0 and lane.counts[0] == 5
