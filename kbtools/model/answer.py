"""What a query hands back: an :class:`Answer` of ranked :class:`Result` rows with their pointers.

An answer is a frozen value. It renders three ways from the same data: ``text()`` for an agent
(plain, deterministic), ``to_frame()`` for an analyst (one polars row per result, pointer and
neighbour) and ``_repr_html_()`` for a notebook. ``to_dict()`` is JSON-ready.

A :class:`Pointer` hangs from a result. ``kind="folded"`` is a pool member folded into the result
at retrieval time; ``kind="neighbor"`` is an entry one edge away that was not in the pool at all;
``kind="answer"`` is another result of the same answer that supersedes, corrects or clarifies this
one, or is its parent (two top results are protected from folding into each other, so the older
one says which result replaces it).
``relation`` is the edge's type, ``direction`` reads the edge from the side of the entry the pointer
hangs from: ``"out"`` when that entry is the edge's source, ``"in"`` when it is the target. The
entry is the result itself, or the ``via`` entry when the pointer was reached over more than one hop.

>>> p = Pointer("b2", "corrects", "in", "its retry caveat is stale", "Retries are safe.", kind="folded")
>>> r = Result("a1", 1, 0.9, title="Dated dispatch", summary="Use the dated label.", related=[p])
>>> a = Answer("dispatch label", [r], folded=True)
>>> print(a.text())
Answer for: dispatch label
1. Dated dispatch [a1]
  Use the dated label.
  ↳ folded: b2 corrects (in) — its retry caveat is stale — Retries are safe.
>>> a.ids()
['a1']
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

import polars as pl

from kbtools.model.answer_html import answer_html, linked_text

__all__ = ["Pointer", "Result", "Answer", "ANSWER_FRAME_SCHEMA", "POINTER_LINES", "pointer_lines_of"]

#: Folded pointers an agent reads in full under one result; the others are named on one line by id
#: (a document bank's citations fold dozens of pool entries into one result). The answer's data
#: (:meth:`Answer.to_dict`, the notebook view) keeps every pointer.
POINTER_LINES: int = 12

#: Columns of :meth:`Answer.to_frame`, in order.
ANSWER_FRAME_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int64,
    "kind": pl.String,
    "id": pl.String,
    "parent": pl.String,
    "relation": pl.String,
    "direction": pl.String,
    "note": pl.String,
    "summary": pl.String,
    "title": pl.String,
    "score": pl.Float64,
    "via": pl.String,
}


@dataclass(frozen=True)
class Pointer:
    """A typed pointer from a result to another entry (folded pool member or outside neighbour).

    >>> Pointer("c3", "cites", "out", None, "How to start a session.", kind="neighbor").line()
    '↳ neighbor: c3 cites (out) — How to start a session.'
    """

    id: str
    relation: str
    direction: str
    note: str | None = None
    summary: str | None = None
    via: str | None = None
    kind: str = "folded"
    source: str | None = None
    title: str | None = None

    def line(self) -> str:
        """The pointer as one plain line: ``↳ <kind>: <id> <relation> (<direction>) [via <id>] — note — summary``.

        Empty parts are left out; the title stands in for a missing summary; a note that the summary
        says word for word (a citation's sentence, often the entry's first) is written once.

        >>> Pointer("d4", "cites", "in", "see step 3", None, via="b2", title="Old dispatch").line()
        '↳ folded: d4 cites (in) via b2 — see step 3 — Old dispatch'
        """
        head = f"↳ {self.kind}: {self.id} {self.relation} ({self.direction})"
        if self.via:
            head += f" via {self.via}"
        return " — ".join([head, *said_once(self.note, self.summary or self.title)])


@dataclass(frozen=True)
class Result:
    """One ranked result: an entry, its folded pointers (``related``) and its ``neighbors``.

    ``rank`` is the 1-based position in the answer; ``pool_rank`` the entry's own rank in the pool
    (a representative takes its group's best position, so the two can differ).

    >>> Result("a1", 1, 0.5).kind
    'result'
    """

    id: str
    rank: int
    score: float | None = None
    kind: str = "result"
    title: str | None = None
    summary: str | None = None
    related: list[Pointer] = field(default_factory=list)
    neighbors: list[Pointer] = field(default_factory=list)
    steps: list[str] | None = None
    entry_kind: str | None = None
    pool_rank: int | None = None
    #: the answer's other results that dominate this one (pointers of kind ``"answer"``)
    dominated_by: list[Pointer] = field(default_factory=list)

    def pointers(self) -> list[Pointer]:
        """The results that dominate it, folded pointers, then neighbours, in display order.

        >>> Result("a1", 1, related=[Pointer("b", "cites", "out")]).pointers()[0].id
        'b'
        """
        return [*self.dominated_by, *self.related, *self.neighbors]


@dataclass(frozen=True)
class Answer:
    """The answer to one query: ranked results, each with its pointers; rendered for agent or analyst.

    ``folded`` says whether folding ran; ``method`` names what produced the answer
    (``fold``, ``flat``, ``collapse``, ``mmr``). ``linked`` holds entries brought in by spreading
    activation and ``links`` its link lines (filled by a later stage; empty here).

    >>> Answer(None, []).text()
    'No results.'
    >>> Answer("q", []).to_frame().columns[:3]
    ['rank', 'kind', 'id']
    """

    query: str | None
    results: list[Result]
    folded: bool = True
    linked: list[Any] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    method: str = "fold"

    def ids(self) -> list[str]:
        """Result ids in answer order (what a caller bumps usage for).

        >>> Answer("q", [Result("a", 1), Result("b", 2)]).ids()
        ['a', 'b']
        """
        return [r.id for r in self.results]

    def text(self) -> str:
        """What an agent reads: numbered results, summary, playbook steps in full, then pointer lines.

        >>> print(Answer(None, [Result("a1", 1, title="T", steps=["log in", "post"])]).text())
        1. T [a1]
          Steps:
            1. log in
            2. post
        """
        lines: list[str] = []
        if self.query:
            lines.append(f"Answer for: {self.query}")
        if not self.results:
            lines.append("No results.")
        for result in self.results:
            lines.extend(_result_lines(result))
        if self.linked:
            lines.append("Brought in by links:")
            lines.extend(f"  - {linked_text(item)}" for item in self.linked)
        if self.links:
            lines.append("How these entries connect:")
            lines.extend(f"  {line}" for line in self.links)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def to_frame(self) -> pl.DataFrame:
        """One row per result, folded pointer and neighbour (columns :data:`ANSWER_FRAME_SCHEMA`).

        Pointer rows carry the result's rank and its id as ``parent``; results have a null parent.

        >>> a = Answer("q", [Result("a", 1, 0.9, related=[Pointer("b", "cites", "out")])])
        >>> a.to_frame().select("rank", "kind", "id", "parent").rows()
        [(1, 'result', 'a', None), (1, 'folded', 'b', 'a')]
        """
        rows: list[dict[str, Any]] = []
        for r in self.results:
            rows.append(
                dict(rank=r.rank, kind="result", id=r.id, parent=None, relation=None, direction=None,
                     note=None, summary=r.summary, title=r.title, score=_float(r.score), via=None)
            )
            for p in r.pointers():
                rows.append(
                    dict(rank=r.rank, kind=p.kind, id=p.id, parent=r.id, relation=p.relation,
                         direction=p.direction, note=p.note, summary=p.summary, title=p.title,
                         score=None, via=p.via)
                )
        return pl.DataFrame(rows, schema=ANSWER_FRAME_SCHEMA, orient="row") if rows else pl.DataFrame(
            schema=ANSWER_FRAME_SCHEMA
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: query, folded, method, results (with pointers), linked, links.

        >>> Answer("q", [Result("a", 1, 0.5)]).to_dict()["results"][0]["id"]
        'a'
        """
        results = []
        for r in self.results:
            d = dataclasses.asdict(r)
            d["score"] = _float(r.score)
            results.append(d)
        return {
            "query": self.query,
            "folded": self.folded,
            "method": self.method,
            "results": results,
            "linked": [_linked_dict(item) for item in self.linked],
            "links": list(self.links),
        }

    def _repr_html_(self) -> str:
        """The notebook view: results with their pointers in expandable ``<details>`` (the explorer
        widget shows the same HTML, :func:`kbtools.model.answer_html.answer_html`)."""

        return answer_html(self)


def fast_instance(cls, values: dict[str, Any]):
    """A frozen dataclass instance without its ``__init__`` (fold's hot path): ~3x cheaper than the
    generated ``__init__``, which sets each field through ``object.__setattr__``. ``values`` must
    name every field; nothing is validated."""
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj


def _float(value) -> float | None:
    return None if value is None else float(value)


def result_head_lines(r: Result) -> list[str]:
    """The lines of one result an agent reads before its pointers: rank, title, id, kind, summary
    and a playbook's steps in full."""
    head = f"{r.rank}. {r.title or r.id}"
    if r.title:
        head += f" [{r.id}]"
    if r.entry_kind and r.entry_kind not in ("knowledge",):
        head += f" ({r.entry_kind})"
    lines = [head]
    if r.summary:
        lines.append(f"  {r.summary}")
    if r.steps:
        lines.append("  Steps:")
        lines.extend(f"    {i}. {step}" for i, step in enumerate(r.steps, 1))
    return lines


def said_once(note: str | None, about: str | None) -> list[str]:
    """The pointer's note and what it is about, each once: empty ones left out, and one that holds
    the other (white space aside) in place of both.

    >>> said_once("See step 3.", "See step 3.  Then log in.")
    ['See step 3.  Then log in.']
    >>> said_once("see step 3", "Old dispatch")
    ['see step 3', 'Old dispatch']
    """
    texts = [t.strip() for t in (note, about) if t and t.strip()]
    if len(texts) == 2:
        a, b = (" ".join(t.split()).lower() for t in texts)
        if a in b or b in a:
            return [texts[0] if len(a) >= len(b) else texts[1]]
    return texts


def pointer_lines_of(r: Result, line: Callable[[Pointer], str]) -> list[str]:
    """A result's pointer lines as an agent reads them: the results that dominate it, its first
    :data:`POINTER_LINES` folded pointers by ``line``, the others by id on one line, then its
    neighbours by ``line``.

    >>> r = Result("a", 1, related=[Pointer(f"p{i}", "part_of" if i > 13 else "cites", "in") for i in range(15)])
    >>> pointer_lines_of(r, Pointer.line)[-1]
    '↳ 3 more folded: cites (in) p12, p13; part_of (in) p14'
    """
    shown = [line(p) for p in (*r.dominated_by, *r.related[:POINTER_LINES])]
    rest = r.related[POINTER_LINES:]
    if rest:
        by_edge: dict[str, list[str]] = {}
        for p in rest:
            by_edge.setdefault(f"{p.relation} ({p.direction})", []).append(p.id)
        named = "; ".join(f"{edge} {', '.join(ids)}" for edge, ids in by_edge.items())
        shown.append(f"↳ {len(rest)} more folded: {named}")
    return shown + [line(p) for p in r.neighbors]


def _result_lines(r: Result) -> list[str]:
    return [*result_head_lines(r), *(f"  {text}" for text in pointer_lines_of(r, Pointer.line))]


def _linked_dict(item):
    if dataclasses.is_dataclass(item):
        return dataclasses.asdict(item)
    return item if isinstance(item, dict) else str(item)
