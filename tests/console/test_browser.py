"""The evidence console in a real browser (Debian's Chromium driven by Playwright) against the real
stack: six gRPC services as processes with the sample corpus, and the console as its own process.

Seed 004: "Claim displays and its marker opens the correct version and location"; a marker opens its
bound passage, not whichever passage holds the same array position; markers have descriptive names,
keyboard navigation works and focus moves into the panel and back; a reader who cannot access a
source never receives its passage, not through a cached page either."""

from __future__ import annotations

import json
import re
import urllib.parse

import pytest
from citetrace.identity import pinned_link
from citetrace.trace.v1 import trace_service_pb2 as trace_pb

from console.conftest import ASK_DEADLINE_SECONDS, ORCHESTRATOR_LOAD_TOLERANT, new_context, start_console
from console.helpers import (
    ARRIVAL_Q,
    ask,
    ask_cited,
    axe_serious,
    open_marker,
    passage_text,
    screenshot,
    served_passage,
    served_version,
    sign_in,
    sign_out,
    wait_panel,
)
from console.shuffling_orchestrator import shuffling_orchestrator
from console.shuffling_retrieval import shuffling_retrieval

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STAFF_Q = "Can clinics overbook appointments?"
NOT_FOUND_TEXT = "There is nothing here you can open"


def _markers(page) -> list[dict]:
    return page.eval_on_selector_all("section.answer a.marker", """els => els.map(e => ({
        passage: e.dataset.passageId, number: e.dataset.marker, name: e.getAttribute('aria-label'),
        href: e.getAttribute('href'), claim: e.closest('[data-claim-id]') ?
        e.closest('[data-claim-id]').dataset.claimId : null}))""")


def _version_ids(page) -> dict[str, str]:
    """passage ID -> version ID, as the markers' pinned links say."""
    out = {}
    for m in _markers(page):
        out[m["passage"]] = m["href"].split("/versions/")[1].split("#")[0]
    return out


# --- the supported control -------------------------------------------------------------------------

def test_marker_opens_the_exact_cited_span_of_the_pinned_version(console, console_stack, page):
    sign_in(page, console.url)
    first = ask_cited(page, ARRIVAL_Q).first
    assert page.locator("article.part[data-outcome=ANSWERED]").count() == 1
    name = first.get_attribute("aria-label")
    assert re.fullmatch(r"Source 1: .+, version [0-9a-f]{8}", name), name
    passage_id = first.get_attribute("data-passage-id")
    expected, identity = passage_text(console_stack, passage_id)
    assert first.get_attribute("href") == pinned_link(identity.document_id, identity.version_id, identity.start,
                                                      identity.end)
    open_marker(page, first)
    panel = page.locator("#evidence-panel")
    assert panel.locator("mark.cited").inner_text() == expected, "the panel shows exactly the cited span"
    assert panel.locator("[data-field=version] code").get_attribute("title") == identity.version_id
    assert panel.locator("[data-field=source-class]").inner_text() == identity.source_class
    assert panel.locator(".evidence").get_attribute("data-passage-id") == passage_id
    assert "Verified" in panel.locator("[data-field=digest]").inner_text()
    assert panel.locator("[data-field=status]").inner_text().startswith("approved")
    assert name.split(": ", 1)[1].startswith(panel.locator("#evidence-title").inner_text())
    # The span inside its heading context, and the version's validity window, as retrieval has them.
    served = served_passage(console_stack, passage_id)
    assert served.heading_context and panel.locator(".heading-context").inner_text() == served.heading_context
    assert expected in panel.locator(".context-text").inner_text()
    version = served_version(console_stack, identity.version_id)
    valid_from = version.valid_from.ToDatetime().strftime("%Y-%m-%d %H:%M UTC")
    assert panel.locator("[data-field=validity]").inner_text() == (
        f"from {valid_from}" + (f" until {version.valid_to.ToDatetime():%Y-%m-%d %H:%M UTC}"
                                if version.HasField("valid_to") else ", open-ended"))
    screenshot(page, "console-ask-panel.png")
    # The digest check can fail: the same evidence link carrying another recorded digest than the
    # text served now is reported as a mismatch, in the panel's own page form.
    evidence_url = first.get_attribute("data-evidence-url")
    assert re.search(r"sha256=[0-9a-f]{64}", evidence_url), evidence_url
    other = page.context.new_page()
    other.goto(console.url + re.sub(r"sha256=[0-9a-f]{64}", "sha256=" + "0" * 64, evidence_url))
    digest = other.locator("[data-field=digest]")
    assert "Mismatch: the text served now differs from the text the answer cited." in digest.inner_text()
    assert "digest--bad" in digest.get_attribute("class")
    other.close()
    # The full version page at the cited characters: whole text, the span highlighted and in view.
    link = panel.locator(".open-version a")
    assert link.get_attribute("href") == first.get_attribute("href")
    with page.context.expect_page() as opened:
        link.click()
    version = opened.value
    version.wait_for_selector("#cited-span")
    assert version.locator("mark.cited").all_inner_texts() == [expected]
    assert version.evaluate("""() => { const r = document.getElementById('cited-span').getBoundingClientRect();
                                      return r.top >= 0 && r.bottom <= window.innerHeight; }""")
    whole = version.locator("#version-text").inner_text()
    assert whole[identity.start:identity.end] == expected
    assert version.locator("[data-banner]").count() == 0, "a current version has no banner"
    version.close()
    # The answer is still there, unchanged, behind the closed panel (the path back).
    page.keyboard.press("Escape")
    assert page.locator("#evidence-panel").is_hidden()
    assert page.evaluate("document.activeElement.dataset.passageId") == passage_id


