"""The console's pieces without a browser: marker binding, the evidence context and digest check,
exports, settings, sign-in and CSRF over HTTP (the services behind it down: nothing is faked)."""

from __future__ import annotations

import datetime as dt

import pytest
from citetrace.common.v1 import common_pb2 as c
from citetrace.common.v1 import route_pb2 as r
from citetrace.identity import passage_id_of, pinned_link, sha256_hex
from citetrace.kit.auth import AuthSettings, TokenVerifier
from citetrace.kit.settings import SettingsError, load_settings
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as pb
from starlette.testclient import TestClient

from services.console import evidence as ev
from services.console.answer import build_answer
from services.console.bootstrap import build
from services.console.export import to_html, to_markdown
from services.console.session import SignInInvalid, parse_sign_in
from services.console.settings import PREFIX, Settings

SECRET = "s" * 40
TEXT = ("# Arrival policy\n\nIntro line.\n\n## Arrival time\n\nPlease arrive 15 minutes early.\n"
        "Exception: new patients arrive 20 minutes early.\n\n## Parking\n\nPark in lot B.\n")


def citation(document_id: str, start: int, end: int, title: str = "Arrival policy", version: str = "a" * 64):
    span = TEXT[start:end]
    return c.Citation(label="S1", passage_id=passage_id_of("t", document_id, version, start, end),
                      document_id=document_id, version_id=version, start=start, end=end,
                      content_sha256=sha256_hex(span), source_anchor="Arrival time", source_class="scheduling_policy",
                      link=pinned_link(document_id, version, start, end), title=title)


def response() -> pb.AskResponse:
    start = TEXT.index("Please")
    end = TEXT.index("\n\n## Parking")
    first, second = citation("arrival", start, end), citation("faq/general", 0, 16, title="FAQ <b>", version="b" * 64)
    return pb.AskResponse(trace_id="f" * 32, parts=[
        pb.AnswerPart(part_id="p1", kind=r.PART_KIND_ARRIVAL_PREPARATION, outcome=c.PART_OUTCOME_PARTIALLY_ANSWERED,
                      claims=[pb.AnsweredClaim(claim_id="c1", text="Arrive 15 minutes early [really] <now>.",
                                               citations=[first, second]),
                              pb.AnsweredClaim(claim_id="c2", text="New patients 20 minutes.", citations=[first])],
                      withheld=[pb.WithheldClaim(claim_id="c3", reasons=[c.FAILURE_REASON_UNSUPPORTED_CLAIM])]),
        pb.AnswerPart(part_id="p2", kind=r.PART_KIND_LIVE_SLOT, outcome=c.PART_OUTCOME_NEEDS_CLARIFICATION,
                      answer_text="Which clinic?", clarification_question="Which clinic?",
                      next_action=c.NEXT_ACTION_ANSWER_CLARIFICATION),
    ])


def test_markers_are_bound_by_passage_id_and_named_descriptively():
    answer = build_answer(response())
    c1, c2 = answer.parts[0].claims
    assert [m.number for m in c1.markers] == [1, 2] and [m.number for m in c2.markers] == [1]
    assert c2.markers[0].citation.passage_id == c1.markers[0].citation.passage_id
    assert c1.markers[0].accessible_name == "Source 1: Arrival policy, version aaaaaaaa"
    assert [m.citation.passage_id for m in answer.sources] == [m.citation.passage_id for m in c1.markers]
    # The evidence URL carries the marker's own identity (passage, span, digest), never a position.
    url = c1.markers[1].evidence_url
    assert url.startswith("/documents/faq%2Fgeneral/versions/" + "b" * 64 + "/passages/" +
                          c1.markers[1].citation.passage_id + "?chars=0-16&sha256=")
    assert answer.parts[0].withheld[0].reasons == ("the cited passage does not state it",)
    assert answer.parts[1].outcome.key == "clarification" and answer.parts[1].next_action


def test_reversed_citations_keep_each_marker_on_its_passage():
    original = response()
    reordered = pb.AskResponse()
    reordered.CopyFrom(original)
    claim = reordered.parts[0].claims[0]
    cits = list(claim.citations)
    del claim.citations[:]
    claim.citations.extend(reversed(cits))
    before = {m.citation.passage_id: m.citation.start for m in build_answer(original).sources}
    after = build_answer(reordered).sources
    assert [m.number for m in after] == [1, 2]
    assert all(before[m.citation.passage_id] == m.citation.start for m in after)
    assert after[0].citation.passage_id != build_answer(original).sources[0].citation.passage_id


