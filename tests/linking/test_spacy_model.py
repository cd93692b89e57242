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
