"""The offline candidate index: same interface as the live client, built from Mintaka."""

from __future__ import annotations

import json
from typing import Any

import pytest

from linking.build_offline_index import main as build_main
from linking.build_offline_index import mintaka_records
from linking.client import candidate_source, offline_index
from linking.offline import BUNDLED_INDEX, OfflineIndex
from linking.types import InvalidQid

RECORDS: list[dict[str, Any]] = [
    {"id": "Q110138", "label": "Top Gun", "aliases": [], "description": "1986 film"},
    {"id": "Q31188649", "label": "Top Gun: Maverick", "aliases": ["Top Gun 2"]},
    {"id": "Q42", "label": "Douglas Adams", "aliases": ["DNA"], "description": "writer"},
    {"id": "Q181278", "label": "2020 Summer Olympics", "aliases": ["2021 Olympic games"]},
    {"id": "Q1000", "label": "Gabon", "aliases": []},
    {"id": "Q999", "redirect_to": "Q42"},
]


@pytest.fixture
def index() -> OfflineIndex:
    return OfflineIndex(RECORDS)


def test_exact_label_ranks_before_prefix(index):
    page = index.search("top gun")
    assert [h["id"] for h in page.hits] == ["Q110138", "Q31188649"]
    assert page.hits[0]["match"] == {"type": "label", "language": "en", "text": "Top Gun"}


def test_alias_and_word_prefix_matches(index):
    assert index.search("dna").hits[0]["id"] == "Q42"
    assert index.search("olympic gam").hits[0]["id"] == "Q181278"
    assert index.search("adams doug").hits[0]["id"] == "Q42"
    assert index.search("zzz").hits == []


def test_paging_with_continue(index):
    first = index.search("to", limit=1)
    assert len(first.hits) == 1
    assert first.next_offset == 1
    second = index.search("to", limit=1, continue_=first.next_offset)
    assert second.hits[0]["id"] != first.hits[0]["id"]
    assert second.next_offset is None


def test_get_entities_resolves_redirects_and_validates(index):
    found = index.get_entities(["Q42", "Q999", "Q12345"])
    assert found["Q42"]["label"] == "Douglas Adams"
    assert found["Q999"]["id"] == "Q42"
    assert found["Q999"]["redirected_from"] == "Q999"
    assert found["Q12345"] is None
    with pytest.raises(InvalidQid):
        index.get_entities(["Q042"])
    with pytest.raises(ValueError, match="limit"):
        index.search("x", limit=51)


def test_bundled_index_is_the_mintaka_build(tmp_path):
    bundled = offline_index(BUNDLED_INDEX)
    assert len(bundled) > 1000
    assert bundled.search("Uncharted").hits[0]["id"] == "Q1064135"
    assert bundled.search("2021 Olympic games").hits[0]["id"] == "Q181278"
    out = tmp_path / "index.jsonl"
    assert build_main(["/work/shared/data/mintaka", "--output", str(out)]) == 0
    assert out.read_text() == BUNDLED_INDEX.read_text()


def test_records_from_mintaka_questions():
    records = mintaka_records(
        [
            {
                "questionEntity": [
                    {"name": "Q1", "entityType": "entity", "label": "Uni", "mention": "uni"},
                    {"name": 3, "entityType": "cardinal", "mention": "3"},
                    {"name": "Q2", "entityType": "entity", "label": "Earth", "mention": "earth's"},
                ],
                "answer": {"answer": [{"name": "Q5", "label": "human"}, True]},
                "category": "videogames",
                "question": "Which uni is on earth's moon?",
            },
            {
                "questionEntity": [
                    {"name": "Q2", "entityType": "entity", "label": "Earth", "mention": "Earth"}
                ],
                "category": "geography",
                "question": "How big is Earth?",
            },
        ]
    )
    named = "named in “Which uni is on earth's moon?”"
    assert records == [
        {"id": "Q1", "label": "Uni", "aliases": [], "description": f"Video games · {named}"},
        {
            "id": "Q2",
            "label": "Earth",
            "aliases": ["earth's"],
            "description": f"Video games, geography · {named}",
        },
        {
            "id": "Q5",
            "label": "human",
            "aliases": [],
            "description": "Video games · answer to “Which uni is on earth's moon?”",
        },
    ]


def test_bundled_index_has_descriptions():
    """Candidates are told apart offline too: every bundled item says where Mintaka
    uses it."""
    index = offline_index()
    hits = index.search("titanic").hits
    assert hits
    assert all(h["description"] for h in hits)
    assert "“" in hits[0]["description"]


def test_offline_setting_selects_the_index(settings, tmp_path):
    path = tmp_path / "small.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS))
    settings.WIKIDATA_OFFLINE = True
    settings.WIKIDATA_OFFLINE_INDEX = str(path)
    source = candidate_source(background=True)
    assert isinstance(source, OfflineIndex)
    assert source.search("gabon").hits[0]["id"] == "Q1000"
