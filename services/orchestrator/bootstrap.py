"""The orchestrator's one assembly point: settings -> adapters -> core -> servicer.

`python -m services.orchestrator`, the tests and the benchmarks all build the service here. A
caller that wants other adapters (bench/ask_bench.py calls the other services' servicers in
process) passes its own `Downstream` and trace sink; everything else is wired the same way."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from citetrace.kit.auth import AUTH_PREFIX, AuthSettings
from citetrace.kit.server import ServiceSpec
from citetrace.kit.settings import SettingsError, load_settings
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from citetrace.orchestrator.v1 import orchestrator_service_pb2_grpc as pb_grpc

from services.orchestrator import adapters
from services.orchestrator.ask_results import AskResultStore, ProtoAskResults
from services.orchestrator.assembler import ProtoAssembler
from services.orchestrator.conversations import ConversationStore
from services.orchestrator.core.ask import AskSettings, Orchestrator
from services.orchestrator.core.calls import CallPolicy
from services.orchestrator.core.change import AppointmentPart, ChangePlanner, ContactPart, ProposalPart
from services.orchestrator.core.change_requests import detect as detect_change
from services.orchestrator.core.consequences import Vocabulary
from services.orchestrator.core.grounding import GroundedAnswerer
from services.orchestrator.core.locations import LocationDirectory
from services.orchestrator.core.model import PartKind
from services.orchestrator.core.parts import PartHandlers
from services.orchestrator.core.policy_part import PolicyPart, PolicySettings
from services.orchestrator.core.ports import (
    DeliveringTraceSink,
    Generation,
    Retrieval,
    Scheduler,
    TraceSink,
    Validator,
)
from services.orchestrator.core.router import LexiconRouter, detect_intents, load_lexicon
from services.orchestrator.core.routing import RoutingStage
from services.orchestrator.core.slot_part import SlotPart, SlotSettings
from services.orchestrator.core.wording import load_catalog
from services.orchestrator.servicer import OrchestratorServicer
from services.orchestrator.settings import Settings
from services.orchestrator.understanding.analysis import QuestionAnalyzer
from services.orchestrator.understanding.encoder import QuestionEncoder
from services.orchestrator.understanding.gate import LearnedScopeGate

log = logging.getLogger("citetrace.orchestrator")

POLICY_KINDS = (PartKind.ARRIVAL_PREPARATION, PartKind.CANCELLATION_RESCHEDULING, PartKind.PROVIDER_DESCRIPTION,
                PartKind.OTHER_POLICY)


@dataclasses.dataclass(frozen=True)
class Downstream:
    """The authorities the orchestrator asks (the core's ports)."""

    scheduler: Scheduler
    retrieval: Retrieval
    generation: Generation
    validator: Validator


def grpc_downstream(settings: Settings, auth: AuthSettings | None = None) -> Downstream:
    return Downstream(
        adapters.SchedulerClient.of_target(settings.scheduler_gateway_target, auth),
        adapters.RetrievalClient.of_target(settings.retrieval_target),
        adapters.GenerationClient.of_target(settings.generation_target),
        adapters.ValidatorClient.of_target(settings.citation_validator_target))


def grpc_trace_sink(settings: Settings, auth: AuthSettings | None) -> adapters.TraceSink:
    if auth is None:
        log.warning("no CITETRACE_AUTH_* settings: traces cannot be signed for the trace service")
    return adapters.TraceSink(settings.trace_target, auth, settings.outbox_path(), settings.trace_timeout_seconds,
                              settings.trace_delivery, settings.outbox_synchronous)


def understanding(settings: Settings, lexicon) -> QuestionAnalyzer:
    """The boundary and intent classifiers (one encoder run per question), the router's lexicon as
    the high-precision intent override (without the entries the model file measured as imprecise)."""
    encoder = QuestionEncoder(settings.model_cache_dir or None)
    return QuestionAnalyzer(encoder, lexicon=lambda clause, skip: detect_intents(clause, lexicon, skip))


def build_core(settings: Settings, downstream: Downstream, trace_sink: TraceSink,
               before_commit: Callable[[], None] | None = None) -> Orchestrator:
    """The use case with its stages and part handlers (no network until the first Ask).
    `before_commit` (tests only) runs inside each conversation turn's transaction just before its
    deadline check and commit: a slowed commit."""
    lexicon = load_lexicon()
    answerer = GroundedAnswerer(downstream.generation, downstream.validator, max_passages=settings.context_max_passages,
                                max_chars=settings.context_max_chars, max_regenerations=settings.max_regenerations)
    policy = PolicyPart(downstream.retrieval, answerer, lexicon,
                        PolicySettings(search_k=settings.search_k, conflict_top_n=settings.conflict_top_n,
                                       clinic_rules_asked=settings.clinic_rules_asked,
                                       clinic_rules_search_k=settings.clinic_rules_search_k,
                                       relevance_gate=settings.relevance_gate,
                                       relevance_offer=settings.relevance_offer))
    vocabulary = Vocabulary(lexicon.appointment_types, lexicon.specialties)
    handlers = PartHandlers({PartKind.LIVE_SLOT: SlotPart(downstream.scheduler, SlotSettings(settings.slot_page_size)),
                             **{kind: policy for kind in POLICY_KINDS},
                             PartKind.APPOINTMENT: AppointmentPart(downstream.scheduler),
                             PartKind.CHANGE_PROPOSAL: ProposalPart(downstream.scheduler, vocabulary),
                             PartKind.CONTACT_DETAILS: ContactPart()})
    return Orchestrator(
        RoutingStage(LearnedScopeGate(understanding(settings, lexicon)), LexiconRouter(lexicon, settings.slot_horizon_days)),
        LocationDirectory(downstream.scheduler, settings.locations_cache_seconds), handlers, ProtoAssembler(),
        trace_sink, load_catalog(),
        AskSettings(default_deadline_seconds=settings.default_deadline_seconds,
                    trace_reserve_seconds=settings.trace_reserve_seconds, max_workers=settings.part_workers,
                    max_question_chars=settings.max_question_chars,
                    as_of_skew_seconds=settings.as_of_skew_seconds),
        CallPolicy(call_timeout_seconds=settings.call_timeout_seconds),
        ConversationStore(settings.conversations_url(), settings.conversation_ttl_seconds,
                          before_commit=before_commit),
        ChangePlanner(detect_change, settings.slot_horizon_days),
        ProtoAskResults(ask_result_store(settings)))


def ask_result_store(settings: Settings) -> AskResultStore:
    """Idempotent Asks' answers, in the orchestrator's database (beside the conversations)."""
    store = AskResultStore(settings.conversations_url(), stale_seconds=settings.idempotency_stale_seconds)
    store.migrate()
    return store


def default_auth() -> AuthSettings | None:
    try:
        return load_settings(AuthSettings, AUTH_PREFIX)
    except SettingsError:
        return None  # in-process contract tests; the trace sink logs that traces cannot be signed


def build_servicer(settings: Settings, auth: AuthSettings | None = None, *, downstream: Downstream | None = None,
                   trace_sink: DeliveringTraceSink | None = None,
                   before_commit: Callable[[], None] | None = None) -> OrchestratorServicer:
    sink = trace_sink if trace_sink is not None else grpc_trace_sink(settings, auth)
    core = build_core(settings, downstream or grpc_downstream(settings, auth), sink, before_commit)
    return OrchestratorServicer(core, sink)


def build_spec(settings: Settings, auth: AuthSettings | None = None, **overrides: Any) -> ServiceSpec:
    servicer = build_servicer(settings, auth if auth is not None else default_auth(), **overrides)
    return ServiceSpec(
        name="orchestrator",
        full_name=pb.DESCRIPTOR.services_by_name["OrchestratorService"].full_name,
        servicer=servicer,
        refused=servicer.refused,
        register=pb_grpc.add_OrchestratorServiceServicer_to_server,
        # Largest request accepted (documented in ARCHITECTURE.md, "Limits"): an AskRequest is a question of at most 4,000 characters and a few IDs.
        max_receive_message_bytes=1 * 1024 * 1024,
    )
