"""Process flows of a bank: which steps, decisions and artifacts form which flow, declared or inferred.

A flow is **declared** when its entries name it in their metadata (``"flow": name``). Steps and
decisions without a declaration that are joined by trusted ``precedes`` edges form an **inferred**
flow (one per weakly connected component), named after its start step (a declared ``start``, else
the step with no predecessor in the component, the first by title); a step of its own with a
``produces`` or ``requires`` edge is a flow of one. Artifacts without a declaration join the flow
of the step that produces them (else of the step that requires them). Declarations keep priority.
Entries whose status is not ``active`` (archived, superseded) take no part.

Metadata read per node (all optional): ``start``, ``end`` (steps and decisions), ``input``,
``output`` (artifacts), ``gateway`` (a decision's gateway type: ``exclusive``, ``parallel``,
``inclusive``, ``event_based``, ``complex``), ``exception`` (a step that is an exception exit,
such as a BPMN boundary event: the edge into it is not its predecessor's normal way out),
``triggered`` (a step started by its own event, not by a flow: a BPMN event sub-process or
compensation handler; neither a start of its flow nor a dead end), ``adhoc`` (a step of an ad-hoc
sub-process: it runs in any order, so it needs no way in and no way out) and ``pool`` (the
participant whose pool holds the step: it owns the step where no role does).

>>> import polars as pl
>>> entries = pl.DataFrame({"id": ["a", "b"], "kind": ["step", "step"], "title": ["Pick", "Pack"],
...                         "metadata": ["{}", "{}"]})
>>> edges = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["precedes"], "source": ["author"]})
>>> flow_nodes(entries, edges).select("id", "flow", "declared").sort("id").rows()
[('a', 'Pick', False), ('b', 'Pick', False)]
"""

from __future__ import annotations

import json

import igraph as ig
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.vocab import TRUSTED_SOURCES

__all__ = ["GATEWAY_TYPES", "flow_nodes", "process_edges", "ProcessGraph"]

#: Gateway types a decision may declare (``metadata.gateway``); a decision without one is a choice.
GATEWAY_TYPES: tuple[str, ...] = ("exclusive", "parallel", "inclusive", "event_based", "complex")
_STEP_KINDS = ("step", "decision")
_NODE_SCHEMA = {"id": pl.String, "kind": pl.String, "title": pl.String, "flow": pl.String, "declared": pl.Boolean,
                "start": pl.Boolean, "end": pl.Boolean, "input": pl.Boolean, "output": pl.Boolean,
                "gateway": pl.String, "exception": pl.Boolean, "triggered": pl.Boolean, "adhoc": pl.Boolean,
                "pool": pl.String}


def _declared(key: str) -> pl.Expr:
    return (pl.col("metadata").str.json_path_match(f"$.{key}") == "true").fill_null(False).alias(key)


