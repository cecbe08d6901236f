"""The judge's operating point: precision and recall per verdict on the pairs planted in a bank's
ground-truth sidecar (``judge_pairs``: duplicates, corrections, splits, near-misses), at the default
similarity threshold and along a sweep. Read-only.

A candidate pair that was not planted counts as ``distinct`` (the generator planted no other
duplicate), so a merge, supersede or split verdict on it is a false positive. Recall of a verdict is
over the planted pairs of that label (for ``distinct``: the planted near-misses).
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

from kbtools.errors import KbError
from kbtools.linker.judge import ACTIONS, DUPLICATE_THRESHOLD, MERGE_CONFIDENCE, JudgeFn, rule_judge
from kbtools.model.answer_html import html_table
from kbtools.ops.judging import judge_pairs, propose_duplicates
from kbtools.store.bank import Bank

__all__ = ["evaluate_judge", "JudgeEval", "SWEEP"]

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
