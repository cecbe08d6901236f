"""The engineering-team demo bank: clusters, filler entries, agent edges, citations and triples.

Puts together the worked examples (:mod:`.worked`), redundant clusters, the hop lab
(:mod:`.hoplab`) and template-filled entries over the topics of :mod:`.catalog`.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from kbtools.errors import ValidationError

from kbtools.demo.catalog import (
    CITE_PHRASES, CONDITIONS, DRAWN_KINDS, ENVS, FILLER_TYPES, FILLER_WEIGHTS, KIND_WEIGHTS, MAX_TOPICS, MONTHS,
    SENTENCES, STEPS, SUMMARIES, SYMPTOMS, TITLES, TOPIC_LIST, USEFUL,
)
from kbtools.demo.hoplab import HOPS, add_hop_lab
from kbtools.demo.planted import plant_judge_pairs
from kbtools.demo.rows import GENERATOR, BankRows, DemoBank, capitalised, created_times, hex_ids, pick, triples_frame
from kbtools.demo.worked import add_worked_examples

__all__ = ["engineering_bank"]


def engineering_bank(*, seed: int = 7, entries: int = 2000, topics: int = 60) -> DemoBank:
    """A realistic engineering-team bank with clusters, citations, dedup metadata and a hop lab.

    ``truth`` holds a query log (``queries``: query, relevant ids, topic), the hop-lab tasks
    (``hop_tasks``: a strong match A, one trusted edge to a poor match B that alone holds the
    task's proof token; three are marked ``leaky``: their token also sits in the edge note) and
    ``holes`` (empty for this bank) and the judge's planted pairs (``judge_pairs``: duplicates,
    corrections, splits and near-misses, see :mod:`.planted`).

    >>> bank = engineering_bank(seed=1, entries=500, topics=12)
    >>> bank.entries.height, len(bank.truth["hop_tasks"]) >= 30
    (500, True)
    """
    if not 1 <= topics <= MAX_TOPICS:
        raise ValidationError("topics", topics, f"must be between 1 and {MAX_TOPICS}")
    catalog = TOPIC_LIST[:topics]
    n_clusters = max(topics, 40)
    minimum = 10 + 2 * len(HOPS) + 4 * n_clusters + 3 * topics
    if entries < minimum:
        raise ValidationError("entries", entries, f"must be at least {minimum} for {topics} topics")
    rng = np.random.default_rng(seed)
    rows = BankRows(rng, hex_ids(rng, entries))
    sessions = [f"sess-{v:06x}" for v in rng.integers(0, 2**24, size=max(8, entries // 5)).tolist()]
    agents = [f"agent-{k}" for k in range(1, 13)]

    queries = add_worked_examples(rows, sessions)
    queries += _clusters(rows, rng, catalog, n_clusters, sessions, agents)
    hop_tasks = add_hop_lab(rows, rng, sessions, agents)
    filler, topic_of = _filler(rows, rng, catalog, entries - len(rows.entries), sessions)
    _filler_edges(rows, rng, catalog, filler, topic_of, agents)
    _cite_and_tag(rows, rng, catalog, filler, topic_of, entries)
    judge_pairs = plant_judge_pairs(rows, seed, filler)  # last, with its own generator: nothing else moves

    entries_frame, edges_frame = rows.frames()
    triples = _engineering_triples(rng, catalog, agents)
    for i, q in enumerate(queries, 1):
        q["id"] = f"q{i:03d}"
    truth = {"bank": "engineering", "seed": seed, "generator": GENERATOR,
             "queries": [{"id": q["id"], "query": q["query"], "relevant": q["relevant"], "topic": q["topic"]}
                         for q in queries],
             "hop_tasks": hop_tasks, "holes": [], "judge_pairs": judge_pairs}
    return DemoBank("engineering", entries_frame, edges_frame, triples, truth)


def _context(topic, rng: np.random.Generator) -> dict:
    """Template values for one entry of ``topic``: three distinct terms, an environment, a number."""
    system, aspect, task, terms = topic
    a, b, c = (terms[i] for i in rng.permutation(len(terms))[:3])
    return dict(S=system, A=aspect, T=task, a=a, b=b, c=c, env=pick(rng, ENVS),
                n=int(pick(rng, [2, 3, 5, 10, 30, 64, 128, 300, 1024])), m=pick(rng, MONTHS))


def _fill(template: str, topic, rng: np.random.Generator) -> str:
    return template.format(**_context(topic, rng))


def _clusters(rows, rng, catalog, n_clusters, sessions, agents) -> list[dict]:
    """Redundant groups: a gotcha, its correction, a clarification, sometimes a see_also sibling."""
    queries, used = [], set()
    for k in range(n_clusters):
        topic = catalog[k % len(catalog)]
        system, aspect, task, terms = topic
        while True:
            a, sym = pick(rng, terms), pick(rng, SYMPTOMS)
            if (system, aspect, a, sym) not in used:
                used.add((system, aspect, a, sym))
                break
        b, c = [t for t in terms if t != a][:2]
        wrong, right = (CONDITIONS[i] for i in rng.permutation(len(CONDITIONS))[:2])
        env, env2 = (ENVS[i] for i in rng.permutation(len(ENVS))[:2])
        times = iter(sorted(created_times(rng, 4).tolist()))
        ctx = dict(S=system, A=aspect, T=task, a=a, b=b, c=c, sym=sym, env=env, env2=env2, wrong=wrong, right=right)
        common = dict(systems=[system], tasks=[task])
        gotcha = rows.entry(
            kind="lesson", title=capitalised("Gotcha: {a} {sym} during {T} on {S}".format(**ctx)),
            summary=capitalised("{a} causes {sym} during {T} on {S} when {b} {wrong}.".format(**ctx)),
            content=capitalised("{a} causes {sym} during {T} on {S} when {b} {wrong}. The workaround we used was to "
                                "restart the {S} job and retry {T}. ".format(**ctx)) + capitalised(_fill(pick(rng, SENTENCES), topic, rng)),
            useful_for=capitalised("Useful when {T} on {S} shows {sym}.".format(**ctx)),
            session=pick(rng, sessions), at=next(times), **common)
        correction = rows.entry(
            kind="knowledge", title=capitalised("Correction: what really triggers {a} {sym} during {T}".format(**ctx)),
            summary=capitalised("The {a} {sym} during {T} on {S} are triggered when {b} {right}, not when it {wrong}.".format(**ctx)),
            content=capitalised("The {a} {sym} during {T} on {S} are triggered when {b} {right}, not when it {wrong}. "
                                "Restarting still clears the symptom, but fixing {b} stops it coming back.".format(**ctx)),
            useful_for=capitalised("Diagnosing {a} {sym} on {S}.".format(**ctx)),
            session=pick(rng, sessions), at=next(times), **common)
        clarification = rows.entry(
            kind="knowledge", title=capitalised("Clarification: {a} {sym} on {env} only".format(**ctx)),
            summary=capitalised("The {b} trigger for {a} {sym} applies to {env}; other environments set {b} differently.".format(**ctx)),
            content=capitalised("The {b} trigger for {a} {sym} during {T} applies to {env}; other environments set {b} "
                                "differently, so the symptom does not reproduce there.".format(**ctx)),
            useful_for=capitalised("Knowing whether the {a} {sym} fix applies to your environment.".format(**ctx)),
            session=pick(rng, sessions), at=next(times), **common)
        rows.edge(correction, gotcha, "corrects", by=pick(rng, agents),
                  note="The trigger named in that gotcha is wrong; its workaround still applies.")
        rows.edge(clarification, correction, "clarifies", by=pick(rng, agents),
                  note=capitalised("Scopes that correction to {env}.".format(**ctx)) if rng.random() < 0.8 else None)
        relevant = [gotcha, correction, clarification]
        if rng.random() < 0.5:
            sibling = rows.entry(
                kind="knowledge", title=capitalised("{a} {sym} during {T}: the {env2} variant".format(**ctx)),
                summary=capitalised("The same {a} {sym} appear in {env2} when {c} {right}.".format(**ctx)),
                content=capitalised("The same {a} {sym} during {T} appear in {env2} when {c} {right}; the {S} fix is the "
                                    "same but has to be applied to {c}.".format(**ctx)),
                useful_for=capitalised("Seeing {a} {sym} in {env2}.".format(**ctx)),
                session=pick(rng, sessions), at=next(times), **common)
            rows.edge(sibling, gotcha, "see_also", by=pick(rng, agents),
                      note=capitalised("Same symptom from the {c} side.".format(**ctx)) if rng.random() < 0.5 else None)
            relevant.append(sibling)
        phrasing = pick(rng, ["why do we get {a} {sym} during {T} on {S}", "{S} {a} {sym} during {T}",
                              "what causes {a} {sym} when running {T} on {S}"])
        queries.append({"query": phrasing.format(**ctx), "relevant": relevant, "topic": f"{system}/{aspect}"})
    return queries


def _filler(rows: BankRows, rng: np.random.Generator, catalog, n: int, sessions) -> tuple[list[str], dict[str, int]]:
    """``n`` ordinary entries over the topics (at least three per topic); returns ids and topic index."""
    topic_idx = rng.integers(0, len(catalog), size=n)
    topic_idx[: 3 * len(catalog)] = np.arange(3 * len(catalog)) % len(catalog)
    kinds = rng.choice(len(DRAWN_KINDS), size=n, p=KIND_WEIGHTS)
    ids, topic_of = [], {}
    for t, kind_i in zip(topic_idx.tolist(), kinds.tolist()):
        topic, kind = catalog[t], DRAWN_KINDS[kind_i]
        ctx = _context(topic, rng)
        summary = capitalised(SUMMARIES[kind].format(**ctx))
        picked = rng.permutation(len(SENTENCES))[: int(rng.integers(2, 4))]
        steps = [capitalised(s.format(**ctx)) for s in STEPS[: int(rng.integers(3, 6))]] if kind == "playbook" else []
        id_ = rows.entry(
            kind=kind, title=capitalised(pick(rng, TITLES[kind]).format(**ctx)), summary=summary,
            content=" ".join([summary] + [capitalised(SENTENCES[j].format(**ctx)) for j in picked]),
            useful_for=capitalised(pick(rng, USEFUL).format(**ctx)), systems=[topic[0]], tasks=[topic[2]],
            steps=steps, session=pick(rng, sessions))
        ids.append(id_)
        topic_of[id_] = t
    return ids, topic_of


def _by_topic(filler: list[str], topic_of: dict[str, int]) -> dict[int, list[str]]:
    groups: dict[int, list[str]] = {}
    for id_ in filler:
        groups.setdefault(topic_of[id_], []).append(id_)
    return groups


def _filler_edges(rows: BankRows, rng, catalog, filler, topic_of, agents) -> None:
    """Agent-authored edges inside topics; the newer entry is the source, so dominance stays acyclic."""
    groups = _by_topic(filler, topic_of)
    types = list(FILLER_TYPES)
    weights = np.array(FILLER_WEIGHTS, dtype=float) / sum(FILLER_WEIGHTS)
    wanted, made = round(0.12 * len(filler)), 0
    for _ in range(4 * wanted):  # bounded: duplicates are skipped
        if made >= wanted:
            break
        x = pick(rng, filler)
        members = groups[topic_of[x]]
        y = pick(rng, members)
        if x == y:
            continue
        src, dst = (x, y) if (rows.at[x], x) > (rows.at[y], y) else (y, x)
        type_ = types[int(rng.choice(len(types), p=weights))]
        note = pick(rng, FILLER_TYPES[type_])
        if note is not None and rng.random() < 0.3:
            note = None
        elif note is not None:
            note = note.format(**_context(catalog[topic_of[x]], rng))
        if rows.edge(src, dst, type_, note=note, by=pick(rng, agents)):
            made += 1
            if type_ == "supersedes":
                rows.row[dst]["status"] = "superseded"


def _cite_and_tag(rows: BankRows, rng, catalog, filler, topic_of, total: int) -> None:
    """Prose citations by id or unique 7-char prefix (~5% of entries) and dedup metadata (~10%)."""
    groups = _by_topic(filler, topic_of)
    prefix_count: dict[str, int] = {}
    for id_ in rows.row:
        prefix_count[id_[:7]] = prefix_count.get(id_[:7], 0) + 1

    def other(src: str, same_topic: bool) -> str:
        pool = groups[topic_of[src]] if same_topic and len(groups[topic_of[src]]) > 1 else filler
        for _ in range(100):
            target = pick(rng, pool)
            if target != src:
                return target
        raise RuntimeError("no other entry to point at")  # unreachable: validated sizes

    n_cite = min(len(filler), max(0, round(0.05 * total) - 1))  # the worked example cites one too
    for i in rng.choice(len(filler), size=n_cite, replace=False).tolist():
        src = filler[i]
        target = other(src, rng.random() < 0.7)
        ref = target[:7] if rng.random() < 0.2 and prefix_count[target[:7]] == 1 else target
        _, aspect, _, terms = catalog[topic_of[target]]
        phrase = aspect if rng.random() < 0.5 else pick(rng, terms)
        rows.row[src]["content"] += " " + pick(rng, CITE_PHRASES).format(ref=ref, p=phrase)

    n_meta = min(len(filler), round(0.10 * total))
    for i in rng.choice(len(filler), size=n_meta, replace=False).tolist():
        src = filler[i]
        key = pick(rng, ["split_from", "replaces", "recovered_from", "supersedes"])
        target = other(src, True)
        rows.row[src]["metadata"] = json.dumps({key: target}, sort_keys=True)
        if key in ("replaces", "supersedes"):
            rows.row[target]["status"] = "superseded"


def _engineering_triples(rng, catalog, agents) -> pl.DataFrame:
    rows = []
    for system, _, task, terms in catalog:
        at = created_times(rng, 3).tolist()
        rows += [(system, "has_component", terms[0], pick(rng, agents), at[0]),
                 (system, "has_component", terms[1], pick(rng, agents), at[1]),
                 (terms[0], "affects", task, pick(rng, agents), at[2])]
    at = created_times(rng, 4).tolist()
    rows += [("playwright", "logs_in_via", "storage state", "agent-3", at[0]),
             ("admin-api", "issues", "session cookie", "agent-3", at[1]),
             ("kanban", "uses_label", "hold-until", "agent-7", at[2]),
             ("kanban", "uses_label", "dated dispatch", "agent-7", at[3])]
    return triples_frame(rows)
