"""Every way to term statistics gives what a fresh build gives.

``extend`` from a half or from all but the last rows and ``from_parts`` of what a store keeps
must give the same vocabulary, postings, strong flags, anchors (entities, terms, labels), bags
and cues as ``TermStats.build`` on the synthetic bank, both demo banks, a slice of the real PEP
bank and frames without words; the anchors of many texts are ``anchor()`` of each.
"""

from __future__ import annotations

import datetime as dt
import gc
import gzip
import weakref

import numpy as np
import polars as pl
import pytest

from kbtools.demo.banks import synthetic_bank
from kbtools.errors import ValidationError
from kbtools.linker.anchors import Anchor, anchor, anchors_of
from kbtools.linker.evidence import rare_sum
from kbtools.linker.terms import GrowingBuffer, TermStats, entry_text, gc_paused
from kbtools.linker.wording import why_texts

ODD_TEXTS = [
    "Found it: the encoder cable on line 3 was loose.", "Goal: Ship the Kioko memory layer by December 15.",
    "Decision: Vector database - chose pgvector because we already run Postgres.",
    "As :pep:`484` says (see PEP 484), call os.path.join in setup.py, not __init__.",
    "Rockwell Automation ships FactoryTalk Optix to press 12 and cell 4B; INC-4521, S7-1500, server 2, 10.20.0.0/16",
    "LINE a pump and Press No. 7 near ROOM #12B; the Line B crew", "Ünïcode Straße und İstanbul LINE 4 ſite 2 Kelvin",
    "1. Use Docker Compose\n2. Build Kioko v2\n- Check THE Plant's PLC. (Start Here) Goal: Migrate Redis Cluster",
    "we moved to pgvector and New York city on Acme Corp", "x" * 90 + " Alpha Beta; gamma Delta. Ship Omega",
    "", "   ", "42", "a_b c.d e..f __x__ ._y", "Mr. Smith & Sons of London met de Gaulle",
]


def stats_cues(stats: TermStats, name: str) -> list[bool]:
    return np.asarray(getattr(stats, name), bool).tolist()


def _with_odd_texts(entries: pl.DataFrame) -> pl.DataFrame:
    """The frame's first rows with the odd texts as contents (identifiers, Unicode, boundaries)."""
    head = entries.head(len(ODD_TEXTS)).with_columns(
        pl.Series("content", ODD_TEXTS), pl.lit(None, pl.String).alias("title"),
        (pl.col("id") + "-odd").alias("id"),
    )
    return pl.concat([head, entries], how="vertical_relaxed")


def _from_parts(entries, known):
    built = TermStats.build(entries, known_entities=known)
    return TermStats.from_parts(entries, built.parts(), built.anchors, known_entities=known)


