"""More ``kb`` subcommands: retrieval (query, recall, embed), graph analytics (related, trace,
communities, hubs, holes). Each is thin: parse, open the bank, call one library function, print.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kbtools.cli.main import command, register_args

__all__: list[str] = []


def _progress(label: str):
    """A progress bar on a terminal, plain log lines otherwise (the jobs' reporter)."""
    from kbtools.ops.jobs import progress_reporter

    return progress_reporter(label)


def _frame_out(frame, args, text_rows: int = 40):
    """Payload and text for a polars frame result (--json gives rows, --csv gives CSV)."""
    import polars as pl

    if getattr(args, "csv", False):
        flat = frame.with_columns(
            [pl.col(c).cast(pl.List(pl.String)).list.join("; ") for c, t in frame.schema.items() if isinstance(t, pl.List)]
        )
        return None, flat.write_csv()

    with pl.Config(tbl_rows=text_rows, tbl_width_chars=160, fmt_str_lengths=80, tbl_hide_dataframe_shape=True):
        return frame.to_dicts(), str(frame)


# ------------------------------------------------------------------------------------------ query


def _ensure_embedded(bank) -> None:
    """Embed entries that lack vectors first, with progress (the first query on a bank does this)."""
    from kbtools.retrieval.search import embed_bank

    if bank.entries.height and len(bank.vectors()[0]) < bank.entries.height:
        print(f"embedding {bank.entries.height - len(bank.vectors()[0])} entries of {bank.path} "
              "(once; cached by text hash)", file=sys.stderr, flush=True)
        embed_bank(bank, progress=_progress("embed"))


@command("query", "answer a question from a bank, folded (default) or flat")
def _query(args):
    """Answer a question the way an agent reads it: results with their folded pointers and the
    neighbours one hop away. The first query on a bank embeds its entries (cached afterwards)."""
    from kbtools.retrieval.pipeline import query
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    _ensure_embedded(bank)
    if args.compare:
        flat = query(bank, args.text, k=args.k, fold=False, lexical=args.lexical, record_usage=False, index=args.index)
        folded = query(bank, args.text, k=args.k, fold=True, lexical=args.lexical, record_usage=not args.no_usage, index=args.index)
        return {"flat": flat.to_dict(), "folded": folded.to_dict()}, side_by_side(flat, folded)
    ans = query(bank, args.text, k=args.k, fold=not args.no_fold, lexical=args.lexical,
                record_usage=not args.no_usage, index=args.index)
    return ans.to_dict(), ans.text()


def side_by_side(flat, folded, width: int = 78) -> str:
    """The flat top-k beside the folded answer, as an agent would read each."""
    import textwrap

    def lines(ans, title):
        out = [title, "-" * len(title)]
        for r in ans.results:
            out += textwrap.wrap(f"{r.rank}. {r.title} [{r.id}]", width - 2, subsequent_indent="   ")
            for p in [*r.related, *r.neighbors]:
                tag = "folded" if p.kind == "folded" else "neighbor"
                text = f"↳ {tag}: {p.title or p.id} [{p.id}] {p.relation}" + (f" — {p.note}" if p.note else "")
                out += textwrap.wrap(text, width - 2, initial_indent="   ", subsequent_indent="     ")
        return out

    left, right = lines(flat, "FLAT top-%d" % len(flat.results)), lines(folded, "FOLDED (same %d slots)" % len(folded.results))
    rows = max(len(left), len(right))
    left += [""] * (rows - len(left))
    right += [""] * (rows - len(right))
    head = f"Question: {folded.query}\n"
    return head + "\n".join(f"{a:<{width}}  {b}" for a, b in zip(left, right))


register_args("query", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("text", help="the question"),
    p.add_argument("--k", type=int, default=8, help="results to return (default 8)"),
    p.add_argument("--no-fold", action="store_true", help="a flat top-k, without folding"),
    p.add_argument("--compare", action="store_true", help="print the flat top-k beside the folded answer"),
    p.add_argument("--lexical", action="store_true", help="add the BM25 arm (rare tokens, error strings, flags)"),
    p.add_argument("--index", default="flat", help="faiss index kind: flat (exact), hnsw, hnsw_sq8, ivf, sq8"),
    p.add_argument("--no-usage", action="store_true", help="do not count usage for the returned results"),
))


@command("recall", "query, then spread activation over the links and explain how the entries connect")
def _recall(args):
    """Like query, then personalized PageRank from the results brings in linked entries, and a
    "How these entries connect" section explains the links."""
    from kbtools.ops.analytics import recall
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    _ensure_embedded(bank)
    ans = recall(bank, args.text, links=args.links, k=args.k, record_usage=not args.no_usage)
    return ans.to_dict(), ans.text()


