"""Span proposals for question entity linking, Mintaka-style.

A proposal is a character span of the text (Python string indices, code
points) with a ``kind``: ``entity`` (to be linked to a Wikidata item) or one of
the value kinds in ``VALUE_KINDS`` (``date``, ``time``, ``ordinal``,
``cardinal``, ``quantity``, ``money``, ``percent``), which Mintaka links as
values rather than entities.

Where the spans come from. Mintaka §4.3 (Sen, Aji and Saffari, COLING 2022) names
only the first two: spaCy's ``en_core_web_trf`` named entities and noun chunks with
capitalised words. Rules 3-4 and the widening below are ours, added because they
raise coverage of the release's gold spans (measured on the Mintaka dev sample, see
docs/recipes.md); they only add proposals, which workers may leave unlinked.

1. spaCy's named entities. Value labels (DATE, CARDINAL, ...) keep their kind;
   the others are ``entity``.
2. Noun chunks that contain a capitalised word (not counting a sentence's
   first word unless it is a proper noun), trimmed of leading determiners,
   wh-words, possessive pronouns, quantifiers and comparatives ("the",
   "which", "his", "many", "most"), and of edge punctuation. A capitalised
   "The"/"A" inside the sentence is kept: it belongs to a title.
3. The class noun a question asks about: the rest of a noun chunk opened by
   "which"/"what" ("Which song ..." -> "song"), which Mintaka's annotators
   link too (song -> Q7366).
4. Runs of capitalised words ("Lord of the Rings", "Midnight Train to
   Georgia") that the parser split or missed, with the same sentence-start
   rule; quoted titles with their quotes; "City, Region" pairs of places.

Every span is widened over a following possessive ("Tom Cruise's") and over
quotes enclosing it exactly, as Mintaka's gold spans are (its workers
highlighted whole words; 42 of 48 gold spans followed by 's include it).

Merging rule (a chunk or run covering an entity): both are kept ("Uncharted"
and "Uncharted series"; "Olympic" and "Olympic medal"). Measured on the Mintaka
sample, dropping the covering chunk loses gold spans where annotators linked
the whole phrase (3.5 points of coverage) for 0.35 fewer proposals per
question. Spans with the same offsets are proposed once (the named entity's
kind wins). Overlapping proposals remain: they are suggestions; the worker
links non-overlapping ones.

Noun chunks come from the tagger's Penn tags (``_tag_chunks``: an optional
determiner, wh-word, possessive or comparative, then adjectives, numbers,
participles and nouns, ending on a noun), proper nouns are ``NNP``/``NNPS``, and
sentence starts come from spaCy's rule-based ``sentencizer``: the dependency parser
and the attribute ruler (which only maps tags to ``pos_``), nearly a third of
the pipeline's time, are not run. Measured on the Mintaka sample the proposals
cover the gold spans slightly better than spaCy's parser-based noun chunks did
(exact 89.4 % against 89.2 %, inside 92.7 % against 92.4 %, see
bench/README.md).

The spaCy pipeline (the tagger for chunks and proper nouns, the NER for entities, the
sentencizer) is ``linking.span_pipeline``'s, loaded once per process; texts are
batched through ``nlp.pipe``, and the rules read each document's tokens once
(``_Tokens``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from linking.span_pipeline import get_nlp, one_blas_thread

if TYPE_CHECKING:
    from spacy.tokens import Doc

ENTITY = "entity"
VALUE_LABELS = {
    "DATE": "date",
    "TIME": "time",
    "ORDINAL": "ordinal",
    "CARDINAL": "cardinal",
    "QUANTITY": "quantity",
    "MONEY": "money",
    "PERCENT": "percent",
}
VALUE_KINDS = frozenset(VALUE_LABELS.values())
KINDS = VALUE_KINDS | {ENTITY}

_LEADING_TAGS = {"DT", "PDT", "WDT", "WP", "WP$", "PRP$", "WRB", "JJR", "JJS", "RBS", "RBR"}
# Quantifiers and comparatives that open a noun chunk without naming anything.
_LEADING_WORDS = {"many", "much", "few", "several", "some", "all", "any", "each", "every",
                  "other", "such", "more", "most", "fewer", "less", "least"}  # fmt: skip
_LSQUO, _RSQUO, _LDQUO, _RDQUO = "\u2018", "\u2019", "\u201c", "\u201d"
_EDGE_PUNCT = set(".,;:!?\"'`()[]{}" + _LSQUO + _RSQUO + _LDQUO + _RDQUO)
# Lower-case words allowed inside a run of capitalised words.
_CONNECTORS = {"of", "the", "and", "&", "de", "la", "le", "du", "von", "van", "der", "for",
                   "in", "on", "a", "an", "to", "at", "is", "about", "with", "from", "-", ":",
                   "!"}  # fmt: skip
_PROPER_NOUN_TAGS = {"NNP", "NNPS"}
_NOUN_TAGS = {"NN", "NNS"} | _PROPER_NOUN_TAGS
# Tags of a noun chunk (``_tag_chunks``): what may open it, what it may hold and
# what the words it holds may begin with.
_CHUNK_LEAD_TAGS = {"DT", "PDT", "WDT", "WP", "WP$", "PRP$", "JJR", "JJS", "RBR", "RBS"}
_CHUNK_TAGS = {"JJ", "CD", "HYPH", "POS", "VBN", "VBG", "NFP"} | _NOUN_TAGS
_CHUNK_OPEN_TAGS = _CHUNK_TAGS - {"VBN", "VBG", "POS", "HYPH"}
_POSSESSIVE = re.compile(r"(?:['\u2019]s?)(?![\w'\u2019])")
_OPEN_QUOTES = {'"': '"', _LDQUO: _RDQUO, _LSQUO: _RSQUO}
_QUOTED = re.compile(r"[\"“]([^\"“”]{2,80})[\"”]")


@dataclass(frozen=True, slots=True)
class Span:
    """One proposed span; ``source`` says which rule found it (for diagnostics)."""

    start: int
    end: int
    text: str
    kind: str
    source: str = ""

    def as_dict(self) -> dict[str, Any]:
        """``{"start", "end", "text", "kind"}``, the task types' proposed-span shape."""
        data = asdict(self)
        data.pop("source")
        return data


