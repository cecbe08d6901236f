"""``kb backfill|connect|decay``: the scheduled jobs."""

from __future__ import annotations


from kbtools.cli.base import command, register_args

__all__: list[str] = []

def _job_command(job: str, help: str):
    from kbtools.ops import jobs

    def run(args):
        banks = list(args.path) + list(args.bank)
        if not banks:
            from kbtools.errors import KbError

            raise KbError("name at least one bank (kb %s PATH or --bank PATH)" % job)
        reports, status = jobs.run_job(job, banks, options=jobs.job_options(job, args))
        return (reports if len(reports) > 1 else reports[0]), jobs.format_reports(reports), status

    run.__doc__ = jobs.JOB_HELP[job] + "\n\nExit status: 0 done, 1 error, 3 already running on a bank (this run did nothing)."
    command(job, help)(run)
    register_args(job, lambda p: jobs.add_job_arguments(p, job, positional=True))


_job_command("backfill", "turn citations in prose and dedup metadata into trusted edges")
_job_command("connect", "run the write-time linker over entries it has not seen (or all with --rebuild)")
_job_command("decay", "fade automatic links and prune the weak and the dangling")
