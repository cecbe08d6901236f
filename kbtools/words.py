"""Words of an entry: tokenising, a compact Porter stemmer, and the vocabularies the linker drops.

Salient words are content words, stemmed (Porter 1980), without stop words, digits, the framing
vocabulary of stored entries ("decided", "lesson", "prefers") and light verbs ("keeps", "came").

>>> content_words("Line 3 keeps faulting with error E-217.")
[('line', 'Line'), ('fault', 'faulting'), ('error', 'error')]
>>> stem("clearing"), stem("jammed"), stem("alignment")
('clear', 'jam', 'align')
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["STOP_WORDS", "FRAMING_WORDS", "LIGHT_VERBS", "stem", "content_words", "content_stem", "WORD_RE"]

STOP_WORDS: frozenset[str] = frozenset(
    """a about above across after afterwards again against all almost alone along already also although
    always am among an and another any anyhow anyone anything anyway anywhere are around as at be
    because been before being below beside besides between beyond both but by can cannot could did do
    does doing down during each either else elsewhere enough etc even ever every everyone everything
    everywhere except few for from further had has have having he hence her here hers herself him
    himself his how however i ie if in indeed into is it its itself just least less many may me
    meanwhile might mine more moreover most mostly much must my myself neither never nevertheless next
    no nobody none nor not nothing now nowhere of off often on once one only onto or other others
    otherwise our ours ourselves out over own per perhaps quite rather really same several she should
    since so some somehow someone something sometime sometimes somewhere still such than that the
    their theirs them themselves then thence there thereafter thereby therefore therein these they
    this those though through throughout thru thus to together too toward towards twice under unless
    until up upon us very via was we well were what whatever when whenever where whereas wherever
    whether which while who whoever whole whom whose why will with within without would yet you your
    yours yourself yourselves yes ok okay eg also lot lots thing things""".split()
)

#: Words of the stored-entry format itself: they say what kind of entry it is, not what it is about.
FRAMING_WORDS: frozenset[str] = frozenset(
    """user users decision decisions decide decided decides deciding chose choose chosen chooses goal
    goals lesson lessons learned learnt insight insights note notes fact facts knowledge preference
    preferences prefer prefers preferred like likes liked dislike dislikes summary procedure event
    events skill skills step steps worked works remember remembered reminder today yesterday tomorrow
    morning afternoon evening tonight week weeks month months year years day days
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday""".split()
)

#: Verbs that carry no topic: "the fault came back" and "the theme came up" share nothing.
LIGHT_VERBS: frozenset[str] = frozenset(
    """keep keeps kept keeping come comes came coming go goes went gone going get gets got gotten
    getting make makes made making take takes took taken taking give gives gave given giving put puts
    putting seem seems seemed let lets say says said saying tell told see saw seen look looks looked
    want wants wanted need needs needed try tries tried trying use uses used using become becomes
    became turn turns turned set sets""".split()
)

#: Tokens: letter runs with an optional possessive/contraction tail; digits never form a word.
WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")

_DROP = STOP_WORDS | FRAMING_WORDS | LIGHT_VERBS


def content_words(text: str) -> list[tuple[str, str]]:
    """The (stem, surface) pairs of a text's content words, in order, repeats kept.

    >>> content_words("The plant's PLC network uses the 10.20.0.0/16 subnet.")
    [('plant', "plant's"), ('plc', 'PLC'), ('network', 'network'), ('subnet', 'subnet')]
    """
    out = []
    for surface in WORD_RE.findall(text):
        stemmed = content_stem(surface)
        if stemmed is not None:
            out.append((stemmed, surface))
    return out


@lru_cache(maxsize=1 << 18)
def content_stem(surface: str) -> str | None:
    """The stem of a word as written, or None when it is not a content word (memoised: a bank
    repeats its words)."""
    word = surface.lower().split("'")[0]
    if len(word) < 2 or word in _DROP:
        return None
    stemmed = stem(word)
    return None if stemmed in _DROP else stemmed


# ---------------------------------------------------------------- Porter (1980), compact
_VOWELS = frozenset("aeiou")


def _cons(w: str, i: int) -> bool:
    c = w[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _m(stem_: str) -> int:
    """Number of VC sequences in the stem."""
    forms = "".join("c" if _cons(stem_, i) else "v" for i in range(len(stem_)))
    return len(re.findall(r"v+c+", forms))


def _has_vowel(stem_: str) -> bool:
    return any(not _cons(stem_, i) for i in range(len(stem_)))


def _double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    return (
        len(w) >= 3
        and _cons(w, len(w) - 3)
        and not _cons(w, len(w) - 2)
        and _cons(w, len(w) - 1)
        and w[-1] not in "wxy"
    )


def _replace(w: str, rules, cond) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            base = w[: len(w) - len(suffix)]
            return base + repl if cond(base) else w
    return w


_STEP2 = [
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
    ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
    ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
    ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    ("logi", "log"),
]
_STEP3 = [
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
    ("ness", ""),
]
_STEP4 = [
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize",
]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter's stem of a lower-case word.

    >>> [stem(w) for w in ("faulting", "encoder", "reopening", "loose", "found")]
    ['fault', 'encod', 'reopen', 'loos', 'found']
    """
    w = word
    if len(w) <= 2:
        return w
    # step 1a
    if w.endswith("sses") or w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    # step 1b
    extra = False
    if w.endswith("eed"):
        if _m(w[:-3]) > 0:
            w = w[:-1]
    else:
        for suffix in ("ed", "ing"):
            if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
                w, extra = w[: -len(suffix)], True
                break
    if extra:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _m(w) == 1 and _cvc(w):
            w += "e"
    # step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, lambda b: _m(b) > 0)
    w = _replace(w, _STEP3, lambda b: _m(b) > 0)
    for suffix in sorted(_STEP4, key=len, reverse=True):
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if _m(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    # step 5
    if w.endswith("e"):
        base = w[:-1]
        if _m(base) > 1 or (_m(base) == 1 and not _cvc(base)):
            w = base
    if _m(w) > 1 and _double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w
