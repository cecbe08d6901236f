"""Evaluation reports: frozen values that render as JSON (everything, raw outcomes included),
markdown (the tables a bank owner reads) and polars frames.

>>> r = HopLabReport(params={"seed": 0}, agent="simulated reader agent, not a model", simulated=True,
...                  arms=[], tasks=[], leaks=[], excluded=[], invalid=[], outcomes=[], summary=[], leaky_notes=[])
>>> r.to_markdown().splitlines()[2]
'Agent: **simulated reader agent, not a model** (a deterministic simulation, not a model).'
>>> r._repr_markdown_() == r.to_markdown()  # a notebook renders the tables
True
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import polars as pl

__all__ = ["HopLabReport", "ReplayReport", "lost_warning"]


def _json_ready(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def _pct(p: dict | None) -> str:
    """``"40% [25–57%] (8/20)"`` from a :func:`~kbtools.evaluate.intervals.proportion` dict."""
    if not p or p.get("rate") is None:
        return "–"
    return f"{p['rate']:.0%} [{p['lo']:.0%}–{p['hi']:.0%}] ({p['k']}/{p['n']})"


def _mean(m: dict | None, digits: int = 2) -> str:
    if not m or m.get("mean") is None:
        return "–"
    return f"{m['mean']:.{digits}f} [{m['lo']:.{digits}f}–{m['hi']:.{digits}f}]"


def _cell(text) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return out


@dataclass(frozen=True)
class HopLabReport:
    """The hop lab's result: parameters and seed, the agent (named as a simulation when it is one),
    the tasks, the leak check, every task's raw outcome per arm, and per-arm metrics with intervals."""

    params: dict
    agent: str
    simulated: bool
    arms: list[dict]
    tasks: list[dict]
    leaks: list[dict]
    excluded: list[str]
    invalid: list[dict]
    outcomes: list[dict]
    summary: list[dict]
    leaky_notes: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Everything, JSON-ready."""
        d = asdict(self)
        d = {"report": "hoplab", "agent": {"name": self.agent, "simulated": self.simulated},
             **{k: v for k, v in d.items() if k not in ("agent", "simulated")}}
        return _json_ready(d)

    def to_json(self, *, indent: int | None = 1) -> str:
        """The report as JSON text (stable key order)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    def to_frame(self) -> pl.DataFrame:
        """One row per task and arm (raw outcomes, the final answer left out)."""
        cols = {"task": pl.String, "arm": pl.String, "handed": pl.Boolean, "fetched_b": pl.Boolean,
                "reached": pl.Boolean, "tangential": pl.Int64, "fetches": pl.Int64, "correct": pl.Boolean}
        return pl.DataFrame([{c: o[c] for c in cols} for o in self.outcomes], schema=cols)

    def _repr_markdown_(self) -> str:
        """A notebook shows the report as its markdown tables."""
        return self.to_markdown()

    def to_markdown(self) -> str:
        """The lab's tables: per-arm metrics, the leak check, the notes that leak."""
        p = self.params
        lines = ["# Hop lab", ""]
        lines.append(f"Agent: **{self.agent}**" + (" (a deterministic simulation, not a model)." if self.simulated
                                                    else " (user-supplied)."))
        if self.simulated and p.get("agent_params"):
            ap = p["agent_params"]
            lines.append(f"It follows a pointer only when the pointer's relation and note share at least "
                         f"{ap.get('min_shared', 1)} stemmed term(s) with the task; it fetches nothing else. "
                         "It never reads the pointer's text about its target, so the pointer-text arms can differ "
                         "only for a real agent.")
        lines.append("")
        lines.append(f"Bank `{p.get('bank', '')}` · embedder {p.get('embedder')} · seed {p.get('seed')} · "
                     f"k {p.get('k')} · pool {p.get('pool')} · tasks from {p.get('tasks_from')}")
        run = len({o['task'] for o in self.outcomes})
        lines.append(f"Tasks: {len(self.tasks)} · excluded by the leak check: {len(self.excluded)}"
                     + (f" ({', '.join(self.excluded)})" if self.excluded else "")
                     + f" · precondition fails on this bank: {len(self.invalid)} · run: {run}")
        lines.append("")
        rows = [[s["label"], s["tasks"], _pct(s["handed"]), _pct(s["reached"]), _pct(s["tangential"]),
                 _mean(s["tangential_per_task"]), _pct(s["correct"]), _mean(s["fetches_per_task"]),
                 s["correct_without_hop"]] for s in self.summary]
        lines += _table(["arm", "tasks", "b handed over", "needed hop reached", "tangential hop taken",
                         "tangential hops / task", "answers correct", "fetches / task", "correct without the hop"],
                        rows)
        lines += ["", "Proportions: Wilson 95 % intervals; means: seeded bootstrap 95 % intervals."]
        if any(s["correct_without_hop"] for s in self.summary):
            lines += ["", "WARNING: some answers were correct without fetching b: the proof token reached the "
                          "agent another way (a leak the check did not catch)."]
        lines += ["", "## Leak check", ""]
        if self.leaks:
            lines += _table(["task", "where", "entry / edge", "detail"],
                            [[x["task"], x["where"], x["entry"], x["detail"]] for x in self.leaks])
        else:
            lines.append("No task's proof token shows anywhere without fetching b.")
        if self.invalid:
            lines += ["", "## Tasks whose precondition fails on this bank", ""]
            lines += _table(["task", "reason"], [[x["task"], x["reason"]] for x in self.invalid])
        lines += ["", f"## Data problems: notes that restate an entry's fact ({len(self.leaky_notes)})", ""]
        if self.leaky_notes:
            lines += _table(["src", "type", "dst", "source", "restates", "why", "note"],
                            [[x["src"], x["type"], x["dst"], x["source"], x["restates"], x["reason"], x["note"]]
                             for x in self.leaky_notes])
        else:
            lines.append("None found.")
        return "\n".join(lines) + "\n"


