"""``kb judge|health``: the duplicate judge as an edge source, and the bank's health report."""

from __future__ import annotations

from pathlib import Path

from kbtools.cli.base import bank_arg, command, progress as _progress, register_args

__all__: list[str] = []


@command("judge", "judge duplicate candidates: supersedes / split_from edges or merges, with the verdict as the note")
def _judge(args):
    """Propose duplicate pairs (lexical similarity, and vectors when the bank is embedded), each read
    as a person reads it: the values both pin down (numbers with units, times, dates, versions,
    identifiers), the content words once framing ("Heads up:", "FYI", "as we found again") is
    removed, and whether the newer says it changes the older ("Correction:", "now", "instead of").
    Pairs that say the same fact come first; two texts that differ in a value are never merged.
    The rule-based judge decides each (merge = duplicate, supersede = correction, split, distinct)
    and commits the verdicts as one audited transaction, actor and source "judge": "B supersedes
    A" (newer over older; "A supersedes B" where the older replaces the newer), "B split_from A", or a merge of the newer into the older (only at
    confidence >= --merge-confidence; below it a supersedes edge, so nothing is deleted; a
    duplicate whose fuller side adds context stays below the default 0.9). Every edge carries the
    verdict as its note (a correction's names the change: "changes 30 s to 60 s"). Prints the
    verdicts, what was written and note coverage by source before and after.

    --dry-run judges and reports but writes nothing. --limit N judges the first N pairs (same-fact
    pairs first, then the most similar). Progress goes to stderr (a bar on a terminal)."""
    from kbtools.ops.judging import judge_bank
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path, readonly=args.dry_run)
    report = judge_bank(bank, threshold=args.threshold, limit=args.limit, dry_run=args.dry_run,
                        merge_confidence=args.merge_confidence, progress=_progress("judge"))
    return report.to_dict(), report.to_text()


register_args("judge", lambda p: (
    bank_arg(p),
    p.add_argument("--dry-run", action="store_true", help="judge and report; write nothing"),
    p.add_argument("--limit", type=int, help="judge at most N pairs (same-fact pairs first, then the most similar)"),
    p.add_argument("--threshold", type=float, default=0.5, help="similarity from which a pair is a candidate (default 0.5)"),
    p.add_argument("--merge-confidence", type=float, default=0.9,
                   help="a merge verdict deletes the newer entry only at this confidence or above (default 0.9)"),
))


@command("health", "what is wrong with a bank: each finding with a count, examples and the command that fixes it")
def _health(args):
    """Note coverage by edge source, note-less sibling groups, notes that restate their target, hubs
    (a document's parts aside) and isolated entries, entries one hop from frequently returned ones
    that are never returned (from the usage log), automatic links near the prune threshold, holes in
    declared or inferred flows, duplicate candidates and storage (segments, dead rows, vectors,
    caches). Reads only.
    --html FILE also writes the report as an HTML page. Progress of the search for duplicate
    candidates, then of their judging, goes to stderr."""
    from kbtools.evaluate.health import health
    from kbtools.store.bank import open_bank

    report = health(open_bank(args.path, readonly=True), progress=_progress("health: duplicate candidates"))
    if args.html:
        Path(args.html).write_text("<!doctype html><meta charset='utf-8'><title>kb health</title>"
                                   + report._repr_html_(), encoding="utf-8")
    return report.to_dict(), report.to_text()


register_args("health", lambda p: (
    bank_arg(p),
    p.add_argument("--html", help="also write the report to this HTML file"),
))
