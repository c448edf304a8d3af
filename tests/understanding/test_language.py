import pytest
from citetrace.language import identify


@pytest.mark.parametrize("text,code", [
    ("When should I arrive for my appointment?", "en"),
    ("Når skal jeg møte opp til timen?", "nb"),
    ("Tengo un dolor fuerte en el pecho, ¿cuándo hay cita?", "es"),
    ("Ich bekomme keine Luft mehr", "de"),
    ("Northside", "und"),
])
def test_identify(text, code):
    assert identify(text).code == code


def test_non_latin_script_is_other():
    guess = identify("ألم شديد في صدري")
    assert guess.code == "other" and not guess.supported
