"""Generating graph queries with chosen characteristics (Su et al., EMNLP 2016: §4
generation and functions, §5.1 minimization, §5.2 commonness, §6 conversion).

1. **Schema** (``schema_read``): which relations join which classes, and which
   attributes (dates, numbers) a class has, read from the knowledge base's own data.
2. **Template growth** (``templates_grow``): a seeded random walk from a question node
   of a chosen class over domain/range-typed relations, up to the asked number of edges.
3. **Grounding**: the walk's leaves become entities (or literal values) taken from one
   binding of the template, so the query has at least one answer.
4. **Function**: count, superlative (max / min of an attribute, or argmax / argmin:
   the bindings that have it) or comparative
   (an attribute against a value taken from the answers, so it is not empty).
5. **Minimization** (``query_minimize``): every edge whose removal leaves the answers
   unchanged is removed; the result is minimal and answers the same.
6. **Commonness** (``Commonness``): the log10-probability of the query's components
   (entities, classes, relations) from their frequencies, add-k smoothed, as §5.2
   reports it (log10 p(q), Table 2); queries under the floor are dropped, by default
   the paper's (§7.1: "Commonness is limited to log10(p(q)) >= -40").
7. **Canonical question** (``canonical_question``): an English question from the query
   by templates per function, for the requester to edit.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from linking.graphquestions.kb import RDF_TYPE, KnowledgeBase, RememberedAnswers
from linking.graphquestions.query import (
    COMPARATIVE,
    SUPERLATIVE,
    VALUE_SUPERLATIVE,
    Edge,
    Function,
    GraphQuery,
    Node,
)

XSD = "http://www.w3.org/2001/XMLSchema#"
ORDERED_TYPES = tuple(
    XSD + t for t in ("date", "dateTime", "gYear", "integer", "decimal", "double", "float", "int")
)
MAX_BINDINGS = 500
# §4: "We randomly add functions to compatible nodes in query templates ... Each query
# will have at most one function": "random" (the default) draws, per query, no function
# or one family the question node is compatible with (count always; superlative and
# comparative where its class has an attribute), then a kind within it.
RANDOM_FUNCTION = "random"
FAMILIES = ("none", "count", "superlative", "comparative")
# What a requester may ask for: the paper's random draw, a family of the four, or one
# kind of function.
SPEC_FUNCTIONS = (RANDOM_FUNCTION, *FAMILIES, *SUPERLATIVE, *COMPARATIVE)


@dataclass(frozen=True)
class Relation:
    predicate: str
    domain: str
    range: str


@dataclass(frozen=True)
class Attribute:
    predicate: str
    domain: str
    datatype: str


@dataclass
class Schema:
    relations: list[Relation] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)

    def attributes_of(self, cls: str) -> list[Attribute]:
        return [a for a in self.attributes if a.domain == cls]


def schema_read(
    *, kb: KnowledgeBase, classes: list[str] | None = None, relations: list[str] | None = None
) -> Schema:
    """Relations between typed entities and ordered attributes of typed entities, as
    the data shows them; restricted to ``classes`` and ``relations`` when given."""
    rows = kb.select(
        "SELECT DISTINCT ?p ?c1 ?c2 WHERE { ?s ?p ?o . ?s a ?c1 . ?o a ?c2 . "
        f"FILTER(?p != <{RDF_TYPE}>) }}"
    )
    found = Schema(relations=[Relation(r["p"], r["c1"], r["c2"]) for r in rows])
    types = ", ".join(f"<{t}>" for t in ORDERED_TYPES)
    rows = kb.select(
        "SELECT DISTINCT ?p ?c (DATATYPE(?o) AS ?dt) WHERE { ?s ?p ?o . ?s a ?c . "
        f"FILTER(isLiteral(?o) && DATATYPE(?o) IN ({types})) }}"
    )
    found.attributes = [Attribute(r["p"], r["c"], r["dt"]) for r in rows if "dt" in r]
    if classes:
        wanted = set(classes)
        found.relations = [r for r in found.relations if r.domain in wanted and r.range in wanted]
        found.attributes = [a for a in found.attributes if a.domain in wanted]
    if relations:
        allowed = set(relations)
        found.relations = [r for r in found.relations if r.predicate in allowed]
        found.attributes = [a for a in found.attributes if a.predicate in allowed]
    found.relations.sort(key=lambda r: (r.predicate, r.domain, r.range))
    found.attributes.sort(key=lambda a: (a.predicate, a.domain))
    return found


# --- running a query -------------------------------------------------------------------


def query_answers(*, kb: KnowledgeBase, query: GraphQuery) -> list[str]:
    """The query's answers, sorted: entity IRIs, or one number for count."""
    rows = kb.select(query.to_sparql())
    if query.function.kind == "count":
        return [rows[0].get("count", "0")] if rows else ["0"]
    return sorted({r["answer"] for r in rows if "answer" in r})


