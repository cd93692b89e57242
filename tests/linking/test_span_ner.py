"""``GreedyNER`` (linking/span_ner.py) finds the entities spaCy's own NER finds, token
for token, on its numpy decoding and on spaCy's stepping (preset entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from linking.span_ner import GREEDY_NER, GreedyNER
from linking.span_pipeline import get_nlp, one_blas_thread

if TYPE_CHECKING:
    from spacy.tokens import Doc

TEXTS = [
    "Who directed The Lord of the Rings: The Return of the King?",
    "",
    "   ",
    "Barack Obama was born in Hawaii. He was the 44th president of the United States.",
    "New York\n\nLondon  Paris",
    "In 1999, 3 people paid $5 million for 20 % of Apple on Monday at 5 pm.",
    "Which is longer, the Nile or the Amazon?",
    "Was Kendrick Lamar's album DAMN. released before Taylor Swift's Reputation",
    "Tom Hanks",
]


def ents_and_iob(docs: list[Doc]) -> list[tuple[list[tuple[int, int, str]], list[str]]]:
    return [
        ([(e.start, e.end, e.label_) for e in doc.ents], [t.ent_iob_ for t in doc]) for doc in docs
    ]


def test_same_entities_as_spacys_ner() -> None:
    nlp = get_nlp()
    greedy = nlp.get_pipe(GREEDY_NER)
    assert isinstance(greedy, GreedyNER)
    assert "ner" not in nlp.pipe_names
    texts = TEXTS * 3
    with one_blas_thread():
        ours = list(greedy.pipe([nlp.make_doc(t) for t in texts], batch_size=8))
        spacys = list(greedy.ner.pipe([nlp.make_doc(t) for t in texts], batch_size=8))
        # the numpy decoding, not spaCy's stepping, made ours
        assert greedy._decode([nlp.make_doc(t) for t in TEXTS]) is not None
    assert ents_and_iob(ours) == ents_and_iob(spacys)
    assert any(doc.ents for doc in ours)


def test_preset_entities_go_through_spacys_moves() -> None:
    nlp = get_nlp()
    greedy = nlp.get_pipe(GREEDY_NER)
    assert isinstance(greedy, GreedyNER)

    def preset(text: str) -> Doc:
        doc = nlp.make_doc(text)
        span = doc.char_span(0, 6, label="PERSON")
        assert span is not None
        doc.set_ents([span], default="missing")
        return doc

    text = "Hawaii is where Barack Obama was born in 1961."
    with one_blas_thread():
        ours = list(greedy.pipe([preset(text)]))
        spacys = list(greedy.ner.pipe([preset(text)]))
    assert ents_and_iob(ours) == ents_and_iob(spacys)
    assert (0, 1, "PERSON") in ents_and_iob(ours)[0][0]


def test_embedding_cache_gives_the_layers_own_vectors() -> None:
    """Each tok2vec's token embedding (``_EmbeddingCache``): the vectors of the layer's own
    forward pass, from the rows it keeps; repeated tokens are embedded once; a full
    cache starts again."""
    import numpy

    from linking.span_pipeline import _embedding_layers, _EmbeddingCache

    nlp = get_nlp()
    layers = _embedding_layers(nlp)
    assert len(layers) == 2  # the shared tok2vec's and the NER's own
    docs = [nlp.make_doc(t) for t in TEXTS * 2]
    with one_blas_thread():
        for layer in layers:
            cache = layer._func
            assert isinstance(cache, _EmbeddingCache)
            cache.clear()
            own, _ = cache.forward(layer, docs, False)
            cached = layer.predict(docs)
            assert len(cache.rows) == len(
                {tuple(row) for f in cache.extract.predict(docs) for row in f.tolist()}
            )
            again = layer.predict(docs[::-1])[::-1]
            assert [a.shape for a in cached] == [o.shape for o in own]
            for ours, theirs, repeated in zip(cached, own, again, strict=True):
                numpy.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
                assert numpy.array_equal(ours, repeated)
            rows, cache.ROWS = cache.ROWS, 8
            try:
                small = layer.predict(docs[:1])
                assert len(cache.rows) <= max(8, len(docs[0]))
                numpy.testing.assert_allclose(small[0], own[0], rtol=1e-5, atol=1e-6)
            finally:
                cache.ROWS = rows
                cache.clear()


def test_sentencizer_on_arrays_finds_spacys_sentence_starts() -> None:
    from spacy.pipeline import Sentencizer

    nlp = get_nlp()
    ours: Any = nlp.get_pipe("sentencizer")
    texts = [*TEXTS, "Hi!! How are you? I'm fine...", 'He said "no." Then left.', "?!", "A. B"]
    spacys = Sentencizer(punct_chars=list(ours.punct_chars))
    docs = [nlp.make_doc(t) for t in texts]
    assert ours.predict(docs) == spacys.predict(docs)
    assert [[t.is_sent_start for t in ours(nlp.make_doc(t))] for t in texts] == [
        [t.is_sent_start for t in spacys(nlp.make_doc(t))] for t in texts
    ]


def test_window_encoder_gives_the_tok2vecs_vectors() -> None:
    """Each tok2vec (``_WindowEncoder``): without half the padding rows and with the
    first layer's products per distinct token, the vectors of thinc's own forward pass
    within float rounding, for empty documents, one-token ones and longer ones, alone
    and in a batch; the tagger's tags and the NER's entities as spaCy's pipeline gives
    them (its own tok2vec forward)."""
    import numpy

    from linking.span_pipeline import _WindowEncoder

    nlp = get_nlp()
    models: list[Any] = [getattr(pipe, "model", None) for _, pipe in nlp.components]
    encoders = [
        node
        for model in models
        if hasattr(model, "walk")
        for node in model.walk()
        if isinstance(node._func, _WindowEncoder)
    ]
    assert len(encoders) == 2  # the shared tok2vec and the NER's own
    docs = [nlp.make_doc(t) for t in [*TEXTS, "x", *TEXTS[::-1]]]
    with one_blas_thread():
        for node in encoders:
            encoder = node._func
            for batch in (docs, docs[:1], docs[1:3], docs[-2:]):
                ours = node.predict(batch)
                theirs, _ = encoder.forward(node, batch, False)
                assert [a.shape for a in ours] == [t.shape for t in theirs]
                for a, t in zip(ours, theirs, strict=True):
                    numpy.testing.assert_allclose(a, t, rtol=1e-5, atol=1e-5)
        ours_docs = list(nlp.pipe([d.text for d in docs]))
        wrapped = [node._func for node in encoders]
        for node in encoders:
            node._func = node._func.forward
        try:
            spacys = list(nlp.pipe([d.text for d in docs]))
        finally:
            for node, encoder in zip(encoders, wrapped, strict=True):
                node._func = encoder
    assert [[t.tag_ for t in d] for d in ours_docs] == [[t.tag_ for t in d] for d in spacys]
    assert ents_and_iob(ours_docs) == ents_and_iob(spacys)
