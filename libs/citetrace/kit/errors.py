"""Domain errors, free of grpc so that service cores can raise them; the server kit maps them to
google.rpc.Status with ErrorInfo (reason, domain "<service>.citetrace")."""

from __future__ import annotations

from enum import Enum


class Code(Enum):
    """The subset of canonical status codes the domain uses (names match grpc.StatusCode)."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    UNAVAILABLE = "UNAVAILABLE"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    INTERNAL = "INTERNAL"
    DATA_LOSS = "DATA_LOSS"


class DomainError(Exception):
    """An error with a canonical code and an UPPER_SNAKE reason a client can branch on."""

    code: Code = Code.INTERNAL

    def __init__(self, reason: str, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.metadata = {key: str(value) for key, value in metadata.items()}

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class InvalidArgument(DomainError):
    code = Code.INVALID_ARGUMENT


class NotFound(DomainError):
    code = Code.NOT_FOUND


class AlreadyExists(DomainError):
    code = Code.ALREADY_EXISTS


class PermissionDenied(DomainError):
    code = Code.PERMISSION_DENIED


class Unauthenticated(DomainError):
    code = Code.UNAUTHENTICATED


class FailedPrecondition(DomainError):
    code = Code.FAILED_PRECONDITION


class Aborted(DomainError):
    code = Code.ABORTED


class Unavailable(DomainError):
    code = Code.UNAVAILABLE


class DeadlineExceeded(DomainError):
    code = Code.DEADLINE_EXCEEDED


class ResourceExhausted(DomainError):
    code = Code.RESOURCE_EXHAUSTED


class Unimplemented(DomainError):
    code = Code.UNIMPLEMENTED


class DataLoss(DomainError):
    """Stored data no longer matches its own digest (corruption): refuse rather than serve it."""

    code = Code.DATA_LOSS


def not_built_yet(rpc: str, issue: str) -> Unimplemented:
    """The one way to say an RPC's behaviour belongs to a later piece of work."""
    return Unimplemented("NOT_IMPLEMENTED", f"{rpc} is not implemented yet ({issue})", rpc=rpc)
