"""Citation validation (DESIGN.md §5), free of grpc: the structural checks with their named
reasons, the reload of every cited passage from the store of record behind `PassageStore`, and
the support decision per claim.

Never a silent pass: a check that could not run (the store unavailable or too slow) is the
finding CHECK_UNAVAILABLE and the claim's support is UNRESOLVED.
"""

from __future__ import annotations

import contextvars
import dataclasses
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Protocol

from citetrace.identity import passage_id_of, pinned_link, sha256_hex
from citetrace.kit.metrics import record_citation_failure
from citetrace.kit.telemetry import stage
from citetrace.kit.timestamps import utc_now
from citetrace.textnorm import tokens
from citetrace.vocab import APPROVED

from services.citation_validator import support as support_mod
from services.citation_validator.policy import SourcePolicy
from services.citation_validator.support import checks as support_checks
from services.citation_validator.validation import check_request

CITATION_GAP = "CITATION_GAP"
CITATION_UNKNOWN = "CITATION_UNKNOWN"
DUPLICATE_CLAIM_ID = "DUPLICATE_CLAIM_ID"
DUPLICATE_PASSAGE_ID = "DUPLICATE_PASSAGE_ID"
DANGLING_EVIDENCE_REF = "DANGLING_EVIDENCE_REF"
VERSION_MISMATCH = "VERSION_MISMATCH"
SPAN_DIGEST_MISMATCH = "SPAN_DIGEST_MISMATCH"
LOCATOR_MISMATCH = "LOCATOR_MISMATCH"
STALE_VERSION = "STALE_VERSION"
AUTHORITY_MISMATCH = "AUTHORITY_MISMATCH"
SCOPE_VIOLATION = "SCOPE_VIOLATION"
CHECK_UNAVAILABLE = "CHECK_UNAVAILABLE"
UNSUPPORTED_CLAIM = "UNSUPPORTED_CLAIM"
PASSAGE_NEEDS_REVIEW = "PASSAGE_NEEDS_REVIEW"

SUPPORTED, UNSUPPORTED, UNRESOLVED = support_mod.SUPPORTED, support_mod.UNSUPPORTED, support_mod.UNRESOLVED


@dataclasses.dataclass(frozen=True)
class OfferedPassage:
    """A passage as it was offered to the generator, with its label."""

    label: str
    passage_id: str = ""
    tenant_id: str = ""
    document_id: str = ""
    version_id: str = ""
    start: int = 0
    end: int = 0
    content_sha256: str = ""
    source_anchor: str = ""
    source_class: str = ""
    text: str = ""
    page_start: int = 0
    page_end: int = 0
    page_label_start: str = ""
    page_label_end: str = ""
    # As offered: the support decision reads the stored title and headings; these only let it start
    # before the reload (_decide_ahead), and count only where they equal the stored ones.
    title: str = ""
    heading_context: str = ""

    @property
    def pages(self) -> tuple[int, int, str, str]:
        return self.page_start, self.page_end, self.page_label_start, self.page_label_end


@dataclasses.dataclass(frozen=True)
class ClaimIn:
    claim_id: str
    text: str
    labels: tuple[str, ...]
    claim_type: str = ""  # "" = unspecified


@dataclasses.dataclass(frozen=True)
class StoredPassage:
    """A passage as the store of record returns it now, with its version's lifecycle."""

    passage_id: str
    tenant_id: str
    document_id: str
    version_id: str
    start: int
    end: int
    content_sha256: str
    source_anchor: str
    source_class: str
    text: str
    status: str  # citetrace.vocab.VERSION_STATUSES ("" when unknown)
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str = ""
    title: str = ""
    heading_context: str = ""
    page_start: int = 0
    page_end: int = 0
    page_label_start: str = ""
    page_label_end: str = ""
    review_state: str = ""  # NOT_REQUIRED | PENDING | APPROVED ("" = unknown: treated as not required)

    @property
    def pages(self) -> tuple[int, int, str, str]:
        return self.page_start, self.page_end, self.page_label_start, self.page_label_end


class StoreUnavailable(Exception):
    """The store of record could not be asked (down, too slow, or refused for another reason)."""


@dataclasses.dataclass
class Loaded:
    found: dict[str, StoredPassage]
    not_found: set[str]
    # Passages whose stored text no longer matches its digest (the store refused to serve them).
    corrupt: set[str] = dataclasses.field(default_factory=set)


