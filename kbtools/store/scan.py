"""The door for other tools: a bank's tables as a polars LazyFrame, a DuckDB connection or SQL,
read over exactly the files the manifest names, with the bank's rule applied.

Globbing ``tables/<table>/*.parquet`` is wrong: superseded segments stay on disk until the sweep
removes them, and a keyed table (entries, edges, triples) holds every version of a row. The rule:
only the manifest's segments count; for a keyed table the row with the latest ``_seq`` of each
key wins (later rows of the same ``_seq`` after earlier ones) and a tombstone (``_deleted``)
removes the key; ``usage`` is folded into ``entries.usage_count`` / ``last_used_at``.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> from kbtools.ops.writes import report_learning, update_entry
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", settings={"auto_link": False})
>>> a = report_learning(bank, content="Old text.", actor="x")
>>> update_entry(bank, a, actor="x", content="New text.")
>>> scan(bank, "entries").select("content").collect().item()
'New text.'
"""

from __future__ import annotations

import polars as pl
import polars.selectors as cs

from kbtools.errors import KbError, SqlRefused
from kbtools.model.schema import KEYS, SCHEMAS, TABLES, empty
from kbtools.store.segments import check_segment, segment_files
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # scan only reads a bank's snapshot: any open bank will do
    from kbtools.store.bank import Bank

__all__ = ["scan", "duckdb", "sql", "table_sql", "LOCKED_CONFIG", "SQL_STATEMENTS"]

_SEQ, _DELETED = "_seq", "_deleted"


def _check_table(table: str) -> None:
    if table not in SCHEMAS:
        raise KbError(f"unknown table {table!r}: the tables are {', '.join(TABLES)}")


def _files(bank: Bank, table: str) -> list[str]:
    """The segment files of ``table``, each footer read once per open bank (segments never change):
    a damaged one is :class:`~kbtools.errors.BankDamaged` here, not an engine's error later."""
    names = segment_files(bank)[table]
    checked = bank.derived("segment-footers-read", set, on=())
    for rel in names:
        if rel not in checked:
            check_segment(bank.path, table, rel)
            checked.add(rel)
    return [str(bank.path / rel) for rel in names]


def scan(bank: Bank, table: str) -> pl.LazyFrame:
    """One table of ``bank``'s snapshot as a polars LazyFrame over the manifest's segment files,
    with exactly the columns of ``kbtools.model.schema.SCHEMAS`` and the rule applied (see the module doc); ``entries``
    carries the usage counted so far, as ``bank.entries`` does. Collect it while the snapshot's
    files exist (a compaction sweeps superseded files after a while); ``.collect().to_pandas()``
    gives pandas (the ``pandas`` extra).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> scan(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), "edges").collect().height
    0
    """
    _check_table(table)
    schema = SCHEMAS[table]
    if table == "usage":  # committed rows and the per-process logs not yet merged: the store's view
        return bank.usage.lazy()
    files = _files(bank, table)
    if not files:
        return empty(table).lazy()
    parts = [pl.scan_parquet(f) for f in files]
    rows = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
    if table in KEYS:
        rows = _latest(rows, list(KEYS[table]))
    rows = rows.select([pl.col(c).cast(t) for c, t in schema.items()])
    if table == "entries":
        rows = _fold_usage(rows, bank.usage.lazy())
    return rows


def _latest(rows: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """One row per key: its latest version (``_seq``, then file order), tombstones dropped, in the
    order keys first appeared."""
    rows = rows.with_row_index("_ord")
    last = rows.sort(_SEQ, "_ord").unique(subset=keys, keep="last")
    first = rows.group_by(keys).agg(pl.col("_ord").min().alias("_first"))
    return (last.join(first, on=keys, how="left", nulls_equal=True)
            .filter(~pl.col(_DELETED).fill_null(False)).sort("_first"))


def _fold_usage(entries: pl.LazyFrame, usage: pl.LazyFrame) -> pl.LazyFrame:
    counts = usage.group_by("id").agg(pl.len().alias("_n"), pl.col("at").max().alias("_last"))
    return (entries.join(counts, on="id", how="left")
            .with_columns((pl.col("usage_count") + pl.col("_n").fill_null(0)).alias("usage_count"),
                          pl.max_horizontal("last_used_at", "_last").alias("last_used_at"))
            .select(list(SCHEMAS["entries"])))


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def table_sql(bank: Bank, table: str) -> str:
    """The DuckDB ``SELECT`` that reads one table of ``bank`` right (the manifest's files, the
    latest-``_seq`` rule, tombstones dropped): what :func:`duckdb` defines its views with on a
    connection you pass it, for a reader that wants to paste it elsewhere. ``usage`` (and the usage
    folded into ``entries``) comes from a table the connection registers, ``_usage_rows``.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> table_sql(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), "edges")[:25]
    'SELECT "src", "dst", "typ'
    """
    _check_table(table)
    cols = ", ".join(f'"{c}"' for c in SCHEMAS[table])
    if table == "usage":
        return f"SELECT {cols} FROM _usage_rows"
    files = _files(bank, table)
    if not files:
        return f"SELECT {cols} FROM _empty_{table}"
    source = f"read_parquet([{', '.join(_quote(f) for f in files)}], union_by_name = true, filename = true, " \
             "file_row_number = true)"
    if table not in KEYS:
        return f"SELECT {cols} FROM {source}"
    keys = ", ".join(f'"{k}"' for k in KEYS[table])
    latest = (f"SELECT * FROM {source} QUALIFY row_number() OVER (PARTITION BY {keys} "
              f"ORDER BY _seq DESC, filename DESC, file_row_number DESC) = 1")
    base = f"SELECT {cols} FROM ({latest}) WHERE NOT coalesce(_deleted, false)"
    if table != "entries":
        return base
    return (f"SELECT {', '.join(_entry_col(c) for c in SCHEMAS['entries'])} FROM ({base}) AS e "
            "LEFT JOIN (SELECT \"id\" AS _id, count(*) AS _n, max(\"at\") AS _last FROM _usage_rows GROUP BY \"id\") AS u "
            "ON e.id = u._id")


def _entry_col(c: str) -> str:
    if c == "usage_count":
        return 'e.usage_count + coalesce(u._n, 0) AS usage_count'
    if c == "last_used_at":
        return 'greatest(e.last_used_at, u._last) AS last_used_at'
    return f'e."{c}"'


#: a connection that can touch no file: no reads or writes outside the registered tables, no
#: extension loaded or fetched, no spill to a temp folder, and no SET that undoes any of it
LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "temp_directory": "",
    "lock_configuration": True,
}