def test_context_is_the_section_of_the_span_and_is_cut_at_words():
    start = TEXT.index("Please")
    end = start + len("Please arrive 15 minutes early.")
    segments, cut_before, cut_after = ev.context_segments(TEXT, start, end, context_chars=600)
    assert [s.cited for s in segments] == [True, False]
    assert segments[0].text == "Please arrive 15 minutes early."
    assert segments[1].text.strip() == "Exception: new patients arrive 20 minutes early."
    assert "Parking" not in "".join(s.text for s in segments) and not cut_before and not cut_after
    assert ev.heading_path(TEXT, start) == ["Arrival policy", "Arrival time"]
    segments, _, cut_after = ev.context_segments(TEXT, start, end, context_chars=10)
    assert cut_after and segments[-1].text == "\nException"  # no space within 10: cut at 10
    assert ev.parse_chars("10-20") == (10, 20) and ev.parse_chars("20-10") is None and ev.parse_chars("x") is None


def test_digest_check_compares_served_text_store_digest_and_recorded_digest():
    identity = c.PassageIdentity(content_sha256=sha256_hex("abc"))
    assert ev.check_digest("abc", identity, sha256_hex("abc")).ok
    assert not ev.check_digest("abd", identity, sha256_hex("abc")).ok
    changed = ev.check_digest("abc", identity, sha256_hex("older text"))
    assert not changed.ok and "differs from the text the answer cited" in changed.summary


def _version(status, valid_to=None, superseded_by=""):
    v = c.DocumentVersion(document=c.Document(document_id="d", title="T", source_class="handbook"), version_id="a" * 64,
                          status=status, superseded_by_version_id=superseded_by)
    v.valid_from.FromDatetime(dt.datetime(2025, 1, 1))
    if valid_to:
        v.valid_to.FromDatetime(valid_to)
    return v


def test_version_banner_for_retired_superseded_and_current():
    now = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    assert ev.version_facts(_version(c.VERSION_STATUS_APPROVED), now).banner == ""
    superseded = ev.version_facts(_version(c.VERSION_STATUS_APPROVED, dt.datetime(2026, 1, 1), "b" * 64), now)
    assert superseded.superseded and "superseded" in superseded.banner and superseded.superseded_by == "b" * 64
    retired = ev.version_facts(_version(c.VERSION_STATUS_RETIRED), now)
    assert retired.retired and "retired" in retired.banner


def test_exports_keep_markers_links_and_outcomes_and_escape_text():
    answer = build_answer(response())
    base = "https://console.example"
    md = to_markdown(answer, "When?", base)
    html = to_html(answer, "When <b>?", base)
    for marker in answer.sources:
        link = base + marker.link
        assert f"[\\[{marker.number}\\]]({link} " in md
        assert f'href="{link}"' in html and f">[{marker.number}]</a>" in html
    assert "Arrive 15 minutes early \\[really\\] <now>." in md
    assert "&lt;now&gt;" in html and "<now>" not in html and "When &lt;b&gt;?" in html and "FAQ &lt;b&gt;" in html
    assert "Outcome: PARTIALLY_ANSWERED." in md and "A statement was withheld" in md
    assert "Outcome: NEEDS_CLARIFICATION." in md and "(No cited statement in this part.)" in md
    assert f"{base}/traces/{'f' * 32}" in md and f"{base}/traces/{'f' * 32}" in html


def test_settings_are_validated_at_start_up():
    assert load_settings(Settings, PREFIX, {"CITETRACE_CONSOLE_SESSION_SECRET": SECRET}).auth_mode == "proxy"
    for env, needle in (({}, "SESSION_SECRET"),
                        ({"CITETRACE_CONSOLE_SESSION_SECRET": SECRET, "CITETRACE_CONSOLE_AUTH_MODE": "open"}, "auth_mode"),
                        ({"CITETRACE_CONSOLE_SESSION_SECRET": SECRET, "CITETRACE_CONSOLE_TOKEN_HEADER": "bad header"},
                         "token_header"),
                        ({"CITETRACE_CONSOLE_SESSION_SECRET": SECRET, "CITETRACE_CONSOLE_TYPO": "1"}, "unknown")):
        with pytest.raises(SettingsError, match=needle):
            load_settings(Settings, PREFIX, env)
    with pytest.raises(ValueError, match="mints tokens"):
        build(Settings(session_secret=SECRET, auth_mode="development"),
              AuthSettings(rs256_public_key_file=__import__("pathlib").Path("/dev/null")))