def propose_spans(text: str) -> list[Span]:
    """The proposed spans of one text, ordered by start then longest first."""
    return next(iter(propose_spans_batch([text])))


def propose_spans_batch(
    texts: Iterable[str], *, batch_size: int = 256, n_process: int = 1
) -> Iterator[list[Span]]:
    """The proposed spans of each text, in order, through ``nlp.pipe``."""
    nlp = get_nlp()
    if n_process != 1:
        for doc in nlp.pipe(texts, batch_size=batch_size, n_process=n_process):
            yield spans_from_doc(doc)
        return
    # One batch at a time under the BLAS limit, which is not held while the caller runs.
    chunk: list[str] = []
    for text in itertools.chain(texts, [None]):
        if text is not None:
            chunk.append(text)
            if len(chunk) < batch_size:
                continue
        if not chunk:
            break
        with one_blas_thread():
            docs = nlp.pipe(chunk, batch_size=batch_size)
            done = [spans_from_doc(d, text) for d, text in zip(docs, chunk, strict=True)]
        chunk = []
        yield from done


def spans_from_doc(doc: Doc, text: str | None = None) -> list[Span]:
    """Named entities, capitalised noun chunks, capitalised runs and quoted titles of
    a parsed document, merged as the module docstring describes. ``text``: the
    document's text when the caller has it (``Doc.text`` joins it anew from the
    tokens)."""
    tokens = _Tokens.read(doc, doc.text if text is None else text)
    text = tokens.text
    by_offsets: dict[tuple[int, int], Span] = {}
    ents = [(e.start, e.end, e.start_char, e.end_char, e.label_) for e in doc.ents]
    for first, last, _, _, label in ents:
        trimmed = tokens.trim(first, last)
        if trimmed is None:
            continue
        start, end = trimmed
        kind = VALUE_LABELS.get(label, ENTITY)
        by_offsets.setdefault((start, end), Span(start, end, text[start:end], kind, f"ner:{label}"))

    candidates: list[Span] = []
    for first, last in _tag_chunks(tokens.tag):
        trimmed = tokens.trim(first, last)
        if trimmed and tokens.has_capital(first, last, *trimmed):
            candidates.append(Span(*trimmed, text[trimmed[0] : trimmed[1]], ENTITY, "chunk"))
        elif trimmed and tokens.tag[first] in {"WDT", "WP"} and last - first > 1:
            candidates.append(Span(*trimmed, text[trimmed[0] : trimmed[1]], ENTITY, "wh"))
    for one, two in itertools.pairwise(ents):
        # "Dallas, Texas": a place and its region, which Mintaka links as one span.
        if one[4] == two[4] == "GPE" and text[one[3] : two[2]] == ", ":
            start, end = _widen(text, one[2], two[3])
            candidates.append(Span(start, end, text[start:end], ENTITY, "place"))
    for start, end in tokens.capitalised_runs():
        candidates.append(Span(start, end, text[start:end], ENTITY, "caps"))
    for match in _QUOTED.finditer(text):
        start, end = match.span()
        candidates.append(Span(start, end, text[start:end], ENTITY, "quote"))

    for cand in candidates:
        key = (cand.start, cand.end)
        if key not in by_offsets:
            by_offsets[key] = cand
    return sorted(by_offsets.values(), key=lambda s: (s.start, -s.end))


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() and any(c.isalpha() for c in word) and word != "I"


