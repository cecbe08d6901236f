"""Every change to a bank: pure ``plan_*`` functions compute it, the store commits it as one
audited transaction (entries, edges and events together, or nothing).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "eng")
>>> a = report_learning(bank, content="The deploy job needs the registry token.", actor="agent-1")
>>> b = report_learning(bank, content="The registry token expires after 30 days.", actor="agent-2",
...                     connections=[{"id": a, "relation": "clarifies", "note": "how long the token in that job lives"}])
>>> bank.edges.select("src", "dst", "type").row(0) == (b, a, "clarifies")
True
"""

from __future__ import annotations

import json
import re
import secrets
from datetime import datetime, timezone
from typing import Any, Callable, Container, Iterable, Sequence

import numpy as np
import polars as pl

from kbtools.model.frames import among
from kbtools.model.events import edge_events, event_rows, fate_of, fate_text
from kbtools.model.plan import Plan
from kbtools.errors import EdgeNotFound, EdgeRuleError, EntryNotFound, GuardRejected, KbError, ValidationError
from kbtools.model.guard import transient_reason
from kbtools.model.rules import check_edges, check_entries, check_text, json_object_text
from kbtools.model.schema import SCHEMAS, conform
from kbtools.ops.sections import LEAD_IN_WORDS
from kbtools.retrieval.search import keep_current
from kbtools.store.bank import Bank, utcnow
from kbtools.store.segments import rows_finder, rows_with
from kbtools.model.vocab import (
    ENTRY_KINDS,
    TRANSITIVE_TYPES,
    TRUSTED_SOURCES,
    normalize_type,
)
from kbtools.store.vectors import embedder_name

__all__ = [
    "report_learning",
    "update_entry",
    "link",
    "unlink",
    "delete_entry",
    "merge_entries",
    "split_entry",
    "add_triple",
    "edit_edges",
    "plan_entry",
    "plan_bridges",
    "plan_merge",
    "plan_merge_entries",
    "plan_edge_changes",
    "new_id",
    "event_rows",
    "record_usage",
]

_LIST_FIELDS = ("systems", "tasks", "steps")
_TEXT_FIELDS = ("title", "summary", "content", "useful_for", "session_id")


# ---------------------------------------------------------------------------------------------
# small pure helpers


def new_id(taken: Iterable[str] | pl.Series, *, rng=None) -> str:
    """A fresh 8-hex-character id not in ``taken``.

    >>> len(new_id({"a1b2c3d4"}))
    8
    """
    if isinstance(taken, pl.Series):
        taken_set = set(taken.to_list())
    elif isinstance(taken, (set, frozenset, dict, _Taken)):
        taken_set = taken  # membership only: never copied (a bank's ids can be many)
    else:
        taken_set = set(taken)
    for _ in range(1000):
        cand = secrets.token_hex(4) if rng is None else f"{int(rng.integers(0, 2**32)):08x}"
        if cand not in taken_set:
            return cand
    raise KbError("could not find a free entry id after 1000 tries")


class _Taken:
    """The ids of a bank's entries as a container: ``id in taken`` scans one column, so a write
    never builds a set of every id."""

    __slots__ = ("bank",)

    def __init__(self, bank: Bank):
        self.bank = bank

    def __contains__(self, entry_id) -> bool:
        return isinstance(entry_id, str) and self.bank.has_entry(entry_id)


