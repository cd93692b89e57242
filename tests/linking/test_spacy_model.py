"""``SPACY_MODEL`` picks the span pipeline (Mintaka §4.3 used en_core_web_trf): any
installed pipeline is taken; one that is not installed falls back, with a warning
naming both."""

from __future__ import annotations

import logging

from linking.span_pipeline import FALLBACK_MODEL, spacy_model_name


def test_an_installed_pipeline_is_used(settings, tmp_path):
    settings.SPACY_MODEL = FALLBACK_MODEL
    assert spacy_model_name() == FALLBACK_MODEL
    settings.SPACY_MODEL = str(tmp_path)  # a pipeline directory
    assert spacy_model_name() == str(tmp_path)


def test_a_missing_pipeline_falls_back_clearly(settings, caplog):
    settings.SPACY_MODEL = "en_core_web_trf_not_installed_here"
    with caplog.at_level(logging.WARNING, logger="linking.span_pipeline"):
        name = spacy_model_name()
    assert name in ("en_core_web_sm", FALLBACK_MODEL)
    assert "SPACY_MODEL=en_core_web_trf_not_installed_here is not installed" in caplog.text
    assert name in caplog.text


def test_the_tokenizer_is_the_pipelines_own():
    """``get_nlp`` builds the tokenizer from the pipeline's saved rules alone (no
    default build first): the same rules and patterns, the same tokens, as the
    pipeline loaded by spaCy itself."""
    import spacy
    from spacy.tokenizer import Tokenizer

    from linking.span_pipeline import (
        BARE_TOKENIZER,
        UNUSED_PIPES,
        _saved_tokenizer_is_spacys,
        get_nlp,
    )

    name = spacy_model_name()
    assert _saved_tokenizer_is_spacys(name)
    nlp = get_nlp()
    assert nlp.config["nlp"]["tokenizer"] == {"@tokenizers": BARE_TOKENIZER}
    spacys = spacy.load(name, exclude=list(UNUSED_PIPES))
    ours, theirs = nlp.tokenizer, spacys.tokenizer
    assert isinstance(ours, Tokenizer)
    assert isinstance(theirs, Tokenizer)
    assert ours.to_bytes(exclude=["vocab"]) == theirs.to_bytes(exclude=["vocab"])
    text = "Did the U.S. win 12km races e.g. in 1999? Don't :) http://example.org/a?b=1 $5.00"
    assert [t.text for t in nlp.make_doc(text)] == [t.text for t in spacys.make_doc(text)]
    assert len(nlp.make_doc(text)) > 15


def test_other_tokenizers_keep_their_factory(tmp_path):
    """A pipeline whose config names another tokenizer (Japanese, Chinese, a custom one),
    or a directory without a saved tokenizer, is loaded with its own factory."""
    from linking.span_pipeline import _saved_tokenizer_is_spacys

    (tmp_path / "config.cfg").write_text(
        '[nlp]\nlang = "ja"\ntokenizer = {"@tokenizers":"spacy.ja.JapaneseTokenizer"}\n'
    )
    (tmp_path / "tokenizer").write_bytes(b"")
    assert not _saved_tokenizer_is_spacys(str(tmp_path))
    (tmp_path / "config.cfg").write_text(
        '[nlp]\nlang = "en"\ntokenizer = {"@tokenizers":"spacy.Tokenizer.v1"}\n'
    )
    assert _saved_tokenizer_is_spacys(str(tmp_path))
    (tmp_path / "tokenizer").unlink()
    assert not _saved_tokenizer_is_spacys(str(tmp_path))
    assert not _saved_tokenizer_is_spacys(str(tmp_path / "missing"))
