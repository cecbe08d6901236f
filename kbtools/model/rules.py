"""The rules rows must follow, as pure checks over frames.

``problems_*`` functions return every problem they find (for ``check_bank`` and reports);
``check_*`` functions raise the first one as a :class:`~kbtools.errors.KbError` (for writes, which
must name the row, the value and the rule and write nothing).

>>> import polars as pl
>>> edges = pl.DataFrame({"src": ["a1b2c3d4"], "dst": ["a1b2c3d4"], "type": ["clarifies"], "source": ["author"], "weight": [1.0]})
>>> [p.rule for p in problems_edges(edges, {"a1b2c3d4"})]
['an entry cannot point at itself']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import polars as pl

from kbtools.errors import EdgeRuleError, ValidationError
from kbtools.model.frames import among
from kbtools.model.schema import SCHEMAS
from kbtools.model.vocab import (
    EDGE_SOURCES,
    EDGE_TYPES,
    ENTRY_KINDS,
    ENTRY_STATUSES,
    TRUSTED_SOURCES,
)

__all__ = [
    "Problem",
    "ID_PATTERN",
    "problems_entries",
    "problems_edges",
    "problems_triples",
    "check_entries",
    "cast_to_schema",
    "check_edges",
    "check_schema",
    "check_text",
    "json_object_text",
]

ID_PATTERN = re.compile(r"^[0-9a-f]{8}$")
_ID_REGEX = r"^[0-9a-f]{8}$"


@dataclass(frozen=True)
class Problem:
    """One broken rule: which table and row, the offending value, the rule.

    >>> print(Problem("edges", 3, "type", "cousin_of", "unknown edge type"))
    edges row 3: type='cousin_of': unknown edge type
    """

    table: str
    row: int | None
    column: str
    value: object
    rule: str

    def __str__(self) -> str:
        where = f"{self.table} row {self.row}" if self.row is not None else self.table
        shown = repr(self.value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return f"{where}: {self.column}={shown}: {self.rule}"


def check_text(name: str, value: str, *, row=None) -> str:
    """``value`` if it can be stored (UTF-8 text), else a ValidationError naming the character.

    A Python string may hold a lone surrogate (from a bad decode or a JSON ``\\ud800`` escape)
    that no Parquet file can store.

    >>> check_text("content", "caf\u00e9")
    'café'
    >>> check_text("content", "bad " + chr(0xD800))
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: content='bad \\ud800': text must be valid Unicode: a lone surrogate \\ud800 at position 4 cannot be stored as UTF-8
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = value[err.start]
        raise ValidationError(name, value, f"text must be valid Unicode: a lone surrogate \\u{ord(bad):04x} at position "
                                           f"{err.start} cannot be stored as UTF-8", row=row) from None
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def json_object_text(name: str, value, *, row=None) -> str:
    """The JSON text of ``value`` (a dict, or JSON text of an object) for a ``metadata`` or
    ``evidence`` column; a ValidationError names what is not a JSON object: another JSON value,
    invalid JSON, NaN or Infinity (JSON has neither), a value JSON cannot hold (a set, bytes).

    >>> json_object_text("metadata", {"b": 1, "a": [2]})
    '{"a": [2], "b": 1}'
    >>> json_object_text("metadata", {"score": float("nan")})
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: metadata={'score': nan}: metadata must be a JSON object: NaN and Infinity are not JSON
    """
    rule = f"{name} must be a JSON object"
    if value is None:
        return "{}"
    if isinstance(value, str):
        check_text(name, value, row=row)
        try:
            parsed = json.loads(value, parse_constant=_no_constant)
        except ValueError as err:
            why = "NaN and Infinity are not JSON" if "not a JSON number" in str(err) else f"invalid JSON ({err})"
            raise ValidationError(name, value, f"{rule}: {why}", row=row) from None
        if not isinstance(parsed, dict):
            raise ValidationError(name, value, f"{rule} ({{...}}), not a JSON {type(parsed).__name__}", row=row)
        return value
    if not isinstance(value, dict):
        raise ValidationError(name, value, f"{rule} (a dict or JSON text), not {type(value).__name__}", row=row)
    try:
        text = json.dumps(value, sort_keys=True, allow_nan=False)
    except ValueError:
        raise ValidationError(name, value, f"{rule}: NaN and Infinity are not JSON", row=row) from None
    except TypeError as err:
        raise ValidationError(name, value, f"{rule}: {err} (use lists, strings, numbers, booleans, null)",
                              row=row) from None
    return check_text(name, text, row=row)


