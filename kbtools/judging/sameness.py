"""Whether two texts state the same fact, the way a person reads them: the values they pin down
(numbers with their units, times, dates, versions, identifiers, upper-case names), the content
words left once the framing of a report is removed ("Heads up:", "FYI", "as we found again
today"), and whether the newer one reads as a change of the older one ("Correction:", "now",
"instead of 30 s", "from 30 s to 60 s").

Two texts that differ in a value are different facts however alike their words; a text whose
content words and values all appear in the other says nothing new. :func:`compare` is the one
reading both the candidate pairs and the rule judge use, so a finding and a verdict never disagree.

>>> c = compare("The invoice export job needs the vendor flag set before it runs.",
...             "Heads up: the invoice export job needs the vendor flag set before it runs, as we found again today.")
>>> c.same, c.containment, c.equal
(True, 1.0, True)
>>> c = compare("Unrelated fact 14: the team calendar shows room 114 for the weekly sync.",
...             "Unrelated fact 16: the team calendar shows room 116 for the weekly sync.")
>>> c.same, c.conflicts
(False, ('114', '14'))
>>> compare("Packages which were found during the run.", "Packages which were not found during the run.").same
False
>>> c = compare("The API gateway timeout is 30 s.", "The API gateway timeout was raised from 30 s to 60 s last week.")
>>> c.changed, c.change_note()
(True, 'changes 30 s to 60 s')
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from kbtools.words import STOP_WORDS, stem

__all__ = ["Facts", "Comparison", "facts", "compare", "reading_run", "strip_framing", "sentences", "differing", "FRAMING_PHRASES",
           "CHANGE_CUES", "STRONG_CUES", "WEAK_CUE_CHANGES", "SLACK_PER_WORDS", "ADDED_WORDS", "RESTATED",
           "CHANGED_SENTENCES"]

#: Phrases that frame a report and state no fact; removed before the words are compared.
FRAMING_PHRASES: tuple[str, ...] = (
    r"heads[- ]up", r"fyi", r"psa", r"btw", r"tl;?dr", r"til", r"reminder(?: for (?:everyone|all))?",
    r"(?:please )?note(?: that)?", r"update", r"tip", r"build tip", r"for the record", r"just so you know",
    r"important", r"warning", r"careful", r"again", r"once more", r"reported again", r"seen again",
    r"checked again", r"confirmed(?: again)?(?: today| that)?", r"restating", r"same as before",
    r"as (?:we|i|they) (?:found|learned|learnt|saw|noticed|discovered|said|noted)(?: out)?(?: again)?",
    r"(?:today|yesterday|last night|this morning|this week|earlier)",
)
_FRAMING_RE = re.compile(r"(?<![\w-])(?:" + "|".join(FRAMING_PHRASES) + r")(?![\w-])\s*[:,;.!-]?", re.I)

#: What a newer text says when it changes the older one; only cues the older text lacks count.
CHANGE_CUES: tuple[str, ...] = (
    r"correction", r"corrected", r"correcting", r"actually", r"turns out", r"no longer", r"not any ?more",
    r"instead of", r"rather than", r"was wrong", r"is wrong", r"wrong", r"now", r"changed", r"we changed",
    r"raised", r"lowered", r"bumped", r"moved", r"down from", r"up from", r"used to", r"replaced", r"replaces",
    r"supersedes?", r"superseded", r"obsoletes?", r"since the", r"not", r"old setting", r"revert(?:s|ed)?",
)
#: Cues that say "this corrects that" on their own; the others ("now", "not", "raised", "since the")
#: only where the rest of the text is the older one's.
STRONG_CUES: frozenset[str] = frozenset({"correction", "corrected", "correcting", "actually", "turns out", "no longer",
                                         "instead of", "rather than", "was wrong", "is wrong", "wrong", "we changed",
                                         "used to", "old setting", "supersedes", "supersede", "superseded",
                                         "replaces", "replaced", "obsoletes", "obsolete"})
#: Content words the fuller side of a duplicate may add, at least (more when the smaller side is longer).
ADDED_WORDS: int = 3
#: The share of the older text's words a correction restates when it does not name the old value.
RESTATED: float = 0.85
#: Values or words a weakly cued change may drop from the older text.
WEAK_CUE_CHANGES: int = 2
#: The most sentences a correction changes on either side (the newer may add one, "the earlier entry
#: had this wrong"); two texts that differ in more are a rewrite, not a change of one value.
CHANGED_SENTENCES: int = 3
_CUE_RE = re.compile(r"(?<![\w-])(?:" + "|".join(CHANGE_CUES) + r")(?![\w-])", re.I)
_OPENING_CUE_RE = re.compile(r"^\W*(?:" + "|".join(CHANGE_CUES) + r")(?![\w-])", re.I)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
#: "not 12", "instead of 7.17", "from 30 s", "no longer Node 16": the value right after names the old one.
_NEGATED_RE = re.compile(r"(?<![\w-])(?:not|instead of|rather than|no longer|down from|up from|replacing|used to be)"
                         r"\s+((?:[^\s,;()]+\s*){1,3})"
                         r"|(?<![\w-])from\s+((?:[^\s,;()]+\s+){1,2})to\s", re.I)

_UNITS = {
    "%": "%", "percent": "%", "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s",
    "second": "s", "seconds": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "h": "h",
    "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "d": "d", "day": "d", "days": "d", "week": "w", "weeks": "w",
    "month": "mo", "months": "mo", "year": "y", "years": "y", "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb",
    "eur": "eur", "usd": "usd", "gbp": "gbp", "x": "x", "times": "x", "nodes": "", "node": "",
}
_NUMBER_WORDS = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8",
                 "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "fifteen": "15", "twenty": "20",
                 "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90", "hundred": "100",
                 "twice": "2 x", "once": "1 x"}
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_VALUE_RE = re.compile(
    r"(?P<date>\b\d{4}-\d{2}-\d{2}\b)"
    r"|(?P<time>\b\d{1,2}:\d{2}(?:\s*-\s*\d{1,2}:\d{2})?\b)"
    r"|(?P<ident>(?<![\w.-])(?:[#@$]?[A-Za-z_][\w]*(?:[-./:][\w]+)+|[A-Za-z]+\d[\w]*|#\d+|/[\w./-]+|\w+\(\)|"
    r"[a-z]+_[a-z0-9_]+|[A-Z]{2,}[\w-]*|[a-z]+[A-Z]\w*|[0-9a-f]{7,40}(?=[^\w]|$)))"
    r"|(?P<num>(?<![\w.])v?\d(?:\d|,(?=\d{3}))*(?:\.\d+)*(?:st|nd|rd|th)?)(?:\s*(?P<unit>" + _UNIT_RE + r")(?![\w]))?"
    r"|(?P<word>(?<![\w-])(?:" + "|".join(_NUMBER_WORDS) + r")(?![\w-]))(?:\s+(?P<wunit>" + _UNIT_RE + r")(?![\w]))?",
)
_WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
#: A capital letter standing alone names something ("add the V binding", "plan B", "the C API"): a
#: value, where a word of one letter states nothing. "A" and "I" are words.
_LONE_CAPITAL = re.compile(r"(?<![\w'.-])[B-HJ-Z](?![\w'-]|\.\w)")
_NEGATION_RE = re.compile(r"(?<![\w-])(?:not|no|never|none|nor|neither|cannot|without)(?![\w-])|\b\w+n't\b", re.I)
#: Words that state no fact of their own besides the stop words (articles of a report, hedges).
_EMPTY_WORDS = frozenset("""also again still just really actually basically please team everyone folks we us our
    you they it its this that these those found learned learnt saw noticed discovered confirmed checked today yesterday
    night morning last earlier reported report again once more ask asked tell told""".split())


@dataclass(frozen=True)
class Facts:
    """What one text pins down: ``values`` (normalised numbers with units, times, dates, versions,
    identifiers, upper-case names), ``words`` (content stems, framing removed) and ``negated`` (the
    values and stems it says are no longer so: "not 12", "instead of Node 16")."""

    values: frozenset[str]
    words: frozenset[str]
    negated: frozenset[str]
    cues: frozenset[str]
    #: how many negations it says ("not", "no", "never", "without", "-n't"): two texts alike in
    #: every word but one "not" state opposite facts ("were found" / "were not found")
    negations: int = 0


def strip_framing(text: str) -> str:
    """``text`` without the phrases that frame a report.

    >>> strip_framing("Heads up: the job needs the flag, as we found again today.")
    'the job needs the flag,'
    """
    return _FRAMING_RE.sub("", text or "").strip()


def _number(raw: str) -> str:
    raw = raw.lower().lstrip("v")
    raw = re.sub(r"(?<=\d)(st|nd|rd|th)$", "", raw)
    return raw.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+", raw) else raw


def _values(text: str) -> tuple[frozenset[str], str]:
    """The normalised values of ``text`` and the text with them blanked out."""
    found: list[str] = []

    def take(m: re.Match) -> str:
        if m.group("date") or m.group("time"):
            found.append(re.sub(r"\s+", "", (m.group("date") or m.group("time"))))
        elif m.group("ident"):
            ident = m.group("ident").rstrip(":")
            if re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)+", ident):
                return f" {ident.replace('-', ' ')} "  # a hyphenated word is words ("on-call", "read-only")
            if ident.isupper() and ident.isalpha():
                return f" {ident.lower()} "  # an acronym is a word like any other (CET, CISO, SSO)
            found.append(ident.lower())
        elif m.group("num"):
            unit = _UNITS.get((m.group("unit") or "").lower(), "")
            found.append(f"{_number(m.group('num'))} {unit}".strip())
        else:
            unit = _UNITS.get((m.group("wunit") or "").lower(), "")
            number = _NUMBER_WORDS[m.group("word").lower()]
            found.append(number if " " in number else f"{number} {unit}".strip())
        return " "

    rest = _VALUE_RE.sub(take, text)
    return frozenset(found), rest


def _stems(text: str) -> frozenset[str]:
    return frozenset(w for w in map(_stem_of, _WORD_RE.findall(text)) if w)


@lru_cache(maxsize=1 << 18)
def _stem_of(surface: str) -> str | None:
    """The stem of a word as written, or None for a word that states nothing (memoised: texts repeat words)."""
    word = surface.lower().split("'")[0]
    if len(word) < 2 or word in STOP_WORDS or word in _EMPTY_WORDS or word in _NUMBER_WORDS:
        return None
    return stem(word)


@lru_cache(maxsize=1 << 18)
def facts(text: str) -> Facts:
    """The values, content words, negated values and change cues of one text.

    >>> f = facts("Correction: the autoscaler allows at most 20 nodes, not 12.")
    >>> sorted(f.values), sorted(f.negated), sorted(f.cues)
    (['12', '20'], ['12'], ['correction', 'not'])
    >>> sorted(facts("BINDINGS: add V binding").values), sorted(facts("A fix I made: see plan B.").values)
    (['V'], ['B'])
    """
    text = text or ""
    cues = frozenset(m.group(0).lower() for m in _CUE_RE.finditer(text))
    negated = set()
    for m in _NEGATED_RE.finditer(text):
        vals, rest = _values((m.group(1) or m.group(2)).rstrip("."))
        negated |= vals
        if not vals:  # the first content word after the negation ("not email support": email)
            negated |= next((w for w in (_stems(t) for t in rest.split()) if w), frozenset())
    framed = strip_framing(text)
    values, rest = _values(framed)
    values |= frozenset(m.group(0) for m in _LONE_CAPITAL.finditer(rest))
    return Facts(values, _stems(rest) - {stem(c) for c in ("correction", "corrected", "update", "updated")},
                 frozenset(negated), cues, len(_NEGATION_RE.findall(framed)))


@dataclass(frozen=True)
class Comparison:
    """How an older text ``a`` and a newer text ``b`` relate.

    ``containment``: the share of the smaller side's words and values found in the larger one;
    ``overlap``: the share of ``a``'s words found in ``b`` (the frame a correction restates);
    ``conflicts``: values of the smaller side missing from the larger (any one makes two facts);
    ``added``: values only the larger side has (added context: the pair is the same fact, but not
    one to delete); ``equal``: the same words and values both ways; ``same``: the same fact;
    ``changed``: ``b`` changes a value of ``a`` and says so; ``old`` / ``new``: the values it changes.
    """

    containment: float
    overlap: float
    conflicts: tuple[str, ...]
    added: tuple[str, ...]
    equal: bool
    same: bool
    changed: bool
    old: tuple[str, ...]
    new: tuple[str, ...]

    def change_note(self) -> str:
        """The change ``b`` makes, for an edge's note ("changes 30 s to 60 s")."""
        old, new = _few(self.old), _few(self.new)
        if old and new:
            return f"changes {old} to {new}"
        if new:
            return f"changes the value to {new}"
        if old:
            return f"no longer {old}"
        return "changes a value of that entry"


