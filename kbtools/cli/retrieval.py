"""``kb query|recall|embed``: answers from a bank."""

from __future__ import annotations

import sys

from kbtools.model.config import QUERY_DEFAULTS
from kbtools.cli.base import command, progress as _progress, register_args

__all__: list[str] = []

def _open(args):
    """The bank of a reading command: read-only with ``--readonly``; with ``--embed`` entries
    without vectors are embedded first (an explicit write; a read never embeds by itself)."""
    from kbtools.ops.embedding import embed_bank
    from kbtools.store.bank import open_bank
    from kbtools.store.vectors import entry_vectors

    bank = open_bank(args.path, readonly=args.readonly)
    if args.embed and bank.entries.height and len(entry_vectors(bank)[0]) < bank.entries.height:
        print(f"embedding {bank.entries.height - len(entry_vectors(bank)[0])} entries of {bank.path} "
              "(once; cached by text hash)", file=sys.stderr, flush=True)
        embed_bank(bank, progress=_progress("embed"))
    return bank


def _index_kinds() -> tuple[str, ...]:
    from kbtools.model.config import INDEX_KINDS

    return INDEX_KINDS


def _embedder_names() -> tuple[str, ...]:
    from kbtools.model.config import EMBEDDER_ALIASES, EMBEDDER_NAMES

    return (*EMBEDDER_NAMES, *sorted(EMBEDDER_ALIASES))


def _reading_args(p) -> None:
    p.add_argument("--readonly", action="store_true", help="open the bank read-only: nothing is written, usage included")
    p.add_argument("--embed", action="store_true",
                   help="embed entries without vectors first (a write; without it such a bank is an error)")


@command("query", "answer a question from a bank, folded (default) or flat")
def _query(args):
    """Answer a question the way an agent reads it: results with their folded pointers and the
    neighbours one hop away. A query never writes the bank: it takes no lock (usage goes to an
    append-only log) and never embeds; run `kb embed PATH` first, or pass --embed."""
    from kbtools.retrieval.pipeline import query

    bank = _open(args)
    if args.compare:
        flat = query(bank, args.text, k=args.k, fold=False, lexical=args.lexical, record_usage=False, index=args.index)
        folded = query(bank, args.text, k=args.k, fold=True, lexical=args.lexical, record_usage=False if args.no_usage else None, index=args.index)
        return {"flat": flat.to_dict(), "folded": folded.to_dict()}, side_by_side(flat, folded)
    ans = query(bank, args.text, k=args.k, fold=not args.no_fold, lexical=args.lexical,
                record_usage=False if args.no_usage else None, index=args.index)
    return ans.to_dict(), ans.text()


def side_by_side(flat, folded, width: int = 78) -> str:
    """The flat top-k beside the folded answer, as an agent would read each."""
    import textwrap

    def lines(ans, title):
        out = [title, "-" * len(title)]
        for r in ans.results:
            out += textwrap.wrap(f"{r.rank}. {r.title} [{r.id}]", width - 2, subsequent_indent="   ")
            for p in r.pointers():
                tag = p.kind
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
    p.add_argument("--k", type=int, default=QUERY_DEFAULTS.k, help=f"results to return (default {QUERY_DEFAULTS.k})"),
    p.add_argument("--no-fold", action="store_true", help="a flat top-k, without folding"),
    p.add_argument("--compare", action="store_true", help="print the flat top-k beside the folded answer"),
    p.add_argument("--lexical", action="store_true", help="add the BM25 arm (rare tokens, error strings, flags)"),
    p.add_argument("--index", default=QUERY_DEFAULTS.index, choices=_index_kinds(),
                   help="faiss index kind: auto (exact below 50,000 entries, hnsw from it, ivf_sq8 from 1,000,000, the default), "
                        "flat (exact), hnsw, hnsw_sq8, ivf, ivf_sq8, sq8"),
    p.add_argument("--no-usage", action="store_true", help="do not count usage for the returned results"),
    _reading_args(p),
))


@command("recall", "query, then spread activation over the links and explain how the entries connect")
def _recall(args):
    """Like query, then personalized PageRank from the results brings in linked entries, and a
    "How these entries connect" section explains the links."""
    from kbtools.ops.analytics import recall

    bank = _open(args)
    ans = recall(bank, args.text, links=args.links, k=args.k, record_usage=False if args.no_usage else None)
    return ans.to_dict(), ans.text()


register_args("recall", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("text", help="the question"),
    p.add_argument("--k", type=int, default=QUERY_DEFAULTS.k, help=f"results to return (default {QUERY_DEFAULTS.k})"),
    p.add_argument("--links", type=int, default=3, help="linked entries to bring in (default 3)"),
    p.add_argument("--no-usage", action="store_true", help="do not count usage for the returned results"),
    _reading_args(p),
))


@command("embed", "embed a bank's entries (only new or changed ones, or all with --rebuild)")
def _embed(args):
    """Embed entries whose vectors are missing or stale; --rebuild embeds all again (needed to
    switch embedders). Embedders: minilm-int8 (default), minilm-static (fast mode), hashing-char."""
    from kbtools.ops.embedding import embed_bank
    from kbtools.store.bank import open_bank

    out = embed_bank(open_bank(args.path), embedder=args.embedder, rebuild=args.rebuild, progress=_progress("embed"))
    return out, f"embedded {out['embedded']} of {out['entries']} entries with {out['embedder']}"


register_args("embed", lambda p: (
    p.add_argument("path", help="the bank folder"),
    p.add_argument("--embedder", choices=_embedder_names(),
                   help="minilm-int8, minilm-static or hashing-char (default: the bank's, else minilm-int8)"),
    p.add_argument("--rebuild", action="store_true", help="embed every entry again"),
))