def test_a_pdf_citation_shows_its_printed_and_viewer_page_and_opens_there(console, console_stack, page):
    sign_in(page, console.url)
    marker = ask_cited(page, "Can I wear deodorant to my mammogram at Harbor Imaging Center?").first
    assert "p. H-1 (viewer page 3)" in marker.get_attribute("aria-label")
    href = marker.get_attribute("href")
    assert re.search(r"#page=3&chars=\d+-\d+$", href), href
    assert "p. H-1 (viewer page 3)" in page.locator("section.sources").inner_text()
    open_marker(page, marker)
    assert page.locator("#evidence-panel [data-field=pages]").inner_text() == "p. H-1 (viewer page 3)"
    expected, _ = passage_text(console_stack, marker.get_attribute("data-passage-id"))
    assert page.locator("#evidence-panel mark.cited").inner_text() == expected
    page.goto(console.url + href)
    page.wait_for_selector("#cited-span")
    assert page.locator("mark.cited").all_inner_texts() == [expected], "#page=N&chars=a-b still highlights"
    assert "viewer pages" in page.locator("article.version dl").inner_text()


def test_reordered_evidence_each_marker_opens_its_own_passage(console_stack, chromium, tmp_path):
    with shuffling_orchestrator(console_stack.target("orchestrator"), console_stack.identity("orchestrator")) as (target, shuffler):
        shuffled_console = start_console(console_stack, tmp_path, orchestrator_target=target)
        context = new_context(chromium)
        try:
            page = context.new_page()
            sign_in(page, shuffled_console.url)
            ask_cited(page, ARRIVAL_Q)
            original, shuffled = shuffler.original[-1], shuffler.shuffled[-1]
            positions = [(claim.claim_id, cit.passage_id) for part in original.parts for claim in part.claims
                         for cit in claim.citations]
            reordered = [(claim.claim_id, cit.passage_id) for part in shuffled.parts for claim in part.claims
                         for cit in claim.citations]
            assert sorted(positions) == sorted(reordered) and positions != reordered, "the backend reordered"
            markers = page.locator("section.answer a.marker")
            assert markers.count() == len(reordered)
            by_position = [pid for _, pid in positions]
            moved = 0
            for index, (claim_id, passage_id) in enumerate(reordered):
                marker = markers.nth(index)
                assert marker.evaluate("e => e.closest('[data-claim-id]').dataset.claimId") == claim_id
                open_marker(page, marker)
                expected, _ = passage_text(console_stack, passage_id)
                panel = page.locator("#evidence-panel")
                assert panel.locator(".evidence").get_attribute("data-passage-id") == passage_id
                assert panel.locator("mark.cited").inner_text() == expected
                moved += by_position[index] != passage_id
                page.keyboard.press("Escape")
            assert moved, "at least one marker's passage is not the one at its original position"
            # The sources list follows the markers' own numbering, whatever the order received.
            numbered = page.eval_on_selector_all("section.sources li", "els => els.map(e => e.dataset.passageId)")
            first_seen = list(dict.fromkeys(pid for _, pid in reordered))
            assert numbered == first_seen
        finally:
            context.close()
            shuffled_console.stop()


def test_the_optional_location_box_scopes_the_answer_to_that_location(console, page):
    """The same question with each of two nearly identically named clinics chosen in the location
    box (the question names neither): Northgate's answer cites Northgate's check-in rules, Northside's
    answer never does, and the box keeps the choice."""
    sign_in(page, console.url)
    cited = {}
    for location in ("acme-northgate", "acme-northside"):
        ask_cited(page, "When should I arrive for my appointment?", location_id=location)
        assert page.locator("#location_id").input_value() == location
        cited[location] = {m["href"].split("/versions/")[0].removeprefix("/documents/") for m in _markers(page)}
    assert "acme-northgate-checkin" in cited["acme-northgate"], cited
    assert not any("northside" in d for d in cited["acme-northgate"]), cited
    assert not any("northgate" in d for d in cited["acme-northside"]), cited


def test_offered_passages_reordered_at_retrieval_each_marker_opens_its_own_passage(console_stack, chromium,
                                                                                    tmp_path):
    """The order the passages are offered in (and so their S-labels) changed before generation: an
    orchestrator of its own behind a retrieval that swaps its hits in pairs. The record shows the
    cited passages offered under other labels than retrieval's own order gives them; every marker
    still opens its own passage."""
    with shuffling_retrieval(console_stack.target("retrieval"), console_stack.identity("retrieval")) as (target, shuffler):
        orchestrator = console_stack.start_service("orchestrator", tmp_path / "orch", retrieval_target=target,
                                                   **ORCHESTRATOR_LOAD_TOLERANT)
        shuffled_console = start_console(console_stack, tmp_path / "console", orchestrator_target=orchestrator)
        context = new_context(chromium)
        try:
            page = context.new_page()
            sign_in(page, shuffled_console.url)
            markers = ask_cited(page, ARRIVAL_Q)
            trace_id = page.locator("section.answer").get_attribute("data-trace-id")
            record = console_stack.get_trace(trace_id, roles=("auditor",)).record
            searched = {}  # passage ID -> (label in retrieval's order, label as offered)
            for original, swapped in shuffler.searches:
                rank = {h.passage.identity.passage_id: f"S{i}" for i, h in enumerate(original.hits, start=1)}
                searched.update({h.passage.identity.passage_id: (rank[h.passage.identity.passage_id], h.label)
                                 for h in swapped.hits})
            cited = {c.passage_id: c.label for part in record.parts for c in part.citations}
            assert cited and all(searched[p][1] == label for p, label in cited.items()), (cited, searched)
            assert any(searched[p][0] != label for p, label in cited.items()), "cited under a moved label"
            assert {m["passage"] for m in _markers(page)} == set(cited)
            for index in range(markers.count()):
                marker = markers.nth(index)
                passage_id = marker.get_attribute("data-passage-id")
                open_marker(page, marker)
                panel = page.locator("#evidence-panel")
                assert panel.locator(".evidence").get_attribute("data-passage-id") == passage_id
                assert panel.locator("mark.cited").inner_text() == passage_text(console_stack, passage_id)[0]
                page.keyboard.press("Escape")
        finally:
            context.close()
            shuffled_console.stop()


