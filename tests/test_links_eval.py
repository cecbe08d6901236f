"""Link recovery (kb eval links) and the rare-identifier lever."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import numpy as np
import polars as pl
import pytest

import kbtools as kb
from kbtools.evaluate.links import evaluate_links, held_out_frames, human_edges, knn_pairs, recovery
from kbtools.linker import TermStats
from kbtools.linker.anchors import anchor
from kbtools.linker.terms import authors_of

T0 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)


def _bank():
    """Six documents: two cite each other by identifier, two are near-duplicates nobody links,
    one is a section (part_of) of another."""
    ents = pl.DataFrame({
        "id": ["a1", "b2", "c3", "d4", "e5", "f6"],
        "kind": ["knowledge"] * 6,
        "title": ["PEP 484: Type hints", "Generics", "Tea", "Green tea", "Coffee", "PEP 484: Type hints — Rationale"],
        "content": ["Type hints for functions.", "As PEP 484 says, generics use typing.TypeVar.",
                    "Brew green tea at eighty degrees.", "Green tea brews at eighty degrees.",
                    "Espresso needs fine grounds.", "Why hints help readers."],
        "created_at": [T0 + dt.timedelta(days=i) for i in range(6)],
    })
    edges = pl.DataFrame({"src": ["b2", "f6"], "dst": ["a1", "a1"], "type": ["cites", "part_of"],
                          "source": ["citation_backfill", "structure"]})
    return ents, edges


def test_human_edges_leave_structure_in_place():
    ents, edges = _bank()
    assert human_edges(edges)["type"].to_list() == ["cites"]
    _, kept, held = held_out_frames(ents, edges)
    assert kept["type"].to_list() == ["part_of"] and held.height == 1


def test_recovery_on_a_hand_made_bank():
    ents, edges = _bank()
    vec = np.eye(6, 4, dtype=np.float32)  # orthogonal but for the tea pair and the citing pair
    vec[1] = [0.6, 0.8, 0, 0]
    vec[3] = vec[2]
    vec[4] = [0, 0, 0, 1]
    vec[5] = [0, 0, 0, 1]
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    before = ents.clone()
    stages = []
    r = evaluate_links(ents, edges, vectors=vec, progress=lambda done, total: stages.append((done, total)))
    assert stages == [(1, 4), (2, 4), (3, 4), (4, 4)]  # re-embedded, statistics, linker, baselines and lexical
    assert r.held_out == {"cites": 1}
    assert r.arms["linker"]["recovered"] == 1.0  # "PEP 484" kept whole, and a similar meaning
    assert r.arms["knn"]["links"] == r.arms["linker"]["links"]
    assert set(r.arms) >= {"linker", "knn", "lexical"}
    assert ents.equals(before)
    assert "| linker |" in r.to_markdown()


def test_knn_pairs_take_the_most_similar_and_skip_excluded():
    v = np.array([[1.0, 0.0], [0.99, 0.141], [0.0, 1.0], [0.1, 0.995]])
    assert knn_pairs(["a", "b", "c", "d"], v, 2) == {("a", "b"), ("c", "d")}
    assert knn_pairs(["a", "b", "c", "d"], v, 1, exclude={("a", "b")}) in ({("c", "d")},)


def test_no_baseline_links_two_sections_of_one_document(monkeypatch):
    v = np.array([[1.0, 0.0], [0.99, 0.141], [0.0, 1.0], [0.1, 0.995]])
    docs = np.array([0, 0, 1, -1])  # a and b: sections of one document; d: of none
    assert knn_pairs(["a", "b", "c", "d"], v, 2, groups=docs) == {("c", "d"), ("b", "d")}
    ents, edges = _bank()
    ents = ents.with_columns(pl.Series("metadata", ['{"doc": "a.rst"}', None, '{"doc": "tea.rst"}',
                                                    '{"doc": "tea.rst"}', None, '{"doc": "a.rst"}']))
    vec = np.ones((6, 4), dtype=np.float32) + np.eye(6, 4, dtype=np.float32) * 0.1
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    found = {}
    import kbtools.evaluate.links as links

    scored = links.recovery_intervals  # the pairs each arm made, as they are scored
    monkeypatch.setattr(links, "recovery_intervals", lambda f, *a, **k: (found.update(f), scored(f, *a, **k))[1])
    evaluate_links(ents, edges, vectors=vec)
    for arm in ("knn", "knn_per_entry", "rerank"):
        assert found[arm] and ("c3", "d4") not in found[arm], arm  # the two tea sections of tea.rst


def test_recovery_figures():
    out = recovery({("a", "b")}, {("a", "b"), ("c", "d")}, n_entries=4)
    assert out == {"links": 1, "links_per_entry": 0.5, "hits": 1, "recovered": 0.5, "precision": 1.0}


def test_the_seeds_identifiers_are_entities():
    assert anchor("Line 3 keeps faulting with error E-217.").terms == ('e:e-217', 'e:line 3', 't:line', 't:fault', 't:error')


def test_authors_are_bags():
    assert authors_of('{"Author": "Guido van Rossum <g@p.org>, Barry Warsaw"}') == ["guido van rossum", "barry warsaw"]
    ents = pl.DataFrame({"id": ["a", "b"], "kind": ["fact"] * 2, "created_at": [T0] * 2, "title": ["Green tea", "Black tea"],
                         "content": ["x", "y"], "metadata": ['{"author": "ann"}', '{"author": "Ann"}']})
    s = TermStats.build(ents)
    grown = TermStats.build(ents.head(1)).extend(ents)
    assert (s.bags["author"] != grown.bags["author"]).nnz == 0
    assert s.bags["author"][0].multiply(s.bags["author"][1]).sum() == 1


def test_kb_eval_links_cli(tmp_path):
    src = tmp_path / "eng"
    import shutil
    from pathlib import Path

    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "demo" / "engineering", src)
    out = subprocess.run([sys.executable, "-m", "kbtools", "eval", "links", str(src), "--json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert set(report["arms"]) >= {"linker", "lexical"} and sum(report["held_out"].values()) > 0
    assert "part_of" not in report["held_out"]