def _problems(frame: pl.DataFrame, table: str, rules: list[tuple]) -> list[Problem]:
    """The problems ``rules`` find in ``frame``, rule by rule in their order, rows in frame order.
    A rule is ``(column, mask, rule text)`` (the flagged row's value is that column's) or
    ``(column, mask, rule text, value of a row)``. Every mask is computed in one pass over the
    frame; the rows of a rule are read only where it flags some (a write's few rows break none)."""
    flags = frame.select([rule[1].fill_null(False).alias(f"_{i}") for i, rule in enumerate(rules)])
    out: list[Problem] = []
    indexed = None
    for i, (column, _, text, *value) in enumerate(rules):
        hit = flags.get_column(f"_{i}")
        if not hit.any():
            continue
        indexed = frame.with_row_index("_row") if indexed is None else indexed
        read = value[0] if value else (lambda row, column=column: row[column])
        out += [Problem(table, row["_row"], column, read(row), text)
                for row in indexed.filter(hit).iter_rows(named=True)]
    return out


def _listed(values) -> str:
    return ", ".join(sorted(values))


def problems_entries(entries: pl.DataFrame) -> list[Problem]:
    """Every rule the entries table breaks: id format and uniqueness, kind, status, required text.

    >>> problems_entries(pl.DataFrame({"id": ["zz"], "kind": ["poem"], "content": ["x"], "status": ["active"]}))[0].rule
    'an id is 8 lowercase hex characters'
    """
    if entries.height == 0:
        return []
    rules = [("id", ~pl.col("id").fill_null("").str.contains(_ID_REGEX), "an id is 8 lowercase hex characters"),
             ("id", pl.col("id").is_duplicated(), "ids are unique in a bank")]
    if "kind" in entries.columns:
        rules.append(("kind", ~pl.col("kind").is_in(sorted(ENTRY_KINDS)) | pl.col("kind").is_null(),
                      f"kind must be one of {_listed(ENTRY_KINDS)}"))
    if "status" in entries.columns:
        rules.append(("status", ~pl.col("status").is_in(sorted(ENTRY_STATUSES)) | pl.col("status").is_null(),
                      f"status must be one of {_listed(ENTRY_STATUSES)}"))
    if "usage_count" in entries.columns:
        rules.append(("usage_count", pl.col("usage_count") < 0, "usage_count is 0 or more"))
    if "content" in entries.columns:
        rules.append(("content", pl.col("content").fill_null("").str.strip_chars() == "",
                      "content is required and not empty"))
    return _problems(entries, "entries", rules)


def problems_edges(edges: pl.DataFrame, ids: set[str] | pl.Series | None = None) -> list[Problem]:
    """Every rule the edges break: vocabulary, self-loops, unknown ids, duplicate triples, weights.

    >>> e = pl.DataFrame({"src": ["a1b2c3d4"], "dst": ["b2c3d4e5"], "type": ["cousin_of"], "source": ["author"], "weight": [1.0]})
    >>> problems_edges(e, {"a1b2c3d4", "b2c3d4e5"})[0].rule.startswith("unknown edge type")
    True
    """
    if edges.height == 0:
        return []
    rules = [
        ("type", ~pl.col("type").is_in(sorted(EDGE_TYPES)) | pl.col("type").is_null(),
         f"unknown edge type; allowed: {_listed(EDGE_TYPES)}"),
        ("source", ~pl.col("source").is_in(sorted(EDGE_SOURCES)) | pl.col("source").is_null(),
         f"unknown edge source; allowed: {_listed(EDGE_SOURCES)}"),
        ("dst", pl.col("src") == pl.col("dst"), "an entry cannot point at itself"),
        ("src,dst,type", pl.struct("src", "dst", "type").is_duplicated(), "(src, dst, type) is unique",
         lambda row: (row["src"], row["dst"], row["type"])),
    ]
    if ids is not None:
        known = _known_ends(edges, ids).implode()
        rules += [(col, ~pl.col(col).is_in(known) | pl.col(col).is_null(), "the entry does not exist")
                  for col in ("src", "dst")]
    if "weight" in edges.columns:
        trusted = pl.col("source").is_in(sorted(TRUSTED_SOURCES))
        rules += [("weight", trusted & (pl.col("weight") != 1.0), "trusted edges have weight 1.0"),
                  ("weight", ~trusted & (pl.col("weight").is_null() | (pl.col("weight") <= 0) | (pl.col("weight") > 1)),
                   "a fading edge's weight is in (0, 1]")]
    return _problems(edges, "edges", rules)


