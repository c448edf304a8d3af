"""Who may read and change what in the scheduling system of record (no grpc).

* The patient of a call comes from the verified token (`Principal.patient_ref`), never from a
  request body: a patient may leave `patient_ref` empty or repeat their own; naming anyone else is
  PERMISSION_DENIED, whatever that other patient has (the answer does not depend on them).
* Staff name a patient of their tenant; their token's locations bound every read and write.
* Services (role `service`, calling on their own account) name the patient too.
* Proposals are made by the assistant acting for a user (a delegated token, `act` = a service) or
  by staff; they are decided by the patient or by staff, never by a service: the model never
  executes a change.
"""

from __future__ import annotations

import hashlib
import json

from citetrace import vocab as roles
from citetrace.kit.auth import Principal
from citetrace.kit.errors import InvalidArgument, PermissionDenied
from citetrace.kit.validation import pattern

from services.scheduler_gateway.domain import Idempotency

MAX_PATIENT_REF_LENGTH = 256
IDEMPOTENCY_KEY = pattern("key")  # field_rules.yaml; matched whole

# Roles that read appointments and proposals, and that book a slot directly.
RECORD_ROLES = (roles.PATIENT, roles.STAFF, roles.SERVICE)


def is_staff(principal: Principal) -> bool:
    return principal.has_any_role((roles.STAFF,))


def names_patients(principal: Principal) -> bool:
    """Staff and services name the patient in the request; a patient is their token's patient.
    (A delegated token carries the user's roles, so staff through the assistant are still staff.)"""
    return principal.has_any_role((roles.STAFF, roles.SERVICE))


def require_record_role(principal: Principal, action: str) -> None:
    if not principal.has_any_role(RECORD_ROLES):
        raise PermissionDenied("ROLE_NOT_ALLOWED", f"{action} needs one of the roles {', '.join(RECORD_ROLES)}")


def patient_of(principal: Principal, requested: str, *, required: bool) -> str | None:
    """The patient a call is about. None: every patient of the caller's scope (staff listing)."""
    requested = requested.strip()
    if len(requested) > MAX_PATIENT_REF_LENGTH:
        raise InvalidArgument("VALUE_TOO_LONG", f"patient_ref is at most {MAX_PATIENT_REF_LENGTH} characters",
                              field="patient_ref")
    if names_patients(principal):
        if required and not requested:
            raise InvalidArgument("MISSING_PATIENT_REF", "patient_ref is required: name the patient",
                                  field="patient_ref")
        return requested or None
    if not principal.has_any_role((roles.PATIENT,)) or not principal.patient_ref:
        raise PermissionDenied("ROLE_NOT_ALLOWED", "this call needs a patient, staff or service token")
    if requested and requested != principal.patient_ref:
        raise PermissionDenied(
            "PATIENT_REF_FROM_TOKEN",
            "a patient acts only for themselves: leave patient_ref empty (it comes from your token)",
            field="patient_ref")
    return principal.patient_ref


def actor_ref(principal: Principal) -> str:
    """Pseudonymous reference of who did something, naming the service that acted for them."""
    return f"{principal.subject} via {principal.actor}" if principal.actor else principal.subject


def idempotency(principal: Principal, key: str, operation: str, **fields: object) -> Idempotency | None:
    """The key of a write with the fingerprint of its request (operation, caller, fields): the
    same key with another fingerprint is another request. None when no key is given."""
    key = key.strip()
    if not key:
        return None
    if not IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidArgument(
            "INVALID_IDEMPOTENCY_KEY",
            "idempotency_key must be 1-128 characters of letters, digits and . _ : - (e.g. a UUID)",
            field="idempotency_key")
    canonical = json.dumps({"op": operation, "sub": principal.subject, "actor": principal.actor, **fields},
                           sort_keys=True, separators=(",", ":"), default=str)
    return Idempotency(key, operation, hashlib.sha256(canonical.encode()).hexdigest())
