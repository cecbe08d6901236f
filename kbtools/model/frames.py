"""Expressions over the bank's frames that the layers share.

A write reads a whole table for a handful of keys (the edges of its few entries, the rows its
commit replaces). ``pl.col(c).is_in(values)`` is the plain way to say it, but polars compares a
list of up to eight values with each row one value at a time (eight values cost three times a
hashed list of any length) and an equality per value costs half of one such comparison:
:func:`among` says the same thing at the lower cost. A table a process keeps appending to is held
in many chunks, and ``with_row_index`` and a filter on it copy every selected column whole:
:func:`rows_where` finds the rows first and gathers those alone.

>>> import polars as pl
>>> f = pl.DataFrame({"src": ["a", "b", "c", None]})
>>> f.filter(among("src", ["c", "a"]))["src"].to_list()
['a', 'c']
"""

from __future__ import annotations

from functools import reduce
from operator import or_

import polars as pl

__all__ = ["FEW_VALUES", "among", "rows_where"]

#: Up to this many values, :func:`among` compares each (``is_in`` would compare them one by one, slower)
FEW_VALUES = 8


def among(column: str, values) -> pl.Expr:
    """Whether ``column``'s value is one of ``values`` (any iterable, a polars Series included; null
    values are left out: a null row is never among them), as a filter reads it: what
    ``pl.col(column).is_in(values)`` says, an equality per value for a few of them.

    >>> import polars as pl
    >>> f = pl.DataFrame({"id": [f"e{i}" for i in range(20)]})
    >>> [f.filter(among("id", [f"e{i}" for i in range(n)])).height for n in (0, 1, 8, 9, 30)]
    [0, 1, 8, 9, 20]
    """
    wanted = list(dict.fromkeys(v for v in (values.to_list() if isinstance(values, pl.Series) else values)
                                if v is not None))
    if not wanted:  # false, and null on a null row (as is_in gives it, so that a negation keeps it out too)
        return pl.when(pl.col(column).is_not_null()).then(pl.lit(False))
    if len(wanted) <= FEW_VALUES:
        return reduce(or_, (pl.col(column) == v for v in wanted))
    return pl.col(column).is_in(pl.Series(wanted).implode())


def rows_where(frame: pl.DataFrame, predicate: pl.Expr, *, index: str = "_pos", columns=None) -> pl.DataFrame:
    """The rows of ``frame`` where ``predicate`` holds (its ``columns``, all by default), with their
    row numbers in ``frame`` as column ``index`` (UInt32): what ``frame.with_row_index(index)
    .filter(predicate)`` gives, the rows found by one scan and only they gathered.

    >>> import polars as pl
    >>> f = pl.concat([pl.DataFrame({"src": ["a", "b"]}), pl.DataFrame({"src": ["c", "a"]})], rechunk=False)
    >>> rows_where(f, among("src", ["a"])).rows()
    [('a', 0), ('a', 3)]
    """
    at = frame.select(predicate.fill_null(False).arg_true().cast(pl.UInt32).alias(index)).get_column(index)
    picked = frame.select(list(columns) if columns is not None else pl.all())
    return picked.select(pl.all().gather(at)).with_columns(at)
