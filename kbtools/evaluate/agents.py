"""Agents for the hop lab: the pluggable protocol and the built-in deterministic reader agent.

An agent is any callable ``agent(task_query, answer_text, fetch) -> final_answer``: it reads the
answer text a query returned, may call ``fetch(entry_id)`` (the full text of an entry) as often as
it likes, and returns its final answer as text. A user with a model wraps it in such a callable.

The built-in :class:`ReaderAgent` is a **simulation, not a model**, and every report says so. It
reads the pointer lines of the answer (``↳ folded: ...`` / ``↳ neighbor: ...``, as rendered by
:func:`kbtools.evaluate.render.render_answer`) and follows a pointer exactly when the pointer's
relation and note share at least ``min_shared`` stemmed, stop-word-free terms with the task query;
never otherwise (a pointer without a note offers only its relation). It fetches nothing else. Its
final answer is every line of the answer text that shares a term with the task query, followed by
the text of every entry it fetched: so a proof token that leaked into the answer text makes it
"correct" without the hop, which is exactly what the leak check exists to catch.

>>> agent = ReaderAgent()
>>> text = "1. Recipe [a1]\\n  ↳ neighbor: b2 clarifies (in) — Clock drift — note: The rotate step fails without this."
>>> fetched = []
>>> answer = agent("how do I rotate the key", text, lambda i: fetched.append(i) or f"entry {i}: ZX-1-Q")
>>> fetched, "ZX-1-Q" in answer
(['b2'], True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, NamedTuple, Protocol

from kbtools.errors import ValidationError
from kbtools.words import WORD_RE, content_stem

__all__ = ["Agent", "Fetch", "SIMULATED_AGENT", "ReaderAgent", "PointerLine", "pointer_lines", "terms",
           "agent_name", "is_simulated"]

#: ``fetch(entry_id) -> text``: the tool an agent calls to read an entry in full.
Fetch = Callable[[str], str]
#: How every report names the built-in agent.
SIMULATED_AGENT = "simulated reader agent, not a model"


class Agent(Protocol):
    """The agent protocol: ``agent(task_query, answer_text, fetch) -> final answer``."""

    def __call__(self, task_query: str, answer_text: str, fetch: Fetch) -> str: ...


class PointerLine(NamedTuple):
    """A pointer line parsed from an answer text."""

    kind: str
    id: str
    relation: str
    direction: str
    note: str | None
    line: str


_POINTER_RE = re.compile(r"^\s*↳ (folded|neighbor): (\S+) (\S+) \((in|out)\)(?: via \S+)?(.*)$")
_NOTE_MARK = " — note: "


def pointer_lines(answer_text: str) -> list[PointerLine]:
    """The pointer lines of a rendered answer, in order; the note is what follows ``— note:``.

    >>> pointer_lines("1. T [a]\\n  ↳ folded: b cites (out) — Summary. — note: why it matters")
    [PointerLine(kind='folded', id='b', relation='cites', direction='out', note='why it matters', line='↳ folded: b cites (out) — Summary. — note: why it matters')]
    """
    out = []
    for raw in answer_text.splitlines():
        m = _POINTER_RE.match(raw)
        if not m:
            continue
        rest = m.group(5)
        _, mark, note = rest.partition(_NOTE_MARK)
        out.append(PointerLine(m.group(1), m.group(2), m.group(3), m.group(4), note.strip() if mark else None,
                               raw.strip()))
    return out


@lru_cache(maxsize=65536)
def terms(text: str | None) -> frozenset[str]:
    """The stemmed content words of a text, stop words, framing words and light verbs dropped;
    ``_`` separates words (``see_also`` -> ``see``, ``also``: both dropped).

    >>> sorted(terms("The rotate step in that signing key recipe fails on staging."))
    ['fail', 'kei', 'recip', 'rotat', 'sign', 'stage']
    """
    if not text:
        return frozenset()
    # each distinct word stemmed once (a long page repeats its words): the stems of content_words
    return frozenset(filter(None, map(content_stem, set(WORD_RE.findall(text.replace("_", " "))))))


@dataclass(frozen=True)
class ReaderAgent:
    """The built-in deterministic reader agent (a simulation, not a model): follows a pointer when
    its relation and note share ``min_shared`` terms with the task, at most ``max_fetches`` times.

    Pointers are followed in answer order; an id is fetched once.

    >>> calls = []
    >>> _ = ReaderAgent()("rotate the key", "↳ neighbor: b2 cites (out) — Rotate key summary.", calls.append)
    >>> calls  # the summary matches, but a pointer without a note offers only its relation
    []
    """

    min_shared: int = 1
    max_fetches: int = 10
    name: str = SIMULATED_AGENT
    simulated: bool = True

    def __post_init__(self):
        if not isinstance(self.min_shared, int) or self.min_shared < 1:
            raise ValidationError("min_shared", self.min_shared, "the reader follows on at least one shared term")
        if not isinstance(self.max_fetches, int) or self.max_fetches < 0:
            raise ValidationError("max_fetches", self.max_fetches, "an integer >= 0")

    def follows(self, task_query: str, pointer: PointerLine) -> bool:
        """Whether this agent follows ``pointer`` for ``task_query`` (relation and note only).

        >>> p = PointerLine("neighbor", "b", "cites", "out", "unrelated words", "")
        >>> ReaderAgent().follows("rotate the key", p)
        False
        """
        reason = terms(pointer.relation) | terms(pointer.note)
        return len(reason & terms(task_query)) >= self.min_shared

    def __call__(self, task_query: str, answer_text: str, fetch: Fetch) -> str:
        wanted = terms(task_query)
        read = [line.strip() for line in answer_text.splitlines() if terms(line) & wanted]
        seen: set[str] = set()
        for pointer in pointer_lines(answer_text):
            if len(seen) >= self.max_fetches:
                break
            if pointer.id not in seen and self.follows(task_query, pointer):
                seen.add(pointer.id)
                body = fetch(pointer.id)
                read.append(body if isinstance(body, str) else "")
        return "\n".join(read)


def agent_name(agent) -> str:
    """How a report names ``agent``: its ``name`` attribute, else its function or class name.

    >>> agent_name(ReaderAgent()), agent_name(lambda q, t, f: "")
    ('simulated reader agent, not a model', '<lambda>')
    """
    name = getattr(agent, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(agent, "__name__", None) or type(agent).__name__


def is_simulated(agent) -> bool:
    """Whether ``agent`` is the built-in simulation (or declares ``simulated = True``).

    >>> is_simulated(ReaderAgent()), is_simulated(print)
    (True, False)
    """
    return isinstance(agent, ReaderAgent) or getattr(agent, "simulated", False) is True