#: the statement types kb sql runs (DuckDB's parser reads WITH, FROM-first, VALUES, DESCRIBE, SHOW and
#: SUMMARIZE as a SELECT)
SQL_STATEMENTS = ("SELECT",)


def duckdb(bank: Bank, *, connection=None):
    """A DuckDB connection with one view per table of ``bank`` (entries, edges, events, triples,
    usage), each read right: over the manifest's files, latest version per key, tombstones dropped,
    usage folded into entries. Needs the ``duckdb`` extra.

    Without ``connection`` the connection is locked down: each table is the bank's snapshot
    (``bank.table``: the manifest's files, the same rows :func:`scan` gives), held in memory and
    registered through Arrow, and DuckDB runs with external access off (no file read or written,
    no extension loaded, no spill to disk) and its configuration locked (``LOCKED_CONFIG``), so no
    query on it can reach a host file or change the bank. With ``connection`` the views are defined
    on your connection over ``read_parquet`` of the manifest's files (:func:`table_sql`) and its
    settings are left as they are: join the bank with your own files there.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> con = duckdb(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))  # doctest: +SKIP
    >>> con.sql("SELECT count(*) FROM entries").fetchone()  # doctest: +SKIP
    (0,)
    """
    try:
        import duckdb as _duckdb
    except ImportError:
        raise KbError("kb.duckdb needs DuckDB: pip install 'kbtools[duckdb]'") from None
    if connection is None:
        con = _duckdb.connect(config=dict(LOCKED_CONFIG))
        for table in TABLES:
            con.register(table, bank.table(table).to_arrow())
        return con
    connection.register("_usage_rows", bank.usage.to_arrow())
    for table in TABLES:
        if not _files(bank, table):
            connection.register(f"_empty_{table}", empty(table).to_arrow())
        connection.execute(f"CREATE OR REPLACE VIEW {table} AS {table_sql(bank, table)}")
    return connection


def sql(bank: Bank, query: str) -> pl.DataFrame:
    """The rows of one read-only SQL query over ``bank``'s tables (the locked DuckDB connection of
    :func:`duckdb`) as a polars frame. The query must be exactly one statement that DuckDB's parser
    reads as a SELECT (WITH, FROM-first, VALUES, DESCRIBE, SHOW, SUMMARIZE included); anything else
    (a COPY, an ATTACH, a SET, a second statement, a file outside the bank) is :class:`SqlRefused`
    and runs nothing; a query DuckDB cannot run is a KbError naming it.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> sql(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"), "SELECT count(*) AS n FROM edges")  # doctest: +SKIP
    """
    con = duckdb(bank)  # says what to install when DuckDB is missing
    import duckdb as _duckdb

    try:
        statement = _one_select(con, query)
        rel = con.sql(statement)  # a SELECT always gives a relation
        # DuckDB names the zone of the bank's UTC timestamps Etc/UTC; give them back as the bank does
        return rel.pl().with_columns(cs.datetime(time_zone="*").dt.convert_time_zone("UTC"))
    except _duckdb.PermissionException as err:
        raise SqlRefused(query, f"DuckDB: {_first_line(err)}") from None
    except _duckdb.Error as err:
        raise KbError(f"SQL {query!r}: {_first_line(err)} (tables: {', '.join(TABLES)})") from None
    finally:
        con.close()


def _one_select(con, query: str):
    """The one statement of ``query``, checked by DuckDB's own parser to be a SELECT."""
    statements = con.extract_statements(query)
    if len(statements) != 1:
        raise SqlRefused(query, f"{len(statements)} statements" if statements else "no statement")
    kind = statements[0].type.name
    if kind not in SQL_STATEMENTS:
        raise SqlRefused(query, f"statement type {kind}")
    return statements[0]


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0]