def _literal(value: str, datatype: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"^^<{datatype}>'


# --- growth, grounding, function -------------------------------------------------------


# §7.1: "Commonness is limited to log10(p(q)) >= -40".
DEFAULT_MIN_COMMONNESS = -40.0


@dataclass(frozen=True)
class Spec:
    """What the requester asks for."""

    classes: tuple[str, ...]
    edges: tuple[int, int] = (1, 3)  # least and most
    # random (per query, as §4), or none, count, superlative, comparative, or a kind
    function: str = RANDOM_FUNCTION
    cardinality: tuple[int, int] = (1, 1_000_000)  # of the answers (count: 1)
    # log10 p(q); None: no floor.
    min_commonness: float | None = DEFAULT_MIN_COMMONNESS


def _walk(rng: random.Random, schema: Schema, cls: str, n_edges: int) -> GraphQuery | None:
    nodes: list[Node] = [Node(cls)]
    edges: list[Edge] = []
    for _ in range(n_edges):
        options: list[tuple[int, Relation | Attribute, str]] = []
        for i, node in enumerate(nodes):
            if node.cls.startswith(XSD):
                continue
            options += [(i, r, "out") for r in schema.relations if r.domain == node.cls]
            options += [(i, r, "in") for r in schema.relations if r.range == node.cls]
            options += [(i, a, "attr") for a in schema.attributes_of(node.cls)]
        if not options:
            return None
        anchor, rel, way = options[rng.randrange(len(options))]
        new = len(nodes)
        if isinstance(rel, Attribute):
            nodes.append(Node(rel.datatype))
            edges.append(Edge(anchor, rel.predicate, new))
        elif way == "out":
            nodes.append(Node(rel.range))
            edges.append(Edge(anchor, rel.predicate, new))
        else:
            nodes.append(Node(rel.domain))
            edges.append(Edge(new, rel.predicate, anchor))
    return GraphQuery(nodes=tuple(nodes), edges=tuple(edges), question=0)


def _ground(rng: random.Random, kb: KnowledgeBase, template: GraphQuery) -> GraphQuery | None:
    """Ground the template's leaves (and literal nodes) with one of its bindings."""
    degree = Counter([e.subject for e in template.edges] + [e.object for e in template.edges])
    to_ground = {
        i
        for i, n in enumerate(template.nodes)
        if i != template.question and (degree[i] == 1 or n.cls.startswith(XSD))
    }
    if not to_ground:
        return None
    rows = kb.select(
        "SELECT * WHERE {\n  " + "\n  ".join(template.pattern()) + f"\n}} LIMIT {MAX_BINDINGS}"
    )
    if not rows:
        return None
    row = rows[rng.randrange(len(rows))]
    nodes = list(template.nodes)
    for i in sorted(to_ground):
        value = row.get(f"n{i}")
        if value is None:
            return None
        cls = nodes[i].cls
        nodes[i] = Node(cls, _literal(value, cls) if cls.startswith(XSD) else value)
    return replace(template, nodes=tuple(nodes))


def _with_function(
    rng: random.Random, kb: KnowledgeBase, schema: Schema, query: GraphQuery, wanted: str
) -> GraphQuery | None:
    if wanted == RANDOM_FUNCTION:
        compatible = list(FAMILIES[:2])
        if schema.attributes_of(query.nodes[query.question].cls):
            compatible += FAMILIES[2:]
        wanted = compatible[rng.randrange(len(compatible))]
    if wanted == "none":
        return query
    if wanted == "count":
        return replace(query, function=Function("count"))
    attributes = schema.attributes_of(query.nodes[query.question].cls)
    if not attributes:
        return None
    attr = attributes[rng.randrange(len(attributes))]
    kinds = {"superlative": SUPERLATIVE, "comparative": COMPARATIVE}.get(wanted, (wanted,))
    kind = kinds[rng.randrange(len(kinds))]
    if kind in SUPERLATIVE:
        return replace(query, function=Function(kind, attribute=attr.predicate))
    rows = kb.select(
        "SELECT DISTINCT ?v WHERE {\n  "
        + "\n  ".join(query.pattern())
        + f"\n  ?n{query.question} <{attr.predicate}> ?v .\n}}"
    )
    values = sorted(r["v"] for r in rows if "v" in r)
    if not values:
        return None
    pivot = values[len(values) // 2]
    return replace(
        query,
        function=Function(kind, attribute=attr.predicate, value=pivot, datatype=attr.datatype),
    )


# --- minimization ----------------------------------------------------------------------


def query_minimize(
    *, kb: KnowledgeBase, query: GraphQuery, answers: list[str] | None = None
) -> GraphQuery:
    """Remove, one at a time, every edge whose removal leaves the answers unchanged
    (with any node only that edge connected), until no edge can go. The result answers
    exactly as ``query`` does, and no single edge of it can be removed. ``answers``:
    the query's own answers when the caller has them already (not asked again)."""
    if answers is None:
        answers = query_answers(kb=kb, query=query)
    changed = True
    while changed:
        changed = False
        # The edges grown last are tried first: a walk's later edges refine its earlier.
        for index in reversed(range(len(query.edges))):
            smaller = query.without_edge(index)
            if smaller is None or not any(n.grounded for n in smaller.nodes):
                continue
            if query_answers(kb=kb, query=smaller) == answers:
                query, changed = smaller, True
                break
    return query


# --- commonness ------------------------------------------------------------------------


class Commonness:
    """log10 p(query) = sum over its components (grounded entities, classes, relations)
    of log10((count + k) / (total + k * V)) (§5.2, Eq. 1; the paper reports log10), per
    component kind, from ``counts`` the user supplies ({iri: count}) or from the
    knowledge base's own frequencies."""

    def __init__(
        self, *, kb: KnowledgeBase, counts: dict[str, int] | None = None, k: float = 1.0
    ) -> None:
        self.kb, self.k = kb, k
        self.user = counts
        self._classes = {
            r["c"]: int(r["n"])
            for r in kb.select("SELECT ?c (COUNT(?s) AS ?n) WHERE { ?s a ?c } GROUP BY ?c")
        }
        self._relations = {
            r["p"]: int(r["n"])
            for r in kb.select("SELECT ?p (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?p")
        }
        self._entities: dict[str, int] = {}
        self._entity_total = int(
            (kb.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }") or [{"n": "0"}])[0]["n"]
        )

    def _entity(self, iri: str) -> int:
        if iri not in self._entities:
            rows = self.kb.select(
                f"SELECT (COUNT(*) AS ?n) WHERE {{ {{ <{iri}> ?p ?o }} UNION {{ ?s ?p <{iri}> }} }}"
            )
            self._entities[iri] = int(rows[0]["n"]) if rows else 0
        return self._entities[iri]

    def _log(self, count: int, total: int, vocabulary: int) -> float:
        return math.log10((count + self.k) / (total + self.k * max(vocabulary, 1)))

    def score(self, query: GraphQuery) -> float:
        score = 0.0
        for node in query.nodes:
            if node.entity is not None and not node.entity.startswith('"'):
                count = self.user.get(node.entity, 0) if self.user else self._entity(node.entity)
                score += self._log(count, self._entity_total, len(self._relations) + 1)
            elif node.entity is None and node.cls in self._classes:
                count = self.user.get(node.cls, 0) if self.user else self._classes[node.cls]
                score += self._log(count, sum(self._classes.values()), len(self._classes))
        for edge in query.edges:
            count = (
                self.user.get(edge.predicate, 0)
                if self.user
                else self._relations.get(edge.predicate, 0)
            )
            score += self._log(count, sum(self._relations.values()), len(self._relations))
        return round(score, 4)


# --- canonical question ----------------------------------------------------------------


def _words(iri: str) -> str:
    tail = re.split(r"[#/]", iri.rstrip("/#"))[-1]
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", tail).replace("_", " ").lower()


def canonical_question(*, query: GraphQuery, labels: dict[str, str]) -> str:
    """An English question from ``query``: templates per function, relation names and
    entity labels from the knowledge base (or the IRIs' last parts)."""

    def name(iri: str) -> str:
        return labels.get(iri) or _words(iri)

    def value(node: Node) -> str:
        entity = node.entity or ""
        if entity.startswith('"'):
            return entity.split('"')[1]
        return name(entity)

    def describe(index: int, came_from: int | None) -> str:
        clauses = []
        for e in query.edges:
            if e.subject == index and e.object != came_from:
                other = query.nodes[e.object]
                target = (
                    value(other)
                    if other.grounded
                    else f"a {name(other.cls)} {describe(e.object, index)}".strip()
                )
                clauses.append(f"whose {name(e.predicate)} is {target}")
            elif e.object == index and e.subject != came_from:
                other = query.nodes[e.subject]
                target = (
                    value(other)
                    if other.grounded
                    else f"a {name(other.cls)} {describe(e.subject, index)}".strip()
                )
                clauses.append(f"that is the {name(e.predicate)} of {target}")
        return " and ".join(clauses)

    q = query.question
    cls = name(query.nodes[q].cls)
    body = describe(q, None)
    fn = query.function
    if fn.kind == "count":
        return f"how many {cls}s are there {body}?".replace("  ", " ")
    if fn.kind in VALUE_SUPERLATIVE:
        extreme = "largest" if fn.kind == "max" else "smallest"
        return f"what is the {extreme} {name(fn.attribute or '')} of a {cls} {body}?"
    if fn.kind in SUPERLATIVE:
        extreme = "largest" if fn.kind == "argmax" else "smallest"
        return f"which {cls} {body} has the {extreme} {name(fn.attribute or '')}?"
    if fn.kind in COMPARATIVE:
        words = {">": "greater than", ">=": "at least", "<": "less than", "<=": "at most"}
        return f"which {cls} {body} has a {name(fn.attribute or '')} {words[fn.kind]} {fn.value}?"
    return f"which {cls} {body}?"


# --- the whole pipeline ----------------------------------------------------------------


@dataclass
class Candidate:
    query: GraphQuery
    answers: list[str]
    characteristics: dict[str, Any]
    canonical: str
    entities: list[dict[str, Any]]


def questions_propose(
    *,
    kb: KnowledgeBase,
    spec: Spec,
    count: int,
    seed: int,
    counts: dict[str, int] | None = None,
    max_attempts: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Candidate]:
    """Up to ``count`` distinct minimal queries meeting ``spec``, the same for the same
    knowledge base, spec and seed; ``progress(found)`` after each one found. Each
    distinct query is asked of ``kb`` once per run (``RememberedAnswers``)."""
    kb = RememberedAnswers(kb)
    rng = random.Random(seed)
    schema = schema_read(kb=kb, classes=list(spec.classes) or None)
    classes = sorted(
        {r.domain for r in schema.relations}
        | {r.range for r in schema.relations}
        | {a.domain for a in schema.attributes}
    )
    classes = [c for c in classes if not spec.classes or c in spec.classes]
    commonness = Commonness(kb=kb, counts=counts)
    out: list[Candidate] = []
    seen: set[str] = set()
    for _ in range(max_attempts or count * 40):
        if len(out) >= count or not classes:
            break
        cls = classes[rng.randrange(len(classes))]
        n_edges = rng.randint(spec.edges[0], spec.edges[1])
        template = _walk(rng, schema, cls, n_edges)
        if template is None:
            continue
        grounded = _ground(rng, kb, template)
        if grounded is None:
            continue
        query = _with_function(rng, kb, schema, grounded, spec.function)
        if query is None:
            continue
        answers = query_answers(kb=kb, query=query)
        if not answers:
            continue
        # Minimization keeps the answers exactly: they are not asked again.
        query = query_minimize(kb=kb, query=query, answers=answers)
        if not spec.edges[0] <= len(query.edges) <= spec.edges[1]:
            continue
        cardinality = 1 if query.function.kind == "count" else len(answers)
        if (
            not answers
            or answers == ["0"]
            or not spec.cardinality[0] <= cardinality <= spec.cardinality[1]
        ):
            continue
        key = query.to_sparql()
        if key in seen:
            continue
        score = commonness.score(query)
        if spec.min_commonness is not None and score < spec.min_commonness:
            continue
        seen.add(key)
        iris = [n.entity for n in query.nodes if n.entity and not n.entity.startswith('"')]
        iris += [n.cls for n in query.nodes] + [e.predicate for e in query.edges]
        iris += [query.function.attribute] if query.function.attribute else []
        labels = kb.labels([i for i in iris if i])
        out.append(
            Candidate(
                query=query,
                answers=answers,
                characteristics={
                    "edges": len(query.edges),
                    "function": query.function.family,
                    "function_kind": query.function.kind,
                    "commonness": score,
                    "answer_cardinality": cardinality,
                },
                canonical=canonical_question(query=query, labels=labels),
                entities=[
                    {
                        "id": n.entity,
                        "label": labels.get(n.entity, _words(n.entity)),
                        "forms": [labels.get(n.entity, _words(n.entity))],
                    }
                    for n in query.nodes
                    if n.entity and not n.entity.startswith('"')
                ],
            )
        )
        if progress is not None:
            progress(len(out))
    return out
