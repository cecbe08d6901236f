"""A bank's health at a glance: what is wrong with it, each finding with a count, examples and the
command that fixes it. Read-only (``kb health PATH``, ``kb.health(bank)``).

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> report = health(create_bank(pathlib.Path(tempfile.mkdtemp()) / "b"))
>>> report.finding("duplicate_candidates").count
0
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import polars as pl

from kbtools.graph.hubs import hub_threshold
from kbtools.model.fading import MIN_WEIGHT, faded_expr
from kbtools.judging.judge import DUPLICATE_THRESHOLD
from kbtools.model.answer_html import MUTED_TEXT, html_table, jp
from kbtools.model.vocab import FADING_SOURCES, TRUSTED_SOURCES
from kbtools.ops.analytics import process_flows, workflow_holes
from kbtools.ops.judging import judged_duplicates, note_coverage
from kbtools.progress import Progress
from kbtools.store.bank import Bank, utcnow
from kbtools.store.storage import storage_report

__all__ = ["health", "Health", "Finding", "SIBLING_TYPES"]

#: Dedup types whose note-less siblings are the pointer noise of seed 000.
SIBLING_TYPES = ("split_from", "supersedes", "derived_from", "part_of")
#: From this many rows, a table without its base segment's sidecar is worth a ``kb compact``.
SIDECARS_FROM = 10_000
#: The source of the edges that join a document's pieces (``kb ingest``): a piece is part of its
#: document by construction, so such an edge needs no note and its siblings are no duplicates.
STRUCTURE = "structure"
_BAD = jp("error-color1", "#d32f2f")
_WARN = jp("warn-color1", "#f57c00")
_GOOD = jp("success-color1", "#388e3c")


@dataclass(frozen=True)
class Finding:
    """One thing to look at: a ``name``, a one-line ``title``, how many (``count``), a few
    ``examples`` (dicts), the command that fixes it (``fix``), ``severity`` (problem, warning,
    info) and ``detail`` (numbers behind it)."""

    name: str
    title: str
    count: int
    examples: list = field(default_factory=list)
    fix: str = ""
    severity: str = "warning"
    detail: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready."""
        return {"name": self.name, "title": self.title, "count": self.count, "severity": self.severity,
                "fix": self.fix, "examples": self.examples, "detail": self.detail}


@dataclass(frozen=True)
class Health:
    """The findings of :func:`health` for one bank; a notebook shows them as a table."""

    path: str
    version: int
    entries: int
    findings: tuple[Finding, ...]

    def finding(self, name: str) -> Finding:
        """The finding called ``name``."""
        for f in self.findings:
            if f.name == name:
                return f
        raise KeyError(f"{name!r}: findings are {', '.join(f.name for f in self.findings)}")

    def to_dict(self) -> dict:
        """JSON-ready: the bank and every finding."""
        return {"path": self.path, "version": self.version, "entries": self.entries,
                "findings": [f.to_dict() for f in self.findings]}

    def to_text(self) -> str:
        """A terminal report: one block per finding."""
        lines = [f"health of {self.path} (version {self.version}, {self.entries} entries)"]
        for f in self.findings:
            mark = {"problem": "✗", "warning": "!", "info": "·"}.get(f.severity, "·") if f.count else "✓"
            lines.append(f"{mark} {f.title}: {f.count}")
            for ex in f.examples[:3]:
                lines.append("    " + ", ".join(f"{k}={_short(v)}" for k, v in ex.items()))
            if f.count and f.fix:
                lines.append(f"    fix: {f.fix}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = (f"<p><b>Health</b> <code>{esc(self.path)}</code> <small style='color:{MUTED_TEXT}'>version "
                f"{self.version} · {self.entries:,} entries</small></p>")
        rows = []
        for f in self.findings:
            color = _GOOD if not f.count else (_BAD if f.severity == "problem" else _WARN if f.severity == "warning" else MUTED_TEXT)
            ex = "; ".join(", ".join(f"{k}={_short(v, 30)}" for k, v in e.items()) for e in f.examples[:2])
            rows.append([f.title, f"{f.count:,}", _short(ex, 160), f.fix if f.count else "", color])
        body = html_table(["finding", "count", "examples", "fix"], [r[:4] for r in rows])
        for r in rows:  # colour each count by its severity (cells are escaped, so colour after)
            body = body.replace(f"<td>{html.escape(r[1])}</td>", f"<td style='color:{r[4]}'><b>{html.escape(r[1])}</b></td>", 1)
        return "<div class='kb-health'>" + head + body + "</div>"


