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

__all__ = ["event_rows", "edge_events"]


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
