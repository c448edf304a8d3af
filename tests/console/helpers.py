"""What a person does in the console, as Playwright steps, and the checks the browser tests share."""

from __future__ import annotations

from citetrace.kit.auth import bearer_metadata
from citetrace.retrieval.v1 import retrieval_service_pb2 as ret_pb
from citetrace.retrieval.v1 import retrieval_service_pb2_grpc as ret_grpc

from console.conftest import ANSWER_WAIT_MS, ARRIVAL_Q, AXE, SCREENSHOTS

__all__ = ["ARRIVAL_Q", "ask", "ask_cited", "axe_serious", "open_marker", "passage_text", "screenshot", "served_passage",
           "served_version", "sign_in",
           "sign_out", "wait_panel"]

ALL_ROLES = ("patient", "staff", "reviewer", "auditor", "policy_admin")
MARKERS = "section.answer a.marker"


def sign_in(page, base_url: str, tenant: str = "acme-health", roles=("patient",), user: str = "console-user") -> None:
    page.goto(f"{base_url}/sign-in")
    page.fill("#tenant", tenant)
    for role in ALL_ROLES:
        box = page.locator(f"input[name=roles][value={role}]")
        box.check() if role in roles else box.uncheck()
    page.fill("#user", user)
    page.click("form.stack-form button[type=submit]")
    page.wait_for_url(f"{base_url}/")


def sign_out(page) -> None:
    page.click("form[action='/sign-out'] button")
    page.wait_for_url("**/sign-in")


def ask(page, question: str, location_id: str = "") -> None:
    """Ask from the page's form and wait for the page that answers it: the new document, loaded
    (its script has bound the markers), never the previous answer still on screen."""
    page.fill("#question", question)
    if location_id:
        page.select_option("#location_id", location_id)
    with page.expect_navigation(wait_until="load", timeout=ANSWER_WAIT_MS):
        page.click("form.ask-form button[type=submit]")
    page.wait_for_selector("section.answer, .part--unavailable[role=alert]", timeout=ANSWER_WAIT_MS)


def ask_cited(page, question: str, location_id: str = ""):
    """Ask a question the stack answers with citations; the markers. An answer without markers
    fails at once, naming the outcomes and explanations the page shows (not as a timeout on a
    marker that will never appear)."""
    ask(page, question, location_id)
    markers = page.locator(MARKERS)
    if markers.count() == 0:
        shown = page.eval_on_selector_all(
            "article.part, .part--unavailable", """els => els.map(e => (e.dataset.outcome || e.className) + ': ' +
            e.innerText.replace(/\\s+/g, ' ').slice(0, 300))""")
        raise AssertionError(f"no citation marker in the answer to {question!r}; the page shows {shown}")
    return markers


def open_marker(page, marker) -> None:
    marker.click()
    wait_panel(page)


def wait_panel(page) -> None:
    page.wait_for_selector("#evidence-panel[data-state=open], #evidence-panel[data-state=refused]")


def passage_text(stack, passage_id: str, tenant: str = "acme-health", roles=("auditor",)) -> tuple[str, object]:
    """The passage as retrieval serves it (ground truth for what the panel must show)."""
    passage = served_passage(stack, passage_id, tenant, roles)
    return passage.text, passage.identity


def served_passage(stack, passage_id: str, tenant: str = "acme-health", roles=("auditor",)):
    """The whole Passage message retrieval serves (text, identity, heading context)."""
    with stack.channel("retrieval") as channel:
        return ret_grpc.RetrievalServiceStub(channel).GetPassages(
            ret_pb.GetPassagesRequest(passage_ids=[passage_id]), timeout=10,
            metadata=bearer_metadata(stack.token(tenant, roles))).passages[0]


def served_version(stack, version_id: str, tenant: str = "acme-health", roles=("policy_admin",)):
    """The DocumentVersion retrieval lists for this version ID (its validity window, status)."""
    with stack.channel("retrieval") as channel:
        reply = ret_grpc.RetrievalServiceStub(channel).ListVersions(
            ret_pb.ListVersionsRequest(page_size=200), timeout=10, metadata=bearer_metadata(stack.token(tenant, roles)))
    (version,) = [v for v in reply.versions if v.version_id == version_id]
    return version


def axe_serious(page) -> list[dict]:
    """axe-core (the npm package, injected) on the page as it is now: violations of impact
    serious or critical, with the offending nodes."""
    # Evaluated over the DevTools protocol: the console's CSP (no inline script) stays on.
    page.evaluate(_axe_source() + "\n;true")
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}));
    }""")
    return [v for v in result if v["impact"] in ("serious", "critical")]


_AXE_SOURCE: list[str] = []


def _axe_source() -> str:
    if not _AXE_SOURCE:
        _AXE_SOURCE.append(AXE.read_text())
    return _AXE_SOURCE[0]


def screenshot(page, name: str, full_page: bool = False) -> str:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=full_page)
    return str(path)
