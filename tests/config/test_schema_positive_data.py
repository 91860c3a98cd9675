"""Schemathesis's positive phase against a live server: a request the OpenAPI schema allows is not refused.

The schema states what the server checks (core/openapi.py AutoSchema: non-empty lists, item counts, text
without NUL or blank, required request bodies, patterns of validator functions; enums and patterns of the
fields themselves), so schema-valid requests are accepted, and none gets a 5xx. What a schema cannot say is
listed below with its reason: rules between two fields (OpenAPI 3.0 has no way to state them) and answers
that depend on state or content (a token that must exist, a file the service must be able to read). Such an
operation may still answer 400 to a schema-valid request, for that reason only.

Bounded to fit about a minute of CPU: a few examples per operation, one seed, one worker.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.config.test_openapi_conformance import ENDING_PATHS, PROJECT, pytestmark, server  # noqa: F401

MAX_EXAMPLES = 3
CROSS_FIELD = {
    "GET /v1/audit": "`to` must be later than `from`",
    "GET /v1/audit/export": "`to` must be later than `from`",
    "GET /v1/compliance/report": "`from` must be earlier than `to` (default: now)",
    "GET /v1/records": "`to` must be later than `from`",
    "GET /v1/log/consistency": "`first` may not exceed `second`",
    "GET /v1/log/inclusion": "exactly one of `record_id` and `index`",
}
STATE_OR_CONTENT = {
    "DELETE /v1/team/members/{user_id}": "400 last_owner: the organization keeps one owner",
    "PATCH /v1/team/members/{user_id}/role": "400 last_owner",
    "POST /v1/auth/reset-password": "the token must be one the service issued",
    "POST /v1/auth/verify-email": "the token must be one the service issued",
    "POST /v1/team/invites/{token}/accept": "400 invite_invalid: the invite must be pending",
    "POST /v1/generators": "the public key must be 1952 bytes of ML-DSA-65 key in base64",
    "POST /v1/generators/{id}/rotate": "a client-managed generator needs the new public key",
    "PUT /v1/generators/{id}/c2pa-certificate": "the PEM must be a valid ES256 chain and its matching P-256 key",
    "POST /v1/records": "the signature must verify (signature_invalid)",
    "POST /v1/records/batch": "the signatures must verify (signature_invalid)",
    "POST /v1/sign": "the file must be one the service can sign (format_not_supported)",
    "POST /v1/sign/batch": "the generator must be server-managed (generator_client_managed)",
    "POST /v1/records/{record_id}/c2pa/embed": "the file must be the record's signed JPEG or PNG",
    "POST /v1/c2pa/matches/byContent": "415: the asset must be one an algorithm reads",
    "POST /v1/webhooks": "the URL's host must resolve to a public address",
    "PATCH /v1/webhooks/{id}": "the URL's host must resolve to a public address",
    "GET /v1/log/tile/{path}": "a tile path has slashes, which no generated path parameter holds",
}


def test_schema_valid_requests_are_accepted(server):  # noqa: F811 - the live server fixture
    base, context, folder = server
    report_dir = folder / "positive"
    command = [str(Path(sys.executable).parent / "schemathesis"), "run", f"{base}/v1/openapi.json",
               "--checks", "positive_data_acceptance,not_a_server_error", "--mode", "positive",
               "--phases", "examples,fuzzing", "--max-examples", str(MAX_EXAMPLES), "--seed", "1", "--no-shrink",
               "--header", f"Authorization: Bearer {context['token']}", "--workers", "1",
               "--suppress-health-check", "all", "--exclude-path-regex", ENDING_PATHS,
               "--report", "json", "--report-dir", str(report_dir)]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.config.schema_run_hooks", "PYTHONPATH": str(PROJECT),
           "SCHEMA_RUN_CONTEXT": str(folder / "context.json")}
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=900)
    (report,) = report_dir.glob("json*.json")
    result = json.loads(report.read_text())
    assert result["complete"], done.stdout[-5000:]
    errors = done.stdout[done.stdout.find("= ERRORS ="):][:10000]
    assert result["errors"] == [], errors  # every operation's data could be generated
    failing = {code["code"]: set(code["operations"]) for code in result["failures"]}
    assert set(failing) <= {"ST202"}, done.stdout[-20000:]  # no 5xx, nothing but rejected positive data
    unexplained = failing.get("ST202", set()) - set(CROSS_FIELD) - set(STATE_OR_CONTENT)
    assert unexplained == set(), done.stdout[-20000:]
    assert result["operations"]["tested"] >= 50
