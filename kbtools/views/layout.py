"""3D positions for the constellation view: cheap seeds, a short bounded refinement, a per-version cache.

Measured on 10k nodes and 20k edges, igraph's 3D Fruchterman-Reingold from scratch takes minutes, a
spectral embedding a fraction of a second. So :func:`layout_3d` seeds positions cheaply and refines
them briefly:

1. *Groups.* The linked entries fall into connected components; a component larger than
   :data:`GROUP_MAX` is split into modularity communities (igraph's Leiden), so a giant component
   still reads as constellations.
2. *Inside a group*: a spectral embedding (the three smoothest non-trivial eigenvectors of the
   normalised adjacency), scaled so the group's volume grows with its size.
3. *Groups of a split component* are placed by igraph's 3D Fruchterman-Reingold on the small
   quotient graph (one node per group), so linked groups sit side by side.
4. *Components* are packed into a ball, largest in the middle, along a golden-angle spiral; with
   vectors, each component is turned towards its topic (its members' embedding reduced to 3D), so
   constellations about one subject sit together.
5. *Entries without links* sit on a shell around the constellations: in the direction of their
   embedding reduced to 3D by PCA when vectors are given (so they sit near their topic), else
   spread evenly over the shell by kind.
6. *Refinement*: ``refine`` vectorised force steps (springs along edges, short-range repulsion
   between nearby points found with a k-d tree); the cost per step grows with entries + edges,
   not with their square.

:func:`bank_layout` caches the frame per bank version (in memory and on disk through the bank's
fingerprinted cache).

>>> import polars as pl
>>> entries = pl.DataFrame({"id": ["a", "b", "c", "d"]})
>>> edges = pl.DataFrame({"src": ["a", "b"], "dst": ["b", "c"]})
>>> frame = layout_3d(entries, edges)
>>> frame.columns, frame.height
(['id', 'x', 'y', 'z'], 4)
"""

from __future__ import annotations

import io
import random

import igraph as ig
import numpy as np
import polars as pl
from scipy import sparse
from scipy.sparse import linalg as sparse_linalg
from scipy.spatial import cKDTree
from threadpoolctl import threadpool_limits

from kbtools.errors import ValidationError
from kbtools.store.caches import read_cache, write_cache
from kbtools.store.vectors import entry_vectors

__all__ = ["layout_3d", "bank_layout", "GROUP_MAX", "LAYOUT_VERSION", "LAYOUT_SCHEMA"]

#: Components larger than this are split into modularity communities before they are laid out.
GROUP_MAX = 150
#: Bumped whenever the algorithm changes, so cached layouts of an older algorithm are rebuilt.
LAYOUT_VERSION = 2
#: Columns of a layout frame.
LAYOUT_SCHEMA = {"id": pl.String, "x": pl.Float64, "y": pl.Float64, "z": pl.Float64}

_GOLDEN_ANGLE = np.pi * (3.0 - np.sqrt(5.0))


def layout_3d(entries: pl.DataFrame, edges: pl.DataFrame, *, vectors=None, seed: int = 0,
              refine: int = 30) -> pl.DataFrame:
    """3D positions (id, x, y, z) for every entry, scaled into the unit ball; pure and deterministic.

    ``entries`` needs ``id`` (``kind`` is used when present); ``edges`` needs ``src`` and ``dst``
    (edges to unknown ids and self loops are ignored). ``vectors`` is ``(ids, array)`` as returned by
    ``entry_vectors(bank)`` (array ``(n, dims, d)`` or ``(n, d)``); ``refine`` is the number of force
    steps after seeding (0 keeps the seed positions).

    >>> import polars as pl
    >>> e = pl.DataFrame({"id": ["a", "b", "c"]})
    >>> f = layout_3d(e, pl.DataFrame({"src": ["a"], "dst": ["b"]}), seed=1)
    >>> f.equals(layout_3d(e, pl.DataFrame({"src": ["a"], "dst": ["b"]}), seed=1))
    True
    """
    _check(entries, edges, refine)
    ids = entries["id"].to_list()
    n = len(ids)
    if n == 0:
        return pl.DataFrame(schema=LAYOUT_SCHEMA)
    pairs = _edge_index(ids, edges)
    rng = np.random.default_rng(seed)
    pos = np.zeros((n, 3))
    linked = np.zeros(n, dtype=bool)
    linked[pairs.ravel()] = True
    if pairs.size:
        topics = _topic_directions(np.arange(n), vectors, ids)
        with threadpool_limits(limits=1):  # many small dense eigenproblems: BLAS threads only contend
            _seed_linked(pos, n, pairs, rng, seed, topics)
        if refine:
            _refine(pos, linked, pairs, rng, refine)
    if (~linked).any():
        _place_unlinked(pos, ~linked, entries, vectors, rng, ids)
    scale = float(np.abs(pos).max()) or 1.0
    pos = pos / scale
    return pl.DataFrame({"id": ids, "x": pos[:, 0], "y": pos[:, 1], "z": pos[:, 2]}, schema=LAYOUT_SCHEMA)


