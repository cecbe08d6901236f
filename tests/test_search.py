"""kbtools.retrieval.search: the ranked pool over a small embedded bank written here."""

from __future__ import annotations

import pytest

import kbtools as kb
from kbtools.retrieval.search import bank_index, ranked_pool

TEXTS = ["Restart the payments worker after changing its config file.",
         "The staging signing key rotates with vault rotate staging-sign.",
         "Nginx burst limits drop requests under a traffic spike; error E-429.",
         "Kafka consumer lag grows when max.poll.records is too high."]


@pytest.fixture()
def bank(tmp_path):
    bank = kb.create_bank(tmp_path / "b", settings={"auto_link": False}, embedder=None)
    for t in TEXTS:
        kb.report_learning(bank, content=t, actor="t")
    kb.embed_bank(bank, embedder="hashing")
    return bank


def test_the_pool_is_ranked_best_first_with_display_columns(bank):
    pool = ranked_pool(bank, "vault signing key rotation", pool=3)
    assert pool.columns == ["id", "score", "title", "summary", "kind", "steps"]
    assert pool.height == 3 and pool["score"].is_sorted(descending=True)
    assert "signing key" in pool["summary"][0] or "signing key" in pool["title"][0]


def test_the_lexical_arm_finds_a_rare_token(bank):
    pool = ranked_pool(bank, "E-429", pool=2, lexical=True)
    nginx = bank.entries.filter(bank.entries["content"].str.contains("E-429"))["id"][0]
    assert pool["id"][0] == nginx


def test_bad_queries_and_weights_are_named(bank):
    with pytest.raises(kb.ValidationError, match="non-empty string"):
        ranked_pool(bank, "   ")
    with pytest.raises(kb.ValidationError, match="weights"):
        ranked_pool(bank, "vault", weights={"colour": 1.0})


def test_the_index_is_cached_per_version_and_grown_on_append(bank):
    first = bank_index(bank)
    assert bank_index(bank) is first
    kb.report_learning(bank, content="A fifth entry about DNS caches.", actor="t")
    grown = bank_index(bank)
    assert grown is first and grown.size == 5


def test_the_pool_display_reads_rows_in_order_across_appends_and_keeps_null_and_empty_steps():
    import polars as pl

    from kbtools.retrieval.search import PoolDisplay

    steps = [[f"s{i}"] if i % 3 else ([] if i % 2 else None) for i in range(10)]
    frame = pl.DataFrame({"id": [f"e{i}" for i in range(10)], "title": [f"t{i}" for i in range(10)],
                          "summary": [None] * 10, "kind": ["fact"] * 10, "steps": steps,
                          "status": ["active"] * 9 + ["archived"]}, schema_overrides={"summary": pl.String})
    display = PoolDisplay.of(frame.head(6)).grown(frame.slice(6, 3), None).grown(frame.slice(9, 1), None)
    picked = display.take([display.rows[i] for i in ["e8", "e1", "e9", "e0", "e6", "e3"]])
    assert [row[0] for row in picked] == ["e8", "e1", "e9", "e0", "e6", "e3"]
    assert [row[4] for row in picked] == [steps[8], steps[1], steps[9], steps[0], steps[6], steps[3]]
    assert picked[2][5] == "archived" and picked[0][1] == "t8"
    picked[1][4].append("changed by a caller")  # each read hands out its own steps list
    assert display.take([1])[0][4] == ["s1"]
