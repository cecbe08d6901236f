"""Column schemas of the bank's tables, the one reference every reader and writer uses, and empty frames of each.

>>> list(empty("edges").columns)[:4]
['src', 'dst', 'type', 'source']
>>> KEYS["edges"]
('src', 'dst', 'type')
"""

from __future__ import annotations

import polars as pl

__all__ = ["TIME", "SCHEMAS", "KEYS", "APPEND_ONLY", "TABLES", "empty", "conform", "rows_frame"]

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


def conform(frame: pl.DataFrame, table: str, *, extra: tuple[pl.Expr, ...] = ()) -> pl.DataFrame:
    """The frame with exactly the table's columns, in order, cast to its dtypes (missing ones null),
    then the ``extra`` columns (expressions over it), in one pass.

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
    return frame.select(*cols, *extra)


def rows_frame(rows: list[tuple], schema) -> pl.DataFrame:
    """A frame of these row tuples in this schema (a mapping of names to dtypes), as
    ``pl.DataFrame(rows, schema=schema, orient="row")`` builds it (times as epoch microseconds, or
    datetimes), for a few rows built often (one linked entry's edges and its update).

    On a few rows that constructor spends most of its time in Python-level
    schema handling before polars' own row reader; this calls the reader directly when polars has
    it where 1.x and 2.x keep it, once it gave the constructor's frame on the first rows built in
    that schema; else (no such reader, another frame, or an error of the check) the constructor.

    >>> import datetime as dt
    >>> frame = rows_frame([("a", 0.5, 1_700_000_000_000_000), (None, 1.0, None)],
    ...                    {"src": pl.String, "weight": pl.Float64, "at": TIME})
    >>> frame["at"].dt.year().to_list(), frame.schema["at"]
    ([2023, None], Datetime(time_unit='us', time_zone='UTC'))
    """
    held = _ROW_READERS.get(id(schema))  # by identity: hashing a schema's dtypes costs more than the frame
    if held is None or held[0] is not schema:
        built = pl.DataFrame(rows, schema=schema, orient="row")
        if rows:  # checked on rows, not on an empty frame
            _ROW_READERS[id(schema)] = (schema, _checked_reader(rows, schema, built))
        return built
    read = held[1]
    if read is False:
        return pl.DataFrame(rows, schema=schema, orient="row")
    return read(rows)


#: per schema object (its id), the schema and polars' row reader checked (False: the public constructor)
_ROW_READERS: dict = {}


def _checked_reader(rows: list[tuple], schema, built: pl.DataFrame):
    """polars' row reader for this schema when it builds ``built`` from ``rows``, else False."""
    try:
        try:
            from polars._plr import PyDataFrame  # polars 2
        except ImportError:
            from polars.polars import PyDataFrame  # polars 1
        fixed = pl.Schema(schema)

        def read(rows: list[tuple]) -> pl.DataFrame:
            return pl.DataFrame._from_pydf(PyDataFrame.from_rows(rows, schema=fixed))

        same = read(rows)
        return read if same.schema == built.schema and same.equals(built) else False
    except Exception:  # noqa: BLE001 - any polars whose internals differ keeps the public constructor
        return False
