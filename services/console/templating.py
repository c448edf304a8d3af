"""Jinja2 set-up: autoescaping everywhere, and the few filters the templates need."""

from __future__ import annotations

import urllib.parse

from citetrace.common.v1 import common_pb2
from starlette.templating import Jinja2Templates

from services.console.answer import enum_label
from services.console.receipt import when


def data_uri(text: str, media_type: str) -> str:
    """A download link's target that needs no server round trip (and no script)."""
    return f"data:{media_type};charset=utf-8," + urllib.parse.quote(text, safe="")


def configure(templates: Jinja2Templates) -> Jinja2Templates:
    env = templates.env
    env.autoescape = True
    env.trim_blocks = True
    env.lstrip_blocks = True
    env.filters["data_uri"] = data_uri
    env.filters["short"] = lambda value, n=8: (value or "")[:n]
    env.globals["when"] = when
    env.globals["outcome_name"] = lambda value: enum_label(common_pb2.PartOutcome, value, "PART_OUTCOME_")
    return templates