# --- keyboard, focus and accessible names ------------------------------------------------------------

def test_keyboard_only_tab_enter_escape_returns_focus_to_the_same_marker(console, page):
    sign_in(page, console.url)
    second = ask_cited(page, ARRIVAL_Q).nth(1)
    target = second.get_attribute("data-passage-id")
    # From the top of the page, as a keyboard user arrives: Tab through the header and the form.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('a.marker')"):
            break
    assert page.evaluate("document.activeElement.dataset.marker") == "1", "Tab reaches marker 1 first"
    assert page.evaluate("document.activeElement.closest('section.answer') !== null")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.passageId") == target
    page.keyboard.press("Enter")
    wait_panel(page)
    assert page.evaluate("document.getElementById('evidence-panel').contains(document.activeElement)")
    assert page.locator("#evidence-panel .evidence").get_attribute("data-passage-id") == target
    assert second.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Escape")
    assert page.locator("#evidence-panel").is_hidden()
    assert page.evaluate("document.activeElement.dataset.passageId") == target
    assert second.evaluate("e => e === document.activeElement"), "focus is back on the same marker"
    assert second.get_attribute("aria-expanded") == "false"
    page.keyboard.press(" ")  # Space opens it too
    wait_panel(page)
    assert page.evaluate("document.getElementById('evidence-panel').contains(document.activeElement)")
    page.keyboard.press("Escape")
    assert second.evaluate("e => e === document.activeElement")


def test_accessibility_scan_ask_page_panel_version_page_and_receipt(console, page):
    sign_in(page, console.url, roles=("patient", "reviewer"), user="a11y-reviewer")
    markers = ask_cited(page, ARRIVAL_Q)
    assert axe_serious(page) == [], "ask page with an answer"
    open_marker(page, markers.first)
    assert axe_serious(page) == [], "open evidence panel"
    link = page.locator("#evidence-panel .open-version a").get_attribute("href")
    trace_id = page.locator("section.answer").get_attribute("data-trace-id")
    page.goto(console.url + link)
    page.wait_for_selector("#cited-span")
    assert axe_serious(page) == [], "version page"
    page.goto(f"{console.url}/traces/{trace_id}?fresh=1")
    page.wait_for_selector("article.receipt")
    assert axe_serious(page) == [], "receipt"
    page.goto(console.url + "/sign-in")
    assert axe_serious(page) == [], "sign-in page"


def test_the_accessibility_scan_can_fail(page):
    page.set_content('<html lang="en"><body><main><img src="data:,"><button></button></main></body></html>')
    found = {v["id"] for v in axe_serious(page)}
    assert {"image-alt", "button-name"} <= found, found


# --- access ----------------------------------------------------------------------------------------

def _versions(stack, tenant: str, roles=("policy_admin",)) -> dict[str, str]:
    from citetrace.kit.auth import bearer_metadata
    from citetrace.retrieval.v1 import retrieval_service_pb2 as pb
    from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as g

    with stack.channel("retrieval") as channel:
        reply = g.RetrievalServiceStub(channel).ListVersions(pb.ListVersionsRequest(page_size=100), timeout=10,
                                                             metadata=bearer_metadata(stack.token(tenant, roles)))
    return {v.document.document_id: v.version_id for v in reply.versions
            if v.status == 2}  # approved, current


def _not_found_body(page) -> str:
    assert page.locator("h1").inner_text() == "Not found"
    return page.locator("main").inner_html()


def test_access_other_tenant_staff_only_and_another_users_receipt_are_the_same_404(console, console_stack,
                                                                                      browser_context):
    borealis = _versions(console_stack, "borealis-clinics")
    acme = _versions(console_stack, "acme-health")
    staff_version = acme["acme-staff-overbooking"]
    staff_passage, staff_text = _staff_citation(console_stack)
    # A reviewer of acme asks: their answer's receipt exists.
    reviewer = browser_context.new_page()
    sign_in(reviewer, console.url, roles=("patient", "reviewer"), user="reviewer-1")
    ask_cited(reviewer, ARRIVAL_Q)
    trace_id = reviewer.locator("section.answer").get_attribute("data-trace-id")
    reviewer.goto(f"{console.url}/traces/{trace_id}?fresh=1")
    question_text = reviewer.locator("blockquote.question").inner_text()
    assert question_text == ARRIVAL_Q
    reviewer.close()
    browser_context.clear_cookies()

    page = browser_context.new_page()
    sign_in(page, console.url, tenant="acme-health", roles=("patient",), user="patient-2")
    missing = page.goto(f"{console.url}/documents/nothing-here/versions/{'0' * 64}")
    assert missing.status == 404
    baseline = _not_found_body(page)
    cases = {
        "another tenant's version": f"/documents/bor-aurora-arrival/versions/{borealis['bor-aurora-arrival']}",
        "a staff-only version": f"/documents/acme-staff-overbooking/versions/{staff_version}",
        "another user's receipt": f"/traces/{trace_id}",
        "another user's receipt (JSON)": f"/traces/{trace_id}/receipt.json",
        "a staff-only passage": f"/documents/acme-staff-overbooking/versions/{staff_version}/passages/"
                                f"{staff_passage}",
    }
    for label, path in cases.items():
        response = page.goto(console.url + path)
        assert response.status == 404, label
        assert response.headers["cache-control"].startswith("no-store"), label
        body = page.content()
        assert _not_found_body(page) == baseline, f"{label}: the same 404 as for something that does not exist"
        for secret in (staff_text[:40], question_text, trace_id, "Aurora", "bor-aurora"):
            assert secret not in body, f"{label}: {secret!r} in the HTML"


