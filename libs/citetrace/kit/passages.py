"""Passages as the caller may read them, from retrieval's GetPassages (the store of record), with
the caller's own token (kit.clients.invoke forwards it) so retrieval's audience rule decides.

GetPassages fails a whole request with NOT_FOUND (or PERMISSION_DENIED) when one passage is not
visible to the caller, and with DATA_LOSS when one no longer matches its digest; the error names
the passage in its ErrorInfo metadata. So a named passage is set aside and the rest asked again;
an unnamed failure is resolved by asking one by one. Used by the citation validator's reload and
by the trace service's passage read-back."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from citetrace.common.v1 import common_pb2
from citetrace.kit.clients import invoke
from citetrace.kit.errors import DataLoss, DeadlineExceeded, DomainError, NotFound, PermissionDenied
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb

BATCH = 20


class PassagesUnreachable(Exception):
    """Retrieval could not be asked (down, too slow, or another failure): nothing is known."""


@dataclasses.dataclass
class VisiblePassages:
    passages: dict[str, common_pb2.Passage] = dataclasses.field(default_factory=dict)
    # Version metadata of the returned passages, by version ID.
    versions: dict[str, common_pb2.DocumentVersion] = dataclasses.field(default_factory=dict)
    # Not visible to the caller (another audience or tenant, or no longer stored): the same answer.
    not_visible: set[str] = dataclasses.field(default_factory=set)
    # Stored text no longer matches its digest: retrieval refused to serve it.
    corrupt: set[str] = dataclasses.field(default_factory=set)


def get_visible_passages(retrieval_stub: Any, passage_ids: Sequence[str], timeout: float, *,
                         batch: int = BATCH) -> VisiblePassages:
    """Every requested passage lands in exactly one of passages, not_visible, corrupt; raises
    PassagesUnreachable when retrieval cannot answer within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    out = VisiblePassages()
    pending = list(dict.fromkeys(passage_ids))
    while pending:
        chunk, pending = pending[:batch], pending[batch:]
        _read(retrieval_stub, chunk, deadline, out)
    return out


def _read(retrieval_stub: Any, chunk: list[str], deadline: float, out: VisiblePassages) -> None:
    remaining = list(chunk)
    while remaining:
        left = deadline - time.monotonic()
        if left <= 0:
            raise PassagesUnreachable("retrieval did not answer in time")
        try:
            reply = invoke(retrieval_stub.GetPassages, ret_pb.GetPassagesRequest(passage_ids=remaining), "retrieval",
                           timeout=left)
        except (NotFound, PermissionDenied, DataLoss) as err:
            bucket = out.corrupt if isinstance(err, DataLoss) else out.not_visible
            named = err.metadata.get("passage_id")
            if named in remaining:
                bucket.add(named)
                remaining.remove(named)
                continue
            if len(remaining) == 1:
                bucket.add(remaining.pop())
                continue
            for pid in list(remaining):  # which one? ask one by one
                _read(retrieval_stub, [pid], deadline, out)
            return
        except DeadlineExceeded as err:
            raise PassagesUnreachable("retrieval did not answer in time") from err
        except DomainError as err:
            raise PassagesUnreachable(f"retrieval: {err.code.value}") from err
        out.versions.update((v.version_id, v) for v in reply.versions)
        for passage in reply.passages:
            out.passages[passage.identity.passage_id] = passage
        out.not_visible.update(pid for pid in remaining if pid not in out.passages)
        return
