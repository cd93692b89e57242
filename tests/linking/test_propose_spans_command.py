"""manage.py propose_spans: per question id, the proposed spans as JSON lines."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.helpers import FakeTerminal, progress_lines


def test_writes_spans_per_question(tmp_path):
    source = tmp_path / "mintaka.json"
    source.write_text(
        json.dumps(
            [
                {"id": "a1", "question": "Did Risky Business come out before Top Gun?"},
                {"id": "b2", "question": "What is the fifth largest country in the world?"},
            ]
        )
    )
    out = tmp_path / "out.jsonl"
    stdout, terminal = StringIO(), FakeTerminal()
    call_command(
        "propose_spans", "--input", str(source), "--format", "mintaka", "--output", str(out),
        stdout=stdout, stderr=terminal,
    )  # fmt: skip
    # On a terminal, a progress bar over the questions.
    assert "[##############################] 100 % 2/2 questions" in progress_lines(terminal)[-1]
    logged = StringIO()
    call_command(
        "propose_spans", "--input", str(source), "--format", "mintaka", "--output", str(out),
        stdout=StringIO(), stderr=logged,
    )  # fmt: skip
    assert logged.getvalue() == ""
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a1", "b2"]
    first = rows[0]
    assert {"start", "end", "text", "kind"} == set(first["spans"][0])
    assert {s["text"] for s in first["spans"]} >= {"Risky Business", "Top Gun"}
    for row in rows:
        for span in row["spans"]:
            assert row["question"][span["start"] : span["end"]] == span["text"]
    assert {"text": "fifth", "kind": "ordinal"}.items() <= rows[1]["spans"][0].items()
    assert "2 questions" in stdout.getvalue()


def test_jsonl_input_and_bad_input(tmp_path):
    source = tmp_path / "q.jsonl"
    source.write_text(json.dumps({"id": "x", "question": "Who is Tom Hanks?"}) + "\n")
    out = tmp_path / "out.jsonl"
    call_command(
        "propose_spans", "--input", str(source), "--format", "jsonl", "--output", str(out),
        stdout=StringIO(),
    )  # fmt: skip
    assert json.loads(out.read_text())["spans"][0]["text"] == "Tom Hanks"
    source.write_text("{not json")
    with pytest.raises(CommandError, match="not valid JSON"):
        call_command(
            "propose_spans", "--input", str(source), "--format", "mintaka", "--output", str(out)
        )
