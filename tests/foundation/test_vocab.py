"""The shared vocabularies (citetrace.vocab) agree with the contracts: enumerations with the proto
enums, string vocabularies with the list in their field's comment in common.proto. Each check
fails when one side changes without the other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from citetrace import vocab
from citetrace.common.v1 import common_pb2

COMMON_PROTO = Path(__file__).resolve().parents[2] / "proto" / "citetrace" / "common" / "v1" / "common.proto"


def documented_values(message: str, field: str, text: str | None = None) -> tuple[str, ...]:
    """The values listed as "One of: a, b, c (...)" / "Each one of: ..." in the comment above
    `field` of `message` in common.proto (or in `text`)."""
    text = COMMON_PROTO.read_text(encoding="utf-8") if text is None else text
    body = re.search(rf"message {message} \{{(.*?)\n\}}", text, re.S)
    assert body, f"message {message} not in {COMMON_PROTO}"
    lines = body.group(1).splitlines()
    index = next(i for i, line in enumerate(lines) if re.search(rf"\b{field} = \d+;", line))
    comment = []
    for line in reversed(lines[:index]):
        stripped = line.strip()
        if not stripped.startswith("//"):
            break
        comment.insert(0, stripped.removeprefix("//").strip())
    listed = re.search(r"One of: ([^()]*)", " ".join(comment), re.I)
    assert listed, f"{message}.{field} has no 'One of: ...' list in its comment"
    return tuple(value.strip() for value in listed.group(1).split(",") if value.strip())


def test_source_classes_are_the_ones_the_contract_lists():
    assert documented_values("Document", "source_class") == vocab.SOURCE_CLASSES


def test_roles_are_the_ones_the_contract_lists():
    assert documented_values("Principal", "roles") == vocab.ROLES
    assert set(vocab.AUDIENCE_ROLES) | {vocab.SERVICE} == set(vocab.ROLES)
    assert set(vocab.AUDIENCE_ROLES) >= vocab.PRIVILEGED_READERS


def test_version_statuses_are_the_proto_enum():
    assert vocab.VERSION_STATUSES == (vocab.DRAFT, vocab.APPROVED, vocab.RETIRED)
    for name in vocab.VERSION_STATUSES:
        assert common_pb2.VersionStatus.Name(vocab.VERSION_STATUS.number(name)) == f"VERSION_STATUS_{name.upper()}"
    assert {s for pair in vocab.STATUS_TRANSITIONS for s in pair} <= set(vocab.VERSION_STATUSES)


def test_intents_and_claim_types_are_the_proto_enums():
    assert tuple(n.removeprefix("INTENT_").lower() for n in common_pb2.Intent.keys()[1:]) == vocab.INTENTS
    assert tuple(n.removeprefix("CLAIM_TYPE_") for n in common_pb2.ClaimType.keys()[1:]) == vocab.CLAIM_TYPES
    assert vocab.CLINICAL in vocab.INTENTS and vocab.CLINICAL not in vocab.DOCUMENT_INTENTS
    for name in vocab.INTENTS:
        assert vocab.INTENT.name(vocab.INTENT.number(name)) == name


def test_unknown_enum_numbers_and_names_are_refused():
    with pytest.raises(KeyError):
        vocab.INTENT.name(999)
    with pytest.raises(KeyError):
        vocab.VERSION_STATUS.number("APPROVED")  # the domain name is lower case
    assert vocab.INTENT.name_or(0, "?") == "?"


def test_the_drift_check_itself_fails_on_a_changed_list():
    changed = COMMON_PROTO.read_text(encoding="utf-8").replace("handbook, regulatory", "handbook")
    assert documented_values("Document", "source_class", changed) != vocab.SOURCE_CLASSES
