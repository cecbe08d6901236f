"""The judge as an edge source (seed 000, "What Is Next"): candidate pairs from similarity, a
judge's verdict per pair, and the verdicts committed as one audited Plan: ``supersedes`` (newer over
older) or ``split_from`` edges, or a merge, each with the verdict as the note, source ``judge``.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> from kbtools.ops.writes import report_learning
>>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", settings={"auto_link": False})
>>> a = report_learning(bank, content="Redis TTL is 300 seconds in staging.", systems=["redis"], actor="x")
>>> b = report_learning(bank, content="Correction: Redis TTL is 600 seconds in staging, no longer 300.", systems=["redis"], actor="y")
>>> report = judge_bank(bank, threshold=0.3)
>>> report["written"], bank.edges.select("src", "type", "source").row(0) == (b, "supersedes", "judge")
({'supersedes': 1}, True)
"""

from __future__ import annotations


import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.judging.judge import (
    DUPLICATE_THRESHOLD, MERGE_CONFIDENCE, JudgeFn, Verdict, candidate_pairs, plan_verdicts, rule_judge,
)
from kbtools.judging.sameness import reading_run
from kbtools.model.events import edge_events
from kbtools.model.plan import Plan
from kbtools.model.schema import SCHEMAS
from kbtools.ops.writes import plan_edge_changes, plan_merge_entries
from kbtools.progress import Progress, progress_callback
from kbtools.store.bank import Bank, utcnow
from kbtools.store.vectors import embedder_name, entry_vectors

__all__ = ["propose_duplicates", "judge_pairs", "judged_duplicates", "judge_bank", "note_coverage", "JudgeReport"]

ACTOR = "judge"


class JudgeReport(dict):
    """What :func:`judge_bank` did: counts, the decisions frame (``decisions``) and note coverage by
    edge source before and after. A plain dict with a text form (``to_text()``)."""

    def to_dict(self) -> dict:
        """JSON-ready: the decisions as rows."""
        out = dict(self)
        out["decisions"] = self["decisions"].to_dicts()
        return out

    def to_text(self) -> str:
        """A short human-readable report."""
        d = self["decisions"]
        lines = [f"judge {self['judge']} over {self['pairs']} candidate pair(s) (similarity >= {self['threshold']})"
                 + (" — dry run, nothing written" if self["dry_run"] else ""),
                 "  verdicts: " + (", ".join(f"{k} {v}" for k, v in self["verdicts"].items()) or "none"),
                 "  written:  " + (", ".join(f"{k} {v}" for k, v in self["written"].items()) or "nothing")]
        for when in ("before", "after"):
            cov = self[f"note_coverage_{when}"]
            lines.append(f"  note coverage {when:<6} " + ", ".join(f"{s} {c['share']:.0%} of {c['edges']}"
                                                                    for s, c in cov.items()))
        shown = d.filter(pl.col("write") != "none").head(10)
        for r in shown.iter_rows(named=True):
            what = f"merge {r['b']} into {r['a']}" if r["write"] == "merge" else f"{r['src']} {r['type']} {r['dst']}"
            lines.append(f"  {what}  ({r['action']}, confidence {r['confidence']:.2f}): {r['note']}")
        return "\n".join(lines)


def note_coverage(edges: pl.DataFrame) -> dict[str, dict]:
    """Per edge source: edges and the share that carry a note.

    >>> note_coverage(pl.DataFrame({"source": ["author", "author"], "note": ["how", None]}))
    {'author': {'edges': 2, 'with_note': 1, 'share': 0.5}}
    """
    if edges.height == 0:
        return {}
    has = pl.col("note").fill_null("").str.strip_chars() != ""
    rows = edges.group_by("source").agg(pl.len().alias("edges"), has.sum().alias("with_note")).sort("source")
    return {s: {"edges": int(n), "with_note": int(w), "share": round(w / n, 4) if n else 0.0}
            for s, n, w in rows.iter_rows()}


def propose_duplicates(bank: Bank, *, threshold: float = DUPLICATE_THRESHOLD, k: int = 5,
                       progress: Progress = False) -> pl.DataFrame:
    """Candidate duplicate pairs of the bank's active entries, with the evidence: lexical and (when
    the bank is embedded) vector similarity, whether systems and tasks agree, and both titles.
    Candidates only: nothing is written, and a pair is never an edge by itself. ``progress``
    reports the search (:func:`~kbtools.judging.judge.candidate_pairs`).

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> propose_duplicates(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")).height
    0
    """
    entries = bank.entries
    if "status" in entries.columns:
        entries = entries.filter(pl.col("status") != "superseded")
    vectors = _content_vectors(bank, entries["id"].to_list()) if embedder_name(bank) else None
    pairs = candidate_pairs(entries, vectors=vectors, edges=bank.edges, threshold=threshold, k=k, progress=progress)
    titles = entries.select("id", "title")
    return (pairs.join(titles.rename({"id": "a", "title": "title_a"}), on="a", how="left")
            .join(titles.rename({"id": "b", "title": "title_b"}), on="b", how="left"))


