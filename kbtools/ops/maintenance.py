"""The write-time linker on a bank: connect (the job), linking new entries as they are reported,
explain, decay, reinforcement and feedback. Thin: it gathers the bank's frames and vectors, calls
the pure planners in ``kbtools.linker`` and ``kbtools.model.fading``, and applies their plans as audited
transactions.

>>> import kbtools as kb  # doctest: +SKIP
>>> kb.explain(bank, "a1b2c3d4", "b2c3d4e5").signals  # doctest: +SKIP
{'share': 0.156, 'sem': 1.0, 'bridge': 0.0, 'time': 1.0, 'cue': 1.0}
"""

from __future__ import annotations

import os
import time
from typing import Sequence

import numpy as np
import polars as pl

from kbtools.model.fading import plan_decay, plan_reinforce
from kbtools.errors import EdgeRuleError, ValidationError
from kbtools.linker import LinkerSettings, LinkScore, plan_connect
from kbtools.linker.explanation import explain_pair
from kbtools.store.bank import Bank, utcnow
from kbtools.ops.link_context import (faiss_threads, ignored_settings, linker_settings, linker_vectors, neighbour_index,
                                      settings_for, term_stats)
from kbtools.ops.writes import edit_edges
from kbtools.progress import Progress, progress_callback
from kbtools.store.vectors import embedder_name

__all__ = [
    "linker_settings",
    "connect_bank",
    "explain",
    "decay_bank",
    "reinforce",
    "feedback",
    "configure_linker",
]


#: The fewest entries a ``connect_bank`` transaction commits by default.
CONNECT_CHUNK = 2000


def _apply(bank: Bank, plan, *, actor: str, reason: str) -> dict:
    if plan.add.height == 0 and plan.remove.height == 0 and plan.entry_updates.height == 0:
        return {"added": 0, "removed": 0}
    updates = plan.entry_updates
    return edit_edges(bank, add=plan.add, remove=plan.remove.select("src", "dst", "type"), entry_updates=updates,
                      actor=actor, reason=reason, action="edge.link")