def lost_warning(lost: int) -> str:
    """The replay's loud line about relevant flat entries that folding lost.

    >>> lost_warning(2)
    'WARNING: folding lost 2 relevant entries that the flat answer returned.'
    >>> lost_warning(0)
    'Folding lost no relevant entry of the flat answer (0 lost).'
    """
    if lost:
        return f"WARNING: folding lost {lost} relevant entr{'y' if lost == 1 else 'ies'} that the flat answer returned."
    return "Folding lost no relevant entry of the flat answer (0 lost)."


@dataclass(frozen=True)
class ReplayReport:
    """The replay's result: parameters and seed, the judge, every query's raw outcome, the
    headline metrics (folding on vs off), the extra arms, and the breakdowns by edge source and
    relation."""

    params: dict
    judge: str
    queries: list[dict]
    headline: dict
    arms: list[dict]
    by_source: list[dict]
    by_relation: list[dict]

    @property
    def lost(self) -> int:
        """Relevant flat entries the folded answer lost (must be 0)."""
        return int(self.headline.get("lost", 0))

    def to_dict(self) -> dict:
        """Everything, JSON-ready."""
        return _json_ready({"report": "replay", "warning": lost_warning(self.lost) if self.lost else None,
                            **asdict(self)})

    def to_json(self, *, indent: int | None = 1) -> str:
        """The report as JSON text (stable key order)."""
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, ensure_ascii=False)

    def to_frame(self) -> pl.DataFrame:
        """One row per query: connected, pointers, relevant flat / folded, gained, lost."""
        cols = {"id": pl.String, "query": pl.String, "connected": pl.Boolean, "pointers": pl.Int64,
                "relevant_flat": pl.Int64, "relevant_fold": pl.Int64, "gained": pl.Int64, "lost": pl.Int64}
        rows = [{"id": q["id"], "query": q["query"], "connected": q["connected"], "pointers": len(q["pointers"]),
                 "relevant_flat": len(q["arms"]["flat"]["relevant"]),
                 "relevant_fold": len(q["arms"]["fold"]["relevant"]),
                 "gained": len(q["arms"]["fold"]["gained"]), "lost": len(q["arms"]["fold"]["lost"])}
                for q in self.queries]
        return pl.DataFrame(rows, schema=cols)

    def _repr_markdown_(self) -> str:
        """A notebook shows the report as its markdown tables."""
        return self.to_markdown()

    def to_markdown(self) -> str:
        """Headline table, arms, breakdowns; the lost-entries line first, loud when not zero."""
        h, p = self.headline, self.params
        lines = [lost_warning(self.lost), "", "# Folding replay: folding on vs off", ""]
        lines.append(f"Judge: **{self.judge}** · queries {h['queries']} · bank `{p.get('bank', '')}` · embedder "
                     f"{p.get('embedder')} · seed {p.get('seed')} · k {p.get('k')} · pool {p.get('pool')}")
        lines.append("")
        rows = [
            ["queries carrying a pointer", _pct(h["pointer_share"])],
            ["queries that gained >= 1 judged-relevant entry", _pct(h["gained_share"])],
            ["average gain (relevant entries per query)", _mean(h["gain"])],
            [f"… on queries with connected candidates ({h['gain_connected']['n']})", _mean(h["gain_connected"])],
            [f"… on sparse queries ({h['gain_sparse']['n']})", _mean(h["gain_sparse"])],
            ["relevant flat entries lost (must be 0)", h["lost"]],
            ["pointer precision (judged relevant)", _pct(h["pointer_precision"])],
            ["note coverage (pointers with a note)", _pct(h["note_coverage"])],
        ]
        lines += _table(["metric", "value [95 % CI]"], rows)
        lines += ["", "## Arms", ""]
        lines += _table(["arm", "relevant returned / query", "gain vs flat / query", "queries gaining",
                         "relevant flat entries lost", "entries shown / query"],
                        [[a["label"], _mean(a["relevant"]), _mean(a["gain"]), _pct(a["gained_share"]), a["lost"],
                          _mean(a["shown"], 1)] for a in self.arms])
        breakdowns = (("By edge source", "source", self.by_source), ("By relation", "relation", self.by_relation))
        for title, key, rows_ in breakdowns:
            lines += ["", f"## {title}", ""]
            if not rows_:
                lines.append("No pointers.")
                continue
            lines += _table([key, "pointers", "pointer precision", "note coverage", "queries carrying",
                             "relevant entries gained"],
                            [[r[key], r["pointers"], _pct(r["precision"]), _pct(r["note_coverage"]), r["queries"],
                              r["gained"]] for r in rows_])
        lines += ["", "Proportions: Wilson 95 % intervals; means: seeded bootstrap 95 % intervals. A query is "
                      "'connected' when its pool has at least one trusted edge among its members."]
        return "\n".join(lines) + "\n"
