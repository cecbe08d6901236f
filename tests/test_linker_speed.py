"""The linker's speed work keeps its answers: the cue flags read by polars over a whole column equal
the rules' Python patterns per text, and ``kb bench --only`` names what it can run."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import polars as pl
import pytest

from kbtools.errors import ValidationError
from kbtools.evaluate.bench import run_bench
from kbtools.linker.rules import FIX_RE, PROBLEM_RE, PROGRESS_RE
from kbtools.linker.terms import text_cues
from kbtools.words import content_words


def test_cue_flags_over_a_column_equal_the_patterns_text_by_text(demo_dir):
    entries = pl.read_parquet(sorted((demo_dir / "engineering" / "tables" / "entries").glob("*.parquet")))
    texts = (entries["title"].fill_null("") + "\n" + entries["content"].fill_null("")).to_list()
    texts += ["Found it: the encoder cable on line 3 was loose.", "it TIMED OUT again", "50 % done", "", "can't"]
    flags = text_cues(texts)
    for name, pattern in (("fix", FIX_RE), ("problem", PROBLEM_RE), ("progress", PROGRESS_RE)):
        want = np.array([bool(pattern.search(t)) for t in texts])
        assert want.any() and (flags[name] == want).all(), name


def test_cue_flags_of_a_few_texts_read_as_the_column_reads_them(demo_dir):
    entries = pl.read_parquet(sorted((demo_dir / "engineering" / "tables" / "entries").glob("*.parquet")))
    texts = (entries["title"].fill_null("") + "\n" + entries["content"].fill_null("")).to_list()
    texts += ["FIXED the crash", "keeps failing", "time out", "keep runnings", "Résolu: fixed, café down", None]
    whole = text_cues(texts)  # polars over the column
    for i in range(0, len(texts), 3):  # a write's few texts: Python's engine where all are ASCII
        few = text_cues(texts[i:i + 3])
        assert all((few[k] == whole[k][i:i + 3]).all() for k in whole), texts[i:i + 3]


def test_memoised_content_words_read_alike_twice():
    text = "The plant's PLC network keeps jamming; jammed again. THE Plant's plc"
    assert content_words(text) == content_words(text)
    assert [s for s, _ in content_words(text)] == ["plant", "plc", "network", "jam", "jam", "plant", "plc"]


def test_bench_only_names_a_known_section():
    with pytest.raises(ValidationError, match="only"):
        run_bench(sizes=(1000,), only="everything", log=lambda m: None)


def test_best_drops_pairs_below_the_kth_without_changing_the_result():
    import numpy as np

    from kbtools.linker import evidence

    rng = np.random.default_rng(3)
    n_rows, n_cols, k = 40, 500, 7
    r = np.sort(rng.integers(0, n_rows, 20_000))
    c = rng.integers(0, n_cols, 20_000)
    v = rng.integers(0, 12, 20_000) / 4.0  # many ties at the k-th value
    rank = rng.permutation(n_cols)
    order = np.lexsort((-rank[c], -v, r))  # the plain sort over every pair
    rs, cs = r[order], c[order]
    pos = np.arange(len(rs)) - np.searchsorted(rs, np.arange(n_rows))[rs]
    want = (rs[pos < k], cs[pos < k], pos[pos < k])
    got = evidence._best(r, c, v, k, rank, n_rows)
    assert len(r) > 4 * k * n_rows  # the pre-filter runs
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
    shuffled = rng.permutation(len(r))  # rows out of order are sorted first
    got = evidence._best(r[shuffled], c[shuffled], v[shuffled], k, rank, n_rows)
    assert [len(x) for x in got] == [len(x) for x in want]


def test_bag_overlap_by_sorted_keys_equals_the_sparse_row_product():
    from kbtools.demo import synthetic_bank
    from kbtools.linker import evidence
    from kbtools.linker.terms import TermStats

    demo = synthetic_bank(entries=600, seed=4)
    names = ["ann", "bo", "cy", "dee", "ed", "flo", "gus"]
    authors = [f'{{"authors": ["{names[i % 7]}", "{names[i % 5]}"]}}' for i in range(600)]
    stats = TermStats.build(demo.entries.with_columns(pl.Series("metadata", authors)))
    rng = np.random.default_rng(1)
    ms, cs = rng.integers(0, 600, 3000), rng.integers(0, 600, 3000)
    bag = stats.bags["author"]
    a, b = bag[ms], bag[cs]
    both = np.asarray(a.multiply(b).sum(axis=1)).ravel()
    size = np.diff(a.indptr) + np.diff(b.indptr) - both
    want = np.divide(both, size, out=np.zeros(len(ms)), where=size > 0)
    got = evidence._bag_overlap(stats, "author", ms, cs)
    assert np.array_equal(got, want)
    assert (got > 0).any()


def test_dense_neighbours_are_the_same_whatever_the_block_size(monkeypatch):
    from kbtools.demo import synthetic_bank
    from kbtools.linker import evidence
    from kbtools.linker.terms import TermStats

    demo = synthetic_bank(entries=400, seed=2)
    stats = TermStats.build(demo.entries)
    vectors = np.random.default_rng(3).normal(size=(400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    open_ = np.ones(400, bool)
    linked = np.zeros(400, bool)
    linked[::7] = True
    rows = np.random.default_rng(4).permutation(400)[:120]
    whole = evidence._exact_neighbours(stats, rows, vectors, open_, linked, 6)
    monkeypatch.setattr(evidence, "_DENSE_CELLS", 500)  # many small blocks, split by rank
    split = evidence._exact_neighbours(stats, rows, vectors, open_, linked, 6)
    for a, b in zip(whole, split):
        assert np.array_equal(a, b)
    assert len(whole[0]) > 300


@pytest.mark.parametrize("stride", [8, 2])  # 8: a narrow block picks columns; 2: a wide one reads past a sampled bound
@pytest.mark.parametrize("kind", ["directions", "random"])
@pytest.mark.parametrize("closed", [False, True])  # True: every 11th entry archived, scored among the run and hidden
def test_dense_neighbours_read_a_row_whole_when_its_ties_run_past_the_picked_columns(monkeypatch, stride, kind, closed):
    """Vectors in five directions: each row ties with dozens of columns at its k-th, more than the
    columns picked first (``_TIE_ROOM``) or read past the sampled bound; the scan still returns a
    brute force's list (exact cosine, then the newer entry) and each pair's exact cosine."""
    from kbtools.demo import synthetic_bank
    from kbtools.linker import evidence
    from kbtools.linker.terms import TermStats

    demo = synthetic_bank(entries=300, seed=2)
    # closed: rows in time order, so that a block's columns are a run of rows, archived ones among them
    stats = TermStats.build(demo.entries.sort("created_at") if closed else demo.entries)
    n = len(stats.ids)
    rng = np.random.default_rng(7)
    if kind == "directions":
        vectors = rng.normal(size=(5, 16))[rng.integers(0, 5, n)].astype(np.float32)
    else:
        vectors = rng.normal(size=(n, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    monkeypatch.setattr(evidence, "_SAMPLE_STRIDE", stride)
    sampled = []
    monkeypatch.setattr(evidence, "_sampled_candidates", lambda *a, f=evidence._sampled_candidates: sampled.append(
        f(*a)) or sampled[-1])
    open_, linked = np.ones(n, bool), np.zeros(n, bool)
    linked[::9] = not closed  # closed: as a whole-bank connect, nothing linked before
    if closed:
        open_[::11] = False
        monkeypatch.setattr(evidence, "_DENSE_CELLS", 2_000)  # blocks of early rows score a run of the entries before them
    rows = rng.permutation(n)[:90]
    k = 4
    assert k + evidence._TIE_ROOM < n // 5
    b, c, pos, cos = evidence._exact_neighbours(stats, rows, vectors, open_, linked, k)
    assert list(zip(b.tolist(), c.tolist(), cos.tolist())) == _brute_neighbours(stats, rows, vectors, open_, linked, k)
    assert np.array_equal(cos, evidence.pair_cosine(rows[b], c, vectors=vectors))
    assert bool(sampled) == (stride == 2)
    if sampled and kind == "directions":
        assert sum(len(whole) for *_, whole in sampled) > 0  # rows whose ties reach the bound were read whole


def _brute_neighbours(stats, rows, vectors, open_, linked, k):
    """Per row, its k visible entries of highest exact cosine (ties: the newer first), one by one."""
    from kbtools.linker import evidence

    want = []
    for i, row in enumerate(rows.tolist()):
        cols = np.flatnonzero(open_ & (stats.kind >= 0) & (linked | (stats.rank < stats.rank[row])))
        cols = cols[cols != row]  # linkable, and linked or created earlier; not itself
        exact = evidence.pair_cosine(np.full(len(cols), row), cols, vectors=vectors)
        order = np.lexsort((-stats.rank[cols], -exact))[:k]
        want += [(i, int(x), float(y)) for x, y in zip(cols[order], exact[order])]
    return want


def test_a_row_that_sees_fewer_than_k_entries_in_a_wide_block_keeps_only_those(monkeypatch):
    """The first entries of a bank scanned in one block with later ones (read past a sampled bound):
    they keep the few entries they see, never a hidden one."""
    from kbtools.demo import synthetic_bank
    from kbtools.linker import evidence
    from kbtools.linker.terms import TermStats

    stats = TermStats.build(synthetic_bank(entries=300, seed=2).entries)
    n = len(stats.ids)
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(n, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    monkeypatch.setattr(evidence, "_SAMPLE_STRIDE", 2)
    open_, linked = np.ones(n, bool), np.zeros(n, bool)
    by_rank = np.argsort(stats.rank, kind="stable")
    rows = np.concatenate([by_rank[:3], by_rank[-60:]])  # ranks 0, 1, 2 see 0, 1, 2 entries
    b, c, pos, cos = evidence._exact_neighbours(stats, rows, vectors, open_, linked, 4)
    assert np.bincount(b, minlength=len(rows))[:3].tolist() == [0, 1, 2]
    assert list(zip(b.tolist(), c.tolist(), cos.tolist())) == _brute_neighbours(stats, rows, vectors, open_, linked, 4)


def test_a_big_banks_edges_gathered_row_by_row_plan_the_same_links(monkeypatch):
    from kbtools.demo import synthetic_bank
    from kbtools.linker import planning, state
    from kbtools.linker.terms import TermStats

    demo = synthetic_bank(entries=300, seed=5)
    entries = demo.entries.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("linked_at"))
    stats = TermStats.build(entries)
    now = entries["created_at"].max()
    whole = planning.plan_connect(entries, demo.edges, demo.triples, stats=stats, now=now)
    monkeypatch.setattr(state, "_EDGES_READ_WHOLE", 0)
    stats = TermStats.build(entries)  # no edge index kept from the first run
    gathered = planning.plan_connect(entries, demo.edges, demo.triples, stats=stats, now=now)
    assert whole.add.height > 50 and whole.add.equals(gathered.add) and whole.remove.equals(gathered.remove)


def test_links_made_inline_plan_as_through_add_capped(monkeypatch):
    """An entry's common links are made inline (``_INLINE_LINKS``); with full degree caps,
    evictions and input edges, the plan is the one every link through ``add_capped`` makes."""
    from kbtools.demo.engineering import engineering_bank
    from kbtools.linker import LINKER_DEFAULTS, planning
    from kbtools.linker import state as linking

    demo = engineering_bank(entries=600)
    settings = LINKER_DEFAULTS.with_(max_degree=3)
    now = demo.entries["created_at"].max()
    inline = planning.plan_connect(demo.entries, demo.edges, demo.triples, settings=settings, now=now)
    monkeypatch.setattr(linking, "_INLINE_LINKS", False)
    through = planning.plan_connect(demo.entries, demo.edges, demo.triples, settings=settings, now=now)
    assert inline.report["evicted"] and inline.report["capped"] and inline.report == through.report
    assert inline.add.height > 50 and inline.add.equals(through.add) and inline.remove.equals(through.remove)
    assert inline.entry_updates.equals(through.entry_updates)


def test_the_evidence_text_is_written_only_for_links_still_planned(monkeypatch):
    """A link evicted (or replaced) before its text is written never gets one: the batches of
    texts hold no more links than the plan's automatic ones."""
    from kbtools.demo.engineering import engineering_bank
    from kbtools.linker import LINKER_DEFAULTS, planning
    from kbtools.linker import state as linking

    demo = engineering_bank(entries=600)
    written = []
    texts = linking.evidence_texts
    monkeypatch.setattr(linking, "evidence_texts", lambda *a, **k: written.append(len(a[2])) or texts(*a, **k))
    plan = planning.plan_connect(demo.entries, demo.edges, demo.triples, settings=LINKER_DEFAULTS.with_(max_degree=3),
                                 now=demo.entries["created_at"].max())
    auto = plan.add.filter(pl.col("source") == "auto")
    assert plan.report["evicted"] > 50 and written
    assert sum(written) <= auto.height and auto["evidence"].null_count() == 0


