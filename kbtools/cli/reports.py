"""Text renderings of import and ingest reports, shared by ``kb import``, ``kb ingest`` and ``kb demo --peps``."""

from __future__ import annotations

__all__ = ["flagged_text", "format_ingest"]


def flagged_text(flagged: list[dict], show: int = 10) -> str:
    """Lines listing the rows the guard flagged (imported all the same)."""
    if not flagged:
        return ""
    lines = [f"\nthe guard flagged {len(flagged)} row(s) (imported; --guard reject refuses them):"]
    lines += [f"  row {r['row']} {r['id']}: {r['reason']}" for r in flagged[:show]]
    if len(flagged) > show:
        lines.append(f"  ... and {len(flagged) - show} more (--json lists all)")
    return "\n".join(lines)


def format_ingest(r: dict) -> str:
    """The ingest report as text."""
    if "documents" not in r:  # another importer's report (BPMN): broken elements one a line
        lines = [f"{k}: {v}" for k, v in r.items() if k != "broken"]
        broken = r.get("broken") or []
        if broken:
            lines.append(f"broken: {len(broken)} element(s) left out (listed in kb holes as broken_reference; "
                         f"--strict refuses such a file):")
            lines += [f"  {b['file'].rsplit('/', 1)[-1]} {b['element'] or '(no id)'}: {b['problem']}" for b in broken]
        return "\n".join(lines)
    verb = "would write" if r.get("dry_run") else "wrote"
    lines = [f"{r['source']}: {r['documents']} documents -> {verb} {r['entries']} entries "
             f"({r['already_present']} already present, {r['sections_split']} sections split at the size cap), "
             f"{r['edges_written']} edges",
             "  edges by type: " + (", ".join(f"{k} {v}" for k, v in r["edges"].items()) or "none")]
    for m in r.get("mappings", []):
        lines.append(f"  mapping {m}")
    unresolved = r.get("unresolved") or []
    if unresolved:
        lines.append(f"  unresolved references: {len(unresolved)}: "
                     + "; ".join(f"{u['doc']} {u['field']}={u['value']}" for u in unresolved[:8])
                     + (" ..." if len(unresolved) > 8 else ""))
    left = r.get("left_out") or []
    if left:
        lines.append(f"  left out: {len(left)} record(s) without text: "
                     + "; ".join(f"line {x['line']} ({x['key']}): {x['why']}" for x in left[:8])
                     + (" ..." if len(left) > 8 else ""))
    markup = r.get("markup_only") or []
    if markup:
        lines.append(f"  left out: {len(markup)} section(s) of markup only, nothing to read here (.. contents::, "
                     "a directive that renders another file): "
                     + "; ".join(markup[:6]) + (" ..." if len(markup) > 6 else ""))
    included = r.get("included") or {}
    if included:
        lines.append(f"  included: {len(included)} file(s) read into the pages that include them (.. include::), "
                     "no entries of their own: " + ", ".join(sorted(included)[:8])
                     + (" ..." if len(included) > 8 else ""))
    empty = r.get("empty_messages") or []
    if empty:
        lines.append(f"  left out: {len(empty)} commit(s) with an empty message: "
                     + ", ".join(e[:12] for e in empty[:8])
                     + (" ..." if len(empty) > 8 else ""))
    links = r.get("links")
    if links and links["references_found"]:
        labels = links.get("unresolved_labels") or []
        lines.append(f"  links between the files: {links['references_found']} found, {links['resolved']} cites edges "
                     f"for kb backfill, to files not ingested: "
                     + (", ".join(links["unresolved_keys"][:8]) or "none")
                     + (" ..." if len(links["unresolved_keys"]) > 8 else "")
                     + (f"; to labels no file or more than one defines: {', '.join(labels[:8])}"
                        + (" ..." if len(labels) > 8 else "") if labels else ""))
    c = r.get("citations")
    if c:
        lines.append(f"  citations ({c['pattern']}): {c['references_found']} references, {c['resolved']} cites edges "
                     f"for kb backfill, {c['own_document']} to their own document, unresolved keys: "
                     + (", ".join(c["unresolved_keys"][:12]) or "none")
                     + (" ..." if len(c["unresolved_keys"]) > 12 else ""))
    return "\n".join(lines)
