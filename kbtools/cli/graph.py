"""``kb related|trace|communities|hubs|holes``: graph analytics over a bank."""

from __future__ import annotations


from kbtools.cli.base import command, frame_out as _frame_out, register_args

__all__: list[str] = []

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
    """One row per community: size and a label of its members' most distinctive terms. Only
    trusted edges link entries unless --all-links (automatic links included); the last line says
    how many edges were counted and how many entries have none."""
    import polars as pl

    from kbtools.ops.analytics import communities, edges_counted
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    trusted_only = not args.all_links
    frame = communities(bank, method=args.method, resolution=args.resolution, seed=args.seed,
                        trusted_only=trusted_only)
    isolated = frame.filter(pl.col("community") < 0).height
    if not args.members:
        frame = (frame.filter(pl.col("community") >= 0).group_by("community", "size", "label").agg(pl.col("id").head(5).alias("examples"))
                 .sort("size", "community", descending=[True, False]))
    payload, text = _frame_out(frame, args)
    if args.csv or args.json:
        return payload, text
    found = frame.select(pl.col("community").filter(pl.col("community") >= 0).n_unique()).item()
    covered = bank.entries.height - isolated
    note = (f"{found} communities cover {covered} of {bank.entries.height} entries ({isolated} have no counted link); "
            + _edges_note(edges_counted(bank, trusted_only=trusted_only), args.path))
    return payload, f"{text}\n{note}"


def _edges_note(counted: dict, path: str) -> str:
    """Which edges a graph analytic counted, and how to count the others."""
    if not counted["trusted_only"]:
        return f"counting every edge ({counted['edges']}, {counted['automatic']} automatic links included)"
    text = f"counting trusted edges only ({counted['trusted']} of {counted['edges']} edges)"
    if counted["automatic"]:
        return f"{text}; --all-links to include the {counted['automatic']} automatic links"
    return f"{text}; the bank has no automatic links: `kb connect {path}` proposes some"


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
    """Entries ranked by PageRank; --all lists every entry, otherwise only hubs (degree >= max(4, mean + 2 sd)).
    Only trusted edges count unless --all-links (automatic links included); the last line gives
    the hub rule's degree on this bank and the edges counted."""
    import polars as pl

    from kbtools.graph.hubs import hub_threshold
    from kbtools.ops.analytics import centrality, edges_counted
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    trusted_only = not args.all_links
    scores = centrality(bank, trusted_only=trusted_only)
    frame = scores.join(bank.entries.select("id", "kind", "title"), on="id", how="left")
    if not args.all:
        frame = frame.filter(pl.col("hub"))
    frame = frame.sort("pagerank", descending=True).head(args.limit)
    payload, text = _frame_out(frame, args)
    if args.csv or args.json:
        return payload, text
    hubs = int(scores["hub"].sum())
    note = (f"{hubs} hub(s) among {scores.height} entries (the hub rule here: degree >= "
            f"{hub_threshold(scores['degree']):.3g}); " + _edges_note(edges_counted(bank, trusted_only=trusted_only), args.path))
    return payload, f"{text}\n{note}"


register_args("hubs", lambda p: (
    p.add_argument("path"), p.add_argument("--all", action="store_true", help="every entry, not only hubs"),
    p.add_argument("--all-links", action="store_true", help="include automatic (fading) links"),
    p.add_argument("--limit", type=int, default=50), p.add_argument("--csv", action="store_true"),
))