register_args("recall", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("text", help="the question"),
    p.add_argument("--k", type=int, default=8),
    p.add_argument("--links", type=int, default=3, help="linked entries to bring in (default 3)"),
    p.add_argument("--no-usage", action="store_true"),
))


@command("embed", "embed a bank's entries (only new or changed ones, or all with --rebuild)")
def _embed(args):
    """Embed entries whose vectors are missing or stale; --rebuild embeds all again (needed to
    switch embedders). Embedders: minilm-int8 (default), minilm-static (fast mode), hashing-char."""
    from kbtools.retrieval.search import embed_bank
    from kbtools.store.bank import open_bank

    out = embed_bank(open_bank(args.path), embedder=args.embedder, rebuild=args.rebuild, progress=_progress("embed"))
    return out, f"embedded {out['embedded']} of {out['entries']} entries with {out['embedder']}"


register_args("embed", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("--embedder", help="minilm-int8, minilm-static or hashing-char (default: the bank's, else minilm-int8)"),
    p.add_argument("--rebuild", action="store_true", help="embed every entry again"),
))


# ------------------------------------------------------------------------------------------ graph


@command("related", "what is connected to an entry, best first, with the chain of links")
def _related(args):
    """Spreading activation from one entry: each related entry with its score and path."""
    from kbtools.ops.analytics import related
    from kbtools.store.bank import open_bank

    return _frame_out(related(open_bank(args.path), args.id, depth=args.depth, limit=args.limit), args)


register_args("related", lambda p: (
    p.add_argument("path"), p.add_argument("id", help="the entry id"),
    p.add_argument("--depth", type=int, default=2), p.add_argument("--limit", type=int, default=10),
    p.add_argument("--csv", action="store_true", help="print CSV"),
))


@command("trace", "the shortest chain of links between two entries")
def _trace(args):
    """Breadth-first shortest chain of links between two entries (either direction)."""
    from kbtools.ops.analytics import trace
    from kbtools.store.bank import open_bank

    return _frame_out(trace(open_bank(args.path), args.a, args.b, max_depth=args.max_depth), args)


register_args("trace", lambda p: (
    p.add_argument("path"), p.add_argument("a"), p.add_argument("b"),
    p.add_argument("--max-depth", type=int, default=4), p.add_argument("--csv", action="store_true"),
))


@command("communities", "communities of the bank (Leiden modularity or label propagation) with their labels")
def _communities(args):
    """One row per community: size and a label of its members' most distinctive terms."""
    import polars as pl

    from kbtools.ops.analytics import communities
    from kbtools.store.bank import open_bank

    frame = communities(open_bank(args.path), method=args.method, resolution=args.resolution, seed=args.seed,
                        trusted_only=not args.all_links)
    if not args.members:
        frame = (frame.filter(pl.col("community") >= 0).group_by("community", "size", "label").agg(pl.col("id").head(5).alias("examples"))
                 .sort("size", "community", descending=[True, False]))
    return _frame_out(frame, args)


register_args("communities", lambda p: (
    p.add_argument("path"),
    p.add_argument("--method", default="leiden", choices=("leiden", "label_propagation")),
    p.add_argument("--resolution", type=float, default=1.0),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--all-links", action="store_true", help="include automatic (fading) links"),
    p.add_argument("--members", action="store_true", help="one row per entry instead of per community"),
    p.add_argument("--csv", action="store_true"),
))


@command("hubs", "the hub entries: degree, PageRank and betweenness, with the hub rule applied")
def _hubs(args):
    """Entries ranked by PageRank; --all lists every entry, otherwise only hubs (degree >= max(4, mean + 2 sd))."""
    import polars as pl

    from kbtools.ops.analytics import centrality
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    frame = centrality(bank).join(bank.entries.select("id", "kind", "title"), on="id", how="left")
    if not args.all:
        frame = frame.filter(pl.col("hub"))
    frame = frame.sort("pagerank", descending=True).head(args.limit)
    return _frame_out(frame, args)


register_args("hubs", lambda p: (
    p.add_argument("path"), p.add_argument("--all", action="store_true", help="every entry, not only hubs"),
    p.add_argument("--limit", type=int, default=50), p.add_argument("--csv", action="store_true"),
))


