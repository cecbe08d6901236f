"""The words of links: many links written at once (``evidence_texts``) read exactly as each link
written alone (``evidence_json(why_text(...))``)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest

from kbtools.demo import synthetic_bank
from kbtools.linker import wording
from kbtools.linker.evidence import relations
from kbtools.linker.terms import TermStats

_VALUES = ("shared_n", "sem", "cos", "bridge", "cue", "time", "share", "score")


def _bank() -> tuple[TermStats, object]:
    """A synthetic bank, plus entries of many terms (their words are found past the first places),
    entities whose words are also words of the entry (hidden), labels outside ASCII and quotes."""
    demo = synthetic_bank(entries=400, seed=3)
    t = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    rng = np.random.default_rng(1)
    vocab = [f"w{chr(97 + i % 26)}{chr(97 + i // 26)}x" for i in range(300)]
    extra = []
    for i in range(60):
        words = " ".join(rng.choice(vocab, size=120).tolist())
        extra.append(f"Line 3 at the Kiln in Zürich said \"stop\" {words} line kiln zürich")
    extra += ["Kiln Line 3 again near the line", "the kiln at Zürich: “quoted” Ünïcode words"] * 5
    extra += ["Line 3 stopped twice near the line", "The Kiln cooled slowly overnight"] * 5
    more = pl.DataFrame({"id": [f"x{i}" for i in range(len(extra))], "kind": ["event"] * len(extra),
                         "content": extra, "session_id": ["s-extra"] * len(extra),
                         "created_at": [t + dt.timedelta(minutes=i) for i in range(len(extra))]})
    entries = pl.concat([demo.entries.select(more.columns), more], how="vertical_relaxed")
    triples = pl.DataFrame({"subject": ["line 3", "kiln"], "relation": ["feeds", "sits in"], "object": ["kiln", "zürich"]})
    stats = TermStats.build(entries, known_entities=["line 3", "kiln", "zürich"])
    return stats, relations(stats, triples)


@pytest.fixture(scope="module")
def bank():
    return _bank()


def _pairs_sharing(stats: TermStats, rng, count: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(stats.ids)
    pairs = rng.integers(0, n, (count * 4, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    # entries of many terms as often as the others
    long_rows = np.flatnonzero(np.diff(stats.postings.indptr) > 40)
    pairs[: len(pairs) // 3, 0] = rng.choice(long_rows, len(pairs) // 3)
    pairs[: len(pairs) // 6, 1] = rng.choice(long_rows, len(pairs) // 6)
    # and pairs joined through the entity graph (line 3 feeds kiln)
    line, kiln = stats.row_of["x70"], stats.row_of["x71"]
    return np.append(pairs[:count, 0], [line, kiln] * 20), np.append(pairs[:count, 1], [kiln, line] * 20)


def _values(stats: TermStats, m, c, rng) -> dict:
    shared = np.array([len(set(stats.anchors[a].terms) & set(stats.anchors[b].terms)) for a, b in zip(m, c)], float)
    n = len(m)
    return dict(
        shared_n=shared,
        sem=np.where(rng.random(n) < 0.7, rng.random(n), 0.0),
        # cosines at a half of the second decimal, and a few past 1 (float error)
        cos=np.where(rng.random(n) < 0.2, (rng.integers(0, 100, n) + 0.5) / 100, rng.uniform(-0.2, 1.0000002, n)),
        bridge=rng.choice([0.0, 0.4, 1.0], n, p=[0.7, 0.15, 0.15]),
        cue=rng.choice([0.0, 1.0], n),
        time=rng.choice([0.0, 0.5, 1.0], n),
        # thousandths at a half, plain values, and a few outside [0, 1] or not finite
        share=np.where(rng.random(n) < 0.3, (rng.integers(0, 1000, n) + 0.5) / 1000, rng.random(n)),
        score=np.where(rng.random(n) < 0.02, rng.choice([1.5, -0.25, np.nan, np.inf], n), rng.random(n)),
    )


def test_many_links_read_as_each_link_written_alone(bank):
    stats, rel = bank
    rng = np.random.default_rng(7)
    m, c = _pairs_sharing(stats, rng, 3000)
    values = _values(stats, m, c, rng)
    origins = [stats.ids[x] if x % 7 == 0 else None for x in rng.integers(0, len(stats.ids), len(m)).tolist()]
    got = wording.evidence_texts(stats, rel, m, c, values, origins)
    want = []
    for i, (a, b) in enumerate(zip(m.tolist(), c.tolist())):
        e = {k: values[k][i].item() for k in _VALUES}
        want.append(wording.evidence_json(wording.why_text(stats, rel, a, b, e), e, origins[i]))
    assert got == want
    # the cases were there: words found past the first places, hidden words, odd values, origins
    parsed = [json.loads(x) for x in got]
    assert sum(x["why"].count(",") == 2 for x in parsed) > 300
    assert any("via line 3 feeds kiln" in x["why"] for x in parsed)
    assert any("from" in x for x in parsed) and any(x["score"] != x["score"] or x["score"] > 1 for x in parsed)
    later = [i for i, (a, b) in enumerate(zip(m, c)) if values["shared_n"][i] > 0 and _first_shared_place(stats, a, b) > 12]
    assert len(later) > 20


def _shown_order(stats, m) -> list[tuple]:
    """Entry m's (term, is entity, label in lower case, word shown) in the order its links show
    them: heaviest first, then by label in lower case, then as m holds them."""
    a, w, index = stats.anchors[m], stats.w, stats.term_index
    facts = [(t, t.startswith("e:"), label.lower(), label.lower() if t.startswith("t:") else t[2:])
             for t, label in zip(a.terms, a.labels)]
    return sorted(facts, key=lambda f: (-w[index[f[0]]], f[2]))


def _first_shared_place(stats, a, b) -> int:
    other = set(stats.anchors[b].terms)
    return next(i for i, f in enumerate(_shown_order(stats, a)) if f[0] in other)


def test_shared_words_are_those_of_the_entrys_terms_in_weight_order(bank):
    """The words are those of reading every term of the entry heaviest first (ties: by label, then
    as the entry holds them) and keeping the first three shared, a word of a shared entity not."""
    stats, rel = bank
    rng = np.random.default_rng(0)
    m, c = _pairs_sharing(stats, rng, 3000)
    e = dict(shared_n=1.0, sem=0.0, cos=0.0, bridge=0.0, cue=0.0, time=0.0)
    compared = 0
    for a, b in zip(m.tolist(), c.tolist()):
        other = set(stats.anchors[b].terms)
        shared = [f for f in _shown_order(stats, a) if f[0] in other]
        if not shared:
            continue
        entity_words = {x for f in shared if f[1] for x in f[0][2:].split()}
        want = "shared: " + ", ".join([f[3] for f in shared if f[1] or f[2] not in entity_words][:3])
        assert wording.why_text(stats, rel, a, b, e) == want
        compared += want.count(",") > 0
    assert compared > 500


def test_a_word_of_a_shared_entity_is_hidden_in_a_batch_as_alone(bank):
    """"line" is a word of the shared entity "line 3": the entity is shown, the word is not."""
    stats, rel = bank
    row = stats.row_of
    m = np.array([row["x60"], row["x60"], row["x70"]])
    c = np.array([row["x62"], row["x70"], row["x72"]])
    values = {k: np.zeros(len(m)) for k in _VALUES}
    values["shared_n"][:] = 1.0
    got = wording.evidence_texts(stats, rel, m, c, values)
    whys = [json.loads(x)["why"] for x in got]
    items = [w.removeprefix("shared: ").split(", ") for w in whys]
    assert all("line 3" in x and "line" not in x for x in items), whys
    e = {k: 0.0 for k in _VALUES} | {"shared_n": 1.0}
    assert got == [wording.evidence_json(wording.why_text(stats, rel, a, b, e), e, None) for a, b in zip(m.tolist(), c.tolist())]


@pytest.mark.parametrize("places,kind", [(3, repr), (2, wording._fixed2)])
def test_rounded_texts_are_pythons_own(places, kind):
    """The table's texts are ``round``'s (or ``:.2f``'s) for every value in [0, 1], those within a
    rounding error of a half included; values outside read None (the scalar writer's)."""
    rng = np.random.default_rng(3)
    scale = 10**places
    halves = (np.arange(scale) + 0.5) / scale
    x = np.concatenate([rng.random(20_000), halves, np.nextafter(halves, 0), np.nextafter(halves, 1),
                        np.arange(scale + 1) / scale, [0.0, 1.0, -0.0]])
    got = wording._by_table(x, places, kind)
    assert got.tolist() == [kind(round(v, places)) for v in x.tolist()]
    odd = wording._by_table(np.array([-0.001, 1.0000001, np.nan, np.inf]), places, kind)
    assert odd.tolist() == [None] * 4


def test_no_links_no_texts(bank):
    stats, rel = bank
    assert wording.evidence_texts(stats, rel, [], [], {k: np.zeros(0) for k in _VALUES}) == []
