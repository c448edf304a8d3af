"""The caller's permitted locations: scheduler-gateway ListLocations (paged), filtered once to the
locations the caller's token allows, cached briefly per tenant and permitted-location set."""

from __future__ import annotations

import threading
import time

from citetrace.kit.auth import Principal
from citetrace.kit.errors import DomainError

from services.orchestrator.core.calls import Calls
from services.orchestrator.core.clinics import LocationInfo
from services.orchestrator.core.ports import Scheduler
from services.orchestrator.core.routing import permitted_locations

MAX_PAGES = 20
_Key = tuple[str, tuple[str, ...]]


class LocationDirectory:
    def __init__(self, scheduler: Scheduler, ttl_seconds: float) -> None:
        self._scheduler = scheduler
        self._ttl = ttl_seconds
        self._lock = threading.Lock()
        self._cache: dict[_Key, tuple[float, list[LocationInfo]]] = {}

    def permitted(self, principal: Principal, calls: Calls) -> tuple[list[LocationInfo] | None, str]:
        """(locations, "") or (None, the reason they could not be listed)."""
        key = (principal.tenant_id, tuple(principal.location_ids))
        with self._lock:
            hit = self._cache.get(key)
            if hit and time.monotonic() - hit[0] < self._ttl:
                return hit[1], ""
        found: list[LocationInfo] = []
        token = ""
        try:
            for _ in range(MAX_PAGES):
                page, token = calls("scheduler_gateway", "scheduler.list_locations", self._scheduler.list_locations,
                                    token)
                found.extend(page)
                if not token:
                    break
        except DomainError as err:
            return None, err.reason
        allowed = permitted_locations(found, principal)
        with self._lock:
            self._cache[key] = (time.monotonic(), allowed)
        return allowed, ""