def _few(values: tuple[str, ...], most: int = 3) -> str:
    """At most ``most`` values for a note, and how many more."""
    shown = ", ".join(values[:most])
    return shown + (f" (and {len(values) - most} more)" if len(values) > most else "")


#: Words of the smaller side the larger may lack and still say everything it says: a stem or two
#: that the light stemmer reads apart ("finish" / "finishes" agree, "clear" / "cleared" too).
SLACK_PER_WORDS: int = 10**6


def sentences(text: str) -> list[str]:
    """The sentences (and lines) of ``text``.

    >>> sentences("Pin the pool at 64. Watch pg_locks.\\nDone")
    ['Pin the pool at 64.', 'Watch pg_locks.', 'Done']
    """
    return list(_sentence_keys(text or "")[0])


@lru_cache(maxsize=1 << 16)
def _key(sentence: str) -> tuple:
    """A sentence as its content words in order and its values: two sentences with one key say the
    same thing (framing and a leading "Correction:" aside); the order keeps "A hid B" apart from "B hid A"."""
    values, rest = _values(strip_framing(_OPENING_CUE_RE.sub("", sentence)))
    return tuple(w for w in map(_stem_of, _WORD_RE.findall(rest)) if w), tuple(sorted(values))


def differing(a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The sentences of ``a`` that ``b`` does not say, and those of ``b`` that ``a`` does not say.

    >>> differing("Pool size is 64. Watch pg_locks.", "Correction: pool size is 32. Watch pg_locks.")
    (('Pool size is 64.',), ('Correction: pool size is 32.',))
    """
    (sa, keys_a), (sb, keys_b) = _sentence_keys(a or ""), _sentence_keys(b or "")
    ka, kb = set(keys_a), set(keys_b)
    return (tuple(x for x, k in zip(sa, keys_a) if k not in kb),
            tuple(x for x, k in zip(sb, keys_b) if k not in ka))


def _sentence_keys(text: str) -> tuple[tuple[str, ...], tuple[tuple, ...]]:
    """The sentences of ``text`` and their keys, read once per text: a judge run compares one long
    text with many others, and its sentences outnumber any cache of single sentences."""
    run = _RUN.get()
    if run is None:
        return _sentence_keys_held(text)
    key = ("sentences", text)
    got = run.get(key)
    if got is None:
        got = run[key] = _sentence_keys_of(text)
    return got


@lru_cache(maxsize=1 << 14)
def _sentence_keys_held(text: str) -> tuple[tuple[str, ...], tuple[tuple, ...]]:
    return _sentence_keys_of(text)


def _sentence_keys_of(text: str) -> tuple[tuple[str, ...], tuple[tuple, ...]]:
    said = tuple(s for s in (x.strip() for x in _SENTENCE_RE.split(text)) if s)
    return said, tuple(_key(x) for x in said)


def _change(a: str, b: str, whole: float, frame: float) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """Whether ``b`` changes a value of ``a`` and says so, with the values it changes, read on the
    sentences that differ: the changed sentence restates the words around the value in the older
    one's sentence (the same slot), and ``b`` as a whole restates ``a`` (``whole``: the share of
    ``a``'s words in ``b``). A cue counts where it is said: in a differing sentence of ``b`` or
    opening ``b`` ("Correction: ..."); a rewrite of more than :data:`CHANGED_SENTENCES` sentences
    (two documents) is no change of one value."""
    if whole < frame:  # b does not restate a: no sentence of it can be a's rewritten
        return False, (), ()
    da, db = differing(a, b)
    if not da or not db or len(da) > CHANGED_SENTENCES or len(db) > CHANGED_SENTENCES + 1:
        return False, (), ()
    pa, pb, slot = facts(" ".join(da)), facts(" ".join(db)), facts(_counterparts(da, db))
    opening = _OPENING_CUE_RE.match(b.lstrip())
    cues = (pb.cues | ({opening.group(0).strip(" :,-").lower()} if opening else set())) - pa.cues
    old = tuple(sorted((pb.negated & pa.values) or (slot.values - pb.values)))
    new = tuple(sorted(pb.values - pa.values - pb.negated))
    negates = bool((pb.negated - pa.negated) & (slot.values | slot.words))
    strong = bool(cues & STRONG_CUES)
    dropped = len(pa.values - pb.values) + len(pa.words - pb.words)
    differs = bool(len(slot.values - pb.values) + len(slot.words - pb.words)) or negates or (bool(new) and strong)
    # a weak cue ("now", "raised", "since the") reads as a change only when little else changed
    small = dropped <= WEAK_CUE_CHANGES and len(pb.words - pa.words) <= WEAK_CUE_CHANGES + 2
    overlap = len(slot.words & pb.words) / len(slot.words) if slot.words else 0.0
    # naming the older value ("instead of orders.v1") points at that sentence; a cue alone needs more of it
    changed = bool(cues) and differs and ((negates and overlap >= frame)
                                          or ((strong or small) and overlap >= max(frame, RESTATED)))
    return changed, (old if changed else ()), (new if changed else ())


_CLAUSE_RE = re.compile(r"[.,;:!?]+(?:\s+|$)|\s*\n\s*")


@lru_cache(maxsize=1 << 16)
def _polarity_clash(a: str, b: str) -> bool:
    """Whether one text negates what the other states: it says more negations, and one of its
    clauses with a negation restates the other's words ("which were not found" beside "which
    were found"). A negation in a clause only one side has ("so do not add your own retry loop")
    is added context, not a clash.

    >>> _polarity_clash("Packages which were found.", "Packages which were not found.")
    True
    >>> _polarity_clash("It retries three times.", "It retries three times, so do not add your own retry loop.")
    False
    """
    fa, fb = facts(a), facts(b)
    if fa.negations == fb.negations:
        return False
    more, other = (b, fa) if fb.negations > fa.negations else (a, fb)
    said = other.words | other.values
    return any(len(content & said) >= 2 * len(content) / 3 for content in _negated_clauses(more))


@lru_cache(maxsize=1 << 14)
def _negated_clauses(text: str) -> tuple[frozenset[str], ...]:
    """The content (words and values) of each clause of ``text`` that says a negation, read once
    per text: a judge run compares one long text with many others, and its clauses outnumber any
    cache of single ones."""
    out = []
    for part in _CLAUSE_RE.split(strip_framing(text)):
        if not _NEGATION_RE.search(part):  # no negation written: none once framing is stripped either
            continue
        f = facts(part)
        content = f.words | f.values
        if f.negations and content:
            out.append(content)
    return tuple(out)


def _counterparts(da: tuple[str, ...], db: tuple[str, ...]) -> str:
    """The sentences of ``da`` that some sentence of ``db`` rewrites (the one sharing most of its
    words and values): what a change is read against; a sentence only dropped is no part of it."""
    sides = [facts(x) for x in da]
    keep = set()
    for y in db:
        fy = facts(y)
        shared = [len((f.words | f.values) & (fy.words | fy.values)) for f in sides]
        if max(shared) > 0:
            keep.add(shared.index(max(shared)))
    return " ".join(da[i] for i in sorted(keep))


#: The readings of the run in progress (:func:`reading_run`), or None: the shared caches alone.
_RUN: ContextVar[dict | None] = ContextVar("kbtools_reading_run", default=None)


@contextmanager
def reading_run() -> Iterator[None]:
    """Within the block, every pair :func:`compare` reads and every text's sentences are kept until
    it ends. A run over a big bank reads each candidate pair twice (to rank the candidates, then to
    judge them) and each text in many pairs: more than the shared caches hold, which then evict
    each reading before its second use. The readings are the same either way; only their cost differs.

    >>> with reading_run():
    ...     compare("Pool size is 64.", "Pool size is 32.") is compare("Pool size is 64.", "Pool size is 32.")
    True
    """
    token = _RUN.set({})
    try:
        yield
    finally:
        _RUN.reset(token)


def compare(a: str, b: str, *, frame: float = 0.6) -> Comparison:
    """How the older text ``a`` and the newer text ``b`` relate (see :class:`Comparison`).
    ``frame``: the share of ``a``'s words ``b`` must restate for a change to be a correction.

    >>> compare("Refunds above 200 USD are approved by the team lead.",
    ...         "Refunds above 200 USD are now approved by the finance team instead of the team lead.").changed
    True
    >>> compare("Restart ingest workers on host ingest-03.", "Restart ingest workers on host ingest-07.").same
    False
    """
    run = _RUN.get()
    if run is None:
        return _compare(a, b, frame)
    key = ("compare", a, b, frame)
    got = run.get(key)
    if got is None:
        got = run[key] = _read(a, b, frame)
    return got


@lru_cache(maxsize=1 << 18)
def _compare(a: str, b: str, frame: float) -> Comparison:
    return _read(a, b, frame)


def _read(a: str, b: str, frame: float) -> Comparison:
    fa, fb = facts(a), facts(b)
    small, large = (fa, fb) if len(fa.words) + len(fa.values) <= len(fb.words) + len(fb.values) else (fb, fa)
    size = len(small.words) + len(small.values)
    missing_words = small.words - large.words
    conflicts = tuple(sorted(small.values - large.values))
    found = size - len(missing_words) - len(conflicts)
    containment = round(found / size, 4) if size else 0.0
    overlap = round(len(fa.words & fb.words) / len(fa.words), 4) if fa.words else 0.0
    added = tuple(sorted(large.values - small.values))
    polar = not _polarity_clash(a, b)  # one more "not" is the opposite fact, not the same one
    equal = fa.values == fb.values and fa.words == fb.words and polar
    # the larger side may add context, not a second fact as long as the first: then the smaller
    # one is a part of it, not the same fact
    same = (size >= 2 and not conflicts and len(missing_words) <= size // SLACK_PER_WORDS
            and len(large.words - small.words) <= max(ADDED_WORDS, len(small.words) // 2)
            and not ((fb.negated - fa.negated) & (fa.values | fa.words)) and polar)
    changed, old, new = _change(a, b, overlap, frame)
    return Comparison(containment, overlap, conflicts, added, equal, same and not changed, changed, old, new)
