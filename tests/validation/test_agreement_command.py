"""``manage.py agreement`` on sample CSV files."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.validation.test_agreement import KRIPPENDORFF_2011


def _run(path, *args):
    out = StringIO()
    call_command("agreement", str(path), *args, stdout=out)
    return json.loads(out.getvalue())


@pytest.fixture
def sample_csv(tmp_path):
    rows = ["item_id,annotator_id,label"]
    rows += [
        f"u{unit},{coder},{value}"
        for coder, values in KRIPPENDORFF_2011.items()
        for unit, value in enumerate(values, start=1)
        if value is not None
    ]
    path = tmp_path / "labels.csv"
    # A byte-order mark, as spreadsheet programs write it.
    path.write_text("\ufeff" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_agreement_on_the_krippendorff_example(sample_csv):
    result = _run(sample_csv)
    assert result["krippendorff_alpha"] == pytest.approx(0.743, abs=5e-4)
    assert result["items"] == 12
    assert result["annotators"] == 4
    assert result["annotations"] == 41
    assert result["labels"] == {"1": 9, "2": 13, "3": 11, "4": 5, "5": 3}
    # u6 is 1, 2, 3, 4: a four-way tie; u11 has two 1s; u12 a single 3.
    assert result["majority_items"]["u1"] == "1"
    assert result["majority_items"]["u12"] == "3"
    assert result["discarded_items"] == {"u6": "tie"}
    assert 0 < result["percent_agreement"] < 1


@pytest.mark.parametrize(("level", "expected"), [("interval", 0.849), ("ordinal", 0.815)])
def test_agreement_levels(sample_csv, level, expected):
    result = _run(sample_csv, "--level", level)
    assert result["krippendorff_alpha"] == pytest.approx(expected, abs=5e-4)
    assert result["majority_items"]["u1"] == 1  # numbers at these levels


def test_discard_label(tmp_path):
    path = tmp_path / "validation.csv"
    path.write_text(
        "item_id,annotator_id,label,comment\n"
        "q1,w1,A,\nq1,w2,A,\nq1,w3,B,\n"
        "q2,w1,invalid,\nq2,w2,invalid,bad question\nq2,w3,A,\n"
        "q3,w1,A,\nq3,w2,B,\n",
        encoding="utf-8",
    )
    result = _run(path, "--discard-label", "invalid")
    assert result["majority_items"] == {"q1": "A"}
    assert result["discarded_items"] == {"q2": "discard_label", "q3": "tie"}
    assert _run(path, "--discard-label", "invalid", "--ties", "first")["majority_items"] == {
        "q1": "A",
        "q3": "A",
    }


def test_bad_rows_are_reported_with_line_numbers(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(
        "item_id,annotator_id,label\n"
        "q1,w1,A\n"
        "q1,,B\n"  # line 3: empty annotator
        "q2,w1\n"  # line 4: missing field
        "q1,w1,C\n",  # line 5: duplicate of line 2
        encoding="utf-8",
    )
    with pytest.raises(CommandError) as exc:
        _run(path)
    message = str(exc.value)
    assert "3 bad row(s)" in message
    assert "line 3: annotator_id is empty" in message
    assert "line 4: 2 fields, the header has 3" in message
    assert "line 5: annotator 'w1' already labelled item 'q1' on line 2" in message


def test_header_and_numeric_errors(tmp_path):
    path = tmp_path / "no_header.csv"
    path.write_text("q1,w1,A\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 1: the header needs the columns"):
        _run(path)
    path = tmp_path / "words.csv"
    path.write_text("item_id,annotator_id,label\nq1,w1,high\nq1,w2,3\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 2: label 'high' is not a number"):
        _run(path, "--level", "interval")
    with pytest.raises(CommandError, match="labels are numbers at this level"):
        _run(path, "--level", "interval", "--discard-label", "invalid")
    with pytest.raises(CommandError, match="Cannot read"):
        _run(tmp_path / "missing.csv")


def test_ordinal_with_label_order_and_undefined_alpha(tmp_path):
    path = tmp_path / "ordinal.csv"
    path.write_text(
        "item_id,annotator_id,label\nq1,w1,low\nq1,w2,low\nq2,w1,high\nq2,w2,mid\n",
        encoding="utf-8",
    )
    result = _run(path, "--level", "ordinal", "--label-order", "low,mid,high")
    assert result["krippendorff_alpha"] is not None
    path.write_text("item_id,annotator_id,label\nq1,w1,x\nq2,w1,y\n", encoding="utf-8")
    assert _run(path)["krippendorff_alpha"] is None
