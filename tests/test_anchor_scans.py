"""The two scans tried at their finders' starts equal ``finditer``, and the entity pass ``anchor()``.

``IDENT_RE`` and ``ASSET_RE`` are tried only where their finders say a
match can start (``kbtools.linker.anchors.SCAN_STARTS``). A finder that missed a start would drop a match
or, worse, let a later one in, so each must hold every start ``finditer`` finds, on any string: the
PEP texts, the odd texts of the equivalence suite, strings drawn from ASCII, asset nouns and Unicode
traps, and every kind of code point put before and inside a match. The entity pass read with them
gives what ``anchor()`` gives.
"""

from __future__ import annotations

import gzip
import json
import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.demo.peps import PEPS_FILE
from kbtools.linker.anchors import (
    ASSET_RE, IDENT_RE, SCAN_FROM, SCAN_STARTS, ASSET_NOUNS, entity_pass, fold_case, read_hints,
    matches_at, scan_pattern, anchor,
)
from tests.test_terms_equivalence import ODD_TEXTS

PATTERNS = {"ident": IDENT_RE, "asset": ASSET_RE}
#: Every code point, surrogates included (a str may hold them).
EVERY_CHAR = "".join(map(chr, range(0x110000)))


def _pep_texts() -> list[str]:
    with gzip.open(PEPS_FILE, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["body"] for line in fh]


PEP_TEXTS = _pep_texts()


def _read(matches) -> list:
    return [(m.span(), m.groups(), m.group(0)) for m in matches]


def assert_scans_alike(text: str) -> None:
    """Each pattern's finder holds every start of ``finditer``, and trying only there finds the same."""
    for name, pattern in PATTERNS.items():
        want = list(pattern.finditer(text))
        starts = SCAN_STARTS[pattern](text)
        assert starts == sorted(set(starts)), (name, text)
        assert {m.start() for m in want} <= set(starts), (name, text)
        assert _read(matches_at(pattern, text, starts)) == _read(want), (name, text)
        assert _read(scan_pattern(pattern, text)) == _read(want), (name, text)


@pytest.mark.slow
@pytest.mark.parametrize("part", range(4))
def test_scans_equal_finditer_on_every_pep_text(part):
    for text in PEP_TEXTS[part::4]:
        assert_scans_alike(text)


def test_scans_equal_finditer_on_odd_texts():
    for text in ODD_TEXTS + [t * 4 for t in ODD_TEXTS]:  # short ones by finditer, long ones by the finders
        assert_scans_alike(text)


#: Pieces of the drawn strings: ASCII, the asset nouns in three cases and with the characters that
#: IGNORECASE reads as their letters, identifiers, references and code names, spaces, and Unicode
#: digits, letters and marks that \d, \w and \b read beyond ASCII.
PIECES = (
    list("abcxyzABCXYZ0123456789 ./-_@#():;`,!?\n\t")
    + list(ASSET_NOUNS) + [n.upper() for n in ASSET_NOUNS] + [n.capitalize() for n in ASSET_NOUNS]
    + ["\u017fite", "l\u0131ne", "L\u0130NE", "\u212ailn", "\u212aILN", "no.", "No. ", "#", " 3", " 12B", " B"]
    + ["PEP", "RFC", "ABCDEFG", ":pep:`8`", "os.path", "__init__", "a_b", "e.g", "S7-1500", "INC-4521", "10.20.0.0/16"]
    + ["\u00a0", "\u2003", "\u0663", "\u0661\u0665", "\uff13", "\u00b2", "\u0301", "\u0130", "\u0131", "\u017f",
       "\u212a", "\u00e9", "\u00df", "\u03a9", "\u00aa", "\u2160", "\U0001d7d8"]
)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=60).map("".join))
def test_scans_equal_finditer_on_drawn_strings(text):
    assert_scans_alike(text)


def _standing_chars() -> str:
    """Code points that stand for all of them. The patterns and the finders read a character only
    through ASCII literals and ranges, NBSP, ``\\d``, ``\\w``, ``\\s`` and IGNORECASE (and the
    folding, checked on every code point below): so every code point below U+0250, every one that
    IGNORECASE reads as an ASCII letter, and a seeded sample of 300 of each class of the rest (word
    characters that are no digit, digits, spaces, the others) behave as all do."""
    import random

    rng = random.Random(7)
    chars = set(EVERY_CHAR[:0x250]) | set(re.findall("[a-z]", EVERY_CHAR, re.IGNORECASE))
    for kind in (r"[^\W\d]", r"\d", r"\s", r"[^\w\s]"):
        members = re.findall(kind, EVERY_CHAR[0x250:])
        chars |= set(rng.sample(members, min(300, len(members))))
    return "".join(sorted(chars))


