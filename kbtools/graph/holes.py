"""Workflow holes: walks over the process edges of a business bank (seed 000, "What Is Next").

Implements the conventions of ``.notes/BUSINESS.md``. Entries of kind ``step``, ``decision`` and
``artifact`` take part when their metadata names a ``"flow"``; ``role`` entries own steps. Only
trusted process edges (``precedes``, ``produces``, ``requires``, ``owned_by``) are walked: an
``auto`` link is a proposal, not a declared flow. Declarations (metadata booleans): ``start``,
``end`` on steps/decisions, ``input``, ``output`` on artifacts.

Hole kinds and their severity:

============================  ========  ==========================================================
hole                          severity  why
============================  ========  ==========================================================
``dead_end``                  high      work stops at a step that is not an end
``one_branch``                high      an outcome of a decision has nowhere to go
``closed_loop``               high      work that enters the loop never finishes
``unproduced_input``          high      a step waits for something nobody makes
``unreachable``               medium    a documented step never runs as drawn (dead documentation)
``no_owner``                  medium    nobody is accountable for the step (it may still run)
``unused_output``             low       effort spent on something nobody uses (waste, or a missing consumer)
============================  ========  ==========================================================

Where a flow declares no start, its steps with no incoming ``precedes`` from the same flow are its
starts; reachability follows ``precedes`` within the flow. A successor in another flow (a hand-off)
counts as a successor. Each question names the owner's role when it is known ("Ask the Sales rep:
..."): the step's own role, for artifacts the role of the step that needs or makes it, for steps
without an owner the role that owns most of the flow.

>>> import polars as pl, json
>>> entries = pl.DataFrame({"id": ["s1", "d1", "r1"], "kind": ["step", "decision", "role"],
...     "title": ["Receive order", "Approve discount?", "Sales rep"],
...     "metadata": [json.dumps({"flow": "sales", "start": True}), json.dumps({"flow": "sales", "end": True}),
...                  "{}"]})
>>> edges = pl.DataFrame({"src": ["s1", "d1", "s1", "d1"], "dst": ["d1", "s1", "r1", "r1"],
...     "type": ["precedes", "precedes", "owned_by", "owned_by"], "source": ["author"] * 4,
...     "note": [None, "yes", None, None]})
>>> workflow_holes(entries, edges).select("hole", "question").rows()[0][1]
"Ask the Sales rep: Decision 'Approve discount?' has only a 'yes' branch: what happens when the answer is 'no'?"
"""

from __future__ import annotations

import igraph as ig
import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.vocab import TRUSTED_SOURCES

__all__ = ["HOLE_KINDS", "HOLE_SEVERITY", "workflow_holes", "process_flows"]

#: Hole kinds in report order.
HOLE_KINDS: tuple[str, ...] = ("dead_end", "one_branch", "closed_loop", "unproduced_input",
                               "unreachable", "no_owner", "unused_output")
#: Severity of each hole kind (see the module doc for the reasons).
HOLE_SEVERITY: dict[str, str] = {
    "dead_end": "high", "one_branch": "high", "closed_loop": "high", "unproduced_input": "high",
    "unreachable": "medium", "no_owner": "medium", "unused_output": "low",
}
_SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}
_HOLE_SCHEMA = {"id": pl.String, "title": pl.String, "flow": pl.String, "hole": pl.String,
                "severity": pl.String, "explanation": pl.String, "question": pl.String}
_FLOW_SCHEMA = {"flow": pl.String, "start_steps": pl.List(pl.String), "end_steps": pl.List(pl.String),
                "steps": pl.Int64, "artifacts": pl.Int64, "owners": pl.List(pl.String), "holes": pl.Int64}
#: The other outcome of common branch labels, for the one_branch question.
_OPPOSITE = {
    "yes": "no", "no": "yes", "true": "false", "false": "true", "approved": "refused",
    "approve": "refuse", "refused": "approved", "rejected": "approved", "accepted": "rejected",
    "pass": "fail", "passed": "failed", "fail": "pass", "failed": "passed", "valid": "invalid",
    "invalid": "valid", "ok": "not ok", "in stock": "out of stock", "out of stock": "in stock",
    "found": "not found", "complete": "incomplete", "paid": "unpaid", "available": "unavailable",
}


# --------------------------------------------------------------------------- the process frames


def _declared(key: str) -> pl.Expr:
    return (pl.col("metadata").str.json_path_match(f"$.{key}") == "true").fill_null(False).alias(key)