@command("holes", "holes in the bank's process flows, each with the question to ask its owner")
def _holes(args):
    """Walk precedes / produces / requires / owned_by and list every hole: dead ends (also a step
    whose only way out is an exception path), one-branch splits (joins never are), closed loops,
    deadlocks (a parallel join waiting for a path an exclusive split skips), steps that run twice
    after a parallel split, unproduced inputs, unused outputs, unreachable steps (one row for the
    first, with what it cuts off), steps or whole flows with no owner. Declared flows (metadata
    "flow") and flows inferred from precedes edges alone are both walked. broken_reference lists
    what a BPMN import left out (a reference to nothing). A step in a BPMN pool is owned by its
    participant; --lanes asks for a lane for each instead. --format bpmn writes each ingested BPMN
    diagram back with its holes coloured (bpmn.io colours) to --out. --html FILE also writes the
    flows as diagrams (lanes coloured, each hole ringed in its severity's colour and labelled with
    its kind, a legend) above the table of holes and their questions: one offline HTML page."""
    from kbtools.ops.analytics import process_flows, workflow_holes
    from kbtools.store.bank import open_bank

    bank = open_bank(args.path)
    if args.format == "bpmn":
        from kbtools.errors import KbError
        from kbtools.ops.bpmn import export_bpmn_holes

        if not args.out:
            raise KbError("--format bpmn needs --out FILE (or a folder when the bank holds several diagrams)")
        holes = workflow_holes(bank, lanes=args.lanes)
        written = export_bpmn_holes(bank, args.out, source=args.source, lanes=args.lanes)
        text = "\n".join([f"{holes.height} hole(s) in {holes['flow'].n_unique()} flow(s) of {args.path}; coloured in:",
                          *[f"  {p}" for p in written]])
        return {"holes": holes.height, "written": [str(p) for p in written]}, text
    if args.flows:
        return _frame_out(process_flows(bank), args)
    holes = workflow_holes(bank, lanes=args.lanes)
    payload, text = _frame_out(holes, args)
    if payload is not None:  # text for an analyst: one block per hole, most severe first
        import polars as pl

        rank = {"high": 0, "medium": 1, "low": 2}
        ordered = holes.with_columns(pl.col("severity").replace_strict(rank, default=3).alias("_r")).sort("_r", "flow", "title")
        blocks = [f"{holes.height} hole(s) in {holes['flow'].n_unique()} flow(s) of {args.path}"]
        for r in ordered.iter_rows(named=True):
            origin = "" if r["declared"] else " (inferred flow)"
            blocks.append(f"\n[{r['severity']}] {r['hole']} · {r['flow']}{origin} · {r['title']} ({r['id']})\n"
                          f"  {r['explanation']}\n  {r['question']}")
        text = "\n".join(blocks)
    if args.html:
        written = _holes_html(bank, holes, args.html)
        if not args.csv:  # CSV stays rows alone
            text = (text or "") + f"\nwrote {written} (the flows diagram and the holes table, offline)"
    return payload, text


def _holes_html(bank, holes, path):
    """The holes figure above the holes table, as one offline HTML page at ``path``."""
    import polars as pl

    from kbtools.views.answer_html import holes_table_html
    from kbtools.views.export import save_html
    from kbtools.views.flows import holes_figure

    rank = pl.col("severity").replace_strict({"high": 0, "medium": 1, "low": 2}, default=3, return_dtype=pl.Int64)
    table = holes_table_html(holes.sort(rank, "flow", "title"))
    return save_html(holes_figure(bank.entries, bank.edges, holes), path,
                     title=f"Workflow holes of {bank.path}", extra_html=table)


register_args("holes", lambda p: (
    p.add_argument("path"), p.add_argument("--flows", action="store_true",
                                       help="one row per flow instead: starts, end steps, dead ends (never listed "
                                            "as end steps), steps, artifacts, owners, holes"),
    p.add_argument("--csv", action="store_true"),
    p.add_argument("--lanes", action="store_true",
                   help="a step in a BPMN pool needs a lane of its own (default: the pool's participant owns it)"),
    p.add_argument("--format", choices=("text", "bpmn"), default="text",
                   help="bpmn: write the ingested BPMN diagrams back with their holes coloured (needs --out)"),
    p.add_argument("--out", help="with --format bpmn: the .bpmn file to write (a folder when the bank holds several diagrams)"),
    p.add_argument("--html", metavar="FILE", help="also write the flows diagram (lanes, holes by kind and severity, "
                                                  "a legend) and the holes table as an offline HTML page"),
    p.add_argument("--source", help="with --format bpmn: the .bpmn file or folder, when it moved since the ingest"),
))
