"""Large synthetic demo banks for benchmarks, built with vectorised numpy and polars.

Pseudo-word topics, about two trusted edges per entry and small complete process flows.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from kbtools.errors import ValidationError
from kbtools.model.schema import conform, empty

from kbtools.demo.rows import GENERATOR, REFERENCE_US, DemoBank, created_times, hex_ids, utc_series

__all__ = ["synthetic_bank"]


_SYN_KINDS = ["knowledge", "procedure", "playbook", "lesson", "fact", "decision", "event"]
_SYN_KIND_P = [0.35, 0.15, 0.08, 0.15, 0.15, 0.07, 0.05]
_SYN_DOMINANCE = ["supersedes", "corrects", "clarifies", "part_of", "split_from", "derived_from"]
_SYN_RELATIONS = ["see_also", "cites", "informs", "applies_to", "refines", "learned_from", "resolves", "follows"]
_SYN_NOTES = ["Read before changing {} there.", "The {} step in that entry depends on this.",
              "Covers the {} case of that entry."]
_FLOW_SIZE = 7  # five steps, one artifact, one role


def synthetic_bank(*, entries: int, seed: int = 7) -> DemoBank:
    """A large vocabulary-generated bank for benchmarks, built with vectorised numpy and polars.

    About ``entries / 30`` topics of pseudo-words, about two trusted edges per entry (some
    dominance edges inside topics), and one small complete process flow per 2,000 entries.

    >>> bank = synthetic_bank(entries=3000, seed=2)
    >>> bank.entries.height, bank.edges.height > 4000
    (3000, True)
    """
    if not isinstance(entries, int) or entries < 1:
        raise ValidationError("entries", entries, "must be a positive integer")
    rng = np.random.default_rng(seed)
    ids = np.array(hex_ids(rng, entries))
    n_flows = entries // 2000
    n_text = entries - _FLOW_SIZE * n_flows
    n_topics = max(1, n_text // 30)
    vocab = _pseudo_words(rng, max(2000, 4 * n_topics + 1000))
    topic_words = rng.integers(0, vocab.len(), size=(n_topics, 10))
    topic = rng.integers(0, n_topics, size=n_text)
    created = created_times(rng, entries)
    text = _synthetic_entries(rng, ids[:n_text], topic, topic_words, vocab, created[:n_text])
    edges = _synthetic_edges(rng, ids[:n_text], topic, topic_words, vocab, created[:n_text])
    flows, flow_edges = _synthetic_flows(ids[n_text:], created[n_text:], n_flows)
    entries_frame = conform(pl.concat([text, flows], how="diagonal_relaxed"), "entries").sort("created_at", "id")
    edges_frame = conform(pl.concat([edges, flow_edges], how="diagonal_relaxed"), "edges").sort(
        "created_at", "src", "dst", "type")
    picked = rng.permutation(n_topics)[: min(50, n_topics)].tolist()
    members = pl.DataFrame({"id": ids[:n_text], "topic": topic}).group_by("topic").agg("id")
    relevant = dict(zip(members["topic"].to_list(), members["id"].to_list()))
    queries = [{"id": f"q{i:03d}", "query": " ".join(vocab.gather(topic_words[t, :3]).to_list()),
                "relevant": sorted(relevant.get(t, [])), "topic": f"topic-{t:05d}"}
               for i, t in enumerate(picked, 1)]
    truth = {"bank": "synthetic", "seed": seed, "generator": GENERATOR, "topics": n_topics,
             "queries": queries, "hop_tasks": [], "holes": []}
    return DemoBank("synthetic", entries_frame, edges_frame, empty("triples"), truth)


def _pseudo_words(rng: np.random.Generator, n: int) -> pl.Series:
    """``n`` distinct three-syllable pseudo-words."""
    syllables = np.array([c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"])
    parts = syllables[rng.integers(0, syllables.size, size=(2 * n, 3))]
    words = np.char.add(np.char.add(parts[:, 0], parts[:, 1]), parts[:, 2])
    _, first = np.unique(words, return_index=True)
    return pl.Series("word", words[np.sort(first)][:n])


def _synthetic_entries(rng, ids, topic, topic_words, vocab: pl.Series, created) -> pl.DataFrame:
    n = ids.size
    slots = topic_words[topic[:, None], rng.integers(0, topic_words.shape[1], size=(n, 8))]
    general = rng.integers(0, vocab.len(), size=(n, 3))
    words = {f"w{j}": vocab.gather(slots[:, j]) for j in range(8)}
    words |= {f"g{j}": vocab.gather(general[:, j]) for j in range(3)}
    words["sys"] = vocab.gather(topic_words[topic, 0])
    words["task"] = vocab.gather(topic_words[topic, 1])
    kinds = np.array(_SYN_KINDS)[rng.choice(len(_SYN_KINDS), size=n, p=_SYN_KIND_P)]
    sessions = np.array([f"sess-{v:06x}" for v in rng.integers(0, 2**24, size=max(1, n // 5)).tolist()])
    rewritten = rng.random(n) < 1 / 3
    updated = created + (rewritten * rng.uniform(0, 0.6, n) * (REFERENCE_US - created)).astype(np.int64)
    summary = pl.format("The {} {} changes how {} handles {}.", "w0", "w1", "w2", "g0")
    return pl.DataFrame(words).with_columns(
        id=pl.Series(ids), kind=pl.Series(kinds),
        title=pl.format("{} {} {}", "w0", "w1", "g1"),
        summary=summary,
        content=pl.concat_str([summary, pl.format(" When {} meets {}, check {} before {}.", "w3", "w4", "w5", "g2"),
                               pl.format(" Teams saw {} and {} together during {}.", "w6", "w7", "task")]),
        useful_for=pl.format("Useful when working on {} {}.", "w0", "w2"),
        systems=pl.concat_list("sys"), tasks=pl.concat_list("task"),
        steps=pl.when(pl.Series(kinds) == "playbook")
        .then(pl.concat_list(pl.format("Check {}.", "w2"), pl.format("Adjust {}.", "w3"), pl.format("Verify {}.", "w4")))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
        metadata=pl.lit("{}"), session_id=pl.Series(sessions[rng.integers(0, sessions.size, size=n)]),
        created_at=utc_series("created_at", created), updated_at=utc_series("updated_at", updated),
        usage_count=pl.lit(0, dtype=pl.Int64), status=pl.lit("active"),
    )


def _synthetic_edges(rng, ids, topic, topic_words, vocab: pl.Series, created) -> pl.DataFrame:
    """Two edges per entry: one to a topic sibling, one to a sibling (90%) or anyone (10%)."""
    n = ids.size
    order = np.argsort(topic, kind="stable")
    sizes = np.bincount(topic, minlength=topic_words.shape[0])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n) - starts[topic[order]]

    def sibling() -> np.ndarray:
        size = sizes[topic]
        step = rng.integers(1, np.maximum(size, 2))
        return order[starts[topic] + (pos + step) % size]

    anyone = rng.random(n) < 0.1
    a = np.concatenate([np.arange(n), np.arange(n)])
    b = np.concatenate([sibling(), np.where(anyone, rng.integers(0, n, size=n), sibling())])
    same = topic[a] == topic[b]
    newer = (created[a] > created[b]) | ((created[a] == created[b]) & (a > b))
    src, dst = np.where(newer, a, b), np.where(newer, b, a)
    dominance = same & (rng.random(a.size) < 0.25)
    types = np.where(dominance, np.array(_SYN_DOMINANCE)[rng.integers(0, len(_SYN_DOMINANCE), a.size)],
                     np.array(_SYN_RELATIONS)[rng.integers(0, len(_SYN_RELATIONS), a.size)])
    source = np.array(["author", "judge", "import"])[rng.choice(3, size=a.size, p=[0.85, 0.1, 0.05])]
    by = np.where(source == "author", np.char.add("agent-", rng.integers(1, 13, a.size).astype(str)),
                  np.where(source == "judge", "judge", "import"))
    template = rng.integers(0, len(_SYN_NOTES), a.size)
    word = vocab.gather(topic_words[topic[dst], rng.integers(0, topic_words.shape[1], a.size)])
    note = pl.when(pl.lit(pl.Series(rng.random(a.size) < 0.5))).then(None)
    for k, text in enumerate(_SYN_NOTES):
        note = note.when(pl.lit(pl.Series(template == k))).then(pl.format(text, pl.lit(word)))
    at = np.maximum(created[src], created[dst]) + rng.integers(60, 36_000, a.size) * 1_000_000
    frame = pl.DataFrame({"src": ids[src], "dst": ids[dst], "type": types, "source": source, "created_by": by,
                          "created_at": at}).with_columns(
        note=note.otherwise(None), evidence=pl.lit("{}"), weight=pl.lit(1.0),
        created_at=utc_series("created_at", at), seen_at=utc_series("seen_at", at))
    return frame.filter(pl.col("src") != pl.col("dst")).unique(["src", "dst", "type"], keep="first", maintain_order=True)


def _synthetic_flows(ids, created, n_flows: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``n_flows`` complete five-step flows: start to end, every step owned, one artifact passed along."""
    entries, edges = [], []
    for f in range(n_flows):
        name = f"flow-{f + 1:04d}"
        block = ids[_FLOW_SIZE * f: _FLOW_SIZE * (f + 1)].tolist()
        at = created[_FLOW_SIZE * f: _FLOW_SIZE * (f + 1)].tolist()
        steps, artifact, role = block[:5], block[5], block[6]
        for k, id_ in enumerate(steps):
            meta = {"flow": name, **({"start": True} if k == 0 else {}), **({"end": True} if k == 4 else {})}
            entries.append(("step", f"Step {k + 1} of {name}", meta, id_, at[k]))
        entries.append(("artifact", f"Work item of {name}", {"flow": name}, artifact, at[5]))
        entries.append(("role", f"Owner of {name}", {"flows": [name]}, role, at[6]))
        edges += [(s, t, "precedes") for s, t in zip(steps, steps[1:])]
        edges += [(s, role, "owned_by") for s in steps]
        edges += [(steps[0], artifact, "produces"), (steps[2], artifact, "requires")]
    if not entries:
        return empty("entries"), empty("edges")
    kind, title, meta, id_, at = zip(*entries)
    flows = pl.DataFrame({"id": id_, "kind": kind, "title": title,
                          "metadata": [json.dumps(m, sort_keys=True) for m in meta]}).with_columns(
        summary=pl.col("title") + ".", content=pl.col("title") + ", part of a generated process flow.",
        useful_for=pl.lit("Benchmarking process walks."), systems=pl.lit([], dtype=pl.List(pl.String)),
        tasks=pl.lit([], dtype=pl.List(pl.String)), steps=pl.lit([], dtype=pl.List(pl.String)),
        session_id=pl.lit("import-flows"), created_at=utc_series("created_at", list(at)),
        updated_at=utc_series("updated_at", list(at)), usage_count=pl.lit(0, dtype=pl.Int64),
        status=pl.lit("active"))
    when = dict(zip(id_, at))
    src, dst, type_ = zip(*edges)
    edge_at = [max(when[s], when[t]) + 60_000_000 for s, t in zip(src, dst)]
    flow_edges = pl.DataFrame({"src": src, "dst": dst, "type": type_}).with_columns(
        source=pl.lit("import"), note=pl.lit(None, dtype=pl.String), evidence=pl.lit("{}"), weight=pl.lit(1.0),
        created_by=pl.lit("import:process-map"), created_at=utc_series("created_at", edge_at),
        seen_at=utc_series("seen_at", edge_at))
    return conform(flows, "entries"), conform(flow_edges, "edges")
