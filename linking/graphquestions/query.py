"""Graph queries (Su et al., EMNLP 2016, §3.2): a question node, ungrounded nodes (variables
with a class) and grounded nodes (one entity each), typed edges between them, and at
most one function on the question node. Rendered to SPARQL with mutual exclusivity:
entities on different nodes differ.

A query is plain data (``to_dict`` / ``from_dict``), stored with each generated
question, so that it can be run again and its answers checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

# Su et al. (2016) §4: nine functions in three groups: counting (count), superlative
# (max, min, argmax, argmin) and comparative (>, >=, <, <=); "none" is no function.
FUNCTIONS = ("none", "count", "max", "min", "argmax", "argmin", ">", ">=", "<", "<=")
COMPARATIVE = (">", ">=", "<", "<=")
VALUE_SUPERLATIVE = ("max", "min")
SUPERLATIVE = (*VALUE_SUPERLATIVE, "argmax", "argmin")


@dataclass(frozen=True)
class Node:
    """A node: a variable of class ``cls`` (``entity`` None), or one ``entity``: an IRI,
    or a literal in SPARQL syntax (``"1950-05-01"^^<...#date>``) with its datatype as
    ``cls``."""

    cls: str
    entity: str | None = None

    @property
    def grounded(self) -> bool:
        return self.entity is not None


@dataclass(frozen=True)
class Edge:
    """``subject --predicate--> object``, both node indices."""

    subject: int
    predicate: str
    object: int


@dataclass(frozen=True)
class Function:
    """What is asked of the question node's bindings.

    ``none``: the bindings; ``count``: how many; ``max`` / ``min``: the largest /
    smallest ``attribute`` value itself; ``argmax`` / ``argmin``: those with the
    largest / smallest ``attribute`` value; ``>``, ``>=``, ``<``, ``<=``: those whose
    ``attribute`` compares so with ``value`` (a literal, e.g. ``"1900-01-01"``)."""

    kind: str = "none"
    attribute: str | None = None
    value: str | None = None
    datatype: str | None = None  # of ``value``, e.g. xsd:date

    def __post_init__(self) -> None:
        if self.kind not in FUNCTIONS:
            raise ValueError(f"Unknown function {self.kind!r}; use one of {FUNCTIONS}.")
        if self.kind in SUPERLATIVE + COMPARATIVE and not self.attribute:
            raise ValueError(f"The {self.kind} function needs an attribute.")
        if self.kind in COMPARATIVE and self.value is None:
            raise ValueError(f"The {self.kind} function needs a value to compare with.")

    @property
    def family(self) -> str:
        """none, count, superlative or comparative (the paper's four)."""
        if self.kind in SUPERLATIVE:
            return "superlative"
        if self.kind in COMPARATIVE:
            return "comparative"
        return self.kind


@dataclass(frozen=True)
class GraphQuery:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    question: int = 0
    function: Function = field(default_factory=Function)

    def __post_init__(self) -> None:
        if not 0 <= self.question < len(self.nodes):
            raise ValueError("The question node must be one of the nodes.")
        if self.nodes[self.question].grounded:
            raise ValueError("The question node is what is asked: it cannot be grounded.")
        for e in self.edges:
            if not (0 <= e.subject < len(self.nodes) and 0 <= e.object < len(self.nodes)):
                raise ValueError(f"Edge {e} names a node that is not in the query.")

    # --- shape ---------------------------------------------------------------------

    def connected_nodes(self, edges: tuple[Edge, ...] | None = None) -> set[int]:
        """Nodes reachable from the question node over ``edges`` (default: all)."""
        edges = self.edges if edges is None else edges
        seen, todo = {self.question}, [self.question]
        while todo:
            n = todo.pop()
            for e in edges:
                for a, b in ((e.subject, e.object), (e.object, e.subject)):
                    if a == n and b not in seen:
                        seen.add(b)
                        todo.append(b)
        return seen

    def without_edge(self, index: int) -> GraphQuery | None:
        """The query without edge ``index`` and any node it alone connected; None when
        the question node would be left with no edge."""
        edges = tuple(e for i, e in enumerate(self.edges) if i != index)
        if not edges:
            return None
        keep = sorted(self.connected_nodes(edges))
        remap = {old: new for new, old in enumerate(keep)}
        return replace(
            self,
            nodes=tuple(self.nodes[i] for i in keep),
            edges=tuple(
                Edge(remap[e.subject], e.predicate, remap[e.object])
                for e in edges
                if e.subject in remap and e.object in remap
            ),
            question=remap[self.question],
        )

    # --- SPARQL --------------------------------------------------------------------

    def _term(self, index: int) -> str:
        node = self.nodes[index]
        if node.entity is None:
            return f"?n{index}"
        if node.entity.startswith('"'):  # a literal, already in SPARQL syntax
            return node.entity
        return f"<{node.entity}>"

    def pattern(self) -> list[str]:
        """The query's graph pattern: typed variables, edges, and the mutual exclusivity
        of every two nodes (different nodes are different entities)."""
        lines = [
            f"?n{i} a <{n.cls}> ." for i, n in enumerate(self.nodes) if not n.grounded and n.cls
        ]
        lines += [
            f"{self._term(e.subject)} <{e.predicate}> {self._term(e.object)} ." for e in self.edges
        ]
        terms = [self._term(i) for i in range(len(self.nodes))]
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                if terms[i].startswith("?") or terms[j].startswith("?"):
                    lines.append(f"FILTER({terms[i]} != {terms[j]})")
        return lines

    def to_sparql(self) -> str:
        """SPARQL 1.1 for the answers (variable ``?answer``; ``?count`` for count)."""
        q = f"?n{self.question}"
        body = "\n  ".join(self.pattern())
        fn = self.function
        if fn.kind == "count":
            return f"SELECT (COUNT(DISTINCT {q}) AS ?count) WHERE {{\n  {body}\n}}"
        if fn.kind in VALUE_SUPERLATIVE:
            # The extreme value itself (ORDER BY ... LIMIT 1, as for argmax/argmin).
            order = "DESC" if fn.kind == "max" else "ASC"
            return (
                f"SELECT DISTINCT (?value AS ?answer) WHERE {{\n  {body}\n"
                f"  {q} <{fn.attribute}> ?value .\n}} ORDER BY {order}(?value) LIMIT 1"
            )
        if fn.kind in SUPERLATIVE:
            # The extreme value by ORDER BY ... LIMIT 1 (MIN/MAX do not order every
            # literal type in every store), then every binding that has it (ties too).
            order = "DESC" if fn.kind == "argmax" else "ASC"
            inner = "\n    ".join(self.pattern())
            return (
                f"SELECT DISTINCT ({q} AS ?answer) WHERE {{\n  {body}\n"
                f"  {q} <{fn.attribute}> ?value .\n"
                f"  {{ SELECT ?value WHERE {{\n    {inner}\n    {q} <{fn.attribute}> ?value .\n"
                f"  }} ORDER BY {order}(?value) LIMIT 1 }}\n}}"
            )
        if fn.kind in COMPARATIVE:
            literal = f'"{fn.value}"' + (f"^^<{fn.datatype}>" if fn.datatype else "")
            return (
                f"SELECT DISTINCT ({q} AS ?answer) WHERE {{\n  {body}\n"
                f"  {q} <{fn.attribute}> ?value .\n  FILTER(?value {fn.kind} {literal})\n}}"
            )
        return f"SELECT DISTINCT ({q} AS ?answer) WHERE {{\n  {body}\n}}"

    # --- storage -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [{"class": n.cls, "entity": n.entity} for n in self.nodes],
            "edges": [[e.subject, e.predicate, e.object] for e in self.edges],
            "question": self.question,
            "function": {
                "kind": self.function.kind,
                "attribute": self.function.attribute,
                "value": self.function.value,
                "datatype": self.function.datatype,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphQuery:
        fn = data.get("function") or {}
        return cls(
            nodes=tuple(Node(cls=n["class"], entity=n.get("entity")) for n in data["nodes"]),
            edges=tuple(Edge(int(s), str(p), int(o)) for s, p, o in data["edges"]),
            question=int(data.get("question", 0)),
            function=Function(
                kind=fn.get("kind", "none"),
                attribute=fn.get("attribute"),
                value=fn.get("value"),
                datatype=fn.get("datatype"),
            ),
        )