def _nodes(entries: pl.DataFrame) -> pl.DataFrame:
    """Steps, decisions and artifacts with a flow: id, kind, title, flow, start, end, input, output."""
    for col in ("id", "kind"):
        if col not in entries.columns:
            raise ValidationError(col, None, "entries need id and kind columns")
    if "metadata" not in entries.columns:
        entries = entries.with_columns(metadata=pl.lit(None, dtype=pl.String))
    title = pl.col("title") if "title" in entries.columns else pl.lit(None, dtype=pl.String)
    return (
        entries.filter(pl.col("kind").is_in(["step", "decision", "artifact"]))
        .select("id", "kind", pl.coalesce(title.cast(pl.String), pl.col("id")).alias("title"),
                pl.col("metadata").str.json_path_match("$.flow").alias("flow"),
                *[_declared(k) for k in ("start", "end", "input", "output")])
        .filter(pl.col("flow").is_not_null() & (pl.col("flow") != ""))
    )


def _owners(entries: pl.DataFrame) -> pl.DataFrame:
    """id and title of every entry an owned_by edge may point at (normally a role)."""
    title = pl.col("title") if "title" in entries.columns else pl.col("id")
    return entries.select("id", pl.coalesce(title, pl.col("id")).alias("title"))


def _process_edges(edges: pl.DataFrame, type_: str) -> pl.DataFrame:
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


class _Flows:
    """The process graph of a bank, computed once: nodes, edges, owners and the walks over them."""

    def __init__(self, entries: pl.DataFrame, edges: pl.DataFrame):
        nodes = _nodes(entries)
        self.steps = nodes.filter(pl.col("kind") != "artifact")
        self.artifacts = nodes.filter(pl.col("kind") == "artifact")
        step_ids = self.steps["id"].implode()
        self.prec = _process_edges(edges, "precedes").filter(
            pl.col("src").is_in(step_ids) & pl.col("dst").is_in(step_ids))
        self.produces = _process_edges(edges, "produces").filter(pl.col("src").is_in(step_ids))
        self.requires = _process_edges(edges, "requires").filter(pl.col("src").is_in(step_ids))
        owners = _owners(entries)
        self.owned = (_process_edges(edges, "owned_by").filter(pl.col("src").is_in(step_ids))
                      .join(owners.rename({"id": "dst", "title": "role"}), on="dst", how="inner"))
        self.title = dict(nodes.select("id", "title").iter_rows())
        self.flow = dict(nodes.select("id", "flow").iter_rows())
        self.owner = dict(self.owned.sort("role").unique("src", keep="first").select("src", "role").iter_rows())
        flow_roles = (self.owned.join(self.steps.select(pl.col("id").alias("src"), "flow"), on="src")
                      .group_by("flow", "role").len().sort(["flow", "len", "role"], descending=[False, True, False])
                      .unique("flow", keep="first"))
        self.flow_owner = dict(flow_roles.select("flow", "role").iter_rows())

    def role_for(self, step_id: str | None, flow: str) -> str:
        role = self.owner.get(step_id) if step_id else None
        return role or self.flow_owner.get(flow) or "flow owner"

    def starts(self) -> pl.DataFrame:
        """Start steps per flow: declared ones, else those with no incoming precedes from their flow."""
        inner = (self.prec.join(self.steps.select(pl.col("id").alias("src"), pl.col("flow").alias("f1")), on="src")
                 .join(self.steps.select(pl.col("id").alias("dst"), pl.col("flow").alias("f2")), on="dst")
                 .filter(pl.col("f1") == pl.col("f2")))
        has_in = inner["dst"].implode()
        declares = self.steps.group_by("flow").agg(pl.col("start").any().alias("declares"))
        return (self.steps.join(declares, on="flow")
                .filter(pl.when(pl.col("declares")).then(pl.col("start")).otherwise(~pl.col("id").is_in(has_in)))
                .select("id", "flow", "title"))

    def reachable(self) -> set[str]:
        """Steps some start of their own flow reaches along precedes within the flow."""
        ids = self.steps["id"].to_list()
        index = {v: i for i, v in enumerate(ids)}
        flow = self.steps["flow"].to_list()
        pairs = [(index[a], index[b]) for a, b in self.prec.select("src", "dst").iter_rows()
                 if flow[index[a]] == flow[index[b]]]
        root = len(ids)
        pairs += [(root, index[s]) for s in self.starts()["id"].to_list()]
        g = ig.Graph(n=root + 1, edges=pairs, directed=True)
        return {ids[i] for i in g.subcomponent(root, mode="out") if i != root}

    def loops(self) -> list[list[str]]:
        """Strongly connected sets of steps (2 or more) with no precedes leaving them and no end step."""
        ids = self.steps["id"].to_list()
        index = {v: i for i, v in enumerate(ids)}
        src = np.asarray([index[a] for a in self.prec["src"].to_list()], dtype=np.int64)
        dst = np.asarray([index[b] for b in self.prec["dst"].to_list()], dtype=np.int64)
        g = ig.Graph(n=len(ids), edges=np.column_stack([src, dst]).tolist(), directed=True)
        comp = np.asarray(g.connected_components(mode="strong").membership, dtype=np.int64)
        sizes = np.bincount(comp, minlength=comp.max(initial=-1) + 1)
        leaving = np.zeros(len(sizes), dtype=bool)
        leaving[comp[src][comp[src] != comp[dst]]] = True
        ends = self.steps["end"].to_numpy()
        has_end = np.zeros(len(sizes), dtype=bool)
        has_end[comp[ends]] = True
        closed = np.flatnonzero((sizes >= 2) & ~leaving & ~has_end)
        return [[ids[i] for i in np.flatnonzero(comp == c)] for c in closed.tolist()]


