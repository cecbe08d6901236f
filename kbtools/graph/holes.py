"""Workflow holes: walks over the process edges of a business bank (seed 000, "What Is Next").

The conventions are described in ``docs/design.md`` (Workflow holes). Steps, decisions and artifacts take part in
the flows of :mod:`kbtools.graph.flows` (declared by a ``"flow"`` in their metadata, or inferred
from ``precedes`` edges alone); ``role`` entries own steps. Only trusted process edges
(``precedes``, ``produces``, ``requires``, ``owned_by``) are walked: an ``auto`` link is a
proposal, not a declared flow. Declarations (metadata): ``start``, ``end`` on steps/decisions,
``input``, ``output`` on artifacts, ``gateway`` on decisions, ``exception`` on exception exits.

Hole kinds and their severity:

============================  ========  ==========================================================
hole                          severity  why
============================  ========  ==========================================================
``broken_reference``          high      the model names an element that is not there (a BPMN
                                        sequence flow to nowhere, a boundary event on no activity):
                                        the importer left it out, so the flow as read is incomplete
``dead_end``                  high      work stops at a step that is not an end (also: its only
                                        way out is an exception path)
``one_branch``                high      a split has one outgoing path: its other outcome leads nowhere
``closed_loop``               high      work that enters the loop never finishes
``deadlock``                  high      a parallel join waits for a path that an exclusive split skips
``runs_twice``                high      a step after a parallel split, or after two starts of its flow
                                        (a fake join), is reached by two paths with no join in
                                        between: it runs once per path
``unproduced_input``          high      a step waits for something nobody makes
``unreachable``               medium    a documented step never runs as drawn (one row for the first
                                        unreachable step, listing what it cuts off)
``no_owner``                  medium    nobody is accountable for the step (one row for a flow
                                        with no owner at all); a step in a pool is owned by its
                                        participant, unless ``lanes=True`` asks for a lane
``unused_output``             low       effort spent on something nobody uses (waste, or a missing consumer)
============================  ========  ==========================================================

A decision with two or more incoming paths and at most one outgoing path is a **join** (a merging
gateway): never a ``one_branch``. An edge into an ``exception`` step (a boundary event) is an
exception exit, not the normal way out. Parallel semantics follow BPMN: a ``parallel`` gateway
splits into paths that all run; a ``parallel`` (or ``inclusive``/``complex``) join waits for its
incoming paths; an ``exclusive``, ``event_based`` or ``inclusive`` split (or a plain decision)
sends work down one (or some) of its paths.

Where a flow declares no start, its steps with no incoming ``precedes`` from the same flow are its
starts; reachability follows ``precedes`` within the flow, from the starts and from the steps
that need no way in (``triggered``: an event sub-process, a compensation handler; ``adhoc``: the
activities of an ad-hoc sub-process), which are no dead ends either. Two or more starts of one
flow are two tokens: a step both reach with no merging gateway in between runs twice (a fake
join), as after a parallel split. A successor in another flow (a hand-off)
counts as a successor. Each question names the owner's role when it is known ("Ask the Sales rep:
...", "Ask Sales: ...", see :func:`question_for`): the step's own role, for artifacts the role of the step that needs or makes it, for steps
without an owner the role that owns most of the flow (else the participant whose pool holds it).

>>> import polars as pl, json
>>> entries = pl.DataFrame({"id": ["s1", "d1", "r1"], "kind": ["step", "decision", "role"],
...     "title": ["Receive order", "Approve discount?", "Sales rep"],
...     "metadata": [json.dumps({"flow": "sales", "start": True}), json.dumps({"flow": "sales", "end": True}),
...                  "{}"]})
>>> edges = pl.DataFrame({"src": ["s1", "d1", "s1", "d1"], "dst": ["d1", "s1", "r1", "r1"],
...     "type": ["precedes", "precedes", "owned_by", "owned_by"], "source": ["author"] * 4,
...     "note": [None, "yes", None, None]})
>>> find_holes(entries, edges).select("hole", "question").rows()[0][1]
"Ask the Sales rep: Decision 'Approve discount?' has only a 'yes' branch: what happens when the answer is 'no'?"
"""

