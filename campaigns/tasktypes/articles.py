"""Plain articles made into WhyQA's article structure: title, sections, paragraphs,
numbered sentences (Mrozinski, Whittaker and Furui, ACL-08: HLT, §3: the articles
were segmented into sentences, list items and table cells made sentences, and only
the section titles kept besides).

Text layout (UTF-8): the first non-empty line is the title (a leading ``#`` or
``= … =`` is taken off); a line ``## Header``, ``# Header`` or ``== Header ==``
starts a section; paragraphs are separated by blank lines; a line starting with
``-``, ``*`` or ``•`` is a list item, a sentence of its own. Sentences end at ``.``,
``!`` or ``?`` (with closing quotes or brackets) before a space and a capital, digit
or quote, except after common abbreviations, initials and inside numbers ("4.45").

Pure functions: ``article_parse`` and ``sentences_split``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

MAX_ARTICLE_CHARS = 2_000_000
_HEADER = re.compile(r"^\s*(?:#{1,6}\s*(?P<md>.+?)\s*#*|(?P<eq>=+)\s*(?P<wiki>.+?)\s*=+)\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d+[.)])\s+")
_CLOSERS = "\"'\u201d\u2019)]"
_BOUNDARY = re.compile(
    r"(?<=[.!?])(?P<close>[\"'\u201d\u2019)\]]*)\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9\u00c0-\u00dd])"
)
# Words that end in a full stop without ending the sentence (lower case, no last dot).
ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "mt",
        "ft",
        "vs",
        "etc",
        "e.g",
        "i.e",
        "cf",
        "al",
        "fig",
        "vol",
        "pp",
        "ca",
        "approx",
        "dept",
        "inc",
        "ltd",
        "corp",
        "gen",
        "col",
        "lt",
        "sgt",
        "capt",
        "rev",
        "gov",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "u.s",
        "u.k",
        "u.n",
        "b.c",
        "a.d",
        "a.m",
        "p.m",
    }
)


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def sentences_split(paragraph: str) -> list[str]:
    """The sentences of one paragraph, in order, whitespace normalised."""
    text = _clean(paragraph)
    if not text:
        return []
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        candidate = text[start : match.start() + len(match.group("close"))].rstrip()
        last = candidate.split(" ")[-1].rstrip(".!?" + _CLOSERS).lower() if candidate else ""
        if candidate.rstrip(_CLOSERS).endswith(".") and (
            last in ABBREVIATIONS or re.fullmatch(r"[a-z]", last or "-") or "." in last
        ):
            continue  # "Dr. Smith", "J. R. R. Tolkien", "U.S. Army"
        out.append(candidate)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _slug(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", unicodedata.normalize("NFKD", title).lower()).strip("-")
    return slug[:80] or "article"


def article_parse(text: str, *, title: str = "", article_id: str = "") -> dict[str, Any]:
    """``{"article_id", "title", "sections": [{"header", "paragraphs": [[sentence]]}]}``
    from a plain article (layout in the module docstring); ``ValueError`` with a reason
    when it has no sentence or is too long. ``title`` overrides the first line."""
    if len(text) > MAX_ARTICLE_CHARS:
        raise ValueError(f"The article is longer than {MAX_ARTICLE_CHARS:,} characters.")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not title:
        while lines and not lines[0].strip():
            lines.pop(0)
        if not lines:
            raise ValueError("The article is empty.")
        first = lines.pop(0)
        header = _HEADER.match(first)
        title = _clean(header.group("md") or header.group("wiki")) if header else _clean(first)
    sections: list[dict[str, Any]] = [{"header": "", "paragraphs": []}]
    block: list[str] = []

    def flush() -> None:
        paragraph = sentences_split(" ".join(block))
        if paragraph:
            sections[-1]["paragraphs"].append(paragraph)
        block.clear()

    for line in lines:
        header = _HEADER.match(line)
        if header:
            flush()
            sections.append(
                {"header": _clean(header.group("md") or header.group("wiki")), "paragraphs": []}
            )
        elif not line.strip():
            flush()
        elif _BULLET.match(line):
            flush()
            item = _clean(_BULLET.sub("", line, count=1))
            if item:
                sections[-1]["paragraphs"].append([item])
        else:
            block.append(line)
    flush()
    sections = [s for s in sections if s["paragraphs"]]
    if not sections:
        raise ValueError("The article has no sentence under its title.")
    return {"article_id": article_id or _slug(title), "title": title, "sections": sections}