def bank_layout(bank, *, seed: int = 0, refine: int = 30, use_vectors: bool = True,
                trusted_only: bool = True) -> pl.DataFrame:
    """:func:`layout_3d` of a bank, cached per bank version in memory and in the bank's disk cache.

    The fingerprint names the bank version, the parameters and :data:`LAYOUT_VERSION`; a job can call
    this once to precompute the layout of a big bank for every later viewer.

    >>> import kbtools as kb  # doctest: +SKIP
    >>> kb.views.bank_layout(kb.open_bank("data/demo/engineering")).height  # doctest: +SKIP
    2000
    """
    fingerprint = (f"layout{LAYOUT_VERSION}:v{bank.version}:seed={seed}:refine={refine}:"
                   f"vectors={bool(use_vectors)}:trusted={bool(trusted_only)}")

    def build() -> pl.DataFrame:
        cached = read_cache(bank, "layout_3d.parquet", fingerprint)
        if cached is not None:
            try:
                return pl.read_parquet(io.BytesIO(cached))
            except Exception:  # a damaged cache file is rebuilt, never trusted
                pass
        edges = bank.edges
        if trusted_only:
            from kbtools.model.vocab import TRUSTED_SOURCES
            edges = edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES)))
        vectors = entry_vectors(bank) if use_vectors else None
        frame = layout_3d(bank.entries, edges, vectors=vectors, seed=seed, refine=refine)
        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        write_cache(bank, "layout_3d.parquet", fingerprint, buffer.getvalue())
        return frame

    return bank.derived(f"views.layout:{fingerprint}", build)


# -- checks and indexing -------------------------------------------------------------------------

def _check(entries: pl.DataFrame, edges: pl.DataFrame, refine: int) -> None:
    if "id" not in entries.columns:
        raise ValidationError("id", None, "entries need an id column")
    for column in ("src", "dst"):
        if column not in edges.columns:
            raise ValidationError(column, None, "edges need src and dst columns")
    if not isinstance(refine, int) or isinstance(refine, bool) or not 0 <= refine <= 1000:
        raise ValidationError("refine", refine, "refine is a whole number of steps from 0 to 1000")
    if entries["id"].n_unique() != entries.height:
        dup = entries.filter(pl.col("id").is_duplicated())["id"][0]
        raise ValidationError("id", dup, "entry ids must be unique")


def _edge_index(ids: list[str], edges: pl.DataFrame) -> np.ndarray:
    """Undirected, deduplicated (i, j) index pairs, i < j, of edges between known entries."""
    if edges.height == 0:
        return np.zeros((0, 2), dtype=np.int64)
    index = pl.DataFrame({"id": ids, "i": np.arange(len(ids), dtype=np.int64)})
    joined = (edges.select("src", "dst")
              .join(index.rename({"id": "src", "i": "a"}), on="src", how="inner")
              .join(index.rename({"id": "dst", "i": "b"}), on="dst", how="inner")
              .filter(pl.col("a") != pl.col("b"))
              .select(pl.min_horizontal("a", "b").alias("a"), pl.max_horizontal("a", "b").alias("b"))
              .unique().sort("a", "b"))
    return joined.to_numpy().astype(np.int64).reshape(-1, 2)


# -- seeding -------------------------------------------------------------------------------------

def _seed_linked(pos: np.ndarray, n: int, pairs: np.ndarray, rng: np.random.Generator, seed: int,
                 topics: np.ndarray | None = None) -> None:
    graph = ig.Graph(n=n, edges=pairs.tolist(), directed=False)
    components = [c for c in graph.connected_components() if len(c) > 1]
    components.sort(key=lambda c: (-len(c), c[0]))
    placed = []
    for members in components:
        members = np.asarray(members)
        local = _component_layout(graph.induced_subgraph(members), rng, seed)
        placed.append((members, local))
    radii = np.array([_radius(local) for _, local in placed])
    centres = _pack(radii)
    if topics is not None:
        # same distance from the middle, but in the direction of the component's topic, so that
        # constellations about one subject sit together (and near their unlinked entries)
        heading = np.array([topics[members].mean(axis=0) for members, _ in placed])
        heading /= np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-12)
        centres = np.linalg.norm(centres, axis=1, keepdims=True) * heading
    for (members, local), centre in zip(placed, centres):
        pos[members] = local + centre


