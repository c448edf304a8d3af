"""citetrace.gloss: the bokmål -> English gloss two readers share (the understanding heads' features
and the extractive generator's matching)."""

from __future__ import annotations

import pytest
from citetrace import gloss


def test_inflected_forms_a_document_writes_find_the_glossary_entry():
    # passive, imperative and definite/plural forms of words the glossary has in another form
    assert gloss.gloss_inflected("avbestilles") == gloss.gloss_word("avbestille") != ()
    assert gloss.gloss_inflected("møt") == gloss.gloss_word("møte") != ()
    assert gloss.gloss_inflected("gebyret") == gloss.gloss_word("gebyr") != ()
    assert gloss.gloss_inflected("xqzvwkes") == ()


def test_the_inflected_reading_is_the_generators_and_not_the_understanding_heads():
    text = "Timer på Holmvik må avbestilles senest 48 timer før."
    plain, _ = gloss.gloss_text(text, "nb")
    assert "avbestilles" in plain  # the heads' features were trained on this gloss: unchanged
    assert "avbestilles" not in gloss.english_reading(text, "nb")


def test_english_text_is_read_as_written():
    english = "Please cancel at least 24 hours before your appointment."
    assert gloss.english_reading(english, "en") == english


def test_ae_oe_aa_typed_for_the_letters_read_as_them():
    assert gloss.gloss_inflected("foer") == gloss.gloss_word("før") != ()
    assert gloss.gloss_inflected("vaere") == gloss.gloss_word("være") != ()


def test_multi_word_expressions_are_read_before_the_words():
    # "hvor" is "where", but before an adverb "how"; "møt opp" is one verb, "arrive"
    reading = gloss.english_reading("hvor lenge før timen må jeg møte opp?", "nb")
    assert reading.startswith("how long ") and "arrive" in reading and "where" not in reading
    assert gloss.english_reading("Møt opp 20 minutter før timen.", "nb").startswith("arrive 20 minutes")
    # the understanding heads' gloss has no phrases
    assert gloss.gloss_text("hvor lenge", "nb")[0].startswith("where")


def test_the_reading_names_the_glossary_and_phrases_it_read_with():
    version = gloss.reading_version()
    assert gloss.glossary()[0] in version and "phrases-" in version
    # and every extractive answer names it (the generator's settings go into the trace)
    from services.generation.extractive import ExtractiveBackend

    assert ExtractiveBackend().settings()["bokmal_reading"] == version


def test_a_malformed_phrase_line_is_refused_with_its_line_number(tmp_path, monkeypatch):
    bad = tmp_path / "nb_en_phrases.tsv"
    bad.write_text("# comment\nhvor lenge how long\n", encoding="utf-8")  # no TAB
    monkeypatch.setattr(gloss, "PHRASE_FILE", bad)
    gloss._phrases.cache_clear()
    try:
        with pytest.raises(ValueError, match="nb_en_phrases.tsv line 2"):
            gloss.reading_version()
    finally:
        monkeypatch.undo()
        gloss._phrases.cache_clear()
