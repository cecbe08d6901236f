"""Pure graph algorithms over frames and ``igraph.Graph`` objects: the frame-first twins of the
bank-level analytics (``kb.workflow_holes(bank)`` beside ``kb.graph.workflow_holes(entries, edges)``).

>>> from kbtools import graph
>>> from kbtools.model.schema import empty
>>> graph.workflow_holes(empty("entries"), empty("edges")).height
0
"""

from kbtools.graph.activation import expand, personalized_pagerank, spread
from kbtools.graph.build import Adjacency, edge_weights, to_igraph
from kbtools.graph.community import communities
from kbtools.graph.holes import process_flows, workflow_holes
from kbtools.graph.hubs import centrality
from kbtools.graph.paths import related, trace

__all__ = ["Adjacency", "to_igraph", "edge_weights", "personalized_pagerank", "spread", "expand", "communities",
           "centrality", "related", "trace", "workflow_holes", "process_flows"]
