"""Communities of the bank graph (Leiden on modularity, or label propagation), labelled by their terms.

Seed 000, "Structure the graph can compute". The graph is taken undirected and simplified: parallel
links between two entries are summed into one weight, self-loops dropped. Leiden runs igraph's
built-in ``community_leiden(objective_function="modularity")`` (its default objective, CPM, gives one
community per entry on sparse graphs).

Community numbers: 0 is the largest community, then by size (ties: the community whose first entry
comes first). **Isolates** (entries with no link) get community ``-1``, size 1 and an empty label:
a community of one says nothing. Each other community is labelled with its 3 most distinctive terms:
the share of its members whose title/summary holds the term, times the term's idf over the bank.

>>> import igraph as ig
>>> g = ig.Graph([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)])
>>> g.vs["name"] = list("abcdef"); g.vs["title"] = ["pump seal"] * 3 + ["invoice tax"] * 3
>>> find_communities(g).select("id", "community", "label").rows()[:2]
[('a', 0, 'pump, seal'), ('b', 0, 'pump, seal')]
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

import igraph as ig
import numpy as np
import polars as pl
from scipy import sparse

from kbtools.errors import ValidationError

__all__ = ["find_communities", "modularity", "undirected_simple", "COMMUNITY_METHODS", "label_terms", "LABEL_STOP_WORDS"]

COMMUNITY_METHODS: tuple[str, ...] = ("leiden", "label_propagation")
_SCHEMA = {"id": pl.String, "community": pl.Int64, "size": pl.Int64, "label": pl.String}


def undirected_simple(graph: ig.Graph, *, weights: str | None = "weight") -> ig.Graph:
    """An undirected copy with one edge per linked pair (weights summed, default 1.0) and no loops.

    Only ``name`` and ``weight`` are kept.

    >>> g = ig.Graph([(0, 1), (1, 0), (1, 1)], directed=True); g.es["weight"] = [0.5, 1.0, 2.0]
    >>> u = undirected_simple(g); (u.ecount(), u.es["weight"])
    (1, [1.5])
    """
    n, m = graph.vcount(), graph.ecount()
    has_w = weights is not None and weights in graph.es.attributes()
    w = np.asarray(graph.es[weights], dtype=np.float64) if has_w else np.ones(m)
    u = ig.Graph(n=n, edges=graph.get_edgelist(), directed=False)
    u.es["weight"] = np.nan_to_num(w, nan=1.0).tolist()
    u.simplify(multiple=True, loops=True, combine_edges={"weight": "sum"})
    if "name" in graph.vs.attributes():
        u.vs["name"] = graph.vs["name"]
    return u


def _vertex_names(graph: ig.Graph) -> list[str]:
    return graph.vs["name"] if "name" in graph.vs.attributes() else [str(i) for i in range(graph.vcount())]


def _membership_array(graph: ig.Graph, membership) -> np.ndarray:
    """Membership as an int array aligned to vertices; -1 (isolates) become their own communities."""
    n = graph.vcount()
    if isinstance(membership, pl.DataFrame):
        membership = dict(membership.select("id", "community").iter_rows())
    if isinstance(membership, Mapping):
        names = _vertex_names(graph)
        missing = [v for v in names if v not in membership]
        if missing:
            raise ValidationError("membership", missing[0], "every vertex needs a community")
        membership = [membership[v] for v in names]
    arr = np.asarray(list(membership) if not isinstance(membership, np.ndarray) else membership, dtype=np.int64)
    if arr.shape != (n,):
        raise ValidationError("membership", f"{arr.size} values", f"need one community per vertex ({n})")
    lone = arr < 0
    if lone.any():
        arr = arr.copy()
        arr[lone] = arr.max(initial=-1) + 1 + np.arange(lone.sum())
    return arr


def modularity(graph: ig.Graph, membership, *, resolution: float = 1.0, weights: str | None = "weight") -> float:
    """Modularity of a partition on the undirected simplified graph (see :func:`undirected_simple`).

    ``membership``: one community number per vertex (a sequence or array), a dict id -> community,
    or the frame :func:`find_communities` returns. ``-1`` marks an isolate, its own community.

    >>> g = ig.Graph([(0, 1), (2, 3)])
    >>> modularity(g, [0, 0, 1, 1])
    0.5
    """
    u = undirected_simple(graph, weights=weights)
    arr = _membership_array(u, membership)
    if u.ecount() == 0:
        return 0.0
    return float(u.modularity(arr.tolist(), weights="weight", resolution=resolution, directed=False))


def _run(u: ig.Graph, method: str, resolution: float, seed: int, n_iterations: int) -> np.ndarray:
    """Raw membership from igraph, with igraph's random generator seeded and restored to ``random``."""
    ig.set_random_number_generator(random.Random(seed))
    try:
        if method == "leiden":
            found = u.community_leiden(objective_function="modularity", weights="weight",
                                       resolution=resolution, n_iterations=n_iterations)
        else:
            found = u.community_label_propagation(weights="weight")
    finally:
        ig.set_random_number_generator(random)
    return np.asarray(found.membership, dtype=np.int64)


