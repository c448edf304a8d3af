"""The conversation store on SQLite and PostgreSQL: tenant- and principal-bound, short-lived,
shared by two store instances (a restart or a second replica)."""

import datetime as dt
import os
import uuid

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from citetrace.kit import sql as kit_sql

from services.orchestrator.conversations import MIGRATIONS, ConversationStore, Pending, new_conversation_id

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


def test_a_retried_turn_continues_from_the_turn_before_it(url):
    """A turn whose first attempt moved the conversation and then failed (its record withheld, or its
    replica killed) is retried under the same idempotency key: the retry sees, and replaces, the
    conversation as it was before that attempt; a new key follows the last turn as usual."""
    store = ConversationStore(url, ttl_seconds=600)
    cid = new_conversation_id()
    asked = Pending(("Can I book cardiology tomorrow?",), "location", ("acme-northside", "acme-northgate"))
    store.record_turn(cid, "t", "p", "a" * 32, asked, NOW, turn_key="k-first")
    store.record_turn(cid, "t", "p", "b" * 32, Pending(), NOW, turn_key="k-reply")  # the attempt that failed
    assert store.get(cid, "t", "p", NOW).pending == Pending()
    retry = store.get(cid, "t", "p", NOW, retry_key="k-reply")
    assert (retry.turns, retry.last_trace_id, retry.pending) == (1, "a" * 32, asked)
    assert store.get(cid, "t", "p", NOW, retry_key="k-other").last_trace_id == "b" * 32
    store.record_turn(cid, "t", "p", "c" * 32, Pending(), NOW, turn_key="k-reply")  # the retry's turn
    after = store.get(cid, "t", "p", NOW)
    assert (after.turns, after.last_trace_id) == (2, "c" * 32)
    assert store.get(cid, "t", "p", NOW, retry_key="k-reply").last_trace_id == "a" * 32  # still its prior
    store.record_turn(cid, "t", "p", "d" * 32, asked, NOW, turn_key="")  # a turn without a key
    assert store.get(cid, "t", "p", NOW, retry_key="").turns == 3
    assert store.get(cid, "t", "p", NOW, retry_key="k-reply").last_trace_id == "d" * 32  # no longer the last
    store.close()


def test_a_database_of_the_first_schema_is_migrated_and_keeps_its_conversations(tmp_path):
    """Migration 0002 adds the retry columns to a conversations table made by 0001, rows kept."""
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = sa.create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with kit_sql.migration_lock(engine, "orchestrator") as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.commit()
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO orch_conversations VALUES ('conv_old', 't', 'p', :now, :now, :later, 1, :trace, '{}')"),
            {"now": NOW, "later": NOW + dt.timedelta(hours=1), "trace": "e" * 32})
    engine.dispose()
    store = ConversationStore(url, ttl_seconds=600)
    old = store.get("conv_old", "t", "p", NOW)
    assert old is not None and old.turns == 1 and old.last_trace_id == "e" * 32
    store.record_turn("conv_old", "t", "p", "f" * 32, Pending(), NOW, turn_key="k")
    assert store.get("conv_old", "t", "p", NOW, retry_key="k").last_trace_id == "e" * 32
    store.close()
