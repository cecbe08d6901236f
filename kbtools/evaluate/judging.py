"""The judge's operating point: precision and recall per verdict on the pairs planted in a bank's
ground-truth sidecar (``judge_pairs``: duplicates, corrections, splits, near-misses), at the default
similarity threshold and along a sweep. Read-only.

A candidate pair that was not planted counts as ``distinct`` (the generator planted no other
duplicate), so a merge, supersede or split verdict on it is a false positive. Recall of a verdict is
over the planted pairs of that label (for ``distinct``: the planted near-misses).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Sequence

import polars as pl

from kbtools.errors import KbError
from kbtools.judging.judge import ACTIONS, DUPLICATE_THRESHOLD, MERGE_CONFIDENCE, JudgeFn, rule_judge
from kbtools.model.answer_html import html_table
from kbtools.ops.judging import judge_pairs, propose_duplicates
from kbtools.store.bank import Bank

__all__ = ["evaluate_judge", "JudgeEval", "SWEEP", "evaluate_judge_sets", "JudgeSets", "VERDICT_LABELS", "pep_set",
           "curl_set"]

#: The similarity thresholds of the sweep.
SWEEP: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


class JudgeEval(dict):
    """The judge's precision and recall per verdict (a JSON-ready dict with markdown and HTML forms)."""

    def to_dict(self) -> dict:
        """The plain dict."""
        return dict(self)

    def to_markdown(self) -> str:
        """The report as markdown tables."""
        lines = [f"# Judge: {self['judge']} on {self['planted']} planted pairs ({self['planted_by_label']})", "",
                 f"At the default similarity threshold {self['threshold']} ({self['candidates']} candidate pairs):", "",
                 "| verdict | judged | correct | precision | planted | recall |", "|---|---|---|---|---|---|"]
        for v, m in self["at_default"].items():
            lines.append(f"| {v} | {m['judged']} | {m['correct']} | {_pct(m['precision'])} | {m['planted']} | {_pct(m['recall'])} |")
        mc = self["merges"]
        lines += ["", f"Merges written (confidence >= {mc['merge_confidence']}): {mc['judged']}, precision "
                      f"{_pct(mc['precision'])}; below it a merge verdict writes a supersedes edge instead.", "",
                  "Sweep (precision / recall per verdict):", "",
                  "| threshold | pairs | " + " | ".join(ACTIONS) + " |", "|---|---|" + "---|" * len(ACTIONS)]
        for row in self["sweep"]:
            cells = " | ".join(f"{_pct(row[v]['precision'])} / {_pct(row[v]['recall'])}" for v in ACTIONS)
            lines.append(f"| {row['threshold']} | {row['candidates']} | {cells} |")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [[v, m["judged"], m["correct"], _pct(m["precision"]), m["planted"], _pct(m["recall"])]
                for v, m in self["at_default"].items()]
        sweep = [[r["threshold"], r["candidates"], *(f"{_pct(r[v]['precision'])} / {_pct(r[v]['recall'])}" for v in ACTIONS)]
                 for r in self["sweep"]]
        return (html_table(["verdict", "judged", "correct", "precision", "planted", "recall"], rows,
                           caption=f"judge at threshold {self['threshold']}")
                + html_table(["threshold", "pairs", *ACTIONS], sweep, caption="sweep: precision / recall"))


def _pct(x) -> str:
    return "–" if x is None else f"{x:.0%}"


def _metrics(judged: pl.DataFrame, planted: pl.DataFrame) -> dict:
    out = {}
    for v in ACTIONS:
        mine = judged.filter(pl.col("action") == v)
        correct = int((mine["truth"] == v).sum()) if mine.height else 0
        n_planted = int((planted["label"] == v).sum())
        found = judged.filter((pl.col("action") == v) & (pl.col("planted") == v)).height
        out[v] = {"judged": mine.height, "correct": correct,
                  "precision": round(correct / mine.height, 4) if mine.height else None,
                  "planted": n_planted, "recall": round(found / n_planted, 4) if n_planted else None}
    return out