@command("holes", "holes in the bank's process flows, each with the question to ask its owner")
def _holes(args):
    """Walk precedes / produces / requires / owned_by and list every hole: dead ends, one-branch
    decisions, unproduced inputs, unused outputs, steps with no owner, unreachable steps, loops
    with no exit. Declarations (metadata start/end/output/input) are honoured."""
    from kbtools.ops.analytics import process_flows, workflow_holes
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    if args.flows:
        return _frame_out(process_flows(bank), args)
    holes = workflow_holes(bank)
    payload, text = _frame_out(holes, args)
    if payload is not None:  # text for an analyst: one block per hole, most severe first
        import polars as pl

        rank = {"high": 0, "medium": 1, "low": 2}
        ordered = holes.with_columns(pl.col("severity").replace_strict(rank, default=3).alias("_r")).sort("_r", "flow", "title")
        blocks = [f"{holes.height} hole(s) in {holes['flow'].n_unique()} flow(s) of {args.path}"]
        for r in ordered.iter_rows(named=True):
            blocks.append(f"\n[{r['severity']}] {r['hole']} · {r['flow']} · {r['title']} ({r['id']})\n"
                          f"  {r['explanation']}\n  {r['question']}")
        text = "\n".join(blocks)
    return payload, text


register_args("holes", lambda p: (
    p.add_argument("path"), p.add_argument("--flows", action="store_true", help="one row per flow instead"),
    p.add_argument("--csv", action="store_true"),
))


# ------------------------------------------------------------------------------------------ jobs


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


# ------------------------------------------------------------------------------------------ bench


@command("bench", "measure the budgets of DESIGN.md in one run, each beside a baseline")
def _bench(args):
    """Measure fold, opening, writing, query latency (10k exact, 100k HNSW with recall), index
    build, graph analytics, write-time linking and connect, and peak memory. Takes a few minutes;
    --quick runs the 10k bank only. --out FILE also writes the JSON report."""
    import json as _json

    from kbtools.evaluate.bench import format_bench, run_bench

    sizes = (10_000,) if args.quick else tuple(args.sizes)
    report = run_bench(sizes=sizes, seed=args.seed, log=lambda m: print(m, file=sys.stderr, flush=True))
    if args.out:
        Path(args.out).write_text(_json.dumps(report, indent=1))
    return report, format_bench(report)


register_args("bench", lambda p: (
    p.add_argument("--quick", action="store_true", help="only the 10k bank"),
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="bank sizes (default 10000 100000)"),
    p.add_argument("--seed", type=int, default=7),
    p.add_argument("--out", help="also write the JSON report to this file"),
))


# ------------------------------------------------------------------------------------------ eval


@command("eval", "evaluation that cannot fool itself: the hop lab (with its leak check) and the folding replay")
def _eval(args):
    """kb eval hoplab PATH [--tasks sidecar|mined] [--n 30] [--seed 0] [--min-shared 1] [--json-out FILE]
    kb eval replay PATH [--queries FILE] [--seed 0] [--json-out FILE]

    Prints a markdown report; --json prints the full JSON report (every task's raw outcome, the seed
    and the parameters); --json-out also writes it to a file. The built-in agent of the hop lab is a
    deterministic simulation (named so in the report); the replay's built-in judge reads the bank's
    ground-truth sidecar. Exit status 5 when the replay lost a relevant entry of the flat answer."""
    from kbtools.evaluate import ReaderAgent, run_hoplab, run_replay
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    if args.which == "hoplab":
        agent = ReaderAgent(min_shared=args.min_shared) if args.min_shared else None
        report = run_hoplab(bank, tasks=args.tasks, agent=agent, seed=args.seed, k=args.k, n=args.n,
                            progress=_progress("hop lab"))
        status = 0
    else:
        report = run_replay(bank, queries=args.queries, seed=args.seed, k=args.k, progress=_progress("replay"))
        status = 5 if getattr(report, "lost", 0) else 0
    if args.json_out:
        Path(args.json_out).write_text(report.to_json())
    return report.to_dict(), report.to_markdown(), status


register_args("eval", lambda p: (
    p.add_argument("which", choices=("hoplab", "replay"), help="which evaluation"),
    p.add_argument("path", help="the bank folder"),
    p.add_argument("--tasks", choices=("sidecar", "mined"), help="hop tasks from the sidecar or mined from the bank"),
    p.add_argument("--n", type=int, default=30, help="tasks to mine (default 30)"),
    p.add_argument("--queries", help="query log: one query per line, or JSONL with query and relevant ids"),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--k", type=int, default=8),
    p.add_argument("--min-shared", type=int, default=0, help="terms a note must share with the task for the reader to follow it"),
    p.add_argument("--json-out", help="also write the JSON report to this file"),
))
