"""The one assembly point of the scheduler-gateway: settings -> the system of record (SlotSource; SQL by
default) and the workflow store -> the slot core and the appointment workflow -> the servicer, with
the background tasks (proposal expiry, the action-event relay to trace). __main__, the tests, the
benchmarks and the CLI build the service here."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from citetrace.kit.auth import AuthSettings, auth_from_environment
from citetrace.kit.relay import Periodic
from citetrace.kit.server import ServiceSpec
from citetrace.kit.trace_client import TraceClient
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2 as pb
from citetrace.scheduler_gateway.v1 import scheduler_gateway_service_pb2_grpc as pb_grpc

from services.scheduler_gateway.core import Limits, SchedulerCore
from services.scheduler_gateway.domain import SlotSource
from services.scheduler_gateway.schema import default_database_url
from services.scheduler_gateway.servicer import SchedulerGatewayServicer
from services.scheduler_gateway.settings import Settings
from services.scheduler_gateway.sql_source import SqlSlotSource
from services.scheduler_gateway.sql_workflow import SqlWorkflowStore
from services.scheduler_gateway.trace_events import action_event_relay
from services.scheduler_gateway.workflow import WorkflowCore, WorkflowLimits

log = logging.getLogger("citetrace.scheduler_gateway")


@dataclasses.dataclass
class SchedulerGateway:
    """The assembled service."""

    settings: Settings
    core: SchedulerCore
    workflow: WorkflowCore | None
    servicer: SchedulerGatewayServicer
    # Started after warm-up, stopped before the source closes (expiry sweeper, event relay).
    background: tuple = ()

    def warm_up(self) -> None:
        self.core.source.warm_up()
        for task in self.background:
            task.start()

    def close(self) -> None:
        for task in self.background:
            task.stop()
        self.core.source.close()

    def spec(self) -> ServiceSpec:
        return ServiceSpec(
            name="scheduler_gateway",
            full_name=pb.DESCRIPTOR.services_by_name["SchedulerGatewayService"].full_name,
            servicer=self.servicer,
            register=pb_grpc.add_SchedulerGatewayServiceServicer_to_server,
            # Largest request accepted (documented in ARCHITECTURE.md, "Limits"): requests are IDs, times and a proposal of at most 50 slots.
            max_receive_message_bytes=1 * 1024 * 1024,
            warm_up=self.warm_up,
            close=self.close,
        )


def build(settings: Settings, *, source: SlotSource | None = None, clock: Callable | None = None,
          auth: AuthSettings | None = None, before_commit: Callable[[], None] | None = None) -> SchedulerGateway:
    """The service; `source` replaces the SQL system of record (e.g. another adapter) and `clock`
    the wall clock (tests), without any change elsewhere. Appointments and proposals need the SQL
    source (a confirmation changes slots and appointments in one transaction); with another
    source their RPCs are UNIMPLEMENTED. `auth` signs the service tokens that deliver action events
    to trace; without a signing key they stay queued. `before_commit` (tests only) runs inside every
    scheduling write of the SQL source just before its deadline check and commit: a slowed commit."""
    if source is None:
        source = SqlSlotSource(settings.database_url or default_database_url(settings.data_dir),
                               before_commit=before_commit)
    limits = Limits(
        max_range_days=settings.max_range_days,
        default_range_days=settings.default_range_days,
        default_page_size=settings.default_page_size,
    )
    clock_kw = {} if clock is None else {"clock": clock}
    core = SchedulerCore(source, limits, **clock_kw)
    workflow, background = None, []
    if isinstance(source, SqlSlotSource):
        store = SqlWorkflowStore(source)
        workflow = WorkflowCore(store, WorkflowLimits(
            proposal_ttl_seconds=settings.proposal_ttl_seconds,
            review_task_ttl_seconds=settings.review_task_ttl_seconds,
            default_page_size=settings.default_page_size), **clock_kw)
        if settings.expiry_sweep_seconds > 0:
            background.append(Periodic("scheduler-proposal-expiry", settings.expiry_sweep_seconds, workflow.expire_due))
        if settings.trace_target and auth is not None:  # sent as itself (its mTLS certificate; no token)
            relay = action_event_relay(
                store, TraceClient(settings.trace_target, caller="scheduler_gateway",
                                   timeout=settings.trace_timeout_seconds),
                poll_seconds=settings.action_event_poll_seconds,
                backoff_base_seconds=settings.action_event_backoff_seconds,
                backoff_max_seconds=settings.action_event_max_backoff_seconds)
            core.on_events = workflow.on_events = relay.wake
            background.append(relay)
        else:
            log.warning("scheduler_gateway: no trace target or no CITETRACE_AUTH_* signing key: action events stay "
                        "queued in the scheduling database")
    return SchedulerGateway(settings, core, workflow, SchedulerGatewayServicer(core, workflow), tuple(background))


def build_spec(settings: Settings, auth: AuthSettings | None = None, **adapters) -> ServiceSpec:
    """What services/scheduler_gateway/__main__.py serves (auth from CITETRACE_AUTH_* when not given)."""
    return build(settings, auth=auth or auth_from_environment(), **adapters).spec()
