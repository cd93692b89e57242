"""Progress bars of the management commands: drawn on a terminal (one line redrawn with
``\\r``, ended with a newline), nothing at all on a stream that is not one."""

from __future__ import annotations

import io

from qaportal import progress
from qaportal.progress import ProgressBar, is_terminal
from tests.helpers import FakeTerminal, progress_lines


def test_a_bar_with_a_total_on_a_terminal(monkeypatch):
    monkeypatch.setattr(progress, "REDRAW_SECONDS", 0)
    terminal = FakeTerminal()
    with ProgressBar(label="export hf", total=200, stream=terminal) as bar:
        bar.update(50)
        bar.advance(150)

    drawn = progress_lines(terminal)
    assert drawn[0].startswith("export hf [..............................]   0 % 0/200 rows")
    assert drawn[1].startswith("export hf [#######.......................]  25 % 50/200 rows")
    assert drawn[-1].startswith("export hf [##############################] 100 % 200/200 rows")
    assert terminal.getvalue().endswith("\n")
    assert terminal.getvalue().count("\n") == 1  # one line, redrawn


def test_without_a_total_the_count_and_rate(monkeypatch):
    monkeypatch.setattr(progress, "REDRAW_SECONDS", 0)
    terminal = FakeTerminal()
    with ProgressBar(label="simulate", unit="submissions", stream=terminal) as bar:
        bar.update(12_345)
        bar.update(20, total=40)  # a total learnt on the way

    drawn = progress_lines(terminal)
    assert drawn[1].startswith("simulate 12,345 submissions  ")
    assert " submissions/s " in drawn[1]
    assert "50 % 20/40 submissions" in drawn[-1]


def test_redraws_are_throttled(monkeypatch):
    terminal = FakeTerminal()
    with ProgressBar(label="x", total=10_000, stream=terminal) as bar:
        for n in range(10_000):
            bar.update(n)
    assert len(progress_lines(terminal)) < 100


def test_quiet_where_it_is_not_a_terminal():
    for stream in (io.StringIO(), open("/dev/null", "w")):  # noqa: SIM115 - closed below
        assert not is_terminal(stream)
        with ProgressBar(label="export", total=3, stream=stream) as bar:
            bar.update(3)
        if isinstance(stream, io.StringIO):
            assert stream.getvalue() == ""
        stream.close()
    assert not is_terminal(object())