def _staff_citation(stack) -> tuple[str, str]:
    """(passage ID, text) of a staff-only handbook passage, as a staff member's answer cites it."""
    response = stack.ask(STAFF_Q, roles=("staff",), timeout=ASK_DEADLINE_SECONDS)
    for part in response.parts:
        for claim in part.claims:
            for citation in claim.citations:
                if citation.document_id == "acme-staff-overbooking":
                    return citation.passage_id, passage_text(stack, citation.passage_id)[0]
    raise AssertionError("a staff member's answer cites the staff-only handbook")


def test_reader_without_access_never_gets_the_passage_from_a_cached_page_or_an_earlier_answer(
        console, console_stack, browser_context):
    page = browser_context.new_page()
    sign_in(page, console.url, roles=("staff",), user="staff-1")
    ask_cited(page, STAFF_Q)
    staff_markers = [m for m in _markers(page) if "acme-staff-overbooking" in m["href"]]
    assert staff_markers, "staff see the staff-only handbook cited"
    marker = page.locator(f"section.answer a.marker[data-passage-id='{staff_markers[0]['passage']}']").first
    evidence_url = marker.get_attribute("data-evidence-url")
    open_marker(page, marker)
    staff_text = page.locator("#evidence-panel mark.cited").inner_text()
    assert staff_text
    version_url = console.url + staff_markers[0]["href"].split("#")[0]
    shown = page.goto(version_url)
    assert shown.status == 200 and staff_text in page.locator("#version-text").inner_text()
    for header in ("cache-control",):
        assert "no-store" in shown.headers[header]
    assert "Cookie" in shown.headers["vary"]
    sign_out(page)
    sign_in(page, console.url, roles=("patient",), user="patient-3")
    # The same URLs, the same browser (its HTTP cache and history), another reader.
    again = page.goto(version_url)
    assert again.status == 404 and staff_text not in page.content()
    panel = page.request.get(console.url + evidence_url, headers={"X-Console-Fragment": "1"})
    assert panel.status == 404 and staff_text not in panel.text()
    page.go_back()
    page.go_back()
    assert staff_text not in page.content(), "history navigation does not show the staff page again"
    page.goto(console.url + "/")
    ask(page, STAFF_Q)
    assert "acme-staff-overbooking" not in page.content(), "the patient's own answer does not cite it"
    assert staff_text not in page.content()


