"""Exports that keep traceability: Markdown and HTML in which every claim keeps its numbered marker
and its pinned link (absolute, to the cited version and span), every part states its outcome, and
the sources list names document, version, span and digest. A part without cited claims says so, so
a reader of the copy can tell an answer from an abstention."""

from __future__ import annotations

import html

from services.console.answer import AnswerView, Marker, PartView


def _absolute(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + path


def _md_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _md_marker(marker: Marker, base_url: str) -> str:
    return f"[\\[{marker.number}\\]]({_absolute(base_url, marker.link)} \"{marker.accessible_name}\")"


def _md_part(part: PartView, base_url: str) -> list[str]:
    lines = [f"## {part.kind}: {part.outcome.title}", "", f"*Outcome: {part.outcome_name}.* {part.outcome.explanation}",
             ""]
    for claim in part.claims:
        marks = " ".join(_md_marker(m, base_url) for m in claim.markers)
        lines.append(f"- {_md_escape(claim.text)} {marks}".rstrip())
    if not part.claims and part.answer_text:
        lines.append(_md_escape(part.answer_text))
    for conflict in part.conflicts:
        lines.append(f"- Source says: \"{_md_escape(conflict.text)}\" {_md_marker(conflict.marker, base_url)}")
    if part.clarification_question and part.clarification_question != part.answer_text:
        lines.append(f"Question back: {_md_escape(part.clarification_question)}")
    for slot in part.slots:
        lines.append(f"- {slot.when}, {slot.where}, {slot.who} ({slot.what}) [slot {slot.slot_id}]")
    if part.slots_as_of:
        lines.append(f"Slots read live at {part.slots_as_of}.")
    for withheld in part.withheld:
        lines.append(f"- A statement was withheld: {'; '.join(withheld.reasons) or 'not supported'}.")
    if part.next_action:
        lines.append(f"Next: {part.next_action}")
    if part.policy_link:
        lines.append(f"Applicable policy: {_absolute(base_url, part.policy_link)}")
    if not part.claims and not part.conflicts:
        lines.append("(No cited statement in this part.)")
    lines.append("")
    return lines


def _source_line(marker: Marker) -> str:
    cit = marker.citation
    anchor = f" > {cit.source_anchor}" if cit.source_anchor else ""
    pages = f"{marker.pages}, " if marker.pages else ""
    return (f"{marker.title}{anchor}; {cit.source_class}; document {cit.document_id}, version {cit.version_id}, "
            f"{pages}characters {cit.start}-{cit.end}, sha256 {cit.content_sha256}")


def to_markdown(answer: AnswerView, question: str, base_url: str) -> str:
    lines = ["# Answer", "", f"Question: {_md_escape(question)}", ""]
    for part in answer.parts:
        lines.extend(_md_part(part, base_url))
    if answer.sources:
        lines.extend(["## Sources", ""])
        for marker in answer.sources:
            lines.append(f"{marker.number}. {_md_escape(_source_line(marker))}: <{_absolute(base_url, marker.link)}>")
        lines.append("")
    lines.append(f"Evidence record (trace): {answer.trace_id}: <{_absolute(base_url, '/traces/' + answer.trace_id)}>")
    return "\n".join(lines) + "\n"


def _html_marker(marker: Marker, base_url: str) -> str:
    href = html.escape(_absolute(base_url, marker.link), quote=True)
    name = html.escape(marker.accessible_name, quote=True)
    return f'<a class="marker" href="{href}" aria-label="{name}">[{marker.number}]</a>'


def _html_part(part: PartView, base_url: str) -> list[str]:
    e = html.escape
    out = [f'<section class="part part--{part.outcome.key}" data-outcome="{e(part.outcome_name)}">',
           f"<h2>{e(part.kind)}: {e(part.outcome.title)}</h2>",
           f"<p><em>Outcome: {e(part.outcome_name)}.</em> {e(part.outcome.explanation)}</p>"]
    if part.claims:
        out.append("<ul>")
        for claim in part.claims:
            marks = " ".join(_html_marker(m, base_url) for m in claim.markers)
            out.append(f"<li>{e(claim.text)} {marks}</li>")
        out.append("</ul>")
    elif part.answer_text:
        out.append(f"<p>{e(part.answer_text)}</p>")
    if part.conflicts:
        out.append("<ul>")
        out.extend(f"<li>Source says: &ldquo;{e(x.text)}&rdquo; {_html_marker(x.marker, base_url)}</li>"
                   for x in part.conflicts)
        out.append("</ul>")
    if part.clarification_question and part.clarification_question != part.answer_text:
        out.append(f"<p>Question back: {e(part.clarification_question)}</p>")
    if part.slots:
        out.append("<ul>")
        out.extend(f"<li>{e(s.when)}, {e(s.where)}, {e(s.who)} ({e(s.what)})</li>" for s in part.slots)
        out.append("</ul>")
        if part.slots_as_of:
            out.append(f"<p>Slots read live at {e(part.slots_as_of)}.</p>")
    for withheld in part.withheld:
        out.append(f"<p>A statement was withheld: {e('; '.join(withheld.reasons) or 'not supported')}.</p>")
    if part.next_action:
        out.append(f"<p>Next: {e(part.next_action)}</p>")
    if part.policy_link:
        link = e(_absolute(base_url, part.policy_link), quote=True)
        out.append(f'<p>Applicable policy: <a href="{link}">{link}</a></p>')
    if not part.claims and not part.conflicts:
        out.append("<p>(No cited statement in this part.)</p>")
    out.append("</section>")
    return out


def to_html(answer: AnswerView, question: str, base_url: str) -> str:
    e = html.escape
    body = ["<h1>Answer</h1>", f"<p>Question: {e(question)}</p>"]
    for part in answer.parts:
        body.extend(_html_part(part, base_url))
    if answer.sources:
        body.append("<h2>Sources</h2><ol>")
        for marker in answer.sources:
            href = e(_absolute(base_url, marker.link), quote=True)
            body.append(f'<li value="{marker.number}">{e(_source_line(marker))}: <a href="{href}">{href}</a></li>')
        body.append("</ol>")
    trace_link = e(_absolute(base_url, "/traces/" + answer.trace_id), quote=True)
    body.append(f'<p>Evidence record (trace): <a href="{trace_link}">{e(answer.trace_id)}</a></p>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Answer</title></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
