"""``kb backfill|connect|decay``: the scheduled jobs, on one bank in this process or on many banks
at once (a local process pool, or dask with ``--scheduler``)."""

from __future__ import annotations


from kbtools.cli.base import command, frame_out, progress as _progress, register_args

__all__: list[str] = []

_FLEET_HELP = """

Many banks: --bank takes globs (--bank 'banks/*'); with more than one bank the banks run in
parallel, one task per bank, each under its own job lock, on a local process pool (--workers N)
or on dask.distributed (--scheduler local:N | tcp://HOST:PORT). A bank that fails or is busy is
a row of the summary (bank, job, status, entries, links made/dropped, seconds, error); the others
go on. --json prints the summary rows."""


def _job_command(job: str, help: str):
    from kbtools.ops import jobs

    def run(args):
        from kbtools.errors import KbError
        from kbtools.ops.fleet import expand_banks, run_jobs, summary_status

        banks = expand_banks(list(args.path) + list(args.bank))
        if not banks:
            raise KbError("name at least one bank (kb %s PATH or --bank PATH)" % job)
        options = jobs.job_options(job, args)
        if len(banks) == 1 and not args.scheduler:
            reports, status = jobs.run_job(job, banks, options=options)
            return reports[0], jobs.format_reports(reports), status
        summary = run_jobs(banks, [job], scheduler=args.scheduler, workers=args.workers, options={job: options},
                           progress=_progress(f"{job} ({len(banks)} banks)"))
        rows, text = frame_out(summary.drop("report"), args, text_rows=len(banks) + 2)
        bad = summary.filter(summary["status"] != "ok")
        text += "".join(f"\n{r['status'].upper()} {r['bank']}: {r['error']}" for r in bad.iter_rows(named=True))
        return summary.to_dicts(), text, summary_status(summary)

    run.__doc__ = (jobs.JOB_HELP[job] + _FLEET_HELP
                   + "\n\nExit status: 0 done, 1 error, 3 already running on a bank (this run did nothing there).")
    command(job, help)(run)
    register_args(job, lambda p: jobs.add_job_arguments(p, job, positional=True))


_job_command("backfill", "turn citations in prose and dedup metadata into trusted edges")
_job_command("connect", "run the write-time linker over entries it has not seen (or all with --rebuild)")
_job_command("decay", "fade automatic links and prune the weak and the dangling")
