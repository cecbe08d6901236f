"""The nine memories of seed 001, section 1 (with section 4's wording), as a kbtools bank.

"line 3" is in four of them (the fault, the fix, the jam and the procedure), n = 9, and the entity
graph holds (Kioko, uses, pgvector). The fault, the fix and the jam share session s1 (the jam an hour
before the fault, the fix 30 s after it), which gives section 1's links section. ``SEED_COSINE`` holds
the offline embedder's cosines that section 4 quotes; every other pair is 0.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl

from kbtools.model.schema import conform, empty

T0 = dt.datetime(2026, 11, 1, 9, 0, tzinfo=dt.timezone.utc)

ID = {
    "goal": "a0000001",
    "decision": "a0000002",
    "procedure": "a0000003",
    "lesson": "a0000004",
    "jam": "a0000005",
    "fault": "a0000006",
    "fix": "a0000007",
    "tea": "a0000008",
    "plc": "a0000009",
}

_ROWS = [
    ("goal", "goal", "Goal: Ship the Kioko memory layer by December 15.", None, T0),
    ("decision", "decision", "Decision: Vector database - chose pgvector because we already run Postgres.", None,
     T0 + dt.timedelta(days=1)),
    ("procedure", "procedure",
     "Clear a conveyor jam on line 3: 1) Press stop; 2) Open the guard; 3) Remove the jammed bottle; 4) Reset the drive",
     None, T0 + dt.timedelta(days=2)),
    ("lesson", "lesson",
     "For clearing conveyor jams: reset the drive before reopening the guard (1/1 worked). "
     "Lesson: always check the photo-eye alignment after a jam", None, T0 + dt.timedelta(days=3)),
    ("jam", "event", "The line 3 conveyor jammed twice this morning.", "s1", T0 + dt.timedelta(days=10, hours=-1)),
    ("fault", "event", "Line 3 keeps faulting with error E-217.", "s1", T0 + dt.timedelta(days=10)),
    ("fix", "event", "Found it: the encoder cable on line 3 was loose.", "s1", T0 + dt.timedelta(days=10, seconds=30)),
    ("tea", "preference", "User likes green tea.", None, T0 + dt.timedelta(days=11)),
    ("plc", "fact", "The plant's PLC network uses the 10.20.0.0/16 subnet.", None, T0 + dt.timedelta(days=12)),
]

#: Cosines of the offline (lexical) embedder quoted in section 4, by pair of names.
COSINES = {("fix", "fault"): 0.301, ("decision", "goal"): 0.04, ("lesson", "procedure"): 0.47, ("tea", "plc"): 0.03}

_ROW = {name: i for i, (name, *_rest) in enumerate(_ROWS)}
_COS = np.zeros((len(_ROWS), len(_ROWS)))
for (a, b), value in COSINES.items():
    _COS[_ROW[a], _ROW[b]] = _COS[_ROW[b], _ROW[a]] = value


def SEED_COSINE(a_rows, b_rows):
    """cosine(a_rows, b_rows) over the rows of ``seed_bank()``'s entries."""
    return _COS[np.asarray(a_rows), np.asarray(b_rows)]


def seed_bank():
    """(entries, edges, triples) of the nine memories; nothing linked yet."""
    entries = conform(
        pl.DataFrame(
            {
                "id": [ID[name] for name, *_ in _ROWS],
                "kind": [kind for _, kind, *_ in _ROWS],
                "title": [text for _, _, text, *_ in _ROWS],
                "content": [text for _, _, text, *_ in _ROWS],
                "session_id": [s for *_, s, _ in _ROWS],
                "created_at": [t for *_, t in _ROWS],
                "updated_at": [t for *_, t in _ROWS],
                "metadata": ["{}"] * len(_ROWS),
                "usage_count": [0] * len(_ROWS),
                "status": ["active"] * len(_ROWS),
            }
        ),
        "entries",
    )
    triples = conform(
        pl.DataFrame({"subject": ["Kioko"], "relation": ["uses"], "object": ["pgvector"], "created_by": ["kumar"],
                      "created_at": [T0]}),
        "triples",
    )
    return entries, empty("edges"), triples


