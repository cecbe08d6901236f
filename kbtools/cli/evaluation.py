"""``kb bench|eval``: measurements and evaluations."""

from __future__ import annotations

import sys
from pathlib import Path

from kbtools.cli.base import command, progress as _progress, register_args

__all__: list[str] = []

@command("bench", "measure the performance budgets in one run, each beside a baseline (docs/performance.md)")
def _bench(args):
    """Measure fold, opening, writing, query latency (10k exact, 100k HNSW with recall), index
    build, graph analytics, write-time linking and connect, and peak memory. Takes a few minutes;
    --quick runs the 10k bank only. --out FILE also writes the JSON report.

    kb bench --scale 1m --workdir /big/disk --out scale.json   # one bank of 1,000,000 entries, end to end
    kb bench --scale 1m --workdir /big/disk --reuse            # again on the bank built there (no generate/embed)
    kb bench --peers --sizes 10000                             # kbtools beside LanceDB, Chroma, DuckDB + vss"""
    import json as _json

    from kbtools.evaluate.bench import format_bench, run_bench

    if args.scale:
        import tempfile

        from kbtools.evaluate.scale import SCALES, run_scale

        if args.scale not in SCALES:
            from kbtools.errors import KbError

            raise KbError(f"--scale {args.scale!r}: choose one of {', '.join(SCALES)}")
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="kb-scale-"))
        rows_file = Path(args.out).with_suffix(".rows.jsonl") if args.out else None
        report = run_scale(SCALES[args.scale], workdir, seed=args.seed, log=lambda m: print(m, file=sys.stderr, flush=True),
                           connect_limit=args.connect_limit or None, reuse=args.reuse,
                           connect_timeout=args.connect_timeout or None,
                           on_row=(lambda r: rows_file.open("a").write(_json.dumps(r) + "\n")) if rows_file else None)
        if args.out:
            Path(args.out).write_text(_json.dumps(report, indent=1))
        text = "\n".join(f"| {r['metric']} | {r['value']:g} {r['unit']} | {r['note']} |" for r in report["rows"])
        return report, "| metric | value | note |\n|---|---|---|\n" + text
    if args.peers is not None:
        return _bench_peers(args)
    sizes = (10_000,) if args.quick else tuple(args.sizes or (10_000, 100_000))
    extra = ()
    try:  # the views' rows need the notebook extra
        from kbtools.views.measure import bench_views

        extra = (bench_views,)
    except ImportError:
        pass
    report = run_bench(sizes=sizes, seed=args.seed, log=lambda m: print(m, file=sys.stderr, flush=True), extra=extra, only=args.only)
    if args.out:
        Path(args.out).write_text(_json.dumps(report, indent=1))
    return report, format_bench(report)


def _bench_peers(args):
    """kbtools beside LanceDB, Chroma and DuckDB + vss at each of --sizes (default 100,000)."""
    import json as _json
    import shutil
    import tempfile

    from kbtools.evaluate.bench_peers import PEERS, bench_peers, format_peers

    reports = []
    for n in args.sizes or (100_000,):
        root = Path(tempfile.mkdtemp(prefix="kb-peers-"))
        try:
            reports.append(bench_peers(root, n=n, seed=args.seed, peers=args.peers or PEERS[1:],
                                       log=lambda m: print(m, file=sys.stderr, flush=True)))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    report = {"peers": reports}
    if args.out:
        Path(args.out).write_text(_json.dumps(report, indent=1))
    return report, "\n\n".join(format_peers(r) for r in reports)


register_args("bench", lambda p: (
    p.add_argument("--quick", action="store_true", help="only the 10k bank"),
    p.add_argument("--sizes", type=int, nargs="+",
                   help="bank sizes (default 10000 100000; with --peers 100000)"),
    p.add_argument("--peers", nargs="*", choices=["LanceDB", "Chroma", "DuckDB+vss"], metavar="PEER",
                   help="kbtools beside LanceDB, Chroma and DuckDB+vss (or the peers named), embedded and on disk, "
                        "on the same vectors: "
                        "steady top-8 with recall@8, an add as each system commits it and one on disk when it returns, "
                        "the first query after it, cold open + first "
                        "query in a new process with its peak RSS, disk (needs the bench extra)"),
    p.add_argument("--seed", type=int, default=7),
    p.add_argument("--only", choices=["linker", "serve"], help="one section alone: 'linker' (term statistics build and "
                   "extend, linking one entry with and without vectors, connect throughput, kb.connect as a job on "
                   "a bank on disk, then on that bank kb.report_learning linked and unlinked (the linking's cost "
                   "on the verb), the query index after a deletion, each beside an exact numpy scan; vectors of "
                   "the entries' text and random unit vectors, the worst case), e.g. kb bench --only linker --sizes "
                   "100000; 'serve' "
                   "(adds, first query after an add, cold open, memory, disk, PPR vs igraph, fold at 2k and 20k)"),
    p.add_argument("--out", help="also write the JSON report to this file"),
    p.add_argument("--scale", help="one big bank end to end instead: 20k, 100k, 300k or 1m entries (generate, embed with "
                                   "minilm-static, open, first and steady queries with recall@8, memory, disk, connect, "
                                   "PageRank, Leiden); not for CI"),
    p.add_argument("--workdir", help="with --scale: where the bank is built (kept; default a new temporary folder)"),
    p.add_argument("--connect-limit", type=int, default=50_000,
                   help="with --scale: entries the connect measurement links (default 50,000; 0: the whole bank)"),
    p.add_argument("--connect-timeout", type=float, default=1800,
                   help="with --scale: stop the connect measurement after this many seconds (default 1800; 0: no limit)"),
    p.add_argument("--reuse", action="store_true",
                   help="with --scale: measure the bank already generated and embedded in --workdir as it is "
                        "(skips generate and embed; the index is rebuilt)"),
), )