class PassageStore(Protocol):
    def load(self, passage_ids: list[str], timeout: float) -> Loaded:
        """The passages visible to the current caller. IDs the caller may not see (other
        tenant, other audience) or that do not exist are in not_found, indistinguishably.
        Raises StoreUnavailable."""


@dataclasses.dataclass(frozen=True)
class Finding:
    reason: str
    label: str = ""
    passage_id: str = ""
    message: str = ""


@dataclasses.dataclass(frozen=True)
class Citation:
    label: str
    passage_id: str
    document_id: str
    version_id: str
    start: int
    end: int
    content_sha256: str
    source_anchor: str
    source_class: str
    link: str
    title: str
    page_start: int = 0
    page_end: int = 0
    page_label_start: str = ""
    page_label_end: str = ""


@dataclasses.dataclass
class ClaimResult:
    claim_id: str
    findings: list[Finding]
    support: str
    support_score: float
    support_reason: str
    citations: list[Citation]
    withheld: bool
    support_model: str = ""


@dataclasses.dataclass
class ValidationResult:
    claims: list[ClaimResult]
    findings: list[Finding]
    passed: bool
    source_policy_version: str
    support_model: str


# Words that make a sentence a rule: a NON_FACTUAL claim containing them needs evidence too.
_RULE_WORDS = frozenset({
    "must", "required", "require", "requires", "mandatory", "need", "needs", "fee", "fees", "charge", "charged",
    "cancel", "cancellation", "reschedule", "rescheduled", "arrive", "arrival", "bring", "fast", "fasting",
    "never", "only", "always", "allowed", "available", "book", "booked", "accepts", "accepted",
})


def _pages(pages: tuple[int, int, str, str]) -> str:
    start, end, label_start, label_end = pages
    if start <= 0:
        return "no page"
    return f"viewer pages {start}-{end} (labels {label_start!r}-{label_end!r})"


def states_rule(text: str) -> bool:
    return bool(support_checks.quantities(text)) or bool(set(tokens(text)) & _RULE_WORDS)


