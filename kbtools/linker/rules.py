"""The linker's tables: settings, kinds, priors, cue words and the type rules (seed 001, steps 4-6).

>>> p = prior_matrix()
>>> p[kind_code("decision"), kind_code("goal")], p[kind_code("goal"), kind_code("decision")], p[kind_code("fact"), 0]
(np.float64(1.0), np.float64(1.0), np.float64(0.75))
>>> link_type("lesson", "procedure")
('refines', True)
>>> link_type("event", "event", fix_a=True, problem_b=True, a_later=True, same_session=True)
('resolves', True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from kbtools.errors import ValidationError
from kbtools.model.fading import HALF_LIFE_DAYS

__all__ = [
    "LinkerSettings",
    "check_linker_settings",
    "LINKER_DEFAULTS",
    "LINKER_LEXICAL",
    "RETIRED_SETTINGS",
    "KINDS",
    "KIND_ALIASES",
    "MEANS_KINDS",
    "PRIORS",
    "PROBLEM_RE",
    "FIX_RE",
    "PROGRESS_RE",
    "kind_code",
    "prior_matrix",
    "link_type",
]


@dataclass(frozen=True)
class LinkerSettings:
    """Parameters of the write-time linker (seed 001, section 10).

    >>> LINKER_DEFAULTS.threshold, LINKER_LEXICAL.omega
    (0.35, 0.25)
    """

    threshold: float = 0.35  #: minimum score for an automatic link
    max_new: int = 5  #: automatic links per new entry
    max_degree: int = 12  #: automatic links (auto, review) per entry
    candidates: int = 24  #: candidates from the inverted index and from the nearest neighbours
    session_candidates: int = 30  #: candidates from the same session
    query_terms: int = 12  #: highest-IDF terms of the new entry that vote
    h: float = 0.3  #: similarity scale: sem = clamp((cos - h/2) / (h/2))
    omega: float = 0.5  #: weight of sem in the noisy-OR (0.25 with a lexical embedder)
    virtual: int = 20  #: virtual memories smoothing the IDF
    half_life_days: float = HALF_LIFE_DAYS  #: fading of automatic and feedback links (the bank's one half-life)
    min_weight: float = 0.1  #: below this faded weight a link is pruned
    session_window_s: float = 7200.0  #: "written within 2 hours"
    takeover: float = 0.9  #: share of weight a replacing decision takes over
    #: candidates also from the whole frame's lists that hold the entry, tried by their best place
    #: in either end's list (``evidence.whole_lists``); False: only its own list of earlier entries
    both_ends: bool = True
    #: a link to a section of another document links that document's head too, beyond ``max_new``,
    #: when the head is among the entry's candidates (people cite a document by its head entry)
    document_heads: bool = True

    def with_(self, **changes) -> "LinkerSettings":
        """A copy with some fields changed.

        >>> LINKER_DEFAULTS.with_(threshold=0.45).threshold
        0.45
        """
        return replace(self, **changes)


LINKER_DEFAULTS = LinkerSettings()
#: With a lexical embedder, similarity repeats the shared words and counts half.
LINKER_LEXICAL = LinkerSettings(omega=0.25)

#: Settings a bank may hold from an older kbtools, read as absent: none moved any bank's link recovery
RETIRED_SETTINGS: frozenset[str] = frozenset({"identifiers", "weights", "w_near", "w_author", "w_title", "near_days"})

#: What each settable field of ``LinkerSettings`` takes: (type, low, high, low included, high included)
_FIELD_RULES: dict[str, tuple] = {
    "threshold": (float, 0.0, 1.0, True, True), "max_new": (int, 1, 1000, True, True),
    "max_degree": (int, 1, 10_000, True, True), "candidates": (int, 1, 1000, True, True),
    "session_candidates": (int, 0, 1000, True, True), "query_terms": (int, 1, 1000, True, True),
    "h": (float, 0.0, 1.0, False, True), "omega": (float, 0.0, 1.0, True, True),
    "virtual": (int, 0, 10**9, True, True), "half_life_days": (float, 0.0, 1e6, False, True),
    "min_weight": (float, 0.0, 1.0, True, False), "session_window_s": (float, 0.0, 1e9, False, True),
    "takeover": (float, 0.0, 1.0, True, True),
    "both_ends": (bool, None, None, True, True),
    "document_heads": (bool, None, None, True, True),
}
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def check_linker_settings(changes) -> dict:
    """The linker fields in ``changes`` (``{field: value}``; a value may be text, as a command line
    gives it) checked and read as their types: an unknown field, a value of another type or one out
    of its range raises a ``ValidationError`` naming the field and its rule.

    >>> check_linker_settings({"h": "0.6", "max_new": 4, "both_ends": "no"})
    {'h': 0.6, 'max_new': 4, 'both_ends': False}
    >>> check_linker_settings({"h": 0})
    Traceback (most recent call last):
    ...
    kbtools.errors.ValidationError: h=0: must be a number over 0 and at most 1
    """
    out = {}
    for name, value in dict(changes).items():
        if name in RETIRED_SETTINGS:
            raise ValidationError(name, value, "is a retired linker setting (it moved no bank's link recovery; "
                                               "a stored value is ignored)")
        rule = _FIELD_RULES.get(name)
        if rule is None:
            allowed = ", ".join(sorted(_FIELD_RULES))
            raise ValidationError(name, value, f"is not a linker setting one can set (one of {allowed})")
        kind, low, high, low_in, high_in = rule
        out[name] = _read_setting(name, value, kind, low, high, low_in, high_in)
    return out


def _read_setting(name, value, kind, low, high, low_in, high_in):
    if kind is bool:
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in _TRUE | _FALSE:
            return value if isinstance(value, bool) else text in _TRUE
        raise ValidationError(name, value, "must be true or false")
    noun = "a whole number" if kind is int else "a number"
    try:
        number = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        number = float("nan")
    whole = kind is not int or float(number).is_integer()
    inside = (number >= low if low_in else number > low) and (number <= high if high_in else number < high)
    if not (number == number and whole and inside):  # NaN, a fraction for a count, out of range
        words = ("at least " if low_in else "over ") + f"{low:g}" + " and " + ("at most " if high_in else "under ") + f"{high:g}"
        raise ValidationError(name, value, f"must be {noun} {words}")
    return int(number) if kind is int else float(number)

#: The kinds the linker knows, as the nouns of link lines; their index is the kind code.
KINDS: tuple[str, ...] = (
    "event", "goal", "decision", "procedure", "skill", "lesson", "insight", "knowledge", "fact", "preference",
)
#: Bank kinds read as another linker kind; step/artifact/role are not linked (code -1).
KIND_ALIASES: dict[str, str] = {"playbook": "procedure"}
_CODE = {k: i for i, k in enumerate(KINDS)} | {a: KINDS.index(k) for a, k in KIND_ALIASES.items()}
EVENT, GOAL, DECISION, PROCEDURE, SKILL, LESSON, INSIGHT, KNOWLEDGE, FACT, PREFERENCE = range(len(KINDS))
#: Means that can serve an end (a goal): the only pairs a graph bridge links on its own.
MEANS_KINDS: frozenset[str] = frozenset({"decision", "procedure", "skill", "event"})

PRIORS: dict[tuple[str, str], float] = {
    ("decision", "goal"): 1.0, ("lesson", "procedure"): 1.0,
    ("lesson", "skill"): 0.9, ("lesson", "event"): 0.9, ("event", "procedure"): 0.9,
    ("event", "skill"): 0.9, ("event", "insight"): 0.9,
    ("procedure", "goal"): 0.85, ("event", "goal"): 0.85, ("event", "event"): 0.85,
    ("event", "decision"): 0.85, ("knowledge", "procedure"): 0.85, ("knowledge", "decision"): 0.85,
    ("procedure", "skill"): 0.85, ("lesson", "decision"): 0.85,
    ("goal", "goal"): 0.8, ("decision", "decision"): 0.8, ("decision", "procedure"): 0.8,
    ("decision", "skill"): 0.8,
    ("skill", "goal"): 0.7, ("fact", "goal"): 0.7, ("lesson", "goal"): 0.7, ("insight", "goal"): 0.7,
    ("knowledge", "goal"): 0.7,
    # facts, knowledge and the rest: 0.60 - 0.75
    ("knowledge", "knowledge"): 0.75, ("knowledge", "fact"): 0.75, ("knowledge", "event"): 0.75,
    ("knowledge", "lesson"): 0.75, ("knowledge", "skill"): 0.75, ("fact", "event"): 0.75,
    ("fact", "decision"): 0.75, ("fact", "procedure"): 0.75, ("insight", "decision"): 0.75,
    ("insight", "lesson"): 0.75, ("procedure", "procedure"): 0.75, ("skill", "skill"): 0.75,
    ("lesson", "lesson"): 0.75, ("fact", "fact"): 0.7, ("fact", "lesson"): 0.7, ("fact", "skill"): 0.7,
    ("insight", "procedure"): 0.7, ("insight", "knowledge"): 0.7, ("insight", "fact"): 0.7,
    ("insight", "insight"): 0.7, ("insight", "skill"): 0.7,
}
_PREFERENCE_PRIOR = 0.5
_UNLISTED_PRIOR = 0.6

#: Cue words (English). A problem, a fix, progress on a goal.
PROBLEM_RE = re.compile(
    r"\b(?:fault\w*|errors?|fail\w*|jam(?:med|s|ming)?|broke\w*|crash\w*|outages?|stuck|time[sd]? ?out|"
    r"bugs?|leak\w*|overheat\w*|alarms?|down|not working|doesn't work|won't|can't|cannot|incidents?|"
    r"problems?|issues?|exceptions?|keeps? \w+ing|tripp?(?:ed|ing)|stall\w*|regression)\b",
    re.IGNORECASE,
)
FIX_RE = re.compile(
    r"\b(?:fixed|fix(?:es)?|found it|root cause|(?:was|were) loose|replaced|resolved|solved|repaired|"
    r"workaround|tightened|patched|restored|turned out|the cause was|caused by|reseated|cleaned)\b",
    re.IGNORECASE,
)
PROGRESS_RE = re.compile(
    r"\b(?:finished|shipped|passed|\d+ ?%|fixed|completed?|done|launched|merged|released|deployed|"
    r"reached|achieved|milestone|delivered)",
    re.IGNORECASE,
)


def kind_code(kind: str | None) -> int:
    """The linker's code for a bank kind; -1 when the kind is not linked.

    >>> kind_code("playbook") == kind_code("procedure"), kind_code("step")
    (True, -1)
    """
    return _CODE.get(kind or "", -1)


def prior_matrix() -> np.ndarray:
    """The priors of pairs of kinds (symmetric) as a (kinds x kinds) array indexed by kind code.

    >>> prior_matrix()[kind_code("lesson"), kind_code("procedure")], prior_matrix()[PREFERENCE, FACT]
    (np.float64(1.0), np.float64(0.5))
    """
    out = np.full((len(KINDS), len(KINDS)), _UNLISTED_PRIOR)
    for (a, b), value in PRIORS.items():
        out[_CODE[a], _CODE[b]] = out[_CODE[b], _CODE[a]] = value
    out[PREFERENCE, :] = out[:, PREFERENCE] = _PREFERENCE_PRIOR
    return out


_INFORMERS = frozenset({"knowledge", "fact", "preference", "insight"})
_INFORMED = frozenset({"decision", "procedure", "skill", "lesson"})


def _ordered_type(a: str, b: str, *, progress_a=False, problem_a=False) -> str | None:
    """The type of ``a <type> b`` when the pair of kinds reads that way round; None otherwise."""
    if b == "goal":
        if a in ("decision", "procedure", "skill"):
            return "serves"
        if a == "event":
            return "advances" if progress_a and not problem_a else "concerns"
        if a in _INFORMERS | {"lesson"}:
            return "informs"
    if a == "lesson":
        if b in ("procedure", "skill", "decision"):
            return "refines"
        if b == "event":
            return "learned_from"
    if a in ("procedure", "skill") and b == "event":
        return "applies_to"
    if a == "event" and b == "decision":
        return "informs"
    if a in _INFORMERS and b in _INFORMED:
        return "informs"
    return None


def link_type(
    kind_a: str,
    kind_b: str,
    *,
    fix_a=False, problem_a=False, progress_a=False,
    fix_b=False, problem_b=False, progress_b=False,
    a_later=True,
    same_session=False,
    bridge_only=False,
) -> tuple[str, bool]:
    """The type of a link between a and b and whether a is its source (seed 001, step 6).

    ``a_later``: a was recorded after b. ``bridge_only``: only the entity graph connects them, so
    the link says no more than related_to, except a means serving its end.

    >>> link_type("goal", "decision")
    ('serves', False)
    >>> link_type("event", "event", a_later=True, same_session=True)
    ('follows', True)
    >>> link_type("lesson", "procedure", bridge_only=True)
    ('see_also', True)
    """
    a, b = KINDS[kind_code(kind_a)], KINDS[kind_code(kind_b)]
    if a == "event" and b == "event":
        if fix_a and problem_b and a_later:
            return "resolves", True
        if fix_b and problem_a and not a_later:
            return "resolves", False
        if same_session:
            return "follows", a_later
        return "see_also", a_later
    forward = _ordered_type(a, b, progress_a=progress_a, problem_a=problem_a)
    backward = None if forward else _ordered_type(b, a, progress_a=progress_b, problem_a=problem_b)
    found, a_is_src = (forward, True) if forward else (backward, False)
    if found is None:
        return "see_also", a_later
    means_end = found in ("serves", "advances", "concerns")
    if bridge_only and not means_end:
        return "see_also", a_later
    return found, a_is_src