def test_pair_cosines_do_not_depend_on_their_batch():
    from kbtools.linker.evidence import pair_cosine

    rng = np.random.default_rng(5)
    for d in (384, 257, 3):
        vectors = rng.normal(size=(800, d)).astype(np.float32)
        ms, cs = rng.integers(0, 800, 3000), rng.integers(0, 800, 3000)
        whole = pair_cosine(ms, cs, vectors=vectors)
        alone = np.array([pair_cosine(ms[i : i + 1], cs[i : i + 1], vectors=vectors)[0] for i in range(0, 3000, 7)])
        assert np.array_equal(whole[::7], alone), d
        assert np.allclose(whole, np.einsum("ij,ij->i", vectors[ms].astype(np.float64), vectors[cs].astype(np.float64)), atol=1e-4)


def test_votes_sum_as_the_sparse_product_does(demo_dir):
    from kbtools.linker import LINKER_DEFAULTS, TermStats
    from kbtools.linker import evidence
    from kbtools.linker.planning import cached_relations, triple_entities
    from kbtools.store.bank import open_bank

    bank = open_bank(demo_dir / "engineering")
    stats = TermStats.build(bank.entries, known_entities=triple_entities(bank.triples))
    rel = cached_relations(stats, bank.triples)
    assert rel.cols.size  # related entities vote too
    rows = np.flatnonzero(stats.kind >= 0)[:400]
    for start in range(0, len(rows), evidence._FEW_ROWS):  # a few rows sum with numpy
        few = rows[start : start + evidence._FEW_ROWS]
        r, c, v = evidence._votes(stats, few, rel, LINKER_DEFAULTS)
        q_rows, q_terms = evidence.voting_terms(stats, few, rel, LINKER_DEFAULTS)
        query = sp.csr_matrix((stats.w[q_terms], (q_rows, q_terms)), shape=(len(few), len(stats.vocab)))
        product = (query @ stats.postings_t).tocoo()
        want = sorted(zip(product.row.tolist(), product.col.tolist(), product.data.tolist()))
        assert sorted(zip(r.tolist(), c.tolist(), v.tolist())) == want  # the same bits


