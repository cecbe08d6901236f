"""Many banks at once: the scheduled jobs and per-bank analytics fanned out over worker processes,
on a local process pool or on ``dask.distributed`` (the optional extra ``dask``).

One task per bank per job. A bank's jobs run in the order given (``backfill`` before ``connect``
before ``decay``: the next is submitted when the previous finishes), different banks in parallel.
Each task opens its bank, holds that bank's own job lock (:func:`kbtools.ops.jobs.job_lock`) while
it works and returns a small report; a bank that fails (damaged files, locked by another run, a
worker that died) becomes a row with its status and error, and the others go on.

Where the work runs:

- ``client``: a ``distributed.Client`` or a ``concurrent.futures.Executor`` you already have
  (reused, never closed here; the same one serves :func:`run_jobs` and :func:`map_banks`);
- ``scheduler="local:N"``: a ``dask.distributed.LocalCluster`` of N single-threaded worker
  processes on 127.0.0.1, no dashboard, closed at the end;
- ``scheduler="tcp://HOST:PORT"``: an existing dask scheduler (start its workers with
  ``POLARS_MAX_THREADS=1 dask worker tcp://HOST:PORT --nthreads 1``);
- neither: a local process pool (``concurrent.futures``, spawned processes) of ``workers``.

Workers this module starts get ``POLARS_MAX_THREADS=1`` and ``OMP_NUM_THREADS=1`` in their
environment, and every task sets faiss to one thread: N banks on N cores, not N × cores threads.

>>> import tempfile, pathlib
>>> from kbtools.store.bank import create_bank
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> _ = create_bank(root / "a"), create_bank(root / "b")
>>> summary = run_jobs(sorted(expand_banks([str(root / "*")])), ["decay"], workers=1)  # doctest: +SKIP
>>> summary.select("job", "status").rows()  # doctest: +SKIP
[('decay', 'ok'), ('decay', 'ok')]
>>> [p.rsplit("/", 1)[1] for p in expand_banks([str(root / "*")])]
['a', 'b']
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import socket
import time
import traceback
from contextlib import contextmanager
from typing import Callable, Iterator, Mapping, Sequence

import polars as pl

from kbtools.errors import BankLocked, KbError
from kbtools.ops.jobs import JOB_HELP, JOBS, add_job_arguments, format_reports, job_lock, job_options, run_job
from kbtools.progress import Progress, progress_callback

__all__ = ["JOB_ORDER", "SUMMARY_SCHEMA", "WORKER_ENV", "expand_banks", "parse_scheduler", "executor",
           "run_jobs", "map_banks", "holes_many", "communities_many", "summary_status", "main"]

#: The jobs in the order a bank gets them.
JOB_ORDER: tuple[str, ...] = ("backfill", "connect", "decay")
#: One row per bank and job.
SUMMARY_SCHEMA: Mapping[str, pl.DataType] = {
    "bank": pl.String, "job": pl.String, "status": pl.String, "entries": pl.Int64, "links_made": pl.Int64,
    "links_dropped": pl.Int64, "seconds": pl.Float64, "error": pl.String, "worker": pl.String, "report": pl.String,
}
#: Environment of the worker processes this module starts.
WORKER_ENV: Mapping[str, str] = {"POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}


def expand_banks(patterns: Sequence[str]) -> list[str]:
    """Bank folders from paths and glob patterns (``banks/*``): a pattern keeps only the folders it
    matches (so ``<bank>.truth.json`` sidecars beside them are left out), in sorted order; a plain
    path is kept as given (a missing one is reported by the job); duplicates are dropped.

    >>> expand_banks(["/nonexistent/bank"])
    ['/nonexistent/bank']
    """
    out: list[str] = []
    for pattern in patterns:
        pattern = str(pattern)
        if glob.has_magic(pattern):
            found = sorted(p for p in glob.glob(pattern) if os.path.isdir(p))
            if not found:
                raise KbError(f"--bank {pattern!r}: the pattern matches no folder")
            out += found
        else:
            out.append(pattern)
    return list(dict.fromkeys(out))


def parse_scheduler(scheduler: str | None) -> tuple[str, object]:
    """``None`` -> ("pool", None); ``"local:N"`` -> ("local", N); ``"tcp://HOST:PORT"`` ->
    ("address", the address); anything else raises :class:`KbError`.

    >>> parse_scheduler("local:2"), parse_scheduler("tcp://10.0.0.5:8786")
    (('local', 2), ('address', 'tcp://10.0.0.5:8786'))
    """
    if scheduler is None:
        return "pool", None
    if scheduler.startswith("local:") and scheduler[6:].isdigit() and int(scheduler[6:]) >= 1:
        return "local", int(scheduler[6:])
    if scheduler.startswith(("tcp://", "tls://")) and ":" in scheduler.split("://", 1)[1]:
        return "address", scheduler
    raise KbError(f"scheduler {scheduler!r}: must be local:N (N >= 1 worker processes) or tcp://HOST:PORT")


@contextmanager
def _worker_env() -> Iterator[None]:
    """Put :data:`WORKER_ENV` in this process's environment while workers are spawned from it."""
    saved = {k: os.environ.get(k) for k in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def executor(*, client=None, scheduler: str | None = None, workers: int | None = None):
    """Where the tasks run (see the module's docstring); closes only what it started."""
    if client is not None:
        yield client
        return
    how, arg = parse_scheduler(scheduler)
    if how == "pool":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        n = workers or max(1, min(4, os.cpu_count() or 1))
        with _worker_env(), ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn")) as pool:
            yield pool
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise KbError(f"scheduler {scheduler!r} needs dask.distributed: pip install 'kbtools[dask]'") from None
    if how == "local":
        # in the environment before the spawn too: a spawned worker re-imports the parent's main
        # module (which may import polars) before the nanny's ``env`` applies
        with _worker_env(), LocalCluster(n_workers=arg, threads_per_worker=1, processes=True, host="127.0.0.1",
                                         dashboard_address=None, env=dict(WORKER_ENV)) as cluster, Client(cluster) as c:
            yield c
    else:
        try:
            c = Client(arg, timeout="10s")
        except OSError as err:
            raise KbError(f"scheduler {arg}: cannot reach it ({err})") from None
        with c:
            yield c


def _is_dask(pool) -> bool:
    return type(pool).__module__.startswith("distributed")


def _submit(pool, fn: Callable, *args):
    if _is_dask(pool):
        return pool.submit(fn, *args, pure=False)
    return pool.submit(fn, *args)


def _wait_any(pool, pending: set):
    if _is_dask(pool):
        from distributed import wait

        return wait(list(pending), return_when="FIRST_COMPLETED").done
    from concurrent.futures import FIRST_COMPLETED, wait

    return wait(pending, return_when=FIRST_COMPLETED).done


def _outcome(future) -> tuple[object, str | None]:
    """(result, None), or (None, the error) when the task itself failed (a worker died)."""
    try:
        return future.result(), None
    except Exception as err:  # the boundary of a fleet: one bank's failure is a row, not a crash
        return None, f"{type(err).__name__}: {err}"


def _in_worker() -> str:
    """Set up the worker for one task (faiss on one thread); name it for the summary."""
    from kbtools.ops.link_context import faiss_threads

    faiss_threads(1)
    return f"{socket.gethostname()}:{os.getpid()}"


def _job_task(path: str, job: str, options: dict) -> dict:
    """One bank, one job, under the bank's job lock: a summary row (never raises)."""
    from kbtools.store.bank import open_bank

    row = {"bank": path, "job": job, "worker": _in_worker()}
    started = time.perf_counter()
    try:
        bank = open_bank(path)
        row["entries"] = bank.entries.height
        with job_lock(bank, job):
            report = JOBS[job](bank, **options)
        report["polars_threads"] = pl.thread_pool_size()
        made = report.get("links_made", report.get("written", 0))
        dropped = report.get("links_dropped", report.get("pruned", 0))
        row.update(status="ok", links_made=made, links_dropped=dropped, report=json.dumps(report, default=str))
    except BankLocked as err:  # JobRunning is one
        row.update(status="running", error=str(err))
    except KbError as err:
        row.update(status="error", error=str(err))
    except Exception as err:  # damaged files raise what the reader raises: report it, go on
        where = traceback.extract_tb(err.__traceback__)[-1]
        row.update(status="error", error=f"{type(err).__name__}: {err} (at {os.path.basename(where.filename)}:{where.lineno})")
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row


def _check_jobs(jobs: Sequence[str]) -> list[str]:
    jobs = [jobs] if isinstance(jobs, str) else list(jobs)
    unknown = [j for j in jobs if j not in JOB_ORDER]
    if unknown or not jobs:
        raise KbError(f"jobs {jobs!r}: each must be one of {', '.join(JOB_ORDER)}, at least one")
    return jobs


def run_jobs(banks: Sequence[str], jobs: Sequence[str] = JOB_ORDER, *, client=None, scheduler: str | None = None,
             workers: int | None = None, options: Mapping[str, dict] | None = None,
             progress: Progress = False) -> pl.DataFrame:
    """Run ``jobs`` on every bank (paths or glob patterns), one task per bank per job, a bank's
    jobs in the order given; returns one row per bank and job (:data:`SUMMARY_SCHEMA`): bank, job,
    status (``ok``, ``running``: another run holds the bank's job lock, ``error``), entries, links
    made and dropped, seconds, error, the worker, and the job's whole report as JSON.

    ``options`` maps a job to its keyword arguments (``{"connect": {"rebuild": True}}``).

    >>> run_jobs(["/nonexistent/bank"], ["decay"], workers=1)["status"].to_list()  # doctest: +SKIP
    ['error']
    """
    jobs = _check_jobs(jobs)
    paths = expand_banks(banks)
    options = {j: dict((options or {}).get(j) or {}) for j in jobs}
    tick = progress_callback(progress, "jobs", unit="task")
    rows: list[dict] = []
    total = len(paths) * len(jobs)
    with executor(client=client, scheduler=scheduler, workers=workers) as pool:
        pending = {_submit(pool, _job_task, p, jobs[0], options[jobs[0]]): (p, 0) for p in paths}
        while pending:
            for future in _wait_any(pool, set(pending)):
                path, step = pending.pop(future)
                row, failed = _outcome(future)
                rows.append(row or {"bank": path, "job": jobs[step], "status": "error", "error": failed})
                if step + 1 < len(jobs):
                    nxt = jobs[step + 1]
                    pending[_submit(pool, _job_task, path, nxt, options[nxt])] = (path, step + 1)
                if tick is not None:
                    tick(len(rows), total)
    order = {j: i for i, j in enumerate(jobs)}
    frame = pl.DataFrame(rows, schema=SUMMARY_SCHEMA)
    return frame.with_columns(_o=pl.col("job").replace_strict(order, return_dtype=pl.Int64)).sort("bank", "_o").drop("_o")


def summary_status(summary: pl.DataFrame) -> int:
    """The exit status of a run: 3 when a bank was busy (another run holds its job lock), else 1
    when one failed, else 0.

    >>> summary_status(pl.DataFrame({"status": ["ok", "error"]}))
    1
    """
    statuses = set(summary["status"].to_list())
    return 3 if "running" in statuses else 1 if "error" in statuses else 0


def _frame_task(fn: Callable, path: str, kwargs: dict) -> pl.DataFrame:
    """``fn(open_bank(path, readonly=True), **kwargs)`` with a ``bank`` column first; a failure is
    one row with the bank and its error."""
    from kbtools.store.bank import open_bank

    _in_worker()
    try:
        out = fn(open_bank(path, readonly=True), **kwargs)
        return out.select(pl.lit(path).alias("bank"), pl.all(), pl.lit(None, dtype=pl.String).alias("error"))
    except Exception as err:  # a damaged bank is a row, not the end of the run
        return pl.DataFrame({"bank": [path], "error": [f"{type(err).__name__}: {err}"]})


def map_banks(fn: Callable, banks: Sequence[str], *, client=None, scheduler: str | None = None,
              workers: int | None = None, progress: Progress = False, **kwargs) -> pl.DataFrame:
    """``fn(bank, **kwargs) -> pl.DataFrame`` on every bank (opened read-only) on the workers, as
    one frame: a ``bank`` column first, the function's columns, and ``error`` (null, or why the
    bank failed: such a bank gives one row with only ``bank`` and ``error``). ``fn`` must be
    importable by the workers (a module-level function).

    >>> map_banks(len, ["/nonexistent"], workers=1)["error"].str.starts_with("NotABank").to_list()  # doctest: +SKIP
    [True]
    """
    paths = expand_banks(banks)
    tick = progress_callback(progress, "banks", unit="bank")
    parts: list[pl.DataFrame] = []
    with executor(client=client, scheduler=scheduler, workers=workers) as pool:
        pending = {_submit(pool, _frame_task, fn, p, kwargs): p for p in paths}
        while pending:
            for future in _wait_any(pool, set(pending)):
                path = pending.pop(future)
                part, failed = _outcome(future)
                parts.append(part if part is not None else pl.DataFrame({"bank": [path], "error": [failed]}))
                if tick is not None:
                    tick(len(parts), len(paths))
    if not parts:
        return pl.DataFrame(schema={"bank": pl.String, "error": pl.String})
    out = pl.concat(parts, how="diagonal_relaxed")
    return out.select("bank", pl.exclude("bank", "error"), "error").sort("bank", maintain_order=True)


def _holes(bank) -> pl.DataFrame:
    from kbtools.ops.analytics import workflow_holes

    return workflow_holes(bank)


def _communities(bank, *, method: str = "leiden", resolution: float = 1.0, seed: int = 0) -> pl.DataFrame:
    from kbtools.ops.analytics import communities

    per_entry = communities(bank, method=method, resolution=resolution, seed=seed)
    if per_entry.height == 0:
        return pl.DataFrame(schema={"community": pl.Int64, "size": pl.Int64, "label": pl.String})
    return (per_entry.group_by("community", "size", "label").agg(pl.len().alias("_n")).drop("_n")
            .sort("size", "community", descending=[True, False]))


def holes_many(banks: Sequence[str], *, client=None, scheduler: str | None = None, workers: int | None = None,
               progress: Progress = False) -> pl.DataFrame:
    """The workflow holes of every bank (:func:`kbtools.ops.analytics.workflow_holes`), computed on
    the workers, as one frame with a ``bank`` column (and ``error`` for banks that failed).

    >>> holes_many(["data/demo/business"], workers=1)["bank"].n_unique()  # doctest: +SKIP
    1
    """
    return map_banks(_holes, banks, client=client, scheduler=scheduler, workers=workers, progress=progress)


def communities_many(banks: Sequence[str], *, method: str = "leiden", resolution: float = 1.0, seed: int = 0,
                     client=None, scheduler: str | None = None, workers: int | None = None,
                     progress: Progress = False) -> pl.DataFrame:
    """The communities of every bank, one row per community (bank, community, size, label), computed
    on the workers; ``error`` names the banks that failed.

    >>> communities_many(["data/demo/engineering"], workers=1).columns[:3]  # doctest: +SKIP
    ['bank', 'community', 'size']
    """
    return map_banks(_communities, banks, client=client, scheduler=scheduler, workers=workers, progress=progress,
                     method=method, resolution=resolution, seed=seed)


def main(job: str, argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/<job>.py``: parse flags, run the job on each bank, print the reports."""
    parser = argparse.ArgumentParser(
        prog=f"jobs/{job}.py", description=JOB_HELP[job], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit status: 0 done, 1 error, 2 usage, 3 already running on a bank (another run holds it).",
    )
    add_job_arguments(parser, job, positional=False)
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    args = parser.parse_args(argv)
    if not args.bank:
        parser.error("name at least one bank with --bank PATH")
    try:
        banks = expand_banks(args.bank)
        parse_scheduler(args.scheduler)
    except KbError as err:
        parser.error(str(err))
    if len(banks) > 1 or args.scheduler:
        summary = run_jobs(banks, [job], scheduler=args.scheduler, workers=args.workers,
                           options={job: job_options(job, args)})
        print(json.dumps(summary.to_dicts(), indent=1) if args.json else summary.drop("report"))
        return summary_status(summary)
    reports, status = run_job(job, banks, options=job_options(job, args))
    if args.json:
        print(json.dumps(reports, indent=1, default=str))
    else:
        print(format_reports(reports))
    return status