def _component_layout(sub: ig.Graph, rng: np.random.Generator, seed: int) -> np.ndarray:
    """Local coordinates (centred) of one connected component."""
    if sub.vcount() <= GROUP_MAX:
        return _spectral(sub, rng)
    random.seed(seed)  # igraph draws from Python's random module
    groups = np.asarray(sub.community_leiden(objective_function="modularity", n_iterations=-1).membership)
    n_groups = int(groups.max()) + 1
    if n_groups == 1:
        return _spectral(sub, rng)
    local = np.zeros((sub.vcount(), 3))
    radius = np.zeros(n_groups)
    for g in range(n_groups):
        members = np.flatnonzero(groups == g)
        local[members] = _spectral(sub.induced_subgraph(members), rng) if len(members) > 1 else 0.0
        radius[g] = _radius(local[members])
    quotient = _quotient(sub, groups, n_groups)
    centres = np.asarray(quotient.layout_fruchterman_reingold_3d(
        weights="weight", niter=300, seed=rng.normal(size=(n_groups, 3)).tolist()).coords)
    centres = _spread(centres, radius, np.asarray(quotient.get_edgelist()).reshape(-1, 2))
    return local + centres[groups]


def _quotient(sub: ig.Graph, groups: np.ndarray, n_groups: int) -> ig.Graph:
    pairs = groups[np.asarray(sub.get_edgelist()).reshape(-1, 2)]
    pairs = np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1)
    unique, counts = np.unique(pairs, axis=0, return_counts=True) if len(pairs) else (pairs, np.zeros(0))
    quotient = ig.Graph(n=n_groups, edges=unique.tolist(), directed=False)
    quotient.es["weight"] = counts.astype(float).tolist()
    return quotient


def _spread(centres: np.ndarray, radius: np.ndarray, qedges: np.ndarray) -> np.ndarray:
    """Scale quotient positions so linked groups sit about one group-width apart."""
    centres = centres - centres.mean(axis=0)
    if len(qedges):
        lengths = np.linalg.norm(centres[qedges[:, 0]] - centres[qedges[:, 1]], axis=1)
        wanted = radius[qedges[:, 0]] + radius[qedges[:, 1]] + 1.0
        ratio = np.median(wanted / np.maximum(lengths, 1e-9))
    else:
        ratio = 1.0
    return centres * ratio


