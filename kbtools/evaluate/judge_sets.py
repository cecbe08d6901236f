"""Pairs no generator made, for the judge's evaluation: the hand-written set shipped with kbtools
(``data/judge_pairs.jsonl``: duplicates, corrections and near-misses across six domains, split in
two halves by a fixed seed), the PEP corpus's ``Superseded-By`` / ``Replaces`` pairs and curl's
``This reverts commit`` pairs and repeated commit messages. Pure readers: records in, pair rows
out (``a`` older text, ``b`` newer text, ``label`` one of duplicate, correction, distinct); the
near-misses of a real set are drawn by the caller from its candidate pairs.

>>> tune, held = hand_written_halves()
>>> len(tune) + len(held), sorted({p["domain"] for p in held})[:2]
(96, ['business process', 'code'])
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from kbtools.errors import ValidationError

__all__ = ["HAND_WRITTEN", "PEP_STATED", "LABELS", "SPLIT_SEED", "read_pairs", "hand_written_halves", "read_records",
           "stated_supersessions",
           "pep_rows", "pep_pairs", "commit_rows", "revert_pairs", "repeated_messages", "said"]

#: The hand-written pairs, committed before the judge was tuned on any of them.
HAND_WRITTEN = Path(__file__).resolve().parent / "data" / "judge_pairs.jsonl"
#: PEP pairs whose own text says one replaces the other though neither header says so (read by hand
#: over every near-miss of the PEP set whose texts cite each other; each line quotes the sentence).
PEP_STATED = Path(__file__).resolve().parent / "data" / "pep_stated_supersessions.jsonl"
#: What a person calls a pair (older, newer).
LABELS: tuple[str, ...] = ("duplicate", "correction", "distinct")
#: The seed of the split: settings are chosen on the first half, figures reported on the second.
SPLIT_SEED: int = 42


def read_pairs(path: str | Path = HAND_WRITTEN) -> list[dict]:
    """The pairs of a JSON-lines file (fields ``a``, ``b``, ``label``, ``domain``), checked.

    >>> read_pairs()[0]["label"]
    'duplicate'
    """
    out = []
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("label") not in LABELS:
                raise ValidationError("label", row.get("label"), f"a pair's label is one of {', '.join(LABELS)}", row=i)
            if not (isinstance(row.get("a"), str) and isinstance(row.get("b"), str)):
                raise ValidationError("a/b", row.get("a"), "a pair has two texts a (older) and b (newer)", row=i)
            out.append({"a": row["a"], "b": row["b"], "label": row["label"], "domain": row.get("domain", "")})
    return out


def stated_supersessions(path: str | Path = PEP_STATED) -> dict[frozenset, dict]:
    """The pairs of :data:`PEP_STATED` (fields ``older``, ``newer``, ``in``, ``quote``) by their two ids.

    >>> sorted(stated_supersessions()[frozenset(("pep-580", "pep-590"))])
    ['in', 'newer', 'older', 'quote']
    """
    out = {}
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if line.strip():
                row = json.loads(line)
                if not all(isinstance(row.get(k), str) for k in ("older", "newer", "in", "quote")):
                    raise ValidationError("older/newer/in/quote", row, "a stated supersession names both PEPs, the one that says it, and its words", row=i)
                out[frozenset((row["older"], row["newer"]))] = row
    return out


def hand_written_halves(pairs: list[dict] | None = None, *, seed: int = SPLIT_SEED) -> tuple[list[dict], list[dict]]:
    """The hand-written pairs in two halves by a seeded permutation within each label: (tune, held out).

    >>> t, h = hand_written_halves()
    >>> {p["label"] for p in t} == {p["label"] for p in h} == set(LABELS)
    True
    """
    pairs = read_pairs() if pairs is None else pairs
    rng = np.random.default_rng(seed)
    tune, held = [], []
    for label in LABELS:
        group = [p for p in pairs if p["label"] == label]
        order = rng.permutation(len(group))
        for rank, i in enumerate(order.tolist()):
            (tune if rank % 2 == 0 else held).append(group[i])
    return tune, held


def read_records(path: str | Path) -> list[dict]:
    """The JSON objects of a (gzipped) JSON-lines file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def pep_rows(records: Iterable[Mapping]) -> list[dict]:
    """One entries-like row per PEP: ``id`` "pep-N", ``title`` "PEP N: Title", ``content`` the whole
    document as a person reads it to decide whether one replaces the other (the relation headers,
    which state the answer, left out), ``metadata`` the fields the PEP bank keeps
    (:data:`kbtools.demo.peps.PEPS_MAPPING`: ``Status``, ``Type``, ``Author``, ``Python-Version``;
    a status says "Superseded", never by what), ``created_at`` from ``Created``."""
    from kbtools.demo.peps import PEPS_MAPPING

    fields = PEPS_MAPPING["meta_fields"]
    return [{"id": f"pep-{r['pep']}", "title": f"PEP {r['pep']}: {r['headers'].get('Title', '')}",
             "summary": "", "content": r.get("body") or "", "systems": [], "tasks": [],
             "metadata": json.dumps({f: r["headers"][f] for f in fields if f in r["headers"]}),
             "created_at": _pep_created(r)} for r in records]