def test_the_linking_state_counts_what_it_has_not_loaded():
    """Joined pairs and capped degrees read from the edge index's counts equal those of the loaded
    edges, before and after a plan that fills degree caps and evicts."""
    from kbtools.demo.engineering import engineering_bank
    from kbtools.linker import LINKER_DEFAULTS, planning
    from kbtools.linker import state as linking

    demo = engineering_bank(entries=600)
    settings = LINKER_DEFAULTS.with_(max_degree=3)
    ctx = planning.PlanContext.open(demo.entries, demo.edges, demo.triples, None, settings, None, None, None)
    state = linking.LinkState(ctx, ctx.edge_index())
    rows = np.arange(len(ctx.stats.ids))
    before = [state.degree(r) for r in rows]
    state.ensure(rows.tolist())
    assert before == [len(state.capped[r]) for r in rows]
    pairs = {linking._pair(k[0], k[1]) for k in state.edges}
    assert all(state.joined(a, b) for a, b in pairs)
    plan = planning.plan_connect(demo.entries, demo.edges, demo.triples, settings=settings)
    assert plan.report["evicted"] and plan.report["capped"]
    fresh = linking.LinkState(ctx, ctx.edge_index())  # a plan's state, loaded lazily, then whole
    for r in ctx.stats.rank.argsort().tolist():
        fresh.link_entry(r, *_one_entry(ctx, r, settings))
    counted = [fresh.degree(r) for r in rows]
    fresh.ensure(rows.tolist())
    assert counted == [len(fresh.capped[r]) for r in rows]
    assert all(fresh.joined(k[0], k[1]) for k in fresh.edges)