from __future__ import annotations

import re

import polars as pl

from kbtools.graph.flows import ProcessGraph

__all__ = ["HOLE_KINDS", "HOLE_SEVERITY", "DEPARTMENT_NAMES", "find_holes", "find_flows", "question_for"]

#: Hole kinds in report order.
HOLE_KINDS: tuple[str, ...] = ("broken_reference", "dead_end", "one_branch", "closed_loop", "deadlock",
                               "runs_twice", "unproduced_input", "unreachable", "no_owner", "unused_output")
#: Severity of each hole kind (see the module doc for the reasons).
HOLE_SEVERITY: dict[str, str] = {
    "broken_reference": "high", "dead_end": "high", "one_branch": "high", "closed_loop": "high",
    "deadlock": "high", "runs_twice": "high", "unproduced_input": "high", "unreachable": "medium",
    "no_owner": "medium", "unused_output": "low",
}
_SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}
_HOLE_SCHEMA = {"id": pl.String, "title": pl.String, "flow": pl.String, "hole": pl.String,
                "severity": pl.String, "explanation": pl.String, "question": pl.String,
                "affects": pl.List(pl.String), "declared": pl.Boolean}
_FLOW_SCHEMA = {"flow": pl.String, "declared": pl.Boolean, "start_steps": pl.List(pl.String),
                "end_steps": pl.List(pl.String), "dead_ends": pl.List(pl.String), "steps": pl.Int64, "artifacts": pl.Int64,
                "owners": pl.List(pl.String), "holes": pl.Int64}
#: The other outcome of common branch labels, for the one_branch question.
_OPPOSITE = {
    "yes": "no", "no": "yes", "true": "false", "false": "true", "approved": "refused",
    "approve": "refuse", "refused": "approved", "rejected": "approved", "accepted": "rejected",
    "pass": "fail", "passed": "failed", "fail": "pass", "failed": "passed", "valid": "invalid",
    "invalid": "valid", "ok": "not ok", "in stock": "out of stock", "out of stock": "in stock",
    "found": "not found", "complete": "incomplete", "paid": "unpaid", "available": "unavailable",
}
_SPAWNS = {"parallel"}  # splits whose paths all run
_WAITS = {"parallel", "inclusive", "complex"}  # joins that wait for their incoming paths
_CHOOSES = {None, "exclusive", "event_based", "inclusive"}  # splits that may skip paths
_GATEWAY_NOUN = {"exclusive": "Exclusive gateway", "parallel": "Parallel gateway", "inclusive": "Inclusive gateway",
                 "event_based": "Event-based gateway", "complex": "Complex gateway"}


#: One-word role names read as a department, asked without "the" ("Ask Finance"); so are acronyms
#: (IT, HR; not a chief's title: "Ask the CFO") and words ending in -s or -ing (Sales, Operations, Purchasing).
DEPARTMENT_NAMES: frozenset[str] = frozenset({
    "finance", "legal", "procurement", "support", "security", "compliance", "management", "administration",
    "production", "dispatch", "reception", "treasury", "payroll", "audit", "quality", "research", "fulfilment",
    "fulfillment",
})
_CHIEF = re.compile(r"C[A-Z]{1,2}O")  # CEO, CFO, CISO: a person ("Ask the CFO"), not a department
_DETERMINERS = ("the ", "a ", "an ", "our ", "your ", "their ", "each ", "every ")


def question_for(role: str, question: str) -> str:
    """``question`` addressed to ``role`` the way one says it: a name that has its own article is
    asked as it is ("Ask the warehouse"), a department name without one ("Ask Sales", "Ask IT",
    "Ask Finance"), any other role with "the" ("Ask the Finance team", "Ask the Account manager").

    >>> [question_for(r, "who?") for r in ("Sales", "Finance team", "the warehouse", "Account manager")]
    ['Ask Sales: who?', 'Ask the Finance team: who?', 'Ask the warehouse: who?', 'Ask the Account manager: who?']
    """
    name = " ".join(role.split())
    word = name.lower()
    department = " " not in name and (
        (name.isupper() and len(name) > 1 and not _CHIEF.fullmatch(name)) or word in DEPARTMENT_NAMES
        or (len(word) > 3 and (word.endswith("ing") or (word.endswith("s") and not word.endswith("ss")))))
    whom = name if department or word.startswith(_DETERMINERS) else f"the {name}"
    return f"Ask {whom}: {question}"


