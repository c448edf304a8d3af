"""Index generations: a rebuild writes a new index, an atomic alias switch makes it live, rollback
switches back, old generations are pruned, a failed rebuild leaves the live one untouched."""

from __future__ import annotations

import pytest
from citetrace.kit.errors import FailedPrecondition, NotFound

from services.retrieval.index import FusionSettings, ScopeFilter, SearchQuery

from .test_backend import T0, passage, unit

pytestmark = pytest.mark.opensearch

QUERY = SearchQuery("arrive early", unit(0), ScopeFilter("t1", ("patient",), (), (), None, T0), 10,
                    FusionSettings())


def visible(backend) -> list[str]:
    return sorted(h.passage_id for h in backend.search(QUERY))


def names(backend) -> list[str]:
    return [g.name for g in backend.list_generations()]


def test_rebuild_writes_a_new_generation_and_switches_the_alias(opensearch_backends):
    backend = opensearch_backends()
    backend.upsert([passage("old-1"), passage("old-2")])
    first = backend.live_generation()
    first_generation = backend.generation()
    with backend.rebuild_scope(force=True) as second:
        backend.upsert([passage("new-1")])
        assert second != first and second > first  # names sort by age
        assert visible(backend) == ["old-1", "old-2"]  # not live until the rebuild ends
        assert backend.live_generation() == first
    assert backend.live_generation() == second
    assert visible(backend) == ["new-1"]
    assert backend.generation() != first_generation and backend.generation().startswith(second + "@")
    listed = {g.name: g for g in backend.list_generations()}
    assert list(listed) == [first, second]
    assert (listed[first].docs, listed[first].live, listed[second].docs, listed[second].live) == (2, False, 1, True)

    assert backend.rollback() == (second, first)
    assert visible(backend) == ["old-1", "old-2"] and backend.live_generation() == first
    with pytest.raises(FailedPrecondition):
        backend.rollback()  # nothing older than the first
    assert backend.switch(second) == first
    assert visible(backend) == ["new-1"]
    with pytest.raises(NotFound):
        backend.switch("20990101t000000-000")
    assert backend.live_generation() == second


def test_writes_after_a_switch_go_to_the_live_generation(opensearch_backends):
    backend = opensearch_backends()
    backend.upsert([passage("a")])
    first = backend.live_generation()
    with backend.rebuild_scope(force=True):
        backend.upsert([passage("b")])
    backend.rollback()
    backend.upsert([passage("c")])
    assert backend.live_generation() == first and visible(backend) == ["a", "c"]


def test_a_failed_rebuild_keeps_the_live_generation_and_drops_the_partial_one(opensearch_backends):
    backend = opensearch_backends()
    backend.upsert([passage("keep")])
    before = names(backend)
    with pytest.raises(RuntimeError), backend.rebuild_scope(force=True):
        backend.upsert([passage("half")])
        raise RuntimeError("store read failed half-way")
    assert names(backend) == before
    assert visible(backend) == ["keep"]
    backend.upsert([passage("after")])  # writes go through the alias again
    assert visible(backend) == ["after", "keep"]


def test_old_generations_beyond_keep_are_pruned(opensearch_backends):
    backend = opensearch_backends(keep_generations=2)
    backend.upsert([passage("g0")])
    made = [backend.live_generation()]
    for i in range(3):
        with backend.rebuild_scope(force=True) as generation:
            backend.upsert([passage(f"g{i + 1}")])
        made.append(generation)
    assert names(backend) == made[-2:]
    assert backend.live_generation() == made[-1] and visible(backend) == ["g3"]


def test_without_rebuild_on_start_the_live_generation_is_kept(opensearch_backends):
    backend = opensearch_backends(rebuild_on_start=False)
    backend.upsert([passage("kept")])
    live = backend.live_generation()
    with backend.rebuild_scope() as generation:  # what the service does at start-up
        assert generation is None
        backend.upsert([passage("added")])
    assert names(backend) == [live] and visible(backend) == ["added", "kept"]


def test_a_fresh_prefix_gets_its_first_generation_on_first_use(opensearch_backends):
    backend = opensearch_backends()
    assert names(backend) == [] and backend.live_generation() is None
    assert backend.count() == 0
    assert len(names(backend)) == 1 and backend.live_generation() == names(backend)[0]


@pytest.mark.parametrize("path", ["first write", "warm-up without rebuild on start"])
def test_replicas_starting_together_on_an_empty_cluster_share_one_first_generation(opensearch_backends, path):
    """Issue 21 point 3: two replicas' first writes (or warm-ups, rebuild_on_start false) at once, on
    a prefix with no generation yet: both ask for the first generation; neither fails, one generation
    is live, and each sees what the other wrote."""
    import threading

    first = opensearch_backends(rebuild_on_start=False)
    second = opensearch_backends(index_prefix=first.config.index_prefix, rebuild_on_start=False)
    start = threading.Barrier(2)
    errors = []

    def write(backend, pid):
        start.wait()
        try:
            if path == "first write":
                backend.upsert([passage(pid)])
            else:
                with backend.rebuild_scope() as generation:
                    assert generation is None  # written in place: the live generation
                    backend.upsert([passage(pid)])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(b, pid)) for b, pid in ((first, "from-a"), (second, "from-b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert [g.name for g in first.list_generations() if g.live] == [first.live_generation()]
    assert first.live_generation() == second.live_generation()
    assert visible(first) == visible(second) == ["from-a", "from-b"]


def test_a_replica_that_saw_no_live_generation_a_moment_late_shares_the_first_one(opensearch_backends):
    """The interleaving a CI run hit: the second replica read the alias (none) before the first's was
    made live, then went on to make a first generation of its own. Both must end on ONE live index
    holding both replicas' writes (before the fix the alias could point at two indices and refuse
    every write, or move to the second's empty index and hide the first's)."""
    first = opensearch_backends(rebuild_on_start=False)
    second = opensearch_backends(index_prefix=first.config.index_prefix, rebuild_on_start=False)
    first.upsert([passage("from-a")])
    real = second._live_indices
    looks = []

    def stale_then_real() -> list[str]:
        looks.append(1)
        return [] if len(looks) <= 2 else real()  # its first looks were taken before the first's switch

    second._live_indices = stale_then_real
    second._create_first_generation()
    second._ready = True
    second.upsert([passage("from-b")])
    assert [g.name for g in first.list_generations() if g.live] == [first.live_generation()]
    assert names(first) == [first.live_generation()]
    assert visible(first) == visible(second) == ["from-a", "from-b"]
