"""Many banks at once: a function over every bank of a fleet, on a process pool or dask workers.

``map_banks(fn, banks)`` runs any ``fn(bank)`` that returns a frame; ``stats_many``, ``holes_many``
and ``communities_many`` are ``kb.bank_stats``, ``kb.workflow_holes`` and ``kb.communities`` over a
fleet, one frame with a ``bank`` column (and ``error`` for a bank that failed). ``kb.run_jobs``
runs the maintenance jobs over a fleet.

>>> import kbtools as kb
>>> sorted(kb.fleet.__all__)
['communities_many', 'holes_many', 'map_banks', 'stats_many']
"""

from kbtools.evaluate.bank_stats import stats_many
from kbtools.ops.fleet import communities_many, holes_many, map_banks

__all__ = ["map_banks", "stats_many", "holes_many", "communities_many"]
