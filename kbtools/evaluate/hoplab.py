"""The hop lab: does a working agent, given the choice, reach the one-hop-away fact it needs?

For each task (:mod:`.tasks`), the task's query runs against the bank once (pool of 20, no usage
counted); every arm renders the same pool its own way and hands the text to the agent with a
``fetch`` tool:

- ``flat``: the flat top-k (no pointers; ``b`` is never handed over, by construction);
- ``folded``: folded, pointers carrying the target's summary and the edge note;
- ``no_notes``: folded, notes stripped;
- ``useful_for`` / ``snippet`` / ``id_only``: folded with notes, the pointer's text about its
  target varied (useful-for line, content snippet, nothing but id and relation).

Before any agent runs, the leak check (:mod:`.leak`) lists every place a task's proof token shows
without fetching ``b`` (notes, ``a``, ``b``'s displayed fields, any arm's rendered text); leaking
tasks are excluded and reported by id, as are tasks whose precondition fails on this bank (``a``
not in the flat top-k, or ``b`` in it). Per arm: needed hop reached (``b`` handed over and
fetched), tangential hops taken (fetches of anything else), answers correct (proof token in the
final answer), fetches per task; proportions with Wilson 95 % intervals, means with a seeded
bootstrap.

>>> [arm.name for arm in HOP_ARMS]
['flat', 'folded', 'no_notes', 'useful_for', 'snippet', 'id_only']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import polars as pl

from kbtools.model.config import QUERY_DEFAULTS
from kbtools.model.answer import Answer
from kbtools.errors import KbError, ValidationError
from kbtools.progress import Progress, progress_callback
from kbtools.evaluate.agents import ReaderAgent, agent_name, is_simulated
from kbtools.evaluate.leak import LEAK_SCHEMA, answer_leaks, check_leaks, contains_token, leaky_notes
from kbtools.evaluate.render import render_answer
from kbtools.evaluate.report import HopLabReport
from kbtools.evaluate.intervals import mean_summary, proportion
from kbtools.evaluate.tasks import HopTask, as_tasks, hop_tasks, tasks_from_truth

__all__ = ["HopArm", "HOP_ARMS", "HOPLAB_DEFAULTS", "run_hoplab", "hop_outcome", "summarize_hop", "entry_text"]

#: Defaults of :func:`run_hoplab`.
HOPLAB_DEFAULTS = {"k": QUERY_DEFAULTS.k, "pool": QUERY_DEFAULTS.pool, "protect": QUERY_DEFAULTS.protect,
                   "neighbors": QUERY_DEFAULTS.neighbors, "n": 30, "max_fetch_calls": 50}


@dataclass(frozen=True)
class HopArm:
    """One way of showing the same pool to the agent.

    >>> HOP_ARMS[2].label
    'folded, notes stripped'
    """

    name: str
    label: str
    method: str  # "flat" | "fold"
    notes: bool = True
    pointer_text: str = "summary"


#: The seed's arms, in report order.
HOP_ARMS: tuple[HopArm, ...] = (
    HopArm("flat", "flat top-k", "flat", notes=False),
    HopArm("folded", "folded with pointers (summary + note)", "fold"),
    HopArm("no_notes", "folded, notes stripped", "fold", notes=False),
    HopArm("useful_for", "folded, pointer text: useful-for line", "fold", pointer_text="useful_for"),
    HopArm("snippet", "folded, pointer text: content snippet", "fold", pointer_text="snippet"),
    HopArm("id_only", "folded, pointer text: id and relation only", "fold", pointer_text="none"),
)


def run_hoplab(bank, *, tasks: Sequence[HopTask | dict] | str | None = None, agent=None, seed: int = 0,
               k: int = 8, pool: int = 20, n: int = 30, arms: Sequence[HopArm] = HOP_ARMS,
               progress: Progress = False) -> HopLabReport:
    """Run the hop lab on ``bank`` and return its report (JSON, markdown, figure).

    ``tasks``: ``None`` reads the bank's ground-truth sidecar when it has one and otherwise mines
    ``n`` tasks with ``seed`` (:func:`~kbtools.evaluate.tasks.hop_tasks`); ``"sidecar"`` or
    ``"mined"`` forces one; or a list of tasks (:class:`HopTask` or dicts). ``agent``: any
    ``agent(task_query, answer_text, fetch) -> str``; default the simulated :class:`ReaderAgent`.
    ``progress``: ``True`` for a ``tqdm.auto`` bar, or a callback ``progress(done, total)`` called after
    each task (silent by default).

    >>> import kbtools as kb  # doctest: +SKIP
    >>> print(kb.evaluate.run_hoplab(kb.open_bank("data/demo/engineering")).to_markdown())  # doctest: +SKIP
    """
    from kbtools.retrieval.folding import flat, fold_refilled
    from kbtools.retrieval.pipeline import edge_lookup
    from kbtools.retrieval.search import pool_fetcher, ranked_pool

    _check_params(k, pool, arms)
    progress = progress_callback(progress, "hop lab", unit="task")
    agent = ReaderAgent() if agent is None else agent
    if not callable(agent):
        raise ValidationError("agent", type(agent).__name__, "an agent is a callable (task_query, answer_text, fetch)")
    task_list, origin = _resolve_tasks(bank, tasks, n=n, seed=seed, k=k)
    entries, edges = bank.entries, bank.edges
    leaks = [check_leaks(task_list, entries, edges)]
    lookup = edge_lookup(bank)
    texts = dict(zip(entries["id"].to_list(), entry_text(entries)))
    shown = entries.select("id", "useful_for", "content")
    invalid: list[dict] = []
    outcomes: list[dict] = []
    for done, task in enumerate(task_list, 1):
        candidates = ranked_pool(bank, task.query, pool=max(pool, k))
        answers = {"flat": flat(candidates, lookup, k=k, neighbors=0, query=task.query),
                   "fold": fold_refilled(pool_fetcher(bank, task.query, candidates), lookup, pool=max(pool, k), k=k,
                                         protect=HOPLAB_DEFAULTS["protect"], neighbors=HOPLAB_DEFAULTS["neighbors"],
                                         query=task.query)}
        reason = _precondition(task, answers["flat"], k)
        if reason:
            invalid.append({"task": task.id, "reason": reason})
        rendered = {arm.name: render_answer(answers[arm.method], notes=arm.notes, pointer_text=arm.pointer_text,
                                            entries=shown) for arm in arms}
        leaks.append(answer_leaks(task, rendered))
        if not reason:
            outcomes.extend(hop_outcome(task, arm.name, rendered[arm.name], answers[arm.method], agent, texts)
                            for arm in arms)
        if progress:
            progress(done, len(task_list))
    leak_frame = pl.concat(leaks) if leaks else pl.DataFrame(schema=LEAK_SCHEMA)
    leaking = set(leak_frame["task"].to_list())
    kept = [o for o in outcomes if o["task"] not in leaking]
    params = {"k": k, "pool": max(pool, k), "protect": HOPLAB_DEFAULTS["protect"],
              "neighbors": HOPLAB_DEFAULTS["neighbors"], "seed": seed, "tasks_from": origin, "n": n,
              "agent_params": _agent_params(agent), "bank": str(getattr(bank, "path", "")),
              "embedder": getattr(bank, "embedder_name", None)}
    return HopLabReport(
        params=params, agent=agent_name(agent), simulated=is_simulated(agent), arms=[_arm_dict(a) for a in arms],
        tasks=[t.to_dict() for t in task_list], leaks=leak_frame.to_dicts(), excluded=sorted(leaking),
        invalid=invalid, outcomes=kept, summary=summarize_hop(kept, arms, seed=seed),
        leaky_notes=leaky_notes(entries, edges).to_dicts(),
    )


def hop_outcome(task: HopTask, arm: str, text: str, answer: Answer, agent, texts: dict[str, str], *,
                max_calls: int = HOPLAB_DEFAULTS["max_fetch_calls"]) -> dict:
    """Run ``agent`` on one task in one arm; the raw outcome as a JSON-ready dict.

    ``texts`` maps entry ids to what ``fetch`` returns; after ``max_calls`` calls ``fetch``
    answers that the limit is reached.

    >>> from kbtools.model.answer import Answer, Pointer, Result
    >>> task = HopTask("t1", "rotate the key", "a1", "b2", "cites", "ZX-1-Q")
    >>> ans = Answer("q", [Result("a1", 1, neighbors=[Pointer("b2", "cites", "out", "rotate step", kind="neighbor")])])
    >>> out = hop_outcome(task, "folded", render_answer(ans), ans, ReaderAgent(), {"b2": "Tracked as ZX-1-Q"})
    >>> out["reached"], out["correct"], out["tangential"]
    (True, True, 0)
    """
    calls: list[str] = []

    def fetch(entry_id: str) -> str:
        entry_id = str(entry_id).strip()
        if len(calls) >= max_calls:
            return f"fetch limit of {max_calls} calls reached"
        calls.append(entry_id)
        return texts.get(entry_id, f"No entry {entry_id}.")

    final = agent(task.query, text, fetch)
    if not isinstance(final, str):
        raise KbError(f"agent {agent_name(agent)!r} returned {type(final).__name__}, not the final answer as text")
    handed = task.b in answer.ids() or any(p.id == task.b for r in answer.results for p in r.pointers())
    fetched_b = task.b in calls
    return {
        "task": task.id, "arm": arm, "handed": handed, "fetched_b": fetched_b, "reached": handed and fetched_b,
        "tangential": sum(c != task.b for c in calls), "fetches": len(calls), "fetched": list(calls),
        "correct": contains_token(final, task.proof), "final_answer": final,
    }


def summarize_hop(outcomes: Sequence[dict], arms: Sequence[HopArm] = HOP_ARMS, *, seed: int = 0) -> list[dict]:
    """Per arm: tasks, handed, reached, correct, tangential (share of tasks with one or more),
    correct without the hop (a leak the check missed: should be 0), with intervals; tangential hops
    and fetches per task as bootstrap means.

    >>> summarize_hop([], HOP_ARMS[:1])[0]["reached"]["rate"] is None
    True
    """
    rows = []
    for arm in arms:
        mine = [o for o in outcomes if o["arm"] == arm.name]
        m = len(mine)
        rows.append({
            "arm": arm.name, "label": arm.label, "tasks": m,
            "handed": proportion(sum(o["handed"] for o in mine), m),
            "reached": proportion(sum(o["reached"] for o in mine), m),
            "correct": proportion(sum(o["correct"] for o in mine), m),
            "tangential": proportion(sum(o["tangential"] > 0 for o in mine), m),
            "correct_without_hop": sum(o["correct"] and not o["fetched_b"] for o in mine),
            "tangential_per_task": mean_summary([o["tangential"] for o in mine], seed=seed),
            "fetches_per_task": mean_summary([o["fetches"] for o in mine], seed=seed),
        })
    return rows


def entry_text(entries: pl.DataFrame) -> list[str]:
    """What ``fetch`` returns for each entry: title, summary, content, useful-for line, steps.

    >>> entry_text(pl.DataFrame({"id": ["a"], "title": ["T"], "summary": ["S"], "content": ["C"]}))
    ['T\\nS\\nC']
    """
    cols = [c for c in ("title", "summary", "content", "useful_for") if c in entries.columns]
    parts = [pl.col(c).cast(pl.String).fill_null("") for c in cols]
    if "steps" in entries.columns:
        parts.append(pl.col("steps").list.join("\n").fill_null(""))
    joined = entries.select(pl.concat_list(parts).list.eval(pl.element().filter(pl.element() != ""))
                            .list.join("\n").alias("text"))
    return joined["text"].to_list()


def _resolve_tasks(bank, tasks, *, n: int, seed: int, k: int) -> tuple[list[HopTask], str]:
    from kbtools.demo.banks import read_truth, truth_path

    if tasks is None:
        tasks = "sidecar" if truth_path(bank.path).exists() and read_truth(bank).get("hop_tasks") else "mined"
    if tasks == "sidecar":
        return tasks_from_truth(read_truth(bank)), "sidecar"
    if tasks == "mined":
        return hop_tasks(bank, n=n, seed=seed, k=k), "mined"
    if isinstance(tasks, str):
        raise ValidationError("tasks", tasks, "tasks are 'sidecar', 'mined', None or a list of tasks")
    return as_tasks(tasks), "given"


def _precondition(task: HopTask, flat_answer: Answer, k: int) -> str | None:
    top = flat_answer.ids()
    if task.a not in top:
        return f"a ({task.a}) is not in the flat top-{k} for this query on this bank"
    if task.b in top:
        return f"b ({task.b}) is already in the flat top-{k}: no hop needed"
    return None


def _check_params(k, pool, arms: Iterable[HopArm]) -> None:
    if not isinstance(k, int) or k < 1:
        raise ValidationError("k", k, "k is a positive integer")
    if not isinstance(pool, int) or pool < 1:
        raise ValidationError("pool", pool, "the pool holds at least one candidate")
    names = [a.name for a in arms]
    if not names or len(set(names)) != len(names):
        raise ValidationError("arms", names, "at least one arm, names unique")
    for arm in arms:
        if arm.method not in ("flat", "fold"):
            raise ValidationError("method", arm.method, "an arm's method is 'flat' or 'fold'")


def _arm_dict(arm: HopArm) -> dict:
    return {"name": arm.name, "label": arm.label, "method": arm.method, "notes": arm.notes,
            "pointer_text": arm.pointer_text}


def _agent_params(agent) -> dict:
    if isinstance(agent, ReaderAgent):
        return {"min_shared": agent.min_shared, "max_fetches": agent.max_fetches}
    return {}