def _spectral(sub: ig.Graph, rng: np.random.Generator) -> np.ndarray:
    """The three smoothest non-trivial eigenvectors of the normalised adjacency, scaled to the
    component's size (edge length about 1, volume proportional to the number of members)."""
    size = sub.vcount()
    if size == 2:
        return np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]])
    pairs = np.asarray(sub.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    adjacency = sparse.coo_matrix((np.ones(2 * len(pairs)), (np.r_[pairs[:, 0], pairs[:, 1]],
                                   np.r_[pairs[:, 1], pairs[:, 0]])), shape=(size, size)).tocsr()
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    inv_sqrt = sparse.diags(1.0 / np.sqrt(np.maximum(degree, 1e-12)))
    normalised = inv_sqrt @ adjacency @ inv_sqrt
    want = min(4, size)
    if size <= 400:
        values, vectors = np.linalg.eigh(normalised.toarray())
        vectors = vectors[:, np.argsort(-values)[:want]]
    else:
        v0 = rng.normal(size=size)
        try:
            values, vectors = sparse_linalg.eigsh(normalised, k=want, which="LA", v0=v0, tol=1e-4, maxiter=2000)
        except sparse_linalg.ArpackNoConvergence as partial:
            values, vectors = partial.eigenvalues, partial.eigenvectors
        vectors = vectors[:, np.argsort(-values)]
    coords = np.zeros((size, 3))
    found = vectors[:, 1:4] * (1.0 / np.sqrt(np.maximum(degree, 1e-12)))[:, None]
    coords[:, : found.shape[1]] = found
    coords += rng.normal(scale=1e-3, size=coords.shape) * (np.abs(coords).max() or 1.0)
    coords -= coords.mean(axis=0)
    rms = np.sqrt((coords ** 2).sum(axis=1).mean()) or 1.0
    return coords / rms * 0.6 * size ** (1.0 / 3.0)


def _radius(local: np.ndarray) -> float:
    return float(np.linalg.norm(local, axis=1).max()) + 0.5 if len(local) else 0.5


def _pack(radii: np.ndarray) -> np.ndarray:
    """Centres for spheres of ``radii`` (largest first) packed into a ball along a golden spiral."""
    count = len(radii)
    volume = (2.0 * radii + 1.0) ** 3
    shell = np.cbrt(np.concatenate([[0.0], np.cumsum(volume)[:-1]])) * 0.62
    shell = np.where(np.arange(count) == 0, 0.0, shell + radii)
    return shell[:, None] * _sphere_points(count)


def _sphere_points(count: int) -> np.ndarray:
    """``count`` evenly spread unit vectors (a Fibonacci sphere)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / max(count, 1)
    r = np.sqrt(np.clip(1.0 - z * z, 0.0, 1.0))
    theta = _GOLDEN_ANGLE * np.arange(count)
    return np.column_stack([r * np.cos(theta), r * np.sin(theta), z])


# -- unlinked entries ----------------------------------------------------------------------------

def _place_unlinked(pos, unlinked, entries, vectors, rng, ids) -> None:
    rows = np.flatnonzero(unlinked)
    inner = float(np.linalg.norm(pos[~unlinked], axis=1).max()) if (~unlinked).any() else 0.0
    outer = max(inner * 1.15, np.cbrt(len(rows)) * 1.2, 2.0)
    direction = _topic_directions(rows, vectors, ids)
    if direction is None:
        order = _kind_order(entries, rows)
        direction = np.empty((len(rows), 3))
        direction[order] = _sphere_points(len(rows))
    depth = outer * (1.0 + 0.12 * rng.random(len(rows)))
    pos[rows] = direction * depth[:, None]


def _topic_directions(rows: np.ndarray, vectors, ids: list[str]) -> np.ndarray | None:
    """Unit directions from the entries' embeddings reduced to 3D (PCA); None without vectors."""
    if vectors is None:
        return None
    vec_ids, data = vectors
    if len(vec_ids) < 4 or np.ndim(data) not in (2, 3):
        return None
    data = np.asarray(data, dtype=np.float64)
    if data.ndim == 3:
        data = data.mean(axis=1)
    where = dict(zip(np.asarray(vec_ids).tolist(), range(len(vec_ids))))
    take = np.array([where.get(ids[r], -1) for r in rows])
    if (take < 0).mean() > 0.5:
        return None
    centred = data - data.mean(axis=0)
    _, _, components = np.linalg.svd(centred[:: max(1, len(centred) // 5000)], full_matrices=False)
    reduced = centred @ components[:3].T
    reduced /= reduced.std(axis=0) + 1e-12
    out = np.where(take[:, None] >= 0, reduced[np.maximum(take, 0)], np.random.default_rng(0).normal(size=(len(rows), 3)))
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def _kind_order(entries: pl.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Positions of ``rows`` on the shell so entries of one kind sit together."""
    key = entries["kind"].to_numpy()[rows].astype(str) if "kind" in entries.columns else np.zeros(len(rows), str)
    order = np.lexsort((entries["id"].to_numpy()[rows].astype(str), key))
    rank = np.empty(len(rows), dtype=np.int64)
    rank[order] = np.arange(len(rows))
    return rank


# -- refinement ----------------------------------------------------------------------------------

def _refine(pos: np.ndarray, linked: np.ndarray, pairs: np.ndarray, rng: np.random.Generator, steps: int) -> None:
    """``steps`` force steps on the linked entries: springs of length 1 along edges, repulsion
    between points closer than 1.5 (found with a k-d tree), moves capped by a cooling step."""
    rows = np.flatnonzero(linked)
    local = np.full(len(pos), -1)
    local[rows] = np.arange(len(rows))
    a, b = local[pairs[:, 0]], local[pairs[:, 1]]
    p = pos[rows].copy()
    p += rng.normal(scale=1e-6, size=p.shape)
    for step in range(steps):
        force = np.zeros_like(p)
        delta = p[b] - p[a]
        dist = np.maximum(np.linalg.norm(delta, axis=1), 1e-9)
        pull = (0.5 * (dist - 1.0) / dist)[:, None] * delta
        _accumulate(force, a, pull)
        _accumulate(force, b, -pull)
        close = cKDTree(p).query_pairs(1.5, output_type="ndarray")
        if len(close):
            i, j = close[:, 0], close[:, 1]
            delta = p[j] - p[i]
            dist = np.maximum(np.linalg.norm(delta, axis=1), 1e-3)
            push = (0.5 * (1.5 - dist) / dist)[:, None] * delta
            _accumulate(force, i, -push)
            _accumulate(force, j, push)
        cap = 0.5 * (1.0 - step / steps) + 0.05
        length = np.maximum(np.linalg.norm(force, axis=1, keepdims=True), 1e-12)
        p += force * np.minimum(1.0, cap / length)
    pos[rows] = p


def _accumulate(force: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    for axis in range(3):
        force[:, axis] += np.bincount(index, weights=values[:, axis], minlength=len(force))