@dataclass(slots=True)
class _Tokens:
    """What the rules read of a document's tokens, read once (``Doc.to_array``) into
    lists indexed by token: a spaCy ``Token`` is built anew at each access and each of
    its string attributes looked up again, which cost the rules most of their time.
    Token ranges are ``first:last`` (token indices, ``last`` excluded)."""

    text: str
    word: list[str]
    idx: list[int]
    tag: list[str]
    lower: list[str]
    like_num: list[int]
    sent_start: list[bool]
    # capitalised (``_is_capitalised``), and counting as a capital: not merely because
    # it opens the sentence, unless a proper noun
    capitalised: list[bool]
    capital: list[bool]

    @classmethod
    def read(cls, doc: Doc, text: str) -> _Tokens:
        from spacy.attrs import IDX, LENGTH, LIKE_NUM, LOWER, SENT_START, TAG

        strings = doc.vocab.strings
        rows = doc.to_array([IDX, LENGTH, TAG, LOWER, LIKE_NUM, SENT_START]).tolist()
        idx = [row[0] for row in rows]
        word = [text[row[0] : row[0] + row[1]] for row in rows]
        tag = [strings[row[2]] for row in rows]
        sent_start = [row[5] == 1 for row in rows]
        capitalised = [_is_capitalised(w) for w in word]
        capital = [
            c and (not s or t in _PROPER_NOUN_TAGS)
            for c, s, t in zip(capitalised, sent_start, tag, strict=True)
        ]
        return cls(
            text, word, idx, tag, [strings[row[3]] for row in rows], [row[4] for row in rows],
            sent_start, capitalised, capital,
        )  # fmt: skip

    def end(self, i: int) -> int:
        return self.idx[i] + len(self.word[i])

    def is_leading_function_word(self, i: int) -> bool:
        """A determiner, wh-word or possessive pronoun, unless it is a capitalised
        "The" / "A" inside the sentence, which belongs to a title ("The Beatles",
        "A Star is Born")."""
        if self.tag[i] not in _LEADING_TAGS and self.lower[i] not in _LEADING_WORDS:
            return False
        return self.sent_start[i] or not self.capitalised[i]

    def trim(self, first: int, last: int) -> tuple[int, int] | None:
        """Character offsets of the tokens ``first:last`` without leading determiners /
        wh-words / possessives and edge punctuation or a trailing possessive; None when
        nothing is left."""
        word = self.word
        while first < last and (self.is_leading_function_word(first) or word[first] in _EDGE_PUNCT):
            first += 1
        while last > first and (self.tag[last - 1] == "POS" or word[last - 1] in _EDGE_PUNCT):
            last -= 1
        if first == last:
            return None
        return _widen(self.text, self.idx[first], self.end(last - 1))

    def has_capital(self, first: int, last: int, start: int, end: int) -> bool:
        """Whether a token of ``first:last`` within the characters ``start:end`` (the
        trimmed chunk) counts as capitalised. The widening may reach past the chunk, but
        only over a possessive ending or quotes, never capitalised."""
        return any(
            self.capital[i] and start <= self.idx[i] and self.end(i) <= end
            for i in range(first, last)
        )

    def capitalised_runs(self) -> Iterator[tuple[int, int]]:
        """Maximal runs of capitalised tokens, possibly joined by connectors
        ("Lord of the Rings"), never starting or ending on a connector."""
        capital, first = self.capital, -1
        for i in range(len(capital) + 1):
            if i < len(capital) and (
                capital[i] or (first >= 0 and (self.like_num[i] or self.lower[i] in _CONNECTORS))
            ):
                if first < 0:
                    first = i
                continue
            if first >= 0:
                last = i - 1
                while not capital[last]:
                    last -= 1
                yield _widen(self.text, self.idx[first], self.end(last))
                first = -1


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Extend a span over a following possessive ("Tom Cruise's", "The Beatles'") and
    over quotes that enclose it exactly ('"Rebirth"'), as Mintaka's gold spans do:
    its workers highlighted whole words."""
    possessive = _POSSESSIVE.match(text, end)
    if possessive:
        end = possessive.end()
    opening = text[start - 1] if start > 0 else ""
    if opening in _OPEN_QUOTES and end < len(text) and text[end] == _OPEN_QUOTES[opening]:
        start, end = start - 1, end + 1
    return start, end


def _tag_chunks(tags: list[str]) -> Iterator[tuple[int, int]]:
    """Noun chunks from the tagger's tags, as token ranges, left to right, not
    overlapping: an optional determiner / wh-word / possessive pronoun / comparative,
    then adjectives, numbers, participles, hyphens, possessive endings and nouns, ending
    on the last noun ("Which 1955 movie", "Tom Cruise's first movie", "the Academy Award
    winning movie"). Leading function words are trimmed later (``_Tokens.trim``), as for
    spaCy's noun chunks."""
    n, i = len(tags), 0
    while i < n:
        start = i
        if tags[i] in _CHUNK_LEAD_TAGS:
            i += 1
        elif tags[i] not in _CHUNK_OPEN_TAGS:
            i += 1
            continue
        j, last_noun = i, -1
        while j < n and tags[j] in _CHUNK_TAGS:
            if tags[j] in _NOUN_TAGS:
                last_noun = j
            j += 1
        if last_noun >= 0:
            yield start, last_noun + 1
            i = last_noun + 1
        else:
            i = max(j, start + 1)
