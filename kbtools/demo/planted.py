"""Planted pairs for the judge's operating point: duplicates, corrections, splits and near-misses
(same topic, different fact), recorded in the sidecar as ``judge_pairs``.

Planting runs last, with its own generator seeded from the bank's seed, and rewrites ordinary
entries that nothing else touches (no edge, no citation, no metadata): every other entry keeps its
id and its text, and the bank keeps its size. Each pair is ``{"a": older, "b": newer, "label":
merge|supersede|split|distinct, "how": ...}``.
"""

from __future__ import annotations

import re

import numpy as np

from kbtools.demo.catalog import ENVS, MONTHS
from kbtools.demo.rows import DAY_US, REFERENCE_US, capitalised

__all__: list[str] = []

#: pairs planted per label (and how many of them are hard: paraphrased duplicates, unmarked corrections)
PLANTED = {"merge": 16, "supersede": 12, "split": 8, "distinct": 16}
_NUMBERS = ["2", "3", "5", "10", "30", "64", "128", "300", "1024"]
_SENT = re.compile(r"(?<=[.!?])\s+")
_PARAPHRASE = {"check": "inspect", "look": "glance", "first": "initial", "usually": "typically",
               "before": "prior to", "root cause": "underlying cause", "problems": "trouble", "quick": "fast"}


def plant_judge_pairs(rows, seed: int, filler: list[str]) -> list[dict]:
    """Rewrite free filler entries into planted pairs; returns the sidecar rows."""
    rng = np.random.default_rng([seed, 17])
    touched = {e["src"] for e in rows.edges} | {e["dst"] for e in rows.edges}
    text = " ".join(r["content"] for r in rows.entries)
    free = [i for i in filler if i not in touched and rows.row[i]["metadata"] == "{}" and i[:7] not in text
            and rows.row[i]["status"] == "active" and not re.search(r"\b[0-9a-f]{7,8}\b", rows.row[i]["content"])]
    free = [free[j] for j in rng.permutation(len(free)).tolist()]
    needed = 2 * sum(PLANTED.values())
    if len(free) < needed:
        return []
    pairs, it = [], iter(free)
    for label, count in PLANTED.items():
        made = 0
        for _ in range(40 * count):  # bounded: originals that cannot carry this label are skipped
            if made >= count:
                break
            a = next(it, None)
            if a is None:
                break
            old = rows.row[a]
            built = _BUILD[label](old, rng, made)
            if built is None:
                continue
            b = next(it, None)
            if b is None:
                break
            content, title, how = built
            new = rows.row[b]
            at = min(rows.at[a] + int(rng.integers(1, 30)) * DAY_US, REFERENCE_US - DAY_US)
            new.update(kind=old["kind"], title=title, summary=_SENT.split(content)[0], content=content,
                       useful_for=old["useful_for"], systems=list(old["systems"]), tasks=list(old["tasks"]),
                       steps=list(old["steps"]), created_at=at)
            rows.at[b] = at
            pairs.append({"a": a, "b": b, "label": label, "how": how})
            made += 1
    return pairs


def _swap_fact(content: str, rng, *, avoid_marker: bool = True) -> tuple[str, str] | None:
    """``content`` with one fact changed (a number, or an environment); None when it has neither."""
    nums = [m for m in re.finditer(r"\b\d+\b", content)]
    if nums:
        m = nums[int(rng.integers(len(nums)))]
        other = [n for n in _NUMBERS if n != m.group(0)]
        new = other[int(rng.integers(len(other)))]
        return content[: m.start()] + new + content[m.end():], f"{m.group(0)} -> {new}"
    envs = [e for e in ENVS if re.search(rf"\b{e}\b", content)]
    if envs:
        e = envs[int(rng.integers(len(envs)))]
        other = [x for x in ENVS if x not in envs]
        new = other[int(rng.integers(len(other)))]
        return re.sub(rf"\b{e}\b", new, content), f"{e} -> {new}"
    months = [m for m in MONTHS if m in content]
    if months:
        m = months[0]
        other = [x for x in MONTHS if x != m]
        new = other[int(rng.integers(len(other)))]
        return content.replace(m, new), f"{m} -> {new}"
    return None


def _duplicate(old: dict, rng, k: int):
    sentences = _SENT.split(old["content"])
    if k % 4 == 3:  # hard: a paraphrase (the same knowledge in other words)
        content = old["content"]
        for word, repl in _PARAPHRASE.items():
            content = re.sub(rf"\b{word}\b", repl, content)
        if content == old["content"]:
            content = "In other words: " + content[0].lower() + content[1:]
        return content, old["title"], "paraphrase"
    if k % 2 and len(sentences) > 2:
        content = " ".join([sentences[0], *sentences[:0:-1]]) + " Reported again."
        return content, old["title"], "sentences reordered"
    return old["content"] + " Confirmed again by another agent.", old["title"], "reported twice"


def _correction(old: dict, rng, k: int):
    swapped = _swap_fact(old["content"], rng)
    if swapped is None:
        return None
    content, how = swapped
    if k % 4 == 3:  # hard: the correction does not say it is one
        return content, old["title"], f"unmarked correction ({how})"
    return ("Correction: " + content + " The earlier entry had this wrong.", capitalised("Correction: " + old["title"]),
            f"marked correction ({how})")


def _split(old: dict, rng, k: int):
    sentences = [s for s in _SENT.split(old["content"]) if s]
    if len(sentences) < 3:
        return None
    part = sentences[1 + int(rng.integers(len(sentences) - 1))]
    return part, capitalised(part.rstrip(".")[:80]), "one sentence of the original"


def _near_miss(old: dict, rng, k: int):
    swapped = _swap_fact(old["content"], rng)
    if swapped is None:
        return None
    content, how = swapped
    return content, old["title"], f"same topic, different fact ({how})"


_BUILD = {"merge": _duplicate, "supersede": _correction, "split": _split, "distinct": _near_miss}
