"""Rows of the append-only events table: one builder for every audited change.

>>> import datetime as dt
>>> at = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
>>> event_rows([{"action": "entry.create", "src": "a1b2c3d4", "payload": {"kind": "fact"}}], actor="x", at=at)["payload"][0]
'{"kind": "fact"}'
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Sequence

import polars as pl

from kbtools.model.schema import SCHEMAS

__all__ = ["event_rows", "edge_events", "fate_of", "fate_text"]


def _events(n: int, *, at: datetime, actor: str, action, src, dst, type, reason, payload) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "at": pl.Series([at] * n, dtype=SCHEMAS["events"]["at"]),
            "actor": [actor] * n,
            "action": action if not isinstance(action, str) else [action] * n,
            "src": src, "dst": dst, "type": type,
            "reason": reason if isinstance(reason, list) else [reason] * n,
            "payload": payload,
        },
        schema=SCHEMAS["events"],
    )


def event_rows(rows: Sequence[dict], *, actor: str, at: datetime, reason: str | None = None,
               payload_is_json: bool = False) -> pl.DataFrame:
    """Event rows from dicts with ``action`` and optional ``src``, ``dst``, ``type``, ``reason`` and
    ``payload`` (a dict, or JSON text with ``payload_is_json``)."""
    return _events(
        len(rows), at=at, actor=actor,
        action=[r["action"] for r in rows],
        src=[r.get("src") for r in rows], dst=[r.get("dst") for r in rows], type=[r.get("type") for r in rows],
        reason=[r.get("reason", reason) for r in rows],
        payload=[r.get("payload", "{}") if payload_is_json else json.dumps(r.get("payload", {}), default=str, sort_keys=True)
                 for r in rows],
    )


def edge_events(edges: pl.DataFrame, action: str, *, actor: str, at: datetime, reason: str | None,
                payload_cols=("source", "note", "weight")) -> pl.DataFrame:
    """One event per edge row (vectorised), its payload the named columns as JSON."""
    if edges.height == 0:
        return pl.DataFrame(schema=SCHEMAS["events"])
    cols = [c for c in payload_cols if c in edges.columns]
    payload = (edges.select(pl.struct(cols).struct.json_encode())[:, 0] if cols
               else pl.Series(["{}"] * edges.height))
    return _events(edges.height, at=at, actor=actor, action=action, src=edges["src"], dst=edges["dst"],
                   type=edges["type"], reason=reason, payload=payload)


def fate_of(events: pl.DataFrame, entry_id: str) -> dict | None:
    """What became of an entry that is gone, from the events: ``{"id", "action", "at", "actor",
    "reason", "path"}``, where ``id`` is the entry it lives on in (merges followed to the last,
    ``path`` the ids passed through) or None when it was deleted; None when no event removed it.

    >>> import datetime as dt
    >>> at = dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc)
    >>> ev = pl.concat([event_rows([{"action": "entry.merge", "src": "b2", "dst": "a1"}], actor="judge", at=at, reason="same"),
    ...                 event_rows([{"action": "entry.merge", "src": "a1", "dst": "c3"}], actor="x", at=at)])
    >>> fate = fate_of(ev, "b2"); fate["id"], fate["path"], fate["actor"], fate["reason"]
    ('c3', ['b2', 'a1', 'c3'], 'judge', 'same')
    >>> fate_of(ev, "zz") is None
    True
    """
    gone = events.filter(pl.col("action").is_in(["entry.merge", "entry.delete"])).sort("at", maintain_order=True)
    removed = {}
    for row in gone.iter_rows(named=True):  # the last removal of an id counts (an id can be written again)
        removed[row["src"]] = row
    first = removed.get(entry_id)
    if first is None:
        return None
    path, row = [entry_id], first
    while row is not None and row["action"] == "entry.merge" and row["dst"] not in path:
        path.append(row["dst"])
        row = removed.get(row["dst"])
    deleted = row is not None and row["action"] == "entry.delete"
    return {"id": None if deleted else path[-1], "action": first["action"], "at": first["at"],
            "actor": first["actor"], "reason": first["reason"], "path": path}


def fate_text(fate: dict) -> str:
    """:func:`fate_of`'s answer in words: "b2 was merged into c3 (through a1) by judge at ...: why",
    or "b2 was deleted by ops at ...: why".

    >>> fate_text({"id": "c3", "action": "entry.merge", "at": "T", "actor": "judge", "reason": "same", "path": ["b2", "a1", "c3"]})
    'b2 was merged into c3 (through a1) by judge at T: same'
    >>> fate_text({"id": None, "action": "entry.delete", "at": "T", "actor": "ops", "reason": None, "path": ["b2"]})
    'b2 was deleted by ops at T'
    """
    path, why = fate["path"], f": {fate['reason']}" if fate.get("reason") else ""
    if fate["id"] is None:
        return f"{path[0]} was deleted by {fate['actor']} at {fate['at']}{why}"
    via = f" (through {', '.join(path[1:-1])})" if len(path) > 2 else ""
    return f"{path[0]} was merged into {fate['id']}{via} by {fate['actor']} at {fate['at']}{why}"