def _known_ends(edges: pl.DataFrame, ids: set[str] | pl.Series) -> pl.Series:
    """The edges' ends that are among ``ids``: the ids column is scanned for the few ends a write
    names (not hashed whole: a bank of 100k entries would be hashed on every linked add)."""
    ends = pl.concat([edges["src"], edges["dst"]]).drop_nulls().unique()
    if not isinstance(ids, pl.Series):
        return ends.filter(ends.is_in(pl.Series(list(ids), dtype=pl.String).implode()))
    if ends.len() < ids.len():
        return ids.to_frame("id").filter(among("id", ends))["id"].unique()
    return ends.filter(ends.is_in(ids.implode()))


def problems_triples(triples: pl.DataFrame) -> list[Problem]:
    """Every rule the entity triples break: empty parts, duplicates.

    >>> problems_triples(pl.DataFrame({"subject": ["Kioko"], "relation": ["uses"], "object": [""]}))[0].column
    'object'
    """
    out: list[Problem] = []
    if triples.height == 0:
        return out
    indexed = triples.with_row_index("_row")
    for col in ("subject", "relation", "object"):
        for row in indexed.filter(pl.col(col).fill_null("").str.strip_chars() == "").iter_rows(named=True):
            out.append(Problem("triples", row["_row"], col, row[col], f"{col} is required and not empty"))
    for row in indexed.filter(pl.struct("subject", "relation", "object").is_duplicated()).iter_rows(named=True):
        out.append(
            Problem("triples", row["_row"], "subject,relation,object", (row["subject"], row["relation"], row["object"]), "a triple is unique")
        )
    return out