def test_sign_in_form_values_are_checked():
    parsed = parse_sign_in(" acme-health ", ["staff", "patient"], "loc-b, loc-a", "")
    assert parsed.tenant == "acme-health" and parsed.roles == ("patient", "staff")
    assert parsed.locations == ("loc-a", "loc-b") and parsed.user == "console-user"
    for args in (("", ["patient"], "", "u"), ("t", ["service"], "", "u"), ("t", [], "", "u"),
                 ("t", ["patient"], "bad loc", "u"), ("t a", ["patient"], "", "u")):
        with pytest.raises(SignInInvalid):
            parse_sign_in(*args)


def _client(mode: str = "development", **extra) -> TestClient:
    from e2e.conftest import free_port

    closed = f"127.0.0.1:{free_port()}"
    settings = Settings(session_secret=SECRET, auth_mode=mode, orchestrator_target=closed, retrieval_target=closed,
                        scheduler_gateway_target=closed, trace_target=closed, ask_timeout_seconds=1,
                        call_timeout_seconds=0.5, **extra)
    console, app = build(settings, AuthSettings(hs256_secret=SECRET))
    client = TestClient(app, follow_redirects=False)
    client.console = console
    return client


def _csrf(client: TestClient, path: str = "/sign-in") -> str:
    import re

    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text).group(1)


def test_development_sign_in_needs_the_csrf_token_and_mints_a_verifiable_token():
    client = _client()
    assert client.get("/").status_code == 303
    assert client.post("/sign-in", data={"tenant": "acme-health", "roles": "auditor"}).status_code == 403
    token = _csrf(client)
    signed = client.post("/sign-in", data={"csrf_token": token, "tenant": "acme-health", "roles": ["patient"],
                                           "user": "u1", "next": "/"})
    assert signed.status_code == 303 and signed.headers["location"] == "/"
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    page = client.get("/")
    assert page.status_code == 200 and "tenant <strong>acme-health</strong>" in page.text
    assert page.headers["cache-control"] == "no-store, private" and page.headers["vary"] == "Cookie"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert token not in page.text, "signing in starts a fresh session with a new CSRF token"
    # The session's token is an ordinary development token: every service can verify it.
    import base64
    import json

    import itsdangerous

    raw = client.cookies["citetrace_console"]
    data = json.loads(base64.b64decode(itsdangerous.TimestampSigner(SECRET).unsign(raw)))
    principal = TokenVerifier(AuthSettings(hs256_secret=SECRET)).verify(data["token"])
    assert (principal.tenant_id, principal.roles, principal.subject) == ("acme-health", ("patient",), "u1")


def test_asking_with_the_orchestrator_down_says_so_and_invents_nothing():
    client = _client()
    token = _csrf(client)
    client.post("/sign-in", data={"csrf_token": token, "tenant": "acme-health", "roles": ["patient"]})
    token = _csrf(client, "/")
    assert client.post("/ask", data={"question": "When?"}).status_code == 403, "no CSRF token, no Ask"
    reply = client.post("/ask", data={"csrf_token": token, "question": "When should I arrive?"})
    assert reply.status_code == 503 and "unavailable" in reply.text and "a.marker" not in reply.text
    assert client.post("/ask", data={"csrf_token": token, "question": " "}).status_code == 400


def test_malformed_ids_are_the_same_404_without_a_call():
    client = _client()
    token = _csrf(client)
    client.post("/sign-in", data={"csrf_token": token, "tenant": "acme-health", "roles": ["patient"]})
    bodies = {client.get(path).text for path in ("/documents/d/versions/not-hex", "/traces/bad id!",
                                                 "/documents/d/versions/" + "a" * 64 + "/passages/zz", "/nowhere")}
    assert len(bodies) == 1 and "Not found" in bodies.pop()


def test_proxy_mode_reads_the_configured_header_and_shows_no_sign_in():
    from citetrace.kit.auth import mint_token

    client = _client("proxy", token_header="x-auth")
    assert client.get("/").status_code == 401
    token = mint_token(AuthSettings(hs256_secret=SECRET), tenant_id="cedar-care", subject="p", roles=["patient"])
    page = client.get("/", headers={"x-auth": f"Bearer {token}"})
    assert page.status_code == 200 and "cedar-care" in page.text and "/sign-out" not in page.text
    assert page.headers["vary"] == "Cookie, x-auth"
    assert client.get("/", headers={"authorization": f"Bearer {token}"}).status_code == 401, "only the configured header"
    assert client.get("/healthz").text == "ok"
    assert client.get("/readyz").status_code == 503, "NOT_SERVING until the server has started"
    client.console.readiness.serving()
    assert client.get("/readyz").status_code == 200
    client.console.readiness.draining()
    assert client.get("/readyz").status_code == 503, "NOT_SERVING again while draining"


