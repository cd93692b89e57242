"""The LLM flag's pure functions on clear cases (not the benchmark's figure)."""

from __future__ import annotations

from validation.llm_flag import (
    DEFAULT_THRESHOLD,
    char_ngram_dice,
    flags_combine,
    llm_flag,
    normalise,
    rouge_l,
    telemetry_signals,
    text_similarity,
)

MODEL = "Why did the Roman Empire split into an eastern and a western half?"
OWN = "what made rome fall apart in 476"
TYPED = {"keystrokes": 60, "pastes": [], "paste_count": 0, "focus_losses": 0}
PASTED = {"keystrokes": 3, "pastes": [{"field": "q", "length": 66}], "focus_losses": 2}


def test_normalise_folds_case_accents_and_punctuation():
    assert normalise("  Émile's   CAFÉ, déjà-vu! ") == "emile s cafe deja vu"


def test_identical_texts_are_one_and_unrelated_ones_near_zero():
    assert rouge_l(MODEL, MODEL) == 1.0
    assert char_ngram_dice(MODEL, MODEL.upper() + "!!") == 1.0
    assert rouge_l(MODEL, "Bananas grow on plants.") == 0.0
    assert text_similarity(MODEL, "Bananas grow on plants.")["similarity"] < 0.2


def test_light_edits_stay_close_and_the_similarity_is_the_larger_measure():
    edited = "Why did the Roman empire split in an eastern and a western half"
    sim = text_similarity(edited, MODEL)
    assert sim["similarity"] >= 0.85
    assert sim["similarity"] == max(sim["rouge_l"], sim["char_ngram"])
    # Reordered clauses: ROUGE-L drops, character trigrams hold.
    reordered = "Into an eastern and a western half: why did the Roman Empire split?"
    r = text_similarity(reordered, MODEL)
    assert r["char_ngram"] > r["rouge_l"]


def test_telemetry_signals():
    assert telemetry_signals({}, chars=40)["telemetry_score"] is None
    typed = telemetry_signals(TYPED, chars=40)
    assert typed["paste_share"] == 0.0
    assert typed["untyped_share"] == 0.0
    assert typed["telemetry_score"] == 0.0
    pasted = telemetry_signals(PASTED, chars=66)
    assert pasted["paste_share"] == 1.0
    assert pasted["focus_losses"] == 2
    assert pasted["telemetry_score"] == 1.0


def test_a_pasted_model_answer_is_flagged_with_its_evidence():
    flag = llm_flag(worker_texts=[MODEL], model_text=MODEL, telemetry=PASTED)
    assert flag["flagged"] is True
    assert flag["status"] == "scored"
    assert flag["score"] == 1.0
    assert flag["model_text"] == MODEL
    assert flag["thresholds"]["flag"] == DEFAULT_THRESHOLD
    assert set(flag["components"]) >= {"rouge_l", "char_ngram", "similarity", "paste_share"}


def test_own_typed_text_is_not_flagged():
    flag = llm_flag(worker_texts=[OWN], model_text=MODEL, telemetry=TYPED)
    assert flag["flagged"] is False
    assert flag["score"] < 0.3


def test_pasting_alone_does_not_flag_a_text_unlike_the_model():
    flag = llm_flag(worker_texts=[OWN], model_text=MODEL, telemetry=PASTED)
    assert flag["flagged"] is False  # 0.7 x low similarity + 0.3 x 1.0 < 0.6


def test_the_model_text_word_for_word_flags_even_when_typed():
    flag = llm_flag(worker_texts=[MODEL], model_text=MODEL, telemetry=TYPED)
    assert flag["flagged"] is True  # similarity >= 0.9 flags on its own


def test_short_texts_and_missing_model_text_are_never_flagged():
    assert llm_flag(worker_texts=["Why?"], model_text="Why?", telemetry=PASTED)["status"] == (
        "too_short"
    )
    none = llm_flag(worker_texts=[MODEL], model_text="", telemetry=PASTED)
    assert none["flagged"] is False
    assert none["status"] == "no_model_text"


def test_flags_combine_takes_any_flag_and_the_highest_score():
    a = llm_flag(worker_texts=[OWN], model_text=MODEL, telemetry=TYPED)
    b = llm_flag(worker_texts=[MODEL], model_text=MODEL, telemetry=PASTED)
    both = flags_combine([a, b])
    assert both["flagged"] is True
    assert both["score"] == b["score"]
    assert len(both["items"]) == 2
    assert flags_combine([])["flagged"] is False
