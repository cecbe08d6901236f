"""Column schemas of the bank's tables, exactly as in DESIGN.md, and empty frames of each.

>>> list(empty("edges").columns)[:4]
['src', 'dst', 'type', 'source']
>>> KEYS["edges"]
('src', 'dst', 'type')
"""

from __future__ import annotations

import polars as pl

__all__ = ["TIME", "SCHEMAS", "KEYS", "APPEND_ONLY", "TABLES", "empty", "conform"]

#: Every timestamp in a bank: microseconds, UTC.
TIME = pl.Datetime("us", "UTC")

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "entries": {
        "id": pl.String,
        "kind": pl.String,
        "title": pl.String,
        "summary": pl.String,
        "content": pl.String,
        "useful_for": pl.String,
        "systems": pl.List(pl.String),
        "tasks": pl.List(pl.String),
        "steps": pl.List(pl.String),
        "metadata": pl.String,
        "session_id": pl.String,
        "created_at": TIME,
        "updated_at": TIME,
        "linked_at": TIME,
        "usage_count": pl.Int64,
        "last_used_at": TIME,
        "status": pl.String,
    },
    "edges": {
        "src": pl.String,
        "dst": pl.String,
        "type": pl.String,
        "source": pl.String,
        "note": pl.String,
        "evidence": pl.String,
        "weight": pl.Float64,
        "created_by": pl.String,
        "created_at": TIME,
        "seen_at": TIME,
    },
    "events": {
        "at": TIME,
        "actor": pl.String,
        "action": pl.String,
        "src": pl.String,
        "dst": pl.String,
        "type": pl.String,
        "reason": pl.String,
        "payload": pl.String,
    },
    "triples": {
        "subject": pl.String,
        "relation": pl.String,
        "object": pl.String,
        "created_by": pl.String,
        "created_at": TIME,
    },
    "usage": {
        "at": TIME,
        "id": pl.String,
        "query_hash": pl.String,
    },
}

#: The key of each keyed table: the latest version of a row with that key wins.
KEYS: dict[str, tuple[str, ...]] = {
    "entries": ("id",),
    "edges": ("src", "dst", "type"),
    "triples": ("subject", "relation", "object"),
}
#: Tables that are only ever appended to.
APPEND_ONLY: frozenset[str] = frozenset({"events", "usage"})
TABLES: tuple[str, ...] = tuple(SCHEMAS)


def empty(table: str) -> pl.DataFrame:
    """An empty frame with the table's schema.

    >>> empty("usage").height
    0
    """
    return pl.DataFrame(schema=SCHEMAS[table])


def conform(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """The frame with exactly the table's columns, in order, cast to its dtypes (missing ones null).

    >>> conform(pl.DataFrame({"id": ["a1b2c3d4"], "at": [None]}), "usage").columns
    ['at', 'id', 'query_hash']
    """
    schema = SCHEMAS[table]
    cols = []
    for name, dtype in schema.items():
        if name in frame.columns:
            cols.append(pl.col(name).cast(dtype))
        else:
            cols.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(cols)