def _pep_created(r: Mapping) -> str:
    m = re.search(r"(\d{1,2})-(\w{3})-(\d{4})", r["headers"].get("Created", ""))
    months = "jan feb mar apr may jun jul aug sep oct nov dec".split()
    if not m or m.group(2).lower() not in months:
        return f"0000-00-00#{r['pep']:05d}"
    return f"{m.group(3)}-{months.index(m.group(2).lower()) + 1:02d}-{int(m.group(1)):02d}#{r['pep']:05d}"


def pep_pairs(records: Iterable[Mapping]) -> list[dict]:
    """The supersessions the PEP headers state (``Superseded-By`` on the older, ``Replaces`` on the
    newer), both PEPs present: ``{"a": "pep-OLD", "b": "pep-NEW", "label": "correction"}`` (the newer
    one is the one to read, as a correction is)."""
    present = {r["pep"] for r in records}
    found: set[tuple[int, int]] = set()
    for r in records:
        for v in re.findall(r"\d+", r["headers"].get("Superseded-By", "")):
            found.add((r["pep"], int(v)))
        for v in re.findall(r"\d+", r["headers"].get("Replaces", "")):
            found.add((int(v), r["pep"]))
    return [{"a": f"pep-{o}", "b": f"pep-{n}", "label": "correction"} for o, n in sorted(found)
            if o in present and n in present and o != n]


_TRAILER = re.compile(r"^(?:[A-Z][\w-]*-by|Closes|Fixes|Ref|Refs|Bug|URL|See|Follow-up to|Co-authored-by)\b.*$",
                      re.M | re.I)
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})")


def _message(r: Mapping) -> str:
    body = _TRAILER.sub("", r.get("body") or "")
    return (r.get("subject", "") + "\n\n" + re.sub(r"\n{3,}", "\n\n", body)).strip()


_TAGS = re.compile(r"\[(?:ci skip|skip ci|ci-skip)\]|\(#\d+\)", re.I)


def said(r: Mapping) -> str:
    """What a commit message says, for finding repeats: trailers, case, spacing, "[ci skip]" and
    "(#N)" aside.

    >>> said({"subject": "tidy-up: Whitespace [ci skip]", "body": "Closes #12"})
    'tidy-up: whitespace'
    """
    return re.sub(r"\s+", " ", _TAGS.sub(" ", _message(r))).strip().lower()


def commit_rows(records: Iterable[Mapping]) -> list[dict]:
    """One entries-like row per commit: ``id`` the sha, ``content`` the message without its trailers."""
    return [{"id": r["sha"], "title": r.get("subject", ""), "summary": "", "content": _message(r), "systems": [],
             "tasks": [], "metadata": "{}", "created_at": r.get("date", "")} for r in records]


def revert_pairs(records: Iterable[Mapping]) -> list[dict]:
    """(reverted commit, revert) for each ``This reverts commit <sha>`` that resolves to a record."""
    records = list(records)
    shas = sorted(r["sha"] for r in records)
    out = []
    for r in records:
        m = _REVERTS.search(r.get("body") or "")
        if not m:
            continue
        hit = [s for s in shas if s.startswith(m.group(1))]
        if len(hit) == 1 and hit[0] != r["sha"]:
            out.append({"a": hit[0], "b": r["sha"], "label": "correction"})
    return out


def repeated_messages(records: Iterable[Mapping]) -> tuple[list[dict], dict]:
    """Commits whose whole message (subject and body; trailers, case, spacing, "[ci skip]" and "(#N)"
    aside) repeats another's: one pair per
    repeated message (its two latest commits), label ``duplicate``; with counts of what was found
    (messages repeated, their commits, and same-subject commits whose bodies differ, not used)."""
    by_message: dict[str, list[Mapping]] = {}
    subjects: dict[str, set[str]] = {}
    for r in records:
        by_message.setdefault(said(r), []).append(r)
        subjects.setdefault(r.get("subject", ""), set()).add(said(r))
    pairs, commits = [], 0
    for rows in by_message.values():
        if len(rows) < 2:
            continue
        commits += len(rows)
        x, y = sorted(rows, key=lambda r: (r.get("date", ""), r["sha"]))[-2:]  # one pair per message
        pairs.append({"a": x["sha"], "b": y["sha"], "label": "duplicate"})
    differing = sum(len(v) for v in subjects.values() if len(v) > 1)
    return pairs, {"repeated_messages": len(pairs), "commits": commits, "same_subject_other_body": differing}
