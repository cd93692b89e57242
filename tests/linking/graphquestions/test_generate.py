"""Knowledge-base question generation on a small RDF graph (people, parents, causes of
death, dates: the paper's running example)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from linking.graphquestions.generate import (
    Commonness,
    Spec,
    canonical_question,
    query_answers,
    query_minimize,
    questions_propose,
)
from linking.graphquestions.kb import KnowledgeBase, RDFFileKnowledgeBase
from linking.graphquestions.query import Edge, Function, GraphQuery, Node

EX = "http://example.org/"
PERSON, PARENT, BORN, DEATH = EX + "Person", EX + "parent", EX + "birthDate", EX + "causeOfDeath"
DATE = "http://www.w3.org/2001/XMLSchema#date"
HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def kb():
    return RDFFileKnowledgeBase(HERE / "people.ttl")


def person(name: str | None = None) -> Node:
    return Node(PERSON, EX + name if name else None)


def date(value: str) -> Node:
    return Node(DATE, f'"{value}"^^<{DATE}>')


def children_of(name: str, *extra: Edge, nodes: tuple[Node, ...] = ()) -> GraphQuery:
    return GraphQuery(nodes=(person(), person(name), *nodes), edges=(Edge(0, PARENT, 1), *extra))


def test_answers_of_a_one_edge_query(kb):
    assert query_answers(kb=kb, query=children_of("Carl")) == [EX + "Dora", EX + "Fay", EX + "Gus"]


def test_mutual_exclusivity_keeps_the_subject_out_of_its_siblings(kb):
    # ?x parent ?p . Dora parent ?p : without the rule Dora would be her own sibling.
    siblings = GraphQuery(
        nodes=(person(), person(), person("Dora")),
        edges=(Edge(0, PARENT, 1), Edge(2, PARENT, 1)),
    )
    assert "FILTER(?n0 != <http://example.org/Dora>)" in siblings.to_sparql()
    assert query_answers(kb=kb, query=siblings) == [EX + "Fay", EX + "Gus"]


def test_count_superlative_and_comparative(kb):
    kids = children_of("Carl")
    assert query_answers(kb=kb, query=GraphQuery(kids.nodes, kids.edges, 0, Function("count"))) == [
        "3"
    ]
    eldest = GraphQuery(kids.nodes, kids.edges, 0, Function("argmin", attribute=BORN))
    youngest = GraphQuery(kids.nodes, kids.edges, 0, Function("argmax", attribute=BORN))
    assert query_answers(kb=kb, query=eldest) == [EX + "Dora"]
    assert query_answers(kb=kb, query=youngest) == [EX + "Gus"]
    after = GraphQuery(
        kids.nodes, kids.edges, 0, Function(">", attribute=BORN, value="1944-01-01", datatype=DATE)
    )
    assert query_answers(kb=kb, query=after) == [EX + "Fay", EX + "Gus"]
    at_most = GraphQuery(
        kids.nodes, kids.edges, 0, Function("<=", attribute=BORN, value="1945-04-04", datatype=DATE)
    )
    assert query_answers(kb=kb, query=at_most) == [EX + "Dora", EX + "Fay"]


def test_minimization_removes_a_redundant_date_edge_and_keeps_a_needed_one(kb):
    # Dora has one child, Ewan: his birth date adds nothing and goes.
    redundant = children_of("Dora", Edge(0, BORN, 2), nodes=(date("1970-02-02"),))
    smaller = query_minimize(kb=kb, query=redundant)
    assert [e.predicate for e in smaller.edges] == [PARENT]
    assert (
        query_answers(kb=kb, query=smaller)
        == query_answers(kb=kb, query=redundant)
        == [EX + "Ewan"]
    )
    # Carl has three children and Kim shares Fay's birthday: both edges are needed.
    needed = children_of("Carl", Edge(0, BORN, 2), nodes=(date("1945-04-04"),))
    kept = query_minimize(kb=kb, query=needed)
    assert sorted(e.predicate for e in kept.edges) == [BORN, PARENT]
    assert query_answers(kb=kb, query=kept) == [EX + "Fay"]


def test_commonness_ranks_a_great_great_grandparent_below_a_parent(kb):
    scorer = Commonness(kb=kb)
    parent = GraphQuery(nodes=(person(), person("Ewan")), edges=(Edge(1, PARENT, 0),))
    chain = GraphQuery(
        nodes=(person(), person(), person(), person(), person("Ewan")),
        edges=(Edge(4, PARENT, 3), Edge(3, PARENT, 2), Edge(2, PARENT, 1), Edge(1, PARENT, 0)),
    )
    assert query_answers(kb=kb, query=chain) == [EX + "Adam"]
    assert scorer.score(chain) < scorer.score(parent)
    # Counts the user supplies are used instead of the graph's.
    rare = Commonness(kb=kb, counts={PARENT: 1, PERSON: 1, EX + "Ewan": 1})
    assert rare.score(parent) != scorer.score(parent)


def test_canonical_questions_per_function(kb):
    labels = kb.labels([PERSON, PARENT, EX + "Carl", BORN])
    kids = children_of("Carl")
    assert canonical_question(query=kids, labels=labels) == "which person whose parent is Carl?"
    count = GraphQuery(kids.nodes, kids.edges, 0, Function("count"))
    assert canonical_question(query=count, labels=labels).startswith("how many persons")
    eldest = GraphQuery(kids.nodes, kids.edges, 0, Function("argmin", attribute=BORN))
    assert "smallest date of birth" in canonical_question(query=eldest, labels=labels)


@pytest.mark.parametrize("function", ["none", "count", "superlative", "comparative"])
def test_generation_is_reproducible_and_every_query_returns_its_answers(kb, function):
    spec = Spec(classes=(PERSON,), edges=(1, 3), function=function)
    first = questions_propose(kb=kb, spec=spec, count=4, seed=11)
    again = questions_propose(kb=kb, spec=spec, count=4, seed=11)
    assert first, "the small graph has questions of every function"
    assert [c.query.to_dict() for c in first] == [c.query.to_dict() for c in again]
    for candidate in first:
        assert query_answers(kb=kb, query=candidate.query) == candidate.answers
        assert candidate.characteristics["function"] == function
        assert 1 <= candidate.characteristics["edges"] <= 3
        assert candidate.canonical.endswith("?")
        # Minimal: no edge can be removed without changing the answers.
        for i in range(len(candidate.query.edges)):
            smaller = candidate.query.without_edge(i)
            if smaller is not None and any(n.grounded for n in smaller.nodes):
                assert query_answers(kb=kb, query=smaller) != candidate.answers


class CountingKnowledgeBase(KnowledgeBase):
    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb, self.asked = kb, Counter[str]()

    def select(self, sparql: str) -> list[dict[str, str]]:
        self.asked[sparql] += 1
        return self.kb.select(sparql)


def test_a_run_asks_each_distinct_query_once_and_answers_as_the_knowledge_base(kb):
    counting = CountingKnowledgeBase(kb)
    spec = Spec(classes=(PERSON,), min_commonness=0.0)  # nothing passes: every attempt runs
    assert questions_propose(kb=counting, spec=spec, count=2, seed=3) == []
    assert len(counting.asked) > 40
    assert set(counting.asked.values()) == {1}
    # A new run asks again (nothing is remembered across runs), and what a run found
    # with its remembered rows is what the knowledge base answers.
    found = questions_propose(kb=counting, spec=Spec(classes=(PERSON,)), count=6, seed=3)
    assert max(counting.asked.values()) == 2
    assert found
    for candidate in found:
        assert query_answers(kb=kb, query=candidate.query) == candidate.answers


def test_commonness_floor_and_cardinality_filter(kb):
    loose = questions_propose(kb=kb, spec=Spec(classes=(PERSON,)), count=6, seed=3)
    floor = max(c.characteristics["commonness"] for c in loose)
    strict = questions_propose(
        kb=kb, spec=Spec(classes=(PERSON,), min_commonness=floor), count=6, seed=3
    )
    assert all(c.characteristics["commonness"] >= floor for c in strict)
    single = questions_propose(
        kb=kb, spec=Spec(classes=(PERSON,), cardinality=(1, 1)), count=4, seed=5
    )
    assert all(len(c.answers) == 1 for c in single)


def test_commonness_is_log10_with_the_papers_floor_by_default(kb):
    """Issue 35, point 10 (Su et al. §5.2, §7.1: "Commonness is limited to log10(p(q))
    >= -40"): the score is a sum of log10 probabilities, the floor -40 by default."""
    import math

    counts = {PARENT: 9, PERSON: 9, EX + "Ewan": 9}
    scorer = Commonness(kb=kb, counts=counts, k=1.0)
    parent = GraphQuery(nodes=(person(), person("Ewan")), edges=(Edge(1, PARENT, 0),))
    relations = scorer._relations
    # The relation term alone, in log10, as the query's only edge contributes it.
    edge = math.log10(10 / (sum(relations.values()) + len(relations)))
    assert scorer.score(parent) == pytest.approx(
        edge
        + math.log10(10 / (scorer._entity_total + len(relations) + 1))
        + math.log10(10 / (sum(scorer._classes.values()) + len(scorer._classes))),
        abs=1e-3,
    )
    assert Spec(classes=(PERSON,)).min_commonness == -40.0


def test_functions_are_drawn_at_random_within_one_run_by_default(kb):
    """Issue 35, point 12 (Su et al. §4: "We randomly add functions to compatible nodes
    in query templates"; at most one per query): one run mixes functions; asking for
    one function still gives that one only."""
    mixed = questions_propose(kb=kb, spec=Spec(classes=(PERSON,)), count=12, seed=7)
    families = {c.characteristics["function"] for c in mixed}
    assert len(families) >= 3, families
    assert families <= {"none", "count", "superlative", "comparative"}
    for candidate in mixed:
        assert query_answers(kb=kb, query=candidate.query) == candidate.answers
    only = questions_propose(kb=kb, spec=Spec(classes=(PERSON,), function="count"), count=4, seed=7)
    assert {c.characteristics["function"] for c in only} == {"count"}
