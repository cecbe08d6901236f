"""Pure graph algorithms over frames and ``igraph.Graph`` objects, frame first.

The bank-level verbs keep the short names (``kb.workflow_holes(bank)``, ``kb.related(bank, id)``);
the pure algorithms they hand a bank's frames to are named for what they compute, so that one name
never means two signatures:

========================================  ==========================================
``kb.graph``                              the bank-level verb in ``kb``
========================================  ==========================================
``to_igraph(entries, edges)``             ``kb.ops.bank_igraph(bank)`` (cached)
``Adjacency.build(entries, edges)``       ``kb.ops.bank_adjacency(bank)`` (cached)
``related_entries(adjacency, entry_id)``  ``kb.related(bank, entry_id)``
``shortest_trace(adjacency, a, b)``       ``kb.trace(bank, a, b)``
``find_communities(graph)``               ``kb.communities(bank)``
``centrality_scores(graph)``              ``kb.centrality(bank)``
``find_holes(entries, edges)``            ``kb.workflow_holes(bank)``
``find_flows(entries, edges)``            ``kb.process_flows(bank)``
========================================  ==========================================

>>> from kbtools import graph
>>> from kbtools.model.schema import empty
>>> graph.find_holes(empty("entries"), empty("edges")).height
0
"""

from kbtools.graph.activation import expand, personalized_pagerank, spread
from kbtools.graph.build import Adjacency, edge_weights, to_igraph
from kbtools.graph.community import find_communities
from kbtools.graph.holes import find_flows, find_holes
from kbtools.graph.hubs import centrality_scores
from kbtools.graph.paths import related_entries, shortest_trace

__all__ = ["Adjacency", "to_igraph", "edge_weights", "personalized_pagerank", "spread", "expand", "find_communities",
           "centrality_scores", "related_entries", "shortest_trace", "find_holes", "find_flows"]
