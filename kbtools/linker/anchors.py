"""What an entry is about: its entities and its salient terms (seed 001, step 1).

Entities are lower-case keys: identifiers (INC-4521, E-217, S7-1500, 10.20.0.0/16), assets with a
number (line 3, press 12, cell 4B), names (sequences of capitalised words, with the first-word and
framing rules) and the entities the triples already know (matched case-insensitively). Salient terms
are the entity keys as ``e:<key>`` plus the content words as ``t:<stem>``.

>>> anchor("Found it: the encoder cable on line 3 was loose.").terms
('e:line 3', 't:found', 't:encod', 't:cabl', 't:line', 't:loos')
>>> anchor("Goal: Ship the Kioko memory layer by December 15.").entities
('kioko',)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

from kbtools.words import FRAMING_WORDS, STOP_WORDS, WORD_RE, content_stem, content_words

__all__ = ["Anchor", "AnchorRows", "anchor", "ASSET_NOUNS", "ACTION_VERBS", "FRAMING_NAMES", "anchor_frame",
           "anchors_from_frame"]

#: Nouns that name a place or machine when a number follows ("line 3", "cell 4B").
ASSET_NOUNS: tuple[str, ...] = (
    "line", "press", "cell", "server", "station", "machine", "robot", "pump", "tank", "oven",
    "kiln", "furnace", "bay", "dock", "zone", "room", "building", "site", "unit", "node", "host",
    "rack", "cabinet", "boiler", "lathe", "mill", "conveyor", "belt", "gate", "floor", "hall",
    "warehouse", "truck", "vehicle", "cluster", "shard", "region", "plant", "stage", "lane",
)
#: Capitalised words that frame an entry and never name anything.
FRAMING_NAMES: frozenset[str] = frozenset(
    w.capitalize()
    for w in FRAMING_WORDS
    | {"decision", "goal", "lesson", "insight", "note", "fact", "summary", "procedure", "event", "todo",
       "update", "problem", "issue", "idea", "question", "answer", "fix", "status", "context", "result",
       "reminder", "warning", "tip", "we", "i", "they", "it", "this", "that", "the", "a", "an"}
)
#: Verbs dropped right after a framing prefix ("Goal: Ship Kioko v2" names Kioko v2, not Ship).
ACTION_VERBS: frozenset[str] = frozenset(
    """ship build launch use choose chose pick picked migrate move add fix write create implement deploy
    release finish complete reduce improve increase learn run switch adopt replace keep stop start
    make get set try test check avoid prefer always never go buy book plan""".split()
)

IDENT_RE = re.compile(
    r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2})?\b"  # addresses 10.20.0.0/16
    r"|\b[A-Za-z]*\d[A-Za-z0-9]*(?:-[A-Za-z0-9]+)+\b"  # part / model numbers S7-1500
    r"|\b[A-Z][A-Za-z]*(?:-[A-Za-z0-9]*\d[A-Za-z0-9]*)+\b"  # tickets, codes INC-4521, E-217
    r"|\b(?=[A-Za-z]*[A-Z])(?=[A-Za-z]*[a-zA-Z]\d)[A-Za-z]+\d+[A-Za-z0-9]*\b"  # X200, DB17
)
#: "line 3", "press No. 12", "cell 4B", "bay C": the noun in any case, then a number (with one
#: letter) or one capital letter. The number is taken whole (an atomic group): "line 12)" or
#: "line 12.5" name no asset, where a number cut short made "line 1"; the letter is a capital even
#: though the noun's case is free: "line is", "server on" made "line i" and "server o" (105 and 99
#: of the PEP bank's 844 assets)
ASSET_RE = re.compile(
    r"\b(" + "|".join(ASSET_NOUNS) + r")\s+(?:no\.?\s*|#)?((?>\d+[A-Za-z]?)|(?-i:[A-Z]))(?![\w)/.-]\w)(?!\))",
    re.IGNORECASE,
)
_BOUNDARY_RE = re.compile(r"(?:^|[.!?;:]\s+|\n\s*|\(\s*|(?:^|\s)(?:\d+[.)]|[-*\u2022])\s+)$")
#: A name: capitalised words joined by spaces (with "of", "de", "&"), never across a line break: a
#: heading and the sentence under it are two things ("Abstract\nThis PEP" made the entity
#: "abstract this pep", shared by 348 PEP sections). A name wrapped over two lines is cut there.
_CAP_SEQ_RE = re.compile(r"[A-Z][\w'&+.-]*[\w+](?:[^\S\n]+(?:of[^\S\n]+|de[^\S\n]+|&[^\S\n]+)?[A-Z][\w'&+.-]*[\w+])*|[A-Z]")
_PREFIX_RE = re.compile(r"^\s*([A-Z][a-z]+)\s*:\s*$")
_TAIL = 80  #: characters before a name that decide whether it opens a sentence


@dataclass(frozen=True)
class Anchor:
    """Entities (lower-case keys) and salient terms (``e:<key>``, ``t:<stem>``) of one text.

    ``labels`` holds how each term reads in the text (the entity key, or the word as written).

    >>> a = anchor("User likes green tea.")
    >>> a.terms, a.labels
    (('t:green', 't:tea'), ('green', 'tea'))
    """

    entities: tuple[str, ...]
    terms: tuple[str, ...]
    labels: tuple[str, ...] = ()


def _distinctive(word: str) -> bool:
    return (len(word) > 1 and word.isupper()) or any(ch.isdigit() for ch in word) or (
        any(ch.isupper() for ch in word[1:]) and any(ch.islower() for ch in word)
    )


def _names(text: str) -> list[tuple[str, int, int]]:
    """Capitalised-name entities with their spans."""
    found = []
    for match in _CAP_SEQ_RE.finditer(text):
        words = match.group(0).split()
        # the boundary and the framing prefix are short: read the tail before the name, not the
        # whole text before it (a search over every prefix is quadratic in a long entry)
        start = match.start()
        before = text[:start] if start <= _TAIL else "x" + text[start - _TAIL : start]  # x: not the text's start
        at_start = bool(_BOUNDARY_RE.search(before))
        after_prefix = at_start and bool(_PREFIX_RE.search(re.split(r"[.!?;\n]\s*", before)[-1]))
        while words and (words[0] in FRAMING_NAMES or words[0].lower() in STOP_WORDS):
            words, at_start = words[1:], True
        if not words:
            continue
        if after_prefix and words[0].lower() in ACTION_VERBS:
            words, at_start = words[1:], False
            if not words:
                continue
        while words and words[-1] in FRAMING_NAMES:
            words = words[:-1]
        if not words:
            continue
        if at_start and len(words) == 1 and not _distinctive(words[0]):
            continue
        if len(words) == 1 and len(words[0]) < 2:
            continue
        found.append((" ".join(w.strip(".'") for w in words).lower(), match.start(), match.end()))
    return found


@lru_cache(maxsize=64)
def _known_index(known: tuple[str, ...]) -> tuple[frozenset[str], int]:
    keys = frozenset(k.strip().lower() for k in known if k and k.strip())
    longest = max((len(k.split()) for k in keys), default=0)
    return keys, min(longest, 4)


_KNOWN_TOKEN_RE = re.compile(r"[\w][\w.+/-]*[\w+]|\w")


def _known(text: str, known: tuple[str, ...]) -> list[str]:
    keys, longest = _known_index(known)
    if not keys:
        return []
    tokens = [t.lower() for t in _KNOWN_TOKEN_RE.findall(text)]
    hits = []
    for size in range(longest, 0, -1):
        for i in range(len(tokens) - size + 1):
            gram = " ".join(tokens[i : i + size])
            if gram in keys:
                hits.append(gram)
    return hits


def anchor(text: str, *, known_entities=()) -> Anchor:
    """Entities and salient terms of a text (seed 001, step 1).

    >>> anchor("Decision: Vector database - chose pgvector because we already run Postgres.",
    ...        known_entities=("Kioko", "pgvector")).entities
    ('postgres', 'pgvector')
    >>> anchor("Line 3 keeps faulting with error E-217.").terms
    ('e:e-217', 'e:line 3', 't:line', 't:fault', 't:error')
    """
    text = text or ""
    entities: dict[str, None] = {}
    for match in IDENT_RE.finditer(text):
        entities[match.group(0).lower()] = None
    for match in ASSET_RE.finditer(text):
        entities[f"{match.group(1).lower()} {match.group(2).lower()}"] = None
    stripped = IDENT_RE.sub(" ", text)
    for key, _, _ in _names(stripped):
        entities[key] = None
    for key in _known(text, tuple(known_entities)):
        entities[key] = None
    terms: dict[str, str] = {f"e:{key}": key for key in entities}
    for stemmed, surface in content_words(stripped):
        terms.setdefault(f"t:{stemmed}", surface)
    return Anchor(entities=tuple(entities), terms=tuple(terms), labels=tuple(terms.values()))


# ---------------------------------------------------------------- many texts at once
# The same entities and terms as ``anchor``, text by text, for a whole column: each pattern runs only
# where a cheap exact test says it can match (the test holds whenever the pattern matches), a name's
# sentence boundary is read only when the rules need it, and the content words of every text are
# read, stemmed (each distinct word once) and made unique per text by polars over the column.

_UPPER_RE = re.compile(r"[A-Z]")  #: every _CAP_SEQ_RE match starts with one


def _spaced(text: str, matches: list) -> str:
    """``pattern.sub(" ", text)`` from the pattern's ``finditer`` matches on ``text`` (the same
    matches: none of these patterns matches the empty string), without reading the text again."""
    if not matches:
        return text
    parts, last = [], 0
    for match in matches:
        parts.append(text[last : match.start()])
        last = match.end()
    parts.append(text[last:])
    return " ".join(parts)


# Python's re tries a pattern at every position of a text, and the alternations and ``\b`` starts
# of the two patterns below leave it nothing to skip ahead by. Each has a finder of the positions
# where one of its matches can start (a superset, proved beside it, found by a cheaper pattern);
# the pattern is tried there alone, as ``finditer`` would try it.


def matches_at(pattern: re.Pattern, text: str, starts: list[int]) -> list[re.Match]:
    """``list(pattern.finditer(text))``, given ``starts``: ascending, every position where a match
    can start. ``finditer`` tries each position from the end of the last match on; trying only
    these is the same, since ``pattern.match(text, p)`` reads the characters before ``p`` (for
    ``\\b`` and lookbehinds) and none of these patterns matches the empty string.

    >>> [m.span() for m in matches_at(IDENT_RE, "S7-1500 and E-217", [0, 3, 12])]
    [(0, 7), (12, 17)]
    """
    found, end = [], 0
    for start in starts:
        if start >= end:
            match = pattern.match(text, start)
            if match is not None:
                found.append(match)
                end = match.end()
    return found


#: On the reversed text, from the last digit of a run of ``[A-Za-z./-]`` and ``\d`` to the run's
#: start; group 1: the part before the last digit's segment (it opens on a '.', '/' or '-').
_REVERSED_DIGIT_RUN_RE = re.compile(r"\d[A-Za-z\d]*([A-Za-z./\-\d]*)")
_SEPARATOR_RE = re.compile(r"[./-]")


def _ident_starts(text: str) -> list[int]:
    """Where an ``IDENT_RE`` match can start, ascending.

    Every alternative reads only ``[A-Za-z0-9./-]`` and ``\\d`` (Unicode digits) and holds a
    ``\\d``: a match lies in a maximal run of those characters and starts at or before the run's
    last digit.
    It opens with a word character after ``\\b``, so at the run's start or right after one of
    its '.', '/', '-'. On the reversed text one match of ``_REVERSED_DIGIT_RUN_RE`` per such run
    reaches from its last digit to its start (the search meets the last digit first, and the match
    takes the rest of the run).

    >>> _ident_starts("S7-1500, v2.x and 10.0/16")
    [0, 3, 9, 18, 21, 23]
    """
    size, reverse = len(text), text[::-1]
    starts = []
    for run in _REVERSED_DIGIT_RUN_RE.finditer(reverse):
        before, run_end = run.span(1)
        if before != run_end:  # right after each separator before the last digit's segment
            starts.extend(size - sep.start() for sep in _SEPARATOR_RE.finditer(reverse, before, run_end))
        starts.append(size - run_end)
    starts.reverse()
    return starts


def _noun_trie(nouns) -> str:
    """An alternation of ``nouns`` grouped by first letter (re checks a branch's first letter
    before entering it: a position not opening a noun costs one test per letter, not per noun)."""
    tails: dict[str, list[str]] = {}
    for noun in nouns:
        tails.setdefault(noun[0], []).append(noun[1:])
    return "|".join(f"{first}(?:{'|'.join(rest)})" for first, rest in tails.items())


#: On the folded text, a noun after a character outside ``[a-z0-9_]``.
_NOUN_AFTER_RE = re.compile(r"[^a-z0-9_](?:" + _noun_trie(ASSET_NOUNS) + ")")


def fold_case(text: str) -> str:
    """``text`` of the same length where every character that ``re.IGNORECASE`` matches to an
    ASCII letter reads as that letter in lower case: Python matches a character to a letter when
    its simple lower case is that letter (the Kelvin sign U+212A to 'k'; 'İ' to 'i', which
    ``str.lower`` makes two characters, so it goes to 'I' first) or by an extra case ('ı' to 'i',
    'ſ' to 's'). No other character's lower case has two characters; the tests check every code
    point against ``re``.

    >>> fold_case("LİNE ſite lıne") == "line site line"
    True
    """
    return text.replace("\u0130", "I").lower().replace("\u017f", "s").replace("\u0131", "i")


def _asset_starts(text: str) -> list[int]:
    """Where an ``ASSET_RE`` match can start, ascending.

    A match opens with an asset noun (case-insensitive) after ``\\b``: where the folded text
    (``fold_case``) holds the noun in lower case, at the text's start or after a character that is
    no word character, which folds outside ``[a-z0-9_]`` (a character whose lower case is in it is
    a word character; the tests check every code point). ``_NOUN_AFTER_RE``'s matches hide no
    such start: the character before it would be a noun's letter. Only the noun and what comes
    before it are read, so the rule holds whatever the pattern asks after the noun.

    >>> _asset_starts("Line 3, LINE 4 and pipeline 5 at ſite 2")
    [0, 8, 33]
    """
    folded = fold_case(text)
    starts = [0] if folded.startswith(ASSET_NOUNS) else []
    starts.extend(noun.start() + 1 for noun in _NOUN_AFTER_RE.finditer(folded))
    return starts


#: The finder of each pattern's starts.
SCAN_STARTS = {IDENT_RE: _ident_starts, ASSET_RE: _asset_starts}
#: From this many characters a pattern is tried at its finder's starts only: below it a plain
#: ``finditer`` is as fast; above
#: it the finders win by a growing factor.
SCAN_FROM = 48


def scan_pattern(pattern: re.Pattern, text: str) -> list[re.Match]:
    """``list(pattern.finditer(text))`` for a pattern of ``SCAN_STARTS``, tried only at the starts
    its finder gives from ``SCAN_FROM`` characters on: on long texts such as the PEP bank's, two
    to six times faster than ``finditer`` over every position, with the same matches.

    >>> [m.group(0) for m in scan_pattern(ASSET_RE, "The crew moved from line 3 to the press near bay 12 this morning.")]
    ['line 3', 'bay 12']
    """
    if len(text) < SCAN_FROM:
        return list(pattern.finditer(text))
    return matches_at(pattern, text, SCAN_STARTS[pattern](text))


_ASCII_DIGIT_RE = re.compile(r"[0-9]")


def _distinctive_fast(word: str) -> bool:
    """``_distinctive(word)``; an ASCII word is read with string methods instead of a loop."""
    if not word.isascii():
        return _distinctive(word)
    rest = word[1:]
    return (len(word) > 1 and word.isupper()) or _ASCII_DIGIT_RE.search(word) is not None or (
        rest != rest.lower() and word != word.upper()
    )


def _boundary(text: str, start: int, prefix: bool = True) -> tuple[bool, bool]:
    """Whether a name at ``start`` opens a sentence, and (when ``prefix``) whether it follows a
    framing prefix: ``_names``' reading of the tail before it (``_TAIL`` characters, the text's
    start only when it lies within them), here without copying the tail."""
    lo = 0 if start <= _TAIL else start - _TAIL
    # a boundary match ends the tail: it starts at most three characters before the last one that
    # is not a space, or before a run of digits there ("12. "); search from there (``^`` still
    # matches only at the text's real start, and ``$`` at ``start``), not from every character
    end = start
    while end > lo and text[end - 1].isspace():
        end -= 1
    pos = end - 3
    if end > lo and text[end - 1] in ".)":
        k = end - 1
        while k > lo and text[k - 1].isdecimal():
            k -= 1
        pos = min(pos, k - 2)
    at = _BOUNDARY_RE.search(text, max(pos, lo), start) is not None
    if not (prefix and at):
        return at, False
    before = text[:start] if start <= _TAIL else "x" + text[start - _TAIL : start]
    return True, bool(_PREFIX_RE.search(re.split(r"[.!?;\n]\s*", before)[-1]))


def _name_key(words: list[str], at_start: bool) -> str | None:
    """The tail of ``_names``' rules: trailing framing words, lone ordinary words at a sentence's start."""
    while words and words[-1] in FRAMING_NAMES:
        words = words[:-1]
    if not words:
        return None
    if at_start and len(words) == 1 and not _distinctive_fast(words[0]):
        return None
    if len(words) == 1 and len(words[0]) < 2:
        return None
    return " ".join(w.strip(".'") for w in words).lower()


@lru_cache(maxsize=1 << 16)
def _name_plan(seq: str) -> tuple[str | None, str | None, str | None, bool]:
    """What ``_names`` makes of a capitalised sequence, by what comes before it: the key when it
    does not open a sentence, when it opens one, when it follows a framing prefix ("Goal: Ship
    Kioko"), and whether the prefix can change it (None: no name)."""
    words = seq.split()
    stripped = False
    while words and (words[0] in FRAMING_NAMES or words[0].lower() in STOP_WORDS):
        words, stripped = words[1:], True
    if not words:
        return None, None, None, False
    inside, opening = _name_key(words, stripped), _name_key(words, True)
    if words[0].lower() in ACTION_VERBS:
        return inside, opening, _name_key(words[1:], False), True
    return inside, opening, opening, False


def _names_fast(text: str) -> list[str]:
    """The keys of ``_names(text)``: each sequence's rules are read once per bank (memoised), and
    the boundary before a name is read only when it changes the outcome."""
    found = []
    for match in _CAP_SEQ_RE.finditer(text):
        inside, opening, prefixed, action = _name_plan(match.group(0))
        if inside == opening == prefixed:
            key = inside
        else:
            at, after_prefix = _boundary(text, match.start(), action and prefixed != opening)
            key = prefixed if after_prefix else opening if at else inside
        if key is not None:
            found.append(key)
    return found


def _known_lookup(known: tuple[str, ...]) -> tuple[frozenset[str], int, frozenset[str], frozenset[str]]:
    """``_known_index(known)`` with the first words of the keys, and those of the keys of two words
    or more (``anchors_of`` keeps one per distinct tuple of known entities)."""
    keys, longest = _known_index(known)
    return (keys, longest, frozenset(k.split(" ")[0] for k in keys),
            frozenset(k.split(" ")[0] for k in keys if " " in k))


_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+/-")


def _known_words(low: str, keys: frozenset[str]) -> list[str]:
    """The one-word ``keys`` that are tokens of ASCII lower-case text ``low``, by first position.

    A token (``_KNOWN_TOKEN_RE``) never crosses a character outside ``[\\w.+/-]``, and in a run of
    such characters it spans from the first word character to the last one that is a word
    character or ``+``: so each occurrence of a key is checked against the token of its run."""
    found = []
    for key in keys:
        if not _TOKEN_CHARS.issuperset(key):  # "c#": never a token
            continue
        at = low.find(key)
        while at >= 0:
            lo, hi = at, at + len(key)
            while lo > 0 and low[lo - 1] in _TOKEN_CHARS:
                lo -= 1
            while hi < len(low) and low[hi] in _TOKEN_CHARS:
                hi += 1
            if low[lo:hi].lstrip(".+/-").rstrip("./-") == key:
                found.append((at, key))
                break
            at = low.find(key, at + 1)
    return [key for _, key in sorted(found)]


def _known_fast(text: str, lookup: tuple) -> list[str]:
    """The keys of ``_known(text, known)`` by first position (``lookup = _known_lookup(known)``): on
    ASCII text, one-word keys are found by substring and checked against their token."""
    keys, longest, heads, multi = lookup
    if not keys:
        return []
    if text.isascii():
        low = text.lower()  # an ASCII token's lower case is its part of the text's lower case
        if len(heads) <= 16:
            if not multi:
                return _known_words(low, heads)
            if not any(h in low for h in heads):
                return []
        tokens = _KNOWN_TOKEN_RE.findall(low)
    else:
        tokens = [t.lower() for t in _KNOWN_TOKEN_RE.findall(text)]
    hits = []
    for size in range(longest, 1, -1):
        for i in range(len(tokens) - size + 1):
            if tokens[i] in multi:
                gram = " ".join(tokens[i : i + size])
                if gram in keys:
                    hits.append(gram)
    if longest >= 1:
        hits.extend(t for t in tokens if t in keys)
    return hits


def _entities_fast(text: str, lookup: tuple, digit: bool = True, asset: bool = True) -> tuple[dict, str]:
    """The entities of ``anchor(text)`` and the text its content words are read from (``lookup``:
    ``_known_lookup`` of the known entities); ``digit``, ``asset``: False when the text holds no
    digit, no asset noun before a space (``read_hints``): the patterns that need them are skipped."""
    entities: dict[str, None] = {}
    idents = scan_pattern(IDENT_RE, text) if digit else []
    for match in idents:
        entities[match.group(0).lower()] = None
    if asset:
        for match in scan_pattern(ASSET_RE, text):
            entities[f"{match.group(1).lower()} {match.group(2).lower()}"] = None
    stripped = _spaced(text, idents)
    if _UPPER_RE.search(stripped):
        for key in _names_fast(stripped):
            entities[key] = None
    for key in _known_fast(text, lookup):
        entities[key] = None
    return entities, stripped


_PY_SPACE = r"[\t\n\x0b\x0c\r \x1c-\x1f]"  #: what Python's \s matches in ASCII text


def read_hints(column) -> tuple[list, list]:
    """Per text, whether it may hold a digit, an asset noun then a space: read by polars (Rust
    regex) over the column; a text with a non-ASCII character gets True for both
    (Python's \\d, \\w, \\s and case folding go beyond ASCII there), so each is True wherever
    the Python pattern it guards can match."""
    text = pl.col("text")
    wide = text.str.contains(r"[^\x00-\x7F]").fill_null(False)
    read = pl.LazyFrame([column.alias("text")]).select(  # one streaming query: the texts in parts on every core
        (text.str.contains("[0-9]").fill_null(False) | wide).alias("digit"),
        (text.str.contains(r"(?i)(?:" + "|".join(ASSET_NOUNS) + ")" + _PY_SPACE).fill_null(False) | wide).alias("asset"),
    ).collect(engine="streaming")  # one pass for both tests, not one after another
    return read["digit"].to_list(), read["asset"].to_list()


_FEW = 32  #: below this many texts, ``anchors_of`` reads them one by one without polars


def column_stems(texts: list[str]):
    """Per text, its content words' stems, each once in reading order with the first word that gave
    it: ``(stems, codes, words, surfaces, offsets)``, text ``k``'s being ``codes[offsets[k]:offsets[k + 1]]``
    (indexes into ``stems``) and ``words[...]`` (indexes into ``surfaces``, the words as written):
    polars reads the words of the whole column, each distinct word is stemmed once, and numpy keeps
    the first word of each (text, stem)."""
    if len(texts) < _FEW:  # a few texts (an entry being added): Python, text by text
        stem_of: dict[str, int] = {}
        surface_of: dict[str, int] = {}
        codes, words, ends = [], [], [0]
        for text in texts:
            seen = set()
            for stemmed, surface in content_words(text):
                if stemmed not in seen:
                    seen.add(stemmed)
                    codes.append(stem_of.setdefault(stemmed, len(stem_of)))
                    words.append(surface_of.setdefault(surface, len(surface_of)))
            ends.append(len(codes))
        return (list(stem_of), np.asarray(codes, np.int64), np.asarray(words, np.int64), list(surface_of),
                np.asarray(ends, np.int64))
    words = (  # the streaming engine reads the texts in parts on every core, in order
        pl.LazyFrame({"text": pl.Series(texts, dtype=pl.String)})
        .with_row_index("row")
        .select("row", pl.col("text").str.extract_all(WORD_RE.pattern).alias("surface"))
        .explode("surface")
        .drop_nulls("surface")
        .collect(engine="streaming")
    )
    if words.height == 0:
        return [], np.zeros(0, np.int64), np.zeros(0, np.int64), [], np.zeros(len(texts) + 1, np.int64)
    surfaces, word = _word_codes(words["surface"])
    stem_of: dict[str, int] = {}
    stem_code = np.fromiter(
        (-1 if (st := content_stem(w)) is None else stem_of.setdefault(st, len(stem_of)) for w in surfaces),
        dtype=np.int64, count=len(surfaces),
    )
    row = words["row"].to_numpy().astype(np.int64)
    code = stem_code[word]
    keep = np.flatnonzero(code >= 0)
    keep = keep[_first_of_each(row[keep] * max(len(stem_of), 1) + code[keep])]
    counts = np.bincount(row[keep], minlength=len(texts))
    return list(stem_of), code[keep], word[keep], surfaces, np.concatenate([[0], np.cumsum(counts)])


def _word_codes(column: pl.Series) -> tuple[list[str], np.ndarray]:
    """The distinct strings of a column (no nulls) and, per value, the index of its string among
    them: a cast to a categorical of its own (one hashing pass, a few times faster than ``unique``
    then ``replace_strict``, which a polars without ``pl.Categories`` (before 1.32) still takes).

    >>> _word_codes(pl.Series(["to", "be", "to"]))
    (['to', 'be'], array([0, 1, 0]))
    """
    categories = getattr(pl, "Categories", None)
    if categories is not None:
        own = categories.random()  # a fresh mapping, not the process-wide one: only these strings, ids from 0
        read = column.cast(pl.Categorical(own))  # kept until the strings are read: the mapping lives with it
        strings = own.to_series().to_list()
        codes = read.to_physical().to_numpy().astype(np.int64)
        if len(strings) > int(codes.max(initial=-1)):
            return strings, codes
    unique = column.unique(maintain_order=True)
    return unique.to_list(), column.replace_strict(unique, np.arange(len(unique)), return_dtype=pl.Int64).to_numpy()


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """Whether each key is the first of its value, in order. A stable sort: the keys come nearly
    sorted (row major), which numpy's stable sort reads as long runs (faster here than polars'
    ``is_first_distinct``).

    >>> _first_of_each(np.array([5, 3, 5, 3, 7])).tolist()
    [True, True, False, False, True]
    """
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    first = np.ones(len(keys), bool)
    first[1:] = ranked[1:] != ranked[:-1]
    out = np.zeros(len(keys), bool)
    out[order[first]] = True
    return out


def _column_words(texts: list[str], prefix: str = "t:"):
    """Per text, its content words' stems (each once, first surface kept; ``prefix`` + stem) as flat
    lists with offsets (text ``k``'s are ``[offsets[k]:offsets[k + 1]]``)."""
    names, codes, words, surfaces, offsets = column_stems(texts)
    stems = np.array([f"{prefix}{st}" for st in names], dtype=object)
    labels = np.array(surfaces, dtype=object)
    return stems[codes].tolist(), labels[words].tolist(), offsets.tolist()


def anchors_of(texts, knowns) -> list[Anchor]:
    """``[anchor(t, known_entities=k) for t, k in zip(texts, knowns)]``, with
    the content words of all texts read at once (an empty text's anchor has no labels).

    >>> anchors_of(["Line 3 keeps faulting with error E-217.", ""], [(), ()])[0].terms
    ('e:e-217', 'e:line 3', 't:line', 't:fault', 't:error')
    """
    texts, knowns = list(texts), list(knowns)
    if len(texts) < _FEW:  # every pattern runs: polars' start costs more than the few texts
        digits = assets = [True] * len(texts)
    else:
        digits, assets = read_hints(pl.Series(texts, dtype=pl.String))
    found, stripped = entity_pass(texts, knowns, digits, assets)
    terms, surfaces, offsets = _column_words(stripped)
    out = []
    for k, keys in enumerate(found):
        if keys is None:
            out.append(Anchor((), ()))
            continue
        lo, hi = offsets[k], offsets[k + 1]
        if keys:  # (entities, terms, labels), by position: cheaper than building an anchor by name
            out.append(Anchor(keys, tuple(["e:" + key for key in keys] + terms[lo:hi]), keys + tuple(surfaces[lo:hi])))
        else:
            out.append(Anchor((), tuple(terms[lo:hi]), tuple(surfaces[lo:hi])))
    return out


def entity_pass(texts, knowns, digits, assets) -> tuple[list, list]:
    """Per text, its entities' keys (a tuple; None for an empty text) and the text its content
    words are read from (``_entities_fast``)."""
    found, stripped = [], []
    lookups: dict = {}
    for text, known, digit, asset in zip(texts, knowns, digits, assets):
        known = tuple(known)
        if text:
            lookup = lookups.get(known)
            if lookup is None:
                lookup = lookups[known] = _known_lookup(known)
            entities, rest = _entities_fast(text, lookup, digit, asset)
            found.append(tuple(entities))
        else:
            found.append(None)
            rest = ""
        stripped.append(rest)
    return found, stripped


def anchor_frame(anchors) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Anchors as two flat frames: per anchor how many ``terms`` it has and how many ``entities``
    lead them, and every anchor's terms with their labels one after another; read back by
    :func:`anchors_from_frame`. What a store keeps of them (flat columns read back fast).

    >>> a = anchors_of(["Line 3 keeps faulting with error E-217.", ""], [(), ()])
    >>> anchors_from_frame(anchor_frame(a), [0, 1, None]) == [*a, None]
    True
    """
    from itertools import chain

    if isinstance(anchors, AnchorRows):
        return anchors.frames()
    rows = pl.DataFrame({"terms": [len(a.terms) for a in anchors], "entities": [len(a.entities) for a in anchors]},
                        schema={"terms": pl.UInt32, "entities": pl.UInt32})
    flat = pl.DataFrame({"term": list(chain.from_iterable(a.terms for a in anchors)),
                         "label": list(chain.from_iterable(a.labels for a in anchors))},
                        schema={"term": pl.String, "label": pl.String})
    return rows, flat


def anchors_from_frame(frames: tuple[pl.DataFrame, pl.DataFrame], rows, *, block: int = 65_536) -> list:
    """The anchors of ``rows`` of frames written by :func:`anchor_frame` (None for a None row): an
    anchor's entities are its first labels, its terms ``e:<entity>`` first. The flat columns are
    read into Python ``block`` anchors at a time (at a million entries, all of them at once would
    hold a second copy of some 60 million strings); :class:`AnchorRows` makes them one by one."""
    return AnchorRows(frames, rows).to_list(block=block)


_EMPTY = Anchor((), ())


class AnchorRows(Sequence):
    """Per entry, its anchors, kept as the two frames of :func:`anchor_frame` and made into
    :class:`Anchor` objects only when an entry is read (then kept): what statistics taken from a
    bank's cache hold, so that a new process does not make a million anchors to link a hundred
    entries. ``rows``: per entry, its row of the frames (None or -1: not there, the entry reads as
    None until :meth:`filled`); entries ``+`` a sequence of anchors come after them.

    >>> a = anchors_of(["Line 3 keeps faulting with error E-217.", "Green tea."], [(), ()])
    >>> rows = AnchorRows(anchor_frame(a), [1, None, 0])
    >>> rows[0] == a[1], rows[1], len(rows), rows.missing().tolist()
    (True, None, 3, [1])
    >>> grown = rows.filled({1: a[0]}) + (a[1],)
    >>> list(grown) == [a[1], a[0], a[0], a[1]], grown.missing().tolist()
    (True, [])
    """

    __slots__ = ("_pick", "_ends", "_entities", "_terms", "_labels", "_given", "_tail", "_made")

    def __init__(self, frames: tuple[pl.DataFrame, pl.DataFrame], rows, *, given: dict | None = None, tail=()):
        per_row, flat = frames
        lengths = per_row["terms"].to_numpy().astype(np.int64)
        self._ends = np.cumsum(lengths)
        if (int(self._ends[-1]) if len(lengths) else 0) != flat.height:
            raise ValueError("anchor frames do not match")
        self._entities = per_row["entities"].to_numpy().astype(np.int64)
        self._terms, self._labels = flat["term"].to_arrow(), flat["label"].to_arrow()  # a slice is a view
        if isinstance(rows, pl.Series):
            pick = rows.fill_null(-1).to_numpy()
        else:
            pick = np.array([-1 if r is None else r for r in rows], dtype=np.int64)
        self._pick = np.asarray(pick, np.int64)
        if len(self._pick) and (self._pick.max() >= len(lengths)):
            raise ValueError("an anchor row is past the frames")
        self._given = dict(given or {})
        self._tail = tuple(tail)
        self._made: dict[int, Anchor] = {}

    def _shared(self, given: dict, tail: tuple) -> "AnchorRows":
        out = object.__new__(AnchorRows)
        for name in ("_pick", "_ends", "_entities", "_terms", "_labels"):
            setattr(out, name, getattr(self, name))
        out._given, out._tail, out._made = given, tail, self._made  # anchors made are the same for all
        return out

    def __len__(self) -> int:
        return len(self._pick) + len(self._tail)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [self[i] for i in range(*key.indices(len(self)))]
        i = int(key)
        n = len(self._pick)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(key)
        if i >= n:
            return self._tail[i - n]
        made = self._given.get(i) or self._made.get(i)
        if made is not None:
            return made
        r = int(self._pick[i])
        if r < 0:
            return None
        lo, hi = (int(self._ends[r - 1]) if r else 0), int(self._ends[r])
        terms = tuple(self._terms.slice(lo, hi - lo).to_pylist())
        labels = tuple(self._labels.slice(lo, hi - lo).to_pylist())
        made = self._made[i] = Anchor(entities=labels[: int(self._entities[r])], terms=terms, labels=labels)
        return made

    def to_list(self, *, block: int = 65_536) -> list:
        """Every entry's anchors (None where missing), the frames read ``block`` rows at a time:
        what a build, which reads every anchor, takes."""
        out: list = [None] * len(self._pick)
        for i, a in (*self._made.items(), *self._given.items()):
            out[i] = a
        todo = np.flatnonzero(self._pick >= 0)
        if self._given or self._made:
            todo = todo[[out[i] is None for i in todo.tolist()]]
        order = todo[np.argsort(self._pick[todo], kind="stable")]
        picked = self._pick[order]
        for lo in range(0, len(self._ends), block):
            hi = min(lo + block, len(self._ends))
            first, last = np.searchsorted(picked, [lo, hi])
            if first == last:
                continue
            start = int(self._ends[lo - 1]) if lo else 0
            terms = self._terms.slice(start, int(self._ends[hi - 1]) - start).to_pylist()
            labels = self._labels.slice(start, int(self._ends[hi - 1]) - start).to_pylist()
            for pos, r in zip(order[first:last].tolist(), picked[first:last].tolist()):
                a, b = (int(self._ends[r - 1]) if r else 0) - start, int(self._ends[r]) - start
                ne = int(self._entities[r])
                out[pos] = Anchor(entities=tuple(labels[a : a + ne]), terms=tuple(terms[a:b]), labels=tuple(labels[a:b]))
        return out + list(self._tail)

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """:func:`anchor_frame` of these anchors, the rows still in the frames taken from them
        without making an anchor (a missing entry reads as an empty anchor).

        >>> a = anchors_of(["Line 3 keeps faulting with error E-217.", "Green tea."], [(), ()])
        >>> rows = AnchorRows(anchor_frame(a), [1, None, 0]).filled({1: a[0]}) + (a[1],)
        >>> anchors_from_frame(rows.frames(), [0, 1, 2, 3]) == list(rows)
        True
        """
        import pyarrow as pa

        n, total = len(self._pick), len(self)
        kept = self._pick >= 0
        if self._given:
            kept[list(self._given)] = False  # an anchor given (read from its text) replaces its row
        new_at = np.concatenate([np.flatnonzero(~kept), np.arange(n, total)])  # entries whose anchor is new
        new = [self._given.get(i, _EMPTY) for i in new_at[: len(new_at) - len(self._tail)].tolist()] + list(self._tail)
        extra_rows, extra_flat = anchor_frame(new)
        new_len = extra_rows["terms"].to_numpy().astype(np.int64)
        row_end = self._ends
        row_len = np.diff(np.concatenate([[0], row_end]))
        # one table, the kept flat rows then the new anchors' rows; per entry its run of it, in order
        start, count, entities = (np.zeros(total, np.int64) for _ in range(3))
        r = self._pick[kept]
        start[:n][kept], count[:n][kept], entities[:n][kept] = row_end[r] - row_len[r], row_len[r], self._entities[r]
        before = int(row_end[-1]) if len(row_end) else 0
        start[new_at] = before + np.cumsum(new_len) - new_len
        count[new_at] = new_len
        entities[new_at] = extra_rows["entities"].to_numpy().astype(np.int64)
        take = pa.array(np.repeat(start - (np.cumsum(count) - count), count) + np.arange(int(count.sum())))
        columns = {}
        for name, kept_column in (("term", self._terms), ("label", self._labels)):
            both = pa.concat_arrays([kept_column.cast(pa.large_string()), extra_flat[name].to_arrow().cast(pa.large_string())])
            columns[name] = pl.from_arrow(both.take(take))
        rows = pl.DataFrame({"terms": count, "entities": entities}, schema={"terms": pl.UInt32, "entities": pl.UInt32})
        return rows, pl.DataFrame(columns, schema={"term": pl.String, "label": pl.String})

    def missing(self) -> np.ndarray:
        """The positions of the entries not in the frames and not filled."""
        out = np.flatnonzero(self._pick < 0)
        return out[[i not in self._given for i in out.tolist()]] if self._given else out

    def filled(self, anchors: dict) -> "AnchorRows":
        """These anchors with ``{position: Anchor}`` given for entries (those missing, read apart)."""
        return self._shared({**self._given, **anchors}, self._tail)

    def __add__(self, other) -> "AnchorRows":
        return self._shared(self._given, self._tail + tuple(other))

    def __eq__(self, other) -> bool:
        if not isinstance(other, (Sequence, AnchorRows)) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self) -> str:
        return f"AnchorRows({len(self)} entries, {len(self._made)} read)"

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)
