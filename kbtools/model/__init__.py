"""The bank's data and rules: schema, vocabularies, the guard, answers, plans and problems.

``Plan`` is what every write hands the store to apply as one transaction; ``Problem`` is one row of
what ``kb.check_bank`` finds.

>>> import kbtools as kb
>>> kb.model.Plan().is_empty()
True
"""

from kbtools.model.plan import Plan
from kbtools.model.rules import Problem

__all__ = ["Plan", "Problem"]