def _findings(text: str) -> list[dict]:
    """A ``broken`` declaration as a list of {element, problem} (an importer writes a JSON list;
    anything else a writer put there is read as one problem)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    items = value if isinstance(value, list) else [value]
    return [i if isinstance(i, dict) else {"element": "", "problem": str(i)} for i in items]


def process_edges(edges: pl.DataFrame, type_: str) -> pl.DataFrame:
    """Trusted edges of one process type without self-loops: src, dst, note (first of duplicates).

    >>> e = pl.DataFrame({"src": ["a", "a"], "dst": ["b", "b"], "type": ["precedes"] * 2, "source": ["auto", "author"]})
    >>> process_edges(e, "precedes").rows()
    [('a', 'b', None)]
    """
    for col in ("src", "dst", "type", "source"):
        if col not in edges.columns:
            raise ValidationError(col, None, "edges need src, dst, type and source columns")
    note = pl.col("note") if "note" in edges.columns else pl.lit(None, dtype=pl.String)
    return (
        edges.filter((pl.col("type") == type_) & pl.col("source").is_in(sorted(TRUSTED_SOURCES))
                     & (pl.col("src") != pl.col("dst")))
        .select("src", "dst", note.cast(pl.String).alias("note"))
        .unique(["src", "dst"], keep="first", maintain_order=True)
    )


def _candidates(entries: pl.DataFrame) -> pl.DataFrame:
    for col in ("id", "kind"):
        if col not in entries.columns:
            raise ValidationError(col, None, "entries need id and kind columns")
    if "metadata" not in entries.columns:
        entries = entries.with_columns(metadata=pl.lit(None, dtype=pl.String))
    if "status" in entries.columns:
        entries = entries.filter(pl.col("status").is_null() | (pl.col("status") == "active"))
    title = pl.col("title") if "title" in entries.columns else pl.lit(None, dtype=pl.String)
    return (
        entries.filter(pl.col("kind").is_in([*_STEP_KINDS, "artifact"]))
        .select("id", "kind", pl.coalesce(title.cast(pl.String), pl.col("id")).alias("title"),
                pl.col("metadata").str.json_path_match("$.flow").alias("flow"),
                *[_declared(k) for k in ("start", "end", "input", "output", "exception", "triggered", "adhoc")],
                pl.col("metadata").str.json_path_match("$.gateway").alias("gateway"),
                pl.col("metadata").str.json_path_match("$.pool").alias("pool"))
        .with_columns(pl.when(pl.col("flow") == "").then(None).otherwise(pl.col("flow")).alias("flow"))
    )


def flow_nodes(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Every step, decision and artifact that belongs to a flow, declared or inferred: id, kind,
    title, flow, declared, start, end, input, output, gateway, exception, triggered, adhoc, pool
    (see the module doc)."""
    nodes = _candidates(entries)
    declared = nodes.filter(pl.col("flow").is_not_null()).with_columns(declared=pl.lit(True))
    taken = set(declared["flow"].to_list())
    loose = nodes.filter(pl.col("flow").is_null())
    steps = loose.filter(pl.col("kind").is_in(_STEP_KINDS))
    prec = process_edges(edges, "precedes")
    inner = prec.filter(pl.col("src").is_in(steps["id"].implode()) & pl.col("dst").is_in(steps["id"].implode()))
    touching = pl.concat([prec.select(pl.col("src").alias("id")), prec.select(pl.col("dst").alias("id")),
                          process_edges(edges, "produces").select(pl.col("src").alias("id")),
                          process_edges(edges, "requires").select(pl.col("src").alias("id"))])["id"].implode()
    steps = steps.filter(pl.col("id").is_in(touching) & ((pl.col("kind") == "step") | pl.col("id").is_in(prec["src"].implode())
                                                          | pl.col("id").is_in(prec["dst"].implode())))
    inferred = _infer(steps, inner, taken)
    placed = pl.concat([declared.select(list(_NODE_SCHEMA)), inferred.select(list(_NODE_SCHEMA))])
    artifacts = _artifact_flows(loose.filter(pl.col("kind") == "artifact"), placed, edges)
    return pl.concat([placed, artifacts.select(list(_NODE_SCHEMA))]).select(
        [pl.col(c).cast(t) for c, t in _NODE_SCHEMA.items()])


def _infer(steps: pl.DataFrame, inner: pl.DataFrame, taken: set[str]) -> pl.DataFrame:
    """Weakly connected components of undeclared steps, each named after its start step."""
    if steps.height == 0:
        return steps.with_columns(declared=pl.lit(False))
    steps = steps.sort("title", "id")
    ids = steps["id"].to_list()
    index = {v: i for i, v in enumerate(ids)}
    pairs = [(index[a], index[b]) for a, b in inner.select("src", "dst").iter_rows() if a in index and b in index]
    member = ig.Graph(n=len(ids), edges=pairs, directed=True).connected_components(mode="weak").membership
    has_in = {b for _, b in pairs}
    start = steps["start"].to_list()
    names: dict[int, str] = {}
    for comp in sorted(set(member), key=member.index):
        nodes = [i for i in range(len(ids)) if member[i] == comp]  # in title order
        first = next((i for i in nodes if start[i]), None)
        first = first if first is not None else next((i for i in nodes if i not in has_in), nodes[0])
        name = steps["title"][first]
        if name in taken:
            name = f"{name} ({ids[first]})"
        taken.add(name)
        names[comp] = name
    return steps.with_columns(pl.Series("flow", [names[m] for m in member], dtype=pl.String), declared=pl.lit(False))


