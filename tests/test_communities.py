"""kbtools.graph.community: Leiden / label propagation, modularity, labels."""

from __future__ import annotations

import random
import re

import igraph as ig
import networkx as nx
import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from kbtools.graph.community import find_communities, modularity, undirected_simple
from kbtools.errors import ValidationError
from kbtools.graph.build import to_igraph
from kbtools.model.schema import empty


def _planted(blocks=4, size=25, p_in=0.3, p_out=0.01, seed=0):
    rng = np.random.default_rng(seed)
    n = blocks * size
    truth = np.repeat(np.arange(blocks), size)
    same = truth[:, None] == truth[None, :]
    prob = np.where(same, p_in, p_out)
    upper = np.triu(rng.random((n, n)) < prob, k=1)
    pairs = np.argwhere(upper)
    g = ig.Graph(n=n, edges=pairs.tolist(), directed=True)
    g.vs["name"] = [f"v{i:03d}" for i in range(n)]
    g.es["weight"] = [1.0] * g.ecount()
    return g, truth


@pytest.mark.parametrize("method", ["leiden", "label_propagation"])
def test_planted_partition_recovered(method):
    g, truth = _planted()
    found = find_communities(g, method=method)
    assert found["id"].to_list() == g.vs["name"]
    nmi = ig.compare_communities(truth.tolist(), found["community"].to_list(), method="nmi")
    assert nmi == pytest.approx(1.0)
    assert set(found["size"]) == {25}


def test_reproducible_with_seed_and_python_random_left_alone():
    g, _ = _planted(blocks=6, size=15, p_in=0.2, p_out=0.03, seed=3)
    random.seed(11)
    first = find_communities(g, seed=7)
    after = random.random()
    random.seed(11)
    assert random.random() == after  # igraph's generator was a private one
    assert_frame_equal(first, find_communities(g, seed=7))


def test_resolution_changes_granularity():
    g, _ = _planted(blocks=4, size=20, p_in=0.4, p_out=0.05, seed=1)
    coarse = find_communities(g, resolution=0.1)["community"].n_unique()
    fine = find_communities(g, resolution=3.0)["community"].n_unique()
    assert coarse < fine


def test_isolates_numbering_and_labels():
    entries = pl.DataFrame({
        "id": ["a", "b", "c", "d", "e", "f", "z"],
        "title": ["Pump seal leak", "Pump seal replaced", "Seal kit for pump", "Invoice tax code",
                  "Tax rate on invoice", "Invoice rounding", "Lonely note"],
        "summary": ["pump station", None, "pump", "billing", "billing tax", "billing", None],
    })
    edges = pl.DataFrame({"src": ["a", "b", "a", "d", "e", "d", "c"], "dst": ["b", "c", "c", "e", "f", "f", "d"],
                          "type": ["see_also"] * 7, "source": ["author"] * 7})
    g = to_igraph(entries, edges)
    out = find_communities(g, entries=entries)
    rows = {r["id"]: r for r in out.to_dicts()}
    assert rows["z"]["community"] == -1 and rows["z"]["size"] == 1 and rows["z"]["label"] == ""
    assert rows["a"]["community"] == rows["b"]["community"] == rows["c"]["community"] == 0
    assert rows["d"]["community"] == rows["e"]["community"] == rows["f"]["community"] == 1
    assert rows["a"]["label"] == "pump, seal, kit"  # in every member first, alphabetical among equals
    assert rows["d"]["label"].split(", ")[:2] == ["billing", "invoice"]
    assert out.schema == pl.Schema({"id": pl.String, "community": pl.Int64, "size": pl.Int64, "label": pl.String})
    assert find_communities(g)["label"][0] == "pump, seal, kit"  # graph titles only


def _chain_label(titles: list[str], summaries: list[str]) -> list[str]:
    """The label words of three entries linked in a chain (one community)."""
    entries = pl.DataFrame({"id": ["a", "b", "c"], "title": titles, "summary": summaries})
    edges = pl.DataFrame({"src": ["a", "b"], "dst": ["b", "c"], "type": ["see_also"] * 2, "source": ["author"] * 2})
    return find_communities(to_igraph(entries, edges), entries=entries, label_terms=8)["label"][0].split(", ")


def test_labels_leave_commit_hashes_out():
    label = _chain_label(["tests: revert ee066732963b", "tests: follow-up to ee066732963b", "tests: decade of facade fixes"],
                         ["ee066732963b broke the runner", "after ee066732963b", "runner"])
    assert "ee066732963b" not in label
    assert {"runner", "facade", "decade"} <= set(label)  # words of hex letters alone are words