# ---------------------------------------------------------------- a synthetic bank of realistic notes

_TOPICS = {
    "plant": {
        "event": ["Line {n} keeps faulting with error E-{code}.", "The line {n} conveyor jammed twice during the {shift} shift.",
                  "Press {n} tripped the {part} alarm again.", "Found it: the {part} on line {n} was loose.",
                  "Replaced the {part} on press {n}; error E-{code} is gone.", "Cell {n}B stopped with a {part} fault."],
        "procedure": ["Clear a conveyor jam on line {n}: 1) Press stop; 2) Open the guard; 3) Remove the jammed bottle; 4) Reset the drive",
                      "Recalibrate the {part} on press {n}: stop the press, zero the {part}, run a test cycle"],
        "lesson": ["For clearing conveyor jams: reset the drive before reopening the guard. Lesson: always check the {part} alignment",
                   "Lesson: error E-{code} usually means a loose {part} cable"],
        "fact": ["The plant's PLC network uses the 10.{n}.0.0/16 subnet.", "Line {n} runs the S7-1500 controller with a {part} module."],
        "goal": ["Goal: Cut unplanned downtime on line {n} by 20 % this quarter."],
        "decision": ["Decision: replace every {part} on line {n} with the sealed model."],
        "words": {"part": ["encoder", "photo-eye", "drive", "sensor", "servo", "gearbox", "valve"], "shift": ["night", "early", "late"]},
    },
    "software": {
        "event": ["Deploy of the {svc} service failed with INC-{code}.", "The {svc} API timed out under load during the release.",
                  "Fixed the {svc} memory leak by pooling {db} connections.", "Root cause of INC-{code}: the {db} index was missing."],
        "decision": ["Decision: Vector database - chose {db} because we already run Postgres.",
                     "Decision: move the {svc} cache from {db} to Redis for latency."],
        "goal": ["Goal: Ship the {svc} memory layer by December {n}.", "Goal: Halve the p95 latency of {svc}."],
        "knowledge": ["The {svc} service stores embeddings in {db} with an HNSW index.", "{svc} reads its config from the Vault secrets store."],
        "procedure": ["Roll back a bad {svc} deploy: 1) Freeze the pipeline; 2) Redeploy the last green build; 3) Check the {db} migrations"],
        "insight": ["Most {svc} incidents start with a schema change to {db}."],
        "words": {"svc": ["Kioko", "Atlas", "Billing", "Ledger"], "db": ["pgvector", "Postgres", "Redis", "Qdrant"]},
    },
    "running": {
        "event": ["Ran {n} km along the river in the Nike Pegasus, left knee sore.", "Long run of {n} km felt easy after {drink}."],
        "preference": ["User prefers morning runs before work.", "User drinks {drink} before long runs."],
        "decision": ["Decision: buy the Nike Pegasus {n} for the marathon block."],
        "goal": ["Goal: Run the Berlin marathon under four hours."],
        "lesson": ["Lesson: a slow first {n} km keeps the knee quiet on long runs."],
        "words": {"drink": ["coffee", "green tea", "an espresso"]},
    },
    "tea": {
        "preference": ["User likes {tea} tea.", "User dislikes bitter {tea} tea brewed too hot."],
        "fact": ["{tea} tea should steep at {n}0 degrees for three minutes."],
        "skill": ["Brewing {tea} tea: warm the pot, steep at {n}0 degrees, pour fully."],
        "words": {"tea": ["green", "oolong", "sencha", "darjeeling"]},
    },
}


