"""Document fixtures are generated once per test session (writing a PDF takes ~0.1 s)."""

from __future__ import annotations

import pytest

from . import fixtures


@pytest.fixture(scope="session")
def handbook_pdf() -> bytes:
    return fixtures.handbook_pdf()


@pytest.fixture(scope="session")
def handbook(handbook_pdf):
    from services.retrieval.extract.pdf import PdfExtractor

    return PdfExtractor().extract(handbook_pdf, "handbook.pdf")
