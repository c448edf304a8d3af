"""Source formats: each an Extractor (base.py) from original bytes to normalized, structured text
with its page map and what could not be captured. `Extractors` is the set a service accepts."""

from __future__ import annotations

from collections.abc import Iterable

from services.retrieval.extract.base import (
    HTML,
    MARKDOWN,
    PDF,
    Extraction,
    ExtractionIssue,
    Extractor,
    PageInfo,
    PageSpan,
    ReviewSpan,
    SourceError,
)

__all__ = ["HTML", "MARKDOWN", "PDF", "Extraction", "ExtractionIssue", "Extractor", "Extractors", "PageInfo",
           "PageSpan", "ReviewSpan", "SourceError", "default_extractors"]


class Extractors:
    """The extractors of a service, by media type."""

    def __init__(self, extractors: Iterable[Extractor]) -> None:
        self._by_type: dict[str, Extractor] = {}
        for extractor in extractors:
            if not isinstance(extractor, Extractor):
                raise TypeError(f"{extractor!r} does not implement the Extractor protocol")
            self._by_type[extractor.media_type] = extractor

    @property
    def media_types(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_type))

    def get(self, media_type: str, filename: str) -> Extractor:
        extractor = self._by_type.get(media_type)
        if extractor is None:
            raise SourceError("UNSUPPORTED_MEDIA_TYPE", f"{filename}: media type {media_type!r} is not one of "
                              f"{', '.join(self.media_types)}")
        return extractor

    def warm_up(self) -> None:
        for extractor in self._by_type.values():
            extractor.warm_up()


def default_extractors(max_pdf_pages: int = 2000) -> Extractors:
    from services.retrieval.extract.html import HtmlExtractor
    from services.retrieval.extract.markdown import MarkdownExtractor
    from services.retrieval.extract.pdf import PdfExtractor

    return Extractors([PdfExtractor(max_pages=max_pdf_pages), HtmlExtractor(), MarkdownExtractor()])