def test_csrf_every_writing_form_refuses_a_request_without_the_session_token(console, page):
    sign_in(page, console.url)
    for path, form in (("/ask", {"question": ARRIVAL_Q}), ("/sign-out", {}),
                       ("/traces/abc/reviews", {"decision": "accepted"}),
                       ("/sign-in", {"tenant": "borealis-clinics", "roles": "auditor"})):
        response = page.request.post(console.url + path, form=form, max_redirects=0)
        assert response.status == 403, path
        forged = page.request.post(console.url + path, form={**form, "csrf_token": "forged"}, max_redirects=0)
        assert forged.status == 403, path
    page.goto(console.url + "/")
    assert "tenant <strong>acme-health</strong>" in page.content(), "still the same session"
    cookie = next(c for c in page.context.cookies() if c["name"] == "citetrace_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"


# --- a superseded version opened from an old answer ----------------------------------------------------

SUPERSEDED_DOC = """---
tenant: cedar-care
document_id: cedar-console-allergy-{run}
source_class: preparation_instructions
title: Allergy testing arrival {run} (synthetic)
status: approved
valid_from: {valid_from}
roles: [patient, staff]
location_scope: []
intents: [arrival_preparation]
locale: en
---
# Allergy testing

## Arrival for allergy skin testing

Patients booked for allergy skin testing should arrive {minutes} minutes before the appointment to
complete the allergy questionnaire.
"""


def test_superseded_version_opened_from_an_old_answer_shows_the_banner_and_the_old_text(
        console, console_stack, page, tmp_path):
    run = tmp_path.name[-8:].lower().replace("_", "")
    old = tmp_path / "old.md"
    old.write_text(SUPERSEDED_DOC.format(run=run, valid_from="2025-01-01T00:00:00Z", minutes="25"))
    ingest = console_stack.cli("ingest", "--data-dir", str(console_stack.data_dir), str(old))
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    sign_in(page, console.url, tenant="cedar-care", roles=("patient",), user="cedar-patient")
    # (Worded so: understanding-2026-12-02.3 sends "When should I arrive for allergy skin testing?" to the
    # clinical boundary (0.89), a known false positive of issue 14; this test is about the superseded banner.)
    ask_cited(page, "How many minutes before allergy skin testing should I arrive?")
    marker = page.locator(f"section.answer a.marker[href*='cedar-console-allergy-{run}']").first
    old_link = marker.get_attribute("href")
    open_marker(page, marker)
    old_text = page.locator("#evidence-panel mark.cited").inner_text()
    assert "25 minutes" in old_text
    assert page.locator("#evidence-panel [data-banner]").count() == 0
    page.keyboard.press("Escape")
    # A new edition is approved: the cited version is superseded.
    new = tmp_path / "new.md"
    new.write_text(SUPERSEDED_DOC.format(run=run, valid_from="2026-01-01T00:00:00Z", minutes="35"))
    ingest = console_stack.cli("ingest", "--data-dir", str(console_stack.data_dir), str(new))
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    open_marker(page, marker)  # the old answer, still on screen
    panel = page.locator("#evidence-panel")
    assert panel.locator("[data-banner=superseded]").is_visible()
    assert panel.locator("mark.cited").inner_text() == old_text, "still the text that was cited"
    assert "superseded" in panel.locator("[data-field=status]").inner_text()
    page.goto(console.url + old_link)
    page.wait_for_selector("#cited-span")
    assert page.locator("[data-banner=superseded]").is_visible()
    assert page.locator("mark.cited").all_inner_texts() == [old_text]
    assert "35 minutes" not in page.locator("#version-text").inner_text()
    successor = page.locator("[data-banner] a").get_attribute("href")
    page.goto(console.url + successor)
    assert "35 minutes" in page.locator("#version-text").inner_text()
    assert page.locator("[data-banner]").count() == 0


RETIRED_DOC = """---
tenant: cedar-care
document_id: cedar-console-patch-{run}
source_class: preparation_instructions
title: Patch testing visit {run} (synthetic)
status: approved
valid_from: 2025-01-01T00:00:00Z
roles: [patient, staff]
location_scope: []
intents: [arrival_preparation]
locale: en
---
# Patch testing

## What to bring to patch testing

Patients booked for patch testing should bring a written list of every skin cream and cosmetic
they used in the last month.
"""


def test_retired_version_opened_from_an_old_answer_shows_the_retired_banner_and_the_cited_text(
        console, console_stack, page, tmp_path):
    from citetrace.common.v1 import common_pb2 as c
    from citetrace.kit.auth import bearer_metadata
    from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
    from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

    run = tmp_path.name[-8:].lower().replace("_", "")
    doc = tmp_path / "patch.md"
    doc.write_text(RETIRED_DOC.format(run=run))
    ingest = console_stack.cli("ingest", "--data-dir", str(console_stack.data_dir), str(doc))
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    sign_in(page, console.url, tenant="cedar-care", roles=("patient",), user="cedar-patient-2")
    ask_cited(page, "What should I bring to my patch testing visit?")
    marker = page.locator(f"section.answer a.marker[href*='cedar-console-patch-{run}']").first
    link = marker.get_attribute("href")
    open_marker(page, marker)
    cited = page.locator("#evidence-panel mark.cited").inner_text()
    assert "skin cream" in cited and page.locator("#evidence-panel [data-banner]").count() == 0
    page.keyboard.press("Escape")
    version_id = link.split("/versions/")[1].split("#")[0]
    with console_stack.channel("retrieval") as channel:
        ret_grpc.RetrievalServiceStub(channel).SetVersionStatus(
            ret_pb.SetVersionStatusRequest(version_id=version_id, status=c.VERSION_STATUS_RETIRED), timeout=30,
            metadata=bearer_metadata(console_stack.token("cedar-care", ("policy_admin",))))
    open_marker(page, marker)  # the old answer, still on screen
    panel = page.locator("#evidence-panel")
    assert panel.locator("[data-banner=retired]").is_visible()
    assert panel.locator("mark.cited").inner_text() == cited, "still the text that was cited"
    assert panel.locator("[data-field=status]").inner_text().startswith("retired")
    page.goto(console.url + link)
    page.wait_for_selector("#cited-span")
    assert page.locator("[data-banner=retired]").is_visible()
    assert "Retired version" in page.locator("[data-banner=retired]").inner_text()
    assert page.locator("mark.cited").all_inner_texts() == [cited]


# --- mobile -----------------------------------------------------------------------------------------

def test_mobile_viewport_panel_shows_title_version_and_source_class(console, chromium):
    context = new_context(chromium, viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        sign_in(page, console.url)
        marker = ask_cited(page, ARRIVAL_Q).first
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, "no horizontal scrolling"
        marker.scroll_into_view_if_needed()
        marker.tap()
        wait_panel(page)
        for selector in ("#evidence-title", "[data-field=version]", "[data-field=source-class]"):
            element = page.locator(f"#evidence-panel {selector}")
            assert element.is_visible(), selector
            box = element.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375 and box["y"] >= 0 \
                and box["y"] + box["height"] <= 740, f"{selector} is inside the viewport: {box}"
        screenshot(page, "console-mobile-panel.png")
    finally:
        context.close()


# --- every outcome rendered distinctly -------------------------------------------------------------------

OUTCOME_QUESTIONS = {
    "NEEDS_CLARIFICATION": "Are there any openings next Monday?",
    "CONFLICT": "When should I arrive for my MRI at Harbor Imaging Center?",
    "OUT_OF_SCOPE": "Should I stop taking my blood thinner before the echo?",
}


def test_each_outcome_has_its_own_explanation_and_next_action(console, console_stack, page, tmp_path):
    sign_in(page, console.url)
    seen = {}
    for outcome, question in OUTCOME_QUESTIONS.items():
        ask(page, question)
        part = page.locator(f"article.part[data-outcome={outcome}]").first
        assert part.is_visible(), outcome
        seen[outcome] = (part.get_attribute("class"), part.locator("h3").inner_text(),
                         part.locator(".explanation").inner_text(), part.locator(".next-action").inner_text())
    ask(page, OUTCOME_QUESTIONS["NEEDS_CLARIFICATION"])
    assert page.locator("form.clarify-form .clarification-question").inner_text().startswith("Which specialty")
    ask(page, OUTCOME_QUESTIONS["CONFLICT"])
    conflict = page.locator("article.part[data-outcome=CONFLICT]")
    assert conflict.locator("li.conflict a.marker").count() == 2, "both sources shown, each with its marker"
    ask(page, "I have chest pain, can I book cardiology today?")
    assert page.locator(".emergency[role=alert]").is_visible()
    emergency = page.locator("article.part.part--emergency")
    seen["EMERGENCY"] = (emergency.get_attribute("class"), emergency.locator("h3").inner_text(),
                         emergency.locator(".explanation").inner_text(),
                         emergency.locator(".next-action").inner_text())
    # An abstention: a tenant with nothing about parking.
    sign_out(page)
    sign_in(page, console.url, tenant="borealis-clinics")
    ask(page, "Where can I park my car?")
    abstained = page.locator("article.part[data-outcome=ABSTAINED_NO_EVIDENCE]")
    seen["ABSTAINED_NO_EVIDENCE"] = (abstained.get_attribute("class"), abstained.locator("h3").inner_text(),
                                     abstained.locator(".explanation").inner_text(),
                                     abstained.locator(".next-action").inner_text())
    assert abstained.locator("a.marker").count() == 0
    # Withheld claims: a generator that adds an unsupported statement.
    generation = console_stack.start_service("generation", tmp_path / "gen", backend="test",
                                             test_fault="unsupported_addition", test_fault_attempts="0")
    orchestrator = console_stack.start_service("orchestrator", tmp_path / "orch", generation_target=generation,
                                               max_regenerations="0", **ORCHESTRATOR_LOAD_TOLERANT)
    faulty = start_console(console_stack, tmp_path / "console", orchestrator_target=orchestrator)
    try:
        sign_out(page)
        sign_in(page, faulty.url)
        ask(page, ARRIVAL_Q)
        partial = page.locator("article.part").first
        outcome = partial.get_attribute("data-outcome")
        assert outcome in ("PARTIALLY_ANSWERED", "UNRESOLVED", "ABSTAINED_NO_EVIDENCE"), outcome
        assert partial.locator(".withheld li").count() >= 1
        assert "an assessment" not in partial.inner_text()
        seen[outcome] = (partial.get_attribute("class"), partial.locator("h3").inner_text(),
                         partial.locator(".explanation").inner_text(), "")
    finally:
        faulty.stop()
    # Each state has its own style, title and explanation (seed 004: a different explanation and
    # next action for each).
    for index in range(3):
        values = [entry[index] for entry in seen.values()]
        assert len(set(values)) == len(values), (index, seen)
    actions = [entry[3] for key, entry in seen.items() if entry[3]]
    assert len(set(actions)) == len(actions), seen


def test_source_unavailable_is_its_own_state_and_fabricates_nothing(console_stack, page, tmp_path, closed_target):
    orchestrator = console_stack.start_service("orchestrator", tmp_path / "orch", retrieval_target=closed_target,
                                               default_deadline_seconds="6")
    broken = start_console(console_stack, tmp_path / "console", orchestrator_target=orchestrator,
                           retrieval_target=closed_target)
    try:
        sign_in(page, broken.url)
        ask(page, ARRIVAL_Q)
        part = page.locator("article.part[data-outcome=SOURCE_UNAVAILABLE]")
        assert part.is_visible()
        assert part.locator("a.marker").count() == 0
        assert "Try again" in part.locator(".next-action").inner_text()
    finally:
        broken.stop()


# --- receipts, reviews, chain -------------------------------------------------------------------------

def test_receipt_review_queue_and_chain_status(console, console_stack, page, tmp_path):
    sign_in(page, console.url, roles=("patient", "reviewer"), user="reviewer-7")
    ask_cited(page, ARRIVAL_Q)
    trace_id = page.locator("section.answer").get_attribute("data-trace-id")
    cited = {m["passage"] for m in _markers(page)}
    page.goto(f"{console.url}/traces/{trace_id}?fresh=1")
    receipt = page.locator("article.receipt")
    assert receipt.get_attribute("data-trace-id") == trace_id
    assert page.locator("blockquote.question").inner_text() == ARRIVAL_Q
    part = page.locator("section.part").first
    retrieved = part.locator("table.retrieved tbody tr")
    assert retrieved.count() >= len(cited), "the retrieved set is kept apart from the citation set"
    assert part.locator("table.retrieved tbody tr.is-cited").count() == len(cited)
    assert part.locator(".citation-set a.marker").count() == len(cited)
    assert part.locator("table.claims-table tbody tr").count() >= 1
    assert "SUPPORTED" in part.locator("table.claims-table").inner_text()
    assert page.locator("table.timings tbody tr").count() >= 3
    record_hash = page.locator("input[name=answer_record_hash]").get_attribute("value")
    assert len(record_hash) == 64 and record_hash in page.locator("#chain ~ dl").first.inner_text()
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "console-receipt.png")
    # The citation marker of a receipt opens the same evidence panel (live, with this token).
    open_marker(page, part.locator(".citation-set a.marker").first)
    assert page.locator("#evidence-panel mark.cited").inner_text()
    page.keyboard.press("Escape")
    # Review: accepted with a note, bound to the answer version shown.
    page.check("input[name=decision][value=accepted]")
    page.fill("#review-note", "Checked against the arrival policy.")
    page.click("form.review-form button[type=submit]")
    page.wait_for_url(re.compile(r".*reviewed=1.*"))
    review = page.locator("ul.reviews li[data-decision=accepted]")
    assert review.count() == 1 and "Checked against the arrival policy." in review.inner_text()
    assert "reviewer-7" in review.inner_text()
    reply = console_stack.get_trace(trace_id, roles=("auditor",))
    assert [r.rubric_note for r in reply.reviews] == ["Checked against the arrival policy."]
    assert reply.reviews[0].answer_record_hash == record_hash
    # A stale answer version is refused, with the reason, and nothing is stored.
    page.goto(f"{console.url}/traces/{trace_id}")
    page.locator("input[name=answer_record_hash]").evaluate("e => e.value = '" + "f" * 64 + "'")
    page.check("input[name=decision][value=rejected]")
    page.click("form.review-form button[type=submit]")
    assert "ANSWER_VERSION_MISMATCH" in page.locator(".form-error").inner_text()
    assert len(console_stack.get_trace(trace_id, roles=("auditor",)).reviews) == 1
    # A further review: needs change, with its note, stored beside the first (reviews are appended).
    page.goto(f"{console.url}/traces/{trace_id}")
    page.check("input[name=decision][value=needs-change]")
    page.fill("#review-note", "Name the clinic in the first sentence.")
    page.click("form.review-form button[type=submit]")
    page.wait_for_url(re.compile(r".*reviewed=1.*"))
    assert "Name the clinic" in page.locator("ul.reviews li[data-decision=needs-change]").inner_text()
    stored = console_stack.get_trace(trace_id, roles=("auditor",)).reviews
    assert [(r.decision, r.rubric_note) for r in stored][1:] == [
        (trace_pb.REVIEW_DECISION_NEEDS_CHANGE, "Name the clinic in the first sentence.")]
    # The needs-review queue: the arrival policy's current version is superseded by a new edition.
    # A cited version is superseded: the answers that cited it need review again.
    versions = {c.version_id for p in reply.record.parts for c in p.citations}
    flagged = console_stack.cli("trace", "version-event", sorted(versions)[0], "--kind", "superseded",
                                "--tenant", "acme-health", "--roles", "policy_admin", "--data-dir",
                                str(console_stack.data_dir))
    assert flagged.returncode == 0, flagged.stdout + flagged.stderr
    page.goto(console.url + "/reviews")
    assert page.locator(f"table.queue tr[data-trace-id='{trace_id}']").count() == 1
    assert page.locator("[data-chain=ok]").is_visible()
    assert re.search(r"\d+ records? checked", page.locator("[data-chain]").inner_text())
    assert axe_serious(page) == [], "review queue"
    # Reviews are for reviewers: a patient sees no queue and no form.
    sign_out(page)
    sign_in(page, console.url, roles=("patient",))
    denied = page.goto(console.url + "/reviews")
    assert denied.status == 403


# --- export --------------------------------------------------------------------------------------------

def test_exports_keep_every_marker_and_pinned_link_and_the_json_receipt_matches_trace_export(
        console, console_stack, page, tmp_path):
    sign_in(page, console.url, roles=("patient", "auditor"), user="auditor-1")
    ask_cited(page, "Can I book cardiology at Northside tomorrow, and when should I arrive?")
    trace_id = page.locator("section.answer").get_attribute("data-trace-id")
    markers = _markers(page)
    assert markers
    downloads = {}
    for label in ("Download Markdown", "Download HTML", "Download JSON receipt"):
        with page.expect_download() as info:
            page.get_by_role("link", name=label).click()
        downloads[label] = info.value.path().read_text()
    markdown, html = downloads["Download Markdown"], downloads["Download HTML"]
    for marker in markers:
        absolute = console.url + marker["href"]
        assert f"[\\[{marker['number']}\\]]({absolute} " in markdown, marker
        assert f'href="{absolute}"' in html and f">[{marker['number']}]</a>" in html, marker
        assert f'aria-label="{marker["name"]}"' in html
    for outcome in page.eval_on_selector_all("article.part", "els => els.map(e => e.dataset.outcome)"):
        assert f"Outcome: {outcome}." in markdown and f'data-outcome="{outcome}"' in html
    assert trace_id in markdown and trace_id in html
    receipt = json.loads(downloads["Download JSON receipt"])
    exported = console_stack.cli("trace", "export", trace_id, "--tenant", "acme-health", "--roles",
                                 "patient,auditor", "--data-dir", str(console_stack.data_dir),
                                 "--retrieval-target", console_stack.target("retrieval"),
                                 "--target", console_stack.target("trace"))
    assert exported.returncode == 0, exported.stderr
    cli_receipt = json.loads(exported.stdout)
    for volatile in ("exported_at",):
        receipt.pop(volatile)
        cli_receipt.pop(volatile)
    assert receipt == cli_receipt, "the console's JSON receipt is the one `citetrace trace export` gives"
    # Copy answer puts the Markdown (with markers and links) on the clipboard.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=console.url)
    page.bring_to_front()  # the clipboard is readable only from the focused page
    page.click("button.copy-answer")
    page.wait_for_selector(".copy-status:not(:empty)")  # (no string eval: the page's CSP forbids it)
    assert page.evaluate("navigator.clipboard.readText()") == markdown
    # A patient cannot read receipts: the answer's own JSON is offered instead, with the same markers.
    sign_out(page)
    sign_in(page, console.url, roles=("patient",))
    ask_cited(page, ARRIVAL_Q)
    with page.expect_download() as info:
        page.get_by_role("link", name="Download answer JSON").click()
    answer = json.loads(info.value.path().read_text())
    shown = {m["passage"] for m in _markers(page)}
    assert {c["passage_id"] for p in answer["parts"] for cl in p.get("claims", []) for c in cl["citations"]} == shown


# --- sign-in and proxy mode ----------------------------------------------------------------------------

def test_proxy_mode_takes_the_token_from_the_header_and_never_a_tenant_from_the_url(console_stack, chromium,
                                                                                      tmp_path):
    proxy = start_console(console_stack, tmp_path, auth_mode="proxy", token_header="x-forwarded-access-token")
    try:
        context = new_context(chromium)
        page = context.new_page()
        response = page.goto(proxy.url + "/")
        assert response.status == 401 and "sign-in gateway" in page.content()
        assert page.goto(proxy.url + "/sign-in").status in (200, 400)
        assert page.locator("form[action='/sign-out']").count() == 0
        token = console_stack.token("acme-health", ("patient",))
        context.set_extra_http_headers({"x-forwarded-access-token": f"Bearer {token}"})
        page.goto(proxy.url + "/?tenant=borealis-clinics")
        assert "tenant <strong>acme-health</strong>" in page.content()
        ask(page, ARRIVAL_Q)
        assert page.locator("article.part[data-outcome=ANSWERED]").count() == 1
        posted = page.request.post(proxy.url + "/sign-in", form={"tenant": "x", "roles": "auditor",
                                                                  "csrf_token": "x"})
        assert posted.status == 403
        context.set_extra_http_headers({"x-forwarded-access-token": "Bearer not-a-token"})
        assert page.goto(proxy.url + "/").status == 401
        context.close()
        vary = proxy_vary(proxy.url, token)
        assert "x-forwarded-access-token" in vary.lower() and "cookie" in vary.lower()
    finally:
        proxy.stop()


def proxy_vary(url: str, token: str) -> str:
    import httpx

    return httpx.get(url + "/", headers={"x-forwarded-access-token": f"Bearer {token}"}).headers["vary"]


def test_sign_in_mints_the_development_token_for_the_chosen_tenant_and_roles(console, page):
    sign_in(page, console.url, tenant="borealis-clinics", roles=("patient", "staff"), user="nora")
    who = page.locator(".who").inner_text()
    assert "nora" in who and "borealis-clinics" in who and "patient, staff" in who
    page.goto(console.url + "/sign-in")
    page.fill("#tenant", "bad tenant!")
    page.click("form.stack-form button[type=submit]")
    assert "Tenant" in page.locator(".form-error").inner_text()
    next_path = urllib.parse.quote("//evil.example/")
    page.goto(f"{console.url}/sign-in?next={next_path}")
    page.click("form.stack-form button[type=submit]")
    assert page.url == console.url + "/", "no open redirect"


# --- the chain status is the signed-in tenant's, and a broken chain is shown as broken -------------------

def test_chain_status_is_per_tenant_and_a_record_edited_behind_the_services_back_shows_broken(
        console_stack, chromium, tmp_path):
    """Its own trace service (its own SQLite store) behind its own orchestrator and console: two
    answers of acme-health and one of borealis-clinics, then one acme record edited in the database.
    The review queue of each tenant shows that tenant's chain: acme's broken at the edited record
    (with a link to it), borealis's still intact."""
    import sqlite3

    trace_dir = tmp_path / "trace"
    # Its own data dir too: the signed checkpoints and the signing key live there, not in the
    # repository's default .citetrace/ where another run's checkpoint of the same tenant would be read.
    trace = console_stack.start_service("trace", trace_dir, service_data_dir=trace_dir,
                                        database_url=f"sqlite:///{trace_dir / 'trace.db'}",
                                        retrieval_target=console_stack.target("retrieval"))
    orchestrator = console_stack.start_service("orchestrator", tmp_path / "orch", trace_target=trace,
                                               trace_delivery="direct", **ORCHESTRATOR_LOAD_TOLERANT)
    own = start_console(console_stack, tmp_path / "console", orchestrator_target=orchestrator, trace_target=trace)
    context = new_context(chromium)
    try:
        answers = [console_stack.ask(question, tenant=tenant, target=orchestrator, timeout=ASK_DEADLINE_SECONDS)
                   for tenant, question in (("acme-health", ARRIVAL_Q), ("acme-health", STAFF_Q),
                                            ("borealis-clinics", "When should I arrive at Aurora?"))]
        assert all(a.trace_delivered for a in answers), "each record stored before its answer (direct delivery)"
        page = context.new_page()

        def chain_of(tenant: str) -> tuple[str, str]:
            sign_in(page, own.url, tenant=tenant, roles=("reviewer",), user=f"chain-{tenant}")
            page.goto(own.url + "/reviews")
            status = page.locator("[data-chain]")
            result = status.get_attribute("data-chain"), status.inner_text()
            sign_out(page)
            return result

        assert chain_of("acme-health") == ("ok", "Intact: 2 records checked, every hash link verified.")
        assert chain_of("borealis-clinics") == ("ok", "Intact: 1 record checked, every hash link verified.")
        edited = answers[1].trace_id
        with sqlite3.connect(trace_dir / "trace.db") as db:
            db.execute("DROP TRIGGER trace_records_no_update")
            changed = db.execute("UPDATE trace_records SET outcome = outcome + 1 WHERE trace_id = ?", (edited,))
            assert changed.rowcount == 1
        assert chain_of("borealis-clinics") == ("ok", "Intact: 1 record checked, every hash link verified."), \
            "another tenant's chain is not this tenant's"
        sign_in(page, own.url, tenant="acme-health", roles=("reviewer",), user="chain-acme")
        page.goto(own.url + "/reviews")
        status = page.locator("[data-chain]")
        assert status.get_attribute("data-chain") == "broken"
        assert status.inner_text().startswith("Broken at record 2 ("), status.inner_text()
        assert status.locator("a").get_attribute("href") == f"/traces/{edited}"
        assert axe_serious(page) == [], "review queue with a broken chain"
    finally:
        context.close()
        own.stop()
