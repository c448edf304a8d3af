"""citetrace index list|rebuild|switch|rollback against the real node and a real store of record."""

from __future__ import annotations

import json
import os
import time

import pytest

from apps.cli.main import main

from .test_service import Q, doc_ids, load_world, os_service

pytestmark = pytest.mark.opensearch


@pytest.fixture
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("CITETRACE_RETRIEVAL_"):
            monkeypatch.delenv(name)


def cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_index_commands(auth, tmp_path, opensearch_url, prefix, clean_env, capsys):
    common = ["--data-dir", str(tmp_path), "--hosts", opensearch_url, "--index-prefix", prefix]
    with os_service(auth, tmp_path, opensearch_url, prefix) as svc:
        load_world(svc)
        first = svc.core.backend.live_generation()
        expected = doc_ids(svc.search("os-a", Q))

        code, out, _ = cli(capsys, "index", "rebuild", *common)
        assert code == 0 and "rebuilt 4 passages" in out
        code, out, _ = cli(capsys, "index", "list", "--json", *common)
        listed = json.loads(out)
        assert code == 0 and listed["alias"] == f"{prefix}passages"
        generations = [(g["name"], g["docs"], g["live"]) for g in listed["generations"]]
        second = generations[-1][0]
        assert generations == [(first, 4, False), (second, 4, True)]
        # The running service searches through the alias: it now reads the new generation.
        reply = svc.search("os-a", Q)
        assert doc_ids(reply) == expected
        # The generation it reports is re-read after its TTL (2 s): another process switched the alias.
        deadline = time.monotonic() + 10
        while not svc.search("os-a", Q).settings.index_generation.startswith(second + "@"):
            assert time.monotonic() < deadline, "the service never reported the new generation"
            time.sleep(0.2)

        code, out, _ = cli(capsys, "index", "list", *common)
        assert code == 0 and f"* {second}" in out and f"  {first}" in out
        code, out, _ = cli(capsys, "index", "rollback", *common)
        assert code == 0 and f"live generation {first} (was {second})" in out
        assert svc.core.backend.live_generation() == first
        code, out, _ = cli(capsys, "index", "switch", second, *common)
        assert code == 0 and f"live generation: {second} (was {first})" in out
        code, _, err = cli(capsys, "index", "switch", "20990101t000000-000", *common)
        assert code == 1 and "GENERATION_NOT_FOUND" in err
        assert svc.core.backend.live_generation() == second


def test_index_list_on_a_dead_node_fails_clearly(tmp_path, clean_env, capsys):
    from .faults import dead_url

    code, _, err = cli(capsys, "index", "list", "--data-dir", str(tmp_path), "--hosts", dead_url())
    assert code == 1 and "SEARCH_BACKEND_UNAVAILABLE" in err


def test_index_commands_refuse_bad_settings(tmp_path, clean_env, capsys):
    code, _, err = cli(capsys, "index", "list", "--data-dir", str(tmp_path), "--hosts", "ftp://nowhere")
    assert code == 2 and "opensearch" in err
