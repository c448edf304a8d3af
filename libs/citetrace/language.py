"""Which language a question is written in, from function words and letters (pure, microseconds).

The classifiers are trained for en and nb-NO. Anything else identified with confidence is `other`
and gets the conservative fallback (services/orchestrator/understanding/analysis.py); the extractive
generator ranks by meaning only what reads as English (services/generation/semantic.py); a text with no
signal at all (a clinic name, "ok", a date) is `und` and is read as the request's locale, else en.
Danish and Swedish share most function words with bokmål: a text reads as nb unless the words only
Danish or Swedish use outweigh the shared ones; either way nothing is answered in a language the
classifiers were not trained on without saying so in the route."""

from __future__ import annotations

import dataclasses
import re

SUPPORTED = ("en", "nb")
UNDETERMINED = "und"

_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)

# Function words and very common words, lowercase. A word listed for several languages counts for each.
_PROFILES: dict[str, frozenset[str]] = {
    "en": frozenset(["the", "a", "an", "and", "or", "but", "is", "are", "was", "were", "be", "been", "am", "i", "i'm", "im", "my", "me", "you", "your", "we", "our", "it", "it's", "this", "that", "what", "when", "where", "how", "who", "which", "why", "can", "could", "should", "would", "will", "do", "does", "did", "don't", "have", "has", "had", "of", "to", "in", "on", "at", "for", "with", "from", "not", "no", "any", "there", "here", "please", "if", "about", "just", "get", "need", "want", "like", "next", "book", "appointment", "before", "after", "there's", "can't", "cant", "won't", "isn't", "he", "she", "his", "her", "they", "them", "their"]),
    "nb": frozenset(["jeg", "meg", "min", "mitt", "mine", "du", "deg", "din", "ditt", "vi", "oss", "vår", "er", "var", "og", "eller", "men", "ikke", "ingen", "det", "den", "de", "en", "et", "ei", "som", "på", "til", "fra", "med", "for", "av", "om", "når", "hvor", "hva", "hvordan", "hvem", "hvilken", "hvilke", "kan", "skal", "må", "vil", "bør", "har", "hadde", "blir", "ble", "hvis", "etter", "før", "jo", "også", "noe", "noen", "dere", "dokker", "æ", "ka", "i", "morgen", "time", "timen", "timer", "ledig", "ledige", "bestille", "avbestille", "sjekke", "inn", "lege", "legen", "han", "hun", "så", "ut", "nå", "her", "der", "mye", "litt", "veldig", "fortsatt", "lenger", "igjen"]),
    "da": frozenset(["jeg", "mig", "min", "mit", "mine", "du", "dig", "din", "dit", "vi", "os", "vores", "er", "var", "og", "eller", "men", "ikke", "ingen", "det", "den", "de", "en", "et", "som", "på", "til", "fra", "med", "for", "af", "om", "når", "hvor", "hvad", "hvordan", "hvem", "hvilken", "kan", "skal", "må", "vil", "bør", "har", "havde", "bliver", "blev", "hvis", "efter", "før", "også", "noget", "nogen", "jer", "mit", "aflyser", "aflyse", "hvornår", "tid"]),
    "sv": frozenset(["jag", "mig", "min", "mitt", "mina", "du", "dig", "din", "ditt", "vi", "oss", "vår", "är", "var", "och", "eller", "men", "inte", "ingen", "det", "den", "de", "en", "ett", "som", "på", "till", "från", "med", "för", "av", "om", "när", "var", "vad", "hur", "vem", "vilken", "kan", "ska", "måste", "vill", "bör", "har", "hade", "blir", "blev", "efter", "före", "också", "något", "några", "finns", "tid"]),
    "de": frozenset(["ich", "mich", "mein", "meine", "du", "dich", "dein", "wir", "uns", "unser", "ist", "sind", "war", "und", "oder", "aber", "nicht", "kein", "keine", "das", "der", "die", "den", "dem", "ein", "eine", "einen", "zu", "von", "mit", "für", "auf", "an", "in", "wann", "wo", "was", "wie", "wer", "kann", "soll", "muss", "will", "habe", "hat", "hatte", "wird", "mehr", "bekomme", "termin", "sie", "haben", "schmerzen"]),
    "fr": frozenset(["je", "me", "moi", "mon", "ma", "mes", "tu", "te", "ton", "ta", "nous", "notre", "est", "sont", "était", "et", "ou", "mais", "ne", "pas", "le", "la", "les", "un", "une", "des", "de", "du", "à", "au", "pour", "avec", "dans", "sur", "quand", "où", "que", "quoi", "comment", "qui", "peux", "peut", "dois", "veux", "ai", "avez", "j'ai", "j'arrive", "puis", "rendez-vous"]),
    "es": frozenset(["yo", "me", "mi", "mis", "tú", "te", "tu", "nosotros", "es", "son", "era", "y", "o", "pero", "no", "el", "la", "los", "las", "un", "una", "de", "del", "a", "al", "para", "con", "en", "por", "cuando", "dónde", "donde", "qué", "que", "cómo", "quién", "puedo", "puede", "debo", "quiero", "tengo", "tiene", "tienen", "cita", "mañana"]),
    "it": frozenset(["io", "mi", "mio", "mia", "miei", "tu", "ti", "tuo", "noi", "è", "sono", "era", "e", "o", "ma", "non", "il", "lo", "la", "i", "gli", "le", "un", "una", "di", "del", "della", "a", "al", "per", "con", "in", "su", "quando", "dove", "che", "cosa", "come", "chi", "posso", "può", "devo", "voglio", "ho", "ha", "appuntamento"]),
    "pt": frozenset(["eu", "me", "meu", "minha", "meus", "você", "nós", "é", "são", "era", "e", "ou", "mas", "não", "o", "a", "os", "as", "um", "uma", "de", "do", "da", "em", "no", "na", "para", "com", "por", "quando", "onde", "que", "como", "quem", "posso", "pode", "devo", "quero", "tenho", "estou", "com", "consulta"]),
    "nl": frozenset(["ik", "mij", "me", "mijn", "jij", "je", "jouw", "wij", "ons", "onze", "is", "zijn", "was", "en", "of", "maar", "niet", "geen", "het", "de", "een", "van", "naar", "met", "voor", "op", "in", "wanneer", "waar", "wat", "hoe", "wie", "kan", "kun", "moet", "wil", "heb", "heeft", "had", "veel", "pijn"]),
    "pl": frozenset(["ja", "mnie", "mój", "moja", "moje", "ty", "ciebie", "my", "nasz", "jest", "są", "był", "i", "lub", "ale", "nie", "to", "ten", "ta", "w", "na", "do", "z", "ze", "od", "dla", "kiedy", "gdzie", "co", "jak", "kto", "mogę", "może", "muszę", "chcę", "mam", "ma", "czy", "jestem", "się"]),
    "tr": frozenset(["ben", "beni", "benim", "sen", "sen", "biz", "bir", "ve", "veya", "ama", "değil", "bu", "şu", "ne", "nerede", "nasıl", "kim", "zaman", "için", "ile", "var", "yok", "mi", "mı", "mu", "mü", "çok"]),
}
# Letters that only some of these languages write.
_LETTERS: dict[str, str] = {"nb": "æøå", "da": "æøå", "sv": "äöå", "de": "äöüß", "es": "ñ¿¡áéíóú",
                            "fr": "àâçèéêëîïôûù", "pt": "ãõçáéíóúâê", "pl": "ąćęłńśźż", "tr": "çğışöü",
                            "it": "àèéìòù"}