# ------------------------------------------------------------------------------------------ eval


@command("eval", "evaluation that cannot fool itself: the hop lab (with its leak check), the folding replay, the judge")
def _eval(args):
    """kb eval hoplab PATH [--tasks sidecar|mined] [--n 30] [--seed 0] [--min-shared 1] [--json-out FILE]
    kb eval replay PATH [--queries FILE|mined] [--n 60] [--seed 0] [--json-out FILE]
    kb eval judge PATH [--threshold 0.5] [--peps FILE] [--curl FILE] [--seed 0] [--json-out FILE]
    kb eval links PATH [--seed 0] [--keep-vectors] [--json-out FILE]
    kb eval bpmn FOLDER [--json-out FILE]

    kb eval judge scores the duplicate judge on pairs no generator made, side by side: the held-out
    half of kbtools' hand-written pairs (96 pairs, six domains; the other half chose the settings),
    the PEP corpus's Superseded-By / Replaces pairs (--peps, default data/peps) and curl's "This
    reverts commit" pairs and repeated commit messages (--curl, default the shared curl-commits.jsonl.gz
    when present), each real set with as many near-misses drawn from its candidate pairs (--seed;
    the PEPs thrice: pairs whose texts do not cite each other, pairs where one cites the other, and
    those again with the supersessions their texts state, quoted in the package's data, labelled so);
    precision and recall per verdict with 95 % Wilson intervals and the merges that join differing
    values; then the pairs planted in PATH's sidecar (duplicates, corrections, splits, near-misses)
    at the threshold and along a sweep of similarity thresholds. It reads only.

    links: the link-recovery report, leak-free. The bank's trusted human edges (citations,
    supersessions, requirements...; not part_of structure) are held out; the token that made each
    (a PEP N mention, an 8-hex id, an abbreviated commit hash, a --cite pattern's match) is masked
    in both ends' text and those entries embedded again in memory (the bank is never written); the
    linker (the seed's priors) links the masked copy. Beside it, at the same number of links: knn
    (the globally most similar pairs), knn_per_entry (every entry's nearest, then every entry's
    second, ...), rerank (each entry's 50 nearest re-ranked by cosine + 0.02 x idf of shared terms
    held by at most 20 entries, taken per entry), and lexical (the linker without vectors, at its
    own number of links). Each arm: recovered share with a bootstrap 95 % interval over the citing
    entries, precision, links per entry; then the strongest baseline and the linker's margin over
    it with a paired interval. --keep-vectors scores with the bank's stored vectors (not embedded
    again: faster, but they still carry the masked tokens).

    A bank without a ground-truth sidecar (a real one: kb demo --peps) gets tasks and queries
    mined from its own citations and supersessions (A cites B; A's title finds A, not B).

    bpmn: BPMN import on real tool exports. FOLDER is laid out as the BPMN MIWG test suite
    (Reference/<model>.bpmn beside <Tool>/<model>-export.bpmn or -roundtrip.bpmn, at any depth);
    every file is imported tolerant and counted as read, refused (with the reason) or crashed,
    and each export's holes (kind and element name) are compared with its reference's: the share
    per model and overall, and every disagreement. It reads only; exit status 1 on a crash.

    Prints a markdown report; --json prints the full JSON report (every task's raw outcome, the seed
    and the parameters); --json-out also writes it to a file. The built-in agent of the hop lab is a
    deterministic simulation (named so in the report); the replay's built-in judge reads the bank's
    ground-truth sidecar. Exit status 5 when the replay lost a relevant entry of the flat answer."""
    if args.which == "bpmn":
        from kbtools.evaluate.bpmn_exports import evaluate_bpmn_exports, format_bpmn_exports

        report = evaluate_bpmn_exports(args.path)
        if args.json_out:
            Path(args.json_out).write_text(_json_text(report))
        return report, format_bpmn_exports(report), 1 if report["crashes"] else 0
    from kbtools.evaluate import ReaderAgent, run_hoplab, run_replay
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path, readonly=True)  # an evaluation never writes the bank it reads
    if args.which == "judge":
        from kbtools.errors import KbError
        from kbtools.evaluate.judging import evaluate_judge, evaluate_judge_sets

        try:
            planted = evaluate_judge(bank, threshold=args.threshold)
        except KbError as err:  # a bank without planted pairs: the real sets still run
            planted = None
            missing = str(err)
        sets = evaluate_judge_sets(None if planted is None else bank, peps=args.peps, curl=args.curl, planted=planted,
                                   seed=args.seed)
        out = {"sets": sets.to_dict(), "planted": planted.to_dict() if planted is not None else {"error": missing}}
        if args.json_out:
            Path(args.json_out).write_text(_json_text(out))
        text = sets.to_markdown() + "\n\n" + (planted.to_markdown() if planted is not None else f"Demo planted pairs: {missing}")
        return out, text, 0
    if args.which == "links":
        from kbtools.evaluate.links import link_recovery

        report = link_recovery(bank, seed=args.seed, reembed=not args.keep_vectors, progress=_progress("link recovery"))
        if args.json_out:
            Path(args.json_out).write_text(_json_text(report.to_dict()))
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
    p.add_argument("which", choices=("hoplab", "replay", "judge", "links", "bpmn"), help="which evaluation"),
    p.add_argument("path", help="the bank folder (kb eval bpmn: the folder of BPMN reference models and tool exports)"),
    p.add_argument("--tasks", choices=("sidecar", "mined"), help="hop tasks from the sidecar or mined from the bank"),
    p.add_argument("--n", type=int, default=30, help="tasks (default 30) or replay queries (pass e.g. 60) to mine"),
    p.add_argument("--queries", help="query log: one query per line, or JSONL with query and relevant ids; 'mined' mines them "
                                     "from the bank's citations and supersessions"),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--k", type=int, default=8),
    p.add_argument("--min-shared", type=int, default=0, help="terms a note must share with the task for the reader to follow it"),
    p.add_argument("--threshold", type=float, default=0.5, help="kb eval judge: the similarity threshold of the operating point"),
    p.add_argument("--peps", help="kb eval judge: the PEP JSON-lines file (default data/peps/peps.jsonl.gz)"),
    p.add_argument("--curl", help="kb eval judge: curl's commit JSON-lines file (default the shared curl-commits.jsonl.gz)"),
    p.add_argument("--json-out", help="also write the JSON report to this file"),
    p.add_argument("--keep-vectors", action="store_true",
                   help="links: score with the stored vectors instead of embedding the masked entries again"),
))


