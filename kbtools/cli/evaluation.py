"""``kb bench|eval``: measurements and evaluations."""

from __future__ import annotations

import sys
from pathlib import Path

from kbtools.cli.base import command, progress as _progress, register_args

__all__: list[str] = []

@command("bench", "measure the budgets of DESIGN.md in one run, each beside a baseline")
def _bench(args):
    """Measure fold, opening, writing, query latency (10k exact, 100k HNSW with recall), index
    build, graph analytics, write-time linking and connect, and peak memory. Takes a few minutes;
    --quick runs the 10k bank only. --out FILE also writes the JSON report."""
    import json as _json

    from kbtools.evaluate.bench import format_bench, run_bench

    sizes = (10_000,) if args.quick else tuple(args.sizes)
    report = run_bench(sizes=sizes, seed=args.seed, log=lambda m: print(m, file=sys.stderr, flush=True),
                       only=args.only)
    if args.out:
        Path(args.out).write_text(_json.dumps(report, indent=1))
    return report, format_bench(report)


register_args("bench", lambda p: (
    p.add_argument("--quick", action="store_true", help="only the 10k bank"),
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="bank sizes (default 10000 100000)"),
    p.add_argument("--seed", type=int, default=7),
    p.add_argument("--out", help="also write the JSON report to this file"),
    p.add_argument("--only", choices=["serve"], help="run one section alone: serve (adds, first query after an "
                   "add, cold open, memory, disk beside the peers' figures, PPR vs igraph, fold at 2k and 20k)"),
))


# ------------------------------------------------------------------------------------------ eval


@command("eval", "evaluation that cannot fool itself: the hop lab (with its leak check), the folding replay, the judge")
def _eval(args):
    """kb eval hoplab PATH [--tasks sidecar|mined] [--n 30] [--seed 0] [--min-shared 1] [--json-out FILE]
    kb eval replay PATH [--queries FILE|mined] [--n 60] [--seed 0] [--json-out FILE]
    kb eval judge PATH [--threshold 0.5] [--json-out FILE]

    kb eval judge scores the duplicate judge on the pairs planted in the sidecar (duplicates,
    corrections, splits, near-misses): precision and recall per verdict at the threshold and along
    a sweep of similarity thresholds. It reads only.

    A bank without a ground-truth sidecar (a real one: kb demo --peps) gets tasks and queries
    mined from its own citations and supersessions (A cites B; A's title finds A, not B).

    Prints a markdown report; --json prints the full JSON report (every task's raw outcome, the seed
    and the parameters); --json-out also writes it to a file. The built-in agent of the hop lab is a
    deterministic simulation (named so in the report); the replay's built-in judge reads the bank's
    ground-truth sidecar. Exit status 5 when the replay lost a relevant entry of the flat answer."""
    from kbtools.evaluate import ReaderAgent, run_hoplab, run_replay
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path, readonly=args.which == "judge")
    if args.which == "judge":
        from kbtools.evaluate.judging import evaluate_judge

        report = evaluate_judge(bank, threshold=args.threshold)
        if args.json_out:
            import json as _json

            Path(args.json_out).write_text(_json.dumps(report.to_dict(), indent=1))
        return report.to_dict(), report.to_markdown(), 0
    if args.which == "hoplab":
        agent = ReaderAgent(min_shared=args.min_shared) if args.min_shared else None
        report = run_hoplab(bank, tasks=args.tasks, agent=agent, seed=args.seed, k=args.k, n=args.n,
                            progress=_progress("hop lab"))
        status = 0
    else:
        report = run_replay(bank, queries=args.queries, seed=args.seed, k=args.k, n=args.n, progress=_progress("replay"))
        status = 5 if getattr(report, "lost", 0) else 0
    if args.json_out:
        Path(args.json_out).write_text(report.to_json())
    return report.to_dict(), report.to_markdown(), status


register_args("eval", lambda p: (
    p.add_argument("which", choices=("hoplab", "replay", "judge"), help="which evaluation"),
    p.add_argument("path", help="the bank folder"),
    p.add_argument("--tasks", choices=("sidecar", "mined"), help="hop tasks from the sidecar or mined from the bank"),
    p.add_argument("--n", type=int, default=30, help="tasks (default 30) or replay queries (pass e.g. 60) to mine"),
    p.add_argument("--queries", help="query log: one query per line, or JSONL with query and relevant ids; 'mined' mines them "
                                     "from the bank's citations and supersessions"),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--k", type=int, default=8),
    p.add_argument("--min-shared", type=int, default=0, help="terms a note must share with the task for the reader to follow it"),
    p.add_argument("--threshold", type=float, default=0.5, help="kb eval judge: the similarity threshold of the operating point"),
    p.add_argument("--json-out", help="also write the JSON report to this file"),
))
