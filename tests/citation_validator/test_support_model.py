"""The support model's parts: the precise checks (numbers, decades, conversions, dates, names), the
remote judge's failure behaviour against a real local HTTP endpoint (never a pass), the batch CLI, and
the independence of the judge from the generator."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from citetrace.vocab import APPROVED
from source_reading import imports_of

from services.citation_validator import bootstrap
from services.citation_validator.core import (
    CHECK_UNAVAILABLE,
    ClaimIn,
    Loaded,
    OfferedPassage,
    StoredPassage,
)
from services.citation_validator.settings import Settings
from services.citation_validator.support import SUPPORTED, UNRESOLVED, UNSUPPORTED, Evidence, checks
from services.citation_validator.support.remote import REPLY_SCHEMA, RemoteJudge

REPO = Path(__file__).resolve().parents[2]


def conflicts(claim: str, evidence: str) -> list[str]:
    return [c.kind for c in checks.check(claim, checks.sentences(evidence)).conflicts]


@pytest.mark.parametrize(("claim", "evidence"), [
    ("The band toured in the 2000's.", "The band toured in 2001."),
    ("The gun fired a 10 kg (23 lb) shell.", "The gun fired a 23-pound shell."),
    ("It was reported on 15 January 2019.", "Reported Tue 15 Jan 2019."),
    ("It was reported on January 15, 2019.", "Reported 2019-01-15."),
    ("He served from 1998 to 2003.", "He served 1998–2003."),
    ("She wrote for Tech Crunch.", "She wrote for TechCrunch."),
    ("She wrote for TechCrunch.", "She wrote for Tech Crunch."),
    ("The US Army bought it.", "The United States Army bought it."),
    ("Over fifty films were made.", "More than 50 films were made."),
    ("Arrive 15 minutes early.", "Please arrive fifteen minutes early."),
    # a clock time whose "p.m." has dots: the clause cut at the dot read 8:30 as the morning (Cedarbrook q01)
    ("Please arrive at 8:30 p.m. and use the after-hours entrance.",
     "Sleep studies run on weeknights. Please arrive at 8:30 p.m. and use the after-hours entrance. "
     "This replaces the usual 15-minute check-in rule."),
])
def test_faithful_restatements_raise_no_conflict(claim, evidence):
    assert [k for k in conflicts(claim, evidence) if k in {"quantity", "name"}] == []


@pytest.mark.parametrize(("claim", "evidence", "kind"), [
    ("The band toured in the 1990s.", "The band toured in 2001.", "quantity"),
    ("The gun fired a 10 kg shell.", "The gun fired a 50-pound shell.", "quantity"),
    ("It was reported on 16 January 2019.", "Reported Tue 15 Jan 2019.", "quantity"),
    ("Please arrive 30 minutes early.", "Please arrive 15 minutes early.", "quantity"),
    ("Cancel 24 days ahead.", "Cancel 24 hours ahead.", "quantity"),
    ("Please arrive at 9:30 p.m. and ring the bell.", "Please arrive at 8:30 p.m. and ring the bell.", "quantity"),
    ("Please arrive at 8:30 a.m. and ring the bell.", "Please arrive at 8:30 p.m. and ring the bell.", "quantity"),
    ("Walk-ins are not available at Northside Clinic.", "Walk-ins are not available at Northgate Clinic.", "name"),
    ("You must not eat before the scan.", "You must eat before the scan.", "negation"),
    ("Only MRI patients must arrive early.", "MRI patients must arrive early.", "qualifier"),
    ("Patients over 18 may come alone.", "Patients under 18 may come alone.", "bound"),
])
def test_changed_facts_are_conflicts(claim, evidence, kind):
    assert kind in conflicts(claim, evidence)


# -- the remote judge against a real HTTP endpoint (the model behind it is outside the system) -----------

class _Judge(BaseHTTPRequestHandler):
    mode = "supported"
    seen: list[dict] = []

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).seen.append(body)
        mode = type(self).mode
        if mode == "slow":
            time.sleep(1.5)
        if mode == "http500":
            self.send_response(500)
            self.end_headers()
            return
        content = {
            "supported": json.dumps({"verdict": "SUPPORTED", "unsupported_part": "", "confidence": 0.9}),
            "unsupported": json.dumps({"verdict": "UNSUPPORTED", "unsupported_part": "and a towel",
                                       "confidence": 0.8}),
            "malformed": "Sure! The claim is supported.",
            "schema": json.dumps({"verdict": "MAYBE", "unsupported_part": ""}),
            "slow": json.dumps({"verdict": "SUPPORTED", "unsupported_part": ""}),
        }[mode]
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def judge_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


EVIDENCE = [Evidence("Bring comfortable clothing and a towel.", "Physiotherapy (synthetic)")]


@pytest.mark.parametrize(("mode", "verdict", "unavailable"), [
    ("supported", SUPPORTED, False), ("unsupported", UNSUPPORTED, False), ("malformed", UNRESOLVED, True),
    ("schema", UNRESOLVED, True), ("http500", UNRESOLVED, True), ("slow", UNRESOLVED, True),
])
def test_remote_judge_verdicts_and_failures(judge_url, mode, verdict, unavailable):
    _Judge.mode = mode
    _Judge.seen.clear()
    judge = RemoteJudge(judge_url, model="judge-model", timeout_seconds=0.5)
    started = time.monotonic()
    decision = judge.decide("Bring comfortable clothing and a towel.", EVIDENCE)
    assert time.monotonic() - started < 1.4
    assert (decision.verdict, decision.unavailable) == (verdict, unavailable), decision.reason
    assert decision.model == judge.version and "judge-model" in judge.version
    request = _Judge.seen[0]
    assert request["model"] == "judge-model"
    assert request["response_format"]["json_schema"]["schema"] == REPLY_SCHEMA
    inline = RemoteJudge(judge_url, timeout_seconds=0.5, response_format="json_object")
    inline.decide("Bring a towel.", EVIDENCE)
    assert _Judge.seen[-1]["response_format"] == {"type": "json_object", "schema": REPLY_SCHEMA}
    assert "<document>" in request["messages"][1]["content"]
    if mode == "unsupported":
        assert "and a towel" in decision.reason


@pytest.mark.parametrize("mode", ["unreachable", "slow", "malformed", "schema", "http500"])
def test_a_judge_that_cannot_answer_is_check_unavailable_in_the_validator(judge_url, mode):
    """A judge that cannot answer (down, past its timeout, a reply that is not the schema's JSON, an
    HTTP error) makes the claim UNRESOLVED with CHECK_UNAVAILABLE, withheld: never a pass."""
    text = "Bring comfortable clothing and a towel."
    _Judge.mode = mode


    from citetrace.identity import passage_id_of, sha256_hex

    pid = passage_id_of("t1", "d1", "v1", 0, len(text))
    stored = StoredPassage(pid, "t1", "d1", "v1", 0, len(text), sha256_hex(text), "", "handbook", text, APPROVED)

    class Store2:
        def load(self, ids, timeout):
            return Loaded({pid: stored}, set())

    judge = RemoteJudge("http://127.0.0.1:9/v1" if mode == "unreachable" else judge_url, timeout_seconds=0.5)
    validator = bootstrap.build(Settings(port=0, metrics_port=-1), store=Store2(), support=judge).validator
    offered = [OfferedPassage("S1", pid, "t1", "d1", "v1", 0, len(text), sha256_hex(text), "", "handbook", text)]
    result = validator.validate("t1", [ClaimIn("c1", text, ("S1",), "GENERAL_POLICY")], offered, None)
    claim = result.claims[0]
    assert claim.support == UNRESOLVED and claim.withheld and not result.passed
    assert [f.reason for f in claim.findings] == [CHECK_UNAVAILABLE]
    assert claim.support_model == judge.version == result.support_model


# -- the batch CLI -----------------------------------------------------------------------------------

def test_judge_support_cli(tmp_path):
    from apps.cli.main import main

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps(p) for p in [
        {"id": "a", "claim": "Bring comfortable clothing and a towel.", "evidence": [
            {"text": "Physiotherapy appointments last 45 minutes. Bring comfortable clothing and a towel.",
             "title": "Physiotherapy (synthetic)"}]},
        {"id": 2, "claim": "Physiotherapy appointments last 60 minutes.", "evidence": [
            {"text": "Physiotherapy appointments last 45 minutes. Bring comfortable clothing and a towel."}]},
    ]) + "\n")
    out = tmp_path / "verdicts.jsonl"
    assert main(["judge", "support", "--in", str(pairs), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", 2]
    assert set(rows[0]) == {"id", "verdict", "score", "reason", "support_model"}
    assert rows[0]["verdict"] == SUPPORTED and rows[1]["verdict"] == UNSUPPORTED
    assert rows[0]["support_model"].startswith("embedded:support-embedded-")
    assert 0 <= rows[1]["score"] < rows[0]["score"] <= 1
    # The exact line format: one JSON object a line, in input order, these keys with these types.
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and out.read_text().endswith("\n")
    for row in rows:
        assert set(row) == {"id", "verdict", "score", "reason", "support_model"}
        assert row["verdict"] in (SUPPORTED, UNSUPPORTED, UNRESOLVED)
        assert isinstance(row["score"], float) and isinstance(row["reason"], str) and row["reason"]
        assert row["support_model"] == rows[0]["support_model"]


def test_judge_support_cli_names_the_bad_line_and_writes_nothing(tmp_path, capsys):
    from apps.cli.main import main

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": "a", "claim": "x y", "evidence": [{"text": "x y"}]}) + "\n"
                     + json.dumps({"id": "b", "claim": "x", "evidence": "not a list"}) + "\n")
    out = tmp_path / "verdicts.jsonl"
    assert main(["judge", "support", "--in", str(pairs), "--out", str(out)]) == 2
    assert f"{pairs}:2: evidence" in capsys.readouterr().err
    assert not out.exists()


# -- independence ------------------------------------------------------------------------------------

def _imports(folder: Path) -> set[str]:
    return imports_of(*folder.rglob("*.py"))


def test_generator_and_judge_share_no_decision_code():
    validator = _imports(REPO / "services" / "citation_validator")
    generator = _imports(REPO / "services" / "generation")
    assert not {m for m in validator if m.startswith("services.generation") or m.endswith("claimtext")}
    assert not {m for m in generator if m.startswith("services.citation_validator")}
    # What both import from the shared library: stubs, the kit, the vocabulary and normalization, and the
    # shipped resources both read (the embedding model, the table of word rarity); no decision code.
    shared = {m for m in validator & generator if m.startswith("citetrace.")
              and not m.startswith(("citetrace.kit", "citetrace.common.v1", "citetrace.generation.v1", "citetrace.vocab"))}
    assert shared <= {"citetrace.textnorm", "citetrace.textnorm.stem", "citetrace.textnorm.tokens",
                      "citetrace.textnorm.STOPWORDS", "citetrace.textnorm.fold", "citetrace.identity",
                      "citetrace.embeddings", "citetrace.embeddings.Embedder", "citetrace.idf",
                      "citetrace.idf.shipped"}, shared
