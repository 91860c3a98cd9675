"""`svc verify`: the verdict in sentences by default, the service's JSON with --json (after the command or
before it), exit codes 0 authentic, 1 not, 2 usage, 3 service error; a service that is down is one line."""

import json
import socket

import pytest
import requests
import urllib3

from svc_client.cli import main
from svc_client.summary import verdict_text
from svc_client.transport import unreachable_reason
from tests.media import decode, encode, photo_bytes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def signed_files(svc, samples, tmp_path, monkeypatch):
    """photo.signed.png signed server-managed (watermark and token) and photo.png, its unsigned original."""
    monkeypatch.chdir(tmp_path)
    generator_id = json.loads(svc("--json", "register", "hosted", "--server-managed")[1])["generator_id"]
    (tmp_path / "photo.png").write_bytes(samples["png"])
    code, out, _ = svc("--json", "sign", "photo.png", "--generator", generator_id, "--model", "m-7")
    assert code == 0
    return json.loads(out)["results"][0]


def test_verify_prints_the_verdict_in_sentences_and_json_on_request(svc, signed_files):
    code, text, err = svc("verify", "photo.signed.png", key=False)
    assert (code, err) == (0, "")
    code_json, out, _ = svc("verify", "photo.signed.png", "--json", key=False)
    result = json.loads(out)
    assert code_json == 0 and result["record_id"] == signed_files["record_id"]
    assert text == verdict_text(result) + "\n"  # the service's summary, or sentences built from the fields
    assert text.startswith("Authentic") or "summary" in result
    assert not text.lstrip().startswith("{")
    assert json.loads(svc("--json", "verify", "photo.signed.png", key=False)[1]) == result  # the global option


def test_verify_exit_codes_are_1_for_nothing_found_and_a_changed_copy(svc, signed_files, tmp_path):
    (tmp_path / "other.png").write_bytes(photo_bytes("coffee", fmt="png"))  # signed by nobody
    code, text, _ = svc("verify", "other.png", key=False)
    result = json.loads(svc("verify", "other.png", "--json", key=False)[1])
    assert code == 1 and result["reason"] == "no_provenance_found"
    assert text == verdict_text(result) + "\n"
    if "summary" not in result:  # an older service: the sentences come from the client
        assert "no claim either way" in text

    signed = (tmp_path / "photo.signed.png").read_bytes()
    (tmp_path / "copy.png").write_bytes(encode(decode(signed), "png", compress_level=1))  # re-saved: other bytes
    code, text, _ = svc("verify", "copy.png", key=False)
    result = json.loads(svc("verify", "copy.png", "--json", key=False)[1])
    assert code == 1 and result["reason"] == "content_tampered", result
    assert text == verdict_text(result) + "\n"
    if "summary" not in result:
        assert text.startswith("Changed: this is a changed copy of content that ")


def test_a_service_that_refuses_the_connection_is_one_line_and_exit_3(tmp_path, capsys, samples):
    with socket.socket() as probe:  # a port nothing listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "photo.png").write_bytes(samples["png"])
    for options in ([], ["--json"]):
        code = main(["--url", f"http://127.0.0.1:{port}", "--quiet", "verify", str(tmp_path / "photo.png"),
                     *options])
        captured = capsys.readouterr()
        assert code == 3
        assert captured.err == (f"svc: the service cannot be reached: http://127.0.0.1:{port} refused the "
                                "connection: is the service running there? (--url or SVC_URL)\n")
        if options:
            assert json.loads(captured.out)["error"] == "service_unavailable"
        else:
            assert captured.out == ""


def test_a_service_that_never_answers_is_one_line_after_the_timeout(tmp_path, capsys, samples):
    (tmp_path / "photo.png").write_bytes(samples["png"])
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        code = main(["--url", url, "--timeout", "0.2", "--quiet", "verify", str(tmp_path / "photo.png")])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.err == f"svc: the service cannot be reached: {url} did not answer within 0.2 s\n"


def test_a_name_that_does_not_resolve_is_named_as_such():
    # The error requests raises for a DNS failure, built here: a test never asks a resolver on the network.
    pool = urllib3.HTTPConnectionPool("svc.invalid", 443)
    resolution = urllib3.exceptions.NameResolutionError("svc.invalid", pool, socket.gaierror(-2, "Name or service "
                                                                                                   "not known"))
    error = requests.ConnectionError(urllib3.exceptions.MaxRetryError(pool, "/v1/verify", resolution))
    assert unreachable_reason(error, "https://svc.invalid", 60) == (
        "the host name svc.invalid does not resolve (DNS): check --url or SVC_URL")


def test_a_url_requests_cannot_call_is_one_line_and_exit_3(tmp_path, capsys, samples):
    (tmp_path / "photo.png").write_bytes(samples["png"])
    code = main(["--url", "127.0.0.1:8000", "--quiet", "verify", str(tmp_path / "photo.png")])
    captured = capsys.readouterr()
    assert code == 3
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("svc: the service cannot be reached: ")
    assert "Traceback" not in captured.err