#: Every other way to make a bank's term statistics; each must equal a fresh build.
PATHS = {
    "extend a half": lambda entries, known: TermStats.build(
        entries.head(entries.height // 2), known_entities=known).extend(entries),
    "extend the last rows one by one": lambda entries, known: TermStats.build(
        entries.head(max(entries.height - 3, 0)), known_entities=known).extend(entries),
    "from_parts": _from_parts,
}

_KNOWN = ("Kioko", "pgvector", "New York", "Acme Corp", "line 3", "docker compose")
_T = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def _demo(demo_dir, name):
    return pl.read_parquet(sorted((demo_dir / name / "tables" / "entries").glob("*.parquet")))


def _pep_slice(tmp_path):
    from kbtools.demo.peps import PEPS_FILE, build_peps_bank

    src = tmp_path / "slice.jsonl.gz"
    with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh, gzip.open(src, "wt", encoding="utf-8") as out:
        for k, line in enumerate(fh):
            if k % 8 == 0:  # about 90 PEPs: reST roles, references, code names, authors
                out.write(line)
    entries = build_peps_bank(tmp_path / "bank", source=src)[0].entries.head(3000)
    assert entries.height > 500 and entries["metadata"].str.contains("Author").any()
    return entries


#: The banks the paths read: (entries, known entities), made from the fixtures' folders.
BANKS = {
    "synthetic": lambda demo_dir, tmp: (_with_odd_texts(synthetic_bank(entries=3000, seed=11).entries), ()),
    "engineering": lambda demo_dir, tmp: (_with_odd_texts(_demo(demo_dir, "engineering")), _KNOWN),
    "business": lambda demo_dir, tmp: (_with_odd_texts(_demo(demo_dir, "business")), _KNOWN),
    "peps": lambda demo_dir, tmp: (_pep_slice(tmp), ()),
    "no words": lambda demo_dir, tmp: (pl.DataFrame({
        "id": ["a", "b", "c", "d"], "kind": ["fact", "note", "fact", "todo"], "title": ["Line 3", None, None, None],
        "content": ["42", "10.20.0.0/16", None, "E-217"], "created_at": [_T] * 4}), ()),
    "many texts without a word": lambda demo_dir, tmp: (pl.DataFrame({
        "id": [f"n{k}" for k in range(40)], "kind": ["fact"] * 40, "content": ["42"] * 40, "created_at": [_T] * 40}), ()),
}


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("bank", sorted(BANKS))
def test_every_path_to_term_statistics_equals_a_build(bank, path, demo_dir, tmp_path):
    entries, known = BANKS[bank](demo_dir, tmp_path)
    _assert_equal_stats(PATHS[path](entries, known), TermStats.build(entries, known_entities=known))


def test_anchors_of_equals_anchor_text_by_text():
    sets = [(), ("kioko", "pgvector"), ("new york", "acme corp", "york"), ("line 3", "plant's plc"),
            ("c#", ".net", "c++", "node.js", "york", "kioko")]
    texts = ODD_TEXTS + ["New York and new  york", "The Plant's PLC and plant's plc", "we use c# on .net, C++ and node.js"]
    for many in (texts, texts * 3):  # a few texts one by one, many through polars
        for knowns in ([sets[k % len(sets)] for k in range(len(many))], [sets[-1]] * len(many)):
            got = anchors_of(many, knowns)
            want = [anchor(t, known_entities=k) if t else Anchor((), ()) for t, k in zip(many, knowns)]
            assert got == want and [a.labels for a in got] == [a.labels for a in want]


_FIELDS = ("ids", "n", "vocab", "term_index", "df", "idf", "w", "is_entity", "hub", "capped", "total", "kind", "rank",
           "time_us", "session", "fix", "problem", "progress", "strong_base", "strong_flag", "session_rows",
           "session_start", "row_of", "anchors")


def _assert_equal_stats(got: TermStats, want: TermStats) -> None:
    for name in _FIELDS:
        a, b = getattr(got, name), getattr(want, name)
        if isinstance(a, np.ndarray):
            assert a.dtype.kind == b.dtype.kind and np.array_equal(a, b), name
        else:
            assert a == b, name
    for name in ("postings", "postings_t"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.shape == b.shape and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices), name
        assert np.array_equal(a.data, b.data), name
    assert (got.bags["author"] != want.bags["author"]).nnz == 0


@pytest.mark.parametrize("order", ["created", "shuffled", "a session sorting first"])
def test_extend_grows_every_field_as_a_fresh_build_reads_it(order):
    entries = synthetic_bank(entries=1200, seed=8).entries
    if order == "created":
        entries = entries.sort("created_at", "id")
    if order == "shuffled":  # new rows older than old ones: ranks are read again
        entries = entries.sample(fraction=1.0, shuffle=True, seed=1)
    if order == "a session sorting first":
        entries = entries.sort("created_at", "id")
        late = entries.slice(1100).with_columns(pl.lit("!a-session-named-longer-than-the-others").alias("session_id"),
                                                pl.col("created_at") + dt.timedelta(days=1))
        entries = pl.concat([entries.head(1100), late])
    stats = TermStats.build(entries.head(1000))
    paths = []
    for size in (1001, 1002, 1100, 1200):  # one by one (an agent's adds), then in a batch
        stats = stats.extend(entries.head(size))
        _assert_equal_stats(stats, TermStats.build(entries.head(size)))
        paths.append("sessions" in stats._cache)  # ranks and session codes kept, not read again
    assert all(paths) if order != "shuffled" else not all(paths)


def test_what_a_link_reads_of_extended_statistics_is_what_a_fresh_build_gives():
    """A linked add extends the statistics at every write; the values the affinity and the link's
    words keep on them (the rare terms' postings, the term names) grow with them, and give what
    statistics built afresh give, bit for bit."""
    entries = synthetic_bank(entries=1500, seed=5).entries.sort("created_at", "id")
    rng = np.random.default_rng(2)
    stats = TermStats.build(entries.head(1000))
    rare_sum(stats, rng.integers(0, 1000, 500), rng.integers(0, 1000, 500))
    why_texts(stats, None, [1], [0], dict(shared_n=[1.0], sem=[0.0], cos=[0.0], bridge=[0.0], cue=[0.0], time=[0.0]))
    for size in (1001, 1002, 1200, 1500):
        stats = stats.extend(entries.head(size))
        fresh = TermStats.build(entries.head(size))
        m, c = rng.integers(0, size, 5000), rng.integers(0, size, 5000)
        assert np.array_equal(rare_sum(stats, m, c), rare_sum(fresh, m, c))
        assert (rare_sum(stats, m, c) > 0).sum() > 50  # pairs that share rare terms (the check can fail)
        values = dict(shared_n=np.ones(len(m)), sem=np.zeros(len(m)), cos=np.zeros(len(m)), bridge=np.zeros(len(m)),
                      cue=np.zeros(len(m)), time=np.zeros(len(m)))
        assert list(why_texts(stats, None, m, c, values)) == list(why_texts(fresh, None, m, c, values))
        few = np.array([size - 1, 0, size // 2, size - 1])  # a write's entry and its candidates
        assert np.array_equal(stats.totals(few), fresh.total[few])  # read before the whole total exists


def test_statistics_extended_twice_from_the_same_ones_keep_both():
    """The postings grow in place at the end of shared buffers: a second extension from the same
    statistics gets buffers of its own, and every statistics object keeps reading its own rows."""
    entries = synthetic_bank(entries=600, seed=4).entries.sort("created_at", "id")
    base = TermStats.build(entries.head(500))
    first = base.extend(entries.head(520))
    other_rows = entries.slice(500, 30).with_columns(pl.col("content") + " Kiln K-9 smokes again.")
    second = base.extend(pl.concat([entries.head(500), other_rows]))
    third = first.extend(entries.head(540))  # the owner of the end grows in place again
    _assert_equal_stats(base, TermStats.build(entries.head(500)))
    _assert_equal_stats(first, TermStats.build(entries.head(520)))
    _assert_equal_stats(second, TermStats.build(pl.concat([entries.head(500), other_rows])))
    _assert_equal_stats(third, TermStats.build(entries.head(540)))
    assert first._buffers["indices"] is third._buffers["indices"]  # grown in place
    assert second._buffers["indices"] is not first._buffers["indices"]
    with pytest.raises(ValueError):
        base.postings.indices[0] = 1  # views are read-only


def test_appended_rows_are_transposed_apart_until_they_are_many(monkeypatch):
    from kbtools.linker import LINKER_DEFAULTS, evidence, terms
    from kbtools.linker.evidence import Relations

    monkeypatch.setattr(terms, "_TAIL_ROWS", 8)
    entries = synthetic_bank(entries=700, seed=6).entries.sort("created_at", "id")
    stats = TermStats.build(entries.head(600))
    rel = Relations(any=None, strong=None, cols=np.zeros(0, np.int64), label={})
    merged = 0
    for size in range(601, 700, 7):
        stats = stats.extend(entries.head(size))
        fresh = TermStats.build(entries.head(size))
        merged += stats._transposed[2] is None
        parts = stats.transposed_parts()
        assert len(parts) == (1 if stats._transposed[2] is None else 2)
        assert (sum(parts[1:], parts[0]) != fresh.postings_t).nnz == 0
        rows = np.flatnonzero(stats.kind >= 0)[-40:]
        for few in (rows[:3], rows):  # the numpy sums and the sparse product, over both parts
            got = evidence._votes(stats, few, rel, LINKER_DEFAULTS)
            product = (evidence._query_matrix(fresh, few, rel, LINKER_DEFAULTS) @ fresh.postings_t).tocoo()
            want = sorted(zip(product.row.tolist(), product.col.tolist(), product.data.tolist()))
            assert sorted(zip(*(x.tolist() for x in got))) == want
        assert np.array_equal(stats.totals(rows[::3]), fresh.total[rows[::3]])  # the same bits
    assert merged  # past a 32nd of the bank the appended rows join the base


def test_statistics_survive_a_pickle_and_grow_after_it():
    import pickle

    entries = synthetic_bank(entries=300, seed=3).entries.sort("created_at", "id")
    stats = pickle.loads(pickle.dumps(TermStats.build(entries.head(280))))
    _assert_equal_stats(stats.extend(entries), TermStats.build(entries))


def test_a_growing_buffer_widens_past_int32_and_keeps_older_views():
    small = GrowingBuffer(np.array([1, 2, 3], np.int32))
    view = small.view(3)
    grown = small.append(3, np.array([4]))  # no spare room: a bigger buffer, with room
    assert grown is not small and grown.view(4).tolist() == [1, 2, 3, 4]
    assert grown.append(4, np.array([5])) is grown  # its owner's end: written in place
    wide = grown.append(5, np.array([2**31]))
    assert wide.data.dtype == np.int64 and wide.view(6).tolist() == [1, 2, 3, 4, 5, 2**31]
    other = grown.append(3, np.array([9]))  # from an older end: a buffer of its own
    assert other is not grown and other.view(4).tolist() == [1, 2, 3, 9] and grown.view(5).tolist() == [1, 2, 3, 4, 5]
    assert view.tolist() == [1, 2, 3]


@pytest.mark.parametrize("source", ["synthetic", "peps"])
def test_statistics_from_their_parts_equal_a_fresh_build(source, tmp_path):
    """What a store keeps of the statistics (``parts`` and the anchors) gives them back, every field,
    and grows as a build does."""
    if source == "synthetic":
        entries = _with_odd_texts(synthetic_bank(entries=1500, seed=3).entries)
        known = ("Kioko", "line 3")
    else:
        from kbtools.demo.peps import PEPS_FILE, build_peps_bank

        src = tmp_path / "slice.jsonl.gz"
        with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh, gzip.open(src, "wt", encoding="utf-8") as out:
            for k, line in enumerate(fh):
                if k % 16 == 0:
                    out.write(line)
        entries = build_peps_bank(tmp_path / "bank", source=src)[0].entries
        known = ()
    built = TermStats.build(entries, known_entities=known)
    back = TermStats.from_parts(entries, built.parts(), built.anchors, known_entities=known)
    _assert_equal_stats(back, built)
    assert back.bag_index == built.bag_index and back.anchors == built.anchors
    head = TermStats.build(entries.head(entries.height - 40), known_entities=known)
    grown = TermStats.from_parts(entries.head(entries.height - 40), head.parts(), head.anchors,
                                 known_entities=known).extend(entries)
    _assert_equal_stats(grown, built)
    with pytest.raises(ValidationError):
        TermStats.from_parts(entries.head(10), built.parts(), built.anchors[:10], known_entities=known)


def test_cues_read_by_polars_are_pythons_matches():
    """The statistics' fix, problem and progress flags (the rules' patterns run by polars, Rust
    regex) are those of the Python patterns, a word boundary next to a non-ASCII letter included
    ("Théfixed" is no fix), and a dash read as no word ("time—out" is no timeout). (Rust's and
    Python's word characters differ on a few, "²" among them: a word character for Python.)"""
    from kbtools.linker.rules import FIX_RE, PROBLEM_RE, PROGRESS_RE

    texts = ODD_TEXTS + [
        "Théfixed", "fixedé", "the pump was Fixed.", "ÉRROR and errors", "éerror", "an error—fixed", "Straße: resolved",
        "ſolved it", "50% done", "KEEPS JAMMING", "it doesn't work", "won’t start", "time out, timed out", "",
        "time—out", "50 ％ done", "PEP 8 — Style Guide: issues", "a\u00a0bug", "ROOT CAUSE: Loose", "MERGED",
        "Was Loose", "It Doesn'T Work", "Timed Out", "a KEEPS FAILING b",
    ] + [entry_text(r) for r in synthetic_bank(entries=400, seed=3).entries.to_dicts()]
    entries = pl.DataFrame({"id": [f"t{k}" for k in range(len(texts))], "kind": ["knowledge"] * len(texts),
                            "content": texts, "created_at": [_T] * len(texts)})
    stats = TermStats.build(entries)
    for name, pattern in (("fix", FIX_RE), ("problem", PROBLEM_RE), ("progress", PROGRESS_RE)):
        assert stats_cues(stats, name) == [bool(pattern.search(t)) for t in texts], name
    fix = stats_cues(stats, "fix")
    assert not fix[len(ODD_TEXTS)] and fix[len(ODD_TEXTS) + 2]


def test_the_cue_patterns_are_written_in_lower_case():
    """The cues read an ASCII text's lower case with the case-insensitive patterns as written: an
    upper-case letter in one (a literal, or an escape such as ``\\W``) would read otherwise."""
    from kbtools.linker.rules import FIX_RE, PROBLEM_RE, PROGRESS_RE

    for pattern in (FIX_RE, PROBLEM_RE, PROGRESS_RE):
        assert pattern.pattern == pattern.pattern.lower(), pattern.pattern


class _Node:
    other = None


def test_gc_paused_puts_what_it_made_in_the_oldest_generation_without_a_collection():
    """The objects made while the collector is paused join the oldest generation at once (a young
    collection would walk every one of them first); cyclic garbage made meanwhile is still
    collected, and the collector runs again afterwards."""
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        made = [_Node() for _ in range(2_000)]
    assert gc.isenabled()
    oldest = {id(x) for x in gc.get_objects(generation=2)}
    assert all(id(x) in oldest for x in made)
    with gc_paused():
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    gc.collect()
    assert gone() is None


def test_gc_paused_leaves_a_callers_frozen_objects_frozen():
    """A caller that froze objects of its own (``gc.freeze``) keeps them frozen: the pause then
    ends as a plain ``gc.enable``. (Frozen objects are in no generation; an object frozen
    elsewhere may die meanwhile, so the freeze count itself is not compared.)"""
    own = [_Node() for _ in range(100)]
    gc.freeze()
    try:
        with gc_paused():
            made = [_Node() for _ in range(100)]
        tracked = {id(x) for x in gc.get_objects()}
        assert not any(id(x) in tracked for x in own)  # still frozen: an unfreeze would put them back
        assert all(id(x) in tracked for x in made)  # the pause's own objects were not frozen for good
        assert gc.get_freeze_count() >= len(own) and gc.isenabled()
    finally:
        gc.unfreeze()
