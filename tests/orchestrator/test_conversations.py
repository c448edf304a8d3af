"""The conversation store on SQLite and PostgreSQL: tenant- and principal-bound, short-lived,
shared by two store instances (a restart or a second replica)."""

import datetime as dt
import os
import uuid

import pytest
import sqlalchemy as sa

from services.orchestrator.conversations import ConversationStore, Pending, new_conversation_id

NOW = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.UTC)


def _urls(tmp_path):
    yield f"sqlite:///{tmp_path / 'conv.sqlite'}"
    base = os.environ.get("CITETRACE_TEST_POSTGRES_URL")
    if base:
        name = f"conv_{uuid.uuid4().hex[:10]}"
        admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"CREATE DATABASE {name}")
        except Exception as exc:  # noqa: BLE001 - PostgreSQL not running here
            pytest.skip(f"PostgreSQL unavailable: {exc}")
        yield base.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    urls = list(_urls(tmp_path))
    if request.param == "postgresql" and len(urls) < 2:
        pytest.skip("CITETRACE_TEST_POSTGRES_URL not set")
    return urls[0] if request.param == "sqlite" else urls[1]


def test_a_turn_is_found_by_another_store_instance_and_only_by_its_owner(url):
    first = ConversationStore(url, ttl_seconds=600)
    cid = new_conversation_id()
    pending = Pending(("Where do I check in?",), "location", ("acme-northside", "acme-northgate"))
    first.record_turn(cid, "acme-health", "user-1", "a" * 32, pending, NOW)
    second = ConversationStore(url, ttl_seconds=600)  # a restart, or the other replica
    found = second.get(cid, "acme-health", "user-1", NOW + dt.timedelta(seconds=5))
    assert found is not None and found.pending == pending and found.last_trace_id == "a" * 32 and found.turns == 1
    assert second.get(cid, "other-tenant", "user-1", NOW) is None
    assert second.get(cid, "acme-health", "user-2", NOW) is None
    second.record_turn(cid, "acme-health", "user-1", "b" * 32, Pending(), NOW + dt.timedelta(seconds=10))
    again = first.get(cid, "acme-health", "user-1", NOW + dt.timedelta(seconds=11))
    assert again.turns == 2 and again.last_trace_id == "b" * 32 and again.pending.missing == ""
    first.close()
    second.close()


def test_an_expired_conversation_is_gone(url):
    store = ConversationStore(url, ttl_seconds=60)
    cid = new_conversation_id()
    store.record_turn(cid, "t", "p", "c" * 32, Pending(("x",), "specialty"), NOW)
    assert store.get(cid, "t", "p", NOW + dt.timedelta(seconds=59)) is not None
    assert store.get(cid, "t", "p", NOW + dt.timedelta(seconds=61)) is None
    assert store.purge_expired(NOW + dt.timedelta(seconds=61)) == 1
    store.close()