@dataclasses.dataclass(frozen=True)
class LanguageGuess:
    code: str  # en | nb | other language code | und
    scores: dict[str, float]
    explanation: str

    @property
    def supported(self) -> bool:
        return self.code in SUPPORTED or self.code == UNDETERMINED


def identify(text: str) -> LanguageGuess:
    lowered = text.lower()
    words = _WORDS.findall(lowered)
    scores: dict[str, float] = {}
    for lang, profile in _PROFILES.items():
        score = float(sum(1 for w in words if w in profile))
        letters = _LETTERS.get(lang, "")
        score += 0.5 * sum(1 for ch in lowered if ch in letters)
        scores[lang] = score
    # Non-Latin letters (Arabic, Cyrillic, CJK, ...): a language the classifiers cannot read.
    non_latin = sum(1 for ch in text if ch.isalpha() and not ("a" <= ch.lower() <= "z") and ord(ch) > 0x24F)
    if non_latin >= max(3, len(text.replace(" ", "")) // 3):
        return LanguageGuess("other", scores, f"{non_latin} letters outside the Latin script")
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    best, best_score = ranked[0]
    if best_score < 1.0 or (len(words) <= 2 and best_score < 2.0):
        return LanguageGuess(UNDETERMINED, scores, "too few function words to tell")
    # The Scandinavian languages share most of their function words: read as bokmål unless the
    # Danish- or Swedish-only evidence is clearly larger.
    if best in ("da", "sv") and scores["nb"] >= best_score - 1.0:
        best, best_score = "nb", scores["nb"]
    if best == "en" or best == "nb":
        return LanguageGuess(best, scores, f"function words: {best} {best_score:g}")
    # Another language must beat both supported ones clearly, else the text is mostly en/nb
    # (code-switching: "tengo dolor en el pecho, help" stays other; "my MRI, ¿ok?" stays en).
    supported_best = max(scores["en"], scores["nb"])
    if best_score >= supported_best + 1.0:
        return LanguageGuess(best, scores, f"function words: {best} {best_score:g} over en/nb {supported_best:g}")
    top = "en" if scores["en"] >= scores["nb"] else "nb"
    return LanguageGuess(top, scores, f"function words: {top} {scores[top]:g} (mixed with {best})")
