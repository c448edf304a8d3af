"""The store of record on SQLite and PostgreSQL: migrations, the ORM agrees with them, and the
service works end to end on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from citetrace.common.v1 import common_pb2

from services.retrieval.store.models import VERSION_TABLE, Base
from services.retrieval.store.store import Store

from .conftest import T2024, T2025, running_service


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite'}"
    return request.getfixturevalue("postgres_url")


def test_migrations_are_idempotent_and_match_the_mapping(store_url):
    store = Store(store_url)
    try:
        store.migrate()
        store.migrate()
        with store.engine.connect() as conn:
            diffs = compare_metadata(
                MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}), Base.metadata)
        assert diffs == []
    finally:
        store.close()


def test_the_service_end_to_end_on_postgresql(auth, tmp_path, postgres_url):
    text = "# Arrival\n\nKom 15 minutter før timen 😀.\n\nUnntak: første time, kom 20 minutter før.\n"
    with running_service(auth, tmp_path, database_url=postgres_url) as svc:
        old = svc.ingest("pg-tenant", "arrival", "Arrive 10 minutes early.", valid_from=T2024)
        new = svc.ingest("pg-tenant", "arrival", text, valid_from=T2025, locale="nb-NO")
        assert list(new.superseded_version_ids) == [old.version.version_id]
        again = svc.ingest("pg-tenant", "arrival", text, valid_from=T2025, locale="nb-NO")
        assert again.created is False
        got = svc.get("pg-tenant", passage_ids=[p.passage_id for p in new.passages])
        assert [p.text for p in got.passages] == [text[p.start:p.end] for p in new.passages]
        assert got.versions[0].valid_from.ToDatetime(tzinfo=UTC) == T2025
        hits = svc.search("pg-tenant", "når skal jeg komme", k=5)
        assert [h.passage.identity.version_id for h in hits.hits] == [new.version.version_id]
        draft = svc.ingest("pg-tenant", "video", "Join 5 minutes early.", status="draft")
        svc.set_status("pg-tenant", draft.version.version_id, "approved")
        svc.set_status("pg-tenant", draft.version.version_id, "retired")
        listed = svc.versions("pg-tenant", page_size=2)
        assert len(listed.versions) == 2 and listed.next_page_token
    with running_service(auth, tmp_path, database_url=postgres_url) as restarted:
        past = restarted.search("pg-tenant", "arrive early", k=5, as_of=datetime(2024, 6, 1, tzinfo=UTC))
        assert [h.passage.identity.version_id for h in past.hits] == [old.version.version_id]
        statuses = {v.document.document_id: v.status for v in restarted.versions("pg-tenant").versions}
        assert statuses["video"] == common_pb2.VERSION_STATUS_RETIRED


def test_replicas_on_one_store_and_a_shared_backend_see_each_others_writes(tmp_path):
    """With a shared backend (OpenSearch), a replica must resolve hits that another replica wrote:
    hits of a non-local backend are read from the store of record, not from process memory."""
    from citetrace.kit.auth import Principal

    from services.retrieval import bootstrap
    from services.retrieval.core import IngestCommand, SearchCommand
    from services.retrieval.index import EmbeddedIndex
    from services.retrieval.settings import Settings
    from services.retrieval.store.records import DocumentRecord

    class SharedBackend:  # stands in for a cluster both replicas talk to
        name = "shared"
        process_local = False  # as OpenSearch: every replica's writes land in it

        def __init__(self):
            self.inner = EmbeddedIndex()

        def __getattr__(self, attribute):
            return getattr(self.inner, attribute)

    backend = SharedBackend()
    settings = Settings(port=0, metrics_port=-1, data_dir=tmp_path)
    reader_replica, writer_replica = (bootstrap.build(settings, backend=backend).core for _ in range(2))
    reader_replica.warm_up()
    writer_replica.warm_up()
    try:
        admin = Principal("t-replica", "admin", ("policy_admin",))
        outcome = writer_replica.ingest(admin, IngestCommand(
            DocumentRecord("t-replica", "doc", "handbook", "Replicated", ""), "Arrive 9 minutes early.", None,
            T2025, None, ("patient",), (), ("other",), "en"))
        writer_replica.set_status(admin, outcome.version.version_id, "retired")
        writer_replica.ingest(admin, IngestCommand(
            DocumentRecord("t-replica", "doc2", "handbook", "Replicated", ""), "Arrive 8 minutes early.", None,
            T2025, None, ("patient",), (), ("other",), "en"))
        result = reader_replica.search(Principal("t-replica", "p", ("patient",)), SearchCommand("arrive early", 5))
        assert [h.text for h in result.hits] == ["Arrive 8 minutes early."]
        assert result.hits[0].version.status == "approved"
        # A new version written by the OTHER replica supersedes one this replica never held in memory.
        first = reader_replica.ingest(admin, IngestCommand(
            DocumentRecord("t-replica", "doc3", "handbook", "Replicated", ""), "Bring 1 form.", None,
            T2024, None, ("patient",), (), ("other",), "en"))
        second = writer_replica.ingest(admin, IngestCommand(
            DocumentRecord("t-replica", "doc3", "handbook", "Replicated", ""), "Bring 2 forms.", None,
            T2025, None, ("patient",), (), ("other",), "en"))
        assert [v.version_id for v in second.superseded] == [first.version.version_id]
        hits = reader_replica.search(Principal("t-replica", "p", ("patient",)), SearchCommand("bring forms", 5)).hits
        assert [h.text for h in hits if h.passage.document_id == "doc3"] == ["Bring 2 forms."]
    finally:
        reader_replica.close()
        writer_replica.close()


def test_a_retried_ingest_whose_index_write_failed_makes_the_version_searchable(tmp_path):
    """Issue 21 point 3: the store commits before the shared index is written, so an ingest can
    fail after its commit (the backend unavailable, the replica killed). Its retry replays the stored
    version (created False) and must index it again, or no replica ever finds it."""
    from citetrace.kit.auth import Principal
    from citetrace.kit.errors import Unavailable

    from services.retrieval import bootstrap
    from services.retrieval.core import IngestCommand, SearchCommand
    from services.retrieval.index import EmbeddedIndex
    from services.retrieval.settings import Settings
    from services.retrieval.store.records import DocumentRecord

    class FlakySharedBackend:  # a shared index whose next upsert fails once
        name = "shared"
        process_local = False

        def __init__(self):
            self.inner = EmbeddedIndex()
            self.fail_next_upsert = False

        def upsert(self, passages):
            if self.fail_next_upsert:
                self.fail_next_upsert = False
                raise Unavailable("SEARCH_BACKEND_UNAVAILABLE", "injected: the index write failed")
            return self.inner.upsert(passages)

        def __getattr__(self, attribute):
            return getattr(self.inner, attribute)

    backend = FlakySharedBackend()
    core = bootstrap.build(Settings(port=0, metrics_port=-1, data_dir=tmp_path), backend=backend).core
    core.warm_up()
    try:
        admin = Principal("t-retry", "admin", ("policy_admin",))
        command = IngestCommand(DocumentRecord("t-retry", "doc", "handbook", "Retried", ""),
                                "Bring your insurance card.", None, T2025, None, ("patient",), (), ("other",), "en")
        backend.fail_next_upsert = True
        with pytest.raises(Unavailable):
            core.ingest(admin, command)
        retried = core.ingest(admin, command)
        assert not retried.created  # the first attempt's commit stands; the retry replays it
        hits = core.search(Principal("t-retry", "p", ("patient",)), SearchCommand("insurance card", 5)).hits
        assert [h.version.version_id for h in hits] == [retried.version.version_id]
    finally:
        core.close()
