"""The OpenSearch backend beyond the shared contract: the mapping it creates, the scope filter as an
exact translation of ScopeFilter.admits, per-document bulk errors, retries and unavailability."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from citetrace.kit.errors import Unavailable
from citetrace.kit.settings import SettingsError, load_settings

from services.retrieval.index import BM25Settings, FusionSettings, IndexedPassage, ScopeFilter, SearchQuery
from services.retrieval.index.opensearch import UNAVAILABLE_REASON, OpenSearchBackend, scope_filter
from services.retrieval.settings import PREFIX, Settings

from ..opensearch_fixtures import opensearch_config
from .faults import FaultProxy, dead_url

pytestmark = pytest.mark.opensearch

DIM = 384
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def unit(axis: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[axis] = 1.0
    return v


def passage(pid: str, **overrides) -> IndexedPassage:
    fields = dict(passage_id=pid, tenant_id="t1", document_id="d", version_id="v", source_class="handbook",
                  text="arrive fifteen minutes early", roles=(), location_scope=(), intents=(), locale="en",
                  status="approved", valid_from=T0, valid_to=None, vector=unit(0))
    fields.update(overrides)
    return IndexedPassage(**fields)


def live_index(backend: OpenSearchBackend) -> str:
    return backend.config.index_name(backend.live_generation())


def test_the_service_creates_the_mapping_by_the_index_rules(opensearch_backends):
    backend = opensearch_backends()
    backend.upsert([passage("m-1")])
    index = live_index(backend)
    mapping = backend.client.indices.get_mapping(index=index)[index]["mappings"]
    props = mapping["properties"]
    method = props["vector"]["method"]
    assert props["vector"]["type"] == "knn_vector" and props["vector"]["dimension"] == DIM
    assert (method["name"], method["engine"], method["space_type"]) == ("hnsw", "lucene", "cosinesimil")
    assert props["text"] == {"type": "text", "analyzer": "english"}
    for field in ("tenant_id", "roles", "location_scope", "intents", "locale", "status", "passage_id"):
        assert props[field]["type"] == "keyword", field
    assert props["valid_from"]["type"] == props["valid_to"]["type"] == "date_nanos"
    assert mapping["dynamic"] == "strict"
    settings = backend.client.indices.get_settings(index=index)[index]["settings"]["index"]
    assert settings["knn"] == "true" and settings["number_of_replicas"] == "0"
    bm25 = BM25Settings()  # the embedded backend's k1/b, the index's default similarity
    assert settings["similarity"]["default"] == {"type": "BM25", "k1": str(bm25.k1), "b": str(bm25.b)}
    assert backend.client.cluster.health(index=index)["status"] == "green"  # replicas 0 on one node


def test_scope_filter_admits_exactly_what_scopefilter_admits(opensearch_backends):
    """Random passages and scopes: the OpenSearch filter and ScopeFilter.admits agree on every pair."""
    rng = random.Random(7)
    backend = opensearch_backends()

    def some(values):
        return tuple(rng.sample(values, rng.randint(0, 2)))

    days = [T0 + timedelta(days=d) for d in (0, 10, 20, 30)]
    passages = []
    for i in range(240):
        valid_from = rng.choice(days) + timedelta(microseconds=rng.choice((0, 1, 999)))
        valid_to = rng.choice([None, valid_from + timedelta(microseconds=1), valid_from + timedelta(days=10)])
        passages.append(passage(
            f"p-{i:03d}", tenant_id=rng.choice(("t1", "t2")), roles=some(["patient", "staff"]),
            location_scope=some(["a", "b", "c"]), intents=some(["x", "y", "z"]), locale=rng.choice(("en", "nb")),
            status=rng.choice(("approved", "approved", "draft", "retired")), valid_from=valid_from,
            valid_to=valid_to, version_id=f"v-{i}",
            source_class=rng.choice(("scheduling_policy", "handbook", "regulatory"))))  # fmt: skip
    report = backend.upsert(passages)
    assert report.errors == [] and backend.count() == len(passages)
    checked = 0
    for _ in range(80):
        as_of = rng.choice(days) + timedelta(microseconds=rng.choice((0, 1, 2, 999, 1000))) + timedelta(
            days=rng.choice((0, 5, 10)))
        scope = ScopeFilter(tenant_id=rng.choice(("t1", "t2", "t3")), roles=some(["patient", "staff", "admin"]),
                            location_ids=some(["a", "b", "d"]), intents=some(["x", "y", "w"]),
                            locale=rng.choice((None, "en", "nb")), as_of=as_of,
                            source_classes=some(["scheduling_policy", "handbook", "provider_profile"]))
        reply = backend.client.search(index=backend.config.alias, body={
            "size": 1000, "_source": False, "query": {"bool": {"filter": scope_filter(scope)}}})
        found = sorted(h["_id"] for h in reply["hits"]["hits"])
        expected = sorted(p.passage_id for p in passages if scope.admits(p))
        assert found == expected, scope
        checked += len(expected)
    assert checked > 100  # the scopes admitted something, not only empty sets


def test_a_rejected_document_is_reported_with_the_reason_and_the_rest_indexed(opensearch_backends):
    backend = opensearch_backends()
    report = backend.upsert([
        passage("ok-1"),
        passage("wrong-dim", vector=np.ones(3, dtype=np.float32)),
        passage("zero", vector=np.zeros(DIM, dtype=np.float32)),
        passage("ok-2", vector=unit(1)),
    ])  # fmt: skip
    assert report.indexed == 2
    reasons = {e.passage_id: e.reason for e in report.errors}
    assert sorted(reasons) == ["wrong-dim", "zero"]
    assert reasons["wrong-dim"].startswith("mapper_parsing_exception") and "dimension" in reasons["wrong-dim"]
    assert backend.count() == 2


def test_transient_errors_are_retried_with_backoff(opensearch_url, opensearch_backends):
    proxy = FaultProxy(opensearch_url)
    try:
        backend = opensearch_backends(hosts=(proxy.url,), max_retries=3, retry_backoff_seconds=0.05)
        backend.upsert([passage("r-1")])
        query = SearchQuery("arrive early", unit(0), ScopeFilter("t1", ("patient",), (), (), None, T0), 5,
                            FusionSettings())
        for status in (503, 429, 502):
            proxy.fail(2, status)
            before = len(proxy.requests)
            assert [h.passage_id for h in backend.search(query)] == ["r-1"]
            assert [s for _, _, s in proxy.requests[before:]] == [status, status, 200]
        proxy.fail(10, 503)  # more failures than retries: unavailable
        with pytest.raises(Unavailable) as caught:
            backend.search(query)
        assert caught.value.reason == UNAVAILABLE_REASON
        proxy.fail(1, 400)  # not transient: no retry
        before = len(proxy.requests)
        with pytest.raises(Exception) as caught:
            backend.search(query)
        assert not isinstance(caught.value, Unavailable) and len(proxy.requests) == before + 1
    finally:
        proxy.stop()


def test_bulk_items_refused_with_a_transient_status_are_resent(opensearch_url, opensearch_backends):
    proxy = FaultProxy(opensearch_url)
    try:
        backend = opensearch_backends(hosts=(proxy.url,), max_retries=3, retry_backoff_seconds=0.05)
        backend.count()  # the first generation exists
        proxy.reject_bulk_items(2, 429)
        before = len(proxy.requests)
        report = backend.upsert([passage(f"b-{i}") for i in range(5)])
        assert report.indexed == 5 and report.errors == []
        assert proxy.rejected_items == ["b-0", "b-1"]
        bulk_calls = [path for _, path, _ in proxy.requests[before:] if "/_bulk" in path]
        assert len(bulk_calls) == 2  # the first with 5 items, the resend with the 2 refused ones
        assert backend.count() == 5
        proxy.reject_bulk_items(100, 503)  # refused on every attempt: unavailable, not silently lost
        with pytest.raises(Unavailable) as caught:
            backend.upsert([passage("b-9")])
        assert caught.value.reason == UNAVAILABLE_REASON
    finally:
        proxy.stop()


def test_a_dead_port_is_search_backend_unavailable():
    backend = OpenSearchBackend(opensearch_config(dead_url(), max_retries=2, retry_backoff_seconds=0.1,
                                                  timeout_seconds=2.0))
    query = SearchQuery("arrive", None, ScopeFilter("t1", (), (), (), None, T0), 5, FusionSettings(mode="lexical"))
    started = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        backend.search(query)
    assert caught.value.reason == UNAVAILABLE_REASON and "after 3 attempts" in caught.value.message
    assert time.monotonic() - started >= 0.1 * 0.5 + 0.2 * 0.5  # two backoff sleeps (jitter 0.5..1.5)
    with pytest.raises(Unavailable):
        backend.upsert([passage("x")])


def test_settings_select_and_validate_the_opensearch_backend(tmp_path):
    env = {f"{PREFIX}BACKEND": "opensearch", f"{PREFIX}OPENSEARCH_HOSTS": "http://a:9200, https://b:9201",
           f"{PREFIX}OPENSEARCH_USERNAME": "u", f"{PREFIX}OPENSEARCH_PASSWORD": "p",
           f"{PREFIX}OPENSEARCH_INDEX_PREFIX": "prod-", f"{PREFIX}OPENSEARCH_TIMEOUT_SECONDS": "3.5",
           f"{PREFIX}OPENSEARCH_VERIFY_CERTS": "false"}
    config = load_settings(Settings, PREFIX, env).opensearch_config()
    assert config.hosts == ("http://a:9200", "https://b:9201") and config.uses_tls()
    assert (config.username, config.password, config.timeout_seconds) == ("u", "p", 3.5)
    assert config.alias == "prod-passages" and config.index_name("g") == "prod-passages-g"
    assert not config.verify_certs
    bad = [
        {"opensearch_hosts": ("ftp://a:9200",)},
        {"opensearch_hosts": ()},
        {"opensearch_username": "u"},  # without a password
        {"opensearch_ca_certs": str(tmp_path / "missing.pem")},
        {"opensearch_index_prefix": "Upper-"},
        {"opensearch_timeout_seconds": 0.0},
        {"opensearch_replicas": -1},
    ]
    for overrides in bad:
        with pytest.raises(SettingsError):
            Settings(port=0, metrics_port=-1, backend="opensearch", **overrides)
        Settings(port=0, metrics_port=-1, backend="embedded", **overrides)  # only checked when selected
    with pytest.raises(SettingsError):
        Settings(port=0, metrics_port=-1, backend="elasticsearch")