# --------------------------------------------------------------------------- helpers


def _q(title: str) -> str:
    return "'" + title.replace("'", "’") + "'"


def _listed(flows: ProcessGraph, ids, limit: int = 6) -> str:
    names = [f"{_q(flows.title[i])} ({i})" for i in sorted(ids, key=lambda i: (flows.title[i], i))]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _noun(flows: ProcessGraph, node: str) -> str:
    return _GATEWAY_NOUN.get(flows.gateway.get(node) or "", flows.kind[node].capitalize())


def _row(flows: ProcessGraph, entry_id: str, hole: str, explanation: str, question: str, role: str,
         affects=()) -> dict:
    flow = flows.flow[entry_id]
    return {"id": entry_id, "title": flows.title[entry_id], "flow": flow, "hole": hole,
            "severity": HOLE_SEVERITY[hole], "explanation": explanation, "question": question_for(role, question),
            "affects": sorted(affects), "declared": flows.declared[flow]}


def _first_of(flows: ProcessGraph, candidates: set[str]) -> list[str]:
    """The entry points of a set of steps: members with no predecessor inside the set; where a
    cycle has none, its first member by title. Each root comes with what it leads to in the set."""
    roots = sorted((n for n in candidates if not any(p in candidates for p in flows.pred.get(n, ()))),
                   key=lambda n: (flows.title[n], n))
    covered = flows.walk(roots, avoid=frozenset(flows.steps["id"].to_list()) - candidates) if roots else set()
    for n in sorted(candidates - covered, key=lambda n: (flows.title[n], n)):
        if n not in covered:
            roots.append(n)
            covered |= flows.walk([n], avoid=frozenset(flows.steps["id"].to_list()) - candidates)
    return roots


# --------------------------------------------------------------------------- hole finders


def _step_holes(flows: ProcessGraph) -> list[dict]:
    rows = []
    out_all = dict(flows.prec.group_by("src").len().iter_rows())
    out_normal = dict(flows.prec.filter(~pl.col("exception")).group_by("src").len().iter_rows())
    in_n = dict(flows.prec.group_by("dst").len().iter_rows())
    for sid, kind, end in flows.steps.select("id", "kind", "end").iter_rows():
        t, f = _q(flows.title[sid]), flows.flow[sid]
        join = kind == "decision" and in_n.get(sid, 0) >= 2 and out_all.get(sid, 0) <= 1
        if (kind == "step" or join) and out_normal.get(sid, 0) == 0 and not end and sid not in flows.free:
            exits = [flows.title[d] for d, ex, _ in flows.succ.get(sid, ()) if ex]
            if exits:
                why = (f"{_noun(flows, sid)} {t} in flow '{f}' has no normal way out: its only outgoing paths "
                       f"are exception exits ({', '.join(_q(e) for e in exits)}), so work that finishes it "
                       f"normally stops there.")
            else:
                why = (f"{_noun(flows, sid)} {t} in flow '{f}' has no next step (no outgoing precedes) and is "
                       f"not declared an end step: work stops there.")
            question = (f"what happens after {t} when it finishes normally? Only the exception path leads on."
                        if exits else f"what happens after {t}? If the flow really ends there, mark it as an end step.")
            rows.append(_row(flows, sid, "dead_end", why, question, flows.role_for(sid, f)))
        if kind == "decision" and not join and out_all.get(sid, 0) < 2:
            rows.append(_one_branch(flows, sid))
    return rows


