"""Judges for the replay: who says whether a returned entry is relevant to a query.

A judge is any callable ``judge(query, entry_id, entry_text) -> bool | float``: a model, a
person's labels, a rule. A float counts as relevant at or above the replay's threshold (0.5). The
built-in :class:`GoldJudge` reads gold labels: the ``relevant`` ids of each query in a
ground-truth sidecar (or a JSON-lines query file that carries them).

>>> judge = GoldJudge.from_queries([{"query": "log in", "relevant": ["a1"]}])
>>> judge("log in", "a1", ""), judge("log in", "b2", "")
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from kbtools.errors import ValidationError

__all__ = ["Judge", "GoldJudge", "verdict"]

#: ``judge(query, entry_id, entry_text) -> bool | float``.
Judge = Callable[[str, str, str], "bool | float"]


@dataclass(frozen=True)
class GoldJudge:
    """Relevant means listed among the query's gold ``relevant`` ids.

    >>> GoldJudge({"q": frozenset({"a"})}).name
    'gold labels'
    """

    labels: Mapping[str, frozenset[str]]
    name: str = "gold labels"

    @classmethod
    def from_queries(cls, queries: Sequence[dict]) -> "GoldJudge":
        """Labels from queries with ``query`` and ``relevant``; every query must carry labels.

        >>> GoldJudge.from_queries([{"query": "x", "relevant": None}])
        Traceback (most recent call last):
        ...
        kbtools.errors.ValidationError: row 0: relevant=None: the gold judge needs relevant ids for every query; pass judge= to judge unlabelled queries
        """
        labels: dict[str, frozenset[str]] = {}
        for i, q in enumerate(queries):
            relevant = q.get("relevant")
            if relevant is None:
                raise ValidationError("relevant", None, "the gold judge needs relevant ids for every query; "
                                      "pass judge= to judge unlabelled queries", row=i)
            labels[q["query"]] = labels.get(q["query"], frozenset()) | frozenset(relevant)
        return cls(labels)

    def __call__(self, query: str, entry_id: str, entry_text: str) -> bool:
        return entry_id in self.labels.get(query, frozenset())


def verdict(value, *, threshold: float = 0.5) -> bool:
    """A judge's answer as relevant or not: booleans as they are, numbers at or above ``threshold``.

    >>> verdict(True), verdict(0.7), verdict(0.2), verdict(1)
    (True, True, False, True)
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value) >= threshold
    raise ValidationError("judge", value, "a judge returns a bool or a number")