# --------------------------------------------------------------------------- hole finders


def _q(title: str) -> str:
    return "'" + title.replace("'", "’") + "'"


def _row(flows: _Flows, entry_id: str, hole: str, explanation: str, question: str, role: str) -> dict:
    return {"id": entry_id, "title": flows.title[entry_id], "flow": flows.flow[entry_id], "hole": hole,
            "severity": HOLE_SEVERITY[hole], "explanation": explanation, "question": f"Ask the {role}: {question}"}


def _step_holes(flows: _Flows) -> list[dict]:
    rows = []
    out_n = dict(flows.prec.group_by("src").len().iter_rows())
    for sid, kind, end in flows.steps.select("id", "kind", "end").iter_rows():
        t, f = _q(flows.title[sid]), flows.flow[sid]
        if kind == "step" and out_n.get(sid, 0) == 0 and not end:
            rows.append(_row(flows, sid, "dead_end",
                             f"Step {t} in flow '{f}' has no next step (no outgoing precedes) and is not "
                             f"declared an end step: work stops there.",
                             f"what happens after {t}? If the flow really ends there, mark it as an end step.",
                             flows.role_for(sid, f)))
        if kind == "decision" and out_n.get(sid, 0) < 2:
            rows.append(_one_branch(flows, sid))
    return rows


def _one_branch(flows: _Flows, sid: str) -> dict:
    t, f = _q(flows.title[sid]), flows.flow[sid]
    branches = flows.prec.filter(pl.col("src") == sid)
    if branches.height == 0:
        explanation = f"Decision {t} in flow '{f}' has no branches at all: no step follows any of its outcomes."
        question = f"Decision {t} has no branches: which step follows each outcome?"
    else:
        dst, note = branches.row(0)[1], branches.row(0)[2]
        label = (note or "").strip()
        shown = f"a '{label}' branch" if label else f"one branch (to {_q(flows.title[dst])})"
        other = _OPPOSITE.get(label.lower())
        otherwise = f"when the answer is '{other}'" if other else "in the other case"
        explanation = (f"Decision {t} in flow '{f}' has only {shown} (to {_q(flows.title[dst])}); the other "
                       f"outcome leads nowhere.")
        question = f"Decision {t} has only {shown}: what happens {otherwise}?"
    return _row(flows, sid, "one_branch", explanation, question, flows.role_for(sid, flows.flow[sid]))


def _artifact_holes(flows: _Flows) -> list[dict]:
    rows = []
    made = flows.produces.group_by("dst").agg(pl.col("src").sort().first())
    needed = flows.requires.group_by("dst").agg(pl.col("src").sort().first())
    made_by, needed_by = dict(made.iter_rows()), dict(needed.iter_rows())
    for aid, is_input, is_output in flows.artifacts.select("id", "input", "output").iter_rows():
        t, f = _q(flows.title[aid]), flows.flow[aid]
        if aid in needed_by and aid not in made_by and not is_input:
            user = needed_by[aid]
            rows.append(_row(flows, aid, "unproduced_input",
                             f"Artifact {t} in flow '{f}' is required by {_q(flows.title[user])}, but no step "
                             f"produces it and it is not declared an external input.",
                             f"where does {t} come from? Name the step that produces it, or mark it as an "
                             f"external input.", flows.role_for(user, f)))
        if aid in made_by and aid not in needed_by and not is_output:
            maker = made_by[aid]
            rows.append(_row(flows, aid, "unused_output",
                             f"Artifact {t} in flow '{f}' is produced by {_q(flows.title[maker])}, but no step "
                             f"requires it and it is not declared a flow output.",
                             f"who uses {t} once {_q(flows.title[maker])} has produced it? Name the step that "
                             f"needs it, or mark it as a flow output.", flows.role_for(maker, f)))
    return rows


