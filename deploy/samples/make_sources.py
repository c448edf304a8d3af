"""Writes the SYNTHETIC PDF of the sample corpus (a handbook of the fictional Harbor Imaging
Center) with the fixture writer of the tests: roman-numbered front matter, pages labelled H-1.. in
the PDF's page-label tree and printed in the footer, an outline, a footnote and a table. The file
is committed; tests/documents/test_samples.py checks that this script still writes the same bytes.

    .venv/bin/python deploy/samples/make_sources.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from documents.pdfgen import LabelRange, PdfBuilder  # noqa: E402

PDF_PATH = REPO / "deploy" / "samples" / "corpus" / "acme-health" / "harbor-imaging-handbook.pdf"


def harbor_handbook() -> bytes:
    b = PdfBuilder()
    b.page("i").heading("Patient handbook")
    b.paragraph("SYNTHETIC sample handbook. None of it is medical or clinic guidance.")
    b.page("ii").heading("About this handbook", size=14)
    b.paragraph("Each section covers one kind of screening visit.")
    b.page("H-1").heading("Mammography")
    b.paragraph_with_reference("Do not use deodorant, antiperspirant, powder or lotion on the day of your "
                               "mammogram. They can appear on the images as white spots", "1", ".")
    b.footnote("1", "You may use them again right after the exam.")
    b.page("H-2").heading("Bone density scans")
    b.paragraph("Do not take calcium supplements on the day of a bone density scan.")
    b.table([["Item", "Leave at home?"], ["Calcium tablets", "Yes, on the day of the scan"],
             ["Glasses", "No"], ["Phone", "No"]])
    return b.build(labels=[LabelRange(1, "r"), LabelRange(3, "D", "H-")])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the committed PDF differs")
    args = parser.parse_args()
    data = harbor_handbook()
    if args.check:
        same = PDF_PATH.exists() and PDF_PATH.read_bytes() == data
        print(f"{PDF_PATH.relative_to(REPO)}: {'up to date' if same else 'STALE (run make_sources.py)'}")
        return 0 if same else 1
    PDF_PATH.write_bytes(data)
    print(f"wrote {PDF_PATH.relative_to(REPO)} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