class Validator:
    def __init__(
        self,
        store: PassageStore,
        policy: SourcePolicy,
        support_model: support_mod.SupportModel,
        reload_timeout: float = 2.0,
        max_claims: int = 64,
        max_offered: int = 100,
        reload_workers: int = 16,
    ) -> None:
        self.store = store
        self.max_claims = max_claims
        self.max_offered = max_offered
        self.policy = policy
        self.support = support_model
        self.reload_timeout = reload_timeout
        # The reload runs here while the request's thread decides support ahead (_decide_ahead):
        # as many at once as the server has request workers (bootstrap: ServerSettings.max_workers),
        # so a request never waits for another's reload to start.
        if reload_workers < 1:
            raise ValueError("reload_workers must be >= 1")
        self.reload_workers = reload_workers
        self._reloads = ThreadPoolExecutor(max_workers=reload_workers, thread_name_prefix="validator-reload")

    def close(self) -> None:
        self._reloads.shutdown(wait=False, cancel_futures=True)

    @property
    def support_model(self) -> str:
        return self.support.version

    def validate(
        self, tenant_id: str, claims: list[ClaimIn], offered: list[OfferedPassage], as_of: datetime | None
    ) -> ValidationResult:
        check_request(claims, offered, max_claims=self.max_claims, max_offered=self.max_offered)
        as_of = as_of or utc_now()
        with stage("citation_validator", "validator.validate", claims=len(claims), offered=len(offered)) as span:
            result = self._validate(tenant_id, claims, offered, as_of)
            span.set_attribute("citetrace.passed", result.passed)
            span.set_attribute("citetrace.findings", len(result.findings) + sum(len(c.findings) for c in result.claims))
            span.set_attribute("citetrace.withheld", sum(1 for c in result.claims if c.withheld))
        for finding in result.findings:
            record_citation_failure(finding.reason)
        for claim in result.claims:
            for finding in claim.findings:
                record_citation_failure(finding.reason)
            if claim.support == UNSUPPORTED:
                record_citation_failure(UNSUPPORTED_CLAIM)
        return result

    # -- the checks --------------------------------------------------------------------------

    def _validate(self, tenant_id: str, claims: list[ClaimIn], offered: list[OfferedPassage],
                  as_of: datetime) -> ValidationResult:
        answer_findings: list[Finding] = []
        by_label: dict[str, list[OfferedPassage]] = {}
        for item in offered:
            by_label.setdefault(item.label, []).append(item)
        ambiguous = {label for label, items in by_label.items() if len(items) > 1}
        for label in sorted(ambiguous):
            answer_findings.append(Finding(DANGLING_EVIDENCE_REF, label, "",
                                           f"label {label} is bound to {len(by_label[label])} offered passages"))
        labels_of_pid: dict[str, list[str]] = {}
        for item in offered:
            if item.passage_id:
                labels_of_pid.setdefault(item.passage_id, []).append(item.label)
        duplicated_labels: set[str] = set()
        for pid, labels in labels_of_pid.items():
            if len(labels) > 1:
                duplicated_labels.update(labels)
                answer_findings.append(Finding(DUPLICATE_PASSAGE_ID, ",".join(labels), pid,
                                               f"passage {pid[:12]}… is offered twice, as {' and '.join(labels)}"))
        seen_ids: dict[str, int] = {}
        for claim in claims:
            seen_ids[claim.claim_id] = seen_ids.get(claim.claim_id, 0) + 1
        duplicate_claim_ids = {cid for cid, n in seen_ids.items() if n > 1}
        for cid in sorted(duplicate_claim_ids):
            answer_findings.append(Finding(DUPLICATE_CLAIM_ID, "", "", f"claim_id {cid} is used by {seen_ids[cid]} claims"))

        # Reload every cited, well-bound passage of the caller's tenant in one round trip.
        to_reload = sorted({
            by_label[label][0].passage_id
            for claim in claims for label in claim.labels
            if label in by_label and label not in ambiguous and by_label[label][0].passage_id
            and by_label[label][0].tenant_id == tenant_id
        })
        loaded: Loaded | None = None
        unavailable = ""
        ahead: dict[tuple[str, tuple[support_mod.Evidence, ...]], support_mod.Decision] = {}
        if to_reload:
            # The reload waits on the store of record; a local support model decides meanwhile.
            reload: Future = self._reloads.submit(contextvars.copy_context().run, self._reload, to_reload)
            try:
                if self.support.local:
                    ahead = self._decide_ahead(claims, by_label, ambiguous, tenant_id)
            finally:
                loaded, unavailable = reload.result()

        passage_findings: dict[str, tuple[list[Finding], StoredPassage | None]] = {}

        def check_label(label: str) -> tuple[list[Finding], StoredPassage | None]:
            if label in passage_findings:
                return passage_findings[label]
            out: list[Finding] = []
            stored: StoredPassage | None = None
            items = by_label.get(label)
            if not items:
                out.append(Finding(CITATION_UNKNOWN, label, "", f"label {label} was not offered to the generator"))
            elif label in ambiguous:
                out.append(Finding(DANGLING_EVIDENCE_REF, label, "", f"label {label} does not resolve to one passage"))
            else:
                item = items[0]
                if not item.passage_id:
                    out.append(Finding(DANGLING_EVIDENCE_REF, label, "", f"offered label {label} carries no passage identity"))
                else:
                    if label in duplicated_labels:
                        out.append(Finding(DUPLICATE_PASSAGE_ID, label, item.passage_id,
                                           f"the passage of {label} is offered under another label too"))
                    stored, more = self._check_passage(tenant_id, item, loaded, unavailable, as_of)
                    out.extend(more)
            passage_findings[label] = (out, stored)
            return out, stored

        results: list[ClaimResult] = []
        with stage("citation_validator", "validator.support", claims=len(claims)) as span:
            for claim in claims:
                results.append(self._claim(claim, check_label, duplicate_claim_ids, ahead))
            for verdict in (SUPPORTED, UNSUPPORTED, UNRESOLVED):
                span.set_attribute(f"citetrace.{verdict.lower()}", sum(1 for r in results if r.support == verdict))
        passed = not answer_findings and all(not r.findings and r.support == SUPPORTED for r in results)
        return ValidationResult(results, answer_findings, passed, self.policy.version, self.support_model)

    def _reload(self, passage_ids: list[str]) -> tuple[Loaded | None, str]:
        """(the passages the store of record returns, or None and why it did not answer)."""
        with stage("citation_validator", "validator.reload", passages=len(passage_ids)) as span:
            try:
                loaded = self.store.load(passage_ids, self.reload_timeout)
            except StoreUnavailable as exc:
                span.set_attribute("citetrace.outcome", "unavailable")
                return None, str(exc) or "the store of record did not answer"
            span.set_attribute("citetrace.not_found", len(loaded.not_found))
            return loaded, ""

    def _decide_ahead(self, claims: list[ClaimIn], by_label: dict[str, list[OfferedPassage]], ambiguous: set[str],
                      tenant_id: str) -> dict[tuple[str, tuple[support_mod.Evidence, ...]], support_mod.Decision]:
        """Each claim's support decision on its cited passages as offered, made while they are
        reloaded. Keyed by exactly what the decision read: _claim uses one only where the evidence
        that passed the checks, read from the store of record, is the same (so a passage whose text,
        title or headings differ from the offer, or that fails a check, is decided again)."""
        out = {}
        with stage("citation_validator", "validator.support_ahead", claims=len(claims)):
            for claim in claims:
                if self.policy.claim_type(claim.claim_type) == "NON_FACTUAL" and not states_rule(claim.text):
                    continue  # needs no evidence (_claim)
                items = [by_label[label][0] for label in dict.fromkeys(claim.labels)
                         if label in by_label and label not in ambiguous]
                if not items or any(not i.passage_id or i.tenant_id != tenant_id for i in items):
                    continue
                evidence = tuple(support_mod.Evidence(i.text, i.title, i.heading_context) for i in items)
                out[(claim.text, evidence)] = self.support.decide(claim.text, list(evidence))
        return out

    def _check_passage(self, tenant_id: str, item: OfferedPassage, loaded: Loaded | None, unavailable: str,
                       as_of: datetime) -> tuple[StoredPassage | None, list[Finding]]:
        label, pid = item.label, item.passage_id
        if item.tenant_id != tenant_id:
            return None, [Finding(SCOPE_VIOLATION, label, pid, f"{label} belongs to another tenant than the caller")]
        if unavailable or loaded is None:
            return None, [Finding(CHECK_UNAVAILABLE, label, pid,
                                  f"could not reload {label} from the store of record: {unavailable or 'not asked'}")]
        if pid in loaded.corrupt:
            return None, [Finding(SPAN_DIGEST_MISMATCH, label, pid,
                                  f"the store of record's text of {label} no longer matches its digest "
                                  "(retrieval refused it with DATA_LOSS)")]
        stored = loaded.found.get(pid)
        if stored is None:
            return None, [Finding(SCOPE_VIOLATION, label, pid,
                                  f"the store of record does not return {label} to this caller "
                                  "(outside its tenant or roles, or no such passage)")]
        findings: list[Finding] = []
        if stored.version_id != item.version_id or stored.document_id != item.document_id:
            findings.append(Finding(VERSION_MISMATCH, label, pid,
                                    f"{label} names version {item.version_id[:12]}… of {item.document_id!r}; the store "
                                    f"has this passage in version {stored.version_id[:12]}… of {stored.document_id!r}"))
        if (stored.start, stored.end) != (item.start, item.end) or stored.source_anchor != item.source_anchor:
            findings.append(Finding(LOCATOR_MISMATCH, label, pid,
                                    f"{label} points to chars {item.start}-{item.end} ({item.source_anchor!r}); the "
                                    f"store has {stored.start}-{stored.end} ({stored.source_anchor!r})"))
        elif stored.pages != item.pages:
            findings.append(Finding(LOCATOR_MISMATCH, label, pid,
                                    f"{label} points to {_pages(item.pages)}; the store has this passage on "
                                    f"{_pages(stored.pages)}"))
        elif not findings and passage_id_of(item.tenant_id, item.document_id, item.version_id, item.start,
                                            item.end) != pid:
            findings.append(Finding(LOCATOR_MISMATCH, label, pid,
                                    f"{label}'s passage ID does not derive from its document, version and span"))
        reloaded_digest = sha256_hex(stored.text)
        if reloaded_digest != item.content_sha256 or reloaded_digest != sha256_hex(item.text) \
                or reloaded_digest != stored.content_sha256:
            findings.append(Finding(SPAN_DIGEST_MISMATCH, label, pid,
                                    f"sha256 of the reloaded span is {reloaded_digest[:12]}…; offered digest "
                                    f"{item.content_sha256[:12]}…, offered text {sha256_hex(item.text)[:12]}…"))
        if stored.review_state == "PENDING":
            findings.append(Finding(PASSAGE_NEEDS_REVIEW, label, pid,
                                    f"{label} awaits review (its extraction could not capture its context) and is "
                                    "not evidence until a policy admin approves it"))
        if stored.status != APPROVED:
            findings.append(Finding(STALE_VERSION, label, pid,
                                    f"version {stored.version_id[:12]}… is {stored.status.lower() or 'of unknown status'}"
                                    + (f", superseded by {stored.superseded_by[:12]}…" if stored.superseded_by else "")))
        elif stored.valid_from is not None and as_of < stored.valid_from:
            findings.append(Finding(STALE_VERSION, label, pid,
                                    f"version {stored.version_id[:12]}… is effective only from {stored.valid_from.isoformat()}"))
        elif stored.valid_to is not None and as_of >= stored.valid_to:
            findings.append(Finding(STALE_VERSION, label, pid,
                                    f"version {stored.version_id[:12]}… stopped being effective at "
                                    f"{stored.valid_to.isoformat()}"
                                    + (f" (superseded by {stored.superseded_by[:12]}…)" if stored.superseded_by else "")))
        return stored, findings

    def _claim(self, claim: ClaimIn, check_label, duplicate_claim_ids: set[str], ahead) -> ClaimResult:
        findings: list[Finding] = []
        if claim.claim_id in duplicate_claim_ids:
            findings.append(Finding(DUPLICATE_CLAIM_ID, "", "", f"claim_id {claim.claim_id} is not unique"))
        claim_type = self.policy.claim_type(claim.claim_type)
        non_factual = claim_type == "NON_FACTUAL" and not states_rule(claim.text)
        if not claim.labels and not non_factual:
            why = ("it is typed NON_FACTUAL but states a rule" if claim_type == "NON_FACTUAL"
                   else f"a {claim_type} claim needs at least one label")
            findings.append(Finding(CITATION_GAP, "", "", f"claim {claim.claim_id} cites nothing; {why}"))
        citations: list[Citation] = []
        evidence: list[support_mod.Evidence] = []
        unavailable = False
        for label in dict.fromkeys(claim.labels):
            passage_level, stored = check_label(label)
            label_findings = list(passage_level)
            if stored is not None and not self.policy.permits(claim.claim_type, stored.source_class):
                label_findings.append(Finding(
                    AUTHORITY_MISMATCH, label, stored.passage_id,
                    f"source class {stored.source_class!r} may not establish a {claim_type} claim "
                    f"(source policy {self.policy.version})"))
            findings.extend(label_findings)
            unavailable |= any(f.reason == CHECK_UNAVAILABLE for f in label_findings)
            if stored is not None and not label_findings:
                citations.append(Citation(
                    label, stored.passage_id, stored.document_id, stored.version_id, stored.start, stored.end,
                    stored.content_sha256, stored.source_anchor, stored.source_class,
                    pinned_link(stored.document_id, stored.version_id, stored.start, stored.end,
                                page=stored.page_start), stored.title, *stored.pages))
                evidence.append(support_mod.Evidence(stored.text, stored.title, stored.heading_context))
        if unavailable:
            verdict, score, reason = UNRESOLVED, 0.0, "a check could not run: the store of record was unavailable"
        elif non_factual:
            verdict, score, reason = SUPPORTED, 1.0, "non-factual text: states no rule, needs no evidence"
        elif not evidence:
            verdict, score, reason = UNSUPPORTED, 0.0, "no cited evidence passed the structural checks"
        else:
            decision = ahead.get((claim.text, tuple(evidence))) or self.support.decide(claim.text, evidence)
            verdict, score, reason = decision.verdict, decision.score, decision.reason
            if decision.unavailable:  # the judge could not decide: never a silent pass
                verdict = UNRESOLVED
                findings.append(Finding(CHECK_UNAVAILABLE, "", "", reason))
        withheld = bool(findings) or verdict != SUPPORTED
        return ClaimResult(claim.claim_id, findings, verdict, score, reason, citations, withheld, self.support.version)