def evaluate_judge(bank: Bank, *, judge: JudgeFn = rule_judge, threshold: float = DUPLICATE_THRESHOLD,
                   sweep: Sequence[float] = SWEEP, merge_confidence: float = MERGE_CONFIDENCE, k: int = 5,
                   truth: dict | None = None) -> JudgeEval:
    """Precision and recall of ``judge`` per verdict on the planted pairs of the bank's sidecar, at
    ``threshold`` and at each threshold of ``sweep`` (pairs proposed once at the lowest, judged once).
    """
    if truth is None:
        from kbtools.demo.banks import read_truth

        truth = read_truth(bank)
    rows = truth.get("judge_pairs") or []
    if not rows:
        raise KbError(f"{bank.path}: the sidecar plants no judge_pairs (kb demo writes them for the engineering bank)")
    planted = pl.DataFrame(rows).select("a", "b", "label")
    lowest = min([threshold, *sweep])
    pairs = propose_duplicates(bank, threshold=lowest, k=k)
    judged = judge_pairs(bank.entries, pairs, judge=judge)
    keyed = pl.concat([planted, planted.select(pl.col("b").alias("a"), pl.col("a").alias("b"), "label")])
    judged = judged.join(keyed.rename({"label": "planted"}), on=["a", "b"], how="left").with_columns(
        truth=pl.col("planted").fill_null("distinct"))
    at = judged.filter(pl.col("score") >= threshold)
    merges = at.filter((pl.col("action") == "merge") & (pl.col("confidence") >= merge_confidence))
    return JudgeEval({
        "judge": getattr(judge, "__name__", type(judge).__name__),
        "planted": planted.height,
        "planted_by_label": dict(planted.group_by("label").len().sort("label").iter_rows()),
        "threshold": threshold,
        "candidates": at.height,
        "at_default": _metrics(at, planted),
        "merges": {"merge_confidence": merge_confidence, "judged": merges.height,
                   "precision": round(float((merges["truth"] == "merge").mean()), 4) if merges.height else None},
        "sweep": [{"threshold": t, "candidates": judged.filter(pl.col("score") >= t).height,
                   **_metrics(judged.filter(pl.col("score") >= t), planted)} for t in sorted(sweep)],
        "misses": judged.filter(pl.col("planted").is_not_null() & (pl.col("action") != pl.col("planted")))
                        .select("a", "b", "score", "planted", "action").to_dicts(),
    })


# ------------------------------------------------------------------- pairs no generator made

#: What each verdict of the judge means to a person: a duplicate, a correction, one part, a different fact.
VERDICT_LABELS: dict[str, str] = {"merge": "duplicate", "supersede": "correction", "split": "split", "distinct": "distinct"}
#: Near-misses drawn per real pair (as many distinct pairs as real ones).
NEAR_MISS_SEED: int = 0


def _row(text: str, id_: str) -> dict:
    return {"id": id_, "title": "", "summary": "", "content": text, "systems": [], "tasks": [], "metadata": "{}"}


