"""The leak-free link-recovery protocol: the mask, the per-entry baselines, the re-rank, the report."""

from __future__ import annotations

import gzip
import json
import math
import re
import shutil

import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.demo.peps import PEPS_FILE, build_peps_bank
from kbtools.evaluate.baselines import (neighbour_lists, per_entry_knn_pairs, per_entry_pairs, rank_terms,
                                        rerank_pairs, rerank_scores)
from kbtools.evaluate.intervals import bootstrap_ratios
from kbtools.evaluate.links import evaluate_links, held_out_frames, link_recovery
from kbtools.evaluate.masking import MASK, MASKED_FIELDS, mask_citations, unmark_held_out
from kbtools.ops.citations import document_keys, plan_backfill

PEP_SLICE = (1, 8, 257, 20, 484, 526, 3107, 563, 649, 749, 483, 544, 585, 604)


@pytest.fixture(scope="module")
def peps(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peps")
    src = tmp / "slice.jsonl.gz"
    with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh, gzip.open(src, "wt", encoding="utf-8") as out:
        for line in fh:
            if json.loads(line)["pep"] in PEP_SLICE:
                out.write(line)
    bank, _ = build_peps_bank(tmp / "bank", source=src)
    kb.backfill(bank)
    kb.embed_bank(bank.reload(), embedder="hashing")
    return bank.reload()


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_dir):
    root = tmp_path_factory.mktemp("eng") / "engineering"
    shutil.copytree(demo_dir / "engineering", root)
    bank = kb.open_bank(root)
    kb.backfill(bank)
    kb.embed_bank(bank.reload(), embedder="hashing")
    return bank.reload()


def _texts(frame: pl.DataFrame, eid: str) -> str:
    row = frame.filter(pl.col("id") == eid).row(0, named=True)
    parts = []
    for f in MASKED_FIELDS:
        v = row.get(f)
        parts += v if isinstance(v, list) else [v] if isinstance(v, str) else []
    return "\n".join(parts)


def _refound(masked: pl.DataFrame, held: pl.DataFrame, patterns) -> set:
    """Held-out pairs the citation rules find again in the masked text (the independent oracle:
    backfill itself, over the masked frames)."""
    empty = pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})
    again = plan_backfill(masked, empty, patterns=patterns).add.filter(pl.col("type") == "cites")
    pairs = {tuple(sorted(p)) for p in again.select("src", "dst").iter_rows()}
    return pairs & {tuple(sorted(p)) for p in held.select("src", "dst").iter_rows()}


def test_mask_removes_every_held_out_pep_mention(peps):
    patterns = peps.settings["citations"]
    ents, _, held = held_out_frames(peps.entries, peps.edges)
    cites = held.filter(pl.col("type") == "cites")
    assert cites.height > 20
    assert _refound(ents, held, patterns)  # unmasked, backfill finds them (the check can fail)
    masked, report = mask_citations(ents, held, patterns=patterns)
    assert report["by_rule"]["pattern"] >= cites.height and report["entries_masked"] == len(report["rows"])
    assert not _refound(masked, held, patterns)
    key_of = {v: k for k, v in document_keys(peps.entries).items()}
    for src, dst in held.select("src", "dst").iter_rows():
        for a, b in ((src, dst), (dst, src)):
            if b not in key_of:
                continue
            text = _texts(masked, a)
            assert not re.search(rf"(?:PEP\s*|:pep:`)0*{key_of[b]}(?!\d)", text), (a, b)
            assert b not in text
    # nothing but the held-out tokens changed: unmasking by the placeholder's count
    assert masked["content"].str.count_matches(re.escape(MASK)).sum() + masked["title"].str.count_matches(
        re.escape(MASK)).sum() + masked["summary"].str.count_matches(re.escape(MASK)).sum() == report["tokens_masked"]
    assert masked.select("id", "kind", "metadata").equals(ents.select("id", "kind", "metadata"))


def test_mask_removes_every_held_out_id_on_the_demo_bank(demo):
    ents, _, held = held_out_frames(demo.entries, demo.edges)
    assert _refound(ents, held, ())
    masked, report = mask_citations(ents, held)
    assert report["by_rule"]["id"] >= 100
    assert not _refound(masked, held, ())
    for src, dst in held.select("src", "dst").iter_rows():
        assert dst not in _texts(masked, src) and src not in _texts(masked, dst)


