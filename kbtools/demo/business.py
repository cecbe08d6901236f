"""The business-process demo bank: flows, roles, artifacts and linked policies with planted holes.

Turns the specifications of :mod:`.flows` into entries and process edges.
"""

from __future__ import annotations

import numpy as np

from kbtools.demo.flows import BUSINESS_QUERIES, FLOWS, POLICIES
from kbtools.demo.rows import DAY_US, GENERATOR, REFERENCE_US, BankRows, DemoBank, hex_ids, pick, triples_frame

__all__ = ["business_bank"]


def business_bank(*, seed: int = 7) -> DemoBank:
    """Eight business process flows with planted holes, roles, artifacts and linked policies.

    The flows follow the process-flow conventions (``step``/``decision``/``artifact``/``role``
    kinds, ``precedes``/``produces``/``requires``/``owned_by`` edges, start/end/input/output
    declarations in metadata). ``truth["holes"]`` lists every planted hole; nothing else is one.

    >>> bank = business_bank(seed=1)
    >>> sorted({h["hole"] for h in bank.truth["holes"]})[:3]
    ['closed_loop', 'dead_end', 'deadlock']
    """
    rng = np.random.default_rng(seed)
    role_flows: dict[str, list[str]] = {}
    for flow, spec in FLOWS.items():
        for *_, role, _flags in spec["steps"]:
            if role is not None and flow not in role_flows.setdefault(role, []):
                role_flows[role].append(flow)
    size = len(role_flows) + sum(len(s["steps"]) + len(s["artifacts"]) for s in FLOWS.values()) + len(POLICIES)
    rows = BankRows(rng, hex_ids(rng, size))
    importer = dict(source="import", by="import:process-map")
    roles = {role: rows.entry(kind="role", title=role, summary=f"The {role} owns steps in {', '.join(flows)}.",
                              content=f"The {role} role. Owns steps in the {', '.join(flows)} flows.",
                              useful_for=f"Finding who does what in {', '.join(flows)}.", systems=["hris"],
                              metadata={"flows": flows}, session="import-2026-10")
             for role, flows in role_flows.items()}
    ids: dict[tuple[str, str], str] = {}
    for flow, spec in FLOWS.items():
        ids.update(_flow_rows(rows, flow, spec, roles, importer))
    policies = {}
    for key, title, summary, links in POLICIES:
        policies[key] = rows.entry(kind="knowledge", title=title, summary=summary,
                                   content=f"{summary} Owned by finance operations; reviewed every quarter.",
                                   useful_for=f"Applying the {title.lower()}.", systems=["policy-wiki"],
                                   tasks=sorted({flow for _, flow, _, _ in links}), session="policy-import")
        for type_, flow, step, note in links:
            rows.edge(policies[key], ids[(flow, step)], type_, note=note, by=pick(rng, ["agent-2", "agent-6"]))
    holes = [{"id": ids[(flow, key)], "flow": flow, "hole": hole}
             for flow, spec in FLOWS.items() for key, hole in spec["holes"]]
    queries = [{"id": f"q{i:03d}", "query": q,
                "relevant": [policies[r] if isinstance(r, str) else ids[r] for r in refs],
                "topic": _query_topic(refs)}
               for i, (q, refs) in enumerate(BUSINESS_QUERIES, 1)]
    entries, edges = rows.frames()
    triples = triples_frame([(role, "works_in", flow, "import:process-map", REFERENCE_US - 200 * DAY_US)
                             for role, flows in role_flows.items() for flow in flows])
    truth = {"bank": "business", "seed": seed, "generator": GENERATOR, "queries": queries,
             "hop_tasks": [], "holes": holes}
    return DemoBank("business", entries, edges, triples, truth)


def _query_topic(refs) -> str:
    flows = [r[0] for r in refs if not isinstance(r, str)]
    return flows[0] if flows else "policies"


def _flag(flag: str) -> tuple[str, object]:
    """A step flag as a metadata item: ``"end"`` is ``("end", True)``, ``"gateway=parallel"`` is
    ``("gateway", "parallel")``."""
    key, _, value = flag.partition("=")
    return key, value or True


def _flow_rows(rows: BankRows, flow: str, spec: dict, roles: dict, importer: dict) -> dict[tuple[str, str], str]:
    """One flow's step, decision and artifact entries and its process edges."""
    ids: dict[tuple[str, str], str] = {}
    labels = {}
    for src, _, label in spec["precedes"]:
        if label is not None:
            labels.setdefault(src, []).append(label)
    for key, kind, title, summary, role, flags in spec["steps"]:
        meta = {"flow": flow, **dict(_flag(f) for f in sorted(flags))}
        owner = f" Owned by the {role}." if role else ""
        branches = f" Branches: {', '.join(labels.get(key, []))}." if kind == "decision" else ""
        ids[(flow, key)] = rows.entry(kind=kind, title=title, summary=summary,
                                      content=f"{summary}{owner}{branches} Part of the {flow} flow.",
                                      useful_for=f"Walking through the {flow} flow.", systems=spec["systems"],
                                      tasks=[flow], metadata=meta, session=f"import-{flow}")
    for key, title, summary, flags in spec["artifacts"]:
        meta = {"flow": flow, **{flag: True for flag in sorted(flags)}}
        ids[(flow, key)] = rows.entry(kind="artifact", title=title, summary=summary,
                                      content=f"{summary} Used in the {flow} flow.",
                                      useful_for=f"Knowing what the {flow} flow passes along.",
                                      systems=spec["systems"], tasks=[flow], metadata=meta, session=f"import-{flow}")
    for key, _, _, _, role, _ in spec["steps"]:
        if role is not None:
            rows.edge(ids[(flow, key)], roles[role], "owned_by", **importer)
    for src, dst, label in spec["precedes"]:
        rows.edge(ids[(flow, src)], ids[(flow, dst)], "precedes", note=label, **importer)
    for type_ in ("produces", "requires"):
        for step, art in spec[type_]:
            rows.edge(ids[(flow, step)], ids[(flow, art)], type_, **importer)
    return ids