def _renumber(raw: np.ndarray, isolate: np.ndarray) -> np.ndarray:
    """Communities numbered by size (largest 0), ties by first vertex; isolates -1."""
    out = np.full(len(raw), -1, dtype=np.int64)
    keep = ~isolate
    if not keep.any():
        return out
    labels, first, counts = np.unique(raw[keep], return_index=True, return_counts=True)
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.lexsort((first, -counts))] = np.arange(len(labels))
    out[keep] = rank[np.searchsorted(labels, raw[keep])]
    return out


def _texts(graph: ig.Graph, entries: pl.DataFrame | None, names: list[str]) -> tuple[list[str], np.ndarray]:
    """Texts of the bank (for idf) and, per vertex, its row in those texts."""
    titles = ([t or "" for t in graph.vs["title"]] if "title" in graph.vs.attributes()
              else [""] * graph.vcount())
    if entries is None or entries.height == 0:
        return titles, np.arange(graph.vcount())
    parts = [pl.col(c).fill_null("") for c in ("title", "summary") if c in entries.columns]
    bank = entries.select("id", pl.concat_str(parts or [pl.lit("")], separator=" ").alias("text"))
    row_of = {v: i for i, v in enumerate(bank["id"].to_list())}
    texts = bank["text"].to_list()
    rows = []
    for i, name in enumerate(names):
        if name not in row_of:  # a vertex missing from entries: its graph title
            row_of[name] = len(texts)
            texts.append(titles[i])
        rows.append(row_of[name])
    return texts, np.asarray(rows, dtype=np.int64)


#: A label word: a letter, then two or more word characters or hyphens; not a commit hash or a
#: hash-like id (seven or more hex digits with a digit among them) and not a prefixed resource id
#: (``eni-1234567890abcdefg``, ``acl-5fb85d36``: a short prefix, a hyphen, seven or more letters and
#: digits with a digit among them), which name one entry, not a topic.
LABEL_TOKEN = (r"(?u)\b(?!(?=[a-f]*[0-9])[0-9a-f]{7,}\b)(?![a-zA-Z]{1,12}-(?=[a-zA-Z]*[0-9])[0-9a-zA-Z]{7,}\b)"
               r"[a-zA-Z][\w\-]{2,}\b")
#: A reST role's name (``:ref:`` of ``:ref:`install```), markup that names no topic: left out of labels.
_ROLE = re.compile(r":[\w.+-]+:(?=`)")
_LABEL_RE = re.compile(LABEL_TOKEN)

#: Words no label holds: the English stop list of the Glasgow Information Retrieval Group, as
#: scikit-learn ships it (``ENGLISH_STOP_WORDS``, which the tests compare with this one).
LABEL_STOP_WORDS: frozenset[str] = frozenset("""
a about above across after afterwards again against all almost alone along already also although
always am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere
are around as at back be became because become becomes becoming been before beforehand behind being
below beside besides between beyond bill both bottom but by call can cannot cant co con could
couldnt cry de describe detail do done down due during each eg eight either eleven else elsewhere
empty enough etc even ever every everyone everything everywhere except few fifteen fifty fill find
fire first five for former formerly forty found four from front full further get give go had has
hasnt have he hence her here hereafter hereby herein hereupon hers herself him himself his how
however hundred i ie if in inc indeed interest into is it its itself keep last latter latterly least
less ltd made many may me meanwhile might mill mine more moreover most mostly move much must my
myself name namely neither never nevertheless next nine no nobody none noone nor not nothing now
nowhere of off often on once one only onto or other others otherwise our ours ourselves out over own
part per perhaps please put rather re same see seem seemed seeming seems serious several she should
show side since sincere six sixty so some somehow someone something sometime sometimes somewhere
still such system take ten than that the their them themselves then thence there thereafter thereby
therefore therein thereupon these they thick thin third this those though three through throughout
thru thus to together too top toward towards twelve twenty two un under until up upon us very via
was we well were what whatever when whence whenever where whereafter whereas whereby wherein
whereupon wherever whether which while whither who whoever whole whom whose why will with within
without would yet you your yours yourself yourselves
""".split())


