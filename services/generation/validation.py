"""What a GenerateRequest must satisfy, checked once, by the generator (the servicer only translates)."""

from __future__ import annotations

import dataclasses
import re

from citetrace.kit.errors import InvalidArgument
from citetrace.kit.validation import preview

from services.generation.core import GenerationRequest

MAX_QUESTION_CHARS = 2000
MAX_PASSAGES = 100
# As GenerateRequest.place_names documents; a clinic may have many aliases.
MAX_PLACE_NAMES = 100
_LABEL = re.compile(r"S[1-9][0-9]*")


def checked(request: GenerationRequest, budget_passages: int, budget_chars: int) -> GenerationRequest:
    """The request with its question stripped, or InvalidArgument naming what is wrong."""
    question = request.question.strip()
    if not question:
        raise InvalidArgument("EMPTY_QUESTION", "question must contain non-whitespace text", field="question")
    if len(question) > MAX_QUESTION_CHARS:
        raise InvalidArgument("QUESTION_TOO_LONG", f"question has {len(question)} characters; limit {MAX_QUESTION_CHARS}", field="question")
    if len(request.passages) > MAX_PASSAGES:
        raise InvalidArgument("TOO_MANY_PASSAGES", f"{len(request.passages)} passages; limit {MAX_PASSAGES}", field="passages")
    for name, value in (("budget.max_passages", budget_passages), ("budget.max_chars", budget_chars)):
        if value < 0:
            raise InvalidArgument("INVALID_BUDGET", f"{name} must be >= 0", field=name)
    for field, names in (("place_names", request.place_names), ("other_place_names", request.other_place_names)):
        _check_place_names(field, names)
    seen: set[str] = set()
    for i, passage in enumerate(request.passages):
        if not _LABEL.fullmatch(passage.label):
            raise InvalidArgument("INVALID_LABEL", f"passages[{i}].label {preview(passage.label)} must look like S1, S2, ...",
                                  field="passages.label")
        if passage.label in seen:
            raise InvalidArgument("DUPLICATE_LABEL", f"passages[{i}].label {passage.label} is offered twice", field="passages.label")
        seen.add(passage.label)
    return dataclasses.replace(request, question=question, attempt=max(1, request.attempt))


def _check_place_names(field: str, names: tuple[str, ...]) -> None:
    if len(names) > MAX_PLACE_NAMES:
        raise InvalidArgument("TOO_MANY_PLACE_NAMES", f"{len(names)} {field.replace('_', ' ')}; limit {MAX_PLACE_NAMES}",
                              field=field)
    for i, name in enumerate(names):
        if not name.strip() or len(name) > MAX_QUESTION_CHARS:
            raise InvalidArgument("INVALID_PLACE_NAME", f"{field}[{i}] {preview(name)} must be non-empty text "
                                  f"of at most {MAX_QUESTION_CHARS} characters", field=field)
