"""A location as the orchestrator knows it (from scheduler-gateway ListLocations), the generic words
of clinic names and the word splitter the router's lexicon uses. Which clinic a question names is
resolved in services/orchestrator/understanding/locations.py (exact beats canonical beats word beats
fuzzy; a close call or only a shared generic part is ambiguous and the caller is asked)."""

from __future__ import annotations

import dataclasses
import re

GENERIC_WORDS = frozenset({
    "clinic", "clinics", "family", "center", "centre", "medical", "health", "healthcare", "the", "of",
    "hospital", "office", "practice", "klinikk", "legesenter", "senter", "synthetic",
})

_WORD = re.compile(r"[a-z0-9æøåéü]+")


@dataclasses.dataclass(frozen=True)
class LocationInfo:
    location_id: str
    name: str
    clinic_name: str = ""
    time_zone: str = "UTC"
    specialties: tuple[str, ...] = ()
    appointment_types: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()

    @property
    def display_name(self) -> str:
        return self.name or self.clinic_name or self.location_id

    def named_in(self, text: str) -> bool:
        """Whether the text writes one of the clinic's names word for word, a name with a word of its own
        (not only generic ones: "the clinic")."""
        written = f" {' '.join(words(text))} "
        for name in (self.name, self.clinic_name, *self.aliases):
            name_words = words(name)
            if set(name_words) - GENERIC_WORDS and f" {' '.join(name_words)} " in written:
                return True
        return False


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())