def label_terms(texts: list[str]) -> tuple[sparse.csr_array, np.ndarray]:
    """Which label words each text holds (binary, texts x words) and the words, in alphabetical
    order: each text lower-cased, its :data:`LABEL_TOKEN` words outside :data:`LABEL_STOP_WORDS`,
    reST role names left out. (scikit-learn's ``CountVectorizer(binary=True, stop_words="english",
    token_pattern=LABEL_TOKEN)`` reads the same; the tests compare them.)

    >>> x, words = label_terms(["Retry the upload", "the upload"])
    >>> words.tolist(), x.toarray().tolist()
    (['retry', 'upload'], [[1, 1], [0, 1]])
    """
    held = [sorted({w for w in _LABEL_RE.findall(_ROLE.sub(" ", t).lower()) if w not in LABEL_STOP_WORDS})
            for t in texts]
    words = np.array(sorted({w for h in held for w in h}), dtype=object)
    at = {w: i for i, w in enumerate(words.tolist())}
    cols = np.fromiter((at[w] for h in held for w in h), np.int64)
    indptr = np.cumsum([0] + [len(h) for h in held])
    x = sparse.csr_array((np.ones(len(cols), np.int64), cols, indptr), shape=(len(texts), len(words)))
    return x, words


def _labels(texts: list[str], rows: np.ndarray, community: np.ndarray, n_comm: int, terms: int) -> list[str]:
    """Top ``terms`` distinctive terms per community: share of members with the term x idf over the bank."""
    if n_comm == 0:
        return []
    x, vocab = label_terms(texts)  # alphabetical: the words' order breaks ties
    if not len(vocab):
        return [""] * n_comm
    idf = np.log(x.shape[0] / np.maximum(np.asarray(x.sum(axis=0)).ravel(), 1))
    members = np.flatnonzero(community >= 0)
    onehot = sparse.csr_array((np.ones(len(members)), (community[members], rows[members])),
                              shape=(n_comm, x.shape[0]))
    share = sparse.csr_array(onehot @ x)
    size = np.bincount(community[members], minlength=n_comm)
    labels = []
    for c in range(n_comm):
        lo, hi = share.indptr[c], share.indptr[c + 1]
        cols = share.indices[lo:hi]
        score = share.data[lo:hi] / size[c] * idf[cols]
        best = np.lexsort((cols, -score))[:terms]
        labels.append(", ".join(vocab[cols[best][score[best] > 0]]))
    return labels


def find_communities(graph: ig.Graph, *, method: str = "leiden", resolution: float = 1.0, seed: int = 0,
                entries: pl.DataFrame | None = None, n_iterations: int = 2,
                label_terms: int = 3) -> pl.DataFrame:
    """One row per vertex: frame (id, community, size, label).

    ``method="leiden"`` maximises modularity at ``resolution`` (higher: more, smaller communities),
    ``n_iterations`` passes (igraph's default 2; -1 iterates until stable: at 100k entries about 10x
    the time for +0.015 modularity); ``"label_propagation"`` is the alternative.
    Both are reproducible for a given ``seed``. Labels come from ``entries`` (title and summary;
    idf over all of them), else from the graph's ``title`` attribute. Isolates: community -1.

    >>> g = ig.Graph([(0, 1)]); g.vs["name"] = ["a", "b"]; g.add_vertices(1); g.vs[2]["name"] = "c"
    >>> find_communities(g).select("id", "community", "size").rows()
    [('a', 0, 2), ('b', 0, 2), ('c', -1, 1)]
    """
    if method not in COMMUNITY_METHODS:
        raise ValidationError("method", method, f"must be one of {', '.join(COMMUNITY_METHODS)}")
    if resolution is None or resolution <= 0:
        raise ValidationError("resolution", resolution, "must be > 0")
    names = _vertex_names(graph)
    if not names:
        return pl.DataFrame(schema=_SCHEMA)
    u = undirected_simple(graph)
    isolate = np.asarray(u.degree(), dtype=np.int64) == 0
    raw = _run(u, method, resolution, seed, n_iterations) if u.ecount() else np.zeros(len(names), np.int64)
    community = _renumber(raw, isolate)
    n_comm = int(community.max(initial=-1)) + 1
    counts = np.append(np.bincount(community[community >= 0], minlength=n_comm), 1)  # [-1] -> isolates
    size = counts[community]
    texts, rows = _texts(graph, entries, names)
    labels = _labels(texts, rows, community, n_comm, label_terms)
    return pl.DataFrame(
        {"id": names, "community": community, "size": size,
         "label": [labels[c] if c >= 0 else "" for c in community.tolist()]},
        schema=_SCHEMA,
    )