def _short(value, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def health(bank: Bank, *, duplicate_threshold: float = DUPLICATE_THRESHOLD, examples: int = 5,
           progress: Progress = False, sidecars_from: int = SIDECARS_FROM) -> Health:
    """What is wrong with ``bank``: note coverage by edge source, note-less sibling groups, notes that
    restate their target, hubs (a document's parts aside) and isolated entries, the hidden-hop audit
    (entries one hop from frequently returned ones that are never returned), automatic links near the prune threshold,
    undeclared flows and their holes, duplicate candidates, and storage. Each finding has a count,
    examples and the command that fixes it. Reads only. ``progress`` reports the judging of the
    duplicate candidates, the long part on a big bank (``True``: a tqdm bar; or a callback).
    ``sidecars_from``: the rows from which a table whose base segment has no sidecar is storage to
    tidy (a fresh process's first query then reads that table whole; ``kb compact`` writes it).
    """
    entries, edges = bank.entries, bank.edges
    n = examples
    findings = [
        _coverage(edges, n), _siblings(edges, n), _leaky(bank, n), *_structure(bank, entries, edges, n),
        _hidden_hop(entries, edges, n), _near_prune(edges, n), _flows(bank, n),
        _duplicates(bank, duplicate_threshold, n, progress), _storage(bank, sidecars_from),
    ]
    return Health(str(bank.path), bank.version, entries.height, tuple(findings))


def _coverage(edges: pl.DataFrame, n: int) -> Finding:
    cov = note_coverage(edges)
    trusted = edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES - {STRUCTURE})))
    missing = int((trusted["note"].fill_null("").str.strip_chars() == "").sum()) if trusted.height else 0
    ex = [{"source": s, "edges": c["edges"], "with_note": c["with_note"], "share": c["share"]} for s, c in cov.items()]
    return Finding("note_coverage", "trusted edges without a note, a document's parts aside (note coverage by source in "
                   "examples)", missing,
                   sorted(ex, key=lambda r: r["share"])[:n] if missing else ex[:n],
                   "kb judge PATH (its edges carry the verdict as note); kb.link(bank, src, dst, type, note=..., actor=...)",
                   "warning", {"by_source": cov})


def _siblings(edges: pl.DataFrame, n: int) -> Finding:
    noteless = edges.filter(pl.col("type").is_in(SIBLING_TYPES) & (pl.col("note").fill_null("").str.strip_chars() == "")
                            & (pl.col("source") != STRUCTURE))
    groups = (noteless.group_by("dst", "type").agg(pl.col("src").sort().alias("siblings"), pl.len().alias("size"))
              .filter(pl.col("size") >= 2).sort(["size", "dst"], descending=[True, False])) if noteless.height else noteless
    ex = [{"parent": d, "type": t, "siblings": s} for d, t, s, _ in groups.head(n).iter_rows()] if groups.height else []
    return Finding("noteless_siblings", "note-less sibling groups (dedup edges to one parent, no note)", groups.height,
                   ex, "kb judge PATH; give each sibling a note that says how it differs (kb.link ... note=)", "warning",
                   {"noteless_dedup_edges": noteless.height})


def _leaky(bank: Bank, n: int) -> Finding:
    from kbtools.evaluate.leak import leaky_notes

    leaky = leaky_notes(bank)
    ex = leaky.select("src", "type", "dst", "reason").head(n).to_dicts()
    return Finding("leaky_notes", "notes that restate their target (a note says how, never what)", leaky.height, ex,
                   "rewrite the note: kb.unlink(bank, src, dst, type, reason=...) then kb.link(..., note='how it pertains')",
                   "problem")