def test_held_out_dedup_metadata_is_taken_back_on_the_demo_bank(demo):
    """A held-out supersession is also named in the newer entry's metadata ({"replaces": id}):
    backfill made the edge from it and the linker reads it as a structural link. After
    ``unmark_held_out`` backfill's metadata rule finds no held-out pair again; other keys stay."""
    ents, _, held = held_out_frames(demo.entries, demo.edges)
    held_pairs = {tuple(sorted(p)) for p in held.select("src", "dst").iter_rows()}
    empty = pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})

    def refound(frame):
        again = plan_backfill(frame, empty).add.filter(pl.col("source") == "metadata_backfill")
        return {tuple(sorted(p)) for p in again.select("src", "dst").iter_rows()} & held_pairs

    assert len(refound(ents)) >= 50  # before: the metadata names them (the check can fail)
    out, report = unmark_held_out(ents, held)
    assert not refound(out)
    assert report["metadata_ids_dropped"] >= len(refound(ents))
    assert out.drop("metadata").equals(ents.drop("metadata"))


def test_mask_resolves_abbreviated_hashes_through_document_keys():
    ents = pl.DataFrame({"id": ["aaaa1111", "bbbb2222", "cccc3333"], "title": ["x", "y", "z"],
                         "content": ["Follow-up to bbbb2222ff10. Also 9999999999 and cccc3333aa.", "y", "z"],
                         "metadata": ['{"key": "aaaa1111ee", "head": true}', '{"key": "bbbb2222ff1077", "head": true}',
                                      '{"key": "cccc3333aa", "head": true}']})
    held = pl.DataFrame({"src": ["aaaa1111"], "dst": ["bbbb2222"]})
    masked, report = mask_citations(ents, held, patterns=[{"pattern": r"\b([0-9a-f]{7,40})\b", "resolve": "prefix"}])
    # the held-out target is masked; the number and the other commit's hash (not held out) stay
    assert masked["content"][0] == f"Follow-up to {MASK}. Also 9999999999 and cccc3333aa."
    assert report["tokens_masked"] == 1 and ents["content"][0].startswith("Follow-up to bbbb")


def test_per_entry_knn_gives_every_entry_its_first_neighbour_before_any_second():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(40, 8))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ids = [f"e{i:02d}" for i in range(40)]
    nbr, _ = neighbour_lists(v, k=39)
    pair = lambda i, j: tuple(sorted((ids[i], ids[j])))  # noqa: E731
    first_round: dict = {}  # the round in which a pair is someone's r-th neighbour first
    for r in range(39):
        for i in range(40):
            first_round.setdefault(pair(i, nbr[i, r]), r)
    firsts = {p for p, r in first_round.items() if r == 0}
    for budget in range(1, 120):
        got = per_entry_knn_pairs(ids, v, budget)
        assert len(got) == budget
        # the links are a prefix of the rounds: no pair of a later round before all of an earlier one
        taken = max(first_round[p] for p in got)
        assert all(p in got for p, r in first_round.items() if r < taken), budget
        if budget >= len(firsts):
            assert firsts <= got
    # the global-pairs kNN does not spread: at the same budget some entry lacks its nearest
    from kbtools.evaluate.baselines import knn_pairs

    assert not firsts <= knn_pairs(ids, v, len(firsts))


def test_per_entry_pairs_skips_excluded_and_linked_pairs():
    nbr = np.array([[1, 2], [0, 2], [0, 1]])
    score = np.array([[0.9, 0.8], [0.9, 0.1], [0.8, 0.1]])
    assert per_entry_pairs(["a", "b", "c"], nbr, score, 3, exclude={("a", "b")}) == {("a", "c"), ("b", "c")}
    assert per_entry_pairs(["a", "b", "c"], np.full((3, 2), -1), score, 3) == set()