def _as_time(value, column: str) -> datetime:
    if value is None:
        return utcnow()
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(column, value, "an ISO 8601 timestamp") from None
    if not isinstance(value, datetime):
        raise ValidationError(column, value, "a datetime or an ISO 8601 string")
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _first_sentence(text: str, limit: int) -> str:
    """The first sentence of the first line, with the next line when that is a short lead-in ending
    in a colon ("Gotcha:", "Fixed by:"): a title or summary that says something.

    >>> _first_sentence("Gotcha:\\nThe export job needs the vendor flag. It fails without.", 80)
    'Gotcha: The export job needs the vendor flag.'
    """
    lines = [line.strip() for line in text.strip().splitlines()
             if line.strip() and not line.lstrip().startswith(("```", "~~~"))]  # a code fence says nothing
    line = lines[0] if lines else ""
    if line.endswith(":") and len(line.split()) <= LEAD_IN_WORDS and len(lines) > 1:
        line = f"{line} {re.sub(r'^(?:[-*+•]|[0-9]+[.)])[ ]+', '', lines[1])}"  # a list's first item, unmarked
    m = re.match(r"(.+?[.!?])(\s|$)", line)
    out = m.group(1) if m else line
    if len(out) <= limit:
        return out
    cut = out[: limit - 1]
    if " " in cut:  # never cut a word in two: a derived title adds no word the content lacks
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:(-") + "…"


def _check_actor(actor) -> str:
    if not isinstance(actor, str) or not actor.strip():
        raise ValidationError("actor", actor, "every write names its actor (a non-empty string)")
    return check_text("actor", actor)


def _check_reason(reason, what: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise ValidationError("reason", reason, f"{what} requires a reason (a non-empty string)")
    return check_text("reason", reason)


def _check_text(name: str, value, *, row=None, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ValidationError(name, value, f"{name} is required", row=row)
        return None
    if not isinstance(value, str):
        raise ValidationError(name, value, f"{name} must be a string, not {type(value).__name__}", row=row)
    return check_text(name, value, row=row)


def _check_list(name: str, value, *, row=None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ValidationError(name, value, f"{name} must be a list of strings, not {type(value).__name__}", row=row)
    for item in value:
        if not isinstance(item, str):
            raise ValidationError(name, value, f"{name} must be a list of strings (found {type(item).__name__})", row=row)
        check_text(name, item, row=row)
    return list(value)


# ---------------------------------------------------------------------------------------------
# pure plans


def plan_entry(
    fields: dict[str, Any], *, taken: "Container[str]", now: datetime, row=None, entry_id: str | None = None
) -> dict[str, Any]:
    """A validated entries row (a dict) from user fields; raises naming the field and the rule.

    >>> r = plan_entry({"content": "Use --http1.1 for the session POST."}, taken=set(), now=utcnow())
    >>> r["kind"], r["title"]
    ('knowledge', 'Use --http1.1 for the session POST.')
    """
    unknown = set(fields) - set(SCHEMAS["entries"]) - {"id"}
    if unknown:
        raise ValidationError(sorted(unknown)[0], fields[sorted(unknown)[0]], f"not an entry field; fields are {', '.join(SCHEMAS['entries'])}", row=row)
    content = _check_text("content", fields.get("content"), row=row, required=True)
    why = transient_reason(content)
    if why:
        raise GuardRejected("content", content, f"rejected by the guard: {why}", row=row)
    kind = fields.get("kind") or "knowledge"
    if kind not in ENTRY_KINDS:
        raise ValidationError("kind", kind, f"kind must be one of {', '.join(sorted(ENTRY_KINDS))}", row=row)
    for name in _TEXT_FIELDS:
        _check_text(name, fields.get(name), row=row)
    metadata = json_object_text("metadata", fields.get("metadata"), row=row)
    eid = entry_id or fields.get("id") or new_id(taken)
    if not re.fullmatch(r"[0-9a-f]{8}", str(eid)):
        raise ValidationError("id", eid, "an id is 8 lowercase hex characters", row=row)
    if eid in taken:
        raise ValidationError("id", eid, "ids are unique in a bank", row=row)
    created = _as_time(fields.get("created_at"), "created_at") if fields.get("created_at") is not None else now
    status = fields.get("status") or "active"
    return {
        "id": eid,
        "kind": kind,
        "title": fields.get("title") or _first_sentence(content, 80),
        "summary": fields.get("summary") or _first_sentence(content, 200),
        "content": content,
        "useful_for": fields.get("useful_for") or "",
        "systems": _check_list("systems", fields.get("systems"), row=row),
        "tasks": _check_list("tasks", fields.get("tasks"), row=row),
        "steps": _check_list("steps", fields.get("steps"), row=row),
        "metadata": metadata,
        "session_id": fields.get("session_id"),
        "created_at": created,
        "updated_at": created,
        "linked_at": None,
        "usage_count": 0,
        "last_used_at": None,
        "status": status,
    }


def _edge_frame(rows: Sequence[dict], *, now: datetime, actor: str) -> pl.DataFrame:
    data = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise ValidationError("connections", r, "each connection is a dict with id, relation and optional note", row=i)
        t = r.get("type") or r.get("relation")
        if not isinstance(t, str):
            raise ValidationError("relation", t, "an edge needs a relation (type) string", row=i)
        t = normalize_type(t)
        source = r.get("source", "author")
        weight = r.get("weight")
        if weight is None:
            weight = 1.0
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ValidationError("weight", weight, "weight is a number in (0, 1] (1.0 for trusted edges), not "
                                                    f"{type(weight).__name__}", row=i)
        note = r.get("note")
        if note is not None and not isinstance(note, str):
            raise ValidationError("note", note, "a note is a string", row=i)
        if note is not None:
            check_text("note", note, row=i)
        evidence = json_object_text("evidence", r.get("evidence") or {}, row=i)
        data.append(
            {
                "src": r["src"],
                "dst": r["dst"],
                "type": t,
                "source": source,
                "note": note,
                "evidence": evidence,
                "weight": float(weight),
                "created_by": r.get("created_by", actor),
                "created_at": now,
                "seen_at": now,
            }
        )
    return pl.DataFrame(data, schema=SCHEMAS["edges"]) if data else pl.DataFrame(schema=SCHEMAS["edges"])


def plan_bridges(entry_id: str, edges: pl.DataFrame, *, now: datetime, actor: str) -> pl.DataFrame:
    """The bridged edges X -> Y for every trusted path X -> B -> Y through ``entry_id`` (B).

    The type is kept where both hops share a transitive type, else ``see_also``; the evidence names
    B and both hops; existing (X, Y, type) edges and self-loops are skipped.

    >>> e = pl.DataFrame({"src": ["x0000000", "b0000000"], "dst": ["b0000000", "y0000000"],
    ...                   "type": ["part_of", "part_of"], "source": ["author", "author"], "note": [None, None]})
    >>> plan_bridges("b0000000", e, now=utcnow(), actor="judge").select("src", "dst", "type", "source").row(0)
    ('x0000000', 'y0000000', 'part_of', 'bridged')
    """
    trusted = edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES)))
    into = trusted.filter(pl.col("dst") == entry_id).select(
        pl.col("src").alias("x"), pl.col("type").alias("t1"), pl.col("note").alias("n1")
    )
    out = trusted.filter(pl.col("src") == entry_id).select(
        pl.col("dst").alias("y"), pl.col("type").alias("t2"), pl.col("note").alias("n2")
    )
    if into.height == 0 or out.height == 0:
        return pl.DataFrame(schema=SCHEMAS["edges"])
    paths = into.join(out, how="cross").filter(pl.col("x") != pl.col("y"))
    paths = paths.with_columns(
        pl.when((pl.col("t1") == pl.col("t2")) & pl.col("t1").is_in(sorted(TRANSITIVE_TYPES)))
        .then(pl.col("t1"))
        .otherwise(pl.lit("see_also"))
        .alias("type")
    )
    paths = paths.unique(subset=["x", "y", "type"], keep="first", maintain_order=True)
    paths = paths.join(
        edges.select(pl.col("src").alias("x"), pl.col("dst").alias("y"), "type"), on=["x", "y", "type"], how="anti"
    )
    if paths.height == 0:
        return pl.DataFrame(schema=SCHEMAS["edges"])
    evidence = [
        json.dumps({"bridged": entry_id, "hops": [[x, entry_id, t1, n1], [entry_id, y, t2, n2]]})
        for x, y, t1, t2, n1, n2 in paths.select("x", "y", "t1", "t2", "n1", "n2").iter_rows()
    ]
    return pl.DataFrame(
        {
            "src": paths["x"],
            "dst": paths["y"],
            "type": paths["type"],
            "source": ["bridged"] * paths.height,
            "note": [None] * paths.height,
            "evidence": evidence,
            "weight": [1.0] * paths.height,
            "created_by": [actor] * paths.height,
            "created_at": [now] * paths.height,
            "seen_at": [now] * paths.height,
        },
        schema=SCHEMAS["edges"],
    )


def plan_merge(keep: str, remove: Sequence[str], edges: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(moved edges to add, edges to delete, dropped edges) for merging ``remove`` into ``keep``.

    Each removed entry's edges are re-pointed at the survivor; what would become a self-loop or a
    duplicate of an existing or another moved edge is dropped (and reported).

    >>> e = pl.DataFrame({"src": ["c0000000", "c0000000"], "dst": ["x0000000", "a0000000"],
    ...                   "type": ["cites", "see_also"], "source": ["author"] * 2})
    >>> moved, gone, dropped = plan_merge("a0000000", ["c0000000"], e)
    >>> moved.select("src", "dst").row(0), dropped.height
    (('a0000000', 'x0000000'), 1)
    """
    removed = [str(r) for r in remove]
    touching = edges.filter(pl.col("src").is_in(removed) | pl.col("dst").is_in(removed))
    moved = touching.with_columns(
        pl.when(pl.col("src").is_in(removed)).then(pl.lit(keep)).otherwise(pl.col("src")).alias("src"),
        pl.when(pl.col("dst").is_in(removed)).then(pl.lit(keep)).otherwise(pl.col("dst")).alias("dst"),
    ).with_columns(pl.Series("_orig_src", touching["src"]), pl.Series("_orig_dst", touching["dst"]))
    staying = edges.filter(~(pl.col("src").is_in(removed) | pl.col("dst").is_in(removed)))
    self_loop = moved.filter(pl.col("src") == pl.col("dst"))
    rest = moved.filter(pl.col("src") != pl.col("dst"))
    dup_existing = rest.join(staying.select("src", "dst", "type"), on=["src", "dst", "type"], how="semi")
    rest = rest.join(staying.select("src", "dst", "type"), on=["src", "dst", "type"], how="anti")
    first = rest.unique(subset=["src", "dst", "type"], keep="first", maintain_order=True)
    dup_moved = rest.join(first.select("_orig_src", "_orig_dst", "type"), on=["_orig_src", "_orig_dst", "type"], how="anti")
    dropped = pl.concat(
        [
            self_loop.with_columns(pl.lit("would point at itself").alias("why")),
            dup_existing.with_columns(pl.lit("duplicates an edge the survivor has").alias("why")),
            dup_moved.with_columns(pl.lit("duplicates another moved edge").alias("why")),
        ],
        how="vertical_relaxed",
    )
    return first.drop("_orig_src", "_orig_dst"), touching, dropped


def plan_merge_entries(edges: pl.DataFrame, *, keep: str, remove: Sequence[str], actor: str, reason: str,
                       now: datetime) -> tuple[Plan, dict]:
    """The plan (and its counts) that merges ``remove`` into ``keep`` over ``edges``: the removed
    entries' edges re-pointed at the survivor (see :func:`plan_merge`), the entries deleted, every
    move and drop in the events. Pure: what :func:`merge_entries` applies (ids already checked).

    >>> e = pl.DataFrame({"src": ["c0000000"], "dst": ["x0000000"], "type": ["cites"], "source": ["author"],
    ...                   "note": [None], "evidence": ["{}"], "weight": [1.0], "created_by": ["a"],
    ...                   "created_at": [utcnow()], "seen_at": [utcnow()]})
    >>> plan, counts = plan_merge_entries(e, keep="a0000000", remove=["c0000000"], actor="judge", reason="same", now=utcnow())
    >>> counts, plan.deletes["entries"]["id"].to_list()
    ({'moved': 1, 'dropped': 0, 'removed': 1}, ['c0000000'])
    """
    moved, touching, dropped = plan_merge(keep, remove, edges)
    moved = moved.with_columns(pl.lit(now).cast(SCHEMAS["edges"]["created_at"]).alias("seen_at"))
    events = [
        edge_events(touching, "edge.delete", actor=actor, at=now, reason=reason),
        edge_events(moved, "edge.move", actor=actor, at=now, reason=reason),
    ]
    for rid in remove:
        payload = {
            "into": keep,
            "dropped": [
                {"src": s, "dst": d, "type": t, "why": w}
                for s, d, t, w in dropped.filter((pl.col("_orig_src") == rid) | (pl.col("_orig_dst") == rid))
                .select("_orig_src", "_orig_dst", "type", "why").iter_rows()
            ],
        }
        events.append(event_rows([{"action": "entry.merge", "src": rid, "dst": keep, "payload": payload}], actor=actor, at=now, reason=reason))
    counts = {"moved": moved.height, "dropped": dropped.height, "removed": len(remove)}
    return Plan(
        upserts={"edges": moved},
        deletes={"entries": pl.DataFrame({"id": list(remove)}), "edges": touching.select("src", "dst", "type")},
        appends={"events": pl.concat(events)},
    ), counts


# ---------------------------------------------------------------------------------------------
# committing


def report_learning(
    bank: Bank,
    *,
    content: str,
    actor: str,
    useful_for: str = "",
    title: str | None = None,
    summary: str | None = None,
    kind: str = "knowledge",
    systems: Sequence[str] = (),
    tasks: Sequence[str] = (),
    steps: Sequence[str] = (),
    metadata: dict | str | None = None,
    session_id: str | None = None,
    created_at: datetime | str | None = None,
    connections: Sequence[dict] = (),
    link: bool | None = None,
    embed: bool = True,
    key: str | None = None,
) -> str:
    """Store one learning and its connections in one transaction; returns the new entry's id.

    Each connection is ``{"id": other, "relation": type, "note": "how it pertains"}`` and reads
    ``new <relation> other``. The guard rejects session logs and transient state.

    One transaction holds the entry, its connections, its vectors (when the bank has an embedder
    and ``embed``) and the write-time linker's links (when auto-linking is on and ``link`` is not
    False): the call either raises and wrote nothing, or returns. ``key`` makes a retry safe: a
    report whose key was already written returns the id written then, and writes nothing.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> report_learning(bank, content="$ ls\\n$ cd /", actor="a")
    Traceback (most recent call last):
    ...
    kbtools.errors.GuardRejected: content='$ ls\\n$ cd /': rejected by the guard: reads like a pasted command transcript (2 shell prompt lines, their output and no prose)
    """
    _check_actor(actor)
    fields = {
        "content": content, "useful_for": useful_for, "title": title, "summary": summary, "kind": kind,
        "systems": list(systems) if isinstance(systems, tuple) else systems,
        "tasks": list(tasks) if isinstance(tasks, tuple) else tasks,
        "steps": list(steps) if isinstance(steps, tuple) else steps,
        "metadata": metadata, "session_id": session_id, "created_at": created_at,
    }
    if not isinstance(connections, (list, tuple)):
        raise ValidationError("connections", connections, "connections is a list of {id, relation, note} dicts")
    box: dict[str, str] = {}

    if key is not None and (not isinstance(key, str) or not key.strip()):
        raise ValidationError("key", key, "an idempotency key is a non-empty string")

    def plan(b: Bank) -> Plan:
        now = utcnow()
        if key is not None:
            done = b.events.filter((pl.col("action") == "entry.create")
                                   & (pl.col("payload").str.json_path_match("$.key") == key))
            if done.height:
                box["id"] = done["src"][-1]
                return Plan()
        taken = _Taken(b)
        row = plan_entry(fields, taken=taken, now=now)
        conn = []
        for i, c in enumerate(connections):
            if not isinstance(c, dict) or "id" not in c:
                raise ValidationError("connections", c, "each connection is a dict with id, relation and optional note", row=i)
            conn.append({"src": row["id"], "dst": c["id"], "type": c.get("relation") or c.get("type"), "note": c.get("note"), "source": c.get("source", "author")})
        edges = _edge_frame(conn, now=now, actor=actor)
        ends = set(edges["src"].to_list()) | set(edges["dst"].to_list())
        try:
            check_edges(edges, {i for i in ends if i in taken} | {row["id"]},
                        existing=b.edges[rows_with(b, "edges", "src", edges["src"].unique().to_list())] if edges.height else None)
        except EdgeRuleError as err:
            raise _said_where_gone(b, err, edges["dst"].to_list()) from None
        untrusted = next((s for s in edges["source"].to_list() if s not in TRUSTED_SOURCES), None) if edges.height else None
        if untrusted is not None:
            raise EdgeRuleError(f"an agent's connection is trusted (source author); got source {untrusted!r}")
        box["id"] = row["id"]
        entry = pl.DataFrame([row], schema=SCHEMAS["entries"])
        events = event_rows([{"action": "entry.create", "src": row["id"],
                              "payload": {"kind": row["kind"], "title": row["title"], **({"key": key} if key else {})}}],
                            actor=actor, at=now)
        if edges.height:
            events = pl.concat([events, edge_events(edges, "edge.create", actor=actor, at=now, reason=None)])
        written = Plan(upserts={"entries": entry, "edges": edges}, appends={"events": events})
        vectors = _new_vectors(b, entry) if embed else None
        if (link is None or link) and b.settings.get("auto_link", True):
            box["linked"] = True
            return _with_links(b, written, entry, edges, vectors, actor=actor, now=now)
        return written + Plan(vectors=vectors)

    bank.apply(plan, actor=actor, reason="report_learning")
    if box.get("linked"):
        from kbtools.ops.link_context import keep_stats_current

        keep_stats_current(bank)  # the next linked write extends what this one planned with
    # the agent's next query reads the new entry without growing its index first; done last, so that
    # what that query reads is what the write touched last (warm in the CPU's caches)
    keep_current(bank)
    return box["id"]


def _new_vectors(bank: Bank, entry: pl.DataFrame):
    """The new entry's vectors when the bank's writes embed (embedded in the write, never by a read)."""
    from kbtools.ops.embedding import vectors_for_write  # the embedder loads only when a bank has one

    return vectors_for_write(bank, entry)


def _with_links(bank: Bank, written: Plan, entry: pl.DataFrame, edges: pl.DataFrame, vectors, *, actor: str, now) -> Plan:
    """``written`` plus the new entry's vectors and the write-time linker's links: one
    transaction, so an entry never exists without the links its write promised."""
    from kbtools.ops.link_context import plan_new_entry_links

    links = plan_new_entry_links(bank, entry, edges, None if vectors is None else vectors.data[:, 0, :], now=now)
    entries = pl.concat([bank.entries, entry], how="vertical_relaxed")
    all_edges = pl.concat([bank.edges, edges], how="vertical_relaxed") if edges.height else bank.edges
    linked, _ = plan_edge_changes(entries, all_edges, add=links.add, remove=links.remove.select("src", "dst", "type"),
                                  entry_updates=links.entry_updates, actor="linker",
                                  reason=f"linked at write by {actor}", now=now, action="edge.link",
                                  rows_of=rows_finder(bank, {"entries": entry, "edges": edges}))
    new_rows = linked.upserts.get("entries")
    entry_rows = entry if new_rows is None else pl.concat([entry, new_rows]).unique("id", keep="last", maintain_order=True)
    return Plan(
        upserts={"entries": entry_rows, "edges": pl.concat([edges, linked.upserts["edges"]], how="vertical_relaxed")},
        deletes=linked.deletes,
        appends={"events": pl.concat([written.appends["events"], linked.appends["events"]])},
        vectors=vectors,
    )


def update_entry(bank: Bank, entry_id: str, *, actor: str, reason: str | None = None, **fields) -> None:
    """Change fields of one entry (audited with the old and new values).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> a = report_learning(bank, content="Old text.", actor="a")
    >>> update_entry(bank, a, actor="judge", reason="clearer", content="New text.")
    >>> bank.entries["content"][0]
    'New text.'
    """
    _check_actor(actor)
    allowed = set(SCHEMAS["entries"]) - {"id", "created_at", "usage_count", "last_used_at"}
    for name in fields:
        if name not in allowed:
            raise ValidationError(name, fields[name], f"not an updatable entry field; allowed: {', '.join(sorted(allowed))}")

    def plan(b: Bank) -> Plan:
        now = utcnow()
        b.require_entries([entry_id], where="update_entry")
        cur = b.entries.filter(pl.col("id") == entry_id)
        old = cur.row(0, named=True)
        new = dict(old)
        for name, value in fields.items():
            if name in _LIST_FIELDS:
                value = _check_list(name, value)
            elif name == "metadata":
                value = json_object_text("metadata", value)
            elif name in ("linked_at", "updated_at"):
                value = None if value is None else _as_time(value, name)
            else:  # title, summary, content, useful_for, session_id, kind, status: text
                value = _check_text(name, value)
            new[name] = value
        if "content" in fields:
            why = transient_reason(new["content"])
            if why:
                raise GuardRejected("content", new["content"], f"rejected by the guard: {why}")
        if set(fields) - {"linked_at"}:
            new["updated_at"] = now
        row = pl.DataFrame([new], schema=SCHEMAS["entries"])
        check_entries(row)
        changed = {k: [str(old[k]), str(new[k])] for k in fields if old[k] != new[k]}
        ev = event_rows([{"action": "entry.update", "src": entry_id, "payload": {"changed": changed}}], actor=actor, at=now, reason=reason)
        from kbtools.ops.embedding import vectors_for_write  # changed text is embedded in the same write

        return Plan(upserts={"entries": row}, appends={"events": ev}, vectors=vectors_for_write(b, row, before=cur))

    bank.apply(plan, actor=actor, reason=reason)


def link(
    bank: Bank, src: str, dst: str, type: str, *, actor: str, note: str | None = None, source: str = "author",
    weight: float | None = None, evidence: dict | None = None,
) -> None:
    """Add one edge ``src <type> dst`` (audited).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> a = report_learning(bank, content="A fact.", actor="x"); b = report_learning(bank, content="A fix.", actor="x")
    >>> link(bank, b, a, "cousin_of", actor="x")
    Traceback (most recent call last):
    ...
    kbtools.errors.EdgeRuleError: row 0: edge ... -> ... (cousin_of): unknown edge type; ...
    """
    _check_actor(actor)
    rows = [{"src": src, "dst": dst, "type": type, "note": note, "source": source, "weight": weight, "evidence": evidence}]
    try:
        edit_edges(bank, add=rows, actor=actor, reason=None)
    except EdgeRuleError as err:
        raise _said_where_gone(bank, err, [src, dst]) from None


def _said_where_gone(bank: Bank, err: EdgeRuleError, ids: Sequence[str]) -> EdgeRuleError:
    """``err`` (an edge naming an entry that does not exist) with what became of each such id that an
    audited change removed: merged into which entry (connect to that one), or deleted, by whom, why."""
    if "the entry does not exist" not in str(err):
        return err
    said = []
    for entry_id in dict.fromkeys(ids):
        fate = None if len(rows_with(bank, "entries", "id", [entry_id])) else fate_of(bank.events, entry_id)
        if fate is None:
            continue
        said.append(fate_text(fate) + (f"; connect to {fate['id']}" if fate["id"] else ""))
    return EdgeRuleError(f"{err}; {'; '.join(said)}") if said else err


def unlink(bank: Bank, src: str, dst: str, type: str, *, reason: str, actor: str) -> None:
    """Remove one edge; the reason is required and kept in the event.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> unlink(bank, "a1b2c3d4", "b2c3d4e5", "cites", reason="", actor="x")
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: reason='': unlink requires a reason (a non-empty string)
    """
    _check_actor(actor)
    _check_reason(reason, "unlink")
    t = normalize_type(type)
    edit_edges(bank, remove=[{"src": src, "dst": dst, "type": t}], actor=actor, reason=reason)


def edit_edges(
    bank: Bank,
    *,
    add: Sequence[dict] | pl.DataFrame = (),
    remove: Sequence[dict] | pl.DataFrame = (),
    entry_updates: pl.DataFrame | None = None,
    actor: str,
    reason: str | None,
    replace: bool = False,
    action: str = "edge.create",
    dry_run: bool = False,
) -> dict:
    """Commit edges to add and remove (and entry column updates) as one transaction.

    Every added edge is validated against the newest version of the bank (vocabulary, ids,
    self-loops, duplicates, weights); every removal must name an existing edge. With
    ``replace=True`` an added edge may overwrite an existing (src, dst, type) row (used by decay
    and reinforcement to change weights). Returns counts.
    """
    _check_actor(actor)
    out: dict = {}

    def plan(b: Bank) -> Plan:
        changes, counts = plan_edge_changes(b.entries, b.edges, add=add, remove=remove, entry_updates=entry_updates,
                                            rows_of=rows_finder(b),
                                            actor=actor, reason=reason, now=utcnow(), replace=replace, action=action)
        out.update(counts)
        return Plan() if dry_run else changes

    bank.apply(plan, actor=actor, reason=reason)
    return out


def plan_edge_changes(
    entries: pl.DataFrame,
    edges: pl.DataFrame,
    *,
    add: Sequence[dict] | pl.DataFrame = (),
    remove: Sequence[dict] | pl.DataFrame = (),
    entry_updates: pl.DataFrame | None = None,
    actor: str,
    reason: str | None,
    now,
    replace: bool = False,
    action: str = "edge.create",
    rows_of: Callable[[str, str, object], np.ndarray] | None = None,
) -> tuple[Plan, dict]:
    """The plan (and its counts) that adds and removes edges and updates entry columns over the
    given ``entries`` and ``edges``, checked against them: pure, what :func:`edit_edges` applies.
    ``rows_of(table, column, values)``: positions in ``entries`` / ``edges`` of the rows whose
    column holds one of ``values`` (what a bank's index finds:
    :func:`~kbtools.store.segments.rows_finder`); None: the frames are scanned."""

    def where(frame: pl.DataFrame, table: str, column: str, values: pl.Series) -> pl.DataFrame:
        if rows_of is None:  # a scan, not a hash of every row
            return frame.filter(among(column, values))
        return frame.select(pl.all().gather(pl.Series(rows_of(table, column, values), dtype=pl.UInt32)))

    adds = add if isinstance(add, pl.DataFrame) else _edge_frame(list(add), now=now, actor=actor)
    if isinstance(add, pl.DataFrame):
        adds = conform(add, "edges").with_columns(
            pl.col("type").replace({"related_to": "see_also"}),
            pl.col("created_at").fill_null(now), pl.col("seen_at").fill_null(now),
            pl.col("created_by").fill_null(actor), pl.col("evidence").fill_null("{}"),
            pl.col("weight").fill_null(1.0),
        )
    rem = remove if isinstance(remove, pl.DataFrame) else (
        pl.DataFrame(list(remove), schema={"src": pl.String, "dst": pl.String, "type": pl.String}) if remove
        else pl.DataFrame(schema={"src": pl.String, "dst": pl.String, "type": pl.String})
    )
    if rem.columns != ["src", "dst", "type"]:
        rem = rem.select("src", "dst", "type")
    key = ["src", "dst", "type"]
    # the edges of the sources named (found, not every edge hashed): those removed must exist; a new
    # one must not clash with one that stays (not removed, nor replaced by it). A few edges' keys are
    # told in Python, many by joins
    near = where(edges, "edges", "src", pl.concat([rem["src"], adds["src"]])) if rem.height or adds.height else edges.clear()
    if rem.height + adds.height <= _FEW_EDGES:
        removing, adding = set(_edge_keys(rem)), set(_edge_keys(adds))
        held = dict(zip(_edge_keys(near), range(near.height)))
        missing = next((k for k in _edge_keys(rem) if k not in held), None)
        if missing is not None:
            raise EdgeNotFound(*missing)
        removed_rows = (near.select(pl.all().gather([held[k] for k in dict.fromkeys(_edge_keys(rem))])) if removing
                        else edges.clear())
        staying = near.select(key)
        if removing or (replace and adding):
            gone_now = removing | (adding if replace else set())
            staying = staying.filter(pl.Series([k not in gone_now for k in _edge_keys(staying)], dtype=pl.Boolean))
        gone = (rem.filter(pl.Series([k not in adding for k in _edge_keys(rem)], dtype=pl.Boolean)) if removing & adding
                else rem)
    else:
        removed_rows = rem.unique(maintain_order=True).join(near, on=key, how="inner") if rem.height else edges.clear()
        if removed_rows.height < rem.unique().height:
            raise EdgeNotFound(*rem.join(near.select(key), on=key, how="anti").row(0))
        staying = near.select(key)
        if rem.height:
            staying = staying.join(rem, on=key, how="anti")
        if replace and adds.height:
            staying = staying.join(adds.select(key), on=key, how="anti")
        gone = rem.join(adds.select(key), on=key, how="anti") if adds.height else rem
    ends = pl.concat([adds["src"], adds["dst"]]).drop_nulls().unique()
    check_edges(adds, entries["id"] if rows_of is None else set(entries["id"].gather(rows_of("entries", "id", ends)).to_list()),
                existing=staying)
    upd = None
    events = [
        edge_events(removed_rows, "edge.delete", actor=actor, at=now, reason=reason),
        edge_events(adds, action, actor=actor, at=now, reason=reason, payload_cols=("source", "note", "weight", "evidence")),
    ]
    if entry_updates is not None and entry_updates.height:
        named = where(entries, "entries", "id", entry_updates["id"])
        known = set(named["id"].to_list())
        missing_id = next((i for i in entry_updates["id"].to_list() if i not in known), None)
        if missing_id is not None:
            raise EntryNotFound(missing_id, "entry update")
        cols = [c for c in entry_updates.columns if c != "id"]
        upd = named.join(entry_updates, on="id", how="inner", suffix="_new").select(
            pl.coalesce(pl.col(f"{c}_new").cast(dtype), pl.col(c)).alias(c) if c in cols else pl.col(c)
            for c, dtype in SCHEMAS["entries"].items())
        if not set(cols) <= {"linked_at"}:
            events.append(event_rows(
                [{"action": "entry.update", "src": eid, "payload": payload}
                 for eid, payload in zip(entry_updates["id"].to_list(),
                                         entry_updates.select(pl.struct(cols).struct.json_encode())[:, 0].to_list())],
                actor=actor, at=now, reason=reason, payload_is_json=True,
            ))
    counts = {"added": adds.height, "removed": removed_rows.height, "entries_updated": 0 if upd is None else upd.height}
    upserts = {"edges": adds}
    if upd is not None:
        upserts["entries"] = upd
    # (``gone``: an edge removed and added again in the same change is replaced: its tombstone would
    # hide the new row)
    return Plan(upserts=upserts, deletes={"edges": gone}, appends={"events": pl.concat(events)}), counts


#: Up to this many edges added and removed, a change's keys are compared in Python
_FEW_EDGES = 64


def _edge_keys(frame: pl.DataFrame) -> list[tuple]:
    """The ``(src, dst, type)`` of each row."""
    return list(zip(frame["src"].to_list(), frame["dst"].to_list(), frame["type"].to_list()))


def delete_entry(bank: Bank, entry_id: str, *, reason: str, actor: str) -> dict:
    """Delete one entry after bridging every trusted X -> entry -> Y into X -> Y.

    Returns what happened: the bridged edges and the removed ones.
    """
    _check_actor(actor)
    _check_reason(reason, "delete_entry")
    out: dict = {}

    def plan(b: Bank) -> Plan:
        now = utcnow()
        b.require_entries([entry_id], where="delete_entry")
        edges = b.edges
        bridges = plan_bridges(entry_id, edges, now=now, actor=actor)
        gone = edges.filter((pl.col("src") == entry_id) | (pl.col("dst") == entry_id))
        events = pl.concat(
            [
                edge_events(bridges, "edge.bridge", actor=actor, at=now, reason=reason, payload_cols=("source", "evidence")),
                edge_events(gone, "edge.delete", actor=actor, at=now, reason=reason),
                event_rows([{"action": "entry.delete", "src": entry_id, "payload": {"bridged": bridges.height, "edges_removed": gone.height}}], actor=actor, at=now, reason=reason),
            ]
        )
        out.update({"bridged": bridges.select("src", "dst", "type"), "removed": gone.select("src", "dst", "type")})
        return Plan(
            upserts={"edges": bridges},
            deletes={"entries": pl.DataFrame({"id": [entry_id]}), "edges": gone.select("src", "dst", "type")},
            appends={"events": events},
        )

    bank.apply(plan, actor=actor, reason=reason)
    return out


def merge_entries(bank: Bank, *, keep: str, remove: Sequence[str], reason: str, actor: str) -> dict:
    """Merge entries into ``keep``: their edges move onto it (self-loops and duplicates dropped and
    named in the event), then they are removed."""
    _check_actor(actor)
    _check_reason(reason, "merge_entries")
    if isinstance(remove, str):
        remove = [remove]
    remove = list(dict.fromkeys(remove))
    if keep in remove:
        raise ValidationError("remove", keep, "an entry cannot be merged into itself")
    if not remove:
        raise ValidationError("remove", remove, "name at least one entry to merge into the survivor")
    out: dict = {}

    def plan(b: Bank) -> Plan:
        b.require_entries([keep, *remove], where="merge_entries")
        changes, counts = plan_merge_entries(b.edges, keep=keep, remove=remove, actor=actor, reason=reason, now=utcnow())
        out.update(counts)
        return changes

    bank.apply(plan, actor=actor, reason=reason)
    return out


def split_entry(bank: Bank, entry_id: str, *, parts: Sequence[dict], reason: str, actor: str) -> list[str]:
    """Write ``parts`` as new entries, each ``split_from`` the original (source judge); returns their ids."""
    _check_actor(actor)
    _check_reason(reason, "split_entry")
    if not isinstance(parts, (list, tuple)) or not parts:
        raise ValidationError("parts", parts, "a split needs a non-empty list of entry dicts")
    ids: list[str] = []

    def plan(b: Bank) -> Plan:
        now = utcnow()
        b.require_entries([entry_id], where="split_entry")
        taken = set(b.entries["id"].to_list())
        rows = []
        for i, part in enumerate(parts):
            if not isinstance(part, dict):
                raise ValidationError("parts", part, "each part is a dict of entry fields", row=i)
            r = plan_entry(part, taken=taken, now=now, row=i)
            taken.add(r["id"])
            rows.append(r)
        ids[:] = [r["id"] for r in rows]
        edges = _edge_frame(
            [{"src": r["id"], "dst": entry_id, "type": "split_from", "source": "judge", "note": None} for r in rows],
            now=now, actor=actor,
        )
        check_edges(edges, taken)
        events = pl.concat(
            [
                event_rows([{"action": "entry.split", "src": r["id"], "dst": entry_id, "payload": {"title": r["title"]}} for r in rows], actor=actor, at=now, reason=reason),
                edge_events(edges, "edge.create", actor=actor, at=now, reason=reason),
            ]
        )
        new = pl.DataFrame(rows, schema=SCHEMAS["entries"])
        return Plan(upserts={"entries": new, "edges": edges}, appends={"events": events}, vectors=_new_vectors(b, new))

    bank.apply(plan, actor=actor, reason=reason)
    return ids


def add_triple(bank: Bank, subject: str, relation: str, object: str, *, actor: str = "user") -> None:
    """Record an entity fact ``subject relation object`` for the linker's bridge signal (audited).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> add_triple(bank, "Kioko", "uses", "pgvector")
    >>> bank.triples.select("subject", "relation", "object").row(0)
    ('Kioko', 'uses', 'pgvector')
    """
    _check_actor(actor)
    for name, value in (("subject", subject), ("relation", relation), ("object", object)):
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(name, value, f"a triple's {name} is a non-empty string")

    def plan(b: Bank) -> Plan:
        now = utcnow()
        existing = b.triples.filter(
            (pl.col("subject") == subject) & (pl.col("relation") == relation) & (pl.col("object") == object)
        )
        if existing.height:
            raise ValidationError("triple", (subject, relation, object), "a triple is unique; this one is already recorded")
        row = pl.DataFrame([{"subject": subject, "relation": relation, "object": object, "created_by": actor, "created_at": now}], schema=SCHEMAS["triples"])
        ev = event_rows([{"action": "triple.create", "payload": {"subject": subject, "relation": relation, "object": object}}], actor=actor, at=now)
        return Plan(upserts={"triples": row}, appends={"events": ev})

    bank.apply(plan, actor=actor, reason="add_triple")


def record_usage(bank: Bank, ids: Sequence[str], *, query: str = "", actor: str = "query") -> int:
    """Count ``ids`` as returned for ``query``: appended to this process's usage log without the
    writers' lock (see :meth:`Bank.log_usage`); the next write or compaction folds the log into
    ``usage_count`` / ``last_used_at``. Returns the rows recorded.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> a = report_learning(bank, content="A fact.", actor="x")
    >>> record_usage(bank, [a], query="fact"), int(bank.entries["usage_count"][0])
    (1, 1)
    """
    return bank.log_usage(ids, query=query)