def test_the_weakest_capped_link_read_off_a_heap_is_the_least_of_the_rows_links(monkeypatch):
    """Each row at its degree cap names as its weakest link the least (strength, key) of its
    capped links, with input edges loaded late and links removed and added between the asks."""
    from kbtools.demo.engineering import engineering_bank
    from kbtools.linker import LINKER_DEFAULTS, planning
    from kbtools.linker import state as linking

    demo = engineering_bank(entries=600)
    settings = LINKER_DEFAULTS.with_(max_degree=3)
    first = planning.plan_connect(demo.entries, demo.edges, demo.triples, settings=settings)
    edges = pl.concat([demo.edges, first.add])  # auto links in the input: rows loaded when they fill up
    asked = []
    heap = linking.LinkState._weakest

    def checked(self, row):
        key = heap(self, row)
        asked.append(row)
        assert key == min((self.strength(self.edges[k]), k) for k in self.capped[row])[1]
        return key

    monkeypatch.setattr(linking.LinkState, "_weakest", checked)
    entries = demo.entries.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("linked_at"))
    plan = planning.plan_connect(entries, edges, demo.triples, settings=settings.with_(max_degree=4))
    assert plan.report["evicted"] and plan.report["capped"]
    assert len(asked) > len(set(asked)) > 20  # rows asked again after links came and went