def cast_to_schema(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    """``frame`` with its columns cast to the table's dtypes where that loses nothing; a column that
    cannot be cast is a ValidationError naming it, its dtype and the dtype wanted.

    Cast: an all-null column or list (``List(Null)``, what ``pl.read_ndjson`` gives for empty lists)
    to the table's type; integers to a float column; integral floats to an integer column; naive
    datetimes read as UTC, other zones converted to UTC, dates at midnight UTC, ISO 8601 strings
    parsed; a struct or list in ``metadata`` / ``evidence`` encoded as JSON text. Unknown columns
    are left alone.

    >>> f = cast_to_schema(pl.DataFrame({"id": ["a1b2c3d4"], "systems": [[]], "usage_count": [2.0]}), "entries")
    >>> f.schema["systems"], f.schema["usage_count"]
    (List(String), Int64)
    >>> cast_to_schema(pl.DataFrame({"weight": ["high"]}), "edges")
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: weight='String': column weight is String and cannot be cast to Float64 (allowed: numbers)
    """
    schema = SCHEMAS[table]
    out = []
    for name, dtype in frame.schema.items():
        want = schema.get(name)
        col = pl.col(name)
        if want is None or dtype == want:
            out.append(col)
        else:
            out.append(_cast_column(frame, name, dtype, want).alias(name))
    return frame.select(out)


def _cast_column(frame: pl.DataFrame, name: str, dtype, want) -> pl.Expr:
    col = pl.col(name)
    series = frame[name]

    def cannot(allowed: str):
        return ValidationError(name, str(dtype), f"column {name} is {dtype} and cannot be cast to {want} (allowed: {allowed})")

    if dtype == pl.Null or series.null_count() == frame.height:
        return col.cast(want, strict=False)
    if isinstance(want, pl.List):
        if isinstance(dtype, pl.List) and (dtype.inner == pl.Null or dtype.inner == pl.String):
            return col.cast(want)
        if isinstance(dtype, pl.List) and dtype.inner in (pl.Categorical, pl.Enum):
            return col.cast(want)
        raise cannot("lists of strings")
    if isinstance(want, pl.Datetime):
        if isinstance(dtype, pl.Datetime):
            moved = col.dt.replace_time_zone("UTC") if dtype.time_zone is None else col.dt.convert_time_zone("UTC")
            return moved.cast(want)
        if dtype == pl.Date:
            return col.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        if dtype == pl.String:
            parsed = series.str.to_datetime(strict=False, time_zone="UTC")
            if parsed.null_count() > series.null_count():
                bad = series.filter(parsed.is_null() & series.is_not_null())[0]
                raise ValidationError(name, bad, f"column {name}: not an ISO 8601 timestamp")
            return col.str.to_datetime(strict=False, time_zone="UTC").cast(want)
        raise cannot("datetimes, dates, ISO 8601 strings")
    if want == pl.Float64:
        if dtype.is_numeric():
            return col.cast(want)
        raise cannot("numbers")
    if want == pl.Int64:
        if dtype.is_integer():
            return col.cast(want)
        if dtype.is_float() and bool((series.drop_nulls() == series.drop_nulls().round(0)).all()):
            return col.cast(want)
        raise cannot("integers, or floats with no fraction")
    if want == pl.String:
        if name in ("metadata", "evidence") and isinstance(dtype, pl.Struct):
            return col.struct.json_encode()
        if dtype in (pl.Categorical,) or isinstance(dtype, pl.Enum):
            return col.cast(want)
        raise cannot("strings")
    raise cannot(str(want))


def check_schema(frame: pl.DataFrame, table: str, *, required: tuple[str, ...] = ()) -> None:
    """Raise ValidationError when a column has the wrong dtype or a required column is missing.

    >>> check_schema(pl.DataFrame({"src": [1]}), "edges")
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: src='Int64': column src must be String
    """
    schema = SCHEMAS[table]
    for name in required:
        if name not in frame.columns:
            raise ValidationError(name, None, f"the {table} rows need a {name!r} column")
    for name, dtype in frame.schema.items():
        want = schema.get(name)
        if want is None or dtype == want or dtype == pl.Null:
            continue
        if isinstance(want, pl.Datetime) and isinstance(dtype, pl.Datetime):
            continue
        if want == pl.Float64 and dtype.is_numeric():
            continue
        if want == pl.Int64 and dtype.is_integer():
            continue
        raise ValidationError(name, str(dtype), f"column {name} must be {want}")


def check_entries(entries: pl.DataFrame) -> None:
    """Raise the first problem of new entry rows (see :func:`problems_entries`)."""
    probs = problems_entries(entries)
    if probs:
        p = probs[0]
        raise ValidationError(p.column, p.value, p.rule, row=p.row)


def check_edges(edges: pl.DataFrame, ids: set[str] | pl.Series | None, *, existing: pl.DataFrame | None = None) -> None:
    """Raise the first problem of new edge rows, including a clash with ``existing`` edges.

    >>> e = pl.DataFrame({"src": ["a1b2c3d4"], "dst": ["a1b2c3d4"], "type": ["clarifies"], "source": ["author"], "weight": [1.0]})
    >>> check_edges(e, {"a1b2c3d4"})
    Traceback (most recent call last):
    ...
    kbtools.errors.EdgeRuleError: row 0: edge a1b2c3d4 -> a1b2c3d4 (clarifies): an entry cannot point at itself
    """
    probs = problems_edges(edges, ids)
    if probs:
        p = probs[0]
        r = edges.row(p.row, named=True)
        raise EdgeRuleError(f"row {p.row}: edge {r['src']} -> {r['dst']} ({r['type']}): {p.rule}"
                            + ("" if p.column in ("dst",) and p.rule.startswith("an entry") else f" (got {p.column}={p.value!r})"))
    if existing is not None and existing.height and edges.height:
        # a scan for the few sources, not a hash of every edge
        near = existing.select("src", "dst", "type").filter(among("src", edges["src"]))
        clash = edges.with_row_index("_row").join(near, on=["src", "dst", "type"], how="semi")
        if clash.height:
            r = clash.row(0, named=True)
            raise EdgeRuleError(
                f"row {r['_row']}: edge {r['src']} -> {r['dst']} ({r['type']}): already exists; (src, dst, type) is unique"
            )