def _hubs(entries: pl.DataFrame, edges: pl.DataFrame) -> pl.DataFrame:
    """The hubs by the hub rule (:func:`~kbtools.graph.hubs.hub_threshold`) over the trusted edges a
    reader follows: a document's parts joined by ``kb ingest`` (source ``structure``) make its first
    section a hub of its own sections, not a catch-all, so they are left out (``id``, ``degree``)."""
    ids = entries["id"].implode()
    counted = edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES - {"structure"}))
                           & pl.col("src").is_in(ids) & pl.col("dst").is_in(ids))
    ends = pl.concat([counted["src"], counted["dst"]]).value_counts(name="degree")
    degree = entries.select("id").join(ends.rename({ends.columns[0]: "id"}), on="id", how="left").fill_null(0)
    if degree.height == 0:
        return pl.DataFrame(schema={"id": pl.String, "degree": pl.Int64})
    least = hub_threshold(degree["degree"].to_numpy())
    return degree.filter(pl.col("degree") >= least).with_columns(pl.col("degree").cast(pl.Int64)).sort(
        ["degree", "id"], descending=[True, False])


def _structure(bank: Bank, entries: pl.DataFrame, edges: pl.DataFrame, n: int) -> list[Finding]:
    cent = _hubs(entries, edges) if edges.height else pl.DataFrame(schema={"id": pl.String, "degree": pl.Int64})
    titles = dict(entries.select("id", "title").iter_rows())
    hubs = Finding("hubs", "hubs (degree at or above max(4, mean + 2 sd), a document's parts aside)", cent.height,
                   [{"id": i, "degree": d, "title": titles.get(i)} for i, d in cent.select("id", "degree").head(n).iter_rows()],
                   "kb hubs PATH; kb communities PATH (check a hub is not a catch-all)", "info")
    touched = pl.concat([edges["src"], edges["dst"]]).unique() if edges.height else pl.Series([], dtype=pl.String)
    isolated = entries.filter(~pl.col("id").is_in(touched.implode()))
    iso = Finding("isolated", "isolated entries (no edge at all)", isolated.height,
                  isolated.select("id", "title").head(n).to_dicts(), "kb backfill PATH && kb connect PATH", "info",
                  {"share": round(isolated.height / entries.height, 4) if entries.height else 0.0})
    return [hubs, iso]


def _hidden_hop(entries: pl.DataFrame, edges: pl.DataFrame, n: int) -> Finding:
    used = entries.filter(pl.col("usage_count") > 0)
    if used.height == 0 or edges.height == 0:
        return Finding("hidden_hop", "never returned, one hop from frequently returned entries (usage log)", 0, [],
                       "kb eval replay PATH; give the edge a note that says why to follow it", "info",
                       {"returned_entries": used.height})
    floor = max(2.0, float(used["usage_count"].quantile(0.9)))
    hot = used.filter(pl.col("usage_count") >= floor).select("id", "usage_count")
    trusted = edges.filter(pl.col("source").is_in(sorted(TRUSTED_SOURCES)))
    pairs = pl.concat([trusted.select(pl.col("src").alias("hot"), pl.col("dst").alias("id"), "type", "note"),
                       trusted.select(pl.col("dst").alias("hot"), pl.col("src").alias("id"), "type", "note")])
    never = entries.filter(pl.col("usage_count") == 0).select("id", "title")
    hidden = (pairs.join(hot.rename({"id": "hot"}), on="hot").join(never, on="id")
              .sort(["usage_count", "id"], descending=[True, False]))
    distinct = hidden.unique("id", keep="first", maintain_order=True)
    ex = [{"id": r["id"], "title": r["title"], "next_to": r["hot"], "returned": r["usage_count"], "type": r["type"],
           "has_note": bool((r["note"] or "").strip())} for r in distinct.head(n).iter_rows(named=True)]
    return Finding("hidden_hop", "never returned, one hop from frequently returned entries (usage log)", distinct.height,
                   ex, "kb eval replay PATH; give the edge a note that says why to follow it (kb.link ... note=)", "warning",
                   {"frequent_floor": floor, "frequent_entries": hot.height})


