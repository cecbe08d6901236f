"""The scheduled jobs that keep a bank healthy, as library functions and one runner for the
``jobs/*.py`` entry points and the ``kb backfill | connect | decay`` commands.

- ``backfill(bank)``: citations in prose and dedup metadata become trusted edges.
- ``connect(bank)``: the write-time linker over every entry it has not seen (or all with
  ``rebuild``), committed in chunks, each with its entries' ``linked_at``, so a killed run loses
  nothing and a rerun finishes the work without doubling it.
- ``decay(bank)``: automatic, feedback and review links fade (w * 0.5^(days since seen / 180));
  those under 0.1 and those pointing at entries that no longer exist are pruned.

The entry point of ``jobs/*.py`` (``main``, which fans several banks out) is in :mod:`kbtools.ops.fleet`.

One run per bank and job at a time: a second run gets :class:`JobRunning` (exit status 3).

Exit status of the runner: 0 done (or nothing to do), 1 an error kbtools explains, 2 a usage error,
3 the job is already running on a bank (or the bank is locked by a writer past the timeout).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Callable, Sequence

from kbtools.errors import BankLocked, KbError
from kbtools.progress import Progress

if TYPE_CHECKING:  # the store (polars, numpy) loads when a job runs, not when its flags are read
    from kbtools.store.bank import Bank

__all__ = ["JOB_HELP", "JobRunning", "progress_reporter", "job_lock", "backfill", "connect", "decay", "run_job", "JOBS", "add_job_arguments", "job_options", "format_reports"]


class JobRunning(BankLocked):
    """A job is already running on this bank."""

    def __init__(self, path, job: str, holder: str):
        KbError.__init__(self, f"kb {job} is already running on {path} ({holder}); this run did nothing")
        self.path, self.holder = str(path), holder


def job_lock(bank: Bank, job: str):
    """Hold the bank's lock for ``job`` (not the writers' lock: writes still go through), or raise
    :class:`JobRunning` at once naming the holder."""
    from kbtools.store.bank import flock_file

    return flock_file(bank.path / f".job-{job}.lock", timeout=0, actor=f"kb {job}",
                      busy=lambda holder: JobRunning(bank.path, job, holder))


def backfill(bank: Bank, *, dry_run: bool = False, actor: str = "backfill", progress: Callable | None = None) -> dict:
    """Write the citation and metadata edges the bank lacks (none on a second run)."""
    from kbtools.ops.citations import plan_backfill
    from kbtools.ops.writes import edit_edges

    plan = plan_backfill(bank.entries, bank.edges, patterns=bank.settings.get("citations") or ())
    report = dict(plan.report)
    if plan.add.height and not dry_run:
        edit_edges(bank, add=plan.add, actor=actor, reason="backfill: citations and dedup metadata as edges")
    report["written"] = 0 if dry_run else plan.add.height
    report["dry_run"] = dry_run
    if dry_run:
        report["plan"] = plan.add.select("src", "dst", "type", "source", "note").head(50).to_dicts()
    return report


def connect(bank: Bank, *, rebuild: bool = False, limit: int | None = None, dry_run: bool = False,
            chunk: int | None = None, actor: str = "connect", progress: Progress = False) -> dict:
    """Link every entry the linker has not seen (``linked_at`` empty), or all with ``rebuild``,
    at most ``limit``; see :mod:`kbtools.ops.maintenance`. ``progress=True``: a ``tqdm.auto`` bar."""
    from kbtools.ops.maintenance import connect_bank

    return connect_bank(bank, rebuild=rebuild, limit=limit, dry_run=dry_run, chunk=chunk, actor=actor, progress=progress)


def decay(bank: Bank, *, dry_run: bool = False, now=None, actor: str = "decay", progress: Callable | None = None) -> dict:
    """Fade the fading links and prune those under 0.1 or pointing at missing entries."""
    from kbtools.ops.maintenance import decay_bank

    return decay_bank(bank, dry_run=dry_run, now=now, actor=actor)


JOBS: dict[str, Callable] = {"backfill": backfill, "connect": connect, "decay": decay}

#: What each job does, for --help.
JOB_HELP = {
    "backfill": "Entries that cite another entry by id in prose (8 hex characters, or a unique prefix of at\n"
                "least 7) get `cites` edges whose note is the citing sentence; dedup metadata (split_from,\n"
                "replaces, supersedes, recovered_from) becomes typed edges. A second run writes nothing.",
    "connect": "Run the write-time linker over every entry it has not seen (empty linked_at), or all with\n"
               "--rebuild, at most --limit. Commits in about ten chunks (at least 2,000 entries each) with each\n"
               "entry's linked_at, so a killed run loses one chunk at most and a rerun finishes the work.\n"
               "Reports entries, links made and dropped.",
    "decay": "Automatic, feedback and review links fade (w * 0.5^(days since seen / 180)); those under 0.1\n"
             "and those pointing at deleted entries are pruned. Trusted links never fade.",
}



def progress_reporter(label: str) -> Callable:
    """A ``progress(done, total)`` callback: a tqdm bar on a terminal, timestamped log lines on
    stderr under a scheduler (every quarter). A call with another total starts a next stage (a
    search, then the judging of what it found): a new bar, its own quarters."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        state: dict = {}

        def bar(done, total):
            if state.get("total") != total:
                if "bar" in state:
                    state["bar"].close()
                state["bar"], state["total"] = tqdm(total=total, desc=label, unit="entry", leave=False), total
            state["bar"].n = done
            state["bar"].refresh()
            if done >= total:
                state["bar"].close()

        return bar
    mark = {"next": 0.0, "total": None}

    def log(done, total):
        if total != mark["total"]:
            mark.update(next=0.0, total=total)
        if total and done / total >= mark["next"]:
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {label}: {done}/{total}", file=sys.stderr, flush=True)
            mark["next"] += 0.25

    return log