def _artifact_flows(artifacts: pl.DataFrame, placed: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """Undeclared artifacts in the flow of their producer, else of the step that requires them."""
    flows = placed.select(pl.col("id").alias("src"), "flow", "declared")
    by = []
    for rank, type_ in enumerate(("produces", "requires")):
        by.append(process_edges(edges, type_).join(flows, on="src").select(
            pl.col("dst").alias("id"), "flow", "declared", pl.lit(rank).alias("_rank"), "src"))
    chosen = (pl.concat(by).sort("_rank", "src").unique("id", keep="first")
              if by else pl.DataFrame(schema={"id": pl.String, "flow": pl.String, "declared": pl.Boolean}))
    return artifacts.drop("flow").join(chosen.select("id", "flow", "declared"), on="id", how="inner")


class ProcessGraph:
    """The process graph of a bank, computed once: nodes, edges, owners and the walks over them."""

    def __init__(self, entries: pl.DataFrame, edges: pl.DataFrame):
        nodes = flow_nodes(entries, edges)
        self.nodes = nodes
        self.steps = nodes.filter(pl.col("kind") != "artifact")
        self.artifacts = nodes.filter(pl.col("kind") == "artifact")
        step_ids = self.steps["id"].implode()
        exceptions = self.steps.filter(pl.col("exception"))["id"].implode()
        self.prec = process_edges(edges, "precedes").filter(
            pl.col("src").is_in(step_ids) & pl.col("dst").is_in(step_ids)).with_columns(
            pl.col("dst").is_in(exceptions).alias("exception"))
        self.produces = process_edges(edges, "produces").filter(pl.col("src").is_in(step_ids)
                                                               & pl.col("dst").is_in(self.artifacts["id"].implode()))
        self.requires = process_edges(edges, "requires").filter(pl.col("src").is_in(step_ids)
                                                               & pl.col("dst").is_in(self.artifacts["id"].implode()))
        title = pl.col("title") if "title" in entries.columns else pl.col("id")
        owners = entries.select(pl.col("id").alias("dst"), pl.coalesce(title, pl.col("id")).alias("role"))
        self.owned = process_edges(edges, "owned_by").filter(pl.col("src").is_in(step_ids)).join(owners, on="dst", how="inner")
        self.title = dict(nodes.select("id", "title").iter_rows())
        self.flow = dict(nodes.select("id", "flow").iter_rows())
        self.kind = dict(nodes.select("id", "kind").iter_rows())
        self.gateway = dict(self.steps.select("id", "gateway").iter_rows())
        self.declared = dict(nodes.select("flow", "declared").unique("flow").iter_rows())
        self.owner = dict(self.owned.sort("role").unique("src", keep="first").select("src", "role").iter_rows())
        self.pool = dict(self.steps.filter(pl.col("pool").is_not_null()).select("id", "pool").iter_rows())
        self.flow_pool = {self.flow[i]: p for i, p in sorted(self.pool.items())}
        self.triggered = frozenset(self.steps.filter(pl.col("triggered"))["id"].to_list())
        self.adhoc = frozenset(self.steps.filter(pl.col("adhoc"))["id"].to_list())
        #: steps that need no way in and no way out by design (triggered, ad-hoc)
        self.free = self.triggered | self.adhoc
        broken = entries.filter(pl.col("id").is_in(step_ids)).select(
            "id", pl.col("metadata").str.json_path_match("$.broken").alias("broken")) \
            if "metadata" in entries.columns else pl.DataFrame(schema={"id": pl.String, "broken": pl.String})
        self.broken = {i: _findings(b) for i, b in broken.drop_nulls("broken").iter_rows()}
        flow_roles = (self.owned.join(self.steps.select(pl.col("id").alias("src"), "flow"), on="src")
                      .group_by("flow", "role").len().sort(["flow", "len", "role"], descending=[False, True, False])
                      .unique("flow", keep="first"))
        self.flow_owner = dict(flow_roles.select("flow", "role").iter_rows())
        same = [(a, b, ex, note) for a, b, ex, note in self.prec.select("src", "dst", "exception", "note").iter_rows()
                if self.flow[a] == self.flow[b]]
        self.succ: dict[str, list[tuple[str, bool, str | None]]] = {}
        self.pred: dict[str, list[str]] = {}
        for a, b, ex, note in sorted(same, key=lambda r: (self.title[r[1]], r[1])):
            self.succ.setdefault(a, []).append((b, ex, note))
            self.pred.setdefault(b, []).append(a)

    def role_for(self, step_id: str | None, flow: str) -> str:
        role = self.owner.get(step_id) if step_id else None
        pool = (self.pool.get(step_id) if step_id else None) or self.flow_pool.get(flow)
        return role or self.flow_owner.get(flow) or pool or "flow owner"

    def starts(self) -> pl.DataFrame:
        """Start steps per flow: declared ones, else those with no incoming precedes from their flow
        (a triggered step is started by its own event, never a start of its flow)."""
        has_in = list(self.pred)
        declares = self.steps.group_by("flow").agg(pl.col("start").any().alias("declares"))
        return (self.steps.join(declares, on="flow")
                .filter(pl.when(pl.col("declares")).then(pl.col("start"))
                        .otherwise(~pl.col("id").is_in(has_in) & ~pl.col("triggered")))
                .select("id", "flow", "title"))

    def reachable(self) -> set[str]:
        """Steps some start of their own flow, a triggered step or an ad-hoc step reaches along
        precedes within the flow."""
        return self.walk([*self.starts()["id"].to_list(), *sorted(self.free)])

    def walk(self, roots, *, stop=frozenset(), avoid=frozenset()) -> set[str]:
        """Steps reached from ``roots`` along precedes within a flow (roots included); nodes in
        ``stop`` are reached but not walked past, nodes in ``avoid`` are never entered."""
        seen = {r for r in roots if r not in avoid}
        todo = [r for r in seen if r not in stop]
        while todo:
            node = todo.pop()
            for nxt, _, _ in self.succ.get(node, ()):
                if nxt not in seen and nxt not in avoid:
                    seen.add(nxt)
                    if nxt not in stop:
                        todo.append(nxt)
        return seen

    def loops(self) -> list[list[str]]:
        """Strongly connected sets of steps (2 or more) with no precedes leaving them and no end step."""
        ids = self.steps["id"].to_list()
        index = {v: i for i, v in enumerate(ids)}
        pairs = [(index[a], index[b]) for a, b in self.prec.select("src", "dst").iter_rows()]
        comp = ig.Graph(n=len(ids), edges=pairs, directed=True).connected_components(mode="strong").membership
        size: dict[int, int] = {}
        for c in comp:
            size[c] = size.get(c, 0) + 1
        leaving = {comp[a] for a, b in pairs if comp[a] != comp[b]}
        ends = {comp[i] for i, e in enumerate(self.steps["end"].to_list()) if e}
        closed = [c for c in sorted(size) if size[c] >= 2 and c not in leaving and c not in ends]
        return [[ids[i] for i in range(len(ids)) if comp[i] == c] for c in closed]