def test_labels_leave_prefixed_resource_ids_out():
    label = _chain_label(["describe-instances", "describe-network-interfaces", "attach-network-interface"],
                         ["Describes eni-1234567890abcdefg in subnet-04a636d18e83cfacb.",
                          "Lists eni-1234567890abcdefg.", "Attaches eni-1234567890abcdefg to an instance."])
    assert not any(w.startswith(("eni-", "subnet-")) for w in label)  # one resource's id, no topic
    assert "describe-instances" in label


def test_labels_leave_rest_role_names_out():
    label = _chain_label(["archive output", "archive naming", "output artifacts"],
                         ["See :ref:`Output Artifacts`.", "As :ref:`archive <Archive Output>` says.", "See :command:`install`."])
    assert "ref" not in label and "command" not in label  # markup, no topic
    assert "archive" in label


def test_modularity_matches_igraph_and_networkx():
    rng = np.random.default_rng(5)
    g, truth = _planted(blocks=3, size=12, p_in=0.4, p_out=0.05, seed=5)
    g.es["weight"] = rng.uniform(0.2, 2.0, g.ecount()).tolist()
    ours = modularity(g, truth.tolist())
    u = undirected_simple(g)
    assert ours == pytest.approx(u.modularity(truth.tolist(), weights="weight", directed=False))
    G = nx.Graph()
    G.add_nodes_from(range(g.vcount()))
    G.add_weighted_edges_from((e.source, e.target, e["weight"]) for e in u.es)
    parts = [set(np.flatnonzero(truth == c).tolist()) for c in range(3)]
    assert ours == pytest.approx(nx.community.modularity(G, parts, weight="weight"))
    assert modularity(g, truth.tolist(), resolution=0.5) == pytest.approx(
        nx.community.modularity(G, parts, weight="weight", resolution=0.5))
    found = find_communities(g)
    assert modularity(g, found) == pytest.approx(modularity(g, found["community"].to_numpy()))
    assert modularity(g, found) >= ours - 1e-9  # Leiden finds at least the planted modularity here


def test_parallel_links_are_summed_and_membership_checked():
    g = ig.Graph([(0, 1), (1, 0), (1, 2)], directed=True)
    g.vs["name"] = ["a", "b", "c"]
    g.es["weight"] = [0.5, 0.25, 1.0]
    assert sorted(undirected_simple(g).es["weight"]) == [0.75, 1.0]
    with pytest.raises(ValidationError):
        modularity(g, [0, 1])
    with pytest.raises(ValidationError):
        modularity(g, {"a": 0})
    assert modularity(g, {"a": 0, "b": 0, "c": -1}) == pytest.approx(modularity(g, [0, 0, 1]))
    with pytest.raises(ValidationError):
        find_communities(g, method="louvain")


def test_empty_input_and_inputs_unchanged():
    g0 = to_igraph(empty("entries"), empty("edges"))
    assert find_communities(g0).height == 0
    assert modularity(g0, []) == 0.0
    g, _ = _planted(blocks=2, size=5, p_in=0.9, p_out=0.0)
    before = (g.get_edgelist(), g.vs["name"], g.es["weight"], g.is_directed())
    find_communities(g)
    modularity(g, [0] * 10)
    assert (g.get_edgelist(), g.vs["name"], g.es["weight"], g.is_directed()) == before


def _sklearn_terms(texts):
    from sklearn.feature_extraction.text import CountVectorizer

    from kbtools.graph.community import LABEL_TOKEN

    vec = CountVectorizer(binary=True, stop_words="english", token_pattern=LABEL_TOKEN)
    x = vec.fit_transform([re.sub(r":[\w.+-]+:(?=`)", " ", t) for t in texts]).tocsr()
    return x.toarray(), vec.get_feature_names_out().tolist()


def test_label_words_are_scikit_learns_on_real_titles(demo_dir):
    """scikit-learn's vectorizer is the oracle: the same words and the same matrix, without its import."""
    import gzip
    import json
    from pathlib import Path

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    import kbtools as kb
    from kbtools.graph.community import LABEL_STOP_WORDS, label_terms

    assert LABEL_STOP_WORDS == ENGLISH_STOP_WORDS
    entries = pl.read_parquet(sorted((demo_dir / "engineering" / "tables" / "entries").glob("*.parquet")))
    texts = (entries["title"].fill_null("") + " " + entries["summary"].fill_null("")).to_list()
    with gzip.open(Path(kb.__file__).parent.parent / "data" / "peps" / "peps.jsonl.gz", "rt") as fh:
        texts += [json.loads(line)["body"][:2000] for _, line in zip(range(60), fh)]
    texts += ["Use :pep:`8` and :ref:`install`", "eni-1234567890abcdefg and 4c5307b4 and a1b2c3d", "Ünïcödé Straße naïve", ""]
    x, words = label_terms(texts)
    want, want_words = _sklearn_terms(texts)
    assert words.tolist() == want_words and (x.toarray() == want).all()