def connect_bank(bank: Bank, *, rebuild: bool = False, limit: int | None = None, dry_run: bool = False,
                 chunk: int | None = None, actor: str = "connect", progress: Progress = False) -> dict:
    """Link every entry the linker has not seen (or all with ``rebuild``), at most ``limit``, in
    created_at order; each chunk is one transaction that also sets its entries' ``linked_at``, so
    a killed run loses only the chunk it was in and a rerun continues. ``chunk`` (entries per
    transaction) defaults to the larger of :data:`CONNECT_CHUNK` and a tenth of the entries to
    link: every commit re-reads the bank's edges, so a job commits about ten times whatever the
    bank's size (the links do not depend on it). Returns entries, links made, links dropped,
    links per entry and duration. ``progress=True`` shows a ``tqdm.auto`` bar per chunk."""
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise ValidationError("chunk", chunk, "commit at least one entry per transaction (a positive integer)")
    progress = progress_callback(progress, "connect")
    started = time.perf_counter()
    settings = linker_settings(bank)
    entries = bank.entries
    order = entries.sort("created_at", "id")
    todo = order if rebuild else order.filter(pl.col("linked_at").is_null())
    todo = todo.filter(~pl.col("kind").is_in(["step", "artifact", "role"]))
    ids = todo["id"].to_list()[: limit if limit is not None else None]
    if chunk is None:
        chunk = max(CONNECT_CHUNK, -(-len(ids) // 10))
    made = dropped = 0
    plans = []
    faiss_threads(max(1, min(8, os.cpu_count() or 1)))  # a chunk's neighbour searches run in parallel
    try:
        made, dropped = _connect_chunks(bank, ids, chunk, settings, dry_run, actor, plans, progress)
    finally:
        faiss_threads(1)
    auto = bank.edges.filter(pl.col("source") == "auto")
    degree = pl.concat([auto["src"], auto["dst"]]).value_counts() if auto.height else None
    report = {
        "entries": len(ids), "links_made": made, "links_dropped": dropped, "dry_run": dry_run,
        "auto_links_in_bank": auto.height,
        "links_per_entry_mean": round(2 * auto.height / max(entries.height, 1), 3),
        "links_per_entry_max": int(degree["count"].max()) if degree is not None else 0,
        "seconds": round(time.perf_counter() - started, 3),
    }
    if dry_run and plans:
        report["plan"] = pl.concat(plans).head(50).to_dicts()
    return report


def _connect_chunks(bank, ids, chunk, settings, dry_run, actor, plans, progress) -> tuple[int, int]:
    """Plan and apply ``ids`` chunk by chunk (each chunk one transaction); (links made, dropped)."""
    made = dropped = 0
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        for attempt in range(2):  # a concurrent writer can invalidate a plan: plan again once
            vectors = linker_vectors(bank)
            plan = plan_connect(bank.entries, bank.edges, bank.triples, ids=part, vectors=vectors,
                                neighbors=neighbour_index(bank, vectors), stats=term_stats(bank, settings), settings=settings,
                                now=utcnow(), total=len(ids))
            if dry_run:
                break
            try:
                _apply(bank, plan, actor=actor, reason="connect: write-time linker")
                break
            except EdgeRuleError:
                if attempt:
                    raise
                bank.reload()
        made += plan.add.filter(pl.col("source") == "auto").height
        dropped += plan.remove.height
        if dry_run:
            plans.append(plan.add.select("src", "type", "dst", "weight", "evidence").head(50))
        if progress:
            progress(min(start + chunk, len(ids)), len(ids))
    return made, dropped


def explain(bank: Bank, a: str, b: str, *, cosine: float | None = None,
            settings: LinkerSettings | None = None) -> LinkScore:
    """Why two entries are (or are not) linked: score, linked, type, why, and the signals share,
    sem, bridge, time and cue, scored from scratch as if ``a`` were the new entry (seed 001,
    section 4). ``cosine`` overrides the pair's cosine (else the bank's vectors give it, or 0);
    ``settings`` overrides the linker's (e.g. ``LINKER_LEXICAL`` for a lexical embedder).

    >>> import kbtools as kb, tempfile, pathlib
    >>> bank = kb.create_bank(pathlib.Path(tempfile.mkdtemp()) / "b", settings={"auto_link": False})
    >>> p = kb.report_learning(bank, content="Line 3 keeps faulting with error E-217.", kind="event", session_id="s1", actor="x")
    >>> f = kb.report_learning(bank, content="Found it: the encoder cable on line 3 was loose.", kind="event", session_id="s1", actor="x")
    >>> kb.explain(bank, f, p, cosine=0.301).type
    'resolves'
    """
    bank.require_entries((a, b), where="explain")
    settings = settings or linker_settings(bank)
    if cosine is not None:
        value = float(cosine)
        return explain_pair(a, b, bank.entries, bank.edges, bank.triples, cosine=lambda ms, cs: np.full(len(ms), value),
                        stats=term_stats(bank, settings), settings=settings)
    return explain_pair(a, b, bank.entries, bank.edges, bank.triples, vectors=linker_vectors(bank),
                    stats=term_stats(bank, settings), settings=settings)


def decay_bank(bank: Bank, *, dry_run: bool = False, now=None, actor: str = "decay") -> dict:
    """Prune fading links whose faded weight is under 0.1 and links to missing entries; report the
    faded weights (fading is computed when links are read, so a rerun changes nothing more)."""
    settings = linker_settings(bank)
    now = now or utcnow()
    plan = plan_decay(bank.edges, bank.entries["id"], now=now, half_life_days=settings.half_life_days,
                      min_weight=settings.min_weight)
    report = dict(plan.report)
    report.update({"pruned": 0 if dry_run else plan.remove.height, "dry_run": dry_run})
    if plan.remove.height and not dry_run:
        edit_edges(bank, remove=plan.remove.select("src", "dst", "type"), actor=actor,
                   reason="decay: faded under the minimum weight or pointing at a deleted entry")
    if dry_run:
        report["plan"] = plan.remove.head(50).to_dicts()
    return report


def reinforce(bank: Bank, ids: Sequence[str], *, actor: str = "feedback") -> dict:
    """Hebbian reinforcement of the fading links among ``ids`` (entries used together successfully):
    w <- w + 0.2 (1 - w) from the faded weight, seen = now."""
    ids = list(ids)
    bank.require_entries(ids, where="reinforce")
    updated = plan_reinforce(bank.edges, ids, now=utcnow())
    if updated.height:
        edit_edges(bank, add=updated, actor=actor, reason="reinforced: used together successfully", replace=True,
                   action="edge.reinforce")
    return {"reinforced": updated.height}


def feedback(bank: Bank, fix_id: str, problem_ids: Sequence[str], *, actor: str = "feedback") -> dict:
    """A fix that worked: ``fix resolves problem`` links (weight 0.8, source feedback) to each
    problem; an automatic link between the pair gives way; a trusted one is left as it is."""
    problem_ids = [p for p in problem_ids if p != fix_id]
    if not problem_ids:
        raise ValidationError("problem_ids", problem_ids, "name at least one problem other than the fix")
    bank.require_entries((fix_id, *problem_ids), where="feedback")
    edges = bank.edges
    add, remove = [], []
    for p in problem_ids:
        pair = edges.filter(((pl.col("src") == fix_id) & (pl.col("dst") == p)) | ((pl.col("src") == p) & (pl.col("dst") == fix_id)))
        if pair.filter(pl.col("type") == "resolves").filter(pl.col("source") != "auto").height:
            continue
        remove += pair.filter(pl.col("source").is_in(["auto", "review"])).select("src", "dst", "type").to_dicts()
        add.append({"src": fix_id, "dst": p, "type": "resolves", "source": "feedback", "weight": 0.8, "note": None,
                    "evidence": {"why": "a fix that worked"}})
    if add:
        edit_edges(bank, add=add, remove=remove, actor=actor, reason="feedback: the fix worked")
    return {"links": len(add), "replaced": len(remove)}


def configure_linker(bank: Bank, values: dict | None = None, *, reset=(), dry_run: bool = False,
                     actor: str = "configure") -> dict:
    """The bank's linker settings, after storing ``values`` (``{field: value}``, checked by
    ``check_linker_settings``; text is read as the field's type) and dropping the stored ``reset``
    fields (back to the defaults for the bank's embedder) in one audited commit; nothing is written
    when nothing changes or with ``dry_run``. A commit also drops the stored settings the linker
    reads as absent (``ignored_settings``: an older kbtools' retired ones), which a ``reset`` may
    name. ``connect``, the write-time linker and ``kb.explain`` read them. Returns ``settings``
    (every field as the linker will use it), ``stored`` (the bank's own values), ``ignored`` (those
    of them read as absent) and ``changed`` (field: new value, None when reset).

    >>> import tempfile, pathlib, kbtools as kb
    >>> bank = kb.create_bank(pathlib.Path(tempfile.mkdtemp()) / "b")
    >>> out = configure_linker(bank, {"h": "0.6", "max_new": 4})
    >>> out["settings"]["h"], out["stored"], kb.open_bank(bank.path).settings["linker"]
    (0.6, {'h': 0.6, 'max_new': 4}, {'h': 0.6, 'max_new': 4})
    >>> configure_linker(bank, reset=["h"])["stored"]
    {'max_new': 4}
    """
    from dataclasses import asdict, fields

    from kbtools.linker.rules import RETIRED_SETTINGS, check_linker_settings
    from kbtools.model.plan import Plan

    changes = check_linker_settings(values or {})
    known = {f.name for f in fields(LinkerSettings)}
    reset = list(reset)
    for name in reset:
        if name not in known | RETIRED_SETTINGS:
            raise ValidationError("reset", name, f"is not a linker setting (one of {', '.join(sorted(known))})")
        if name in changes:
            raise ValidationError("reset", name, "is both set and reset")
    before = dict(bank.settings.get("linker") or {})
    dropped = set(reset) | (set(ignored_settings(before)) if changes or reset else set())
    stored = {k: v for k, v in before.items() if k not in dropped} | changes
    changed = {k: stored.get(k) for k in sorted(before.keys() | stored.keys()) if before.get(k) != stored.get(k)}
    if changed and not dry_run:
        bank.apply(Plan(settings={"linker": stored}), actor=actor,
                   reason="configure: linker settings " + ", ".join(f"{k}={v}" for k, v in changed.items()))
    return {"settings": asdict(settings_for(embedder_name(bank), stored)), "stored": stored,
            "ignored": ignored_settings(stored), "changed": changed, "dry_run": dry_run}