def _one_entry(ctx, row, settings):
    from kbtools.linker.evidence import candidate_pairs, pair_evidence

    rows = np.array([row])
    pairs = candidate_pairs(ctx.stats, rows, rel=ctx.rel, open_=ctx.open_, linked=ctx.linked, settings=settings)
    return pairs, pair_evidence(ctx.stats, pairs["m"], pairs["c"], rel=ctx.rel, settings=settings), ctx.structural(row)


def test_hit_cosines_are_the_pair_cosines_bits():
    from kbtools.linker.evidence import hit_cosines, pair_cosine

    rng = np.random.default_rng(9)
    for d in (384, 256, 7):
        vectors = rng.normal(size=(3000, d)).astype(np.float32)
        rows, found = rng.integers(0, 3000, 300), rng.integers(0, 3000, (300, 41))
        grid = hit_cosines(vectors, rows, found)
        pairs = pair_cosine(np.repeat(rows, 41), found.ravel(), vectors=vectors).reshape(300, 41)
        assert np.array_equal(grid, pairs), d
        assert np.array_equal(hit_cosines(vectors, rows[:1], found[:1]), grid[:1])  # one row alone


def test_relations_are_kept_while_the_triples_read_alike():
    from kbtools.demo.engineering import engineering_bank
    from kbtools.linker.planning import cached_relations
    from kbtools.linker.terms import TermStats

    demo = engineering_bank(entries=500)
    stats = TermStats.build(demo.entries)
    first = cached_relations(stats, demo.triples)
    assert first.cols.size
    assert cached_relations(stats, demo.triples.clone()) is first  # another frame, the same rows
    changed = cached_relations(stats, demo.triples.head(demo.triples.height - 1))
    assert changed is not first