def _content_vectors(bank: Bank, wanted: list[str]):
    """(ids, content vectors) of those of ``wanted`` that have vectors: the content dimension alone
    read from the segments (the other three neither read nor converted), or None without any."""
    ids, data = entry_vectors(bank)
    if not len(ids):
        return None
    at = {v: i for i, v in enumerate(ids.tolist())}
    rows = np.array([at.get(i, -1) for i in wanted], dtype=np.int64)
    have = rows >= 0
    return np.asarray(wanted, dtype=object)[have].astype(str), data.take(rows[have], kind=0)


def judge_pairs(entries: pl.DataFrame, pairs: pl.DataFrame, *, judge: JudgeFn = rule_judge,
                progress: Progress = False) -> pl.DataFrame:
    """``pairs`` with the judge's ``action``, ``note``, ``confidence`` and ``reverse`` (the older one
    replaces the newer; the judge is called with the older and the newer entry as dicts).

    >>> e = pl.DataFrame({"id": ["a1", "b2"], "content": ["x", "x"]})
    >>> judge_pairs(e, pl.DataFrame({"a": ["a1"], "b": ["b2"]}), judge=lambda a, b: Verdict("distinct", "no", 0.5))["action"].to_list()
    ['distinct']
    """
    if not callable(judge):
        raise ValidationError("judge", judge, "a judge is a callable judge(older, newer) -> Verdict")
    rows = {r["id"]: r for r in entries.filter(pl.col("id").is_in(pl.concat([pairs["a"], pairs["b"]]).implode()))
            .iter_rows(named=True)} if pairs.height else {}
    report = progress_callback(progress, "judge", unit="pair")
    actions, notes, confs, reverse = [], [], [], []
    for i, (a, b) in enumerate(pairs.select("a", "b").iter_rows()):
        v = judge(rows[a], rows[b])
        if not isinstance(v, Verdict):
            raise ValidationError("verdict", v, f"the judge returned {type(v).__name__} for {a}/{b}; a judge returns a Verdict")
        actions.append(v.action)
        notes.append(v.note)
        confs.append(float(v.confidence))
        reverse.append(bool(v.reverse))
        if report:
            report(i + 1, pairs.height)
    return pairs.with_columns(pl.Series("action", actions, pl.String), pl.Series("note", notes, pl.String),
                              pl.Series("confidence", confs, pl.Float64), pl.Series("reverse", reverse, pl.Boolean))


def judged_duplicates(bank: Bank, *, judge: JudgeFn = rule_judge, threshold: float = DUPLICATE_THRESHOLD, k: int = 5,
                      limit: int | None = None, progress: Progress = False) -> pl.DataFrame:
    """The bank's candidate pairs (:func:`propose_duplicates`, same-fact pairs first) with the
    judge's verdict on each (at most ``limit``): what ``kb judge`` decides and ``kb health`` lists,
    from this one function, so a finding and a verdict never disagree. Reads only.

    >>> import tempfile, pathlib
    >>> from kbtools.store.bank import create_bank
    >>> from kbtools.ops.writes import report_learning
    >>> bank = create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", settings={"auto_link": False})
    >>> _ = report_learning(bank, content="The invoice export needs the vendor flag.", actor="x")
    >>> _ = report_learning(bank, content="Heads up: the invoice export needs the vendor flag.", actor="y")
    >>> judged_duplicates(bank).select("action", "same").rows()
    [('merge', True)]
    """
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValidationError("limit", limit, "limit (pairs to judge) is a positive integer or None")
    with reading_run():  # each pair is read to rank it, then judged: one reading, kept for the run
        pairs = propose_duplicates(bank, threshold=threshold, k=k, progress=progress)
        if limit is not None:
            pairs = pairs.head(limit)
        return judge_pairs(bank.entries, pairs, judge=judge, progress=progress)


def _apply_frames(edges: pl.DataFrame, plan: Plan) -> pl.DataFrame:
    gone = plan.deletes.get("edges")
    if gone is not None and gone.height:
        edges = edges.join(gone.select("src", "dst", "type"), on=["src", "dst", "type"], how="anti")
    new = plan.upserts.get("edges")
    if new is not None and new.height:
        edges = pl.concat([edges.join(new.select("src", "dst", "type"), on=["src", "dst", "type"], how="anti"),
                           new.select(edges.columns)], how="vertical_relaxed")
    return edges


