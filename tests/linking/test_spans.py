"""Span proposals: crafted sentences, and coverage of Mintaka's gold question entities."""

from __future__ import annotations

from pathlib import Path

import pytest

from linking.evaluation import load_mintaka, span_coverage
from linking.spans import ENTITY, VALUE_KINDS, propose_spans, propose_spans_batch

MINTAKA = Path("/work/shared/data/mintaka/mintaka_dev_sample.json")


def texts(question: str) -> dict[str, str]:
    return {s.text: s.kind for s in propose_spans(question)}


def test_named_entities_and_capitalised_chunks_with_offsets():
    question = "Did Risky Business come out before Top Gun?"
    spans = propose_spans(question)
    assert {s.text for s in spans} >= {"Risky Business", "Top Gun"}
    for span in spans:
        assert question[span.start : span.end] == span.text


def test_values_are_marked_with_their_kind():
    found = texts("Which finalist gymnast did not win first place in the 2021 Olympic games?")
    assert found["first"] == "ordinal"
    assert found["2021"] == "date"
    assert found["2021 Olympic games"] == ENTITY
    assert set(found.values()) <= VALUE_KINDS | {ENTITY}


def test_sentence_initial_capital_and_determiners_are_not_proposed():
    found = texts("Which movie came out first?")
    assert "Which movie" not in found
    assert all(not t.startswith(("Which", "the ")) for t in found)


def test_possessive_and_quotes_are_included_as_mintaka_does():
    found = texts("What was Tom Cruise's second movie?")
    assert "Tom Cruise's" in found
    found = texts('Did Lil Wayne\'s "Rebirth" come out after "Tha Carter III"?')
    assert '"Tha Carter III"' in found


def test_chunk_covering_an_entity_keeps_both():
    found = texts("How many games are in the Uncharted series?")
    assert "Uncharted" in found
    assert "Uncharted series" in found


def test_capitalised_runs_join_titles_the_parser_splits():
    found = texts("Which singer is known for singing Midnight Train to Georgia?")
    assert "Midnight Train to Georgia" in found


def test_no_duplicate_offsets_and_sorted():
    spans = propose_spans("Who has more Grammy Awards, Jay-Z or Kendrick Lamar?")
    keys = [(s.start, s.end) for s in spans]
    assert len(keys) == len(set(keys))
    assert keys == sorted(keys, key=lambda k: (k[0], -k[1]))


def test_batch_gives_one_list_per_text_in_order():
    questions = ["Who is Tom Hanks?", "", "How tall is Big Ben?"]
    batches = list(propose_spans_batch(questions, batch_size=2))
    assert len(batches) == 3
    assert batches[1] == []
    assert any(s.text == "Big Ben" for s in batches[2])


@pytest.mark.slow
@pytest.mark.skipif(not MINTAKA.exists(), reason="Mintaka sample not available")
def test_mintaka_gold_entity_spans_are_covered():
    questions = load_mintaka(MINTAKA)
    proposals = list(propose_spans_batch([q["question"] for q in questions]))
    coverage = span_coverage(questions, proposals)
    assert coverage.gold > 1000
    assert coverage.inside_rate >= 0.90, coverage
    assert coverage.exact_rate >= 0.85, coverage
    assert coverage.proposals_per_question < 4, coverage
    values = span_coverage(questions, proposals, entity_types=["ordinal", "date"])
    assert values.inside_rate >= 0.90, values
