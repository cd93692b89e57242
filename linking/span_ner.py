"""The named entities of span proposal: the pipeline's own NER model, its greedy
decoding done by ``GreedyNER`` a token at a time for the whole batch, in numpy.

Why not spaCy's ``Parser.greedy_parse``. It loops in C with the GIL released, and for
each token of each document checks which of the NER's 74 moves (B, I, L, U for 18
labels, O) are valid with calls that take the GIL back (``PyGILState_Ensure`` /
``Release``, several in each ``is_valid``, as spaCy 3.8's wheel is compiled): more than
half of the NER's time, a third of span proposal's. Stepping spaCy's own
``Parser.transition_states`` from Python, with the GIL held, makes those calls cheap
but still calls them (``_step_states``, used where ``_decode`` does not apply).

What ``_decode`` computes is the same, step for step: the NER's tok2vec and lower layer
(``PrecomputableAffine``) once for the batch; then for each token position, the state
features of the BILUO system (the next token, the open entity's first token and the
previous token), their sum with the bias, maxout, the upper layer's scores, the valid
moves (``spacy/pipeline/_parser_internals/ner.pyx``: B and I need a next token in the
sentence, I and L continue the open entity's label, B and U open none while one is
open and not on whitespace, O only outside an entity), and the best valid one, first
on ties. Each move takes one token, so every unfinished document is at the same
position. The arithmetic is that of ``precompute_hiddens`` and ``ParserStepModel``, in
the same order, so the scores are the same floats. Documents that already carry
entities (whose preset BILUO tags add rules), labels the model lacks or another state
layout go through ``_step_states`` instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

GREEDY_NER = "qaportal_greedy_ner"
_BEGIN, _IN, _LAST, _UNIT, _OUT = range(5)
_MOVE_KINDS = {"B": _BEGIN, "I": _IN, "L": _LAST, "U": _UNIT}


class GreedyNER:
    """A pipeline component in place of ``ner``, with its model, moves and annotations.
    A batch is ordered by length and decoded whole (``Parser.pipe`` splits it in
    quarters, each with its own tok2vec pass and decoding loop: one of each for the
    batch take less, the network's products on four times the rows at once and the
    loop's numpy steps one per position of the longest document, not four; each
    document's moves are its own either way)."""

    def __init__(self, ner: Any) -> None:
        import numpy

        self.ner = ner
        model = ner.model
        self.tok2vec, self.lower = model.get_ref("tok2vec"), model.get_ref("lower")
        self.upper = model.get_ref("upper") if model.attrs["has_upper"] else None
        names = [ner.moves.get_class_name(i) for i in range(ner.moves.n_moves)]
        kinds, labels = [], []
        for name in names:
            kind, _, label = name.partition("-")
            kinds.append(_OUT if name == "O" else _MOVE_KINDS.get(kind, -1))
            labels.append(ner.vocab.strings.as_int(label) if label else 0)
        self.kinds, self.labels = numpy.array(kinds), numpy.array(labels, dtype="uint64")
        labelled = self.labels != 0  # "U-" (label 0) only marks preset blocked tokens
        self.move_masks = {
            "B": (self.kinds == _BEGIN) & labelled,
            "I": (self.kinds == _IN) & labelled,
            "L": (self.kinds == _LAST) & labelled,
            "U": (self.kinds == _UNIT) & labelled,
            "O": self.kinds == _OUT,
        }
        # The BILUO moves only, three state features, an upper layer: as in en_core_web_*.
        self.decodable = (
            -1 not in kinds and self.lower.get_dim("nF") == 3 and self.upper is not None
        )

    def __call__(self, doc: Doc) -> Doc:
        return next(iter(self.pipe([doc], batch_size=1)))

    def pipe(self, docs: Iterable[Doc], *, batch_size: int = 256) -> Iterator[Doc]:
        from spacy.util import minibatch

        ner = self.ner
        error_handler = ner.get_error_handler()
        for batch in minibatch(docs, size=batch_size):
            try:
                self._annotate(sorted(batch, key=len))
                yield from batch
            except Exception as exc:  # spaCy's error handler decides, as in Parser.pipe
                error_handler(ner.name, ner, batch, exc)

    def _annotate(self, docs: list[Doc]) -> None:
        from spacy.attrs import ENT_IOB, ENT_TYPE
        from spacy.tokens import Span

        if not any(len(doc) for doc in docs):
            self.ner.set_annotations(docs, self.ner.moves.init_batch(docs))
            return
        found = None
        if (
            self.decodable
            and len(self.kinds) == self.ner.moves.n_moves
            and not any(doc.to_array([ENT_IOB, ENT_TYPE]).any() for doc in docs)
        ):
            found = self._decode(docs)
        if found is None:
            self.ner.set_annotations(docs, self._step_states(docs))
            return
        for doc, ents in zip(docs, found, strict=True):
            doc.set_ents([Span(doc, s, e, label=label) for s, e, label in ents], default="outside")

    def _step_states(self, docs: list[Doc]) -> list[Any]:
        """spaCy's own states and moves, stepped from Python."""
        ner = self.ner
        ner._ensure_labels_are_added(docs)  # preset entities' labels, as greedy_parse does
        states = ner.moves.init_batch(docs)
        step = ner.model.predict(docs)
        todo = [state for state in states if not state.is_final()]
        while todo:
            todo = ner.transition_states(todo, step.predict(todo))
        step.clear_memory()
        return states

    def _decode(self, docs: list[Doc]) -> list[list[tuple[int, int, int]]] | None:
        """Each document's entities as (first token, end token, label), or None when a
        position has no valid move or a valid move's score is not finite (never seen;
        spaCy's stepping then decides)."""
        import numpy
        from spacy.attrs import IS_SPACE, SENT_START

        lengths = numpy.array([len(doc) for doc in docs])
        offsets = numpy.concatenate([[0], numpy.cumsum(lengths)[:-1]])
        flags = numpy.concatenate([doc.to_array([SENT_START, IS_SPACE]) for doc in docs])
        # The token after each (past the batch's last: none), whether it starts a sentence.
        next_starts = numpy.append(flags[1:, 0].astype("int64") == 1, False)
        spaces = flags[:, 1] != 0
        # Row 0 is the lower layer's padding (a missing feature), row t + 1 token t's.
        cached = self.lower.predict(self.tok2vec.predict(docs))
        cached = cached.reshape((cached.shape[0], cached.shape[1], -1))
        is_open = numpy.zeros(len(docs), dtype=bool)
        open_label = numpy.zeros(len(docs), dtype="uint64")
        open_start = numpy.zeros(len(docs), dtype="int64")
        found: list[list[tuple[int, int, int]]] = [[] for _ in docs]
        for position in range(int(lengths.max())):
            active = numpy.flatnonzero(lengths > position)
            token, opened = offsets[active] + position, is_open[active]
            # The state's features (``StateC.set_context_tokens`` with three): the next
            # token, the open entity's first token and the token before the next.
            rows = (
                token + 1,
                numpy.where(opened, offsets[active] + open_start[active] + 1, 0),
                numpy.where(opened, token, 0),
            )
            scores = self._scores(cached, rows)
            has_next = lengths[active] - position >= 2
            valid = self._valid(
                opened, open_label[active], has_next, has_next & ~next_starts[token], spaces[token]
            )
            if not valid.any(axis=1).all() or not numpy.isfinite(scores[valid]).all():
                return None
            best = numpy.where(valid, scores, -numpy.inf).argmax(axis=1)
            kind, label = self.kinds[best], self.labels[best]
            for row in numpy.flatnonzero((kind == _LAST) | (kind == _UNIT)).tolist():
                d = int(active[row])
                if kind[row] == _LAST:
                    found[d].append((int(open_start[d]), position + 1, int(open_label[d])))
                else:
                    found[d].append((position, position + 1, int(label[row])))
            begins = kind == _BEGIN
            is_open[active] = (opened & (kind == _IN)) | begins
            open_label[active[begins]] = label[begins]
            open_start[active[begins]] = position
        return found

    def _scores(self, cached: Any, rows: tuple[Any, ...]) -> Any:
        """The moves' scores of each state, as ``precompute_hiddens`` and
        ``ParserStepModel`` compute them: the features' precomputed rows summed in
        order onto zeros, the bias, maxout, the upper layer, unseen moves at the
        minimum."""
        import numpy

        assert self.upper is not None
        bias = self.lower.get_param("b")  # (hidden width, pieces)
        summed: Any = numpy.zeros((len(rows[0]), bias.size), dtype="f")
        for feature, feature_rows in enumerate(rows):
            summed += cached[feature_rows, feature]
        vectors = summed.reshape((len(rows[0]), *bias.shape))
        vectors += bias
        hidden = vectors[..., 0].copy()
        for piece in range(1, bias.shape[1]):
            numpy.maximum(hidden, vectors[..., piece], out=hidden)
        scores = self.upper.predict(hidden)
        unseen = sorted(self.ner.model.attrs["unseen_classes"])
        if unseen:
            scores[:, unseen] = numpy.nanmin(scores)
        return scores

    def _valid(
        self, opened: Any, open_label: Any, has_next: Any, into_next: Any, on_space: Any
    ) -> Any:
        """Which moves each state may take (``ner.pyx``'s ``is_valid`` of each move, no
        preset entities): B and I need a next token in the same sentence, I and L go on
        with the open entity's label, B and U open an entity while none is and not on
        whitespace, O only outside an entity. One row per state, one column per move."""
        opened, into_next, on_space = opened[:, None], into_next[:, None], on_space[:, None]
        same = self.labels == open_label[:, None]
        m = self.move_masks
        return (
            (m["B"] & ~opened & into_next & ~on_space)
            | (m["I"] & opened & same & into_next)
            | (m["L"] & opened & same)
            | (m["U"] & ~opened & ~on_space)
            | (m["O"] & ~opened)
        )


def use_greedy_ner(nlp: Language) -> None:
    """Put ``GreedyNER`` in the place of the pipeline's ``ner`` when that is spaCy's
    greedy transition-based NER (as in every ``en_core_web_*`` pipeline)."""
    from spacy.language import Language
    from spacy.pipeline import EntityRecognizer

    if "ner" not in nlp.pipe_names:
        return
    ner: Any = nlp.get_pipe("ner")
    if type(ner) is not EntityRecognizer or ner.cfg.get("beam_width", 1) != 1:
        return
    if ner.model.name != "parser_model":
        return
    if not Language.has_factory(GREEDY_NER):
        Language.factory(GREEDY_NER, func=lambda nlp, name: GreedyNER(nlp.get_pipe("ner")))
    nlp.add_pipe(GREEDY_NER, after="ner")
    nlp.disable_pipe("ner")
