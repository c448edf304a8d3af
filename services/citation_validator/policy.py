"""The source policy: which source classes may establish which claim type (data, versioned)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml
from citetrace.vocab import CLAIM_TYPES, SOURCE_CLASSES


class SourcePolicyError(ValueError):
    """The policy file is missing, malformed or names an unknown claim type or source class."""


@dataclasses.dataclass(frozen=True)
class SourcePolicy:
    version: str
    allowed: dict[str, frozenset[str]]
    unspecified_claim_type: str = "GENERAL_POLICY"

    def claim_type(self, claim_type: str) -> str:
        """The type a claim is checked as ("" = CLAIM_TYPE_UNSPECIFIED)."""
        return claim_type or self.unspecified_claim_type

    def permits(self, claim_type: str, source_class: str) -> bool:
        return source_class in self.allowed.get(self.claim_type(claim_type), frozenset())

    @classmethod
    def load(cls, path: Path) -> SourcePolicy:
        where = f"source policy {path}"
        try:
            data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise SourcePolicyError(f"{where}: cannot read: {exc}") from exc
        except yaml.YAMLError as exc:
            raise SourcePolicyError(f"{where}: not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise SourcePolicyError(f"{where}: expected a mapping with keys version, claim_types")
        unknown = sorted(set(data) - {"version", "claim_types", "unspecified_claim_type"})
        if unknown:
            raise SourcePolicyError(f"{where}: unknown key(s) {', '.join(unknown)}")
        version = data.get("version")
        if not isinstance(version, str) or not version.strip():
            raise SourcePolicyError(f"{where}: key 'version' must be a non-empty string")
        types = data.get("claim_types")
        if not isinstance(types, dict) or not types:
            raise SourcePolicyError(f"{where}: key 'claim_types' must map claim types to lists of source classes")
        allowed: dict[str, frozenset[str]] = {}
        for claim_type, classes in types.items():
            if claim_type not in CLAIM_TYPES:
                raise SourcePolicyError(f"{where}: claim_types.{claim_type} is not one of {', '.join(CLAIM_TYPES)}")
            if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
                raise SourcePolicyError(f"{where}: claim_types.{claim_type} must be a list of source classes")
            bad = sorted(set(classes) - set(SOURCE_CLASSES))
            if bad:
                raise SourcePolicyError(f"{where}: claim_types.{claim_type} names unknown source class(es) {', '.join(bad)}")
            allowed[claim_type] = frozenset(classes)
        unspecified = data.get("unspecified_claim_type", "GENERAL_POLICY")
        if unspecified not in allowed:
            raise SourcePolicyError(f"{where}: unspecified_claim_type {unspecified!r} has no entry in claim_types")
        return cls(version.strip(), allowed, unspecified)
