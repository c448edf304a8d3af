"""The shared vocabularies of the contracts, one definition each: roles, source classes, version
statuses, intents and claim types. Enumerations are read from the generated protos (the domain uses
their lower-case names without the prefix, e.g. INTENT_ARRIVAL_PREPARATION -> "arrival_preparation";
claim types keep upper case as the source policy names them); string vocabularies that the protos
carry as strings are listed in the field's comment in proto/citetrace/common/v1/common.proto, and
tests/foundation/test_vocab.py fails when either side drifts."""

from __future__ import annotations

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from citetrace.common.v1 import common_pb2

# --- roles (token claim `roles`; a document version's audience uses the same names) -------------
PATIENT = "patient"
STAFF = "staff"
REVIEWER = "reviewer"
AUDITOR = "auditor"
# May ingest documents and change version status.
POLICY_ADMIN = "policy_admin"
# Internal calls between services (e.g. the orchestrator recording a trace); never given to users.
SERVICE = "service"

ROLES = (PATIENT, STAFF, REVIEWER, AUDITOR, POLICY_ADMIN, SERVICE)
# Who a document version may be written for.
AUDIENCE_ROLES = (PATIENT, STAFF, REVIEWER, AUDITOR, POLICY_ADMIN)
# Read every audience and every status of their own tenant (audit and review); retrieval's
# GetPassages and trace's passage view apply the same set.
PRIVILEGED_READERS = frozenset({POLICY_ADMIN, REVIEWER, AUDITOR})
READERS_OF_QUERY_TEXT = (REVIEWER, AUDITOR)

# --- source classes (Document.source_class) ------------------------------------------------------
SOURCE_CLASSES = ("scheduling_policy", "preparation_instructions", "cancellation_policy", "provider_profile",
                  "handbook", "regulatory")


def enum_names(enum: EnumTypeWrapper, prefix: str, *, lower: bool = True) -> tuple[str, ...]:
    """The domain names of a proto enum's values, in number order, without the _UNSPECIFIED zero."""
    names = [name.removeprefix(prefix) for name, number in sorted(enum.items(), key=lambda item: item[1])
             if number != 0]
    return tuple(name.lower() if lower else name for name in names)


def enum_label(enum: EnumTypeWrapper, value: int, prefix: str, *, unspecified: str | None = None,
               unknown: str | None = None) -> str:
    """One value's name without the prefix (e.g. PART_OUTCOME_ANSWERED -> ANSWERED). The _UNSPECIFIED
    zero reads as `unspecified` when given (a domain's "no value", often ""); a number the enum does not
    know (a newer peer) reads as `unknown`, or as the number itself (so a core can refuse it by name)."""
    try:
        name = enum.Name(value)
    except ValueError:
        return str(value) if unknown is None else unknown
    if value == 0 and unspecified is not None:
        return unspecified
    return name.removeprefix(prefix)


class EnumVocabulary:
    """Domain names <-> proto enum numbers for one enum (unknown numbers and names raise KeyError)."""

    def __init__(self, enum: EnumTypeWrapper, prefix: str, *, lower: bool = True) -> None:
        self.names = enum_names(enum, prefix, lower=lower)
        self._by_name = {name: enum.Value(prefix + name.upper()) for name in self.names}
        self._by_number = {number: name for name, number in self._by_name.items()}

    def name(self, number: int) -> str:
        return self._by_number[number]

    def number(self, name: str) -> int:
        return self._by_name[name]

    def name_or(self, number: int, default: str) -> str:
        return self._by_number.get(number, default)


# --- version status (common.v1.VersionStatus) ----------------------------------------------------
VERSION_STATUS = EnumVocabulary(common_pb2.VersionStatus, "VERSION_STATUS_")
DRAFT, APPROVED, RETIRED = "draft", "approved", "retired"
VERSION_STATUSES = VERSION_STATUS.names
# The only legal moves of SetVersionStatus (setting the current status again is a no-op).
STATUS_TRANSITIONS = frozenset({(DRAFT, APPROVED), (APPROVED, RETIRED)})

# --- intents (common.v1.Intent) ------------------------------------------------------------------
INTENT = EnumVocabulary(common_pb2.Intent, "INTENT_")
INTENTS = INTENT.names
CLINICAL = "clinical"
# What a document version may be written for: every intent but the clinical boundary, which no
# policy answers (the orchestrator sends clinical questions to a clinician, never to retrieval).
DOCUMENT_INTENTS = tuple(intent for intent in INTENTS if intent != CLINICAL)

# --- claim types (common.v1.ClaimType; upper case, as the source policy names them) -------------
CLAIM_TYPE = EnumVocabulary(common_pb2.ClaimType, "CLAIM_TYPE_", lower=False)
CLAIM_TYPES = CLAIM_TYPE.names
