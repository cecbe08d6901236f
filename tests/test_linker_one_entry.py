"""Linking one entry takes its own short steps (a slice for one row's postings, Python numbers for
its neighbour search, one sort of its candidates, polars' row reader for its plan's frames): each
gives what the batch steps give the same row, bit for bit."""

from __future__ import annotations

import dataclasses
import datetime as dt

import faiss
import numpy as np
import scipy.sparse as sp
import polars as pl
import pytest

from kbtools.demo import synthetic_bank
from kbtools.linker import LINKER_DEFAULTS, TermStats, evidence, state
from kbtools.linker.planning import cached_relations, PlanContext, triple_entities
from kbtools.linker.terms import row_positions
from kbtools.model import schema


@pytest.fixture(scope="module")
def bank():
    """A 900-entry generated bank, its statistics, context, unit vectors and an HNSW index."""
    demo = synthetic_bank(entries=900, seed=21)
    entries = demo.entries.with_columns(pl.lit(None, dtype=schema.TIME).alias("linked_at"))
    stats = TermStats.build(entries, known_entities=triple_entities(demo.triples))
    ctx = PlanContext.open(entries, demo.edges, demo.triples, stats, LINKER_DEFAULTS, None, None, None, None)
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(40, 32))
    vectors = (centres[rng.integers(0, 40, entries.height)] + 0.6 * rng.normal(size=(entries.height, 32)))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    vectors[rng.integers(0, entries.height, 300)] = vectors[rng.integers(0, 30, 300)]  # copies: equal cosines
    # times to the quarter (a generated session spans months): entries of a session as far apart
    # from an entry, their order then by rank
    quarter = 90 * 86_400_000_000
    stats = dataclasses.replace(stats, time_us=stats.time_us // quarter * quarter)
    index = faiss.IndexHNSWFlat(32, 8, faiss.METRIC_INNER_PRODUCT)  # a sparse graph: approximate lists
    index.hnsw.efSearch = 16
    index.add(vectors)
    return stats, ctx, vectors, index


def test_one_rows_postings_are_a_slice_of_the_batch_read():
    indptr = np.array([0, 3, 3, 7, 8])
    for row in range(4):
        one = row_positions(indptr, np.array([row]))
        batch = row_positions(indptr, np.array([row, 0]))
        width = indptr[row + 1] - indptr[row]
        assert [x.tolist() for x in one] == [batch[0][:width].tolist(), batch[1][:width].tolist()]
        assert one[0].dtype == one[1].dtype == np.int64


@pytest.mark.parametrize("both_ends", [False, True])
def test_one_rows_candidates_are_those_it_gets_in_a_batch(bank, both_ends):
    """Every source of a row's candidates (votes, index search or exact scan, session; with both ends'
    lists: the frame's lists and the session), their positions and exact cosines: the same for the
    row alone as beside others."""
    stats, ctx, vectors, index = bank
    settings = LINKER_DEFAULTS.with_(both_ends=both_ends)
    near = "pos_own" if both_ends else "pos_nn"
    kw = dict(rel=ctx.rel, open_=ctx.open_, linked=ctx.linked, settings=settings, vectors=vectors,
              neighbors=index, eligible=ctx.eligible())
    seen = {"near": 0, "session": 0}
    for row in range(0, len(stats.ids), 37):
        other = (row * 7 + 11) % len(stats.ids)
        one = evidence.candidate_pairs(stats, np.array([row]), **kw)
        two = evidence.candidate_pairs(stats, np.array([row, other]), **kw)
        first = two["b"] == 0
        if len(one["c"]) == 0:  # no candidates at all (a batch's frame may hold columns the others fill)
            assert not first.any()
            continue
        assert set(one) == set(two)
        for key in one:
            want = two[key][first]
            assert np.array_equal(one[key], want, equal_nan=one[key].dtype.kind == "f"), key
        seen["near"] += bool((one[near] < evidence.SENTINEL).any())
        seen["session"] += bool((one["pos_session"] < evidence.SENTINEL).any())
    assert seen["near"] > 5 and seen["session"] > 5


def test_one_rows_index_hits_are_the_batch_steps(bank):
    stats, ctx, vectors, index = bank
    rows = np.arange(450, 900, 9)
    hits = evidence.index_search(index, np.ascontiguousarray(vectors[rows]), rows, 33)
    b, *batch = evidence._index_hits(stats, rows, vectors, ctx.open_, ctx.linked, 20, hits[1])
    for i in range(len(rows)):
        alone = evidence._index_hits(stats, rows[i : i + 1], vectors, ctx.open_, ctx.linked, 20, hits[1][i : i + 1])
        assert not alone[0].any()
        c, pos, cos = batch
        mine = b == i
        for got, want in zip(alone[1:], (c[mine], pos[mine], cos[mine])):
            assert np.array_equal(got, want) and got.dtype == want.dtype


def test_one_entrys_shared_terms_are_those_of_mixed_pairs(bank):
    stats = bank[0]
    rng = np.random.default_rng(3)
    for row in rng.integers(0, len(stats.ids), 20).tolist():
        cs = rng.integers(0, len(stats.ids), 60)
        ms = np.full(60, row)
        mixed = ms.copy()
        mixed[::2] = rng.integers(0, len(stats.ids), 30)  # other entries' pairs between
        alone, among = evidence._shared(stats, ms, cs), evidence._shared(stats, mixed, cs)
        for a, b in zip(alone, among):
            assert np.array_equal(a[1::2], b[1::2])
    total = evidence._shared(stats, np.full(len(stats.ids), 5), np.arange(len(stats.ids)))
    assert (total[1] > 0).sum() > 5


def test_one_rows_votes_are_the_sparse_products(demo_dir):
    from kbtools.store.bank import open_bank

    bank = open_bank(demo_dir / "engineering")
    stats = TermStats.build(bank.entries, known_entities=triple_entities(bank.triples))
    rel = cached_relations(stats, bank.triples)
    assert rel.cols.size  # related entities vote too
    for row in np.flatnonzero(stats.kind >= 0)[:120].tolist():
        r, c, v = evidence._votes(stats, np.array([row]), rel, LINKER_DEFAULTS)
        q_rows, q_terms = evidence.voting_terms(stats, np.array([row]), rel, LINKER_DEFAULTS)
        query = sp.csr_matrix((stats.w[q_terms], (q_rows, q_terms)), shape=(1, len(stats.vocab)))
        product = (query @ stats.postings_t).tocoo()
        want = sorted(zip(product.row.tolist(), product.col.tolist(), product.data.tolist()))
        assert sorted(zip(r.tolist(), c.tolist(), v.tolist())) == want  # the same bits
        assert r.dtype == c.dtype == np.int64


def test_type_keys_hold_the_flags_in_the_order_link_type_reads_them(bank):
    rng = np.random.default_rng(8)
    n = len(bank[0].ids)
    stats = dataclasses.replace(bank[0], fix=rng.random(n) < 0.3, problem=rng.random(n) < 0.3,
                                progress=rng.random(n) < 0.3)
    ms, cs = rng.integers(0, len(stats.ids), 500), rng.integers(0, len(stats.ids), 500)
    ev = {"m": ms, "c": cs, "later": rng.random(500) < 0.5, "time": rng.choice([0.0, 0.5, 1.0], 500),
          "bridge_only": rng.random(500) < 0.3}
    flags = (stats.fix[ms], stats.problem[ms], stats.progress[ms], stats.fix[cs], stats.problem[cs],
             stats.progress[cs], ev["later"], ev["time"] > 0, ev["bridge_only"])
    want = (stats.kind[ms].astype(np.int64) << 8) | stats.kind[cs].astype(np.int64)
    for flag in flags:
        want = (want << 1) | flag
    assert np.array_equal(state._type_keys(stats, ev), want)
    assert stats.fix.any() and stats.problem.any()


@pytest.mark.parametrize("reader", ["polars", "public"])
def test_a_frame_of_rows_is_the_polars_constructors(monkeypatch, reader):
    """``rows_frame`` gives ``pl.DataFrame(rows, schema=..., orient="row")``: nulls, epoch
    microseconds and datetimes, an int in a float column; the constructor itself where polars'
    row reader is not found or differs; a bad value raises as the constructor does."""
    if reader == "public":
        monkeypatch.setattr(schema, "_checked_reader", lambda rows, sch, built: False)
    monkeypatch.setattr(schema, "_ROW_READERS", {})
    sch = {"src": pl.String, "weight": pl.Float64, "at": schema.TIME, "n": pl.Int64}
    t = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
    batches = [[("a", 0.5, 1_700_000_000_000_000, None)], [(None, 1, t, 3), ("b", None, None, None)], []]
    for rows in batches:
        got, want = schema.rows_frame(rows, sch), pl.DataFrame(rows, schema=sch, orient="row")
        assert got.schema == want.schema and got.equals(want)
    held = schema._ROW_READERS[id(sch)][1]
    assert (held is False) == (reader == "public")
    with pytest.raises(pl.exceptions.ComputeError):
        schema.rows_frame([("a", "heavy", None, None)], sch)
    other = dict(sch)
    assert schema.rows_frame([], other).schema == pl.Schema(other) and id(other) not in schema._ROW_READERS


def test_a_plans_frames_are_built_alike_by_either_reader(monkeypatch, bank):
    """One entry's plan (its edges, its update) read by polars' row reader and by the constructor."""
    from kbtools.linker import plan_links

    stats, ctx, vectors, index = bank
    demo = synthetic_bank(entries=900, seed=21)
    entries = demo.entries.with_columns(pl.lit(None, dtype=schema.TIME).alias("linked_at"))
    ids = entries["id"].to_list()[-30:]
    plans = {}
    for reader in ("polars", "public"):
        monkeypatch.setattr(schema, "_ROW_READERS", {})
        if reader == "public":
            monkeypatch.setattr(schema, "_checked_reader", lambda rows, sch, built: False)
        now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
        plans[reader] = [plan_links(i, entries, demo.edges, demo.triples, vectors=vectors, neighbors=index,
                                    stats=stats, now=now) for i in ids]
    for a, b in zip(plans["polars"], plans["public"]):
        assert a.add.equals(b.add) and a.entry_updates.equals(b.entry_updates) and a.report == b.report
    assert sum(p.add.height for p in plans["polars"]) > 20