def _one_branch(flows: ProcessGraph, sid: str) -> dict:
    t, f, noun = _q(flows.title[sid]), flows.flow[sid], _noun(flows, sid)
    branches = flows.prec.filter(pl.col("src") == sid)
    if branches.height == 0:
        explanation = f"{noun} {t} in flow '{f}' has no branches at all: no step follows any of its outcomes."
        question = f"{noun} {t} has no branches: which step follows each outcome?"
    elif flows.gateway.get(sid) in _SPAWNS:
        dst = _q(flows.title[branches.row(0)[1]])
        explanation = f"{noun} {t} in flow '{f}' splits into only one path (to {dst}): nothing runs beside it."
        question = f"{noun} {t} splits into one path (to {dst}): which work should run in parallel with it?"
    else:
        dst, note = branches.row(0)[1], branches.row(0)[2]
        label = (note or "").strip()
        shown = f"a '{label}' branch" if label else "one branch"
        other = _OPPOSITE.get(label.lower())
        otherwise = f"when the answer is '{other}'" if other else "in the other case"
        explanation = (f"{noun} {t} in flow '{f}' has only {shown} (to {_q(flows.title[dst])}); the other "
                       f"outcome leads nowhere.")
        target = "" if label else f" (to {_q(flows.title[dst])})"
        question = f"{noun} {t} has only {shown}{target}: what happens {otherwise}?"
    return _row(flows, sid, "one_branch", explanation, question, flows.role_for(sid, f))


def _artifact_holes(flows: ProcessGraph) -> list[dict]:
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


def _unreachable_holes(flows: ProcessGraph) -> list[dict]:
    rows = []
    reached = flows.reachable()
    start_titles = dict(flows.starts().group_by("flow").agg(pl.col("title").sort()).iter_rows())
    lost = set(flows.steps["id"].to_list()) - reached
    others = frozenset(flows.steps["id"].to_list()) - lost
    for root in _first_of(flows, lost):
        t, f = _q(flows.title[root]), flows.flow[root]
        cut = flows.walk([root], avoid=others) - {root}
        named = ", ".join(_q(s) for s in start_titles.get(f, [])) or "none"
        also = (f" It cuts off {len(cut)} more step{'s' if len(cut) != 1 else ''} that only it leads to: "
                f"{_listed(flows, cut)}." if cut else "")
        rows.append(_row(flows, root, "unreachable",
                         f"{_noun(flows, root)} {t} in flow '{f}' cannot be reached from any start step of the "
                         f"flow (starts: {named}): as drawn, it never runs.{also}",
                         f"which step leads to {t}? Or is it a start step of its own?",
                         flows.role_for(root, f), affects=cut))
    return rows


def _owner_holes(flows: ProcessGraph, lanes: bool) -> list[dict]:
    """Steps no role owns; a step in a pool is owned by its participant unless ``lanes`` asks for
    the lanes inside the pool."""
    rows = []
    owned = set(flows.owned["src"].to_list())
    if not lanes:
        owned |= set(flows.pool)
    starts = dict(flows.starts().sort("title", "id").group_by("flow", maintain_order=True).agg(pl.col("id").first()).iter_rows())
    for flow, members in flows.steps.sort("title", "id").group_by("flow", maintain_order=True).agg("id").iter_rows():
        pool = flows.flow_pool.get(flow)
        if not owned.intersection(members):
            first = starts.get(flow, members[0])
            why = (f"Flow '{flow}' lies in the pool of {_q(pool)} but draws no lanes: none of its {len(members)} "
                   f"steps and decisions is in a lane, so no role inside the participant is accountable for it."
                   if pool else
                   f"Flow '{flow}' has no owner at all: none of its {len(members)} steps and decisions "
                   f"is owned by a role (no owned_by links, no lanes), so nobody is accountable for it.")
            question = (f"which role in {_q(pool)} does each step of the flow '{flow}'? Draw the lanes."
                        if pool else f"who owns the flow '{flow}'? Name the role responsible for each of its steps.")
            rows.append(_row(flows, first, "no_owner", why, question, flows.role_for(None, flow),
                             affects=set(members) - {first}))
            continue
        for sid in members:
            if sid not in owned:
                t = _q(flows.title[sid])
                why = (f"{_noun(flows, sid)} {t} in flow '{flow}' is in the pool of {_q(pool)} but in no lane: no "
                       f"role inside the participant is accountable for it." if pool and sid in flows.pool else
                       f"{_noun(flows, sid)} {t} in flow '{flow}' has no owner (no owned_by link to a "
                       f"role): nobody is accountable for it.")
                rows.append(_row(flows, sid, "no_owner", why,
                                 f"which lane of {_q(pool)} does {t}?" if pool and sid in flows.pool else f"who owns {t}?",
                                 flows.role_for(None, flow)))
    return rows