@pytest.mark.parametrize("enabled", [True, False])
def test_a_connect_leaves_the_garbage_collector_as_it_found_it(enabled):
    """plan_connect pauses the collector while it plans, and puts it back as it was, also on error."""
    import gc

    from kbtools.demo.banks import synthetic_bank
    from kbtools.linker import plan_connect

    demo = synthetic_bank(entries=120, seed=2)
    seen = []
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        plan = plan_connect(demo.entries, demo.edges, demo.triples, progress=lambda done, total: seen.append(gc.isenabled()))
        assert plan.report["entries"] > 0 and seen and not any(seen)  # paused while planning
        assert gc.isenabled() == enabled
        with pytest.raises(ZeroDivisionError):
            plan_connect(demo.entries, demo.edges, demo.triples, progress=lambda done, total: 1 / 0)
        assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()


@pytest.mark.parametrize("values", ["two", "twelve", "distinct"])
def test_the_kth_highest_vote_of_each_row_is_found_in_groups_as_row_by_row(monkeypatch, values):
    """``_above_kth`` sorts rows of about the same length together (padded with -inf), a wide row
    cut first at a sampled bound: the kept pairs are exactly those at or above each row's own k-th
    highest value, ties included."""
    from kbtools.linker import evidence

    rng = np.random.default_rng(5)
    n_rows, k = 300, 7
    lengths = rng.choice([0, 1, 7, 8, 9, 40, 300, 1025], size=n_rows)
    r = np.repeat(np.arange(n_rows), lengths)
    # two or twelve values: many ties at the k-th (two: half of a row at the bound, no cut is worth it)
    levels = {"two": 2, "twelve": 12}.get(values)
    v = rng.random(len(r)) if levels is None else rng.integers(0, levels, len(r)) / 4
    cuts = []
    monkeypatch.setattr(evidence, "_kth_highest", lambda b, x, k, f=evidence._kth_highest: cuts.append(len(x)) or f(b, x, k))
    c = np.arange(len(r))
    shuffled = rng.permutation(len(r))
    got_r, got_c, got_v = evidence._above_kth(r[shuffled], c[shuffled], v[shuffled], k, n_rows)
    want = []
    for row in range(n_rows):
        mine = np.flatnonzero(r == row)
        kth = np.sort(v[mine])[-k] if len(mine) > k else -np.inf
        want += [int(x) for x in mine if v[x] >= kth]
    assert sorted(got_c.tolist()) == sorted(want)
    assert (r[got_c] == got_r).all() and (v[got_c] == got_v).all()
    assert np.all(np.diff(got_r) >= 0)  # by row, as ``_best`` reads them
    assert len(want) < len(r)  # rows were cut
    assert (len(cuts) > 1) == (values != "two")  # the wide rows' values above the bound, read again


@pytest.mark.parametrize("length,k", [(1226, 24), (24, 24), (5, 24), (300, 1)])
def test_one_rows_kth_highest_vote_is_the_groups(length, k):
    """One entry's votes take a plain sort (``_above_kth`` with one row): the pairs kept are those
    the grouped path keeps, ties at the k-th included."""
    from kbtools.linker import evidence

    rng = np.random.default_rng(length)
    v = rng.integers(0, 40, length) / 8.0
    r, c = np.zeros(length, np.int64), np.arange(length)
    got = evidence._above_kth(r, c, v, k, 1)
    two_rows = evidence._above_kth(np.append(r, 1), np.append(c, -1), np.append(v, 0.0), k, 2)
    assert sorted(got[1].tolist()) == sorted(two_rows[1][two_rows[0] == 0].tolist())
    assert len(got[1]) >= min(k, length)


