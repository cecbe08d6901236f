"""The judge (seed 000): is a pair of entries one fact written twice, a correction, a split, or two facts?

``rule_judge`` decides from the two texts alone (numbers, identifiers, containment of one text's content
words in the other's, which is newer); ``llm_judge(complete)`` puts the same question to any model.
``kb.judge_bank`` writes the verdicts (merge, ``supersedes``, ``split_from``) in one transaction.
"""

from kbtools.judging.judge import JUDGE_PROMPT, Verdict, llm_judge, rule_judge

__all__ = ["JUDGE_PROMPT", "Verdict", "llm_judge", "rule_judge"]
