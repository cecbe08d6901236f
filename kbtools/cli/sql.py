"""``kb sql``: SQL over a bank's tables, read right (DuckDB views over the manifest's files)."""

from __future__ import annotations

from kbtools.cli.base import command, frame_out as _frame_out, register_args

__all__: list[str] = []


@command("sql", "run one read-only SELECT over a bank's tables (DuckDB; needs the duckdb extra)")
def _sql(args):
    """Run exactly one SELECT over the bank's tables: entries, edges, events, triples, usage. Each
    table is read from exactly the files the manifest names, with the latest version of each row
    and deleted rows dropped (a glob over tables/*/*.parquet is wrong between compactions).
    Allowed: one statement that DuckDB parses as a SELECT (WITH, FROM-first, VALUES, DESCRIBE,
    SHOW and SUMMARIZE too). Refused, running nothing (exit 1): several statements, COPY, ATTACH,
    SET, INSERT and every other statement, and any read of a file (read_csv, read_text, glob, a
    quoted path): DuckDB runs with external access off and its configuration locked. Nothing is
    written: not the bank, not any other file.

    kb sql data/demo/engineering "SELECT type, count(*) AS n FROM edges GROUP BY type ORDER BY n DESC"
    kb sql banks/eng "SELECT id, title, usage_count FROM entries ORDER BY usage_count DESC LIMIT 5" --csv
    """
    from kbtools.store.scan import sql
    from kbtools.store.bank import open_bank

    return _frame_out(sql(open_bank(args.path, readonly=True), args.query), args, text_rows=args.rows)


register_args("sql", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("query", help='the SQL, e.g. "SELECT kind, count(*) FROM entries GROUP BY kind"'),
    p.add_argument("--rows", type=int, default=40, help="rows shown as text (default 40; --csv and --json give all)"),
    p.add_argument("--csv", action="store_true", help="print CSV"),
))
