"""The answer text an agent reads in each hop-lab arm: a pure renderer over a ``kb.Answer``.

The layout follows ``Answer.text()`` (numbered results with title, id, kind, summary and playbook
steps, then one line per pointer: a result's first ``POINTER_LINES`` folded pointers, the others named
by id on one line, then its neighbours), with two differences that make arms comparable: a pointer's note
comes last, marked ``— note:``, so it can be stripped or parsed; and the text a pointer carries
about its target is chosen by ``pointer_text``:

- ``"summary"``: the target's one-sentence summary (title when it has none), as folding shows it;
- ``"useful_for"``: the target's useful-for line;
- ``"snippet"``: the first ``snippet_chars`` characters of the target's content, cut at a word;
- ``"none"``: nothing: the id and the relation only.

>>> from kbtools.model.answer import Answer, Pointer, Result
>>> p = Pointer("b2", "clarifies", "in", "The rotate step fails without this.", "Clocks drift.", kind="neighbor")
>>> a = Answer("rotate the key", [Result("a1", 1, title="Recipe", summary="How to rotate.", neighbors=[p])])
>>> print(render_answer(a))
Answer for: rotate the key
1. Recipe [a1]
  How to rotate.
  ↳ neighbor: b2 clarifies (in) — Clocks drift. — note: The rotate step fails without this.
>>> print(render_answer(a, notes=False, pointer_text="none").splitlines()[-1])
  ↳ neighbor: b2 clarifies (in)
"""

from __future__ import annotations

from typing import Any, Mapping

import polars as pl

from kbtools.model.answer import Answer, Pointer, pointer_lines_of, result_head_lines
from kbtools.errors import ValidationError

__all__ = ["POINTER_TEXTS", "render_answer", "snippet"]

#: What a pointer can carry about its target.
POINTER_TEXTS: tuple[str, ...] = ("summary", "useful_for", "snippet", "none")


def render_answer(answer: Answer, *, notes: bool = True, pointer_text: str = "summary",
                  entries: pl.DataFrame | Mapping[str, Mapping[str, Any]] | None = None,
                  snippet_chars: int = 100) -> str:
    """The answer as an agent reads it in one arm (see the module docstring).

    ``entries`` (a frame with ``id``, ``useful_for``, ``content``, or a mapping id -> row) supplies
    the useful-for lines and content snippets; without it those pointers carry nothing.
    """
    if pointer_text not in POINTER_TEXTS:
        raise ValidationError("pointer_text", pointer_text, f"one of {', '.join(POINTER_TEXTS)}")
    rows = _rows(entries)
    lines = [f"Answer for: {answer.query}"] if answer.query else []
    if not answer.results:
        lines.append("No results.")
    for result in answer.results:
        lines.extend(_result_lines(result))
        lines.extend("  " + text for text in
                     pointer_lines_of(result, lambda p: _pointer_line(p, notes, pointer_text, rows, snippet_chars)))
    return "\n".join(lines)


def snippet(text: str | None, chars: int = 100) -> str:
    """The first ``chars`` characters of ``text``, cut back to a word boundary, with ``…`` if cut.

    >>> snippet("Hosts whose clocks drift apart", 18)
    'Hosts whose clocks…'
    >>> snippet("short", 18)
    'short'
    """
    text = " ".join((text or "").split())
    if len(text) <= chars:
        return text
    cut = text[:chars]
    if " " in cut and not text[chars].isspace():
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip() + "…"


def _rows(entries) -> Mapping[str, Mapping[str, Any]]:
    if entries is None:
        return {}
    if isinstance(entries, pl.DataFrame):
        cols = [c for c in ("id", "useful_for", "content") if c in entries.columns]
        return {r["id"]: r for r in entries.select(cols).iter_rows(named=True)}
    return entries


_result_lines = result_head_lines


def _pointer_line(p: Pointer, notes: bool, pointer_text: str, rows, snippet_chars: int) -> str:
    head = f"↳ {p.kind}: {p.id} {p.relation} ({p.direction})"
    if p.via:
        head += f" via {p.via}"
    parts = [head]
    about = _about(p, pointer_text, rows, snippet_chars)
    if about:
        parts.append(about)
    if notes and p.note and p.note.strip():
        parts.append(f"note: {p.note.strip()}")
    return " — ".join(parts)


def _about(p: Pointer, pointer_text: str, rows, snippet_chars: int) -> str | None:
    if pointer_text == "summary":
        text = p.summary or p.title
    elif pointer_text == "useful_for":
        text = (rows.get(p.id) or {}).get("useful_for")
    elif pointer_text == "snippet":
        text = snippet((rows.get(p.id) or {}).get("content"), snippet_chars)
    else:
        text = None
    return text.strip() if text and text.strip() else None