STANDING_CHARS = _standing_chars()
#: Each ``{}`` takes every character of ``STANDING_CHARS``: before a match (where \b, a lookbehind
#: or a run's start decides), and inside one (where \d, \w and IGNORECASE decide).
SWEEPS = {
    "ident": ("{}S7-1500", "x.{}10.20.0.0/16", "AB-{}", "ab.{}7-1", "{}7 X{}9"),
    "asset": ("{}line 3", "l{}ne 4", "{}ite 2", "{}iln 5", "line{}{}"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", SWEEPS)
def test_scans_equal_finditer_with_every_kind_of_character(name):
    pattern = PATTERNS[name]
    for template in SWEEPS[name]:
        for other in ("", " ", "x", "\u0301"):
            text = other.join(template.replace("{}", ch) for ch in STANDING_CHARS)
            want = list(pattern.finditer(text))
            assert {m.start() for m in want} <= set(SCAN_STARTS[pattern](text)), (template, other)
            assert _read(scan_pattern(pattern, text)) == _read(want), (template, other)


def test_folding_reads_every_ignorecase_letter_as_its_lower_case():
    """What ``fold_case`` and ``_asset_starts`` rest on, for every code point: the folded text keeps
    its length, a character IGNORECASE matches to an ASCII letter folds to it, and a character that
    is no word character folds outside ``[a-z0-9_]``."""
    folded = fold_case(EVERY_CHAR)
    assert len(folded) == len(EVERY_CHAR)
    for letter in "abcdefghijklmnopqrstuvwxyz":
        for match in re.finditer(letter, EVERY_CHAR, re.IGNORECASE):
            assert folded[match.start()] == letter == fold_case(match.group(0)), hex(ord(match.group(0)))
    for match in re.finditer(r"\W", EVERY_CHAR):
        assert not re.fullmatch("[a-z0-9_]", folded[match.start()]), hex(ord(match.group(0)))


@pytest.mark.parametrize(("name", "text", "found"), [
    # after a '.', '/' or '-' of its run, not at the run's start; a digit only Unicode's \d reads
    ("ident", "ab.S7-1500 and path/INC-4521 or x.10.20.0.0/16", ["S7-1500", "INC-4521", "10.20.0.0/16"]),
    ("ident", "AB-\u0663 and \u00e9S7-1", ["AB-\u0663"]),
    # the noun's letters as IGNORECASE reads them; after a combining mark (no word character), not
    # after '_', a digit or '²' (word characters)
    ("asset", "\u017fite 2, l\u0131ne 3, L\u0130NE 4, \u212aILN 5, e\u0301line 6, _line 7, 3line 8, \u00b2line 9",
     ["\u017fite 2", "l\u0131ne 3", "L\u0130NE 4", "\u212aILN 5", "line 6"]),
])
def test_scans_find_starts_a_naive_rule_would_miss(name, text, found):
    pattern = PATTERNS[name]
    long_text = text + " " * SCAN_FROM  # read by the finder, not by finditer
    assert [m.group(0) for m in scan_pattern(pattern, long_text)] == found
    assert _read(scan_pattern(pattern, long_text)) == _read(pattern.finditer(long_text))


def _oracle(text: str, known: tuple):
    """What ``anchor()`` reads: the entities, and the text its content words come from."""
    if not text:
        return None, ""
    return anchor(text, known_entities=known).entities, IDENT_RE.sub(" ", text)


KNOWN = ("kioko", "os.path", "line 3", "pep 8")


def test_entity_pass_equals_anchor():
    texts = PEP_TEXTS[::6] + ODD_TEXTS + [t * 4 for t in ODD_TEXTS]
    knowns = [KNOWN[: k % 5] for k in range(len(texts))]
    want = [_oracle(t, k) for t, k in zip(texts, knowns)]
    everywhere = [True] * len(texts)
    for hints in ((everywhere,) * 2, read_hints(pl.Series(texts))):  # as on the PEP bank, and as read
        found, stripped = entity_pass(texts, knowns, *hints)
        assert list(zip(found, stripped)) == want


@pytest.mark.slow
@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=80).map("".join), st.integers(0, 4))
def test_entity_pass_equals_anchor_on_drawn_strings(text, known):
    found, stripped = entity_pass([text], [KNOWN[:known]], [True], [True])
    assert (found[0], stripped[0]) == _oracle(text, KNOWN[:known])
