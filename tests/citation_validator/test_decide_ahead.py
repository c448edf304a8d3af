"""The support decision made while the cited passages are reloaded (core._decide_ahead): it overlaps
the wait on the store of record, and it counts only where the evidence read from the store of
record is exactly what it read; a remote judge is never asked ahead."""

from __future__ import annotations

import contextvars
import threading

import pytest
from citetrace.identity import passage_id_of, sha256_hex
from citetrace.vocab import APPROVED

from services.citation_validator import bootstrap
from services.citation_validator import support as support_mod
from services.citation_validator.core import ClaimIn, Loaded, OfferedPassage, StoredPassage, Validator
from services.citation_validator.policy import SourcePolicy
from services.citation_validator.settings import Settings

TENANT = "acme-health"
TEXT = "Please arrive 15 minutes before your appointment time."
CALLER = contextvars.ContextVar("caller", default="nobody")


def _passage(title: str = "Arrival", heading: str = "Before your visit", text: str = TEXT):
    pid = passage_id_of(TENANT, "arrival", "v1", 0, len(text))
    digest = sha256_hex(text)
    offered = OfferedPassage("S1", pid, TENANT, "arrival", "v1", 0, len(text), digest, "p1", "scheduling_policy",
                             text, title=title, heading_context=heading)
    return pid, offered, digest


def _stored(pid: str, digest: str, title: str = "Arrival", heading: str = "Before your visit") -> StoredPassage:
    return StoredPassage(pid, TENANT, "arrival", "v1", 0, len(TEXT), digest, "p1", "scheduling_policy", TEXT,
                         APPROVED, title=title, heading_context=heading)


class Store:
    """Answers after `ahead_done` is set (or after `wait` seconds): a reload that waits for the decision made
    ahead only returns early when the two run at the same time. It records the caller it ran for."""

    def __init__(self, stored: StoredPassage | None, ahead_done: threading.Event, wait: float) -> None:
        self.stored, self.ahead_done, self.wait = stored, ahead_done, wait
        self.overlapped = False
        self.callers: list[str] = []

    def load(self, passage_ids, timeout):
        self.callers.append(CALLER.get())
        self.overlapped = self.ahead_done.wait(self.wait)
        found = {self.stored.passage_id: self.stored} if self.stored else {}
        return Loaded(found, set(passage_ids) - set(found))


class TitleJudge:
    """SUPPORTED only on evidence titled "Arrival"; records what it was asked and signals the store."""

    version = "test:title-judge"

    def __init__(self, local: bool, done: threading.Event) -> None:
        self.local, self.done = local, done
        self.asked: list[tuple[str, ...]] = []

    def warm_up(self) -> None:
        pass

    def decide(self, claim, evidence):
        self.asked.append(tuple(e.title for e in evidence))
        self.done.set()
        verdict = support_mod.SUPPORTED if all(e.title == "Arrival" for e in evidence) else support_mod.UNSUPPORTED
        return support_mod.Decision(verdict, 1.0 if verdict == support_mod.SUPPORTED else 0.0, "by title", self.version)


def _validate(offered_title: str, stored_title: str | None, local: bool = True, stored_digest: str | None = None):
    done = threading.Event()
    pid, offered, digest = _passage(title=offered_title)
    stored = None if stored_title is None else _stored(pid, stored_digest or digest, title=stored_title)
    # Nothing is decided ahead for a remote judge: its store need not wait long to show it.
    store, judge = Store(stored, done, 2.0 if local else 0.2), TitleJudge(local, done)
    validator = Validator(store, SourcePolicy.load(Settings.source_policy_file), judge)
    token = CALLER.set("patient-7")
    try:
        result = validator.validate(TENANT, [ClaimIn("c1", TEXT, ("S1",), "ARRIVAL_RULE")], [offered], None)
    finally:
        CALLER.reset(token)
        validator.close()
    return result, store, judge


def test_decided_while_the_passage_is_reloaded_and_kept_when_the_stored_evidence_is_the_same():
    result, store, judge = _validate("Arrival", "Arrival")
    assert store.overlapped, "the reload waited for nothing: the decision was not made while it ran"
    assert store.callers == ["patient-7"], "the reload runs with the caller's context (its token)"
    assert judge.asked == [("Arrival",)], "decided once: the decision made ahead was kept"
    (claim,) = result.claims
    assert claim.support == support_mod.SUPPORTED and not claim.findings and result.passed


def test_a_stored_title_other_than_the_offered_one_is_decided_again_on_the_stored_evidence():
    result, _, judge = _validate("Arrival", "Parking")
    assert judge.asked == [("Arrival",), ("Parking",)]
    (claim,) = result.claims
    assert claim.support == support_mod.UNSUPPORTED and claim.withheld


def test_an_offered_title_the_store_does_not_have_cannot_make_a_claim_supported():
    result, _, judge = _validate("Parking", "Arrival")
    assert judge.asked == [("Parking",), ("Arrival",)]
    (claim,) = result.claims
    assert claim.support == support_mod.SUPPORTED  # on the stored title, not the offered one


def test_evidence_that_fails_a_check_is_never_decided_on_what_was_offered():
    result, _, judge = _validate("Arrival", "Arrival", stored_digest="0" * 64)
    (claim,) = result.claims
    assert "SPAN_DIGEST_MISMATCH" in {f.reason for f in claim.findings}
    assert claim.support == support_mod.UNSUPPORTED and claim.withheld
    assert judge.asked == [("Arrival",)]  # only the decision ahead, which nothing used


def test_a_remote_judge_is_asked_only_after_the_reload_and_only_about_evidence_that_passed():
    result, store, judge = _validate("Arrival", "Arrival", local=False)
    assert not store.overlapped and judge.asked == [("Arrival",)]
    assert result.claims[0].support == support_mod.SUPPORTED
    _, _, judge = _validate("Arrival", None, local=False)
    assert judge.asked == []


def test_the_shipped_backends_declare_whether_they_run_locally():
    from services.citation_validator.support.embedded import EmbeddedSupportModel
    from services.citation_validator.support.remote import RemoteJudge

    assert EmbeddedSupportModel.local is True
    assert RemoteJudge("http://127.0.0.1:9").local is False


def test_the_reload_pool_is_as_large_as_the_servers_request_pool():
    """A deployment that raises MAX_WORKERS gets as many reloads at once (a fixed pool of 16 made the
    17th concurrent request wait for another's reload before its own could start)."""
    class NoStore:
        def load(self, tenant_id, passage_ids):
            return {}

    built = bootstrap.build(Settings(port=0, metrics_port=-1, max_workers=40), store=NoStore()).validator
    try:
        assert built.reload_workers == 40 and built._reloads._max_workers == 40
    finally:
        built.close()
    with pytest.raises(ValueError, match="reload_workers"):
        Validator(NoStore(), SourcePolicy.load(Settings.source_policy_file), None, reload_workers=0)