def test_visible_pairs_read_through_one_array_as_through_the_flags():
    """Pairs read who may see whom from one array per flags (``_visible_from``), many or a few at a
    time: the flags' answer, superseded, unlinkable, linked and later entries included."""
    from kbtools.demo import synthetic_bank
    from kbtools.linker import evidence
    from kbtools.linker.terms import TermStats

    stats = TermStats.build(synthetic_bank(entries=400, seed=4).entries)
    n = len(stats.ids)
    rng = np.random.default_rng(1)
    open_, linked = rng.random(n) < 0.9, rng.random(n) < 0.3
    rows = rng.integers(0, n, 40)
    b, c = rng.integers(0, 40, 5000), rng.integers(0, n, 5000)
    c[:40] = rows[b[:40]]  # an entry never sees itself
    many = evidence._visible_pairs(stats, rows, b, c, open_, linked)
    few = np.concatenate([evidence._visible_pairs(stats, rows, b[i : i + 10], c[i : i + 10], open_, linked)
                          for i in range(0, 5000, 10)])
    m = rows[b]
    want = open_[c] & (stats.kind[c] >= 0) & (linked[c] | (stats.rank[c] < stats.rank[m])) & (c != m)
    assert np.array_equal(many, want) and np.array_equal(few, want)
    assert 0 < want.sum() < len(want) and not many[:40].any()


def test_shared_terms_of_a_pair_read_from_either_side_alike():
    """``_shared`` reads the shorter posting list of each pair: the same sums, bit for bit, with the
    pair's entries either way round, and a set intersection's counts and weights."""
    from kbtools.demo import synthetic_bank
    from kbtools.linker import evidence
    from kbtools.linker.terms import TermStats

    stats = TermStats.build(synthetic_bank(entries=400, seed=6).entries, known_entities=["line 3", "kiln"])
    rng = np.random.default_rng(2)
    ms, cs = rng.integers(0, 400, 3000), rng.integers(0, 400, 3000)
    lengths = np.diff(stats.postings.indptr)
    assert (lengths[ms] < lengths[cs]).any() and (lengths[ms] > lengths[cs]).any()
    one, two = evidence._shared(stats, ms, cs), evidence._shared(stats, cs, ms)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))
    few = evidence._shared(stats, ms[:100], cs[:100])  # a few pairs read every candidate's list
    assert all(np.array_equal(a[:100], b) for a, b in zip(one, few))
    w = stats.w
    for i in range(0, 3000, 7):
        terms = sorted(set(stats.postings[ms[i]].indices) & set(stats.postings[cs[i]].indices))
        assert one[1][i] == len(terms)
        assert one[0][i] == pytest.approx(float(sum(w[t] for t in terms)), rel=1e-12, abs=1e-12)
        posting = [{t: stats.postings.indptr[r] + j for j, t in enumerate(stats.postings[r].indices)} for r in (ms[i], cs[i])]
        strong = sum(bool(stats.strong_base[side[t]]) for t in terms if not stats.hub[t] for side in posting)
        assert one[2][i] == strong
    assert (one[1] > 0).sum() > 100 and (one[2] > 0).sum() > 100


def test_the_default_write_rows_time_the_verb_both_ways_on_a_connected_bank(tmp_path):
    from kbtools.demo import synthetic_bank
    from kbtools.evaluate.bench import WRITES, default_write_rows
    from kbtools.model.schema import SCHEMAS
    from kbtools.ops.embedding import embed_bank
    from kbtools.ops.interchange import import_frames
    from kbtools.ops.maintenance import connect_bank
    from kbtools.store.bank import create_bank

    demo = synthetic_bank(entries=300, seed=11)
    ents = demo.entries.with_columns(pl.lit(None).cast(SCHEMAS["entries"]["linked_at"]).alias("linked_at"))
    bank = create_bank(tmp_path / "b", embedder=None)
    import_frames(bank, entries=ents, edges=demo.edges, guard=False)
    embed_bank(bank, embedder="hashing-char", actor="test")
    connect_bank(bank)
    before = bank.entries.height
    auto_before = bank.edges.filter(pl.col("source") == "auto").height
    verb, cost = default_write_rows("linker 0k", bank, 300)
    assert bank.entries.height == before + 2 * (2 + WRITES)  # every write landed, linked and unlinked
    assert bank.edges.filter(pl.col("source") == "auto").height > auto_before  # the linked ones linked
    assert verb[1].startswith("kb.report_learning") and verb[4]["baseline_value"] > 0
    assert cost[2] == pytest.approx(verb[2] - verb[4]["baseline_value"])
    assert cost[4]["budget"] is None  # the 3 ms goal is read at 100k