def _score_set(name: str, items: list[tuple[dict, dict, str]], judge: JudgeFn, merge_confidence: float) -> dict:
    """Per label precision and recall (Wilson 95 %) of ``judge`` over (older, newer, label) items."""
    from kbtools.evaluate.intervals import proportion
    from kbtools.judging.judge import compare_rows

    got, merged_differ, merges, wrong, backwards = [], 0, 0, [], 0
    for a, b, label, *rest in items:
        v = judge(a, b)
        # the real sets know which one replaces the other (older by date is not always it)
        backwards += bool(v.action == "supersede" and label == "correction" and v.reverse != bool(rest and rest[0]))
        said = VERDICT_LABELS[v.action]
        got.append(said)
        if v.action == "merge" and v.confidence >= merge_confidence:
            merges += 1
            c = compare_rows(a, b)
            merged_differ += bool(c.conflicts or c.added)
        if said != label and len(wrong) < 12:
            wrong.append({"label": label, "verdict": said, "a": (a.get("content") or "")[:160],
                          "b": (b.get("content") or "")[:160], "note": v.note})
    out = {"name": name, "pairs": len(items), "by_label": {}, "merges_written": merges,
           "merged_with_differing_values": merged_differ, "supersedes_backwards": backwards, "misses": wrong}
    for label in ("duplicate", "correction", "distinct"):
        truth = [g for g, (_, _, lab, *_) in zip(got, items) if lab == label]
        said = [lab for g, (_, _, lab, *_) in zip(got, items) if g == label]
        out["by_label"][label] = {"truth": len(truth), "judged": len(said),
                                  "precision": proportion(sum(x == label for x in said), len(said)),
                                  "recall": proportion(sum(g == label for g in truth), len(truth))}
    return out


def _near_misses(rows: list[dict], true_pairs: list[dict], related, n: int, seed: int) -> list[dict]:
    """``n`` candidate pairs (:func:`kbtools.judging.judge.candidate_pairs` at the default threshold)
    that are neither a true pair nor ``related(a, b)``, drawn with ``seed``: label ``distinct``."""
    import numpy as np

    from kbtools.judging.judge import candidate_pairs

    frame = pl.DataFrame(rows).select("id", "title", "summary", "content", "created_at")
    pairs = candidate_pairs(frame, threshold=DUPLICATE_THRESHOLD)
    taken = {frozenset((p["a"], p["b"])) for p in true_pairs}
    pool = [(a, b) for a, b in pairs.select("a", "b").iter_rows() if frozenset((a, b)) not in taken and not related(a, b)]
    pool.sort()
    picks = np.random.default_rng(seed).permutation(len(pool))[:n].tolist()
    return [{"a": pool[i][0], "b": pool[i][1], "label": "distinct"} for i in sorted(picks)]


def _items(rows: list[dict], pairs: list[dict]) -> list[tuple[dict, dict, str, bool]]:
    """(older, newer, label, the older is the one that replaces the newer) per pair ``a`` -> ``b``."""
    by_id = {r["id"]: r for r in rows}
    out = []
    for p in pairs:
        a, b = by_id[p["a"]], by_id[p["b"]]
        swapped = (a.get("created_at") or "") > (b.get("created_at") or "")
        out.append((b, a, p["label"], True) if swapped else (a, b, p["label"], False))
    return out


def pep_set(path, *, seed: int = NEAR_MISS_SEED, citing: bool = False, stated: bool = False) -> tuple[list, dict]:
    """The PEP supersessions (label ``correction``) and as many near-misses drawn from the candidate
    pairs of the whole documents. ``citing=False``: near-misses the headers do not relate and whose
    texts do not cite each other (the easy negatives); ``citing=True``: near-misses where one text
    cites the other but the headers state no supersession (the hard negatives for a judge that
    reads what one says of the other; headers left incomplete by their authors count against it).
    ``stated=True``: the same draw, with the near-misses whose own text says one replaces the other
    (:data:`~kbtools.evaluate.judge_sets.PEP_STATED`, quoted there) labelled ``correction``."""
    from kbtools.evaluate.judge_sets import pep_pairs, pep_rows, read_records, stated_supersessions

    records = read_records(path)
    rows, true = pep_rows(records), pep_pairs(records)
    fields = ("Superseded-By", "Replaces") if citing else ("Superseded-By", "Replaces", "Requires")
    related: set[frozenset] = set()
    for r in records:
        for field in fields:
            for v in re.findall(r"\d+", r["headers"].get(field, "")):
                related.add(frozenset((f"pep-{r['pep']}", f"pep-{int(v)}")))
    cites = {f"pep-{r['pep']}": {f"pep-{int(v)}" for v in re.findall(r"(?:PEP\s*|:pep:`)0*(\d+)", r.get("body") or "")}
             for r in records}

    def cited(a: str, b: str) -> bool:
        return b in cites[a] or a in cites[b]

    near = _near_misses(rows, true, lambda a, b: frozenset((a, b)) in related or cited(a, b) != citing, len(true), seed)
    if not stated:
        return _items(rows, true + near), {"supersessions": len(true), "near_misses": len(near)}
    said = stated_supersessions()
    near = [{**p, "label": "correction"} if frozenset((p["a"], p["b"])) in said else p for p in near]
    relabelled = sum(p["label"] == "correction" for p in near)
    return _items(rows, true + near), {"supersessions": len(true) + relabelled, "stated_in_text": relabelled,
                                       "near_misses": len(near) - relabelled}