def _broken_holes(flows: ProcessGraph) -> list[dict]:
    """The broken elements an importer left out, each on the entry nearest to it."""
    rows = []
    for sid in sorted(flows.broken, key=lambda i: (flows.title.get(i, i), i)):
        if sid not in flows.flow:
            continue
        t, f = _q(flows.title[sid]), flows.flow[sid]
        for item in flows.broken[sid]:
            element = item.get("element") or "(an element without an id)"
            rows.append(_row(flows, sid, "broken_reference",
                             f"The model's element {element} near {t} in flow '{f}' is broken and was left out at "
                             f"import: {item.get('problem')}. The flow as read lacks it, so its other holes may be "
                             f"consequences.",
                             f"what should {element} connect? Fix the reference in the model and ingest it again.",
                             flows.role_for(sid, f)))
    return rows


def _loop_holes(flows: ProcessGraph) -> list[dict]:
    rows = []
    for members in flows.loops():
        names = sorted((flows.title[m], m) for m in members)
        first = names[0][1]
        listed = ", ".join(_q(n) for n, _ in names)
        rows.append(_row(flows, first, "closed_loop",
                         f"Steps {listed} in flow '{flows.flow[first]}' form a loop with no way out and no end "
                         f"step: work that enters it never finishes.",
                         f"how does work leave the loop of {listed}? Which condition ends it, and where does "
                         f"it go next?", flows.role_for(first, flows.flow[first]), affects=set(members) - {first}))
    return rows


def _waiting_joins(flows: ProcessGraph) -> frozenset[str]:
    return frozenset(n for n, g in flows.gateway.items() if g in _WAITS and len(flows.pred.get(n, ())) >= 2)


def _twice_holes(flows: ProcessGraph) -> list[dict]:
    """After a parallel split, the first steps that two of its paths reach with no waiting join between."""
    rows, seen = [], set()
    joins = _waiting_joins(flows)
    for split, gateway in sorted(flows.gateway.items()):
        paths = flows.succ.get(split, ())
        if gateway not in _SPAWNS or len(paths) < 2:
            continue
        count: dict[str, int] = {}
        for start, _, _ in paths:
            for node in flows.walk([start], stop=joins, avoid={split}) - joins:
                count[node] = count.get(node, 0) + 1
        twice = {n for n, c in count.items() if c >= 2}
        for root in _first_of(flows, twice):
            if root in seen:
                continue
            seen.add(root)
            t, f = _q(flows.title[root]), flows.flow[root]
            after = flows.walk([root], avoid=frozenset(flows.steps["id"].to_list()) - twice) - {root}
            also = f" So do the {len(after)} step(s) after it: {_listed(flows, after)}." if after else ""
            rows.append(_row(flows, root, "runs_twice",
                             f"{_noun(flows, root)} {t} in flow '{f}' is reached by {count[root]} paths of the "
                             f"parallel split {_q(flows.title[split])} with no joining parallel gateway in "
                             f"between: it runs once per path.{also}",
                             f"should {t} run once per parallel path of {_q(flows.title[split])}? If not, join "
                             f"the paths with a parallel gateway before it.", flows.role_for(root, f), affects=after))
    rows += _fake_join_holes(flows, seen)
    return rows