def test_marker_link_keeps_extra_locators_only_for_its_own_version_and_span():
    from services.console.answer import Marker

    cit = citation("arrival", 10, 20)
    paged = c.Citation()
    paged.CopyFrom(cit)
    paged.link = pinned_link("arrival", cit.version_id) + "#page=3&chars=10-20"
    assert Marker(1, paged).link.endswith("#page=3&chars=10-20")
    forged = c.Citation()
    forged.CopyFrom(cit)
    forged.link = pinned_link("other", "b" * 64) + "#chars=10-20"
    assert Marker(1, forged).link == pinned_link("arrival", cit.version_id, 10, 20)


def test_receipt_view_keeps_the_retrieved_set_apart_from_the_citation_set():
    from citetrace.trace.v1 import trace_service_pb2 as trace_pb

    from services.console.receipt import build_receipt_view

    cited = citation("arrival", 0, 16)
    record = trace_pb.TraceRecord(trace_id="a" * 32, sequence=4, record_hash="h" * 64, previous_hash="g" * 64)
    part = record.parts.add(part_id="p1", kind=r.PART_KIND_ARRIVAL_PREPARATION, outcome=c.PART_OUTCOME_ANSWERED)
    part.retrieval.settings.filters.intents.append(c.INTENT_ARRIVAL_PREPARATION)
    for label, (start, end) in (("S1", (0, 16)), ("S2", (20, 40))):
        hit = part.retrieval.retrieved.add(label=label, fused_rank=int(label[1:]))
        hit.passage.identity.CopyFrom(c.PassageIdentity(
            passage_id=passage_id_of("t", "arrival", "a" * 64, start, end), document_id="arrival",
            version_id="a" * 64, start=start, end=end))
    part.citations.append(cited)
    claim = part.claims.add(shown=True, attempt=1)
    claim.claim.CopyFrom(c.Claim(claim_id="c1", text="x", evidence_labels=["S1"]))
    view = build_receipt_view(trace_pb.GetTraceResponse(
        record=record, passage_text=trace_pb.PassageTextReadback(filled=1, not_visible=1)))
    (receipt,) = view.parts
    assert [row.cited for row in receipt.retrieved] == [True, False]
    assert [m.citation.passage_id for m in receipt.citations] == [cited.passage_id]
    assert receipt.claims[0].markers[0].number == 1
    assert "intents arrival_preparation" in dict(receipt.retrieval_settings)["filters"]
    assert "1 not visible to you" in view.passage_text and view.sequence == 4


def test_paged_sources_show_printed_and_viewer_pages_in_markers_and_exports():
    from services.console.answer import Marker

    cit = citation("handbook", 10, 20)
    cit.page_start = cit.page_end = 9
    cit.page_label_start = cit.page_label_end = "3"
    cit.link = ""
    marker = Marker(2, cit)
    assert marker.pages == "p. 3 (viewer page 9)"
    assert marker.accessible_name == "Source 2: Arrival policy, p. 3 (viewer page 9), version aaaaaaaa"
    assert marker.link.endswith("#page=9&chars=10-20")
    answer = build_answer(pb.AskResponse(trace_id="f" * 32, parts=[pb.AnswerPart(
        part_id="p1", outcome=c.PART_OUTCOME_ANSWERED, claims=[pb.AnsweredClaim(claim_id="c1", text="x",
                                                                               citations=[cit])])]))
    assert "p. 3 (viewer page 9), characters 10-20" in to_markdown(answer, "q", "http://h")


def test_the_readme_shows_a_screenshot_the_browser_tests_write_and_make_screenshots_refreshes():
    """README's console images exist (PNG), each is a file a browser test writes, and the test that
    writes it is one `make screenshots` runs."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    images = re.findall(r"!\[[^\]]+\]\((docs/screenshots/[^)\s]+)\)", (repo / "README.md").read_text())
    assert "docs/screenshots/console-ask-panel.png" in images, images
    source = (repo / "tests" / "console" / "test_browser.py").read_text()
    writers = {}
    for test in re.split(r"\ndef (?=test_)", source)[1:]:
        for name in re.findall(r'screenshot\(page, "([^"]+)"', test):
            writers[name] = test.split("(", 1)[0]
    selection = re.search(r'-k "([^"]+)"', (repo / "deploy" / "make" / "console.mk").read_text()).group(1)
    for image in images:
        assert (repo / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", image
        writer = writers.get(Path(image).name)
        assert writer, f"no browser test writes {image}"
        assert any(part.strip() in writer for part in selection.split(" or ")), (writer, selection)