def test_rerank_equals_the_hand_computed_score():
    texts = ["The TLS session cache leaks", "session cache fixed for TLS", "HTTP/2 window update",
             "window update for HTTP/2 streams", "tea"]
    v = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 1.0, 0.0], [0.0, 0.8, 0.6], [0.0, 0.0, 1.0]])
    ids = list("abcde")
    terms = [rank_terms(t) for t in texts]
    assert terms[0] == {"the", "tls", "session", "cache", "leaks"} and terms[3] == {"window", "update", "for", "http",
                                                                                   "streams"}
    nbr, sim = neighbour_lists(v, k=4)
    s = rerank_scores(terms, nbr, sim, lam=0.02, max_df=20)
    # a and b share tls, session, cache: each held by 2 of the 5 entries
    j = list(nbr[0]).index(1)
    assert s[0, j] == pytest.approx(0.6 + 0.02 * 3 * math.log(5 / 2))
    # b and d share "for" (2 entries): idf ln(5/2); b and c share nothing
    assert s[1, list(nbr[1]).index(3)] == pytest.approx(0.64 + 0.02 * math.log(5 / 2))
    assert s[1, list(nbr[1]).index(2)] == pytest.approx(0.8)
    # with df <= 1 no term counts: the score is the cosine
    assert np.allclose(rerank_scores(terms, nbr, sim, max_df=1), sim)
    # b: cosine prefers c (0.8), the shared rare terms prefer a (0.6 + 0.055) only with a larger weight
    assert ("b", "c") in rerank_pairs(ids, v, texts, 5) and ("a", "b") in rerank_pairs(ids, v, texts, 5)
    got = rerank_pairs(ids, v, texts, 2, lam=0.2)
    assert got == {("a", "b"), ("c", "d")}


def test_bootstrap_ratios_are_paired_and_seeded():
    a = bootstrap_ratios([[1, 0, 1, 0], [1, 1, 1, 0]], [1, 1, 1, 1], seed=4, samples=300)
    assert (a[1] >= a[0]).all() and np.array_equal(a, bootstrap_ratios([[1, 0, 1, 0], [1, 1, 1, 0]], [1, 1, 1, 1],
                                                                        seed=4, samples=300))


def test_link_recovery_on_the_pep_slice_is_leak_free_and_names_the_strongest_baseline(peps):
    before = peps.entries.clone()
    r = link_recovery(peps)
    assert peps.entries.equals(before)
    assert set(r.arms) >= {"linker", "knn", "knn_per_entry", "rerank", "lexical"}
    n = r.arms["linker"]["links"]
    for b in ("knn", "knn_per_entry", "rerank"):
        assert r.arms[b]["links"] == n and r.arms[b]["budget"] == "linker"
        assert r.arms[b]["lo"] <= r.arms[b]["recovered"] <= r.arms[b]["hi"]
    m = r.margins["linker"]
    best = max(("knn", "knn_per_entry", "rerank"), key=lambda b: r.arms[b]["recovered"])
    assert r.arms[m["baseline"]]["recovered"] >= r.arms[best]["recovered"]
    assert m["points"] == pytest.approx(100 * (r.arms["linker"]["recovered"] - r.arms[m["baseline"]]["recovered"]),
                                        abs=0.05)
    assert m["lo"] <= m["points"] <= m["hi"]
    assert r.mask["tokens_masked"] > 0 and "embedded again" in r.protocol["vectors"]
    assert set(r.test) == set(r.arms) and "calibration" not in r.protocol
    text = r.to_markdown()
    assert "strongest baseline" in text and "| rerank | linker |" in text


def test_the_text_alone_re_finds_no_citation_by_its_number_masked_or_not(peps):
    """The linker reads no "PEP N" as one term (a number is no content word either): its lexical
    arm re-finds no more held-out citations unmasked than masked; the mask still takes the tokens
    from the texts the embedder reads."""
    masked = link_recovery(peps, reembed=False)
    ents, edges = peps.entries, peps.edges
    unmasked = evaluate_links(ents, edges, peps.triples, patterns=())
    assert unmasked.mask["tokens_masked"] == 0 and masked.mask["tokens_masked"] > 0
    assert masked.arms["lexical"]["recovered"] == unmasked.arms["lexical"]["recovered"]


def test_a_bank_without_vectors_still_reports(peps):
    r = evaluate_links(peps.entries, peps.edges, patterns=peps.settings["citations"])
    assert set(r.arms) == {"linker", "lexical"} and r.margins == {}