def _fake_join_holes(flows: ProcessGraph, seen: set[str]) -> list[dict]:
    """Steps that two starts of one flow reach with no merging gateway in between (a fake join):
    each start is a token of its own, so the step runs once per start. An ad-hoc flow has no such
    starts (its activities are picked, not all started)."""
    rows = []
    merges = frozenset(n for n in flows.steps.filter(pl.col("kind") == "decision")["id"].to_list()
                       if len(flows.pred.get(n, ())) >= 2)
    for flow, starts in flows.starts().sort("title", "id").group_by("flow", maintain_order=True).agg("id").iter_rows():
        starts = [s for s in starts if s not in flows.adhoc]
        if len(starts) < 2:
            continue
        count: dict[str, list[str]] = {}
        for start in starts:
            for node in flows.walk([start], stop=merges) - merges:
                count.setdefault(node, []).append(start)
        twice = {n for n, c in count.items() if len(c) >= 2}
        for root in _first_of(flows, twice):
            if root in seen:
                continue
            seen.add(root)
            t, names = _q(flows.title[root]), ", ".join(_q(flows.title[s]) for s in count[root])
            after = flows.walk([root], avoid=frozenset(flows.steps["id"].to_list()) - twice) - {root}
            also = f" So do the {len(after)} step(s) after it: {_listed(flows, after)}." if after else ""
            rows.append(_row(flows, root, "runs_twice",
                             f"{_noun(flows, root)} {t} in flow '{flow}' is reached from {len(count[root])} starts of "
                             f"the flow ({names}) with no gateway joining their paths (a fake join): each start "
                             f"sends work to it, so it runs once per start.{also}",
                             f"should {t} run once per start ({names})? If the starts are alternatives, merge their "
                             f"paths with an exclusive gateway before it; if it must wait for both, join them with a "
                             f"parallel gateway.", flows.role_for(root, flow), affects=after))
    return rows


def _deadlock_holes(flows: ProcessGraph) -> list[dict]:
    """Parallel joins that wait for a path which an exclusive (or inclusive) split may not take."""
    rows = []
    for join in sorted(_waiting_joins(flows)):
        if flows.gateway.get(join) != "parallel":
            continue
        inputs = set(flows.pred[join])
        for split in sorted((n for n in flows.steps.filter(pl.col("kind") == "decision")["id"].to_list()
                             if flows.gateway.get(n) in _CHOOSES and len(flows.succ.get(n, ())) >= 2),
                            key=lambda n: (flows.title[n], n)):
            arrive = []
            for start, _, note in flows.succ[split]:
                reach = flows.walk([start], stop={join}, avoid={split})
                arrive.append((note, (reach & inputs) | ({split} if start == join else set())))
            union = set().union(*(a for _, a in arrive))
            short = [(note, a) for note, a in arrive if a and a < union]
            if len(union) < 2 or not short:
                continue
            note, got = short[0]
            t, f = _q(flows.title[join]), flows.flow[join]
            branch = f"the '{note}' branch" if note else "one of its branches"
            rows.append(_row(flows, join, "deadlock",
                             f"Parallel join {t} in flow '{f}' waits for all {len(inputs)} of its incoming paths, "
                             f"but the split {_q(flows.title[split])} sends work down only some of them "
                             f"({branch} arrives only from {_listed(flows, got)}): the join waits forever.",
                             f"should {t} wait for every path after {_q(flows.title[split])}? If only one of them "
                             f"runs, merge them with an exclusive gateway instead.", flows.role_for(join, f),
                             affects=union - got))
            break
    return rows