def _walk_holes(flows: _Flows) -> list[dict]:
    rows = []
    reached = flows.reachable()
    starts = flows.starts().group_by("flow").agg(pl.col("title").sort())
    start_titles = dict(starts.iter_rows())
    owned = set(flows.owned["src"].to_list())
    for sid, kind in flows.steps.select("id", "kind").iter_rows():
        t, f, noun = _q(flows.title[sid]), flows.flow[sid], kind.capitalize()
        if sid not in reached:
            named = ", ".join(_q(s) for s in start_titles.get(f, [])) or "none"
            rows.append(_row(flows, sid, "unreachable",
                             f"{noun} {t} in flow '{f}' cannot be reached from any start step of the flow "
                             f"(starts: {named}): as drawn, it never runs.",
                             f"which step leads to {t}? Or is it a start step of its own?",
                             flows.role_for(sid, f)))
        if sid not in owned:
            rows.append(_row(flows, sid, "no_owner",
                             f"{noun} {t} in flow '{f}' has no owner (no owned_by link to a role): nobody is "
                             f"accountable for it.", f"who owns {t}?", flows.role_for(None, f)))
    for members in flows.loops():
        names = sorted((flows.title[m], m) for m in members)
        first = names[0][1]
        listed = ", ".join(_q(n) for n, _ in names)
        rows.append(_row(flows, first, "closed_loop",
                         f"Steps {listed} in flow '{flows.flow[first]}' form a loop with no way out and no end "
                         f"step: work that enters it never finishes.",
                         f"how does work leave the loop of {listed}? Which condition ends it, and where does "
                         f"it go next?", flows.role_for(first, flows.flow[first])))
    return rows


def workflow_holes(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """The holes of every process flow: frame (id, title, flow, hole, severity, explanation, question).

    One row per hole (an entry may have several kinds of hole), sorted by flow, severity, hole kind
    and title. See the module doc for the kinds, their severity and the rules.

    >>> import polars as pl
    >>> e = pl.DataFrame({"id": ["s"], "kind": ["step"], "title": ["Pack"], "metadata": ['{"flow": "ship"}']})
    >>> workflow_holes(e, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String,
    ...                                        "source": pl.String}))["hole"].to_list()
    ['dead_end', 'no_owner']
    """
    flows = _Flows(entries, edges)
    rows = _step_holes(flows) + _artifact_holes(flows) + _walk_holes(flows)
    if not rows:
        return pl.DataFrame(schema=_HOLE_SCHEMA)
    order = {h: i for i, h in enumerate(HOLE_KINDS)}
    rows.sort(key=lambda r: (r["flow"], _SEVERITY_RANK[r["severity"]], order[r["hole"]], r["title"], r["id"]))
    return pl.DataFrame(rows, schema=_HOLE_SCHEMA)


def process_flows(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """One row per flow: frame (flow, start_steps, end_steps, steps, artifacts, owners, holes).

    ``start_steps`` / ``end_steps``: titles of the starts (declared, else no incoming precedes) and
    of the steps where the flow stops (declared ends and steps with no successor); ``steps``:
    steps and decisions; ``owners``: role titles that own steps of the flow; ``holes``: the number of
    rows :func:`workflow_holes` reports for it.

    >>> import polars as pl
    >>> e = pl.DataFrame({"id": ["a", "b"], "kind": ["step", "step"], "title": ["Pick", "Pack"],
    ...                   "metadata": ['{"flow": "ship"}', '{"flow": "ship", "end": true}']})
    >>> ed = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["precedes"], "source": ["author"]})
    >>> process_flows(e, ed).select("flow", "start_steps", "end_steps", "holes").rows()
    [('ship', ['Pick'], ['Pack'], 2)]
    """
    flows = _Flows(entries, edges)
    if flows.steps.height + flows.artifacts.height == 0:
        return pl.DataFrame(schema=_FLOW_SCHEMA)
    has_out = flows.prec["src"].implode()
    ends = flows.steps.filter(pl.col("end") | ~pl.col("id").is_in(has_out))
    holes = workflow_holes(entries, edges).group_by("flow").len(name="holes")
    owners = (flows.owned.join(flows.steps.select(pl.col("id").alias("src"), "flow"), on="src")
              .group_by("flow").agg(pl.col("role").unique().sort().alias("owners")))
    all_flows = pl.concat([flows.steps.select("flow"), flows.artifacts.select("flow")]).unique().sort("flow")
    return (
        all_flows
        .join(flows.starts().group_by("flow").agg(pl.col("title").sort().alias("start_steps")), on="flow", how="left")
        .join(ends.group_by("flow").agg(pl.col("title").sort().alias("end_steps")), on="flow", how="left")
        .join(flows.steps.group_by("flow").len(name="steps"), on="flow", how="left")
        .join(flows.artifacts.group_by("flow").len(name="artifacts"), on="flow", how="left")
        .join(owners, on="flow", how="left")
        .join(holes, on="flow", how="left")
        .with_columns(pl.col("start_steps", "end_steps", "owners").fill_null([]),
                      pl.col("steps", "artifacts", "holes").fill_null(0))
        .select([pl.col(c).cast(t) for c, t in _FLOW_SCHEMA.items()])
    )