def _near_prune(edges: pl.DataFrame, n: int) -> Finding:
    fading = edges.filter(pl.col("source").is_in(sorted(FADING_SOURCES)))
    if fading.height == 0:
        near = fading.with_columns(pl.lit(None, pl.Float64).alias("faded"))
    else:
        near = fading.with_columns(faded_expr(utcnow())).filter(
            (pl.col("faded") >= MIN_WEIGHT) & (pl.col("faded") < 2 * MIN_WEIGHT)).sort("faded")
    ex = [{"src": s, "dst": d, "type": t, "faded": round(w, 3)} for s, d, t, w in near.select("src", "dst", "type", "faded").head(n).iter_rows()]
    return Finding("near_prune", f"automatic links near the prune threshold ({MIN_WEIGHT} to {2 * MIN_WEIGHT})", near.height, ex,
                   "kb decay PATH --dry-run (what would go); kb.ops.reinforce / kb.ops.feedback to keep a useful one", "info",
                   {"fading_links": fading.height})


def _flows(bank: Bank, n: int) -> Finding:
    flows = process_flows(bank)
    holes = workflow_holes(bank)
    inferred = flows.filter(~pl.col("declared")) if flows.height else flows
    ex = holes.select("id", "flow", "hole", "severity", "declared").head(n).to_dicts() if holes.height else []
    return Finding("flows", "holes in process flows (declared or inferred)", holes.height, ex,
                   "kb holes PATH --flows (each hole with the question to ask its owner)", "warning",
                   {"flows": flows.height, "inferred_flows": inferred.height,
                    "inferred_flow_names": inferred["flow"].to_list()[:n] if inferred.height else []})


def _duplicates(bank: Bank, threshold: float, n: int, progress: Progress = False) -> Finding:
    # the judge's own candidates and verdicts (one function): a pair listed here is one kb judge folds
    judged = judged_duplicates(bank, threshold=threshold, progress=progress)
    folds = judged.filter(pl.col("action") != "distinct")
    ex = folds.select("a", "b", "action", "note", pl.col("score").round(3), "title_a", "title_b").head(n).to_dicts()
    verdicts = dict(folds.group_by("action").len().sort("action").iter_rows()) if folds.height else {}
    return Finding("duplicate_candidates", f"duplicate candidates the judge folds (similarity >= {threshold}, no edge saying how they relate: "
                   "duplicates, corrections, parts)", folds.height, ex,
                   "kb judge PATH --dry-run, then kb judge PATH", "warning",
                   {"candidates": judged.height, "verdicts": verdicts,
                    "differing_values": int(judged["differ"].is_not_null().sum()) if judged.height else 0})


def _storage(bank: Bank, sidecars_from: int = SIDECARS_FROM) -> Finding:
    s = storage_report(bank)
    extra = sum(max(0, t["segments"] - 1) for t in s["tables"].values()) + max(0, s["vector_segments"] - 1)
    unread = [t for t, held in s["sidecars"].items() if not held and s["tables"][t]["rows_stored"] >= sidecars_from]
    count = s["dead_rows"] + extra + s["entries_without_vectors"] * bool(s["embedder"]) + len(unread)
    ex = [{"table": t, **v} for t, v in s["tables"].items() if v["segments"] > 1 or v["dead_rows"]]
    ex += [{"table": t, "sidecar": "missing: a fresh process's first query reads this table whole"} for t in unread]
    if s["embedder"] and s["entries_without_vectors"]:
        ex.append({"table": "vectors", "entries_without_vectors": s["entries_without_vectors"]})
    fix = "kb compact PATH" + ("; kb embed PATH" if s["embedder"] and s["entries_without_vectors"] else "")
    return Finding("storage", "storage to tidy (dead rows + extra segments + unembedded entries + missing sidecars)",
                   count, ex, fix, "info", s)
