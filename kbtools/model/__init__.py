"""The bank's data and rules: schema, vocabularies, the guard, answers, plans and problems.

``Plan`` is what every write hands the store to apply as one transaction; ``Problem`` is one row of
what ``kb.check_bank`` finds.

>>> import kbtools as kb
>>> kb.model.Plan().is_empty()
True
"""

__all__ = ["Plan", "Problem"]


def __getattr__(name: str):
    # imported on first use: a module that needs only the settings (kbtools.model.config) does not
    # load polars through the plan
    if name == "Plan":
        from kbtools.model.plan import Plan

        return Plan
    if name == "Problem":
        from kbtools.model.rules import Problem

        return Problem
    raise AttributeError(f"module 'kbtools.model' has no attribute {name!r}")