def plan_judgement(entries: pl.DataFrame, edges: pl.DataFrame, decisions: pl.DataFrame, *, actor: str = ACTOR,
                   now=None) -> tuple[Plan, pl.DataFrame]:
    """One Plan for a run's decisions: every merge (in order, each over the edges the previous ones
    left), then the judge's edges checked against the result; returns the plan and the final edges."""
    now = now or utcnow()
    events, current = [], edges
    for r in decisions.filter(pl.col("write") == "merge").iter_rows(named=True):
        step, _ = plan_merge_entries(current, keep=r["a"], remove=[r["b"]], actor=actor, reason=r["note"] or "judge: merge", now=now)
        events.append(step.appends["events"])
        current = _apply_frames(current, step)
    merged = decisions.filter(pl.col("write") == "merge")["b"].to_list()
    live = entries.filter(~pl.col("id").is_in(merged))
    wanted = decisions.filter(pl.col("write") == "edge")
    add = [{"src": r["src"], "dst": r["dst"], "type": r["type"], "note": r["note"], "source": "judge",
            "evidence": {"verdict": r["action"], "confidence": r["confidence"], "similarity": round(r["score"], 4)}}
           for r in wanted.iter_rows(named=True)]
    linked, _ = plan_edge_changes(live, current, add=add, actor=actor, reason="judge verdict", now=now)
    events.append(linked.appends["events"])
    final = _apply_frames(current, linked)
    old_keys, new_keys = edges.select("src", "dst", "type"), final.select("src", "dst", "type")
    upserts = final.join(edges.select("src", "dst", "type", pl.col("seen_at").alias("_old_seen"), pl.lit(True).alias("_was")),
                         on=["src", "dst", "type"], how="left")
    upserts = upserts.filter(pl.col("_was").is_null() | (pl.col("_old_seen") != pl.col("seen_at")).fill_null(False))
    plan = Plan(
        upserts={"edges": upserts.select(list(SCHEMAS["edges"]))},
        deletes={"entries": pl.DataFrame({"id": merged}, schema={"id": pl.String}),
                 "edges": old_keys.join(new_keys, on=["src", "dst", "type"], how="anti")},
        appends={"events": pl.concat([e for e in events if e.height], how="diagonal_relaxed") if any(e.height for e in events)
                 else edge_events(edges.head(0), "edge.create", actor=actor, at=now, reason=None)},
    )
    return plan, final


def judge_bank(bank: Bank, *, judge: JudgeFn = rule_judge, threshold: float = DUPLICATE_THRESHOLD, k: int = 5,
               limit: int | None = None, dry_run: bool = False, merge_confidence: float = MERGE_CONFIDENCE,
               actor: str = ACTOR, progress: Progress = False) -> JudgeReport:
    """Propose duplicate pairs, judge each (:func:`judged_duplicates`: at most ``limit`` pairs, same-fact
    pairs first, then by similarity) and commit
    the verdicts as one audited transaction with actor ``judge``: ``supersede`` writes ``b supersedes
    a`` (newer over older; ``a supersedes b`` where the verdict says the older replaces the newer), ``split`` writes ``b split_from a``, ``merge`` merges the newer into the
    older at or above ``merge_confidence`` (a ``supersedes`` edge below it), each edge with the
    verdict as its note and source ``judge``. ``dry_run`` writes nothing and reports the same.
    The report holds note coverage by source before and after.
    """
    if not 0.0 <= merge_confidence <= 1.0:
        raise ValidationError("merge_confidence", merge_confidence, "a confidence is in [0, 1]")
    judged = judged_duplicates(bank, judge=judge, threshold=threshold, k=k, limit=limit, progress=progress)
    decisions = plan_verdicts(judged, merge_confidence=merge_confidence)
    before = note_coverage(bank.edges)
    box: dict = {}

    def planner(b: Bank) -> Plan:
        plan, final = plan_judgement(b.entries, b.edges, decisions, actor=actor)
        box["final"] = final
        return Plan() if dry_run else plan

    if dry_run:
        plan, final = plan_judgement(bank.entries, bank.edges, decisions, actor=actor)
        box["final"] = final
    elif decisions.filter(pl.col("write") != "none").height:
        bank.apply(planner, actor=actor, reason="judge verdicts")
    else:
        box["final"] = bank.edges
    written = decisions.filter(pl.col("write") != "none").with_columns(
        pl.when(pl.col("write") == "merge").then(pl.lit("merge")).otherwise(pl.col("type")).alias("what"))
    return JudgeReport({
        "judge": getattr(judge, "__name__", type(judge).__name__),
        "threshold": threshold,
        "pairs": judged.height,
        "dry_run": dry_run,
        "merge_confidence": merge_confidence,
        "verdicts": _counts(judged, "action"),
        "written": _counts(written, "what"),
        "skipped": int(decisions["skipped"].is_not_null().sum()),
        "note_coverage_before": before,
        "note_coverage_after": note_coverage(box["final"]),
        "decisions": decisions,
    })


def _counts(frame: pl.DataFrame, col: str) -> dict[str, int]:
    if frame.height == 0:
        return {}
    return dict(frame.group_by(col).len().sort(["len", col], descending=[True, False]).iter_rows())
