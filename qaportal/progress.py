"""Progress bars for long management commands: drawn on a terminal, silent elsewhere.

``ProgressBar(label=…, total=…, stream=…)`` redraws one line (``\\r``) on ``stream``
when it is a terminal (``isatty()``), at most ``REDRAW_SECONDS`` apart, and ends it
with a newline on ``close()``. On anything else (a log file, a pipe, CI, a captured
``call_command``) it writes nothing: logs keep the commands' own summary lines only.

    with ProgressBar(label="export mintaka", total=rows, unit="rows", stream=sys.stderr) as bar:
        for n in …:
            bar.update(n)        # absolute count, or bar.advance(k)

Without a total the bar shows the count and its rate; with one, a bar, the share and
the count of the total.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, Any

REDRAW_SECONDS = 0.1
WIDTH = 30


def is_terminal(stream: Any) -> bool:
    """True when ``stream`` is a terminal (a log file, a pipe or a buffer is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed stream
        return False


class ProgressBar:
    """One line of progress on a terminal; nothing when ``stream`` is not one."""

    def __init__(
        self,
        *,
        label: str,
        total: int | None = None,
        unit: str = "rows",
        stream: IO[str] | Any | None = None,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.enabled = is_terminal(self.stream)
        self.label, self.total, self.unit = label, total, unit
        self.done = 0
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._width = 0

    def __enter__(self) -> ProgressBar:
        self._draw(force=True)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` so far (absolute); ``total`` when it has become known."""
        self.done = done
        if total is not None:
            self.total = total
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n)

    def line(self) -> str:
        """The line as drawn now."""
        elapsed = time.monotonic() - self.started
        count = f"{self.done:,}"
        if self.total:
            share = min(1.0, self.done / self.total)
            filled = int(WIDTH * share)
            bar = "#" * filled + "." * (WIDTH - filled)
            text = f"{self.label} [{bar}] {share * 100:3.0f} % {count}/{self.total:,} {self.unit}"
        else:
            text = f"{self.label} {count} {self.unit}"
        rate = self.done / elapsed if elapsed > 0 else 0.0
        return f"{text}  {rate:,.0f} {self.unit}/s  {elapsed:,.0f} s"

    def _draw(self, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        text = self.line()
        self.stream.write("\r" + text.ljust(self._width))
        self._width = len(text)
        self.stream.flush()

    def close(self) -> None:
        """Draw the last count and end the line (on a terminal)."""
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False