def curl_set(path, *, seed: int = NEAR_MISS_SEED) -> tuple[list, dict]:
    """curl's reverts (label ``correction``), its repeated commit messages (``duplicate``) and as
    many near-misses drawn from the candidate pairs of the commit messages, leaving out pairs with
    one subject, one message, an issue number in common or a hash of one named in the other."""
    from kbtools.evaluate.judge_sets import commit_rows, read_records, repeated_messages, revert_pairs, said

    records = read_records(path)
    rows = commit_rows(records)
    reverts = revert_pairs(records)
    repeats, found = repeated_messages(records)
    message = {r["sha"]: said(r) for r in records}
    info = {r["sha"]: (r.get("subject", ""), set(re.findall(r"#(\d+)", f"{r.get('subject', '')} {r.get('body') or ''}")),
                       set(re.findall(r"\b[0-9a-f]{7,40}\b", r.get("body") or ""))) for r in records}

    def related(a: str, b: str) -> bool:
        (sa, ia, ha), (sb, ib, hb) = info[a], info[b]
        return sa == sb or message[a] == message[b] or bool(ia & ib) or any(a.startswith(h) for h in hb) or any(b.startswith(h) for h in ha)

    near = _near_misses(rows, reverts + repeats, related, len(reverts) + len(repeats), seed)
    return _items(rows, reverts + repeats + near), {"reverts": len(reverts), **found, "near_misses": len(near)}


def evaluate_judge_sets(bank: Bank | None = None, *, judge: JudgeFn = rule_judge, peps=None, curl=None,
                        merge_confidence: float = MERGE_CONFIDENCE, seed: int = NEAR_MISS_SEED,
                        planted: JudgeEval | None = None) -> "JudgeSets":
    """The judge on pairs no generator made, side by side: the held-out half of the hand-written
    set (the other half chose the settings; its figures are shown too), the PEP supersessions,
    curl's reverts and repeated messages, each real set with as many near-misses drawn from its
    candidates; per verdict precision and recall with Wilson 95 % intervals, merges written that
    join texts whose values differ, and (given a ``bank`` with a sidecar) the demo's planted pairs
    beside them (or ``planted``, an :func:`evaluate_judge` report already made). ``peps`` / ``curl``: the JSON-lines files (None: the PEP corpus in ``data/peps``,
    curl where the project's shared data keeps it; a set whose file is missing is named so)."""
    from kbtools.evaluate.judge_sets import hand_written_halves

    tune, held = hand_written_halves()
    sets = {"hand-written (held out)": _score_set("hand-written (held out)", _hand(held), judge, merge_confidence),
            "hand-written (tuning half)": _score_set("hand-written (tuning half)", _hand(tune), judge, merge_confidence)}
    pep_file = peps or _default_file("peps")
    sources = {"PEP supersessions": (pep_file, pep_set),
               "PEP, near-misses citing each other": (pep_file, partial(pep_set, citing=True)),
               "PEP, citing each other, with the supersessions the texts state": (pep_file, partial(pep_set, citing=True, stated=True)),
               "curl commits": (curl or _default_file("curl"), curl_set)}
    found: dict[str, dict] = {}
    for name, (path, build) in sources.items():
        if path is None or not Path(path).exists():
            found[name] = {"missing": str(path) if path else "not found (pass its file)"}
            continue
        items, found[name] = build(path, seed=seed)
        sets[name] = _score_set(name, items, judge, merge_confidence)
    if planted is None and bank is not None:
        try:
            planted = evaluate_judge(bank, judge=judge, merge_confidence=merge_confidence, sweep=())
        except KbError as err:
            planted = {"error": str(err)}
    return JudgeSets({"judge": getattr(judge, "__name__", type(judge).__name__), "merge_confidence": merge_confidence,
                      "seed": seed, "sets": sets, "found": found,
                      "planted": planted.to_dict() if isinstance(planted, JudgeEval) else planted})


