"""The identity formulas every service shares (DESIGN.md §2)."""

from __future__ import annotations

import hashlib

from citetrace.identity import passage_id_of, pinned_link, sha256_hex


def test_passage_id_is_the_digest_of_its_locator():
    expected = hashlib.sha256(b"t:doc:v1:3:9").hexdigest()
    assert passage_id_of("t", "doc", "v1", 3, 9) == expected == sha256_hex("t:doc:v1:3:9")


def test_pinned_link_encodes_the_document_id_and_pins_the_span():
    assert pinned_link("acme/arrival policy", "abc", 0, 12) == "/documents/acme%2Farrival%20policy/versions/abc#chars=0-12"
    assert pinned_link("acme-arrival", "abc") == "/documents/acme-arrival/versions/abc"
