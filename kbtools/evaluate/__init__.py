"""Evaluation that cannot fool itself: the hop lab with its leak check, and the folding replay.

>>> from kbtools import evaluate
>>> "run_hoplab" in evaluate.__all__ and "run_replay" in evaluate.__all__
True
"""

from kbtools.evaluate.agents import SIMULATED_AGENT, Agent, ReaderAgent, agent_name, is_simulated, pointer_lines, terms
from kbtools.evaluate.figures import hoplab_figure, replay_figure
from kbtools.evaluate.hoplab import HOP_ARMS, HOPLAB_DEFAULTS, HopArm, hop_outcome, run_hoplab, summarize_hop
from kbtools.evaluate.judges import GoldJudge, Judge, verdict
from kbtools.evaluate.leak import answer_leaks, check_leaks, contains_token, leaky_notes
from kbtools.evaluate.render import POINTER_TEXTS, render_answer
from kbtools.evaluate.replay import REPLAY_ARMS, REPLAY_DEFAULTS, query_outcome, run_replay, summarize_replay
from kbtools.evaluate.report import HopLabReport, ReplayReport, lost_warning
from kbtools.evaluate.intervals import bootstrap_mean_interval, mean_summary, proportion, wilson_interval
from kbtools.evaluate.tasks import HopTask, as_queries, hop_tasks, mined_queries, proof_candidates, queries_from_truth, read_queries, tasks_from_truth

from kbtools.evaluate.baselines import collapse, mmr
from kbtools.evaluate.health import Health
from kbtools.evaluate.judging import evaluate_judge, evaluate_judge_sets
from kbtools.evaluate.bpmn_exports import evaluate_bpmn_exports, format_bpmn_exports

__all__ = [
    "collapse", "mmr", "evaluate_judge", "evaluate_judge_sets", "Health",
    "evaluate_bpmn_exports", "format_bpmn_exports",
    "run_hoplab", "run_replay", "HopLabReport", "ReplayReport", "hoplab_figure", "replay_figure",
    "HopTask", "hop_tasks", "mined_queries", "tasks_from_truth", "proof_candidates", "read_queries", "queries_from_truth", "as_queries",
    "check_leaks", "answer_leaks", "leaky_notes", "contains_token",
    "Agent", "ReaderAgent", "SIMULATED_AGENT", "agent_name", "is_simulated", "pointer_lines", "terms",
    "Judge", "GoldJudge", "verdict",
    "HopArm", "HOP_ARMS", "HOPLAB_DEFAULTS", "hop_outcome", "summarize_hop",
    "REPLAY_ARMS", "REPLAY_DEFAULTS", "query_outcome", "summarize_replay", "lost_warning",
    "render_answer", "POINTER_TEXTS",
    "wilson_interval", "bootstrap_mean_interval", "proportion", "mean_summary",
]
