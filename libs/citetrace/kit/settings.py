"""Typed settings read from the environment with a per-service prefix, validated at start-up.

A settings class is a frozen dataclass; each field is read from PREFIX + FIELD_NAME.upper().
Supported field types: str, int, float, bool, pathlib.Path, tuple[str, ...] (comma separated),
and Optional variants of those. Unknown variables with the prefix are rejected, so a typo in a
deployment fails loudly instead of being ignored.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class SettingsError(ValueError):
    """Raised at start-up when a variable is malformed or a value fails validation."""


def env_name(prefix: str, field_name: str) -> str:
    return f"{prefix}{field_name.upper()}"


def env_names(cls: type, prefix: str) -> list[str]:
    """Every environment variable a settings class reads (used by deploy checks and docs)."""
    return [env_name(prefix, f.name) for f in dataclasses.fields(cls)]


def load_settings(cls: type[T], prefix: str, environ: Mapping[str, str] | None = None) -> T:
    environ = os.environ if environ is None else environ
    hints = typing.get_type_hints(cls)
    known = set(env_names(cls, prefix))
    unknown = sorted(k for k in environ if k.startswith(prefix) and k not in known)
    if unknown:
        raise SettingsError(f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        name = env_name(prefix, field.name)
        if name in environ:
            values[field.name] = _convert(name, environ[name], hints[field.name])
    try:
        return cls(**values)
    except SettingsError:
        raise
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{cls.__name__}: {exc}") from exc


def _convert(name: str, raw: str, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if raw == "":
            return None
        return _convert(name, raw, args[0])
    if typing.get_origin(hint) is typing.Literal:
        allowed = typing.get_args(hint)
        if raw not in allowed:
            raise SettingsError(f"{name}={raw!r}: expected one of {', '.join(map(str, allowed))}")
        return raw
    if origin is tuple:
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    try:
        if hint is bool:
            lowered = raw.strip().lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError("expected true/false")
        if hint is int:
            return int(raw)
        if hint is float:
            return float(raw)
        if hint is Path:
            return Path(raw)
        return str(raw)
    except ValueError as exc:
        raise SettingsError(f"{name}={raw!r}: {exc}") from exc


def require(condition: bool, message: str) -> None:
    """Validation helper for __post_init__."""
    if not condition:
        raise SettingsError(message)


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """Fields every service has; service settings classes inherit them."""

    host: str = "127.0.0.1"
    port: int = 0
    metrics_port: int = 0
    max_workers: int = 16
    grace_seconds: float = 5.0
    log_level: str = "INFO"

    def __post_init__(self) -> None:
        require(0 <= self.port <= 65535, f"port {self.port} out of range")
        require(-1 <= self.metrics_port <= 65535, f"metrics_port {self.metrics_port} out of range (-1 disables)")
        require(self.max_workers >= 1, "max_workers must be >= 1")
        require(self.grace_seconds >= 0, "grace_seconds must be >= 0")