def run_job(job: str, banks: Sequence[str], *, options: dict | None = None) -> tuple[list[dict], int]:
    """Run ``job`` on each bank under its job lock; returns (one report per bank, exit status)."""
    from kbtools.store.bank import open_bank

    fn = JOBS[job]
    reports, status = [], 0
    for path in banks:
        started = time.perf_counter()
        try:
            bank = open_bank(path)
            with job_lock(bank, job):
                report = fn(bank, progress=progress_reporter(f"{job} {path}"), **(options or {}))
            report = {"bank": str(path), "job": job, "status": "ok", **report}
        except BankLocked as err:  # JobRunning is one
            report, status = {"bank": str(path), "job": job, "status": "running", "error": str(err)}, max(status, 3)
        except KbError as err:
            report, status = {"bank": str(path), "job": job, "status": "error", "error": str(err)}, max(status, 1) if status != 3 else 3
        report["duration_s"] = round(time.perf_counter() - started, 3)
        reports.append(report)
    return reports, status


def _text(report: dict) -> str:
    if report["status"] != "ok":
        return f"{report['job']} {report['bank']}: {report['status'].upper()}: {report.get('error')}"
    skip = {"bank", "job", "status", "plan", "by_type"}
    bits = ", ".join(f"{k} {v}" for k, v in report.items() if k not in skip and not isinstance(v, (list, dict)))
    extra = ""
    if report.get("by_type"):
        extra = "\n  by type: " + ", ".join(f"{k} {v}" for k, v in report["by_type"].items())
    if report.get("plan"):
        extra += "\n  plan (first rows):\n" + "\n".join(f"    {json.dumps(r)}" for r in report["plan"][:20])
    return f"{report['job']} {report['bank']}: {bits}{extra}"


def add_job_arguments(p: argparse.ArgumentParser, job: str, *, positional: bool) -> None:
    """The flags every job takes (and the job's own)."""
    if positional:
        p.add_argument("path", nargs="*", help="bank folder(s)")
    p.add_argument("--bank", action="append", default=[],
                   help="a bank folder or a glob of them, quoted: --bank 'banks/*' (repeatable); several banks run "
                        "in parallel on a local process pool, or on dask with --scheduler")
    p.add_argument("--scheduler", help="run the banks on dask.distributed: local:N (a local cluster of N worker "
                                       "processes on 127.0.0.1) or tcp://HOST:PORT (an existing scheduler); "
                                       "needs the dask extra")
    p.add_argument("--workers", type=int, help="processes of the local pool when several banks run without --scheduler "
                                               "(default: up to 4, one per core)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    if job == "connect":
        p.add_argument("--rebuild", action="store_true", help="re-derive the automatic links of every entry")
        p.add_argument("--limit", type=int, help="link at most this many entries")
        p.add_argument("--chunk", type=_positive_int, default=None,
                       help="entries per transaction (default: a tenth of the entries to link, at least 2,000): a "
                            "killed run loses at most one chunk's work; each commit re-reads the bank's edges, so "
                            "smaller chunks cost more (the links made are the same)")


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def job_options(job: str, args) -> dict:
    """Keyword arguments for the job function from parsed flags."""
    opts = {"dry_run": args.dry_run}
    if job == "connect":
        opts.update(rebuild=args.rebuild, limit=args.limit, chunk=args.chunk)
    return opts


def format_reports(reports: list[dict]) -> str:
    """Human-readable lines for job reports."""
    return "\n".join(_text(r) for r in reports)
