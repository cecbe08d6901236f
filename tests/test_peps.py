"""The PEP bank on a slice of the real corpus (30 PEPs with two Superseded-By relations): sections,
header edges, prose citations through backfill, and the supersession fold."""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest

import kbtools as kb
from kbtools.demo.peps import PEPS_FILE, build_peps_bank
from kbtools.ops.jobs import backfill

SLICE = (354, 435, 563, 649, 749, 8, 257, 20, 1, 484, 526, 3107, 420, 380, 342, 255, 289, 202, 279, 318, 343,
         3119, 3115, 3129, 557, 634, 622, 636, 572, 498)


@pytest.fixture(scope="module")
def peps(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peps")
    src = tmp / "slice.jsonl.gz"
    with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh, gzip.open(src, "wt", encoding="utf-8") as out:
        for line in fh:
            if json.loads(line)["pep"] in SLICE:
                out.write(line)
    bank, report = build_peps_bank(tmp / "bank", source=src)
    backfill(bank)
    kb.embed_bank(bank.reload(), embedder="hashing-char")
    return bank.reload(), report


def _head(bank, pep):
    meta = bank.entries.select("id", "title", pl.col("metadata").str.json_path_match("$.key").alias("key"),
                               pl.col("metadata").str.json_path_match("$.head").alias("head"))
    return meta.filter((pl.col("key") == str(pep)) & (pl.col("head") == "true")).row(0, named=True)


def test_peps_slice_sections_and_header_edges(peps):
    bank, report = peps
    assert report["documents"] == 30
    assert report["unresolved"] == [{"doc": "peps/pep-0255.rst", "field": "Requires", "value": "234"}]  # not in the slice
    head = _head(bank, 435)
    assert head["title"] == "PEP 435: Adding an Enum type to the Python standard library — Abstract"
    assert not bank.entries["title"].str.ends_with("— Copyright").any()
    sup = bank.edges.filter(pl.col("type") == "supersedes").select("src", "dst").rows()
    assert (_head(bank, 435)["id"], _head(bank, 354)["id"]) in sup
    assert {(_head(bank, 649)["id"], _head(bank, 563)["id"]), (_head(bank, 749)["id"], _head(bank, 563)["id"])} <= set(sup)
    cites = bank.edges.filter((pl.col("type") == "cites") & (pl.col("source") == "citation_backfill"))
    assert cites.height > 20
    assert cites["note"].str.contains(r"PEP\s*\d+|:pep:`").all()
    assert not cites["note"].str.contains("\n").any()


def test_peps_supersession_folds_into_the_successor(peps):
    bank, _ = peps
    new, old = _head(bank, 649)["id"], _head(bank, 563)["id"]  # 649 supersedes 563 (Superseded-By: 649, 749)
    ans = kb.query(bank, "deferred evaluation of annotations using descriptors", k=8, record_usage=False)
    by_id = {r.id: r for r in ans.results}
    assert new in by_id and old not in by_id
    pointers = {p.id: p for p in by_id[new].pointers()}
    assert old in pointers and pointers[old].relation == "supersedes"


def test_an_answer_fills_its_slots_when_a_pool_folds_into_a_few_documents(peps):
    from kbtools.retrieval.folding import fold
    from kbtools.retrieval.pipeline import edge_lookup
    from kbtools.retrieval.search import ranked_pool

    bank, _ = peps
    lookup = edge_lookup(bank)
    short = []
    for title in bank.entries["title"].to_list()[::7]:  # a pool of 20 sections folds by document
        if len(fold(ranked_pool(bank, title, pool=20), lookup, k=8).results) < 8:
            short.append(title)
    assert short, "no pool of this slice folds into fewer than 8 results: the test shows nothing"
    for title in short:
        ans = kb.query(bank, title, k=8, record_usage=False)
        assert len(ans.results) == 8, title
        assert len(set(ans.ids())) == 8
        first = fold(ranked_pool(bank, title, pool=20), lookup, k=8)
        assert ans.results[0].id == first.results[0].id  # the best result stays the best