def synthetic_bank(n: int, *, seed: int = 0, sessions: bool = True, structure: bool = True, linked_share: float = 0.2,
                   edges_share: float = 0.05, dim: int = 32):
    """(entries, edges, triples, vectors) of ``n`` synthetic notes on four topics, deterministic per seed.

    Events come in sessions of 2-6 notes an hour apart; some goals name a parent goal, some decisions
    supersede an earlier decision of the same topic, some insights cite evidence. The first
    ``linked_share`` of the entries are marked linked and carry a few automatic and authored edges.
    Vectors are a topic direction plus noise, L2-normalised, float32.
    """
    rng = np.random.default_rng(seed)
    topics = list(_TOPICS)
    centres = rng.normal(size=(len(topics), dim))
    ids, kinds, texts, times, sess, metas, vecs, topic_of = [], [], [], [], [], [], [], []
    last_by = {}
    t = T0
    session_id, session_left = None, 0
    for i in range(n):
        ti = int(rng.integers(len(topics)))
        spec = _TOPICS[topics[ti]]
        kind = [k for k in spec if k != "words"][int(rng.integers(len(spec) - 1))]
        template = spec[kind][int(rng.integers(len(spec[kind])))]
        fill = {k: v[int(rng.integers(len(v)))] for k, v in spec["words"].items()}
        text = template.format(n=int(rng.integers(1, 9)), code=int(rng.integers(100, 400)), **fill)
        t = t + dt.timedelta(minutes=int(rng.integers(5, 90)))
        sid = None
        if sessions and kind == "event":
            if session_left <= 0:
                session_id, session_left = f"s{i}", int(rng.integers(2, 7))
            sid, session_left = session_id, session_left - 1
        meta = {}
        if structure:
            prev = last_by.get((ti, kind))
            if kind == "goal" and prev is not None and rng.random() < 0.3:
                meta["parent"] = prev
            if kind == "decision" and prev is not None and rng.random() < 0.3:
                meta["supersedes"] = prev
            if kind == "insight":
                pool = [ids[j] for j in range(len(ids)) if topic_of[j] == ti][-5:]
                if pool:
                    meta["evidence"] = pool[:3]
        eid = f"{(seed * 1_000_003 + i) & 0xFFFFFFFF:08x}"
        ids.append(eid); kinds.append(kind); texts.append(text); times.append(t); sess.append(sid)
        metas.append(json.dumps(meta)); topic_of.append(ti)
        last_by[(ti, kind)] = eid
        v = centres[ti] + 0.9 * rng.normal(size=dim)
        vecs.append(v / np.linalg.norm(v))
    n_linked = int(n * linked_share)
    entries = conform(pl.DataFrame({
        "id": ids, "kind": kinds, "title": [x[:60] for x in texts], "content": texts, "session_id": sess,
        "created_at": times, "updated_at": times, "metadata": metas, "usage_count": [0] * n,
        "status": ["active"] * n,
        "linked_at": [times[-1] if j < n_linked else None for j in range(n)],
    }), "entries")
    rows = []
    for j in range(max(0, int(n * edges_share))):
        a, b = sorted(rng.choice(max(n_linked, 2), size=2, replace=False).tolist())
        if a == b or b >= n:
            continue
        source = "auto" if rng.random() < 0.7 else "author"
        rows.append({"src": ids[b], "dst": ids[a], "type": "see_also" if source == "auto" else "cites",
                     "source": source, "weight": float(rng.uniform(0.35, 0.9)) if source == "auto" else 1.0,
                     "evidence": json.dumps({"why": "synthetic"}), "created_by": "synthetic",
                     "created_at": times[b], "seen_at": times[b] - dt.timedelta(days=int(rng.integers(0, 400)))})
    edges = conform(pl.DataFrame(rows), "edges").unique(["src", "dst"], keep="first", maintain_order=True) if rows else empty("edges")
    triples = conform(pl.DataFrame({
        "subject": ["Kioko", "Atlas", "Line 3", "Ledger"], "relation": ["uses", "uses", "has", "runs on"],
        "object": ["pgvector", "Redis", "conveyor", "Postgres"], "created_by": ["synthetic"] * 4, "created_at": [T0] * 4,
    }), "triples")
    return entries, edges, triples, np.asarray(vecs, dtype=np.float32)
