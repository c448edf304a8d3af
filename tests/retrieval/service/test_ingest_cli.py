"""`citetrace ingest` against a real service: per-file results, bad files named with their key,
the rest of the batch stored, exit code."""

from __future__ import annotations

import pytest
from citetrace.kit.testing import install_dev_issuer

from apps.cli.ingest import collect
from apps.cli.main import main as cli

from .conftest import SAMPLES, running_service

GOOD = """---
tenant: cli-tenant
document_id: {doc}
source_class: scheduling_policy
title: Synthetic test document
valid_from: 2025-01-01T00:00:00+00:00
roles: [patient]
intents: [arrival_preparation]
locale: en
---
# Arrival

Arrive {minutes} minutes early.
"""


@pytest.fixture
def stack(auth, tmp_path, monkeypatch):
    """A service and a data dir whose dev secret signs tokens the service accepts."""
    for key in [k for k in __import__("os").environ if k.startswith("CITETRACE_AUTH_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    data.mkdir()
    install_dev_issuer(auth, data)
    with running_service(auth, tmp_path / "service") as client:
        yield client, data


def run(stack, *paths, capsys):
    client, data = stack
    code = cli(["ingest", "--data-dir", str(data), "--target", client.runner.address, *map(str, paths)])
    out = capsys.readouterr()
    return code, out.out, out.err


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_bad_files_are_named_with_their_key_and_the_rest_is_stored(stack, tmp_path, capsys):
    folder = tmp_path / "batch"
    folder.mkdir()
    write(folder / "a-good.md", GOOD.format(doc="good-a", minutes=10))
    write(folder / "b-missing-roles.md", GOOD.format(doc="bad-b", minutes=11).replace("roles: [patient]\n", ""))
    write(folder / "c-bad-date.md", GOOD.format(doc="bad-c", minutes=12).replace("2025-01-01T00:00:00+00:00",
                                                                                   "first of january"))
    write(folder / "d-unknown-key.md", GOOD.format(doc="bad-d", minutes=13).replace("locale: en", "locale: en\nowner: x"))
    write(folder / "e-bad-yaml.md", GOOD.format(doc="bad-e", minutes=14).replace("roles: [patient]", "roles: [patient"))
    write(folder / "f-bad-class.md", GOOD.format(doc="bad-f", minutes=15).replace("scheduling_policy", "rumour"))
    write(folder / "g-good.md", GOOD.format(doc="good-g", minutes=16))
    write(folder / "h-no-front-matter.md", "# Just text\n\nNo front matter here.\n")
    code, out, err = run(stack, folder, capsys=capsys)
    assert code == 1
    lines = {line.split(": ", 1)[0]: line for line in out.splitlines()}
    assert "created document=good-a" in lines[str(folder / "a-good.md")]
    assert "created document=good-g" in lines[str(folder / "g-good.md")]
    assert "FAILED roles: missing" in lines[str(folder / "b-missing-roles.md")]
    assert "FAILED valid_from:" in lines[str(folder / "c-bad-date.md")]
    assert "FAILED owner: unknown key" in lines[str(folder / "d-unknown-key.md")]
    assert "FAILED front matter: malformed YAML" in lines[str(folder / "e-bad-yaml.md")]
    assert "FAILED source_class: UNKNOWN_SOURCE_CLASS" in lines[str(folder / "f-bad-class.md")]
    assert "FAILED front matter:" in lines[str(folder / "h-no-front-matter.md")]
    assert "2 of 8 file(s) ok, 6 failed" in err
    client, _ = stack
    stored = sorted(v.document.document_id for v in client.versions("cli-tenant").versions)
    assert stored == ["good-a", "good-g"]


def test_rerun_reports_unchanged_and_exit_zero(stack, tmp_path, capsys):
    path = write(tmp_path / "one.md", GOOD.format(doc="once", minutes=9))
    assert run(stack, path, capsys=capsys)[0] == 0
    code, out, _ = run(stack, path, capsys=capsys)
    assert code == 0 and "unchanged document=once" in out


def test_the_sample_corpus_ingests_cleanly(stack, capsys):
    code, out, err = run(stack, SAMPLES, capsys=capsys)
    assert code == 0, out + err
    assert out.count(" created ") == len(collect([SAMPLES]))  # Markdown, PDF and HTML sources
    # The 2024 arrival edition is imported as retired: nothing is superseded by the batch.
    assert "superseded=" not in out
    assert "status=retired" in out and "status=draft" in out


def test_a_server_side_tenant_mismatch_is_impossible_by_construction(stack, tmp_path, capsys):
    # The CLI mints the token for the file's own tenant, so every tenant of a batch goes in.
    a = write(tmp_path / "a.md", GOOD.format(doc="x", minutes=1))
    b = write(tmp_path / "b.md", GOOD.format(doc="y", minutes=2).replace("cli-tenant", "cli-tenant-2"))
    code, out, _ = run(stack, a, b, capsys=capsys)
    assert code == 0 and out.count("created") == 2


def test_an_unreachable_service_stops_the_batch_with_exit_2(stack, tmp_path, capsys):
    _, data = stack
    path = write(tmp_path / "one.md", GOOD.format(doc="nowhere", minutes=3))
    code = cli(["ingest", "--data-dir", str(data), "--target", "127.0.0.1:1", str(path)])
    assert code == 2
    assert "UNAVAILABLE" in capsys.readouterr().err