def _hand(pairs: list[dict]) -> list[tuple[dict, dict, str]]:
    return [(_row(p["a"], f"h{i:03d}a"), _row(p["b"], f"h{i:03d}b"), p["label"]) for i, p in enumerate(pairs)]


def _default_file(which: str):
    root = Path(__file__).resolve().parents[2]
    if which == "peps":
        from kbtools.demo.peps import PEPS_FILE

        return PEPS_FILE
    for candidate in (root / "data" / "curl" / "curl-commits.jsonl.gz", root / ".." / "shared" / "data" / "curl-commits.jsonl.gz"):
        if candidate.exists():
            return candidate.resolve()
    return None


def _cell(m: dict) -> str:
    p, r = m["precision"], m["recall"]

    def one(x):
        return "–" if x["rate"] is None else f"{x['rate']:.2f} [{x['lo']:.2f}–{x['hi']:.2f}]"

    return f"{one(p)} / {one(r)} (n={m['truth']})"


class JudgeSets(dict):
    """:func:`evaluate_judge_sets`' report (a JSON-ready dict with a markdown form)."""

    def to_dict(self) -> dict:
        """The plain dict."""
        return dict(self)

    def to_markdown(self) -> str:
        """The sets side by side: precision / recall with 95 % intervals per verdict."""
        names = list(self["sets"])
        lines = [f"# Judge {self['judge']} on pairs no generator made", "",
                 "precision [95 % Wilson] / recall [95 %] (n = pairs of that label); duplicate = merge verdict, "
                 "correction = supersede verdict", "",
                 "| verdict | " + " | ".join(names) + (" | demo planted |" if self.get("planted") else " |"),
                 "|---|" + "---|" * (len(names) + bool(self.get("planted")))]
        planted = self.get("planted") or {}
        at = planted.get("at_default", {}) if isinstance(planted, dict) else {}
        for label, action in (("duplicate", "merge"), ("correction", "supersede"), ("distinct", "distinct")):
            cells = [_cell(self["sets"][n]["by_label"][label]) for n in names]
            if planted:
                m = at.get(action)
                cells.append(f"{_pct(m['precision'])} / {_pct(m['recall'])} (n={m['planted']})" if m else planted.get("error", "–"))
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("| merges written (joining differing values) | "
                     + " | ".join(f"{s['merges_written']} ({s['merged_with_differing_values']})" for s in self["sets"].values())
                     + (f" | {planted.get('merges', {}).get('judged', '–')} |" if planted else " |"))
        lines.append("| supersessions written the wrong way round | "
                     + " | ".join(str(s.get("supersedes_backwards", 0)) for s in self["sets"].values())
                     + (" | – |" if planted else " |"))
        lines += ["", "Sets: " + "; ".join(f"{k}: " + ", ".join(f"{a} {b}" for a, b in v.items()) for k, v in self["found"].items()),
                  f"Near-misses drawn from each real set's candidate pairs with seed {self['seed']}; the hand-written "
                  "set is split in halves by a fixed seed (settings chosen on the tuning half)."]
        return "\n".join(lines)
