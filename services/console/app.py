"""The console's HTTP routes: they translate between HTTP and the backends (the services' gRPC
contracts) and render server-side HTML. Every dynamic response is `Cache-Control: no-store` and
varies on the cookie and the token header, so no cache (the browser's, a proxy's) can hand a page a
reader was allowed to see to a reader who is not."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import time
from pathlib import Path

from citetrace.identity import page_locator, pinned_link
from citetrace.orchestrator.v1 import orchestrator_service_pb2 as orch_pb
from citetrace.receipts import build_receipt, cited_passage_ids
from citetrace.trace.v1 import trace_service_pb2 as trace_pb
from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from services.console import evidence as ev
from services.console.answer import build_answer
from services.console.backends import (
    BackendError,
    Backends,
    IntegrityFailure,
    NotVisible,
    Rejected,
    SignInAgain,
    Unavailable,
)
from services.console.export import to_html, to_markdown
from services.console.http import ConsoleHeaders, Readiness, RequestMetrics
from services.console.receipt import DECISIONS, build_receipt_view
from services.console.session import (
    CSRF_FIELD,
    SIGN_IN_ROLES,
    Authenticator,
    CsrfRejected,
    SignInInvalid,
    SignInRequired,
    Viewer,
    check_csrf,
    csrf_token,
    parse_sign_in,
)
from services.console.settings import Settings

HERE = Path(__file__).resolve().parent
HEX64 = re.compile(r"^[0-9a-f]{64}$")
TRACE_ID = re.compile(r"^[0-9A-Za-z._:-]{1,128}$")
SESSION_COOKIE = "citetrace_console"


@dataclasses.dataclass
class Console:
    settings: Settings
    backends: Backends
    auth: Authenticator
    readiness: Readiness
    templates: Jinja2Templates

    # --- plumbing ---------------------------------------------------------------------------

    def base_url(self, request: Request) -> str:
        return self.settings.public_url.rstrip("/") or str(request.base_url).rstrip("/")

    def page(self, request: Request, template: str, status: int = 200, viewer: Viewer | None = None,
             **context) -> HTMLResponse:
        if viewer is None:
            viewer = self.auth.optional_viewer(request)
        return self.templates.TemplateResponse(request, template, {
            "viewer": viewer, "csrf_field": CSRF_FIELD, "csrf": csrf_token(request),
            "development": self.auth.development, **context}, status_code=status)

    def not_found(self, request: Request, viewer: Viewer | None = None) -> HTMLResponse:
        """One 404 for "does not exist" and "you may not read it": the same bytes either way."""
        return self.page(request, "not_found.html", status=404, viewer=viewer)

    def failure(self, request: Request, error: BackendError, viewer: Viewer | None) -> Response:
        if isinstance(error, NotVisible):
            return self.not_found(request, viewer)
        if isinstance(error, SignInAgain):
            raise SignInRequired("Your session has expired: sign in again.")
        status, title = {
            Unavailable: (503, "A service is unavailable"),
            IntegrityFailure: (502, "The source failed its integrity check"),
            Rejected: (400, "The request was refused"),
        }.get(type(error), (502, "Something went wrong"))
        return self.page(request, "error.html", status=status, viewer=viewer, title=title, error=error)

    async def form(self, request: Request) -> dict:
        form = await request.form(max_files=0, max_fields=50)
        check_csrf(request, form.get(CSRF_FIELD))
        return form

    # --- health -----------------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(self, request: Request) -> Response:
        if self.readiness.ready:
            return PlainTextResponse("SERVING")
        return PlainTextResponse("NOT_SERVING", status_code=503)

    # --- sign-in ----------------------------------------------------------------------------

    async def sign_in_page(self, request: Request) -> Response:
        return self.page(request, "sign_in.html", roles=SIGN_IN_ROLES, next=_safe_next(request.query_params.get("next")),
                         form={}, error="")

    async def sign_in(self, request: Request) -> Response:
        form = await self.form(request)
        nxt = _safe_next(form.get("next"))
        if not self.auth.development:
            return self.page(request, "sign_in.html", status=400, roles=SIGN_IN_ROLES, next=nxt, form={},
                             error="Sign-in is done by the fronting proxy in this deployment.")
        try:
            parsed = parse_sign_in(str(form.get("tenant", "")), [str(x) for x in form.getlist("roles")],
                                   str(form.get("locations", "")), str(form.get("user", "")))
        except SignInInvalid as exc:
            return self.page(request, "sign_in.html", status=400, roles=SIGN_IN_ROLES, next=nxt, error=str(exc),
                             form={"tenant": form.get("tenant", ""), "roles": form.getlist("roles"),
                                   "locations": form.get("locations", ""), "user": form.get("user", "")})
        self.auth.sign_in(request, parsed)
        return RedirectResponse(nxt, status_code=303)

    async def sign_out(self, request: Request) -> Response:
        await self.form(request)
        self.auth.sign_out(request)
        return RedirectResponse("/sign-in" if self.auth.development else "/", status_code=303)

    # --- ask --------------------------------------------------------------------------------

    async def ask_page(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        return self.page(request, "ask.html", viewer=viewer, locations=await self._locations(viewer),
                         question=request.query_params.get("q", "")[: self.settings.max_question_chars],
                         location_id=request.query_params.get("location", ""), answer=None)

    async def ask(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        form = await self.form(request)
        question = str(form.get("question", "")).strip()
        location_id = str(form.get("location_id", "")).strip()
        locations = await self._locations(viewer)
        context = {"locations": locations, "question": question, "location_id": location_id, "answer": None}
        if not question:
            return self.page(request, "ask.html", status=400, viewer=viewer, error="Type a question first.", **context)
        if len(question) > self.settings.max_question_chars:
            return self.page(request, "ask.html", status=400, viewer=viewer, **context,
                             error=f"The question is longer than {self.settings.max_question_chars} characters.")
        ask = orch_pb.AskRequest(question=question, location_id=location_id, locale=str(form.get("locale", "")))
        as_of = _timestamp(str(form.get("as_of", "")))
        if as_of is not None:
            ask.as_of.CopyFrom(as_of)
        try:
            response = await run_in_threadpool(self.backends.ask, viewer.token, ask)
        except SignInAgain as exc:
            raise SignInRequired("Your session has expired: sign in again.") from exc
        except BackendError as exc:
            status = 503 if isinstance(exc, Unavailable) else 400
            return self.page(request, "ask.html", status=status, viewer=viewer, backend_error=exc, **context)
        answer = build_answer(response)
        base = self.base_url(request)
        context["answer"] = answer
        return self.page(
            request, "ask.html", viewer=viewer, **context,
            export_markdown=to_markdown(answer, question, base), export_html=to_html(answer, question, base),
            answer_json=json_format.MessageToJson(response, indent=2, preserving_proto_field_name=True))

    async def _locations(self, viewer: Viewer) -> list:
        try:
            return await run_in_threadpool(self.backends.locations, viewer.token)
        except BackendError:
            return []  # the form still works with a typed location ID

    # --- evidence ---------------------------------------------------------------------------

    async def evidence_panel(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        document_id, version_id = request.path_params["document_id"], request.path_params["version_id"]
        passage_id = request.path_params["passage_id"]
        chars = ev.parse_chars(request.query_params.get("chars"))
        expected = request.query_params.get("sha256", "").lower()
        if not (HEX64.match(version_id) and HEX64.match(passage_id)) or (expected and not HEX64.match(expected)):
            return self.not_found(request, viewer)
        fragment = request.headers.get("x-console-fragment") == "1"
        template = "evidence_fragment.html" if fragment else "evidence_page.html"
        try:
            passage, version = await run_in_threadpool(self.backends.passage, viewer.token, passage_id)
            if passage.identity.version_id != version_id:
                return self.not_found(request, viewer)
            whole = await run_in_threadpool(self.backends.version_text, viewer.token, version_id,
                                            version.text_length)
        except BackendError as exc:
            if not fragment:
                return self.failure(request, exc, viewer)
            if isinstance(exc, SignInAgain):
                raise SignInRequired("Your session has expired: sign in again.") from exc
            kind, status = {NotVisible: ("not-visible", 404), IntegrityFailure: ("integrity", 502)}.get(
                type(exc), ("unavailable", 503))
            return self.page(request, "evidence_unavailable.html", status=status, viewer=viewer, kind=kind)
        identity = passage.identity
        if identity.version_id != version_id or identity.document_id != document_id or \
                version.document.document_id != document_id:
            return self.not_found(request, viewer)
        start, end = chars or (identity.start, identity.end)
        if (start, end) != (identity.start, identity.end) or whole.text[start:end] != passage.text:
            # The link and the stored passage disagree on the location: do not present it as verified.
            locator_ok = False
        else:
            locator_ok = True
        segments, cut_before, cut_after = ev.context_segments(whole.text, identity.start, identity.end,
                                                              self.settings.panel_context_chars)
        facts = ev.version_facts(version)
        return self.page(
            request, template, viewer=viewer, facts=facts, passage=passage, segments=segments,
            cut_before=cut_before, cut_after=cut_after,
            heading=passage.heading_context or " > ".join(ev.heading_path(whole.text, identity.start)),
            digest=ev.check_digest(passage.text, identity, expected), locator_ok=locator_ok,
            pages=page_locator(identity.page_start, identity.page_end, identity.page_label_start,
                               identity.page_label_end),
            link=pinned_link(document_id, version_id, identity.start, identity.end, page=identity.page_start))

    async def version_page(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        document_id, version_id = request.path_params["document_id"], request.path_params["version_id"]
        if not HEX64.match(version_id):
            return self.not_found(request, viewer)
        try:
            whole = await run_in_threadpool(self.backends.version_text, viewer.token, version_id)
        except BackendError as exc:
            return self.failure(request, exc, viewer)
        if whole.version.document.document_id != document_id:
            return self.not_found(request, viewer)
        facts = ev.version_facts(whole.version)
        successor = pinned_link(document_id, facts.superseded_by) if facts.superseded_by else ""
        return self.page(request, "version.html", viewer=viewer, facts=facts, text=whole.text,
                         length=len(whole.text), successor=successor,
                         headings=ev.headings(whole.text))

    # --- receipts and reviews -----------------------------------------------------------------

    async def _trace(self, request: Request, viewer: Viewer) -> trace_pb.GetTraceResponse:
        """The record the path names (a malformed ID is simply not visible). A record just answered
        may still be in the orchestrator's outbox (delivered in the background within
        milliseconds): links from a fresh answer wait for it a little."""
        trace_id = request.path_params["trace_id"]
        if not TRACE_ID.match(trace_id):
            raise NotVisible("NOT_FOUND", "", "malformed trace ID")
        patience = self.settings.fresh_record_patience_seconds if request.query_params.get("fresh") == "1" else 0.0
        deadline = time.monotonic() + patience
        while True:
            try:
                return await run_in_threadpool(self.backends.trace, viewer.token, trace_id)
            except NotVisible as exc:
                if exc.code != "NOT_FOUND" or time.monotonic() >= deadline:
                    raise
                await _sleep(0.1)

    async def receipt_page(self, request: Request, review_error: str = "", status: int = 200) -> Response:
        viewer = self.auth.viewer(request)
        try:
            reply = await self._trace(request, viewer)
        except BackendError as exc:
            return self.failure(request, exc, viewer)
        return self.page(request, "receipt.html", status=status, viewer=viewer, receipt=build_receipt_view(reply),
                         decisions=list(DECISIONS), review_error=review_error,
                         reviewed=request.query_params.get("reviewed") == "1")

    async def receipt_json(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        try:
            reply = await self._trace(request, viewer)
            availability, error = await run_in_threadpool(self.backends.passages_retrievable, viewer.token,
                                                          cited_passage_ids(reply))
        except BackendError as exc:
            return self.failure(request, exc, viewer)
        body = json.dumps(build_receipt(reply, availability, error), indent=2, sort_keys=True, ensure_ascii=False)
        return Response(body + "\n", media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="receipt-{reply.record.trace_id}.json"'})

    async def record_review(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        trace_id = request.path_params["trace_id"]
        form = await self.form(request)
        if not TRACE_ID.match(trace_id):
            return self.not_found(request, viewer)
        decision = DECISIONS.get(str(form.get("decision", "")))
        if decision is None:
            return await self.receipt_page(request, "Choose a decision: accepted, rejected or needs change.", 400)
        review = trace_pb.RecordReviewRequest(trace_id=trace_id, decision=decision,
                                              rubric_note=str(form.get("note", "")),
                                              answer_record_hash=str(form.get("answer_record_hash", "")))
        try:
            await run_in_threadpool(self.backends.record_review, viewer.token, review)
        except NotVisible:
            return self.not_found(request, viewer)
        except (Rejected, Unavailable) as exc:
            message = ("Only reviewers can record a review." if exc.code == "PERMISSION_DENIED"
                       else f"{exc.message} ({exc.reason or exc.code})")
            return await self.receipt_page(request, message, 403 if exc.code == "PERMISSION_DENIED" else 409)
        except BackendError as exc:
            return self.failure(request, exc, viewer)
        return RedirectResponse(f"/traces/{trace_id}?reviewed=1#reviews", status_code=303)

    async def review_queue(self, request: Request) -> Response:
        viewer = self.auth.viewer(request)
        listing = trace_pb.ListTracesRequest(needs_review=True, page_size=50,
                                             page_token=request.query_params.get("page", "")[:200])
        try:
            page = await run_in_threadpool(self.backends.list_traces, viewer.token, listing)
        except NotVisible:
            return self.page(request, "reviews.html", status=403, viewer=viewer, page=None, chain=None,
                             chain_error="", denied=True)
        except BackendError as exc:
            return self.failure(request, exc, viewer)
        chain, chain_error = None, ""
        try:
            chain = await run_in_threadpool(self.backends.verify_chain, viewer.token)
        except BackendError as exc:
            chain_error = f"{exc.code} {exc.reason}: {exc.message}"
        return self.page(request, "reviews.html", viewer=viewer, page=page, chain=chain, chain_error=chain_error,
                         denied=False)


async def _sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


def _safe_next(value) -> str:
    """Only a path of this console (no scheme, no host: no open redirect)."""
    text = str(value or "/")
    if not text.startswith("/") or text.startswith("//") or "\\" in text:
        return "/"
    return text


def _timestamp(value: str) -> Timestamp | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    stamp = Timestamp()
    stamp.FromDatetime(parsed.astimezone(dt.UTC).replace(tzinfo=None))
    return stamp


def build_app(console: Console) -> Starlette:
    async def on_sign_in_required(request: Request, exc: SignInRequired) -> Response:
        if console.auth.development:
            return RedirectResponse(f"/sign-in?next={_quote(request.url.path)}", status_code=303)
        return console.page(request, "signed_out.html", status=401, viewer=None, message=exc.message)

    async def on_csrf(request: Request, exc: CsrfRejected) -> Response:
        return console.page(request, "error.html", status=403, title="The form expired",
                            error=None, message="This form was not issued by this session (or the session "
                            "expired). Reload the page and submit it again.")

    async def on_http(request: Request, exc: HTTPException) -> Response:
        if exc.status_code == 404:
            return console.not_found(request)
        return console.page(request, "error.html", status=exc.status_code, title="Request refused", error=None,
                            message=str(exc.detail))

    c = console
    routes = [
        Route("/healthz", c.healthz),
        Route("/readyz", c.readyz),
        Route("/sign-in", c.sign_in_page, methods=["GET"]),
        Route("/sign-in", c.sign_in, methods=["POST"]),
        Route("/sign-out", c.sign_out, methods=["POST"]),
        Route("/", c.ask_page, methods=["GET"]),
        Route("/ask", c.ask, methods=["POST"]),
        Route("/documents/{document_id:path}/versions/{version_id}/passages/{passage_id}", c.evidence_panel),
        Route("/documents/{document_id:path}/versions/{version_id}", c.version_page),
        Route("/reviews", c.review_queue),
        Route("/traces/{trace_id}/receipt.json", c.receipt_json),
        Route("/traces/{trace_id}/reviews", c.record_review, methods=["POST"]),
        Route("/traces/{trace_id}", c.receipt_page),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    settings = console.settings
    token_header = settings.token_header if settings.auth_mode == "proxy" else ""
    middleware = [
        Middleware(RequestMetrics),
        Middleware(ConsoleHeaders, vary_header=token_header),
        Middleware(SessionMiddleware, secret_key=settings.session_secret, session_cookie=SESSION_COOKIE,
                   max_age=settings.session_max_age_seconds, same_site=settings.session_same_site,
                   https_only=settings.session_https_only),
    ]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={
        SignInRequired: on_sign_in_required, CsrfRejected: on_csrf, HTTPException: on_http})


def _quote(path: str) -> str:
    import urllib.parse

    return urllib.parse.quote(path, safe="/")