def _json_text(obj) -> str:
    import json

    return json.dumps(obj, indent=1)


@command("linker", "show the bank's linker settings; --set KEY=VALUE / --reset KEY store them")
def _linker(args):
    """Show the linker settings connect, the write-time linker and kb explain use on this bank (the
    defaults for its embedder, with the bank's own values over them, marked *), or change them in
    one audited commit: --set KEY=VALUE (repeatable; e.g. h=0.6, max_new=4, both_ends=false) and
    --reset KEY (back to the default). Settings an older kbtools stored and the linker now ignores
    (weights and the threshold beside them, identifiers, the w_near / w_author / w_title levers)
    are listed as ignored; a change drops them, or --reset one of them alone. --dry-run shows the
    result without writing. A bad key or value is refused and nothing is written."""
    from kbtools.errors import ValidationError
    from kbtools.ops.maintenance import configure_linker
    from kbtools.store.bank import open_bank

    values = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValidationError("--set", item, "must read KEY=VALUE, e.g. h=0.6")
        values[key.strip()] = value.strip()
    report = configure_linker(open_bank(args.path, readonly=not (values or args.reset) or args.dry_run), values,
                              reset=args.reset or [], dry_run=args.dry_run)
    counted = report["stored"].keys() - set(report["ignored"])
    lines = [f"{k} = {v}{' *' if k in counted else ''}" for k, v in report["settings"].items()]
    if report["ignored"]:
        lines.append("ignored (stored by an older kbtools): " + ", ".join(report["ignored"]))
    if report["changed"]:
        verb = "would change" if args.dry_run else "changed"
        lines.append(f"{verb}: " + ", ".join(f"{k} -> {'default' if v is None else v}" for k, v in report["changed"].items()))
    return report, "\n".join(lines)


register_args("linker", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="store a linker setting (repeatable)"),
    p.add_argument("--reset", action="append", metavar="KEY", help="drop a stored setting: back to the default"),
    p.add_argument("--dry-run", action="store_true", help="show the result, write nothing"),
))