def find_holes(entries: pl.DataFrame, edges: pl.DataFrame, *, lanes: bool = False) -> pl.DataFrame:
    """The holes of every process flow, declared or inferred: frame (id, title, flow, hole, severity,
    explanation, question, affects, declared).

    One row per hole (an entry may have several kinds of hole), sorted by flow, severity, hole kind
    and title. ``affects`` lists the ids a grouped row stands for (what an unreachable step cuts
    off, the steps of a flow with no owner, what runs twice after the first such step);
    ``declared`` says whether the flow was declared in metadata or inferred from the edges.
    ``lanes=True`` asks for a lane for every step in a pool (by default the pool's participant
    owns what no lane holds). See the module doc for the kinds, their severity and the rules.

    >>> import polars as pl
    >>> e = pl.DataFrame({"id": ["s"], "kind": ["step"], "title": ["Pack"], "metadata": ['{"flow": "ship"}']})
    >>> find_holes(e, pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String,
    ...                                        "source": pl.String}))["hole"].to_list()
    ['dead_end', 'no_owner']
    """
    flows = ProcessGraph(entries, edges)
    rows = (_broken_holes(flows) + _step_holes(flows) + _artifact_holes(flows) + _unreachable_holes(flows)
            + _owner_holes(flows, lanes)
            + _loop_holes(flows) + _twice_holes(flows) + _deadlock_holes(flows))
    if not rows:
        return pl.DataFrame(schema=_HOLE_SCHEMA)
    order = {h: i for i, h in enumerate(HOLE_KINDS)}
    rows.sort(key=lambda r: (r["flow"], _SEVERITY_RANK[r["severity"]], order[r["hole"]], r["title"], r["id"]))
    return pl.DataFrame(rows, schema=_HOLE_SCHEMA)


def find_flows(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """One row per flow: frame (flow, declared, start_steps, end_steps, dead_ends, steps, artifacts,
    owners, holes).

    ``declared``: whether the flow is named in metadata (else inferred from ``precedes``);
    ``start_steps`` / ``end_steps``: titles of the starts (declared, else no incoming precedes) and
    of the steps where the flow properly ends (declared ends, and steps with no successor that
    :func:`find_holes` does not report as a dead end); ``dead_ends``: titles of the steps it does
    report as dead ends (work stops there, so they are never listed as end steps); ``steps``:
    steps and decisions; ``owners``: role titles that own steps of the flow; ``holes``: the number of
    rows :func:`find_holes` reports for it.

    >>> import polars as pl
    >>> e = pl.DataFrame({"id": ["a", "b"], "kind": ["step", "step"], "title": ["Pick", "Pack"],
    ...                   "metadata": ['{"flow": "ship"}', '{"flow": "ship", "end": true}']})
    >>> ed = pl.DataFrame({"src": ["a"], "dst": ["b"], "type": ["precedes"], "source": ["author"]})
    >>> find_flows(e, ed).select("flow", "declared", "start_steps", "end_steps", "holes").rows()
    [('ship', True, ['Pick'], ['Pack'], 1)]
    """
    flows = ProcessGraph(entries, edges)
    if flows.steps.height + flows.artifacts.height == 0:
        return pl.DataFrame(schema=_FLOW_SCHEMA)
    has_out = flows.prec["src"].implode()
    found = find_holes(entries, edges)
    dead = found.filter(pl.col("hole") == "dead_end")
    ends = flows.steps.filter(pl.col("end") | ~pl.col("id").is_in(has_out)).filter(~pl.col("id").is_in(dead["id"].implode()))
    holes = found.group_by("flow").len(name="holes")
    owners = (flows.owned.join(flows.steps.select(pl.col("id").alias("src"), "flow"), on="src")
              .group_by("flow").agg(pl.col("role").unique().sort().alias("owners")))
    all_flows = flows.nodes.select("flow", "declared").unique("flow").sort("flow")
    return (
        all_flows
        .join(flows.starts().group_by("flow").agg(pl.col("title").sort().alias("start_steps")), on="flow", how="left")
        .join(ends.group_by("flow").agg(pl.col("title").sort().alias("end_steps")), on="flow", how="left")
        .join(dead.group_by("flow").agg(pl.col("title").sort().alias("dead_ends")), on="flow", how="left")
        .join(flows.steps.group_by("flow").len(name="steps"), on="flow", how="left")
        .join(flows.artifacts.group_by("flow").len(name="artifacts"), on="flow", how="left")
        .join(owners, on="flow", how="left")
        .join(holes, on="flow", how="left")
        .with_columns(pl.col("start_steps", "end_steps", "dead_ends", "owners").fill_null([]),
                      pl.col("steps", "artifacts", "holes").fill_null(0))
        .select([pl.col(c).cast(t) for c, t in _FLOW_SCHEMA.items()])
    )
