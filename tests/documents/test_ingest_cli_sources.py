"""`citetrace ingest` with PDF and HTML files and their .meta.yaml sidecars, against a real service."""

from __future__ import annotations

import os

import pytest
from citetrace.kit.testing import install_dev_issuer

from apps.cli.ask import render
from apps.cli.main import main as cli

from . import fixtures
from .pdfgen import PdfBuilder
from .test_ingest_sources import row_counts, service

SIDECAR = """tenant: doc-tenant
document_id: {doc}
source_class: scheduling_policy
title: Synthetic {doc}
valid_from: 2025-01-01
roles: [patient]
intents: [arrival_preparation]
locale: en
"""


@pytest.fixture
def stack(auth, tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("CITETRACE_AUTH_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    data.mkdir()
    install_dev_issuer(auth, data)
    with service(auth, tmp_path / "service") as client:
        yield client, data


def run(stack, *args, capsys):
    client, data = stack
    code = cli(["ingest", "--data-dir", str(data), "--target", client.core_address, *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_pdf_and_html_with_sidecars_and_the_report(stack, tmp_path, capsys, handbook_pdf):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "handbook.pdf").write_bytes(handbook_pdf)
    (folder / "handbook.pdf.meta.yaml").write_text(SIDECAR.format(doc="handbook"))
    (folder / "harbor.html").write_text(fixtures.HTML_PAGE)
    (folder / "harbor.html.meta.yaml").write_text(SIDECAR.format(doc="harbor"))
    code, out, err = run(stack, folder, capsys=capsys)
    assert code == 0, out + err
    assert "ingest: 2 of 2 file(s) ok" in err, "sidecars are not taken for documents"
    lines = out.splitlines()
    assert any(line.startswith(f"{folder / 'handbook.pdf'}: created document=handbook") for line in lines)
    assert "8 page(s); labels 1:i, 2:ii, 3:-, 4:A-1" in out
    assert "PAGE_LABEL_MISMATCH: viewer page 8" in out
    code, out, _ = run(stack, folder / "handbook.pdf", capsys=capsys)
    assert code == 0 and ": unchanged document=handbook" in out


def test_a_missing_or_invalid_sidecar_names_both_files(stack, tmp_path, capsys, handbook_pdf):
    (tmp_path / "lost.pdf").write_bytes(handbook_pdf)
    (tmp_path / "bad.html").write_text(fixtures.HTML_PAGE)
    (tmp_path / "bad.html.meta.yaml").write_text(SIDECAR.format(doc="bad").replace("roles: [patient]\n", "")
                                                 + "owner: someone\n")
    (tmp_path / "typo.pdf").write_bytes(handbook_pdf)
    (tmp_path / "typo.pdf.meta.yaml").write_text(SIDECAR.format(doc="typo").replace("roles: [patient]", "roles: [patient"))
    (tmp_path / "short.pdf").write_bytes(handbook_pdf)
    (tmp_path / "short.pdf.meta.yaml").write_text(SIDECAR.format(doc="short").replace("locale: en\n", ""))
    (tmp_path / "intent.html").write_text(fixtures.HTML_PAGE)
    (tmp_path / "intent.html.meta.yaml").write_text(SIDECAR.format(doc="intent").replace("arrival_preparation",
                                                                                          "parking"))
    names = ("lost.pdf", "bad.html", "typo.pdf", "short.pdf", "intent.html")
    code, out, _ = run(stack, *(tmp_path / n for n in names), capsys=capsys)
    assert code == 1
    assert f"{tmp_path / 'lost.pdf'}: FAILED lost.pdf.meta.yaml: file: missing: lost.pdf needs its metadata" in out
    assert f"{tmp_path / 'bad.html'}: FAILED bad.html.meta.yaml: owner: unknown key" in out
    assert f"{tmp_path / 'typo.pdf'}: FAILED typo.pdf.meta.yaml: file: malformed YAML" in out
    assert f"{tmp_path / 'short.pdf'}: FAILED short.pdf.meta.yaml: locale: missing" in out
    assert f"{tmp_path / 'intent.html'}: FAILED intent.html.meta.yaml: intents: 'parking' is not one of" in out
    assert out.count(": FAILED ") == len(names)
    client, _ = stack
    assert not any(client.versions(d) for d in ("lost", "bad", "typo", "short", "intent"))


def test_bad_files_are_named_and_nothing_is_stored(stack, tmp_path, capsys, handbook_pdf):
    huge = tmp_path / "huge.pdf"
    with huge.open("wb") as handle:  # a sparse 200 MB file: its size is checked before it is read
        handle.write(b"%PDF-1.7\n")
        handle.truncate(200 * 1024 * 1024)
    (tmp_path / "corrupt.pdf").write_bytes(handbook_pdf[:4000])
    (tmp_path / "scripted.html").write_text("<html><body><p>Arrive early.</p><script>x()</script></body></html>")
    (tmp_path / "locked.pdf").write_bytes(PdfBuilder().page("1").paragraph("Secret.").build(user_password="pw"))
    for name in ("huge", "corrupt", "scripted", "locked"):
        suffix = "html" if name == "scripted" else "pdf"
        (tmp_path / f"{name}.{suffix}.meta.yaml").write_text(SIDECAR.format(doc=name))
    client, _ = stack
    before = row_counts(client)
    code, out, _ = run(stack, huge, tmp_path / "corrupt.pdf", tmp_path / "scripted.html", tmp_path / "locked.pdf",
                       capsys=capsys)
    assert code == 1
    assert f"{tmp_path / 'locked.pdf'}: FAILED file: ENCRYPTED_SOURCE: locked.pdf: " in out
    assert f"{huge}: FAILED file: 200.0 MiB (209715200 bytes) is over the limit of one source, 32 MiB" in out
    assert f"{tmp_path / 'corrupt.pdf'}: FAILED file: CORRUPT_SOURCE: corrupt.pdf: not a readable PDF" in out
    assert f"{tmp_path / 'scripted.html'}: FAILED file: ACTIVE_CONTENT: scripted.html: HTML with scripts" in out
    assert not any(client.versions(d) for d in ("huge", "corrupt", "scripted", "locked"))
    assert row_counts(client) == before


def test_ask_shows_the_printed_page_and_the_viewer_page():
    from citetrace.common.v1 import common_pb2 as c_pb
    from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb

    response = pb.AskResponse(trace_id="t1")
    part = response.parts.add(part_id="p1", outcome=c_pb.PART_OUTCOME_ANSWERED)
    claim = part.claims.add(claim_id="c1", text="Arrive 15 minutes early.")
    claim.citations.add(passage_id="p" * 64, document_id="handbook", version_id="v" * 64, start=10, end=90,
                        title="Handbook", page_start=9, page_end=9, page_label_start="3", page_label_end="3",
                        link="/documents/handbook/versions/vvv#page=9&chars=10-90")
    text = render(response)
    assert "p. 3 (viewer page 9), chars 10-90" in text and "#page=9&chars=10-90" in text


def test_markdown_takes_a_sidecar_only_without_front_matter(stack, tmp_path, capsys):
    plain = tmp_path / "plain.md"
    plain.write_text("# Parking\n\nPark on level 2.\n")
    (tmp_path / "plain.md.meta.yaml").write_text(SIDECAR.format(doc="plain"))
    both = tmp_path / "both.md"
    both.write_text("---\n" + SIDECAR.format(doc="both") + "---\n# Parking\n\nPark on level 3.\n")
    (tmp_path / "both.md.meta.yaml").write_text(SIDECAR.format(doc="both"))
    code, out, _ = run(stack, plain, both, capsys=capsys)
    assert code == 1
    assert f"{plain}: created document=plain" in out
    assert f"{both}: FAILED both.md.meta.yaml: file: both.md has front matter too" in out


def test_passages_awaiting_review_are_listed_shown_and_approved_from_the_cli(stack, tmp_path, capsys):
    """`citetrace ingest` lists the passages an extraction marked for review with the command that
    approves them; `citetrace passages show` prints their pages and review state, `approve` makes
    them eligible (search finds them afterwards); an unknown or unreviewable ID fails with its reason."""
    client, data = stack
    (tmp_path / "notes.pdf").write_bytes(fixtures.notes_and_tables_pdf())
    (tmp_path / "notes.pdf.meta.yaml").write_text(SIDECAR.format(doc="notes"))
    code, out, err = run(stack, tmp_path / "notes.pdf", capsys=capsys)
    assert code == 0, out + err
    (listed,) = [line for line in out.splitlines() if "await review" in line]
    pending = listed.split("approve --tenant TENANT ")[1].split()
    assert len(pending) == 2

    def passages(*args):
        code = cli(["passages", *args, "--data-dir", str(data), "--target", client.core_address,
                    "--tenant", "doc-tenant"])
        got = capsys.readouterr()
        return code, got.out, got.err

    code, out, _ = passages("show", *pending)
    assert code == 0
    heads = [line for line in out.splitlines() if not line.startswith("    ")]
    assert len(heads) == 2 and all(" review PENDING (" in h for h in heads), out
    assert any(" p. 1 chars " in h and "(footnote 2 on viewer page 1 has no reference" in h for h in heads), out
    assert any(" p. 2 chars " in h and "(a table on viewer page 2 has no header row" in h for h in heads), out
    assert "    [2] An orphan remark that no sentence refers to." in out
    orphan = next(h.split()[0] for h in heads if " p. 1 chars " in h)
    assert orphan not in {h.passage.identity.passage_id for h in client.search("orphan remark no sentence").hits}

    code, out, _ = passages("approve", orphan)
    assert code == 0 and f"{orphan} notes" in out and " review APPROVED" in out
    assert orphan in {h.passage.identity.passage_id for h in client.search("orphan remark no sentence").hits}

    code, _, err = passages("approve", "f" * 64)
    assert code == 1 and "citetrace passages approve: NOT_FOUND" in err


def test_a_file_over_the_services_limit_is_named_when_the_cli_allows_it(auth, tmp_path, capsys, monkeypatch):
    """The CLI's own size check names the file before reading it (above); when the CLI is told to
    allow more than the service does, the service's refusal still names the file: its core refuses
    an oversized source (SOURCE_TOO_LARGE), and a message over the gRPC limit the transport refuses
    (the CLI prints which file). Nothing is stored either way."""
    for key in [k for k in os.environ if k.startswith("CITETRACE_AUTH_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    data.mkdir()
    install_dev_issuer(auth, data)
    big, huge = tmp_path / "big.pdf", tmp_path / "huge.pdf"
    big.write_bytes(b"%PDF-1.7\n" + b"0" * (100 * 1024))
    huge.write_bytes(b"%PDF-1.7\n" + b"0" * (3 * 1024 * 1024))
    for path in (big, huge):
        (tmp_path / f"{path.name}.meta.yaml").write_text(SIDECAR.format(doc=path.stem))
    with service(auth, tmp_path / "service", max_source_bytes=64 * 1024) as client:
        before = row_counts(client)
        code = cli(["ingest", "--data-dir", str(data), "--target", client.core_address,
                    "--max-bytes", str(300 * 1024 * 1024), str(big), str(huge)])
        out = capsys.readouterr().out
        assert code == 1
        assert f"{big}: FAILED file: SOURCE_TOO_LARGE: big.pdf: " in out
        assert f"{huge}: FAILED file: the retrieval service refused a message this large" in out
        assert row_counts(client) == before and not client.versions("big") and not client.versions("huge")
